/*
** sqlbench_phases.c -- the workloads (sqlbench.c describes them), one
** phase a group, in the order main runs them.
*/
#include "sqlbench.h"
#include <errno.h>
#ifdef __GLIBC__
# include <malloc.h>         /* malloc_trim */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --------------------------------------------------------------- phases */

/* True unless reload_kv (which has tables of its own) is the only
** workload selected: every other workload reads the t_ tables. */
static int needMainTables(void){
  int i;
  if( g.nOnly==0 ) return 1;
  for(i=0; i<g.nOnly; i++) if( strcmp(g.azOnly[i], "reload_kv")!=0 ) return 1;
  return 0;
}

void phaseInsert(void){
  int t;
  Work *w;
  if( !needMainTables() ) return;
  /* The main tables' load is the random-order insert workload, or with
  ** --load key (runs at 10^8 rows that must fit one device call) the
  ** key-order one. */
  if( g.bLoadKey ){
    w = newWork("insert_sorted", "insert", "rows/s", "insert, key order (1 txn)");
  }else{
    w = newWork("insert_random", "insert", "rows/s", "insert, random key order (1 txn)");
  }
  for(t=0; t<NTAB; t++) if( tableRuns(t, w) ) insertRows(w, t, azTab[t], g.bLoadKey);
  if( !selected(g.bLoadKey ? "insert_sorted" : "insert_random", "insert") ){
    g.nW--;   /* loaded, not reported */
  }
  g.bMain = 1;

  if( !g.bLoadKey && selected("insert_sorted", "insert") ){
    char zName[64];
    w = newWork("insert_sorted", "insert", "rows/s", "insert, key order (1 txn)");
    for(t=0; t<NTAB; t++){
      if( !tableRuns(t, w) ) continue;
      snprintf(zName, sizeof(zName), "%s_sorted", azTab[t]);
      insertRows(w, t, zName, 1);
      execf("DROP TABLE %s", zName);
    }
  }
  if( selected("insert_select", "insert") ){
    sqlite3_stmt *p;
    char zS[32], zName[64];
    int64_t i;
    /* The staging table: an ordinary table without a key, rows in random
    ** key order. */
    fprintf(stderr, "[staging] src, %lld rows ... ", (long long)g.nRow);
    execf("CREATE TABLE src(k INTEGER, v INTEGER, r REAL, s TEXT)");
    p = prep("INSERT INTO src VALUES(?1, ?2, ?3, ?4)");
    execf("BEGIN");
    for(i=0; i<g.nRow; i++){
      int64_t k = keyOf(g.aPerm[g.nRow-1-i]);
      int n = sOf(k, zS);
      sqlite3_bind_int64(p, 1, k);
      sqlite3_bind_int64(p, 2, vOf(k));
      sqlite3_bind_double(p, 3, rOf(k));
      sqlite3_bind_text(p, 4, zS, n, SQLITE_STATIC);
      stepDone(p, "insert into src");
    }
    execf("COMMIT");
    fin(p);
    fprintf(stderr, "done\n");
    w = newWork("insert_select", "insert", "rows/s", "INSERT INTO t SELECT ... FROM src");
    for(t=0; t<NTAB; t++){
      if( !tableRuns(t, w) ) continue;
      snprintf(zName, sizeof(zName), "%s_select", azTab[t]);
      insertSelect(w, t, zName);
      execf("DROP TABLE %s", zName);
    }
    execf("DROP TABLE src");
  }
}

void phasePoint(void){
  Work *w;
  QSet *qs;
  Rng r;
  int64_t q;
  if( !selected("point", "point") ) return;
  w = newWork("point", "point", "queries/s", "point SELECT v WHERE k=?");
  w->bLatency = 1;
  qs = qsetNew(1, g.nQuery);
  rngSeed(&r, 2);
  for(q=0; q<g.nQuery; q++) qs->aParam[q] = keyOf((int64_t)rngBelow(&r, (uint64_t)g.nRow));
  queryWorkload(w, qs, QM_POINT, "SELECT v FROM %s WHERE k=?1", 1);
  qsetFree(qs);
}

