/*
** bigalloc.c -- no row-scaled array of gpuds goes through SQLite's
** allocator.
**
** SQLite refuses any one block of ~2 GiB or more (SQLITE_MAX_ALLOCATION_SIZE),
** so an array whose length is a number of rows (a load, a batch, a column
** set, a key list, a result list) allocated with sqlite3_malloc64 fails with
** SQLITE_NOMEM at ~2.7e8 rows while the GPU could hold the table.  Such
** arrays are malloc()'d (ext/gpuds_int.h).  This test scales the limit down:
** SQLite's allocator is wrapped (SQLITE_CONFIG_MALLOC) to refuse any block
** over CAP_BYTES (1 MiB; the sorter and the length limit, which bounds a
** run's chunks, are kept small so that SQLite itself stays under it), and tables of enough rows that those arrays
** are several MiB go through a bulk insert in one transaction, column
** filters and orders (GPUDS_COLUMN_PLANS=always), key ranges, IN lists on
** the key and on a column, big updates with a savepoint rolled back, a range
** deleted, commits and a close and reopen (a reload).  Every answer of a
** gfsl table t and a gpuhash table h is compared, row by row, with an
** ordinary table r holding the same rows, and gpuds_check() must say ok.
** The pass runs twice: rollback journal with the stores as configured, and
** WAL with the host mirror (GPUDS_MIRROR=1) and a background load whose
** first lookups the runs on disk answer (GPUDS_LAZY_LOAD=hold).
** Finally no block over the cap may have been asked for at all.
**
**   test_bigalloc <path of gpuds.so> [rows]
** Exit 0 if everything agrees, 1 otherwise.
*/
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <execinfo.h>
#include <time.h>
#include "testext.h"

#define CAP_BYTES (1<<20)

static sqlite3_mem_methods gDefault;   /* SQLite's own allocator */
static long gRefused = 0;              /* blocks over the cap asked for */
static long long gLargest = 0;         /* the largest of them */

/* Count a refused block; the first few say who asked (build with
** -rdynamic or read the addresses with addr2line). */
static void refuse(int n){
  gRefused++;
  if( n>gLargest ) gLargest = n;
  if( gRefused<=3 ){
    void *a[16];
    printf("refused a block of %d bytes, asked by:\n", n);
    fflush(stdout);
    backtrace_symbols_fd(a, backtrace(a, 16), 1);
  }
}
static void *capMalloc(int n){
  if( n>CAP_BYTES ){ refuse(n); return 0; }
  return gDefault.xMalloc(n);
}
static void *capRealloc(void *p, int n){
  if( n>CAP_BYTES ){ refuse(n); return 0; }
  return gDefault.xRealloc(p, n);
}
static void capFree(void *p){ gDefault.xFree(p); }
static int capSize(void *p){ return gDefault.xSize(p); }
static int capRoundup(int n){ return gDefault.xRoundup(n); }
static int capInit(void *p){ return gDefault.xInit(p); }
static void capShutdown(void *p){ gDefault.xShutdown(p); }

static const char *zExt;
static char zDb[256];
static int nRow;
static int nPass = 0, nFail = 0;

static void check(int ok, const char *zWhat, const char *zDetail){
  if( ok ){ nPass++; return; }
  nFail++;
  if( nFail<=30 ) printf("FAIL: %s%s%s\n", zWhat, zDetail ? ": " : "", zDetail ? zDetail : "");
}

static sqlite3 *openDb(void){
  sqlite3 *db = testOpenWithExt(zDb, zExt, 1);
  if( db==0 ) return 0;
  /* SQLite's sorter takes blocks of up to max(cache, 250 pages), and a
  ** record as long as its longest value (a run's chunk: gpuds keeps those
  ** within the length limit): keep all of them under the cap */
  sqlite3_exec(db, "PRAGMA cache_size=-256; PRAGMA synchronous=OFF", 0, 0, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, CAP_BYTES - 100000);
  return db;
}

/* Run zSql (no rows expected); check it succeeded. */
static int exec(sqlite3 *db, const char *zSql){
  char *zErr = 0;
  int rc = sqlite3_exec(db, zSql, 0, 0, &zErr);
  char zWhat[200];
  snprintf(zWhat, sizeof(zWhat), "%.160s", zSql);
  check(rc==SQLITE_OK, zWhat, zErr);
  sqlite3_free(zErr);
  return rc;
}

/* zFmt with every %s replaced by zTab (at most 4). */
static void fmtFor(char *z, size_t n, const char *zFmt, const char *zTab){
  snprintf(z, n, zFmt, zTab, zTab, zTab, zTab);
}

