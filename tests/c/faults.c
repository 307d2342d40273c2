/*
** faults.c -- fault injection at the SQL level: the N-th memory
** allocation of a workload fails, for every N (every N up to 400, then a
** stride that covers the whole workload in about 1,500 runs).
**
** The workload runs on a gfsl table t, a gpuhash table h and an ordinary
** table r with the same rows, in one database file, with the write buffer
** flushed every 16 keys (GPUDS_FLUSH_ROWS): inserts, updates that move keys,
** deletes, savepoints rolled back, transactions committed and rolled back
** (each commit appends and merges runs), and a reload (close, reopen).
** Each write is one unit over the three tables (SAVEPOINT ... RELEASE; on an
** error, ROLLBACK TO), so whatever fails, SQLite's rules leave t, h and r
** with the same rows.  After each run, with allocations working again: the
** three tables hold the same rows, gpuds_check() says ok on t and h, and a
** new connection reads the same.
**
** malloc/calloc/realloc are replaced in this executable, so SQLite, the
** extension and the host stores all allocate through them; exactly one
** call fails per run (then allocations work again: the recovery of a
** failed statement is not itself under test).
**
** With "device" as third argument the CUDA stores run and, instead of a
** malloc, the N-th allocation of GPU memory (or of pinned host memory) by
** any store fails, through the hook gpuds.so exports for it
** (gpuds_test_device_faults, kernels/device.cu); every N is tried.
** Column plans are always taken (GPUDS_COLUMN_PLANS=always), so the column
** sets' device memory is in the workload too.  A store or column set
** whose allocation fails moves to the host and the statement goes on
** there, so in this mode no statement may fail at all (but for the
** workload's own constraint errors): one that does is a failure.
**
**   test_faults <path of gpuds.so> [max runs] [device]
** Prints "N passed, M failed"; exit 1 on a failure.
*/
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dlfcn.h>
#include "testext.h"
#include <stdint.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void*, size_t);

static long gCountdown = 0;     /* > 0: the allocation that fails */
static long gCalls = 0;         /* allocations while armed */
static int gFired = 0;
static uint64_t (*xDevFaults)(uint64_t) = 0;   /* device mode: the hook */

/* True if the allocation was asked for by the NVIDIA driver (libcuda and
** its helpers): its threads do not survive a failed malloc, and their
** allocations are not gpuds's to handle.  Such calls are never failed and
** not counted.  (The CUDA runtime is linked into gpuds.so: its calls are.) */
static int fromDriver(void *pCaller){
  Dl_info info;
  if( pCaller==0 || !dladdr(pCaller, &info) || info.dli_fname==0 ) return 0;
  return strstr(info.dli_fname, "libcuda")!=0 || strstr(info.dli_fname, "libnvidia")!=0;
}

static int failFrom(void *pCaller){
  if( gCountdown>0 && !fromDriver(pCaller) ){
    gCalls++;
    if( --gCountdown==0 ){ gFired = 1; return 1; }
  }
  return 0;
}
#define fail() failFrom(__builtin_return_address(0))
void *malloc(size_t n){ return fail() ? 0 : __libc_malloc(n); }
void *calloc(size_t a, size_t b){ return fail() ? 0 : __libc_calloc(a, b); }
void *realloc(void *p, size_t n){ return (n && fail()) ? 0 : __libc_realloc(p, n); }

/* The integers a..b as a table with one column, value. */
#define SERIES(a, b) "(WITH RECURSIVE c(value) AS (SELECT " #a " UNION ALL " \
                     "SELECT value+1 FROM c WHERE value<" #b ") SELECT value FROM c)"

static const char *zExt;
static char zDb[256];
static int nPass = 0, nFail = 0;
static long iRun = 0;

static void check(int ok, const char *zWhat, const char *zDetail);

/* The test database with gpuds loaded, or NULL. */
static sqlite3 *openDb(void){
  return testOpenWithExt(zDb, zExt, 0);
}