void phaseProbe(void){
  int bIn = selected("in", "probe"), bJoin = selected("join", "probe"), t;
  int64_t nProbe = g.nQuery < g.nRow ? g.nQuery : g.nRow, nHit = nProbe/2, i;
  int64_t sumHit = 0, aExp[3];
  sqlite3_stmt *p;
  if( !bIn && !bJoin ) return;
  /* probe(k): nHit present keys (distinct rows of the permutation) and
  ** nProbe-nHit absent keys (distinct strata), interleaved. */
  execf("CREATE TABLE probe(k INTEGER)");
  p = prep("INSERT INTO probe VALUES(?1)");
  execf("BEGIN");
  for(i=0; i<nProbe; i++){
    int64_t idx = g.aPerm[i], k;
    if( (i&1)==0 && i/2<nHit ){
      k = keyOf(idx);
      sumHit += vOf(k);
    }else{
      k = absentKey(idx, 0);
    }
    sqlite3_bind_int64(p, 1, k);
    stepDone(p, "insert into probe");
  }
  execf("COMMIT");
  fin(p);
  for(i=0; i<3; i++){
    Work *w;
    if( i!=1 && !bIn ) continue;
    if( i==1 && !bJoin ) continue;
    aExp[0] = i==2 ? 0 : nHit; aExp[1] = i==2 ? 0 : sumHit; aExp[2] = 0;
    /* i==2, the floor: the IN query on an empty table of each kind.  SQLite
    ** builds an ephemeral index of the subquery's keys before it asks any
    ** table for a row, so that time bounds what any table can gain. */
    w = i==0 ? newWork("in", "probe", "keys/s", "k IN (SELECT k FROM probe), %lld keys", (long long)nProbe)
      : i==1 ? newWork("join", "probe", "keys/s", "probe JOIN t ON t.k=probe.k, %lld keys", (long long)nProbe)
             : newWork("in_floor", "probe", "keys/s", "the same IN on an empty table (floor)");
    for(t=0; t<NTAB; t++){
      char *zSql;
      int64_t c[3];
      Res *a = &w->a[t];
      double aSec[3];
      int nRep = 0, ok = 1;
      if( !tableRuns(t, w) ) continue;
      useTable(t, 1);
      if( i==2 ) createTable(t, "in_floor_t");
      zSql = i==0
        ? sqlite3_mprintf("SELECT count(*), sum(v) FROM %s WHERE k IN (SELECT k FROM probe)", azTab[t])
        : i==1
        ? sqlite3_mprintf("SELECT count(*), sum(%s.v) FROM probe JOIN %s ON %s.k = probe.k",
                          azTab[t], azTab[t], azTab[t])
        : sqlite3_mprintf("SELECT count(*), sum(v) FROM in_floor_t WHERE k IN (SELECT k FROM probe)");
      progressStart(t, "%s", w->zTitle);
      /* Up to 3 runs while they are short; the median is reported. */
      while( nRep<3 ){
        free(a->zPlan); a->zPlan = 0;
        ok = singleQuery(w, t, zSql, c);
        if( !ok ) break;
        checkAnswer(w, t, c, aExp);
        aSec[nRep++] = a->sec;
        if( a->sec>1.0 ) break;
      }
      if( ok ){
        qsort(aSec, (size_t)nRep, sizeof(double), cmpDouble);
        finishRes(a, aSec[nRep/2], nProbe);
        a->nRows = c[0];
      }
      progressEnd(w, a);
      sqlite3_free(zSql);
      if( i==2 ) execf("DROP TABLE in_floor_t");
    }
  }
  execf("DROP TABLE probe");
}

void phaseRange(void){
  static const int64_t aWidth[] = { 10, 1000, 1000000 };
  static const char *const azW[] = { "10", "1k", "1M" };
  int iw, m;
  Rng r;
  for(m=0; m<2; m++){
    for(iw=0; iw<3; iw++){
      char zName[32];
      int64_t W = aWidth[iw], nQ, q;
      Work *w;
      QSet *qs;
      snprintf(zName, sizeof(zName), "range_%s_%s", m==0 ? "rows" : "agg", azW[iw]);
      if( !selected(zName, "range") ) continue;
      if( W>g.nRow ) W = g.nRow;
      nQ = RANGE_ROWS / W;
      if( nQ<3 ) nQ = 3;
      if( nQ>g.nQuery ) nQ = g.nQuery;
      w = newWork(zName, "range", "queries/s",
                  m==0 ? "range %lld rows%s, step + read" : "range %lld rows%s, count+sum",
                  (long long)W, W<aWidth[iw] ? " (all)" : "");
      qs = qsetNew(2, nQ);
      rngSeed(&r, 10 + iw);
      for(q=0; q<nQ; q++){
        int64_t i0 = (int64_t)rngBelow(&r, (uint64_t)(g.nRow - W + 1));
        qs->aParam[2*q] = i0*KEY_SPACING;
        qs->aParam[2*q+1] = (i0+W)*KEY_SPACING - 1;
      }
      if( m==0 ){
        queryWorkload(w, qs, QM_ROWS, "SELECT k, v, r, s FROM %s WHERE k BETWEEN ?1 AND ?2", W);
      }else{
        queryWorkload(w, qs, QM_AGG, "SELECT count(*), sum(v) FROM %s WHERE k BETWEEN ?1 AND ?2", W);
      }
      qsetFree(qs);
    }
  }
}

void phaseDesc(void){
  Work *w;
  QSet *qs;
  Rng r;
  int64_t q;
  if( !selected("desc", "desc") ) return;
  w = newWork("desc", "desc", "queries/s", "k<=? ORDER BY k DESC LIMIT 10");
  qs = qsetNew(1, g.nQuery);
  rngSeed(&r, 20);
  for(q=0; q<g.nQuery; q++){
    qs->aParam[q] = (int64_t)rngBelow(&r, (uint64_t)g.nRow)*KEY_SPACING + KEY_SPACING/2;
  }
  queryWorkload(w, qs, QM_DESC,
                "SELECT k, v FROM %s WHERE k<=?1 ORDER BY k DESC LIMIT 10", -1);
  qsetFree(qs);
}

/* ---------------------------------------------------------- column filters */

/* --dump DIR, after the load: DIR/rows.csv, the N rows (k,v,r,s) in key
** order, as the generator makes them (r printed exactly: w/1024 has at most
** 10 binary fraction digits, so 10 decimal ones are exact). */
void dumpRows(void){
  char *zPath, zS[32];
  FILE *f;
  int64_t i;
  double t0 = now();
  if( g.zDump==0 ) return;
  if( mkdir(g.zDump, 0777)!=0 && errno!=EEXIST ) die("cannot create %s: %s", g.zDump, strerror(errno));
  zPath = sqlite3_mprintf("%s/rows.csv", g.zDump);
  f = zPath ? fopen(zPath, "w") : 0;
  if( f==0 ) die("cannot write %s: %s", zPath ? zPath : "?", strerror(errno));
  fprintf(stderr, "[dump   ] %s, %lld rows ... ", zPath, (long long)g.nRow);
  fprintf(f, "k,v,r,s\n");
  for(i=0; i<g.nRow; i++){
    int64_t k = keyOf(i), w = wOf(k);
    sOf(k, zS);
    fprintf(f, "%lld,%lld,%lld.%010lld,%s\n", (long long)k, (long long)vOf(k),
            (long long)(w/1024), (long long)((w%1024)*9765625LL), zS);
  }
  if( fclose(f)!=0 ) die("cannot write %s: %s", zPath, strerror(errno));
  fprintf(stderr, "%.1f s\n", now()-t0);
  sqlite3_free(zPath);
}

