/*
** sqlbench_work.c -- the workload engine: the figures of a workload, the
** check of every answer against the reference table's, the progress lines,
** the loads of rows, and the query loops (median, p99, budget).
*/
#include "sqlbench.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- workloads */

int selected(const char *zName, const char *zGroup){
  int i;
  if( g.nOnly==0 ) return 1;
  for(i=0; i<g.nOnly; i++){
    if( strcmp(g.azOnly[i], zName)==0 || strcmp(g.azOnly[i], zGroup)==0 ) return 1;
  }
  return 0;
}

Work *newWork(const char *zName, const char *zGroup, const char *zUnit,
                     const char *zTitleFmt, ...){
  Work *w;
  va_list ap;
  if( g.nW==g.nWAlloc ){
    g.nWAlloc = g.nWAlloc ? g.nWAlloc*2 : 32;
    g.aW = realloc(g.aW, g.nWAlloc*sizeof(Work));
    if( g.aW==0 ) die("out of memory");
  }
  w = &g.aW[g.nW++];
  memset(w, 0, sizeof(*w));
  snprintf(w->zName, sizeof(w->zName), "%s", zName);
  w->zGroup = zGroup;
  w->zUnit = zUnit;
  va_start(ap, zTitleFmt);
  vsnprintf(w->zTitle, sizeof(w->zTitle), zTitleFmt, ap);
  va_end(ap);
  return w;
}

/* The first table that ran w (the reference), or -1. */
int refTable(const Work *w){
  int t;
  for(t=0; t<NTAB; t++) if( w->a[t].bCheck ) return t;
  return -1;
}

/* Record table t's answer c[0..2] for w and compare it with the reference's
** and, if aExp is given, with the expected answer (-1 entries: unknown). */
void checkAnswer(Work *w, int t, const int64_t *c, const int64_t *aExp){
  int r = refTable(w), i;
  Res *a = &w->a[t];
  for(i=0; i<3; i++) a->c[i] = c[i];
  if( aExp ){
    for(i=0; i<3; i++){
      if( aExp[i]>=0 && aExp[i]!=c[i] ){
        fflush(stdout);
        fprintf(stderr, "MISMATCH in %s: %s gives (%lld, %lld, %lld), expected (%lld, %lld, %lld)\n",
                w->zName, azKind[t], (long long)c[0], (long long)c[1], (long long)c[2],
                (long long)aExp[0], (long long)aExp[1], (long long)aExp[2]);
        mismatchExit();
      }
    }
  }
  if( r>=0 && r!=t ){
    for(i=0; i<3; i++){
      if( w->a[r].c[i]!=c[i] ){
        fflush(stdout);
        fprintf(stderr, "MISMATCH in %s: %s gives (%lld, %lld, %lld), %s gives (%lld, %lld, %lld)\n",
                w->zName, azKind[t], (long long)c[0], (long long)c[1], (long long)c[2],
                azKind[r], (long long)w->a[r].c[0], (long long)w->a[r].c[1],
                (long long)w->a[r].c[2]);
        mismatchExit();
      }
    }
  }
  a->bCheck = 1;
}

void progressStart(int t, const char *zFmt, ...){
  va_list ap;
  fprintf(stderr, "[%-7s] ", azLabel[t]);
  va_start(ap, zFmt);
  vfprintf(stderr, zFmt, ap);
  va_end(ap);
  fprintf(stderr, " ... ");
  fflush(stderr);
}
void progressEnd(const Work *w, const Res *a){
  char z[32];
  if( w->bShowTime ){
    fprintf(stderr, "%.3f ms\n", 1e3*a->sec);
  }else if( a->bTimeout ){
    fprintf(stderr, "TIMEOUT after %.2f s\n", a->sec);
  }else{
    fprintf(stderr, "%.3f s (%s %s%s)\n", a->sec, fmtNum(a->rate, z, sizeof(z)),
            w->zUnit, a->nDone && a->nDone<a->nPlan ? ", --budget reached" : "");
  }
}

void finishRes(Res *a, double sec, int64_t nItem){
  a->bRan = 1;
  a->sec = sec;
  a->nItem = nItem;
  a->rate = sec>0 ? (double)nItem/sec : 0;
}

