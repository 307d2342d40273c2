/*
** sharebench.c -- what connections of one process cost when they share a
** table's copy (ext/copy.c), and what a process costs: the figures of issue
** "One copy per process".
**
**   sharebench --ext build/gpuds [--rows N] [--db FILE] [--module gfsl|gpuhash|sqlite]
**              [--seconds S] [--threads 1,2,4,8] [--procs 4] [--memstatus 0|1]
**              [--txn Q] [--json FILE]
**
** --module sqlite runs the same on an ordinary table (its page cache
** holding it): how far SQLite itself lets threads scale on this machine.
** --memstatus 0 turns off SQLite's memory statistics
** (SQLITE_CONFIG_MEMSTATUS), whose one process-wide mutex every
** allocation takes while they are on (SQLite's default).
**
** 1. memory: one connection reads the table (a point query, a column
**    query: the store and the column set built); then connections 2..8 do
**    the same.  The process's resident memory (VmRSS) and the GPU memory in
**    use (gpuds_info()'s gpu_memory_total - gpu_memory_free) after 1, 4 and
**    8 connections, each less what the process held before the first.
** 2. first answer: with those connections open, a new connection's first
**    point query and first column query (prepare + step), no load; and
**    the same queries warm, what they cost anyway.
** 3. threads: T threads, each with its own connection (opened and warmed
**    first), run point queries (SELECT s FROM t WHERE k=?) for S seconds,
**    then column queries (SELECT count(*) FROM t WHERE v=?): queries a
**    second for each T, the ratio to one thread's, and the cores the
**    process kept busy meanwhile (user and system CPU time over the
**    wall-clock time: threads that wait for one another keep fewer busy
**    than they are).  --txn Q runs each thread's queries Q to a read
**    transaction (BEGIN ... COMMIT) instead of each in its own: what the
**    per-statement transaction of SQLite (its WAL read lock) costs.
** 4. processes: P processes (this program again, --child), each opening
**    the database and answering its first point and column query: each
**    one's time and resident memory, and the GPU memory in use while all
**    are open (what sharing between processes would save).
**
** The table (k INTEGER PRIMARY KEY, v INTEGER, s TEXT, r REAL) of N rows is
** made in FILE (WAL) if FILE does not hold it.  GPUDS_SHARE=0 in the
** environment gives the figures without sharing, for comparison.
*/
#include <sqlite3.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <errno.h>

#define MAX_CONN 8

static const char *zExt = "build/gpuds";
static const char *zDb = "/tmp/sharebench.db";
static const char *zMod = "gfsl";
static int64_t nRows = 1000000;
static double rSeconds = 2.0;
static int aThreads[16] = {1, 2, 4, 8};
static int nThreadSet = 4;
static int nProcs = 4;
static int nTxn = 1;                /* --txn: queries a read transaction */
static FILE *pJson = 0;

static void die(const char *zFmt, const char *zArg){
  fprintf(stderr, "sharebench: ");
  fprintf(stderr, zFmt, zArg);
  fprintf(stderr, "\n");
  exit(1);
}

static double now(void){
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec*1e-9;
}

/* The process's resident memory, bytes. */
static int64_t rssBytes(void){
  FILE *f = fopen("/proc/self/status", "r");
  char zLine[256];
  int64_t n = -1;
  if( f==0 ) return -1;
  while( fgets(zLine, sizeof(zLine), f) ){
    if( strncmp(zLine, "VmRSS:", 6)==0 ){ n = strtoll(zLine+6, 0, 10)*1024; break; }
  }
  fclose(f);
  return n;
}