/* --dump DIR: append workload w to DIR/queries.json: its SQL on table "t",
** how its answer is summed, and the queries the reference table ran (at
** most 10^4) with their answers, for duckdb_bench.py to run and check. */
static void dumpQueries(const Work *w, const QSet *qs, int eMode, const char *zSqlFmt,
                        int64_t nExp){
  char *zSql;
  int64_t q, nQ = qs->nRef < 10000 ? qs->nRef : 10000;
  int i;
  FILE *f = g.pDumpQ;
  if( f==0 || qs->iRef<0 ) return;
  zSql = sqlite3_mprintf(zSqlFmt, "t");
  fprintf(f, "%s\n  {\"name\": ", g.nDumpQ++ ? "," : "");
  jsonStr(f, w->zName);
  fprintf(f, ", \"title\": ");
  jsonStr(f, w->zTitle);
  fprintf(f, ", \"sql\": ");
  jsonStr(f, zSql);
  fprintf(f, ", \"mode\": \"%s\", \"expect_rows\": ",
          eMode==QM_AGG ? "agg" : eMode==QM_ROWS ? "rows" : eMode==QM_DESC ? "desc" : "point");
  jsonInt(f, nExp);
  fprintf(f, ", \"reference\": \"%s\",\n   \"params\": [", azKind[qs->iRef]);
  for(q=0; q<nQ; q++){
    fprintf(f, "%s[", q ? ", " : "");
    for(i=0; i<qs->nParam; i++){
      int64_t x = qs->aParam[q*qs->nParam+i];
      if( i ) fputs(", ", f);
      if( qs->zType[i]=='r' ) fprintf(f, "%.17g", (double)x/1024.0);
      else if( qs->zType[i]=='t' ){ char z[32]; sOfU(x, z); jsonStr(f, z); }
      else if( qs->zType[i]=='x' ){ char z[8]; hexPrefix(x, z); jsonStr(f, z); }
      else fprintf(f, "%lld", (long long)x);
    }
    fputc(']', f);
  }
  fprintf(f, "],\n   \"answers\": [");
  for(q=0; q<nQ; q++){
    fprintf(f, "%s[%lld, %lld, %lld]", q ? ", " : "", (long long)qs->aRef[q].n,
            (long long)qs->aRef[q].a, (long long)qs->aRef[q].b);
  }
  fprintf(f, "]}");
  sqlite3_free(zSql);
}

/* One workload of the column group: every table, the later ones cycling
** through the reference's queries (so that a fast table is not limited to
** the few full scans the ordinary table ran within --budget). */
static void columnWorkload(const char *zName, const char *zTitle, QSet *qs, int eMode,
                           const char *zSqlFmt, int64_t nExp){
  Work *w = newWork(zName, "column", "queries/s", "%s", zTitle);
  w->bLatency = 1;
  qs->bCycle = 1;
  queryWorkload(w, qs, eMode, zSqlFmt, nExp);
  dumpQueries(w, qs, eMode, zSqlFmt, nExp);
  qsetFree(qs);
}

/* Random r ranges of m rows each (w BETWEEN lo AND lo+m-1) into params
** iParam, iParam+1 of every query of qs. */
static void rRanges(QSet *qs, int iParam, int64_t m, Rng *r){
  int64_t q;
  qs->zType[iParam] = qs->zType[iParam+1] = 'r';
  for(q=0; q<qs->nQ; q++){
    int64_t lo = (int64_t)rngBelow(r, (uint64_t)(g.nRow - m + 1));
    qs->aParam[q*qs->nParam+iParam] = lo;
    qs->aParam[q*qs->nParam+iParam+1] = lo + m - 1;
  }
}