/* Run one statement; SQLITE_OK or its error code. */
static int run(sqlite3 *db, const char *zSql){
  static int bTrace = -1;
  int rc, bBefore = gFired;
  if( bTrace<0 ) bTrace = getenv("FAULTS_TRACE") ? atoi(getenv("FAULTS_TRACE")) : 0;
  rc = sqlite3_exec(db, zSql, 0, 0, 0);
  if( xDevFaults && rc!=SQLITE_OK && (rc & 0xff)!=SQLITE_CONSTRAINT ){
    char zMsg[300];
    snprintf(zMsg, sizeof(zMsg), "%.120s: %d %.150s", zSql, rc, sqlite3_errmsg(db));
    check(0, "no statement fails for lack of GPU memory", zMsg);
  }
  if( bTrace && (rc || bBefore!=gFired || bTrace>1) ){
    printf("  [run %ld] %.70s -> %d %s%s ac=%d\n", iRun, zSql, rc, rc ? sqlite3_errmsg(db) : "",
           bBefore!=gFired ? " (the failure)" : "", sqlite3_get_autocommit(db));
  }
  return rc;
}

static char *dump(sqlite3 *db, const char *zTab);

/* One write over t, h and r (zFmt has %s for the table), as a unit. */
static void unit(sqlite3 *db, const char *zFmt){
  static const char *azTab[] = { "t", "h", "r" };
  char zSql[512];
  int i, rc = run(db, "SAVEPOINT unit");
  if( rc ) return;
  for(i=0; i<3 && rc==SQLITE_OK; i++){
    snprintf(zSql, sizeof(zSql), zFmt, azTab[i]);
    rc = run(db, zSql);
  }
  if( rc==SQLITE_CONSTRAINT && strstr(zFmt, "INSERT INTO %s VALUES") ) rc = SQLITE_OK;
  if( rc ){
    if( run(db, "ROLLBACK TO unit")!=SQLITE_OK ) run(db, "ROLLBACK");
  }
  run(db, "RELEASE unit");
  if( getenv("FAULTS_TRACE") && atoi(getenv("FAULTS_TRACE"))>2 && gFired ){
    char *zr = dump(db, "r"), *zt = dump(db, "t");
    printf("    after unit %.50s: t %s r (%d / %d bytes)\n", zFmt,
           zr && zt && strcmp(zr, zt)==0 ? "==" : "!=", zt ? (int)strlen(zt) : -1,
           zr ? (int)strlen(zr) : -1);
    sqlite3_free(zr); sqlite3_free(zt);
  }
}

/* The rows of table zTab as text (NULL on an error). */
static char *dump(sqlite3 *db, const char *zTab){
  char zSql[256];
  sqlite3_stmt *p = 0;
  char *z = 0;
  snprintf(zSql, sizeof(zSql), "SELECT group_concat(k || ':' || quote(v), ',') "
           "FROM (SELECT * FROM %s ORDER BY k)", zTab);
  if( sqlite3_prepare_v2(db, zSql, -1, &p, 0)==SQLITE_OK && sqlite3_step(p)==SQLITE_ROW ){
    const char *zV = (const char*)sqlite3_column_text(p, 0);
    z = sqlite3_mprintf("%s", zV ? zV : "");
  }
  sqlite3_finalize(p);
  return z;
}

static void check(int ok, const char *zWhat, const char *zDetail){
  if( ok ){ nPass++; return; }
  nFail++;
  if( nFail<=20 ) printf("FAIL run %ld (allocation %ld failed): %s %s\n", iRun,
                         iRun, zWhat, zDetail ? zDetail : "");
}

/* The three tables agree and gpuds_check is ok, on connection db. */
static void verify(sqlite3 *db, const char *zWhere){
  char *zr = dump(db, "r"), *zt = dump(db, "t"), *zh = dump(db, "h");
  char zMsg[128];
  int i;
  snprintf(zMsg, sizeof(zMsg), "%s: t and h hold r's rows", zWhere);
  if( zr && zt && zh && (strcmp(zr, zt)!=0 || strcmp(zr, zh)!=0) ){
    const char *zo = strcmp(zr, zt)!=0 ? zt : zh;
    size_t k = 0;
    while( zr[k] && zr[k]==zo[k] ) k++;
    while( k>0 && zr[k-1]!=',' ) k--;
    check(0, zMsg, 0);
    printf("  %s differs from r at: r \"%.60s\" vs \"%.60s\"\n",
           zo==zt ? "t" : "h", zr+k, zo+k);
  }else{
    check(zr && zt && zh, zMsg, sqlite3_errmsg(db));
  }
  for(i=0; i<2; i++){
    sqlite3_stmt *p = 0;
    const char *zQ = i ? "SELECT gpuds_check('h')" : "SELECT gpuds_check('t')";
    int ok = sqlite3_prepare_v2(db, zQ, -1, &p, 0)==SQLITE_OK && sqlite3_step(p)==SQLITE_ROW
          && strcmp((const char*)sqlite3_column_text(p, 0), "ok")==0;
    snprintf(zMsg, sizeof(zMsg), "%s: %s", zWhere, zQ);
    check(ok, zMsg, ok ? 0 : (p && sqlite3_column_text(p, 0)) ? (const char*)sqlite3_column_text(p, 0)
                                                            : sqlite3_errmsg(db));
    sqlite3_finalize(p);
  }
  sqlite3_free(zr); sqlite3_free(zt); sqlite3_free(zh);
}