static sqlite3 *openDb(void){
  sqlite3 *db = 0;
  char *zErr = 0;
  if( sqlite3_open_v2(zDb, &db, SQLITE_OPEN_READWRITE|SQLITE_OPEN_CREATE|SQLITE_OPEN_FULLMUTEX, 0) ){
    die("cannot open %s", zDb);
  }
  sqlite3_busy_timeout(db, 60000);
  sqlite3_enable_load_extension(db, 1);
  if( sqlite3_load_extension(db, zExt, 0, &zErr) ) die("cannot load the extension: %s", zErr);
  if( strcmp(zMod, "sqlite")==0 ){
    char *z = sqlite3_mprintf("PRAGMA cache_size=%lld; PRAGMA mmap_size=34359738368",
                              -(long long)(nRows/8 + 2000));
    sqlite3_exec(db, z, 0, 0, 0);
    sqlite3_free(z);
  }
  return db;
}

/* Whether SQLite keeps its memory statistics (it counts no memory when
** they are off). */
static int memstatusOn(void){
  sqlite3_int64 nNow = 0, nHigh = 0;
  sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &nNow, &nHigh, 0);
  return nNow>0;
}

static void exec(sqlite3 *db, const char *zSql){
  char *zErr = 0;
  if( sqlite3_exec(db, zSql, 0, 0, &zErr) ) die("%s", zErr ? zErr : sqlite3_errmsg(db));
}

static int64_t oneInt(sqlite3 *db, const char *zSql){
  sqlite3_stmt *p;
  int64_t v = -1;
  if( sqlite3_prepare_v2(db, zSql, -1, &p, 0) ) die("%s", sqlite3_errmsg(db));
  if( sqlite3_step(p)==SQLITE_ROW ) v = sqlite3_column_int64(p, 0);
  sqlite3_finalize(p);
  return v;
}

/* GPU memory in use on the device (total - free), from gpuds_info(); 0
** without a GPU. */
static int64_t gpuUsed(sqlite3 *db){
  return oneInt(db, "SELECT json_extract(gpuds_info(), '$.gpu_memory_total')"
                    " - json_extract(gpuds_info(), '$.gpu_memory_free')");
}

/* Make the table unless the file holds it with nRows rows. */
static void makeTable(void){
  sqlite3 *db = openDb();
  char *zSql;
  if( oneInt(db, "SELECT count(*) FROM sqlite_schema WHERE name='t'")==1
   && oneInt(db, "SELECT count(*) FROM t")==nRows ){
    sqlite3_close(db);
    return;
  }
  printf("making %lld rows in %s (%s)...\n", (long long)nRows, zDb, zMod);
  fflush(stdout);
  exec(db, "PRAGMA journal_mode=wal; DROP TABLE IF EXISTS t");
  zSql = sqlite3_mprintf("CREATE %s t%s%s(k INTEGER PRIMARY KEY, v INTEGER, s TEXT, r REAL);"
      "BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<%lld)"
      " INSERT INTO t SELECT i, (i*7919)%%1000003, 's'||(i%%100003), i*0.5 FROM c; COMMIT",
      strcmp(zMod, "sqlite") ? "VIRTUAL TABLE" : "TABLE",
      strcmp(zMod, "sqlite") ? " USING " : "", strcmp(zMod, "sqlite") ? zMod : "",
      (long long)nRows);
  exec(db, zSql);
  sqlite3_free(zSql);
  sqlite3_close(db);
}

/* Step p (reset first) with ?1 = a, to the end: rows returned. */
static int runOnce(sqlite3_stmt *p, int64_t a){
  int n = 0, rc;
  sqlite3_reset(p);
  sqlite3_bind_int64(p, 1, a);
  while( (rc = sqlite3_step(p))==SQLITE_ROW ) n++;
  if( rc!=SQLITE_DONE ) die("query: %s", sqlite3_errmsg(sqlite3_db_handle(p)));
  return n;
}

#define SQL_POINT  "SELECT s FROM t WHERE k=?1"
#define SQL_COLUMN "SELECT count(*) FROM t WHERE v=?1"