/* Filters and ORDER BY on the non-key columns: the answers
** are summed as the other query workloads' are and compared with the
** reference's query by query; where the row count is known exactly (r
** ranges: w is a permutation, so m consecutive values are m rows) it is
** checked too.  Runs before mix and delete: the tables hold the N rows. */
void phaseColumn(void){
  static const char *const azAll[] = {
    "col_eq", "col_range_1pct", "col_range_10pct", "col_rows_1pct", "col_and",
    "col_key_and", "col_text_eq", "col_text_in", "col_text_range", "col_top_desc", "col_top_asc", 0
  };
  int i, bAny = 0;
  int64_t q, m1 = g.nRow/100 > 0 ? g.nRow/100 : 1, m10 = g.nRow/10 > 0 ? g.nRow/10 : 1;
  int64_t nTop = g.nRow < 10 ? g.nRow : 10;
  QSet *qs;
  Rng r;
  for(i=0; azAll[i]; i++) bAny |= selected(azAll[i], "column");
  if( !bAny || !g.bMain ) return;
  if( g.zDump ){
    char *zPath = sqlite3_mprintf("%s/queries.json", g.zDump);
    g.pDumpQ = zPath ? fopen(zPath, "w") : 0;
    if( g.pDumpQ==0 ) die("cannot write %s: %s", zPath ? zPath : "?", strerror(errno));
    sqlite3_free(zPath);
    fprintf(g.pDumpQ, "{\"tool\": \"sqlbench\", \"rows\": %lld, \"seed\": %llu, \"key_spacing\": %d,"
            " \"rows_file\": \"rows.csv\", \"table\": \"t\", \"workloads\": [",
            (long long)g.nRow, (unsigned long long)g.seed, KEY_SPACING);
  }
  if( selected("col_eq", "column") ){
    qs = qsetNew(1, g.nQuery);
    rngSeed(&r, 40);
    for(q=0; q<qs->nQ; q++) qs->aParam[q] = (int64_t)rngBelow(&r, (uint64_t)g.nV);
    columnWorkload("col_eq", "v=? (~100 rows), count+sum", qs, QM_AGG,
                   "SELECT count(*), sum(k) FROM %s WHERE v = ?1", -1);
  }
  for(i=0; i<2; i++){
    const char *zName = i==0 ? "col_range_1pct" : "col_range_10pct";
    if( !selected(zName, "column") ) continue;
    qs = qsetNew(2, g.nQuery);
    rngSeed(&r, 41 + i);
    rRanges(qs, 0, i==0 ? m1 : m10, &r);
    columnWorkload(zName, i==0 ? "r BETWEEN, 1% of rows, count+sum" : "r BETWEEN, 10% of rows, count+sum",
                   qs, QM_AGG, "SELECT count(*), sum(k) FROM %s WHERE r BETWEEN ?1 AND ?2",
                   i==0 ? m1 : m10);
  }
  if( selected("col_rows_1pct", "column") ){
    qs = qsetNew(2, g.nQuery);
    rngSeed(&r, 43);
    rRanges(qs, 0, m1, &r);
    columnWorkload("col_rows_1pct", "r BETWEEN, 1% of rows, step + read", qs, QM_ROWS,
                   "SELECT k, v, r, s FROM %s WHERE r BETWEEN ?1 AND ?2", m1);
  }
  if( selected("col_and", "column") ){
    /* v in 10% of its values AND r in 1% of its range: ~0.1% of rows. */
    int64_t wv = g.nV/10 > 0 ? g.nV/10 : 1;
    qs = qsetNew(4, g.nQuery);
    rngSeed(&r, 44);
    rRanges(qs, 2, m1, &r);
    for(q=0; q<qs->nQ; q++){
      int64_t v0 = (int64_t)rngBelow(&r, (uint64_t)(g.nV - wv + 1));
      qs->aParam[4*q] = v0;
      qs->aParam[4*q+1] = v0 + wv - 1;
    }
    columnWorkload("col_and", "v, r ranges: 0.1% of rows, count+sum", qs, QM_AGG,
                   "SELECT count(*), sum(k) FROM %s WHERE v BETWEEN ?1 AND ?2 AND r BETWEEN ?3 AND ?4", -1);
  }
  if( selected("col_key_and", "column") ){
    /* A key range of 10% of the rows AND v in 10% of its values: ~1%. */
    qs = qsetNew(3, g.nQuery);
    rngSeed(&r, 45);
    for(q=0; q<qs->nQ; q++){
      int64_t i0 = (int64_t)rngBelow(&r, (uint64_t)(g.nRow - m10 + 1));
      qs->aParam[3*q] = i0*KEY_SPACING;
      qs->aParam[3*q+1] = (i0+m10)*KEY_SPACING - 1;
      qs->aParam[3*q+2] = g.nV/10 > 0 ? g.nV/10 : 1;
    }
    columnWorkload("col_key_and", "k range 10% AND v<?: 1%, count+sum", qs, QM_AGG,
                   "SELECT count(*), sum(k) FROM %s WHERE k BETWEEN ?1 AND ?2 AND v < ?3", -1);
  }
  if( selected("col_text_eq", "column") ){
    qs = qsetNew(1, g.nQuery);
    qs->zType[0] = 't';
    rngSeed(&r, 46);
    for(q=0; q<qs->nQ; q++) qs->aParam[q] = (int64_t)rngBelow(&r, (uint64_t)g.nS);
    columnWorkload("col_text_eq", "s=? TEXT (~4 rows), count+sum", qs, QM_AGG,
                   "SELECT count(*), sum(k) FROM %s WHERE s = ?1", -1);
  }
  if( selected("col_text_in", "column") ){
    /* s IN three strings (~12 rows): an IN list on a TEXT column, a
    ** superset SQLite checks again, its values matched by their bytes */
    qs = qsetNew(3, g.nQuery);
    qs->zType[0] = qs->zType[1] = qs->zType[2] = 't';
    rngSeed(&r, 48);
    for(q=0; q<3*qs->nQ; q++) qs->aParam[q] = (int64_t)rngBelow(&r, (uint64_t)g.nS);
    columnWorkload("col_text_in", "s IN (3 strings) TEXT (~12 rows), count+sum", qs, QM_AGG,
                   "SELECT count(*), sum(k) FROM %s WHERE s IN (?1, ?2, ?3)", -1);
  }
  if( selected("col_text_range", "column") ){
    /* s >= 'abc' AND s < 'abd': the strings are random hex, so ~1/4096 of
    ** the rows (a TEXT column's range: a superset SQLite checks again) */
    qs = qsetNew(2, g.nQuery);
    qs->zType[0] = qs->zType[1] = 'x';
    rngSeed(&r, 47);
    for(q=0; q<qs->nQ; q++){
      int64_t x = (int64_t)rngBelow(&r, 4095);
      qs->aParam[2*q] = x; qs->aParam[2*q+1] = x+1;
    }
    columnWorkload("col_text_range", "s range, a 3-character prefix (~0.02%), count+sum", qs, QM_AGG,
                   "SELECT count(*), sum(k) FROM %s WHERE s >= ?1 AND s < ?2", -1);
  }
  for(i=0; i<2; i++){
    const char *zName = i==0 ? "col_top_desc" : "col_top_asc";
    if( !selected(zName, "column") ) continue;
    qs = qsetNew(0, g.nQuery);
    columnWorkload(zName, i==0 ? "ORDER BY r DESC LIMIT 10, rows" : "ORDER BY r LIMIT 10, rows",
                   qs, QM_DESC, i==0 ? "SELECT k, v FROM %s ORDER BY r DESC LIMIT 10"
                                     : "SELECT k, v FROM %s ORDER BY r LIMIT 10", nTop);
  }
  if( g.pDumpQ ){
    fprintf(g.pDumpQ, "\n]}\n");
    if( fclose(g.pDumpQ)!=0 ) die("cannot write %s/queries.json: %s", g.zDump, strerror(errno));
    g.pDumpQ = 0;
    fprintf(stderr, "[dump   ] %s/queries.json\n", g.zDump);
  }
}