/* One write (zFmt: %s for the table, %% for %) on r (unless bNoR), t and h. */
static void writeSome(sqlite3 *db, const char *zFmt, int bNoR){
  static const char *azTab[] = { "r", "t", "h" };
  char zSql[1024];
  int i;
  for(i=bNoR ? 1 : 0; i<3; i++){
    fmtFor(zSql, sizeof(zSql), zFmt, azTab[i]);
    exec(db, zSql);
  }
}
#define writeAll(db, zFmt) writeSome(db, zFmt, 0)

/* Query zFmt (%s for the table) on t and on h gives exactly the rows it
** gives on r, in the same order: values and types compared column by
** column while stepping the statements side by side. */
static void same(sqlite3 *db, const char *zWhere, const char *zFmt){
  static const char *azTab[] = { "t", "h" };
  char zSql[1024], zWhat[1400];
  int iTab;
  for(iTab=0; iTab<2; iTab++){
    sqlite3_stmt *pR = 0, *pX = 0;
    long long nRows = 0;
    int rcR = SQLITE_ROW, rcX = SQLITE_ROW, bDiff = 0, i;
    char zDetail[600];
    fmtFor(zSql, sizeof(zSql), zFmt, "r");
    snprintf(zWhat, sizeof(zWhat), "%s: [%s] %s", zWhere, azTab[iTab], zFmt);
    if( sqlite3_prepare_v2(db, zSql, -1, &pR, 0)!=SQLITE_OK ){
      check(0, zWhat, sqlite3_errmsg(db)); sqlite3_finalize(pR); continue;
    }
    fmtFor(zSql, sizeof(zSql), zFmt, azTab[iTab]);
    if( sqlite3_prepare_v2(db, zSql, -1, &pX, 0)!=SQLITE_OK ){
      check(0, zWhat, sqlite3_errmsg(db)); sqlite3_finalize(pR); sqlite3_finalize(pX); continue;
    }
    zDetail[0] = 0;
    while( !bDiff ){
      rcR = sqlite3_step(pR);
      if( rcR!=SQLITE_ROW && rcR!=SQLITE_DONE ){
        snprintf(zDetail, sizeof(zDetail), "the ordinary table: %s", sqlite3_errmsg(db));
        bDiff = 1; break;
      }
      rcX = sqlite3_step(pX);
      if( rcX!=SQLITE_ROW && rcX!=SQLITE_DONE ){
        snprintf(zDetail, sizeof(zDetail), "rc=%d %s", rcX, sqlite3_errmsg(db));
        bDiff = 1; break;
      }
      if( rcR!=rcX ){
        snprintf(zDetail, sizeof(zDetail), "%s rows than r (after %lld)",
                 rcX==SQLITE_ROW ? "more" : "fewer", nRows);
        bDiff = 1; break;
      }
      if( rcR==SQLITE_DONE ) break;
      for(i=0; i<sqlite3_column_count(pR); i++){
        int eR = sqlite3_column_type(pR, i), eX = sqlite3_column_type(pX, i);
        int ok = eR==eX;
        if( ok && eR==SQLITE_INTEGER ) ok = sqlite3_column_int64(pR, i)==sqlite3_column_int64(pX, i);
        if( ok && eR==SQLITE_FLOAT ){
          double a = sqlite3_column_double(pR, i), b = sqlite3_column_double(pX, i);
          ok = memcmp(&a, &b, sizeof(a))==0;
        }
        if( ok && (eR==SQLITE_TEXT || eR==SQLITE_BLOB) ){
          const void *a = sqlite3_column_blob(pR, i), *b = sqlite3_column_blob(pX, i);
          int n = sqlite3_column_bytes(pR, i);
          ok = n==sqlite3_column_bytes(pX, i) && (n==0 || memcmp(a, b, n)==0);
        }
        if( !ok ){
          snprintf(zDetail, sizeof(zDetail), "row %lld column %d: r has %s, %s has %s", nRows, i,
                   (const char*)sqlite3_column_text(pR, i), azTab[iTab],
                   (const char*)sqlite3_column_text(pX, i));
          bDiff = 1; break;
        }
      }
      nRows++;
    }
    check(!bDiff, zWhat, zDetail);
    if( getenv("BIGALLOC_TIME") ){
      struct timespec ts; double t;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      t = ts.tv_sec + ts.tv_nsec*1e-9;
      { static double tLast = 0; printf("%6.2fs %s\n", tLast ? t-tLast : 0, zWhat); tLast = t; }
    }
    sqlite3_finalize(pR);
    sqlite3_finalize(pX);
  }
}