/* A connection's first point query and first column query, each timed
** (prepare + steps), in ms. */
static void firstAnswers(sqlite3 *db, double *pPoint, double *pCol){
  sqlite3_stmt *p;
  double t0 = now();
  if( sqlite3_prepare_v2(db, SQL_POINT, -1, &p, 0) ) die("%s", sqlite3_errmsg(db));
  runOnce(p, nRows/2);
  sqlite3_finalize(p);
  *pPoint = (now()-t0)*1e3;
  t0 = now();
  if( sqlite3_prepare_v2(db, SQL_COLUMN, -1, &p, 0) ) die("%s", sqlite3_errmsg(db));
  runOnce(p, 12345);
  sqlite3_finalize(p);
  *pCol = (now()-t0)*1e3;
}

/* ------------------------------------------------------------ threads */
/* One thread's state, a cache line pair of its own: the counters every
** query moves stay off its neighbours' lines. */
typedef struct Worker {
  sqlite3 *db;
  const char *zSql;
  int bPoint;
  uint64_t x;               /* PRNG seed */
  int64_t nDone;
  pthread_t tid;
} __attribute__((aligned(128))) Worker;

static volatile int bGo, bStop;

/* Run zSql on db (BEGIN, COMMIT). */
static void execOn(sqlite3 *db, const char *zSql){
  if( sqlite3_exec(db, zSql, 0, 0, 0) ) die("%s", sqlite3_errmsg(db));
}

static void *workerMain(void *pArg){
  Worker *w = (Worker*)pArg;
  sqlite3_stmt *p;
  uint64_t x = w->x;
  int64_t nDone = 0;
  if( sqlite3_prepare_v2(w->db, w->zSql, -1, &p, 0) ) die("%s", sqlite3_errmsg(w->db));
  runOnce(p, 1);                          /* warm */
  while( !__atomic_load_n(&bGo, __ATOMIC_ACQUIRE) ) usleep(100);
  while( !__atomic_load_n(&bStop, __ATOMIC_ACQUIRE) ){
    int i;
    if( nTxn>1 ) execOn(w->db, "BEGIN");
    for(i=0; i<64; i++){
      x ^= x<<13; x ^= x>>7; x ^= x<<17;
      runOnce(p, w->bPoint ? (int64_t)(x % (uint64_t)nRows) + 1 : (int64_t)(x % 1000003));
      if( nTxn>1 && (i+1)%nTxn==0 && i<63 ){ execOn(w->db, "COMMIT"); execOn(w->db, "BEGIN"); }
    }
    if( nTxn>1 ) execOn(w->db, "COMMIT");
    nDone += 64;
  }
  sqlite3_finalize(p);
  w->nDone = nDone;
  return 0;
}

/* Sleep rSec seconds of wall-clock time, whatever signals come (a
** sampling profiler's every millisecond). */
static void sleepFor(double rSec){
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += (time_t)rSec;
  t.tv_nsec += (long)((rSec - (double)(time_t)rSec)*1e9);
  if( t.tv_nsec>=1000000000L ){ t.tv_sec++; t.tv_nsec -= 1000000000L; }
  while( clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, 0)==EINTR ){}
}

/* CPU time the process has used, seconds: user (*pUser) + system. */
static double cpuSeconds(double *pUser){
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *pUser = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec*1e-6;
  return *pUser + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec*1e-6;
}