/* 10% INSERT of new keys, 10% DELETE, 80% point SELECT; COMMIT every
** COMMIT_EVERY statements; the final COMMIT included. */
void phaseMix(void){
  Work *w;
  int t, bRefSum = 0;
  int64_t aRefSum[3] = {0, 0, 0};
  if( !selected("mix", "mix") ) return;
  w = newWork("mix", "mix", "stmts/s", "mix 10%% ins/10%% del/80%% get, txn 10^4");
  for(t=0; t<NTAB; t++){
    sqlite3_stmt *pIns, *pDel, *pGet;
    Res *a = &w->a[t];
    Rng r;
    int64_t i, nIns = 0, c[3] = {0, 0, 0}, aSum[3];
    char zS[32];
    double t0;
    int rc;
    if( !tableRuns(t, w) ) continue;
    useTable(t, 1);
    pIns = prep("INSERT INTO %s(k, v, r, s) VALUES(?1, ?2, ?3, ?4)", azTab[t]);
    pDel = prep("DELETE FROM %s WHERE k=?1", azTab[t]);
    pGet = prep("SELECT v FROM %s WHERE k=?1", azTab[t]);
    {
      char *zPlan = queryPlan(sqlite3_sql(pGet));
      char *zPlan2 = queryPlan(sqlite3_sql(pDel));
      a->zPlan = xmalloc(strlen(zPlan)+strlen(zPlan2)+16);
      sprintf(a->zPlan, "get: %s; delete: %s", zPlan, zPlan2);
      free(zPlan); free(zPlan2);
    }
    rngSeed(&r, 30);
    progressStart(t, "mix, %lld statements", (long long)g.nQuery);
    t0 = now();
    execf("BEGIN");
    for(i=0; i<g.nQuery; i++){
      uint64_t x = rngNext(&r);
      int op = (int)(x % 10);
      int64_t idx = (int64_t)((x / 10) % (uint64_t)g.nRow);
      if( op==0 ){
        int64_t j = nIns++;
        int64_t k = absentKey(g.aPerm[g.nRow-1-(j % g.nRow)], 1 + (int)((j / g.nRow) % (KEY_SPACING-2)));
        int n = sOf(k, zS);
        sqlite3_bind_int64(pIns, 1, k);
        sqlite3_bind_int64(pIns, 2, vOf(k));
        sqlite3_bind_double(pIns, 3, rOf(k));
        sqlite3_bind_text(pIns, 4, zS, n, SQLITE_STATIC);
        stepDone(pIns, "mix insert");
        c[2] += sqlite3_changes(g.db);
      }else if( op==1 ){
        sqlite3_bind_int64(pDel, 1, keyOf(idx));
        stepDone(pDel, "mix delete");
        c[2] += 1000000*(int64_t)sqlite3_changes(g.db);
      }else{
        sqlite3_bind_int64(pGet, 1, keyOf(idx));
        while( (rc = sqlite3_step(pGet))==SQLITE_ROW ){
          c[0]++;
          c[1] += sqlite3_column_int64(pGet, 0);
        }
        if( rc!=SQLITE_DONE ) dbFail("mix get", sqlite3_reset(pGet));
        rc = sqlite3_reset(pGet);
        if( rc!=SQLITE_OK ) dbFail("mix get", rc);
      }
      if( (i+1)%COMMIT_EVERY==0 ){
        execf("COMMIT");
        execf("BEGIN");
      }
    }
    execf("COMMIT");
    finishRes(a, now()-t0, g.nQuery);
    a->nDone = a->nPlan = g.nQuery;
    progressEnd(w, a);
    fin(pIns); fin(pDel); fin(pGet);
    checkAnswer(w, t, c, 0);
    /* And the whole table afterwards. */
    tableSums(t, aSum);
    if( !bRefSum ){
      memcpy(aRefSum, aSum, sizeof(aRefSum));
      bRefSum = 1;
    }else if( memcmp(aRefSum, aSum, sizeof(aRefSum))!=0 ){
      int rr = refTable(w);
      fprintf(stderr, "MISMATCH after mix: %s holds (%lld, %lld, %lld), %s (%lld, %lld, %lld)\n",
              azKind[t], (long long)aSum[0], (long long)aSum[1], (long long)aSum[2],
              azKind[rr], (long long)aRefSum[0], (long long)aRefSum[1], (long long)aRefSum[2]);
      mismatchExit();
    }
  }
}