/* The workload.  *pDb may be replaced (reload). */
static void workload(sqlite3 **pDb){
  sqlite3 *db = *pDb;
  int i;
  unit(db, "INSERT INTO %s SELECT value, 'n' || value FROM " SERIES(300, 340) "");
  run(db, "BEGIN");
  for(i=0; i<3; i++){
    unit(db, "INSERT OR REPLACE INTO %s SELECT value*7 %% 500, 'r' || value FROM " SERIES(1, 40) "");
    unit(db, "UPDATE %s SET k = k + 1000 WHERE k BETWEEN 50 AND 60");
    unit(db, "DELETE FROM %s WHERE k %% 9 = 0");
  }
  unit(db, "UPDATE %s SET v = v || '=' WHERE v = 'n305' OR v = 'r12'");
  if( run(db, "COMMIT") ) run(db, "ROLLBACK");
  run(db, "SAVEPOINT a");
  unit(db, "INSERT INTO %s VALUES(5000, 'sp')");
  unit(db, "UPDATE %s SET v = 'x' || k WHERE k < 100");
  run(db, "ROLLBACK TO a");
  unit(db, "DELETE FROM %s WHERE k BETWEEN 100 AND 130");
  if( run(db, "RELEASE a") ) run(db, "ROLLBACK");
  run(db, "BEGIN");
  unit(db, "INSERT INTO %s SELECT value, 'b' || value FROM " SERIES(2000, 2100) "");
  run(db, "ROLLBACK");
  for(i=0; i<3; i++){
    char zSql[128];
    snprintf(zSql, sizeof(zSql), "INSERT OR REPLACE INTO %%s VALUES(%d, 'c%d')", 7000+i, i);
    unit(db, zSql);                     /* autocommit: runs appended and merged */
  }
  sqlite3_close(db);                    /* reload */
  *pDb = db = openDb();
  if( db==0 ) return;
  unit(db, "UPDATE %s SET v = v || '!' WHERE k %% 5 = 1");
}

/* The starting rows, allocations working. */
static sqlite3 *setup(void){
  sqlite3 *db;
  unlink(zDb);
  db = openDb();
  if( db==0 ) return 0;
  run(db, "CREATE VIRTUAL TABLE t USING gfsl(k INTEGER PRIMARY KEY, v);"
          "CREATE VIRTUAL TABLE h USING gpuhash(k INTEGER PRIMARY KEY, v);"
          "CREATE TABLE r(k INTEGER PRIMARY KEY, v);");
  unit(db, "INSERT INTO %s SELECT value, 'v' || value FROM " SERIES(1, 200) "");
  return db;
}

/* Arm the failure of allocation n from now (0: count only) and return the
** allocations counted since the last call: malloc's, or in device mode the
** stores' GPU allocations. */
static long arm(long n){
  long k = gCalls;
  if( xDevFaults ) return (long)xDevFaults((uint64_t)n);
  gCalls = 0;
  gCountdown = n;
  return k;
}