/* Queries a second of nT threads running zSql for rSeconds; *pCores and
** *pUser: the cores the process kept busy meanwhile (all, and in user
** mode). */
static double threadRate(sqlite3 **aDb, int nT, const char *zSql, int bPoint,
                         double *pCores, double *pUser){
  Worker aW[MAX_CONN];
  double t0, t1, c0, c1, u0, u1;
  int64_t n = 0;
  int i;
  bGo = bStop = 0;
  for(i=0; i<nT; i++){
    memset(&aW[i], 0, sizeof(aW[i]));
    aW[i].db = aDb[i];
    aW[i].zSql = zSql;
    aW[i].bPoint = bPoint;
    aW[i].x = 0x9e3779b97f4a7c15ULL * (uint64_t)(i+1);
    pthread_create(&aW[i].tid, 0, workerMain, &aW[i]);
  }
  sleepFor(0.2);                          /* every worker warmed */
  t0 = now();
  c0 = cpuSeconds(&u0);
  __atomic_store_n(&bGo, 1, __ATOMIC_RELEASE);
  sleepFor(rSeconds);
  __atomic_store_n(&bStop, 1, __ATOMIC_RELEASE);
  for(i=0; i<nT; i++){ pthread_join(aW[i].tid, 0); n += aW[i].nDone; }
  t1 = now();
  c1 = cpuSeconds(&u1);
  *pCores = (c1-c0)/(t1-t0);
  *pUser = (u1-u0)/(t1-t0);
  return (double)n/(t1-t0);
}

/* ------------------------------------------------------------ processes */

/* A child process (--child): open, first answers, report "point_ms col_ms
** rss" on stdout, wait for the parent's word on stdin, exit.  A process of
** its own (fork + exec): the parent has a CUDA context, which a forked
** child could not use. */
static int childRun(void){
  sqlite3 *db = openDb();
  double a, b;
  char c;
  firstAnswers(db, &a, &b);
  printf("%.3f %.3f %lld\n", a, b, (long long)rssBytes());
  fflush(stdout);
  if( read(0, &c, 1)<0 ) return 1;
  sqlite3_close(db);
  return 0;
}

static void processes(sqlite3 *db0, int64_t gpu0){
  int aFd[64][2], aGo[64][2], i;
  pid_t aPid[64];
  double aPt[64], aCol[64];
  long long aRss[64];
  int64_t gpu;
  if( nProcs>64 ) nProcs = 64;
  for(i=0; i<nProcs; i++){
    char zRows[32];
    if( pipe(aFd[i]) || pipe(aGo[i]) ) die("%s", "pipe");
    snprintf(zRows, sizeof(zRows), "%lld", (long long)nRows);
    fflush(stdout);
    aPid[i] = fork();
    if( aPid[i]==0 ){
      char *azArg[] = { "sharebench", "--child", "1", "--ext", (char*)zExt, "--db", (char*)zDb,
                        "--rows", zRows, 0 };
      dup2(aFd[i][1], 1);
      dup2(aGo[i][0], 0);
      execv("/proc/self/exe", azArg);
      _exit(127);
    }
    close(aFd[i][1]); close(aGo[i][0]);
    {
      char zBuf[128];
      ssize_t n = read(aFd[i][0], zBuf, sizeof(zBuf)-1);
      zBuf[n>0 ? n : 0] = 0;
      if( sscanf(zBuf, "%lf %lf %lld", &aPt[i], &aCol[i], &aRss[i])!=3 ) die("child: %s", zBuf);
    }
  }
  gpu = gpuUsed(db0);
  printf("processes: %d, each opened the database and answered (one after another):\n", nProcs);
  for(i=0; i<nProcs; i++){
    printf("  process %d: first point query %.1f ms, first column query %.1f ms, resident %.1f MB\n",
           i+1, aPt[i], aCol[i], aRss[i]/1e6);
  }
  printf("  GPU memory in use with all %d open: %.1f MB more than before them\n", nProcs, (gpu-gpu0)/1e6);
  if( pJson ){
    fprintf(pJson, ",\"processes\":{\"n\":%d,\"gpu_bytes\":%lld,\"each\":[", nProcs, (long long)(gpu-gpu0));
    for(i=0; i<nProcs; i++){
      fprintf(pJson, "%s{\"first_point_ms\":%.3f,\"first_column_ms\":%.3f,\"rss_bytes\":%lld}",
              i ? "," : "", aPt[i], aCol[i], aRss[i]);
    }
    fprintf(pJson, "]}");
  }
  for(i=0; i<nProcs; i++){
    if( write(aGo[i][1], "x", 1)<0 ){}
    close(aGo[i][1]); close(aFd[i][0]);
    waitpid(aPid[i], 0, 0);
  }
}