/* DELETE FROM t WHERE k BETWEEN lo AND hi, ~10% of the rows. */
void phaseDelete(void){
  Work *w;
  int t;
  int64_t i0 = g.nRow*45/100, nW = g.nRow/10>0 ? g.nRow/10 : 1;
  int64_t lo = i0*KEY_SPACING, hi = (i0+nW)*KEY_SPACING - 1;
  if( !selected("delete", "delete") ) return;
  w = newWork("delete", "delete", "rows/s", "DELETE ~10%% of rows by key range");
  for(t=0; t<NTAB; t++){
    Res *a = &w->a[t];
    sqlite3_stmt *p;
    char *zSql;
    int64_t c[3];
    double t0;
    int rc;
    if( !tableRuns(t, w) ) continue;
    useTable(t, 1);
    zSql = sqlite3_mprintf("DELETE FROM %s WHERE k BETWEEN %lld AND %lld",
                           azTab[t], (long long)lo, (long long)hi);
    a->zPlan = queryPlan(zSql);
    p = prep("%s", zSql);
    progressStart(t, "DELETE ~%lld rows by range", (long long)nW);
    t0 = now();
    g.deadline = t0 + g.timeout;
    rc = sqlite3_step(p);
    g.deadline = 0;
    a->sec = now()-t0;
    if( rc==SQLITE_INTERRUPT ){
      a->bTimeout = a->bRan = 1;
      sqlite3_reset(p);
      progressEnd(w, a);
      fin(p);
      sqlite3_free(zSql);
      /* The tables now differ: later workloads cannot be compared. */
      die("DELETE on %s interrupted after --timeout %.0f s: stopping", azKind[t], g.timeout);
    }
    if( rc!=SQLITE_DONE ) dbFail("delete", sqlite3_reset(p));
    c[0] = sqlite3_changes(g.db);
    finishRes(a, a->sec, c[0]);
    a->nRows = c[0];
    progressEnd(w, a);
    fin(p);
    sqlite3_free(zSql);
    if( t==T_FLOOR ){
      /* Its rows stay (writes are dropped): only the count of rows the
      ** statement deleted is its answer; the table's sums are not.  It
      ** holds the generator's rows, one a stratum, so the range holds nW of
      ** them.  The other tables' count differs by what the mix workload,
      ** which the floor does not run, inserted into the range and deleted
      ** from it. */
      if( a->nRows!=nW ){
        fflush(stdout);
        fprintf(stderr, "MISMATCH in %s: %s deletes %lld rows of the %lld in the range\n",
                w->zName, azKind[t], (long long)a->nRows, (long long)nW);
        mismatchExit();
      }
      a->bCheck = 1;
      continue;
    }
    tableSums(t, &c[0]);
    {
      int64_t d[3];
      d[0] = a->nRows; d[1] = c[0]; d[2] = c[1];
      checkAnswer(w, t, d, 0);
    }
  }
}

/* VmRSS and RssAnon of this process, bytes (-1 where unknown). */
static void readRss(int64_t *pRss, int64_t *pAnon){
  FILE *f = fopen("/proc/self/status", "r");
  char z[256];
  *pRss = *pAnon = -1;
  if( f==0 ) return;
  while( fgets(z, sizeof(z), f) ){
    long long x;
    if( sscanf(z, "VmRSS: %lld", &x)==1 ) *pRss = x*1024;
    else if( sscanf(z, "RssAnon: %lld", &x)==1 ) *pAnon = x*1024;
  }
  fclose(f);
}

/* The integer at JSON path zPath of gpuds_info(), or of its entry for the
** table main.zTable if zTable is given; -1 if absent. */
static int64_t infoInt(const char *zTable, const char *zPath){
  sqlite3_stmt *p;
  int64_t x = -1;
  if( zTable ){
    p = prep("SELECT json_extract(value, %Q) FROM json_each(gpuds_info(), '$.tables')"
             " WHERE json_extract(value, '$.name')='main.'||%Q", zPath, zTable);
  }else{
    p = prep("SELECT json_extract(gpuds_info(), %Q)", zPath);
  }
  if( sqlite3_step(p)==SQLITE_ROW && sqlite3_column_type(p, 0)!=SQLITE_NULL ){
    x = sqlite3_column_int64(p, 0);
  }
  fin(p);
  return x;
}

/* The b-trees of table t (an ordinary table and its indexes; a virtual
** table's shadow tables "<name>_..." and their indexes): their pages and
** bytes from dbstat, their names into f. */
static void fileBytes(int t, Fp *f){
  sqlite3_stmt *p, *pStat;
  sqlite3_str *s = sqlite3_str_new(0);
  int n = 0;
  f->fileB = f->nPage = 0;
  p = prep("SELECT name FROM sqlite_schema WHERE rootpage>0 AND (tbl_name=%Q OR"
           " (%d AND tbl_name LIKE replace(%Q, '_', '\\_') || '\\_%%' ESCAPE '\\'))"
           " ORDER BY name", azTab[t], !isOrdinary(t), azTab[t]);
  pStat = prep("SELECT count(*), coalesce(sum(pgsize), 0) FROM dbstat WHERE name=?1");
  while( sqlite3_step(p)==SQLITE_ROW ){
    const char *zName = (const char*)sqlite3_column_text(p, 0);
    sqlite3_str_appendf(s, "%s%s", n++ ? " " : "", zName);
    sqlite3_bind_text(pStat, 1, zName, -1, SQLITE_TRANSIENT);
    if( sqlite3_step(pStat)!=SQLITE_ROW ) dbFail("dbstat", sqlite3_reset(pStat));
    f->nPage += sqlite3_column_int64(pStat, 0);
    f->fileB += sqlite3_column_int64(pStat, 1);
    sqlite3_reset(pStat);
  }
  fin(pStat);
  fin(p);
  {
    char *z = sqlite3_str_finish(s);
    free(f->zBtrees);
    f->zBtrees = xstrdup(z ? z : "");
    sqlite3_free(z);
  }
}