/* gpuds_check() on t and h says ok. */
static void checkOk(sqlite3 *db, const char *zWhere){
  static const char *azQ[] = { "SELECT gpuds_check('t')", "SELECT gpuds_check('h')" };
  int i;
  for(i=0; i<2; i++){
    sqlite3_stmt *p = 0;
    char zWhat[200];
    int ok = sqlite3_prepare_v2(db, azQ[i], -1, &p, 0)==SQLITE_OK && sqlite3_step(p)==SQLITE_ROW
          && sqlite3_column_text(p, 0) && strcmp((const char*)sqlite3_column_text(p, 0), "ok")==0;
    snprintf(zWhat, sizeof(zWhat), "%s: %s", zWhere, azQ[i]);
    check(ok, zWhat, ok ? 0 : (p && sqlite3_column_text(p, 0)) ? (const char*)sqlite3_column_text(p, 0)
                                                              : sqlite3_errmsg(db));
    sqlite3_finalize(p);
  }
}

/* Every comparison, on the rows as they are now. */
static void queries(sqlite3 *db, const char *zWhere){
  char zSql[512];
  long long kMid = (long long)nRow*3/2, kQ = (long long)nRow*3/4;
  /* whole table, in key order and as aggregates */
  same(db, zWhere, "SELECT count(*), sum(k), sum(v), total(r), sum(length(s)) FROM %s");
  same(db, zWhere, "SELECT k, v, r, s FROM %s ORDER BY k");
  /* column filters and orders (column plans) */
  same(db, zWhere, "SELECT count(*), sum(k), total(r) FROM %s WHERE v = 7");
  same(db, zWhere, "SELECT k, v, r, s FROM %s WHERE v = 7 ORDER BY k");
  snprintf(zSql, sizeof(zSql), "SELECT count(*), sum(k), sum(v) FROM %%s WHERE r BETWEEN %d AND %d",
           nRow/10, nRow/10*6);
  same(db, zWhere, zSql);
  same(db, zWhere, "SELECT k, v, r, s FROM %s ORDER BY r DESC LIMIT 10");
  same(db, zWhere, "SELECT k, v, r, s FROM %s ORDER BY r LIMIT 10 OFFSET 1000");
  same(db, zWhere, "SELECT k, r FROM %s WHERE v < 500 ORDER BY r DESC");
  same(db, zWhere, "SELECT count(*), sum(k) FROM %s WHERE s = 's42'");
  /* key ranges */
  snprintf(zSql, sizeof(zSql), "SELECT k, v, r, s FROM %%s WHERE k BETWEEN %lld AND %lld ORDER BY k",
           kQ, kMid + kQ);
  same(db, zWhere, zSql);
  snprintf(zSql, sizeof(zSql), "SELECT k, v FROM %%s WHERE k > %lld ORDER BY k DESC", kMid);
  same(db, zWhere, zSql);
  snprintf(zSql, sizeof(zSql), "SELECT count(*), sum(v) FROM %%s WHERE k BETWEEN %lld AND %lld",
           kMid, kMid + 40000);
  same(db, zWhere, zSql);
  /* IN lists: on the key (a big key list) and on a column */
  same(db, zWhere, "SELECT k, v, s FROM %s WHERE k IN (SELECT k+1 FROM r WHERE k %% 7 = 0 "
                   "UNION ALL SELECT k FROM r WHERE k %% 5 = 0) ORDER BY k");
  same(db, zWhere, "SELECT count(*), sum(k), total(r) FROM %s WHERE r IN (SELECT r FROM r WHERE k/3 %% 5 = 0)");
  same(db, zWhere, "SELECT k, r FROM %s WHERE r IN (SELECT r FROM r WHERE k %% 11 = 0) ORDER BY r DESC LIMIT 20");
  checkOk(db, zWhere);
}

/* The rows: keys 3*i in a scattered order (i*P mod nRow, P prime to nRow),
** r distinct (a permutation of 0..nRow-1, over 4), v and s repeating. */
#define ROWS_SQL "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM c WHERE i<%d) " \
                 "SELECT (i*1000003 %% %d)*3, i %% 1000, ((i*7919) %% %d)*0.25, 's' || (i %% 5000) FROM c"

