/*
** sqlbench_db.c -- the connection (opened with the extension and the floor
** module, its page-cache configurations, closed) and the statement helpers
** every workload uses.
*/
#include "sqlbench.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- SQLite */

void dbFail(const char *zWhat, int rc){
  die("%s: %s (rc=%d)", zWhat, g.db ? sqlite3_errmsg(g.db) : "no connection", rc);
}

sqlite3_stmt *prep(const char *zFmt, ...){
  va_list ap;
  char *zSql;
  sqlite3_stmt *p = 0;
  int rc;
  va_start(ap, zFmt);
  zSql = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  if( zSql==0 ) die("out of memory");
  rc = sqlite3_prepare_v2(g.db, zSql, -1, &p, 0);
  if( rc!=SQLITE_OK ) die("prepare \"%s\": %s (rc=%d)", zSql, sqlite3_errmsg(g.db), rc);
  sqlite3_free(zSql);
  return p;
}

void fin(sqlite3_stmt *p){
  int rc = sqlite3_finalize(p);
  if( rc!=SQLITE_OK ) dbFail("finalize", rc);
}

void execf(const char *zFmt, ...){
  va_list ap;
  char *zSql, *zErr = 0;
  int rc;
  va_start(ap, zFmt);
  zSql = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  if( zSql==0 ) die("out of memory");
  rc = sqlite3_exec(g.db, zSql, 0, 0, &zErr);
  if( rc!=SQLITE_OK ) die("\"%s\": %s (rc=%d)", zSql, zErr ? zErr : sqlite3_errstr(rc), rc);
  sqlite3_free(zSql);
}

/* Step a statement that returns no rows, then reset it. */
void stepDone(sqlite3_stmt *p, const char *zWhat){
  int rc = sqlite3_step(p);
  if( rc!=SQLITE_DONE ){
    rc = sqlite3_reset(p);
    dbFail(zWhat, rc);
  }
  rc = sqlite3_reset(p);
  if( rc!=SQLITE_OK ) dbFail(zWhat, rc);
}

/* A text result of a one-row query (malloc'd), or NULL on error. */
char *queryText(const char *zSql){
  sqlite3_stmt *p = 0;
  char *z = 0;
  if( sqlite3_prepare_v2(g.db, zSql, -1, &p, 0)!=SQLITE_OK ) return 0;
  if( sqlite3_step(p)==SQLITE_ROW && sqlite3_column_text(p, 0) ){
    z = xstrdup((const char*)sqlite3_column_text(p, 0));
  }
  sqlite3_finalize(p);
  return z;
}

/* count(*), sum(v), sum(k)+sum(1024r) of a whole table (untimed checks).
** Exact in any scan order: the integer sums are integers, and every partial
** sum of r is a multiple of 1/1024 below 2^43 (r*1024 < N). */
void tableSums(int t, int64_t *c){
  sqlite3_stmt *p = prep("SELECT count(*), coalesce(sum(v), 0), coalesce(sum(k), 0), 1024*total(r) FROM %s",
                         azTab[t]);
  int rc = sqlite3_step(p);
  if( rc!=SQLITE_ROW ) dbFail("table check", sqlite3_reset(p));
  c[0] = sqlite3_column_int64(p, 0);
  c[1] = sqlite3_column_int64(p, 1);
  c[2] = sqlite3_column_int64(p, 2) + (int64_t)sqlite3_column_double(p, 3);
  fin(p);
}

/* EXPLAIN QUERY PLAN of zSql, its lines joined with "; " (malloc'd). */
char *queryPlan(const char *zSql){
  char *zEqp = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", zSql);
  sqlite3_stmt *p = 0;
  sqlite3_str *s = sqlite3_str_new(0);
  char *z, *zRet;
  int n = 0;
  if( zEqp && sqlite3_prepare_v2(g.db, zEqp, -1, &p, 0)==SQLITE_OK ){
    while( sqlite3_step(p)==SQLITE_ROW ){
      const char *zLine = (const char*)sqlite3_column_text(p, 3);
      sqlite3_str_appendf(s, "%s%s", n++ ? "; " : "", zLine ? zLine : "");
    }
  }
  sqlite3_finalize(p);
  sqlite3_free(zEqp);
  z = sqlite3_str_finish(s);
  zRet = xstrdup(z ? z : "");
  sqlite3_free(z);
  return zRet;
}

/* Progress handler: interrupt the statement past g.deadline. */
static int progressCb(void *pArg){
  (void)pArg;
  return g.deadline>0 && now()>g.deadline;
}