/* Footprint of each table, fresh after loading its N rows: close, reopen,
** and for each table time the first SELECT v WHERE k=? (prepare included:
** it connects the table, and a gfsl/gpuhash table loads its rows), with
** the process's resident memory before (after malloc_trim) and after that
** query (for an ordinary table, after reading it all through its cache as
** well), the GPU's free memory before and after, the store's device_bytes,
** and the bytes of the table's b-trees in the file (dbstat). */
void phaseFootprint(void){
  Work *w;
  int t, bGpu;
  int64_t kProbe = keyOf(g.nRow/2);
  if( !g.bMain || !selected("reopen_point", "footprint") ) return;
  dbClose();
  dbOpen();
  bGpu = strcmp(g.zBackend, "cuda")==0;
  {
    sqlite3_stmt *p = 0;
    g.bDbstat = sqlite3_prepare_v2(g.db, "SELECT 1 FROM dbstat LIMIT 1", -1, &p, 0)==SQLITE_OK;
    sqlite3_finalize(p);
  }
  w = newWork("reopen_point", "footprint", "ms", "reopen: first SELECT v WHERE k=?");
  w->bShowTime = 1;
  for(t=0; t<NTAB; t++){
    Fp *f = &g.fp[t];
    Res *a = &w->a[t];
    sqlite3_stmt *p;
    int64_t rss0, anon0, rss1, anon1, free0, free1, c[3], aExp[3];
    double t0;
    if( !tableRuns(t, w) ) continue;
    useTable(t, 0);
    free0 = infoInt(0, "$.gpu_memory_free");
#ifdef __GLIBC__
    malloc_trim(0);        /* free memory of earlier work back to the system */
#endif
    readRss(&rss0, &anon0);
    progressStart(t, "reopen, first SELECT v FROM %s WHERE k=?", azTab[t]);
    t0 = now();
    p = prep("SELECT v FROM %s WHERE k=?1", azTab[t]);
    sqlite3_bind_int64(p, 1, kProbe);
    if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("reopen_point", sqlite3_reset(p));
    c[0] = 1; c[1] = sqlite3_column_int64(p, 0); c[2] = 0;
    fin(p);
    finishRes(a, now()-t0, 1);
    progressEnd(w, a);
    {
      char *zEqp = sqlite3_mprintf("SELECT v FROM %s WHERE k=%lld", azTab[t], (long long)kProbe);
      a->zPlan = queryPlan(zEqp);
      sqlite3_free(zEqp);
    }
    if( isOrdinary(t) ){
      /* What a cache that holds the table costs: read it (and its indexes)
      ** all through it. */
      readThrough(t);
      if( g.aCfg[t]==CFG_TUNED ) g.mWarm |= 1u<<t;
    }else{
      /* A store built in the background: wait for it, so the memory below
      ** is the loaded table's.  A write waits for it (xBegin) and, unlike a
      ** scan, builds no column set (a gpuhash scan would): the DELETE of a
      ** key no table holds (keys are >= 0), rolled back. */
      char zWait[128];
      snprintf(zWait, sizeof(zWait), "BEGIN; DELETE FROM %s WHERE k=-1; ROLLBACK", azTab[t]);
      if( sqlite3_exec(g.db, zWait, 0, 0, 0)!=SQLITE_OK ) dbFail("reopen_point wait", SQLITE_ERROR);
    }
    readRss(&rss1, &anon1);
    free1 = infoInt(0, "$.gpu_memory_free");
    f->bRan = 1;
    f->firstSec = a->sec;
    f->rssB = rss0>=0 && rss1>=0 ? rss1-rss0 : -1;
    f->anonB = anon0>=0 && anon1>=0 ? anon1-anon0 : -1;
    f->gpuFreeB = bGpu && !isOrdinary(t) && free0>=0 && free1>=0 ? free0-free1 : -1;
    f->devB = bGpu && !isOrdinary(t) ? infoInt(azTab[t], "$.store.device_bytes") : -1;
    f->colB = !isOrdinary(t) ? infoInt(azTab[t], "$.column_set.bytes") : -1;
    if( g.bDbstat ) fileBytes(t, f);
    else f->fileB = f->nPage = -1;
    aExp[0] = 1; aExp[1] = vOf(kProbe); aExp[2] = 0;
    checkAnswer(w, t, c, aExp);
  }
  g.bFp = 1;
}

/* reload_kv, before the reopen: the kv_ tables, N rows each in key order,
** one transaction each (untimed). */
static void kvCreate(void){
  int t;
  for(t=0; t<NTAB; t++){
    sqlite3_stmt *p;
    int64_t i;
    /* An ordinary table has nothing to load: once is enough; the floor
    ** table has no kv rows. */
    if( !g.aUse[t] || t==T_SQLDEF || t==T_SQLIDX || t==T_FLOOR ) continue;
    useTable(t, 0);
    fprintf(stderr, "[%-7s] %s(k INTEGER PRIMARY KEY, v INTEGER), %lld rows ... ",
            azKind[t], azKvTab[t], (long long)g.nRow);
    if( isOrdinary(t) ) execf("CREATE TABLE %s(k INTEGER PRIMARY KEY, v INTEGER)", azKvTab[t]);
    else execf("CREATE VIRTUAL TABLE %s USING %s(k INTEGER PRIMARY KEY, v INTEGER)",
               azKvTab[t], azKind[t]);
    p = prep("INSERT INTO %s(k, v) VALUES(?1, ?2)", azKvTab[t]);
    execf("BEGIN");
    for(i=0; i<g.nRow; i++){
      int64_t k = keyOf(i);
      sqlite3_bind_int64(p, 1, k);
      sqlite3_bind_int64(p, 2, vOf(k));
      stepDone(p, "insert into kv");
    }
    execf("COMMIT");
    fin(p);
    fprintf(stderr, "done\n");
  }
}