static void usage(void){
  fprintf(stderr, "usage: sharebench [--ext PATH] [--rows N] [--db FILE] [--module gfsl|gpuhash]\n"
                  "                  [--seconds S] [--threads 1,2,4,8] [--procs P] [--memstatus 0|1]\n"
                  "                  [--txn Q] [--json FILE]\n");
  exit(2);
}

int main(int argc, char **argv){
  sqlite3 *aDb[MAX_CONN];
  int64_t rss0, gpu0, aRss[MAX_CONN+1], aGpu[MAX_CONN+1];
  double rPt, rCol, aRate[2][16], aCores[2][16], aUser[2][16];
  int i, j, bChild = 0;
  for(i=1; i<argc; i++){
    if( i+1>=argc ) usage();
    if( strcmp(argv[i], "--ext")==0 ) zExt = argv[++i];
    else if( strcmp(argv[i], "--rows")==0 ) nRows = (int64_t)strtod(argv[++i], 0);
    else if( strcmp(argv[i], "--db")==0 ) zDb = argv[++i];
    else if( strcmp(argv[i], "--module")==0 ) zMod = argv[++i];
    else if( strcmp(argv[i], "--seconds")==0 ) rSeconds = strtod(argv[++i], 0);
    else if( strcmp(argv[i], "--procs")==0 ) nProcs = atoi(argv[++i]);
    else if( strcmp(argv[i], "--txn")==0 ) nTxn = atoi(argv[++i]);
    else if( strcmp(argv[i], "--memstatus")==0 ){
      /* No SQLite call comes before the arguments are read: SQLite is not
      ** initialized yet, as sqlite3_config requires. */
      sqlite3_config(SQLITE_CONFIG_MEMSTATUS, atoi(argv[++i]));
    }
    else if( strcmp(argv[i], "--child")==0 ){ bChild = 1; i++; }
    else if( strcmp(argv[i], "--json")==0 ){
      pJson = fopen(argv[++i], "w");
      if( pJson==0 ) die("cannot write %s", argv[i]);
    }else if( strcmp(argv[i], "--threads")==0 ){
      char *z = argv[++i];
      nThreadSet = 0;
      while( *z && nThreadSet<16 ){
        aThreads[nThreadSet] = atoi(z);
        if( aThreads[nThreadSet]<1 || aThreads[nThreadSet]>MAX_CONN ) die("threads: 1 to 8: %s", z);
        nThreadSet++;
        while( *z && *z!=',' ) z++;
        if( *z ) z++;
      }
    }else usage();
  }
  if( nRows<1000 ) nRows = 1000;
  if( bChild ) return childRun();
  makeTable();
  sqlite3_initialize();

  /* 1. memory */
  rss0 = rssBytes();
  aDb[0] = openDb();
  gpu0 = gpuUsed(aDb[0]);
  for(i=0; i<MAX_CONN; i++){
    double a, b;
    if( i>0 ) aDb[i] = openDb();
    firstAnswers(aDb[i], &a, &b);
    aRss[i+1] = rssBytes() - rss0;
    aGpu[i+1] = gpuUsed(aDb[0]) - gpu0;
    if( i==0 ) printf("connection 1 (loads the table, builds the column set): point %.1f ms, column %.1f ms\n", a, b);
  }
  printf("%s, %lld rows, %s; GPUDS_SHARE=%s; SQLite %s, memory statistics %s; %d quer%s a read transaction\n",
         zMod, (long long)nRows,
         oneInt(aDb[0], "SELECT json_extract(gpuds_info(), '$.backend')='cuda'") ? "cuda" : "host",
         getenv("GPUDS_SHARE") ? getenv("GPUDS_SHARE") : "(unset: shared)",
         sqlite3_libversion(), memstatusOn() ? "on" : "off", nTxn, nTxn==1 ? "y" : "ies");
  printf("memory of the process beyond what it held before (resident; GPU in use):\n");
  for(i=1; i<=MAX_CONN; i++){
    if( i==1 || i==4 || i==8 ){
      printf("  %d connection%s: %.1f MB resident (%.2fx one), GPU %.1f MB (%.2fx one)\n", i, i>1 ? "s" : " ",
             aRss[i]/1e6, aRss[1]>0 ? (double)aRss[i]/aRss[1] : 0.0,
             aGpu[i]/1e6, aGpu[1]>0 ? (double)aGpu[i]/aGpu[1] : 0.0);
    }
  }
  if( pJson ){
    fprintf(pJson, "{\"module\":\"%s\",\"rows\":%lld,\"share\":\"%s\",\"txn\":%d,\"memory\":[", zMod,
            (long long)nRows, getenv("GPUDS_SHARE") ? getenv("GPUDS_SHARE") : "", nTxn);
    for(i=1; i<=MAX_CONN; i++){
      fprintf(pJson, "%s{\"connections\":%d,\"rss_bytes\":%lld,\"gpu_bytes\":%lld}", i>1 ? "," : "", i,
              (long long)aRss[i], (long long)aGpu[i]);
    }
    fprintf(pJson, "]");
  }

  /* 2. first answers of a new connection, no load; and the same queries
  ** once warm (the least of 5), what they cost anyway */
  {
    sqlite3 *db = openDb();
    double rPtW = 1e9, rColW = 1e9, a, b;
    firstAnswers(db, &rPt, &rCol);
    for(i=0; i<5; i++){
      firstAnswers(db, &a, &b);
      if( a<rPtW ) rPtW = a;
      if( b<rColW ) rColW = b;
    }
    printf("a new connection (with %d open): first point query %.2f ms, first column query %.2f ms"
           " (warm: %.2f ms, %.2f ms)\n", MAX_CONN, rPt, rCol, rPtW, rColW);
    sqlite3_close(db);
    if( pJson ){
      fprintf(pJson, ",\"first_point_ms\":%.3f,\"first_column_ms\":%.3f,"
              "\"warm_point_ms\":%.3f,\"warm_column_ms\":%.3f", rPt, rCol, rPtW, rColW);
    }
  }

  /* 3. threads */
  for(j=0; j<2; j++){
    const char *zWhat = j==0 ? "point" : "column";
    printf("%s queries, %s:\n", zWhat, j==0 ? SQL_POINT : SQL_COLUMN);
    for(i=0; i<nThreadSet; i++){
      aRate[j][i] = threadRate(aDb, aThreads[i], j==0 ? SQL_POINT : SQL_COLUMN, j==0,
                               &aCores[j][i], &aUser[j][i]);
      printf("  %d thread%s: %.0f queries/s (%.2fx one thread), %.1f cores busy (%.1f user)\n",
             aThreads[i], aThreads[i]>1 ? "s" : " ", aRate[j][i], aRate[j][i]/aRate[j][0],
             aCores[j][i], aUser[j][i]);
    }
    if( pJson ){
      fprintf(pJson, ",\"%s_threads\":[", zWhat);
      for(i=0; i<nThreadSet; i++){
        fprintf(pJson, "%s{\"threads\":%d,\"qps\":%.1f,\"cores\":%.2f,\"user_cores\":%.2f}",
                i ? "," : "", aThreads[i], aRate[j][i], aCores[j][i], aUser[j][i]);
      }
      fprintf(pJson, "]");
    }
  }

  /* 4. processes */
  if( nProcs>0 ) processes(aDb[0], gpuUsed(aDb[0]));
  for(i=0; i<MAX_CONN; i++) sqlite3_close(aDb[i]);
  if( pJson ){ fprintf(pJson, "}\n"); fclose(pJson); }
  return 0;
}