/* Create table zName of kind t (the indexed ordinary table with its three
** indexes, <zName>_v, _r, _s). */
void createTable(int t, const char *zName){
  if( isOrdinary(t) ) execf("CREATE TABLE %s(%s)", zName, zCols);
  else execf("CREATE VIRTUAL TABLE %s USING %s(%s)", zName, azKind[t], zCols);
  if( t==T_SQLIDX ){
    int i;
    for(i=0; i<3; i++) execf("CREATE INDEX %s_%s ON %s(%s)", zName, azIdxCol[i], zName, azIdxCol[i]);
  }
}

/* Rows an insert workload makes at a time, outside its timing. */
#define GEN_ROWS 4096

/* One row of an insert workload, made ahead of its statement. */
typedef struct GenRow {
  int64_t k, v;
  double r;
  int n;                 /* bytes of s */
  char zS[32];
} GenRow;

/* Insert the N rows into zName (a new table of kind t), in random or key
** order, N prepared INSERTs in one transaction; COMMIT included, the
** making of the rows (GEN_ROWS at a time) not. */
void insertRows(Work *w, int t, const char *zName, int bSorted){
  sqlite3_stmt *p;
  GenRow *aGen = xmalloc(sizeof(GenRow)*GEN_ROWS);
  int64_t i0, c[3], aExp[3];
  double t0, tGen = 0;
  Res *a = &w->a[t];
  useTable(t, 1);
  createTable(t, zName);
  p = prep("INSERT INTO %s(k, v, r, s) VALUES(?1, ?2, ?3, ?4)", zName);
  progressStart(t, "insert %s order, %lld rows", bSorted ? "key" : "random", (long long)g.nRow);
  t0 = now();
  execf("BEGIN");
  for(i0=0; i0<g.nRow; i0+=GEN_ROWS){
    /* The rows are made GEN_ROWS at a time and that time is not the
    ** table's: in random order each row's key and r read the generator's
    ** tables at random (two cache misses a row at 10^7 rows), which cost
    ** every table the same and were up to a quarter of a gfsl load. */
    int n = g.nRow-i0 < GEN_ROWS ? (int)(g.nRow-i0) : GEN_ROWS, j;
    double tg = now();
    for(j=0; j<n; j++){
      GenRow *e = &aGen[j];
      e->k = keyOf(bSorted ? i0+j : g.aPerm[i0+j]);
      e->v = vOf(e->k);
      e->r = rOf(e->k);
      e->n = sOf(e->k, e->zS);
    }
    tGen += now()-tg;
    for(j=0; j<n; j++){
      const GenRow *e = &aGen[j];
      sqlite3_bind_int64(p, 1, e->k);
      sqlite3_bind_int64(p, 2, e->v);
      sqlite3_bind_double(p, 3, e->r);
      sqlite3_bind_text(p, 4, e->zS, e->n, SQLITE_STATIC);
      stepDone(p, "insert");
    }
  }
  execf("COMMIT");
  free(aGen);
  finishRes(a, now()-t0-tGen, g.nRow);
  progressEnd(w, a);
  fin(p);
  a->zPlan = xstrdup("");
  tableSums(t, c);
  aExp[0] = g.nRow; aExp[1] = g.sumV; aExp[2] = -1;
  checkAnswer(w, t, c, aExp);
}

/* INSERT INTO zName SELECT k, v, r, s FROM src (one statement, autocommit). */
void insertSelect(Work *w, int t, const char *zName){
  sqlite3_stmt *p;
  char *zSql;
  int64_t c[3], aExp[3];
  double t0;
  int rc;
  Res *a = &w->a[t];
  useTable(t, 1);
  createTable(t, zName);
  zSql = sqlite3_mprintf("INSERT INTO %s(k, v, r, s) SELECT k, v, r, s FROM src", zName);
  a->zPlan = queryPlan(zSql);
  p = prep("%s", zSql);
  progressStart(t, "INSERT ... SELECT, %lld rows", (long long)g.nRow);
  t0 = now();
  g.deadline = t0 + g.timeout;
  rc = sqlite3_step(p);
  g.deadline = 0;
  if( rc==SQLITE_INTERRUPT ){
    a->bTimeout = 1;
    sqlite3_reset(p);
  }else if( rc!=SQLITE_DONE ){
    dbFail("INSERT ... SELECT", sqlite3_reset(p));
  }
  finishRes(a, now()-t0, g.nRow);
  progressEnd(w, a);
  fin(p);
  sqlite3_free(zSql);
  if( a->bTimeout ){ a->rate = 0; return; }
  tableSums(t, c);
  aExp[0] = g.nRow; aExp[1] = g.sumV; aExp[2] = -1;
  checkAnswer(w, t, c, aExp);
}