/* reload_kv, after the reopen: time the first SELECT v FROM kv_ WHERE k=?
** (prepare included: it connects the table; a gfsl/gpuhash table loads
** its N rows from its shadow tables then), as N rows / seconds. */
static void kvReload(void){
  Work *w = newWork("reload_kv", "reload", "rows/s", "reopen (k,v): first SELECT v WHERE k=?");
  int t;
  int64_t kProbe = keyOf(g.nRow/2);
  for(t=0; t<NTAB; t++){
    Res *a = &w->a[t];
    char zSql[128];
    int64_t c[3], aExp[3], v;
    double t0;
    sqlite3_stmt *p;
    if( !g.aUse[t] || t==T_SQLDEF || t==T_SQLIDX || t==T_FLOOR ) continue;
    useTable(t, 0);
    snprintf(zSql, sizeof(zSql), "SELECT v FROM %s WHERE k=?1", azKvTab[t]);
    progressStart(t, "reopen, first SELECT v FROM %s WHERE k=?", azKvTab[t]);
    t0 = now();
    p = prep("%s", zSql);      /* prepare included: it connects the table */
    sqlite3_bind_int64(p, 1, kProbe);
    if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("reload_kv", sqlite3_reset(p));
    v = sqlite3_column_int64(p, 0);
    fin(p);
    finishRes(a, now()-t0, g.nRow);
    progressEnd(w, a);
    t0 = now();
    p = prep("%s", zSql);
    sqlite3_bind_int64(p, 1, kProbe);
    if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("reload_kv", sqlite3_reset(p));
    fin(p);
    a->sec2 = now()-t0;
    {
      char *zEqp = sqlite3_mprintf("SELECT v FROM %s WHERE k=%lld", azKvTab[t], (long long)kProbe);
      a->zPlan = queryPlan(zEqp);
      sqlite3_free(zEqp);
    }
    /* The answer: count and sum of v over the table, and the v read. */
    p = prep("SELECT count(*), total(v) FROM %s", azKvTab[t]);
    if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("reload_kv check", sqlite3_reset(p));
    c[0] = sqlite3_column_int64(p, 0);
    c[1] = (int64_t)sqlite3_column_double(p, 1);
    c[2] = v;
    fin(p);
    aExp[0] = g.nRow; aExp[1] = g.sumV; aExp[2] = vOf(kProbe);
    checkAnswer(w, t, c, aExp);
    if( !isOrdinary(t) ){
      char *z, *zChk = sqlite3_mprintf("SELECT gpuds_check('%s')", azKvTab[t]);
      z = queryText(zChk);
      sqlite3_free(zChk);
      if( z==0 || strcmp(z, "ok")!=0 ){
        fprintf(stderr, "MISMATCH: gpuds_check('%s') is %s\n", azKvTab[t], z ? z : sqlite3_errmsg(g.db));
        mismatchExit();
      }
      free(z);
    }
  }
}

/* Close and reopen the database; time the first query on each table
** (a gfsl/gpuhash table loads its structure from its shadow tables then). */
void phaseReload(void){
  Work *w;
  int t;
  int bMain = g.bMain && selected("reload", "reload");
  int bKv = selected("reload_kv", "reload");
  if( !bMain && !bKv ) return;
  if( bKv ) kvCreate();
  dbClose();
  if( bKv ){
    /* the load itself is timed: none in the background (the extension
    ** reads its environment when a connection loads it) */
    const char *zLazy = getenv("GPUDS_LAZY_LOAD");
    char *zSave = zLazy ? xstrdup(zLazy) : 0;
    setenv("GPUDS_LAZY_LOAD", "off", 1);
    dbOpen();
    kvReload();
    dbClose();
    if( zSave ){ setenv("GPUDS_LAZY_LOAD", zSave, 1); free(zSave); }
    else unsetenv("GPUDS_LAZY_LOAD");
  }
  dbOpen();
  if( !bMain ) return;
  w = newWork("reload", "reload", "rows/s", "reopen: first SELECT count(*)");
  for(t=0; t<NTAB; t++){
    Res *a = &w->a[t];
    char zSql[128];
    int64_t c[3], cnt = 0;
    double t0;
    sqlite3_stmt *p;
    if( !tableRuns(t, w) ) continue;
    useTable(t, 0);       /* no warm-up: the first query is what is timed */
    snprintf(zSql, sizeof(zSql), "SELECT count(*) FROM %s", azTab[t]);
    progressStart(t, "reopen, first SELECT count(*)");
    t0 = now();
    p = prep("%s", zSql);      /* prepare included: it connects the table */
    if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("reload", sqlite3_reset(p));
    cnt = sqlite3_column_int64(p, 0);
    fin(p);
    finishRes(a, now()-t0, cnt);
    a->nRows = cnt;
    progressEnd(w, a);
    t0 = now();
    p = prep("%s", zSql);
    if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("reload", sqlite3_reset(p));
    fin(p);
    a->sec2 = now()-t0;
    a->zPlan = queryPlan(zSql);
    tableSums(t, c);
    if( c[0]!=cnt ){
      fprintf(stderr, "MISMATCH in reload: %s: first count %lld, then %lld\n",
              azKind[t], (long long)cnt, (long long)c[0]);
      mismatchExit();
    }
    checkAnswer(w, t, c, 0);
  }
}

/* gpuds_check() on each virtual table: structure vs shadow tables. */
void structureCheck(void){
  int t;
  if( !g.bMain ) return;
  for(t=0; t<NTAB; t++){
    char zSql[128], *z;
    if( !g.aUse[t] || isOrdinary(t) || t==T_FLOOR ) continue;
    snprintf(zSql, sizeof(zSql), "SELECT gpuds_check('%s')", azTab[t]);
    z = queryText(zSql);
    fprintf(stderr, "[%-7s] gpuds_check: %s\n", azKind[t], z ? z : sqlite3_errmsg(g.db));
    if( z==0 || strcmp(z, "ok")!=0 ){
      fprintf(stderr, "MISMATCH: gpuds_check('%s') is not ok\n", azTab[t]);
      mismatchExit();
    }
    free(z);
  }
}
