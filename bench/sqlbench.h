/*
** sqlbench.h -- what the files of sqlbench share: the tables, the state of
** the run (g), the figures of a workload, and each file's functions.  The
** benchmark is described at the top of sqlbench.c.
*/
#ifndef SQLBENCH_H
#define SQLBENCH_H

#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The tables, in the order every workload runs them.  T_SQLITE, the
** reference, runs with the tuned page cache (or SQLite's defaults under
** --baseline default); T_SQLIDX (--index-columns) is the same ordinary table
** with an index on each of v, r and s, tuned cache; T_SQLDEF is the same
** ordinary table run with SQLite's default cache (--baseline both), last, so
** that the cache is switched once per workload. */
#define NTAB 6
enum { T_SQLITE = 0, T_GFSL = 1, T_HASH = 2, T_SQLIDX = 3, T_FLOOR = 4, T_SQLDEF = 5 };
extern const char *const azKind[NTAB];
extern const char *const azLabel[NTAB];
extern const char *const azTab[NTAB];
extern const char *const zCols;
extern const char *const azKvTab[NTAB];
/* The indexed ordinary table (--index-columns) carries one index per
** non-key column: <table>_v, <table>_r, <table>_s. */
extern const char *const azIdxCol[3];

/* Page-cache configurations of the connection. */
enum { CFG_TUNED = 0, CFG_DEFAULT = 1 };
#define TUNED_KIB_PER_ROW 2                     /* cache_size = -N*this KiB */
#define TUNED_MMAP_SIZE   (32LL<<30)            /* requested; SQLite may clamp */

#define KEY_SPACING   16        /* keys per stratum; one is present */
#define COMMIT_EVERY  10000     /* mix: statements per transaction */
#define RANGE_ROWS    2000000   /* range workloads: rows planned per width */

/* ------------------------------------------------------------------ state */

/* One table's figures for one workload. */
typedef struct Res {
  int bRan;            /* measured */
  int bTimeout;        /* interrupted after --timeout */
  double sec;          /* seconds measured */
  int64_t nItem;       /* rows or queries the rate counts */
  int64_t nRows;       /* rows returned / touched */
  int64_t nDone, nPlan;/* query workloads: queries run, planned */
  double rate;         /* nItem / sec */
  double med, p99;     /* query workloads: latency per query, seconds */
  double sec2;         /* reload: the second (warm) query */
  int bShowTime;       /* print sec (ms), not the rate */
  int bCheck;          /* c[] holds this table's answer */
  int64_t c[3];        /* answer: count and checksums */
  char *zPlan;         /* EXPLAIN QUERY PLAN */
} Res;

/* One table's footprint, measured after a reopen by its first query. */
typedef struct Fp {
  int bRan;
  double firstSec;     /* prepare + first SELECT v WHERE k=? after reopen */
  int64_t rssB, anonB; /* VmRSS, RssAnon added by loading (bytes) */
  int64_t gpuFreeB;    /* gpu_memory_free before - after (bytes), -1 n/a */
  int64_t devB;        /* the store's device_bytes, -1 n/a */
  int64_t colB;        /* its column set's bytes (built with the store by a
                       ** background load: GPU or host memory), -1 n/a */
  int64_t fileB;       /* bytes of the table's b-trees (dbstat), -1 n/a */
  int64_t nPage;       /* pages of those b-trees */
  char *zBtrees;       /* their names */
} Fp;

typedef struct Work {
  char zName[32];
  const char *zGroup;
  char zTitle[64];
  const char *zUnit;   /* of rate */
  int bLatency;        /* show median / p99 in the table */
  int bShowTime;       /* the figure is one time (ms); rate = 1/sec */
  Res a[NTAB];
} Work;

typedef struct Bench {
  const char *zExt;
  char *zDb;
  int bTempDb, bKeep;
  int64_t nRow, nQuery;
  uint64_t seed;
  double budget, timeout;
  int aUse[NTAB];
  int aCfg[NTAB];      /* CFG_TUNED or CFG_DEFAULT, per table */
  int eBaseline;       /* 0 both, 1 tuned, 2 default */
  int bLoadKey;        /* --load key: the main tables loaded in key order */
  int aCache[2];       /* cache_size of each configuration (PRAGMA value) */
  int64_t aMmap[2];    /* mmap_size of each configuration (effective) */
  int iCfgNow;         /* the configuration the connection is in */
  unsigned mWarm;      /* bit t: table t read through the tuned cache since it was set */
  Fp fp[NTAB];         /* footprint figures */
  int bFp;             /* fp[] measured */
  int bDbstat;         /* the dbstat virtual table is available */
  char **azOnly; int nOnly;
  char **azPragma; int nPragma;
  int argc; char **argv;
  sqlite3 *db;
  uint8_t *aOff;       /* aOff[i]: offset of key i in its stratum */
  uint32_t *aRw;       /* aRw[i]: r*1024 of row i, a random permutation of 0..N-1 */
  int64_t nV;          /* v takes the values 0..nV-1 (N/100: ~100 rows each) */
  int64_t nS;          /* s takes nS distinct strings (N/4: ~4 rows each) */
  const char *zDump;   /* --dump DIR: rows.csv and queries.json for duckdb_bench.py */
  FILE *pDumpQ;        /* DIR/queries.json while the column workloads run */
  int nDumpQ;          /* workloads written to it */
  int64_t *aPerm;      /* a random permutation of 0..N-1 (insert order) */
  char *zInfo;         /* gpuds_info() at the start */
  char *zInfoEnd;      /* gpuds_info() at the end */
  char *zBackend, *zDevice, *zVersion, *zJournal;
  Work *aW; int nW, nWAlloc;
  double deadline;     /* progress handler: interrupt past this time */
  double tStart;
  int64_t sumV;        /* sum of v over all N rows */
  int bMain;           /* the t_ tables were loaded */
} Bench;
extern Bench g;      /* the run: options, the connection, the figures */