int main(int argc, char **argv){
  long nMax = argc>2 ? atol(argv[2]) : 800, nTotal, stride, n;
  int bDevice = argc>3 && strcmp(argv[3], "device")==0;
  sqlite3 *db;
  if( argc<2 ){ fprintf(stderr, "usage: %s gpuds.so [max runs] [device]\n", argv[0]); return 2; }
  zExt = argv[1];
  snprintf(zDb, sizeof(zDb), "/tmp/gpuds_faults_%d.db", (int)getpid());
  setenv("GPUDS_FLUSH_ROWS", "16", 1);
  setenv("GPUDS_COLUMN_PLANS", "always", 1);
  /* The host stores: failing an allocation inside the CUDA runtime tests the
  ** runtime, not gpuds (GPUDS_FAULTS_BACKEND=cuda to try it anyway). */
  if( bDevice ) setenv("GPUDS_FAULTS_BACKEND", "cuda", 1);
  {
    /* GPUDS_BACKEND takes "host" or "auto" (the GPU where one is usable):
    ** any other value fails the extension's load, so the CUDA variant
    ** asks for "auto" and checks below that the tables did go to the GPU */
    const char *zFb = getenv("GPUDS_FAULTS_BACKEND");
    setenv("GPUDS_BACKEND", zFb && strcmp(zFb, "cuda")==0 ? "auto" : "host", 1);
  }
  /* A run with no failure counts the workload's allocations.  A load that
  ** fails with nothing armed is the test's own failure, not a skip. */
  {
    sqlite3 *dbTry = testOpenWithExt(zDb, zExt, 1);
    if( dbTry==0 ){ printf("FAIL: cannot open the database or load %s\n", zExt); return 1; }
    sqlite3_close(dbTry);
  }
  db = setup();
  if( db==0 ){ printf("FAIL: cannot set up the tables\n"); return 1; }
  if( bDevice ){
    void *h = dlopen(zExt, RTLD_NOW|RTLD_NOLOAD);
    xDevFaults = h ? (uint64_t(*)(uint64_t))dlsym(h, "gpuds_test_device_faults") : 0;
    if( h ) dlclose(h);
    if( xDevFaults==0 ){
      printf("SKIPPED: %s has no CUDA stores (no gpuds_test_device_faults)\n", zExt);
      sqlite3_close(db); unlink(zDb); return 77;
    }
  }
  if( getenv("GPUDS_FAULTS_BACKEND") && strcmp(getenv("GPUDS_FAULTS_BACKEND"), "cuda")==0 ){
    /* the CUDA variant: skipped (not passed) where the tables run on the host */
    sqlite3_stmt *pStmt = 0;
    int bCuda = 0;
    if( sqlite3_prepare_v2(db, "SELECT json_extract(gpuds_info(), '$.backends.gfsl')",
                           -1, &pStmt, 0)==SQLITE_OK && sqlite3_step(pStmt)==SQLITE_ROW ){
      const char *z = (const char*)sqlite3_column_text(pStmt, 0);
      bCuda = z && strcmp(z, "cuda")==0;
    }
    sqlite3_finalize(pStmt);
    if( !bCuda ){ printf("SKIPPED: no usable GPU (the tables run on the host)\n"); sqlite3_close(db); unlink(zDb); return 77; }
  }
  arm(xDevFaults ? 0 : 1L<<62);         /* count, never fire */
  workload(&db);
  nTotal = arm(0);
  if( db ) verify(db, "no failure");
  sqlite3_close(db);
  stride = nTotal/nMax + 1;
  printf("workload: %ld %sallocations; failing each of the first 400, then every %ld-th\n",
         nTotal, xDevFaults ? "device " : "", stride);
  if( nTotal==0 ){ printf("FAIL: the workload allocated nothing to fail\n"); return 1; }
  if( getenv("FAULTS_RUN") ){               /* one run, to look at it */
    n = atol(getenv("FAULTS_RUN"));
    nTotal = n;
    stride = 1;
  }
  for(n = getenv("FAULTS_RUN") ? n : 1; n<=nTotal; n += (n<400 ? 1 : stride)){
    iRun = n;
    db = setup();
    if( db==0 ){ check(0, "setup", 0); break; }
    gFired = 0;
    arm(n);
    workload(&db);
    if( xDevFaults && arm(0)>=n ) gFired = 1;
    if( db==0 ) db = openDb();          /* the reload itself failed */
    if( db==0 ){ check(0, "reopen", 0); continue; }
    verify(db, "after the failure");
    sqlite3_close(db);
    db = openDb();                      /* what was committed */
    if( db ){ verify(db, "a new connection"); sqlite3_close(db); }
  }
  unlink(zDb);
  printf("%d passed, %d failed\n", nPass, nFail);
  return nFail ? 1 : 0;
}