int cmpDouble(const void *a, const void *b){
  double x = *(const double*)a, y = *(const double*)b;
  return x<y ? -1 : x>y;
}

/* Bind the parameters of query q of qs to p, as zType says. */
static void bindParams(sqlite3_stmt *p, const QSet *qs, int64_t q){
  int i;
  for(i=0; i<qs->nParam; i++){
    int64_t x = qs->aParam[q*qs->nParam+i];
    switch( qs->zType[i] ){
      case 'r': sqlite3_bind_double(p, i+1, (double)x/1024.0); break;
      case 't': {
        char z[32];
        int n = sOfU(x, z);
        sqlite3_bind_text(p, i+1, z, n, SQLITE_TRANSIENT);
        break;
      }
      case 'x': {
        char z[8];
        int n = hexPrefix(x, z);
        sqlite3_bind_text(p, i+1, z, n, SQLITE_TRANSIENT);
        break;
      }
      default:  sqlite3_bind_int64(p, i+1, x); break;
    }
  }
}

/* Run the queries of qs on table t through statement zSql (%s = table),
** checking each answer against the reference table's. */
static void runQueries(Work *w, int t, QSet *qs, int eMode, const char *zSqlFmt,
                       int64_t nExpRowsPerQuery){
  Res *a = &w->a[t];
  char *zSql = sqlite3_mprintf(zSqlFmt, azTab[t]);
  sqlite3_stmt *p;
  int64_t nMax = qs->nQ, q, nRows = 0, c[3] = {0, 0, 0};
  double *aLat, t0, tEnd;
  int bRef = qs->iRef<0;
  if( zSql==0 ) die("out of memory");
  useTable(t, 1);
  if( !bRef && !(qs->bCycle && qs->nRef>0) ) nMax = qs->nRef;
  a->zPlan = queryPlan(zSql);
  p = prep("%s", zSql);
  aLat = xmalloc(sizeof(double)*(size_t)(nMax ? nMax : 1));
  progressStart(t, "%s, %lld queries", w->zTitle, (long long)nMax);
  t0 = now();
  tEnd = t0 + g.budget;
  for(q=0; q<nMax; q++){
    QAns ans = {0, 0, 0};
    double tq = now();
    int64_t qi = bRef ? q : q % qs->nRef;    /* the query (cycling: repeated) */
    int rc, i;
    if( q>0 && tq>tEnd ) break;
    bindParams(p, qs, qi);
    while( (rc = sqlite3_step(p))==SQLITE_ROW ){
      switch( eMode ){
        case QM_POINT:
          ans.n++; ans.a += sqlite3_column_int64(p, 0);
          break;
        case QM_ROWS: {
          const unsigned char *zS;
          ans.n++;
          ans.b += sqlite3_column_int64(p, 0);
          ans.a += sqlite3_column_int64(p, 1);
          ans.b += (int64_t)(sqlite3_column_double(p, 2)*1024.0);
          zS = sqlite3_column_text(p, 3);
          ans.b += zS ? sqlite3_column_bytes(p, 3) : 0;
          break;
        }
        case QM_AGG:
          ans.n += sqlite3_column_int64(p, 0);
          ans.a += sqlite3_column_int64(p, 1);
          break;
        case QM_DESC:
          ans.n++;
          ans.b += sqlite3_column_int64(p, 0);
          ans.a += sqlite3_column_int64(p, 1);
          break;
      }
    }
    if( rc!=SQLITE_DONE ) dbFail(w->zTitle, sqlite3_reset(p));
    rc = sqlite3_reset(p);
    if( rc!=SQLITE_OK ) dbFail(w->zTitle, rc);
    aLat[q] = now()-tq;
    if( bRef ){
      qs->aRef[q] = ans;
    }else if( memcmp(&qs->aRef[qi], &ans, sizeof(ans))!=0 ){
      QAns *r = &qs->aRef[qi];
      fflush(stdout);
      fprintf(stderr, "\nMISMATCH in %s, query %lld (", w->zName, (long long)qi);
      for(i=0; i<qs->nParam; i++){
        fprintf(stderr, "%s%lld", i ? ", " : "", (long long)qs->aParam[qi*qs->nParam+i]);
      }
      fprintf(stderr, "): %s gives (%lld, %lld, %lld), %s gives (%lld, %lld, %lld)\n  %s\n",
              azKind[t], (long long)ans.n, (long long)ans.a, (long long)ans.b,
              azKind[qs->iRef], (long long)r->n, (long long)r->a, (long long)r->b, zSql);
      mismatchExit();
    }
    if( nExpRowsPerQuery>=0 && ans.n!=nExpRowsPerQuery ){
      fflush(stdout);
      fprintf(stderr, "\nMISMATCH in %s, query %lld: %s gives %lld rows, expected %lld\n",
              w->zName, (long long)q, azKind[t], (long long)ans.n, (long long)nExpRowsPerQuery);
      mismatchExit();
    }
    nRows += ans.n;
    c[0] += ans.n; c[1] += ans.a; c[2] += ans.b;
  }
  finishRes(a, now()-t0, q);
  a->nDone = q;
  a->nPlan = qs->nQ;
  a->nRows = nRows;
  if( q>0 ){
    qsort(aLat, (size_t)q, sizeof(double), cmpDouble);
    a->med = aLat[q/2];
    a->p99 = aLat[(size_t)((double)(q-1)*0.99)];
  }
  progressEnd(w, a);
  if( bRef ){ qs->iRef = t; qs->nRef = q; }
  a->bCheck = 1;      /* compared query by query above */
  a->c[0] = c[0]; a->c[1] = c[1]; a->c[2] = c[2];
  free(aLat);
  fin(p);
  sqlite3_free(zSql);
}