/* splitmix64's state (rngNext). */
typedef struct Rng { uint64_t s; } Rng;

/* Query loops. */
#define QM_POINT 1   /* SELECT v ... : rows, sum(v) */
#define QM_ROWS  2   /* SELECT k, v, r, s ... : rows, sum(v), sum(k)+sum(1024r)+bytes(s) */
#define QM_AGG   3   /* SELECT count(*), sum(v) ... */
#define QM_DESC  4   /* SELECT k, v ... : rows, sum(v), sum(k) */

typedef struct QAns { int64_t n, a, b; } QAns;
typedef struct QSet {
  int nParam;
  char zType[8];       /* per parameter: 'i' integer (default), 'r' the REAL
                       ** aParam/1024.0 (exact), 't' the TEXT sOfU(aParam) */
  int bCycle;          /* tables after the reference may run up to nQ queries,
                       ** cycling through the reference's (answers checked) */
  int64_t nQ;          /* queries planned */
  int64_t *aParam;     /* nQ*nParam */
  QAns *aRef;          /* the first table's answers */
  int64_t nRef;        /* queries the first table ran */
  int iRef;            /* that table, or -1 */
} QSet;

/* ---------------------------------------------------------------------- */
/* Each file's functions.                                                  */

/* sqlbench.c: helpers, the row generator */
double now(void);
void die(const char *zFmt, ...) __attribute__((format(printf, 1, 2)));
void removeTempDb(void);
void mismatchExit(void);
void *xmalloc(size_t n);
char *xstrdup(const char *z);
uint64_t rngNext(Rng *r);
uint64_t rngBelow(Rng *r, uint64_t n);
void rngSeed(Rng *r, uint64_t salt);
int64_t keyOf(int64_t i);
int64_t absentKey(int64_t i, int j);
int64_t vOf(int64_t k);
int64_t wOf(int64_t k);
double rOf(int64_t k);
int sOfU(int64_t u, char *z);
int sOf(int64_t k, char *z);
int hexPrefix(int64_t x, char *z);
const char *fmtNum(double x, char *z, size_t n);

/* sqlbench_floor.c: the floor table */
int tableRuns(int t, const Work *w);
int floorRegister(sqlite3 *db);
void floorFree(void);

/* sqlbench_db.c: the connection and statements */
void dbFail(const char *zWhat, int rc);
sqlite3_stmt *prep(const char *zFmt, ...);  /* sqlite3_mprintf formats */
void fin(sqlite3_stmt *p);
void execf(const char *zFmt, ...);      /* sqlite3_mprintf formats */
void stepDone(sqlite3_stmt *p, const char *zWhat);
char *queryText(const char *zSql);
void tableSums(int t, int64_t *c);
char *queryPlan(const char *zSql);
void dbOpen(void);
int isOrdinary(int t);
void readThrough(int t);
void useTable(int t, int bWarm);
void dbClose(void);

/* sqlbench_work.c: the workload engine */
int selected(const char *zName, const char *zGroup);
Work *newWork(const char *zName, const char *zGroup, const char *zUnit,
              const char *zTitleFmt, ...) __attribute__((format(printf, 4, 5)));
int refTable(const Work *w);
void checkAnswer(Work *w, int t, const int64_t *c, const int64_t *aExp);
void progressStart(int t, const char *zFmt, ...) __attribute__((format(printf, 2, 3)));
void progressEnd(const Work *w, const Res *a);
void finishRes(Res *a, double sec, int64_t nItem);
void createTable(int t, const char *zName);
void insertRows(Work *w, int t, const char *zName, int bSorted);
void insertSelect(Work *w, int t, const char *zName);
int cmpDouble(const void *a, const void *b);
QSet *qsetNew(int nParam, int64_t nQ);
void qsetFree(QSet *qs);
void queryWorkload(Work *w, QSet *qs, int eMode, const char *zSqlFmt, int64_t nExp);
int singleQuery(Work *w, int t, const char *zSql, int64_t *c);

/* sqlbench_phases.c: the workloads */
void phaseInsert(void);
void phasePoint(void);
void phaseProbe(void);
void phaseRange(void);
void phaseDesc(void);
void dumpRows(void);
void phaseColumn(void);
void phaseMix(void);
void phaseDelete(void);
void phaseFootprint(void);
void phaseReload(void);
void structureCheck(void);

/* sqlbench_report.c: the table printed */
int hasRatio(const Work *w);
double ratioTo(const Work *w, int t, int ref);
double ratioOf(const Work *w, int t);
double ratioDefault(const Work *w, int t);
void printTable(void);

/* sqlbench_json.c: the JSON written (--json) */
void jsonStr(FILE *f, const char *z);
void jsonInt(FILE *f, int64_t x);
void writeJson(const char *zPath);

#endif /* SQLBENCH_H */