static void pass(const char *zMode){
  sqlite3 *db;
  char zSql[1024], zWhere[64];
  unlink(zDb);
  snprintf(zSql, sizeof(zSql), "%s-wal", zDb); unlink(zSql);
  snprintf(zSql, sizeof(zSql), "%s-shm", zDb); unlink(zSql);
  db = openDb();
  if( db==0 ){ check(0, zMode, "open"); return; }
  if( strcmp(zMode, "wal")==0 ) exec(db, "PRAGMA journal_mode=WAL");
  exec(db, "CREATE TABLE r(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT);"
           "CREATE VIRTUAL TABLE t USING gfsl(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT);"
           "CREATE VIRTUAL TABLE h USING gpuhash(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT);");
  /* bulk insert in one transaction */
  exec(db, "BEGIN");
  snprintf(zSql, sizeof(zSql), "INSERT INTO r " ROWS_SQL, nRow-1, nRow, nRow);
  exec(db, zSql);
  writeSome(db, "INSERT INTO %s SELECT * FROM r", 1);
  snprintf(zWhere, sizeof(zWhere), "%s, in the insert's transaction", zMode);
  same(db, zWhere, "SELECT count(*), sum(k), sum(v), total(r), sum(length(s)) FROM %s");
  same(db, zWhere, "SELECT k, v, r FROM %s WHERE v = 3 ORDER BY k");
  exec(db, "COMMIT");
  snprintf(zWhere, sizeof(zWhere), "%s, inserted", zMode);
  queries(db, zWhere);
  /* big updates, a savepoint rolled back, a range deleted */
  exec(db, "BEGIN");
  writeAll(db, "UPDATE %s SET v = v + 1, s = s || '+' WHERE k %% 2 = 0");
  exec(db, "SAVEPOINT a");
  writeAll(db, "DELETE FROM %s WHERE v > 100");
  writeAll(db, "UPDATE %s SET r = -r");
  exec(db, "ROLLBACK TO a");
  exec(db, "RELEASE a");
  snprintf(zSql, sizeof(zSql), "DELETE FROM %%s WHERE k BETWEEN %lld AND %lld",
           (long long)nRow/2, (long long)nRow*2);
  writeAll(db, zSql);
  snprintf(zWhere, sizeof(zWhere), "%s, in the update's transaction", zMode);
  queries(db, zWhere);
  exec(db, "COMMIT");
  snprintf(zWhere, sizeof(zWhere), "%s, updated", zMode);
  queries(db, zWhere);
  /* reload */
  sqlite3_close(db);
  db = openDb();
  if( db==0 ){ check(0, zMode, "reopen"); return; }
  snprintf(zWhere, sizeof(zWhere), "%s, reopened", zMode);
  /* first key lookups only: with GPUDS_LAZY_LOAD=hold the runs on disk
  ** answer them (diskread.c) */
  same(db, zWhere, "SELECT k, v, r, s FROM %s WHERE k IN (SELECT k FROM r WHERE k %% 13 = 0) ORDER BY k");
  same(db, zWhere, "SELECT k, v, r, s FROM %s WHERE k = 3000");
  queries(db, zWhere);
  sqlite3_close(db);
}

int main(int argc, char **argv){
  sqlite3_mem_methods m;
  if( argc<2 ){ fprintf(stderr, "usage: %s gpuds.so [rows]\n", argv[0]); return 2; }
  zExt = argv[1];
  nRow = argc>2 ? atoi(argv[2]) : 1100000;
  if( nRow<1000 || nRow%1000003==0 || nRow%7919==0 ){ fprintf(stderr, "bad row count\n"); return 2; }
  if( sqlite3_config(SQLITE_CONFIG_GETMALLOC, &gDefault)!=SQLITE_OK ){
    printf("SKIPPED: cannot read SQLite's allocator\n"); return 77;
  }
  m = gDefault;
  m.xMalloc = capMalloc; m.xRealloc = capRealloc; m.xFree = capFree;
  m.xSize = capSize; m.xRoundup = capRoundup; m.xInit = capInit; m.xShutdown = capShutdown;
  if( sqlite3_config(SQLITE_CONFIG_MALLOC, &m)!=SQLITE_OK ){
    printf("SKIPPED: cannot install the capped allocator\n"); return 77;
  }
  snprintf(zDb, sizeof(zDb), "/tmp/gpuds_bigalloc_%d.db", (int)getpid());
  setenv("GPUDS_COLUMN_PLANS", "always", 1);
  pass("rollback");
  setenv("GPUDS_MIRROR", "1", 1);
  setenv("GPUDS_LAZY_LOAD", "hold", 1);
  pass("wal");
  check(gRefused==0, "no block over the cap was asked of SQLite's allocator", 0);
  if( gRefused ) printf("  %ld refused, the largest %lld bytes\n", gRefused, gLargest);
  {
    char z[300];
    unlink(zDb);
    snprintf(z, sizeof(z), "%s-wal", zDb); unlink(z);
    snprintf(z, sizeof(z), "%s-shm", zDb); unlink(z);
  }
  printf("%d rows: %d passed, %d failed\n", nRow, nPass, nFail);
  return nFail ? 1 : 0;
}