/* The integer value of PRAGMA zName. */
static int64_t pragmaInt(const char *zName){
  sqlite3_stmt *p = prep("PRAGMA %s", zName);
  int64_t x = 0;
  if( sqlite3_step(p)==SQLITE_ROW ) x = sqlite3_column_int64(p, 0);
  fin(p);
  return x;
}

void dbOpen(void){
  char *zErr = 0;
  int rc, i;
  /* NOMUTEX: one thread uses the connection; spares every API call
  ** (sqlite3_column_*, sqlite3_step) a mutex round trip. */
  rc = sqlite3_open_v2(g.zDb, &g.db,
                       SQLITE_OPEN_READWRITE|SQLITE_OPEN_CREATE|SQLITE_OPEN_NOMUTEX, 0);
  if( rc!=SQLITE_OK ) dbFail("open database", rc);
  rc = sqlite3_db_config(g.db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, (int*)0);
  if( rc!=SQLITE_OK ) dbFail("enable load_extension", rc);
  rc = sqlite3_load_extension(g.db, g.zExt, 0, &zErr);
  if( rc!=SQLITE_OK ){
    die("cannot load the extension %s: %s (build it first, or give --ext PATH)",
        g.zExt, zErr ? zErr : sqlite3_errstr(rc));
  }
  rc = floorRegister(g.db);
  if( rc!=SQLITE_OK ) dbFail("register the floor module", rc);
  /* SQLite's defaults, as compiled, are the default configuration; the
  ** tuned one is a page cache that holds the database plus mmap, then the
  ** --pragma options on top (so they may change it). */
  g.aCache[CFG_DEFAULT] = (int)pragmaInt("cache_size");
  g.aMmap[CFG_DEFAULT] = pragmaInt("mmap_size");
  execf("PRAGMA cache_size=%lld", -(long long)(g.nRow*TUNED_KIB_PER_ROW > 2000 ? g.nRow*TUNED_KIB_PER_ROW : 2000));
  execf("PRAGMA mmap_size=%lld", (long long)TUNED_MMAP_SIZE);
  for(i=0; i<g.nPragma; i++) execf("PRAGMA %s", g.azPragma[i]);
  g.aCache[CFG_TUNED] = (int)pragmaInt("cache_size");
  g.aMmap[CFG_TUNED] = pragmaInt("mmap_size");
  g.iCfgNow = CFG_TUNED;
  g.mWarm = 0;
  sqlite3_progress_handler(g.db, 10000, progressCb, 0);
}

/* Put the connection in page-cache configuration e.  Shrinking the cache
** evicts the pages beyond it; the tuned cache refills as it is read. */
static void applyCfg(int e){
  if( e==g.iCfgNow ) return;
  execf("PRAGMA cache_size=%d", g.aCache[e]);
  execf("PRAGMA mmap_size=%lld", (long long)g.aMmap[e]);
  g.iCfgNow = e;
  if( e!=CFG_TUNED ) g.mWarm = 0;
}

/* True for the ordinary (rowid) tables. */
int isOrdinary(int t){ return t==T_SQLITE || t==T_SQLIDX || t==T_SQLDEF; }

/* Read ordinary table t in full through the page cache (untimed): every
** column of the table's b-tree and, for the indexed table, each index
** (a covering scan of it). */
void readThrough(int t){
  sqlite3_stmt *p = prep("SELECT count(*), total(v), total(r), total(length(s)) FROM %s", azTab[t]);
  int i;
  if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("cache warm-up", sqlite3_reset(p));
  fin(p);
  if( t!=T_SQLIDX ) return;
  for(i=0; i<3; i++){
    p = prep("SELECT count(*), max(%s) FROM %s INDEXED BY %s_%s WHERE %s IS NOT NULL",
             azIdxCol[i], azTab[t], azTab[t], azIdxCol[i], azIdxCol[i]);
    if( sqlite3_step(p)!=SQLITE_ROW ) dbFail("cache warm-up (index)", sqlite3_reset(p));
    fin(p);
  }
}

/* Before table t runs a workload: its configuration; and if t is an
** ordinary table in the tuned configuration and bWarm, its pages (and its
** indexes') read through the tuned cache first (untimed), as in any process
** that has been using it: the tuned run measures a cache that holds the
** table, not its filling. */
void useTable(int t, int bWarm){
  applyCfg(g.aCfg[t]);
  if( bWarm && isOrdinary(t) && g.aCfg[t]==CFG_TUNED && !(g.mWarm & (1u<<t)) && g.bMain ){
    readThrough(t);
    g.mWarm |= 1u<<t;
  }
}

void dbClose(void){
  int rc = sqlite3_close(g.db);
  if( rc!=SQLITE_OK ) dbFail("close (statement left open?)", rc);
  g.db = 0;
}