QSet *qsetNew(int nParam, int64_t nQ){
  QSet *qs = xmalloc(sizeof(*qs));
  memset(qs, 0, sizeof(*qs));
  qs->nParam = nParam;
  qs->nQ = nQ;
  qs->aParam = xmalloc(sizeof(int64_t)*(size_t)(nQ>0 && nParam>0 ? nQ*nParam : 1));
  qs->aRef = xmalloc(sizeof(QAns)*(size_t)(nQ ? nQ : 1));
  qs->iRef = -1;
  return qs;
}
void qsetFree(QSet *qs){
  free(qs->aParam); free(qs->aRef); free(qs);
}

/* Run one query workload on every table. */
void queryWorkload(Work *w, QSet *qs, int eMode, const char *zSqlFmt,
                          int64_t nExp){
  int t;
  for(t=0; t<NTAB; t++){
    if( tableRuns(t, w) ) runQueries(w, t, qs, eMode, zSqlFmt, nExp);
  }
}

/* A single statement returning one row (count, sum), timed with the
** --timeout guard; returns 0 if interrupted. */
int singleQuery(Work *w, int t, const char *zSql, int64_t *c){
  Res *a = &w->a[t];
  sqlite3_stmt *p;
  double t0;
  int rc;
  a->zPlan = queryPlan(zSql);
  p = prep("%s", zSql);
  t0 = now();
  g.deadline = t0 + g.timeout;
  rc = sqlite3_step(p);
  if( rc==SQLITE_ROW ){
    c[0] = sqlite3_column_int64(p, 0);
    c[1] = sqlite3_column_int64(p, 1);
    c[2] = 0;
    rc = sqlite3_step(p);
  }
  g.deadline = 0;
  a->sec = now()-t0;
  if( rc==SQLITE_INTERRUPT ){
    a->bTimeout = 1;
    a->bRan = 1;
    sqlite3_reset(p);
    fin(p);
    return 0;
  }
  if( rc!=SQLITE_DONE ) dbFail(w->zTitle, sqlite3_reset(p));
  fin(p);
  return 1;
}
