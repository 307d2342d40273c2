/*
** sqlbench.c -- SQL-level benchmark of the gpuds extension: the same
** workloads, through the SQLite C API, on an ordinary rowid table, a gfsl
** table and a gpuhash table holding the same rows, in one file database.
**
**   sqlbench --ext build/gpuds --rows N --queries M [--json out.json]
**            [--db path] [--only workload,...] [--tables sqlite,gfsl,gpuhash]
**            [--budget S] [--timeout S] [--seed X] [--pragma P]... [--keep]
**            [--baseline both|tuned|default] [--index-columns] [--dump DIR]
**            [--load random|key]
**
** Tables (same declared columns):
**   t_sqlite   CREATE TABLE t_sqlite(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT)
**   t_gfsl     CREATE VIRTUAL TABLE t_gfsl USING gfsl(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT)
**   t_gpuhash  CREATE VIRTUAL TABLE t_gpuhash USING gpuhash(...same...)
**   t_sqlite_index    (--index-columns) an ordinary table like t_sqlite with
**                     an index on each of v, r and s (tuned cache): the
**                     indexed baseline of the column workloads, and what
**                     writes cost an ordinary table that carries indexes
**   t_sqlite_default  (--baseline both) an ordinary table like t_sqlite
**   t_floor    CREATE VIRTUAL TABLE t_floor USING floor(...same...): a virtual
**              table of sqlbench's own, a plain array of the rows that drops
**              writes (see "floor table" below): SQLite's own cost of each
**              workload through the virtual-table interface; the inserts,
**              point, join, range, desc and delete workloads only
**
** Page cache.  The reference is the ordinary table as a user who cares about
** speed runs it: a page cache that holds the database (PRAGMA cache_size =
** -TUNED_KIB_PER_ROW*N KiB) and mmap_size 32 GiB (SQLite clamps it to its
** SQLITE_MAX_MMAP_SIZE), the "tuned" configuration; --pragma options run
** after these settings.  Under --baseline both (the default) the ordinary
** table is measured a second time, t_sqlite_default with its own copy of the
** same rows, with SQLite's default cache_size and mmap_size (read at open),
** reported as "sqlite_default" with its ratio to the tuned table.  The gpuds
** tables run in the tuned configuration (only their shadow tables use the
** page cache).  The connection switches configuration between tables; before
** a workload on the tuned table, its pages are read through the tuned cache
** (untimed) if the cache was shrunk since, as in a process that has been
** using it.  --baseline tuned drops the second table; --baseline default
** runs t_sqlite with SQLite's defaults (as before there was a choice).
**
** Footprint (workload reopen_point, group footprint; right after the
** load, before the other workloads): close, reopen, and for each table time
** the first SELECT v WHERE k=? (a gfsl/gpuhash table loads then, or, where
** GPUDS_LAZY_LOAD lets it, starts building its store in the background and
** answers from the runs on disk: README "Reopening"), with the
** process's RSS before (after malloc_trim) and after that query (an
** ordinary table is then read in full through its cache; a gfsl/gpuhash
** table's store is waited for by a write (a DELETE of no row, rolled
** back), so the memory is the
** fully loaded table's), gpuds_info()'s
** gpu_memory_free before and after and the store's device_bytes, the
** bytes of the table's column set (which a background load builds with a
** GPU store, on the GPU: in the GPU free figure; the host backend's is
** left to the first column query unless GPUDS_COLUMNS_ON_LOAD=1), and the
** bytes of the table's b-trees in the file by dbstat (a virtual table's:
** its shadow tables); printed per row after the main table.
**
** Keys: N distinct keys, one per stratum of KEY_SPACING consecutive integers
** (key i = i*KEY_SPACING + a fixed-seed random offset), so that a range of
** W*KEY_SPACING keys holds exactly W rows, and the other integers of a
** stratum are keys known to be absent.  v, r and s are functions of the
** key, with known selectivities at any N (see vOf): v on N/100 values (~100
** rows each), r = w/1024 with w a permutation of 0..N-1 (distinct, exact in
** binary), s one of N/4 strings (~4 rows each).
**
** Every workload checks its answer: each table's result (count and sums) is
** compared with the first table's (sqlite) and, where it is known, with the
** expected value; a difference prints MISMATCH and exits with status 1.
**
** Workloads (names for --only; a group name selects all of its workloads):
**   insert:  insert_random, insert_sorted (N prepared INSERTs in one
**            transaction, COMMIT included; the rows are made 4096 at a
**            time before their INSERTs, and that time is left out: in
**            random order it was up to a quarter of a gfsl load, the same
**            for every table), insert_select (INSERT INTO t
**            SELECT ... FROM an ordinary staging table)
**   point:   point (M prepared SELECT v FROM t WHERE k=?; median, p99)
**   probe:   in (k IN (SELECT k FROM probe)), join (probe JOIN t ON t.k=probe.k),
**            M probe keys, half present; run up to 3 times while under 1 s,
**            the median reported; with in, in_floor: the same IN query on an
**            empty table, SQLite's own share of it (its ephemeral index of
**            the subquery), which bounds what any table can gain
**   range:   range_{rows,agg}_{10,1k,1M} (k BETWEEN ? AND ?, ~W rows)
**   desc:    desc (WHERE k<=? ORDER BY k DESC LIMIT 10)
**   column:  filters and ORDER BY on the non-key columns (issue #12), each
**            a query workload with median and p99 latency:
**            col_eq (v = ?, ~100 rows), col_range_1pct, col_range_10pct
**            (r BETWEEN, 1% / 10% of rows), col_rows_1pct (the 1% range,
**            rows returned), col_and (v range AND r range, ~0.1%),
**            col_key_and (k range of 10% AND v < ?, ~1%), col_text_eq
**            (s = ?, ~4 rows), col_text_in (s IN three strings, ~12 rows),
**            col_text_range (s >= ? AND s < ?, a 3-hex-digit
**            prefix: ~1/4096 of the rows), col_top_desc, col_top_asc (ORDER BY r [DESC]
**            LIMIT 10); count+sum ones return count(*), sum(k).  The tables
**            after the reference cycle through the reference's queries (a
**            full scan of the ordinary table runs few within --budget).
**            --dump DIR writes DIR/rows.csv (the rows) and DIR/queries.json
**            (these queries and the reference's answers) for
**            bench/duckdb_bench.py
**   mix:     mix (10% INSERT, 10% DELETE, 80% point SELECT; COMMIT every 10^4)
**   delete:  delete (DELETE of ~10% of the rows by one key range)
**   footprint: reopen_point (see Footprint above)
**   reload:  reload (close, reopen, time the first query on each table),
**            reload_kv (tables kv_<kind>(k INTEGER PRIMARY KEY, v INTEGER)
**            of the same N rows, committed; close, reopen, time the first
**            SELECT v FROM kv_<kind> WHERE k=?, which loads a gfsl/gpuhash
**            table: the pure reload rate, in rows/s; run with
**            GPUDS_LAZY_LOAD=off, so the load is what is timed)
** The t_ tables are always loaded (by insert_random), selected or not,
** unless reload_kv is the only workload selected.
**
** The connection is opened with SQLITE_OPEN_NOMUTEX (one thread); journal
** mode is SQLite's default unless --pragma says otherwise.
** Timing: CLOCK_MONOTONIC around the work (COMMIT included where there is
** one; for point queries also around each query, for median and p99).
**
** Query workloads stop a table's run after --budget seconds (at least one
** query); the tables after the first run at most the queries the first ran,
** so every answer is compared.  Single statements (IN, join, INSERT SELECT,
** DELETE) are interrupted after --timeout seconds and reported as such.
*/
#define _GNU_SOURCE
#include <sqlite3.h>
#include <errno.h>
#include <math.h>
#ifdef __GLIBC__
# include <malloc.h>         /* malloc_trim */
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* The tables, in the order every workload runs them.  T_SQLITE, the
** reference, runs with the tuned page cache (or SQLite's defaults under
** --baseline default); T_SQLIDX (--index-columns) is the same ordinary table
** with an index on each of v, r and s, tuned cache; T_SQLDEF is the same
** ordinary table run with SQLite's default cache (--baseline both), last, so
** that the cache is switched once per workload. */
#define NTAB 6
enum { T_SQLITE = 0, T_GFSL = 1, T_HASH = 2, T_SQLIDX = 3, T_FLOOR = 4, T_SQLDEF = 5 };
static const char *const azKind[NTAB] = { "sqlite", "gfsl", "gpuhash", "sqlite_index", "floor", "sqlite_default" };
static const char *const azLabel[NTAB] = { "sqlite", "gfsl", "gpuhash", "sq-index", "floor", "sq-default" };
static const char *const azTab[NTAB]  = { "t_sqlite", "t_gfsl", "t_gpuhash", "t_sqlite_index", "t_floor", "t_sqlite_default" };
static const char *const zCols = "k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT";
static const char *const azKvTab[NTAB] = { "kv_sqlite", "kv_gfsl", "kv_gpuhash", "kv_sqlite_index", "kv_floor", "kv_sqlite_default" };
/* The indexed ordinary table (--index-columns) carries one index per
** non-key column: <table>_v, <table>_r, <table>_s. */
static const char *const azIdxCol[3] = { "v", "r", "s" };

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

static struct {
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
} g;

/* ---------------------------------------------------------------- helpers */

static void jsonStr(FILE *f, const char *z);
static void jsonInt(FILE *f, int64_t x);

static double now(void){
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9*(double)ts.tv_nsec;
}

static void die(const char *zFmt, ...){
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "sqlbench: ");
  va_start(ap, zFmt);
  vfprintf(stderr, zFmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  exit(2);
}

/* Remove the temporary database (atexit), unless it is to be kept. */
static void removeTempDb(void){
  static const char *const azSuf[] = { "", "-journal", "-wal", "-shm" };
  int i;
  if( !g.bTempDb || g.bKeep || g.zDb==0 ) return;
  for(i=0; i<4; i++){
    char *z = sqlite3_mprintf("%s%s", g.zDb, azSuf[i]);
    if( z ){ unlink(z); sqlite3_free(z); }
  }
}

/* A wrong answer: keep the database for a look, exit with status 1. */
static void mismatchExit(void){
  g.bKeep = 1;
  fprintf(stderr, "database kept for inspection: %s\n", g.zDb ? g.zDb : "?");
  exit(1);
}

static void *xmalloc(size_t n){
  void *p = malloc(n ? n : 1);
  if( p==0 ) die("out of memory (%zu bytes)", n);
  return p;
}

static char *xstrdup(const char *z){
  size_t n = strlen(z);
  char *p = xmalloc(n+1);
  memcpy(p, z, n+1);
  return p;
}

/* splitmix64: the PRNG and the mixer behind keys and values. */
static uint64_t mix64(uint64_t x){
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
typedef struct Rng { uint64_t s; } Rng;
static uint64_t rngNext(Rng *r){ r->s += 0x9e3779b97f4a7c15ULL; return mix64(r->s); }
static uint64_t rngBelow(Rng *r, uint64_t n){ return n ? rngNext(r) % n : 0; }
static void rngSeed(Rng *r, uint64_t salt){ r->s = mix64(g.seed ^ mix64(salt)); }

/* Key of row i, and absent keys of the same stratum (j = 0..KEY_SPACING-2). */
static int64_t keyOf(int64_t i){ return i*KEY_SPACING + g.aOff[i]; }
static int64_t absentKey(int64_t i, int j){
  return i*KEY_SPACING + (g.aOff[i] + 1 + j) % KEY_SPACING;
}
/* The columns of the row with key k, so that column filters have known
** selectivities at any N:
**   v  = mix(k) mod nV, nV = N/100: each value on ~100 rows;
**   r  = w/1024 with w = aRw[k/KEY_SPACING], a random permutation of
**        0..N-1 over the rows: every row's r is distinct (so ORDER BY r has
**        no ties), a range of m consecutive w holds exactly m rows, and r is
**        exact in binary, so sums of r*1024 compare exactly;
**   s  = a string of 10..25 hex digits drawn from nS = N/4 strings (sOfU of
**        u = mix(k ^ salt) mod nS): each on ~4 rows.
** The three are independent of each other.  (Keys outside 0..N*KEY_SPACING-1
** take w = mix(k) mod N.) */
static int64_t vOf(int64_t k){ return (int64_t)(mix64((uint64_t)k) % (uint64_t)g.nV); }
static int64_t wOf(int64_t k){
  int64_t i = k/KEY_SPACING;
  return k>=0 && i<g.nRow ? (int64_t)g.aRw[i] : (int64_t)(mix64((uint64_t)k) % (uint64_t)g.nRow);
}
static double rOf(int64_t k){ return (double)wOf(k)/1024.0; }
static int64_t uOf(int64_t k){
  return (int64_t)(mix64((uint64_t)k ^ 0x2545f4914f6cdd1dULL) % (uint64_t)g.nS);
}
static int sOfU(int64_t u, char *z){     /* string u of the domain: 10..25 chars, returns length */
  static const char hex[] = "0123456789abcdef";
  uint64_t h = mix64((uint64_t)u ^ 0x5bd1e9955bd1e995ULL);
  int n = 10 + (int)(h >> 60), i;
  uint64_t h2 = mix64(h);
  for(i=0; i<n; i++){
    z[i] = hex[(i<16 ? h >> (4*i) : h2 >> (4*(i-16))) & 15];
  }
  z[n] = 0;
  return n;
}
static int sOf(int64_t k, char *z){ return sOfU(uOf(k), z); }
/* A text prefix of the strings (parameter type 'x'): x, 0..4095, as 3 hex
** digits into z (8 bytes); returns its length. */
static int hexPrefix(int64_t x, char *z){
  return snprintf(z, 8, "%03llx", (unsigned long long)x);
}

/* ------------------------------------------------------------ floor table
** Module "floor" (table t_floor): the cheapest virtual table there can be
** for these rows, so that its time is SQLite's own cost of a workload
** through the virtual-table interface.  Its rows are the generator's N
** rows, made once into an array (row i: key keyOf(i), columns vOf/rOf/sOf
** of the key), found by arithmetic (i = k/KEY_SPACING); writes are accepted
** and dropped.  It takes = and ranges on the key and ORDER BY the key both
** ways, as gfsl does, and runs only the workloads whose rows it knows: the
** inserts (each row goes through SQLite's INSERT and xUpdate; the check
** then reads the N rows it has anyway), point, join, range, desc and
** delete (SQLite's scan of the range, its list of rowids and one xUpdate a
** row; the rows stay, so its answer is the count of rows deleted) (not
** IN, whose bound is in_floor: a table may take the list at once through
** sqlite3_vtab_in(), as gpuds does).  Its rate over the ordinary table's
** bounds what any virtual table can gain there.  So that
** xColumn costs no more than handing a value over, the rows are made once
** (at the first floor table's connect, kept to the end): an array in key
** order, each row's values side by side (one stream of memory for a scan,
** one cache line for a lookup), s NUL-terminated and handed over as
** SQLITE_STATIC (SQLite then neither copies it nor terminates it). */
typedef struct FloorRow {
  int64_t k, v;
  double r;
  char zS[26];           /* s: at most 25 characters, NUL-terminated */
} FloorRow;
typedef struct FloorCur {
  sqlite3_vtab_cursor base;
  int64_t i, iEnd;       /* current row, and the last one (inclusive) */
  int bDesc;             /* rows in descending key order */
} FloorCur;
static FloorRow *aFloorRow;      /* the N rows, key order */

/* Make aFloorRow, once. */
static void floorMake(void){
  int64_t i;
  if( aFloorRow ) return;
  aFloorRow = xmalloc(sizeof(FloorRow)*(size_t)g.nRow);
  for(i=0; i<g.nRow; i++){
    FloorRow *e = &aFloorRow[i];
    e->k = keyOf(i);
    e->v = vOf(e->k);
    e->r = rOf(e->k);
    sOf(e->k, e->zS);
  }
}

/* idxNum bits of a floor plan; its arguments come in this order. */
#define FLOOR_EQ   1     /* k = ?  */
#define FLOOR_LO   2     /* k >= ? (k > ?: with FLOOR_LOX) */
#define FLOOR_LOX  4
#define FLOOR_HI   8     /* k <= ? (k < ?: with FLOOR_HIX) */
#define FLOOR_HIX  16
#define FLOOR_DESC 32    /* ORDER BY k DESC */

static int floorConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                        sqlite3_vtab **ppVtab, char **pzErr){
  sqlite3_vtab *p;
  int rc;
  (void)pAux; (void)argc; (void)argv; (void)pzErr;
  rc = sqlite3_declare_vtab(db, "CREATE TABLE x(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT)");
  if( rc!=SQLITE_OK ) return rc;
  floorMake();
  p = sqlite3_malloc(sizeof(*p));
  if( p==0 ) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  *ppVtab = p;
  return SQLITE_OK;
}
static int floorDisconnect(sqlite3_vtab *p){ sqlite3_free(p); return SQLITE_OK; }

/* The first usable =, lower and upper bound on the key (column k or the
** rowid), and ORDER BY k in either direction. */
static int floorBestIndex(sqlite3_vtab *pTab, sqlite3_index_info *pInfo){
  int i, iEq = -1, iLo = -1, iHi = -1, n = 0, m = 0;
  (void)pTab;
  for(i=0; i<pInfo->nConstraint; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if( !c->usable || c->iColumn>0 ) continue;
    switch( c->op ){
      case SQLITE_INDEX_CONSTRAINT_EQ: if( iEq<0 ) iEq = i; break;
      case SQLITE_INDEX_CONSTRAINT_GT: case SQLITE_INDEX_CONSTRAINT_GE: if( iLo<0 ) iLo = i; break;
      case SQLITE_INDEX_CONSTRAINT_LT: case SQLITE_INDEX_CONSTRAINT_LE: if( iHi<0 ) iHi = i; break;
    }
  }
  if( iEq>=0 ){
    m = FLOOR_EQ;
    pInfo->aConstraintUsage[iEq].argvIndex = ++n;
    pInfo->aConstraintUsage[iEq].omit = 1;
    pInfo->estimatedCost = 1;
    pInfo->estimatedRows = 1;
    pInfo->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
  }else{
    if( iLo>=0 ){
      m |= FLOOR_LO | (pInfo->aConstraint[iLo].op==SQLITE_INDEX_CONSTRAINT_GT ? FLOOR_LOX : 0);
      pInfo->aConstraintUsage[iLo].argvIndex = ++n;
      pInfo->aConstraintUsage[iLo].omit = 1;
    }
    if( iHi>=0 ){
      m |= FLOOR_HI | (pInfo->aConstraint[iHi].op==SQLITE_INDEX_CONSTRAINT_LT ? FLOOR_HIX : 0);
      pInfo->aConstraintUsage[iHi].argvIndex = ++n;
      pInfo->aConstraintUsage[iHi].omit = 1;
    }
    pInfo->estimatedRows = (iLo>=0 && iHi>=0) ? 1000 : (iLo>=0 || iHi>=0) ? g.nRow/2 : g.nRow;
    pInfo->estimatedCost = 10 + (double)pInfo->estimatedRows;
  }
  if( pInfo->nOrderBy==1 && pInfo->aOrderBy[0].iColumn<=0 ){
    if( pInfo->aOrderBy[0].desc ) m |= FLOOR_DESC;
    pInfo->orderByConsumed = 1;
  }
  pInfo->idxNum = m;
  return SQLITE_OK;
}

static int floorOpen(sqlite3_vtab *pTab, sqlite3_vtab_cursor **ppCur){
  FloorCur *c = sqlite3_malloc(sizeof(*c));
  (void)pTab;
  if( c==0 ) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  *ppCur = &c->base;
  return SQLITE_OK;
}
static int floorClose(sqlite3_vtab_cursor *pCur){ sqlite3_free(pCur); return SQLITE_OK; }

/* The first row whose key is >= k (N if none), and the last whose key is
** <= k (-1 if none). */
static int64_t floorFirstGe(int64_t k){
  int64_t i;
  if( k<=0 ) return 0;
  i = k/KEY_SPACING;
  if( i>=g.nRow ) return g.nRow;
  return aFloorRow[i].k>=k ? i : i+1;
}
static int64_t floorLastLe(int64_t k){
  int64_t i;
  if( k<0 ) return -1;
  i = k/KEY_SPACING;
  if( i>=g.nRow ) return g.nRow-1;
  return aFloorRow[i].k<=k ? i : i-1;
}

static int floorFilter(sqlite3_vtab_cursor *pCur, int idxNum, const char *idxStr,
                       int argc, sqlite3_value **argv){
  FloorCur *c = (FloorCur*)pCur;
  int64_t lo = 0, hi = g.nRow-1;
  int n = 0;
  (void)idxStr; (void)argc;
  if( idxNum & FLOOR_EQ ){
    int64_t k = sqlite3_value_int64(argv[n++]);
    lo = floorFirstGe(k);
    hi = lo<g.nRow && aFloorRow[lo].k==k ? lo : lo-1;
  }
  if( idxNum & FLOOR_LO ){
    int64_t k = sqlite3_value_int64(argv[n++]);
    lo = !(idxNum & FLOOR_LOX) ? floorFirstGe(k) : k==INT64_MAX ? g.nRow : floorFirstGe(k+1);
  }
  if( idxNum & FLOOR_HI ){
    int64_t k = sqlite3_value_int64(argv[n++]);
    hi = !(idxNum & FLOOR_HIX) ? floorLastLe(k) : k==INT64_MIN ? -1 : floorLastLe(k-1);
  }
  c->bDesc = (idxNum & FLOOR_DESC)!=0;
  c->i = c->bDesc ? hi : lo;
  c->iEnd = c->bDesc ? lo : hi;
  return SQLITE_OK;
}
static int floorNext(sqlite3_vtab_cursor *pCur){
  FloorCur *c = (FloorCur*)pCur;
  c->i += c->bDesc ? -1 : 1;
  return SQLITE_OK;
}
static int floorEof(sqlite3_vtab_cursor *pCur){
  const FloorCur *c = (const FloorCur*)pCur;
  return c->bDesc ? c->i<c->iEnd : c->i>c->iEnd;
}
static int floorColumn(sqlite3_vtab_cursor *pCur, sqlite3_context *ctx, int iCol){
  const FloorRow *e = &aFloorRow[((const FloorCur*)pCur)->i];
  switch( iCol ){
    case 0: sqlite3_result_int64(ctx, e->k); break;
    case 1: sqlite3_result_int64(ctx, e->v); break;
    case 2: sqlite3_result_double(ctx, e->r); break;
    default: sqlite3_result_text(ctx, e->zS, -1, SQLITE_STATIC); break;
  }
  return SQLITE_OK;
}
static int floorRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid){
  *pRowid = aFloorRow[((FloorCur*)pCur)->i].k;
  return SQLITE_OK;
}
/* Every write is accepted and dropped (an INSERT's rowid: its key). */
static int floorUpdate(sqlite3_vtab *pTab, int argc, sqlite3_value **argv, sqlite3_int64 *pRowid){
  (void)pTab;
  if( argc>2 && sqlite3_value_type(argv[0])==SQLITE_NULL ){
    *pRowid = sqlite3_value_int64(sqlite3_value_type(argv[1])!=SQLITE_NULL ? argv[1] : argv[2]);
  }
  return SQLITE_OK;
}

static sqlite3_module floorModule = {
  0, floorConnect, floorConnect, floorBestIndex, floorDisconnect, floorDisconnect,
  floorOpen, floorClose, floorFilter, floorNext, floorEof, floorColumn, floorRowid,
  floorUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
};

/* True if table t runs workload w: every table in use, but the floor table
** only the workloads whose rows it knows (see above). */
static int tableRuns(int t, const Work *w){
  static const char *const azFloor[] = { "insert", "point", "range", "desc", "join", "delete", 0 };
  int i;
  if( !g.aUse[t] ) return 0;
  if( t!=T_FLOOR ) return 1;
  for(i=0; azFloor[i]; i++){
    if( strcmp(w->zGroup, azFloor[i])==0 || strcmp(w->zName, azFloor[i])==0 ) return 1;
  }
  return 0;
}

/* Human-readable rate: 3 significant digits with k/M/G. */
static const char *fmtNum(double x, char *z, size_t n){
  const char *u = "";
  if( x!=x ){ snprintf(z, n, "-"); return z; }
  if( x>=1e9 ){ x /= 1e9; u = " G"; }
  else if( x>=1e6 ){ x /= 1e6; u = " M"; }
  else if( x>=1e3 ){ x /= 1e3; u = " k"; }
  if( x>=100 ) snprintf(z, n, "%.0f%s", x, u);
  else if( x>=10 ) snprintf(z, n, "%.1f%s", x, u);
  else snprintf(z, n, "%.2f%s", x, u);
  return z;
}

/* ----------------------------------------------------------------- SQLite */

static void dbFail(const char *zWhat, int rc){
  die("%s: %s (rc=%d)", zWhat, g.db ? sqlite3_errmsg(g.db) : "no connection", rc);
}

static sqlite3_stmt *prep(const char *zFmt, ...){
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

static void fin(sqlite3_stmt *p){
  int rc = sqlite3_finalize(p);
  if( rc!=SQLITE_OK ) dbFail("finalize", rc);
}

static void execf(const char *zFmt, ...){
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
static void stepDone(sqlite3_stmt *p, const char *zWhat){
  int rc = sqlite3_step(p);
  if( rc!=SQLITE_DONE ){
    rc = sqlite3_reset(p);
    dbFail(zWhat, rc);
  }
  rc = sqlite3_reset(p);
  if( rc!=SQLITE_OK ) dbFail(zWhat, rc);
}

/* A text result of a one-row query (malloc'd), or NULL on error. */
static char *queryText(const char *zSql){
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
static void tableSums(int t, int64_t *c){
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
static char *queryPlan(const char *zSql){
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

static void dbOpen(void){
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
  rc = sqlite3_create_module(g.db, "floor", &floorModule, 0);
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
static int isOrdinary(int t){ return t==T_SQLITE || t==T_SQLIDX || t==T_SQLDEF; }

/* Read ordinary table t in full through the page cache (untimed): every
** column of the table's b-tree and, for the indexed table, each index
** (a covering scan of it). */
static void readThrough(int t){
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
static void useTable(int t, int bWarm){
  applyCfg(g.aCfg[t]);
  if( bWarm && isOrdinary(t) && g.aCfg[t]==CFG_TUNED && !(g.mWarm & (1u<<t)) && g.bMain ){
    readThrough(t);
    g.mWarm |= 1u<<t;
  }
}

static void dbClose(void){
  int rc = sqlite3_close(g.db);
  if( rc!=SQLITE_OK ) dbFail("close (statement left open?)", rc);
  g.db = 0;
}

/* -------------------------------------------------------------- workloads */

static int selected(const char *zName, const char *zGroup){
  int i;
  if( g.nOnly==0 ) return 1;
  for(i=0; i<g.nOnly; i++){
    if( strcmp(g.azOnly[i], zName)==0 || strcmp(g.azOnly[i], zGroup)==0 ) return 1;
  }
  return 0;
}

static Work *newWork(const char *zName, const char *zGroup, const char *zUnit,
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
static int refTable(const Work *w){
  int t;
  for(t=0; t<NTAB; t++) if( w->a[t].bCheck ) return t;
  return -1;
}

/* Record table t's answer c[0..2] for w and compare it with the reference's
** and, if aExp is given, with the expected answer (-1 entries: unknown). */
static void checkAnswer(Work *w, int t, const int64_t *c, const int64_t *aExp){
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

static void progressStart(int t, const char *zFmt, ...){
  va_list ap;
  fprintf(stderr, "[%-7s] ", azLabel[t]);
  va_start(ap, zFmt);
  vfprintf(stderr, zFmt, ap);
  va_end(ap);
  fprintf(stderr, " ... ");
  fflush(stderr);
}
static void progressEnd(const Work *w, const Res *a){
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

static void finishRes(Res *a, double sec, int64_t nItem){
  a->bRan = 1;
  a->sec = sec;
  a->nItem = nItem;
  a->rate = sec>0 ? (double)nItem/sec : 0;
}

/* Create table zName of kind t (the indexed ordinary table with its three
** indexes, <zName>_v, _r, _s). */
static void createTable(int t, const char *zName){
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
static void insertRows(Work *w, int t, const char *zName, int bSorted){
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
static void insertSelect(Work *w, int t, const char *zName){
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

static int cmpDouble(const void *a, const void *b){
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

static QSet *qsetNew(int nParam, int64_t nQ){
  QSet *qs = xmalloc(sizeof(*qs));
  memset(qs, 0, sizeof(*qs));
  qs->nParam = nParam;
  qs->nQ = nQ;
  qs->aParam = xmalloc(sizeof(int64_t)*(size_t)(nQ>0 && nParam>0 ? nQ*nParam : 1));
  qs->aRef = xmalloc(sizeof(QAns)*(size_t)(nQ ? nQ : 1));
  qs->iRef = -1;
  return qs;
}
static void qsetFree(QSet *qs){
  free(qs->aParam); free(qs->aRef); free(qs);
}

/* Run one query workload on every table. */
static void queryWorkload(Work *w, QSet *qs, int eMode, const char *zSqlFmt,
                          int64_t nExp){
  int t;
  for(t=0; t<NTAB; t++){
    if( tableRuns(t, w) ) runQueries(w, t, qs, eMode, zSqlFmt, nExp);
  }
}

/* A single statement returning one row (count, sum), timed with the
** --timeout guard; returns 0 if interrupted. */
static int singleQuery(Work *w, int t, const char *zSql, int64_t *c){
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

/* --------------------------------------------------------------- phases */

/* True unless reload_kv (which has tables of its own) is the only
** workload selected: every other workload reads the t_ tables. */
static int needMainTables(void){
  int i;
  if( g.nOnly==0 ) return 1;
  for(i=0; i<g.nOnly; i++) if( strcmp(g.azOnly[i], "reload_kv")!=0 ) return 1;
  return 0;
}

static void phaseInsert(void){
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

static void phasePoint(void){
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

static void phaseProbe(void){
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

static void phaseRange(void){
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

static void phaseDesc(void){
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
static void dumpRows(void){
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

/* Filters and ORDER BY on the non-key columns (issue #12): the answers
** are summed as the other query workloads' are and compared with the
** reference's query by query; where the row count is known exactly (r
** ranges: w is a permutation, so m consecutive values are m rows) it is
** checked too.  Runs before mix and delete: the tables hold the N rows. */
static void phaseColumn(void){
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
static void phaseMix(void){
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
static void phaseDelete(void){
  Work *w;
  int t;
  int64_t i0 = g.nRow*45/100, nW = g.nRow/10;
  int64_t lo = i0*KEY_SPACING, hi = (i0+nW)*KEY_SPACING - 1;
  if( !selected("delete", "delete") ) return;
  if( nW<1 ) nW = 1;
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
      ** statement deleted is its answer; the table's sums are not. */
      int r = refTable(w);
      if( r>=0 && r!=t && w->a[r].nRows!=a->nRows ){
        fflush(stdout);
        fprintf(stderr, "MISMATCH in %s: %s deletes %lld rows, %s %lld\n", w->zName,
                azKind[t], (long long)a->nRows, azKind[r], (long long)w->a[r].nRows);
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
static void phaseFootprint(void){
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
static void phaseReload(void){
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
static void structureCheck(void){
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

/* ------------------------------------------------------------------ output */

/* False for reload_kv: an ordinary table has nothing to load, so there is
** no ratio to show. */
static int hasRatio(const Work *w){
  return strcmp(w->zName, "reload_kv")!=0;
}

/* Table t's rate over table ref's (NaN where either is missing). */
static double ratioTo(const Work *w, int t, int ref){
  const Res *a = &w->a[t], *s = &w->a[ref];
  if( !hasRatio(w) ) return NAN;
  if( !a->bRan || !s->bRan || a->bTimeout || s->bTimeout || s->rate<=0 ) return NAN;
  return a->rate / s->rate;
}
static double ratioOf(const Work *w, int t){ return ratioTo(w, t, T_SQLITE); }
/* Table t's rate over the default-cache ordinary table's. */
static double ratioDefault(const Work *w, int t){ return ratioTo(w, t, T_SQLDEF); }

static const char *const azRatio[NTAB] = { "", "gfsl/sq", "hash/sq", "idx/sq", "floor/sq", "dflt/sq" };

/* The ratio columns of the main table: (table, reference) pairs, every
** table against sqlite, and the gpuds tables against sq-index when it ran.
** Returns their number. */
static int ratioColumns(int *aT, int *aRef, const char **azHead){
  int t, n = 0;
  if( g.aUse[T_SQLITE] ){
    for(t=1; t<NTAB; t++) if( g.aUse[t] ){
      aT[n] = t; aRef[n] = T_SQLITE; azHead[n] = azRatio[t]; n++;
    }
  }
  if( g.aUse[T_SQLIDX] ){
    if( g.aUse[T_GFSL] ){ aT[n] = T_GFSL; aRef[n] = T_SQLIDX; azHead[n] = "gfsl/idx"; n++; }
    if( g.aUse[T_HASH] ){ aT[n] = T_HASH; aRef[n] = T_SQLIDX; azHead[n] = "hash/idx"; n++; }
  }
  return n;
}

/* x bytes per row, or n/a. */
static void printPerRow(int64_t x, int64_t nRow){
  if( x<0 || nRow<=0 ) printf(" %10s", "n/a");
  else printf(" %10.1f", (double)x/(double)nRow);
}

/* The footprint table: bytes per row of each table, and its ratio to the
** ordinary table's (here < 1x is leaner). */
static void printFootprint(void){
  static const char *const azRow[] = {
    "process memory added by loading (RSS)", "  of which anonymous (RssAnon)",
    "GPU memory added (free before - after)", "GPU memory of the store (device_bytes)",
    "database file (b-tree pages, dbstat)", "column set, built with the store (GPU or host)", 0
  };
  int t, r;
  if( !g.bFp ) return;
  printf("\nfootprint, B/row: %lld rows, loaded fresh after a reopen by the first query; "
         "ordinary tables read in full\n", (long long)g.nRow);
  printf("%-53s", "");
  for(t=0; t<NTAB; t++) if( g.aUse[t] && t!=T_FLOOR ) printf(" %10s", azLabel[t]);
  for(t=1; t<NTAB; t++) if( g.aUse[t] && t!=T_FLOOR && g.aUse[T_SQLITE] ) printf(" %10s", azRatio[t]);
  printf("\n");
  for(r=0; azRow[r]; r++){
    printf("%-53s", azRow[r]);
    for(t=0; t<NTAB; t++){
      const Fp *f = &g.fp[t];
      int64_t x;
      if( !g.aUse[t] || t==T_FLOOR ) continue;
      x = r==0 ? f->rssB : r==1 ? f->anonB : r==2 ? f->gpuFreeB : r==3 ? f->devB
        : r==4 ? f->fileB : f->colB;
      printPerRow(f->bRan ? x : -1, g.nRow);
    }
    for(t=1; t<NTAB; t++){
      const Fp *s = &g.fp[T_SQLITE], *f = &g.fp[t];
      int64_t x, y;
      if( !g.aUse[t] || t==T_FLOOR || !g.aUse[T_SQLITE] ) continue;
      x = r==0 ? s->rssB : r==1 ? s->anonB : r==4 ? s->fileB : -1;
      y = r==0 ? f->rssB : r==1 ? f->anonB : r==4 ? f->fileB : -1;
      if( x<=0 || y<0 ) printf(" %10s", "-");
      else printf(" %9.3gx", (double)y/(double)x);
    }
    printf("\n");
  }
  printf("RSS: this process, malloc_trim()ed before the load (%s); an ordinary table's RSS\n"
         "includes the file pages it maps (mmap).  GPU figures: n/a on the host backend.\n"
         "File: %s.\n",
#ifdef __GLIBC__
         "glibc",
#else
         "not glibc: no trim",
#endif
         g.bDbstat ? "pages of the table's b-trees (a virtual table's shadow tables), by dbstat"
                   : "n/a, this SQLite has no dbstat");
  printf("footprint ratios: the table's / sqlite's (<1x is leaner).\n");
}

static void printTable(void){
  int i, t, j, nRat, aRT[2*NTAB], aRRef[2*NTAB];
  const char *azRHead[2*NTAB];
  char z[32];
  printf("\nsqlbench: gpuds backend %s, device %s; SQLite %s\n",
         g.zBackend, g.zDevice, sqlite3_libversion());
  printf("rows %lld (loaded in %s order), queries %lld, %s database %s (journal_mode %s), budget %.3g s/phase\n",
         (long long)g.nRow, g.bLoadKey ? "key" : "random key", (long long)g.nQuery,
         g.bTempDb ? "temporary" : "file",
         g.zDb, g.zJournal ? g.zJournal : "?", g.budget);
  printf("page cache: tuned cache_size=%d mmap_size=%lld (requested %lld); default cache_size=%d mmap_size=%lld\n",
         g.aCache[CFG_TUNED], (long long)g.aMmap[CFG_TUNED], (long long)TUNED_MMAP_SIZE,
         g.aCache[CFG_DEFAULT], (long long)g.aMmap[CFG_DEFAULT]);
  printf("sqlite: the ordinary table, %s cache; gfsl, gpuhash: tuned cache%s\n",
         g.aCfg[T_SQLITE]==CFG_TUNED ? "tuned" : "default",
         g.aUse[T_SQLDEF] ? "; sq-default: the ordinary table again, default cache (its own copy of the rows)" : "");
  nRat = ratioColumns(aRT, aRRef, azRHead);
  printf("\n%-42s %-10s", "workload", "unit");
  for(t=0; t<NTAB; t++) if( g.aUse[t] ) printf(" %10s", azLabel[t]);
  for(j=0; j<nRat; j++) printf(" %10s", azRHead[j]);
  printf("\n");
  {
    int nCol = nRat;
    for(t=0; t<NTAB; t++) nCol += g.aUse[t];
    for(i=0; i<42+11+11*nCol; i++) putchar('-');
  }
  printf("\n");
  for(i=0; i<g.nW; i++){
    Work *w = &g.aW[i];
    int bPartial = 0;
    printf("%-42s %-10s", w->zTitle, w->zUnit);
    for(t=0; t<NTAB; t++){
      const Res *a = &w->a[t];
      if( !g.aUse[t] ) continue;
      if( !a->bRan ) printf(" %10s", "-");
      else if( a->bTimeout ) printf(" %10s", "timeout");
      else if( w->bShowTime ) printf(" %10.3g", 1e3*a->sec);
      else{
        char z2[40];
        int bP = a->nDone && a->nDone<a->nPlan;
        snprintf(z2, sizeof(z2), "%s%s", fmtNum(a->rate, z, sizeof(z)), bP ? "*" : "");
        bPartial |= bP;
        printf(" %10s", z2);
      }
    }
    for(j=0; j<nRat; j++){
      double x = ratioTo(w, aRT[j], aRRef[j]);
      if( x!=x ) printf(" %10s", "-");
      else printf(" %9.3gx", x);
    }
    printf("\n");
    if( w->bLatency ){
      int k;
      for(k=0; k<2; k++){
        printf("%-42s %-10s", k==0 ? "  latency median" : "  latency p99", "us");
        for(t=0; t<NTAB; t++){
          if( !g.aUse[t] ) continue;
          if( !w->a[t].bRan ) printf(" %10s", "-");
          else printf(" %10.2f", 1e6*(k==0 ? w->a[t].med : w->a[t].p99));
        }
        for(j=0; j<nRat; j++){
          const Res *a = &w->a[aRT[j]], *s = &w->a[aRRef[j]];
          double x = k==0 ? s->med : s->p99, y = k==0 ? a->med : a->p99;
          if( !a->bRan || !s->bRan || y<=0 ) printf(" %10s", "-");
          else printf(" %9.3gx", x/y);
        }
        printf("\n");
      }
    }
    (void)bPartial;
  }
  printf("\nratios: rate / sqlite rate (latency, ms: sqlite's time / the table's); >1x is faster than sqlite.\n");
  if( g.aUse[T_SQLIDX] ){
    printf("sq-index: the ordinary table with an index on each of v, r, s (tuned cache); gfsl/idx,\n"
           "hash/idx: a gpuds table against it (\"ratio_index\" in the JSON).\n");
  }
  if( g.aUse[T_SQLDEF] && g.aUse[T_SQLITE] ){
    printf("dflt/sq: the default-cache ordinary table against the tuned one; a gpuds table against the\n"
           "default-cache table is its ratio / dflt/sq (\"ratio_default\" in the JSON).\n");
  }
  if( g.aUse[T_FLOOR] && g.aUse[T_SQLITE] ){
    printf("floor: sqlbench's own virtual table over a plain array of the rows, writes dropped: SQLite's\n"
           "own cost of the workload through the virtual-table interface; floor/sq bounds what any\n"
           "virtual table can gain on it (\"-\": not run on the floor).\n");
  }
  printf("* = the --budget stopped the run early; the rate is over the queries run.\n");
  {
    /* The most any table can gain on IN (SELECT): the ordinary table's time
    ** over SQLite's own part of it (the floor). */
    Work *wIn = 0, *wFl = 0;
    int i;
    for(i=0; i<g.nW; i++){
      if( strcmp(g.aW[i].zName, "in")==0 ) wIn = &g.aW[i];
      if( strcmp(g.aW[i].zName, "in_floor")==0 ) wFl = &g.aW[i];
    }
    if( wIn && wFl && wIn->a[T_SQLITE].bRan && wFl->a[T_SQLITE].bRan && wIn->a[T_SQLITE].rate>0 ){
      printf("IN (SELECT) bound: SQLite's ephemeral index of the subquery alone takes %.3g s of the ordinary"
             " table's %.3g s, so no table can run that query more than %.3gx faster.\n",
             wFl->a[T_SQLITE].sec, wIn->a[T_SQLITE].sec, wFl->a[T_SQLITE].rate/wIn->a[T_SQLITE].rate);
    }
  }
  printFootprint();
  fflush(stdout);
}

/* JSON output */
static void jsonStr(FILE *f, const char *z){
  fputc('"', f);
  for(; z && *z; z++){
    unsigned char c = (unsigned char)*z;
    if( c=='"' || c=='\\' ) fprintf(f, "\\%c", c);
    else if( c=='\n' ) fputs("\\n", f);
    else if( c=='\t' ) fputs("\\t", f);
    else if( c<0x20 ) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}
static void jsonNum(FILE *f, double x){
  if( x!=x || isinf(x) ) fputs("null", f);
  else fprintf(f, "%.6g", x);
}

/* A count, or null where it is unknown (< 0). */
static void jsonInt(FILE *f, int64_t x){
  if( x<0 ) fputs("null", f);
  else fprintf(f, "%lld", (long long)x);
}

/* ", "zKey": x, "zKeyRow": x per row" (nulls where x < 0: unknown). */
static void jsonBytes(FILE *f, const char *zKey, const char *zKeyRow, int64_t x){
  fprintf(f, ", \"%s\": ", zKey);
  jsonInt(f, x);
  fprintf(f, ", \"%s\": ", zKeyRow);
  jsonNum(f, x>=0 && g.nRow>0 ? (double)x/(double)g.nRow : NAN);
}

static void writeJson(const char *zPath){
  FILE *f = fopen(zPath, "w");
  char zHost[256] = "?", zDate[64] = "?";
  struct utsname u;
  time_t tt = time(0);
  struct tm tmv;
  int i, t;
  if( f==0 ) die("cannot write %s: %s", zPath, strerror(errno));
  gethostname(zHost, sizeof(zHost)-1);
  zHost[sizeof(zHost)-1] = 0;
  if( gmtime_r(&tt, &tmv) ) strftime(zDate, sizeof(zDate), "%Y-%m-%dT%H:%M:%SZ", &tmv);
  fprintf(f, "{\n  \"meta\": {\n    \"tool\": \"sqlbench\",\n    \"rows\": %lld,\n    \"queries\": %lld,\n",
          (long long)g.nRow, (long long)g.nQuery);
  fprintf(f, "    \"seed\": %llu,\n    \"budget_s\": ", (unsigned long long)g.seed);
  jsonNum(f, g.budget);
  fprintf(f, ",\n    \"timeout_s\": ");
  jsonNum(f, g.timeout);
  fprintf(f, ",\n    \"key_spacing\": %d,\n    \"backend\": ", KEY_SPACING);
  jsonStr(f, g.zBackend);
  fprintf(f, ",\n    \"device\": ");
  jsonStr(f, g.zDevice);
  fprintf(f, ",\n    \"gpuds_version\": ");
  jsonStr(f, g.zVersion);
  fprintf(f, ",\n    \"gpuds_info\": %s", g.zInfo ? g.zInfo : "null");
  fprintf(f, ",\n    \"gpuds_info_end\": %s", g.zInfoEnd ? g.zInfoEnd : "null");
  fprintf(f, ",\n    \"sqlite_version\": ");
  jsonStr(f, sqlite3_libversion());
  fprintf(f, ",\n    \"sqlite_sourceid\": ");
  jsonStr(f, sqlite3_sourceid());
  fprintf(f, ",\n    \"date\": ");
  jsonStr(f, zDate);
  fprintf(f, ",\n    \"hostname\": ");
  jsonStr(f, zHost);
  if( uname(&u)==0 ){
    fprintf(f, ",\n    \"uname\": ");
    {
      char zU[600];
      snprintf(zU, sizeof(zU), "%s %s %s", u.sysname, u.release, u.machine);
      jsonStr(f, zU);
    }
  }
  fprintf(f, ",\n    \"cpus\": %ld", sysconf(_SC_NPROCESSORS_ONLN));
  fprintf(f, ",\n    \"open_flags\": \"SQLITE_OPEN_NOMUTEX\"");
  fprintf(f, ",\n    \"extension\": ");
  jsonStr(f, g.zExt);
  fprintf(f, ",\n    \"database\": ");
  jsonStr(f, g.zDb);
  fprintf(f, ",\n    \"temporary_database\": %s", g.bTempDb ? "true" : "false");
  fprintf(f, ",\n    \"journal_mode\": ");
  jsonStr(f, g.zJournal ? g.zJournal : "?");
  fprintf(f, ",\n    \"baseline\": \"%s\"", g.eBaseline==0 ? "both" : g.eBaseline==1 ? "tuned" : "default");
  fprintf(f, ",\n    \"load\": \"%s\"", g.bLoadKey ? "key" : "random");
  fprintf(f, ",\n    \"page_cache\": {\"tuned\": {\"cache_size\": %d, \"mmap_size\": %lld, \"mmap_size_requested\": %lld},"
             " \"default\": {\"cache_size\": %d, \"mmap_size\": %lld}}",
          g.aCache[CFG_TUNED], (long long)g.aMmap[CFG_TUNED], (long long)TUNED_MMAP_SIZE,
          g.aCache[CFG_DEFAULT], (long long)g.aMmap[CFG_DEFAULT]);
  fprintf(f, ",\n    \"table_cache\": {");
  for(t=0, i=0; t<NTAB; t++) if( g.aUse[t] ){
    fprintf(f, "%s\"%s\": \"%s\"", i++ ? ", " : "", azKind[t], g.aCfg[t]==CFG_TUNED ? "tuned" : "default");
  }
  fprintf(f, "}");
  fprintf(f, ",\n    \"pragmas\": [");
  for(i=0; i<g.nPragma; i++){ if( i ) fputs(", ", f); jsonStr(f, g.azPragma[i]); }
  fprintf(f, "],\n    \"tables\": [");
  for(t=0, i=0; t<NTAB; t++) if( g.aUse[t] ){ if( i++ ) fputs(", ", f); jsonStr(f, azKind[t]); }
  fprintf(f, "],\n    \"wall_s\": ");
  jsonNum(f, now()-g.tStart);
  fprintf(f, ",\n    \"command\": ");
  {
    sqlite3_str *s = sqlite3_str_new(0);
    char *z;
    for(i=0; i<g.argc; i++) sqlite3_str_appendf(s, "%s%s", i ? " " : "", g.argv[i]);
    z = sqlite3_str_finish(s);
    jsonStr(f, z);
    sqlite3_free(z);
  }
  fprintf(f, ",\n    \"argv\": [");
  for(i=0; i<g.argc; i++){ if( i ) fputs(", ", f); jsonStr(f, g.argv[i]); }
  fprintf(f, "]\n  },\n  \"workloads\": [");
  for(i=0; i<g.nW; i++){
    Work *w = &g.aW[i];
    int n = 0;
    fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
    jsonStr(f, w->zName);
    fprintf(f, ", \"group\": ");
    jsonStr(f, w->zGroup);
    fprintf(f, ", \"title\": ");
    jsonStr(f, w->zTitle);
    fprintf(f, ", \"unit\": ");
    jsonStr(f, w->zUnit);
    fprintf(f, ",\n     \"results\": {");
    for(t=0; t<NTAB; t++){
      Res *a = &w->a[t];
      if( !a->bRan ) continue;
      fprintf(f, "%s\n       \"%s\": {\"seconds\": ", n++ ? "," : "", azKind[t]);
      jsonNum(f, a->sec);
      fprintf(f, ", \"%s\": %lld, \"rate\": ",
              strcmp(w->zUnit, "rows/s")==0 ? "rows" :
              strcmp(w->zUnit, "keys/s")==0 ? "keys" :
              strcmp(w->zUnit, "stmts/s")==0 ? "statements" : "queries",
              (long long)a->nItem);
      jsonNum(f, a->bTimeout ? NAN : a->rate);
      fprintf(f, ", \"ratio\": ");
      jsonNum(f, t==T_SQLITE && a->bRan && !a->bTimeout && hasRatio(w) ? 1.0 : ratioOf(w, t));
      if( t!=T_SQLDEF && t!=T_SQLITE && g.aUse[T_SQLDEF] ){
        fprintf(f, ", \"ratio_default\": ");
        jsonNum(f, ratioDefault(w, t));
      }
      if( (t==T_GFSL || t==T_HASH) && g.aUse[T_SQLIDX] ){
        fprintf(f, ", \"ratio_index\": ");
        jsonNum(f, ratioTo(w, t, T_SQLIDX));
      }
      fprintf(f, ", \"timeout\": %s", a->bTimeout ? "true" : "false");
      if( a->nPlan ){
        fprintf(f, ", \"queries_run\": %lld, \"queries_planned\": %lld",
                (long long)a->nDone, (long long)a->nPlan);
      }
      if( a->nRows ){
        fprintf(f, ", \"rows_returned\": %lld, \"rows_per_s\": ", (long long)a->nRows);
        jsonNum(f, a->sec>0 ? (double)a->nRows/a->sec : NAN);
      }
      if( a->nDone ){
        fprintf(f, ", \"median_s\": ");
        jsonNum(f, a->med);
        fprintf(f, ", \"p99_s\": ");
        jsonNum(f, a->p99);
      }
      if( strcmp(w->zName, "reload")==0 || strcmp(w->zName, "reload_kv")==0 ){
        fprintf(f, ", \"second_query_s\": ");
        jsonNum(f, a->sec2);
      }
      fprintf(f, ", \"check\": [%lld, %lld, %lld], \"plan\": ",
              (long long)a->c[0], (long long)a->c[1], (long long)a->c[2]);
      jsonStr(f, a->zPlan ? a->zPlan : "");
      fputc('}', f);
    }
    fprintf(f, "\n     }}");
  }
  fprintf(f, "\n  ]");
  if( g.bFp ){
    int n = 0;
    fprintf(f, ",\n  \"footprint\": {\"rows\": %lld, \"file_method\": \"%s\", \"tables\": {",
            (long long)g.nRow, g.bDbstat ? "dbstat" : "none");
    for(t=0; t<NTAB; t++){
      const Fp *p = &g.fp[t];
      if( !g.aUse[t] || !p->bRan ) continue;
      fprintf(f, "%s\n    \"%s\": {\"first_answer_s\": ", n++ ? "," : "", azKind[t]);
      jsonNum(f, p->firstSec);
      jsonBytes(f, "rss_bytes", "rss_bytes_per_row", p->rssB);
      jsonBytes(f, "rss_anon_bytes", "rss_anon_bytes_per_row", p->anonB);
      jsonBytes(f, "gpu_free_delta_bytes", "gpu_bytes_per_row", p->gpuFreeB);
      jsonBytes(f, "gpu_store_device_bytes", "gpu_store_bytes_per_row", p->devB);
      jsonBytes(f, "column_set_bytes", "column_set_bytes_per_row", p->colB);
      jsonBytes(f, "file_bytes", "file_bytes_per_row", p->fileB);
      fprintf(f, ", \"file_pages\": ");
      jsonInt(f, p->nPage);
      fprintf(f, ", \"btrees\": ");
      jsonStr(f, p->zBtrees ? p->zBtrees : "");
      fputc('}', f);
    }
    fprintf(f, "\n  }}");
  }
  fprintf(f, "\n}\n");
  if( fclose(f)!=0 ) die("cannot write %s: %s", zPath, strerror(errno));
  fprintf(stderr, "wrote %s\n", zPath);
}

/* -------------------------------------------------------------------- main */

static void usage(void){
  fprintf(stderr,
    "usage: sqlbench [--ext PATH] [--rows N] [--queries M] [--json FILE] [--db PATH]\n"
    "                [--only W,...] [--tables sqlite,gfsl,gpuhash] [--budget S]\n"
    "                [--timeout S] [--seed X] [--pragma P]... [--keep]\n"
    "                [--baseline both|tuned|default] [--index-columns] [--dump DIR]\n"
    "                [--load random|key]\n"
    "  --ext PATH     the gpuds extension (default ./build/gpuds)\n"
    "  --rows N       rows per table (default 1000000)\n"
    "  --queries M    point queries, probe keys, mix statements, ... (default 100000)\n"
    "  --json FILE    write every figure and the run's metadata as JSON\n"
    "  --db PATH      database file (deleted first, kept); default a temporary file\n"
    "  --only LIST    workloads or groups: insert insert_random insert_sorted\n"
    "                 insert_select point probe in join range range_rows_10 ...\n"
    "                 range_agg_1M desc column col_eq col_range_1pct col_range_10pct\n"
    "                 col_rows_1pct col_and col_key_and col_text_eq col_text_in col_text_range col_top_desc\n"
    "                 col_top_asc mix delete reload reload_kv footprint\n"
    "  --tables LIST  which of sqlite,gfsl,gpuhash,sqlite_index,floor to run\n"
    "                 (default all but sqlite_index)\n"
    "  --index-columns  add sqlite_index (\"sq-index\"): the ordinary table with an\n"
    "                 index on each of v, r, s, in every workload\n"
    "  --dump DIR     write DIR/rows.csv (the rows, key order) and, with the column\n"
    "                 workloads, DIR/queries.json, for bench/duckdb_bench.py\n"
    "  --budget S     seconds per query workload and table (default 3)\n"
    "  --timeout S    seconds before a single statement is interrupted (default 60)\n"
    "  --seed X       PRNG seed (default 42)\n"
    "  --pragma P     run PRAGMA P after opening (repeatable), after the tuned cache\n"
    "                 settings (so it may change them), e.g. journal_mode=wal\n"
    "  --load ORDER   the main tables' load: random key order (default) or key\n"
    "                 (faster for every table; for runs that must fit a time limit)\n"
    "  --baseline B   the ordinary table with the tuned page cache (cache_size\n"
    "                 -2*N KiB, mmap_size 32 GiB) and again with SQLite's default\n"
    "                 cache (both, default), tuned only, or default only\n"
    "  --keep         keep the temporary database\n");
  exit(2);
}

static char **splitList(const char *z, int *pn){
  char **az = 0, *zCopy = xstrdup(z), *zTok, *zSave = 0;
  int n = 0;
  for(zTok = strtok_r(zCopy, ",", &zSave); zTok; zTok = strtok_r(0, ",", &zSave)){
    az = realloc(az, sizeof(char*)*(n+1));
    if( az==0 ) die("out of memory");
    az[n++] = xstrdup(zTok);
  }
  free(zCopy);
  *pn = n;
  return az;
}

static int64_t argInt(const char *z){
  char *zEnd = 0;
  double x;
  errno = 0;
  x = strtod(z, &zEnd);             /* accepts 1e6 */
  if( errno || zEnd==z || *zEnd || x<1 || x>4e18 ) die("bad number: %s", z);
  return (int64_t)x;
}

static const char *const azKnown[] = {
  "insert", "insert_random", "insert_sorted", "insert_select", "point", "probe",
  "in", "join", "range", "range_rows_10", "range_rows_1k", "range_rows_1M",
  "range_agg_10", "range_agg_1k", "range_agg_1M", "desc", "mix", "delete",
  "reload", "reload_kv", "footprint", "reopen_point",
  "column", "col_eq", "col_range_1pct", "col_range_10pct", "col_rows_1pct", "col_and",
  "col_key_and", "col_text_eq", "col_text_in", "col_text_range", "col_top_desc", "col_top_asc", 0
};

int main(int argc, char **argv){
  int i, t, bIndexCols = 0;
  const char *zJson = 0;
  char *zTmpl = 0;

  memset(&g, 0, sizeof(g));
  g.tStart = now();
  g.zExt = "./build/gpuds";
  g.nRow = 1000000;
  g.nQuery = 100000;
  g.seed = 42;
  g.budget = 3;
  g.timeout = 60;
  g.argc = argc; g.argv = argv;
  for(t=0; t<NTAB; t++) g.aUse[t] = t!=T_SQLIDX;
  for(i=1; i<argc; i++){
    const char *z = argv[i];
    const char *zVal = i+1<argc ? argv[i+1] : 0;
    if( strncmp(z, "--", 2)==0 ) z++;
    if( strcmp(z, "-help")==0 || strcmp(z, "-h")==0 ) usage();
    if( strcmp(z, "-keep")==0 ){ g.bKeep = 1; continue; }
    if( strcmp(z, "-index-columns")==0 ){ bIndexCols = 1; continue; }
    if( zVal==0 ) usage();
    i++;
    if( strcmp(z, "-ext")==0 ) g.zExt = zVal;
    else if( strcmp(z, "-rows")==0 ) g.nRow = argInt(zVal);
    else if( strcmp(z, "-queries")==0 ) g.nQuery = argInt(zVal);
    else if( strcmp(z, "-json")==0 ) zJson = zVal;
    else if( strcmp(z, "-dump")==0 ) g.zDump = zVal;
    else if( strcmp(z, "-db")==0 ) g.zDb = xstrdup(zVal);
    else if( strcmp(z, "-seed")==0 ) g.seed = strtoull(zVal, 0, 0);
    else if( strcmp(z, "-budget")==0 ) g.budget = atof(zVal);
    else if( strcmp(z, "-timeout")==0 ) g.timeout = atof(zVal);
    else if( strcmp(z, "-load")==0 ){
      if( strcmp(zVal, "random")==0 ) g.bLoadKey = 0;
      else if( strcmp(zVal, "key")==0 ) g.bLoadKey = 1;
      else die("--load: random or key, not \"%s\"", zVal);
    }
    else if( strcmp(z, "-baseline")==0 ){
      if( strcmp(zVal, "both")==0 ) g.eBaseline = 0;
      else if( strcmp(zVal, "tuned")==0 ) g.eBaseline = 1;
      else if( strcmp(zVal, "default")==0 ) g.eBaseline = 2;
      else die("--baseline: both, tuned or default, not \"%s\"", zVal);
    }
    else if( strcmp(z, "-pragma")==0 ){
      g.azPragma = realloc(g.azPragma, sizeof(char*)*(g.nPragma+1));
      if( g.azPragma==0 ) die("out of memory");
      g.azPragma[g.nPragma++] = xstrdup(zVal);
    }else if( strcmp(z, "-only")==0 ){
      int j, k;
      g.azOnly = splitList(zVal, &g.nOnly);
      for(j=0; j<g.nOnly; j++){
        for(k=0; azKnown[k] && strcmp(azKnown[k], g.azOnly[j]); k++){}
        if( azKnown[k]==0 ) die("unknown workload \"%s\" (see --help)", g.azOnly[j]);
      }
    }else if( strcmp(z, "-tables")==0 ){
      int n, j;
      char **az = splitList(zVal, &n);
      for(t=0; t<NTAB; t++) g.aUse[t] = 0;
      for(j=0; j<n; j++){
        for(t=0; t<NTAB && strcmp(az[j], azKind[t]); t++){}
        if( t==NTAB || t==T_SQLDEF ){
          die("unknown table kind \"%s\" (sqlite, gfsl, gpuhash, sqlite_index, floor)", az[j]);
        }
        g.aUse[t] = 1;
        free(az[j]);
      }
      free(az);
    }else{
      usage();
    }
  }
  /* The ordinary table twice (both), tuned, or with SQLite's defaults;
  ** the gpuds tables always run with the tuned cache. */
  g.aUse[T_SQLDEF] = g.eBaseline==0 && g.aUse[T_SQLITE];
  if( bIndexCols ) g.aUse[T_SQLIDX] = 1;
  for(t=0; t<NTAB; t++) g.aCfg[t] = CFG_TUNED;
  g.aCfg[T_SQLDEF] = CFG_DEFAULT;
  if( g.eBaseline==2 ) g.aCfg[T_SQLITE] = CFG_DEFAULT;
  if( g.budget<=0 ) g.budget = 1e30;
  if( g.timeout<=0 ) g.timeout = 1e30;
  if( g.nRow > 0xffffffffLL ) die("--rows too large (at most 2^32-1)");
  g.nV = g.nRow/100 > 0 ? g.nRow/100 : 1;
  g.nS = g.nRow/4 > 0 ? g.nRow/4 : 1;

  /* The database file. */
  if( g.zDb ){
    const char *azSuf[] = { "", "-journal", "-wal", "-shm" };
    for(i=0; i<4; i++){
      char *z = sqlite3_mprintf("%s%s", g.zDb, azSuf[i]);
      if( z ){ unlink(z); sqlite3_free(z); }
    }
  }else{
    const char *zDir = getenv("TMPDIR");
    int fd;
    zTmpl = sqlite3_mprintf("%s/sqlbench-XXXXXX.db", zDir && zDir[0] ? zDir : "/tmp");
    if( zTmpl==0 ) die("out of memory");
    fd = mkstemps(zTmpl, 3);
    if( fd<0 ) die("cannot create a temporary file %s: %s", zTmpl, strerror(errno));
    close(fd);
    g.zDb = xstrdup(zTmpl);
    sqlite3_free(zTmpl);
    g.bTempDb = 1;
    atexit(removeTempDb);
  }

  /* Keys: one per stratum, at a random offset; a random insert order. */
  {
    Rng r;
    int64_t n;
    g.aOff = xmalloc((size_t)g.nRow);
    g.aPerm = xmalloc(sizeof(int64_t)*(size_t)g.nRow);
    g.aRw = xmalloc(sizeof(uint32_t)*(size_t)g.nRow);
    rngSeed(&r, 1);
    for(n=0; n<g.nRow; n++){
      g.aOff[n] = (uint8_t)rngBelow(&r, KEY_SPACING);
      g.aPerm[n] = n;
      g.sumV += vOf(keyOf(n));
    }
    for(n=g.nRow-1; n>0; n--){
      int64_t j = (int64_t)rngBelow(&r, (uint64_t)(n+1)), x = g.aPerm[n];
      g.aPerm[n] = g.aPerm[j];
      g.aPerm[j] = x;
    }
    /* r*1024 of each row: another random permutation (its own stream). */
    rngSeed(&r, 3);
    for(n=0; n<g.nRow; n++) g.aRw[n] = (uint32_t)n;
    for(n=g.nRow-1; n>0; n--){
      int64_t j = (int64_t)rngBelow(&r, (uint64_t)(n+1));
      uint32_t x = g.aRw[n];
      g.aRw[n] = g.aRw[j];
      g.aRw[j] = x;
    }
  }

  dbOpen();
  g.zInfo = queryText("SELECT gpuds_info()");
  g.zBackend = queryText("SELECT json_extract(gpuds_info(), '$.backend')");
  g.zDevice = queryText("SELECT json_extract(gpuds_info(), '$.device')");
  g.zVersion = queryText("SELECT json_extract(gpuds_info(), '$.version')");
  g.zJournal = queryText("PRAGMA journal_mode");
  if( g.zBackend==0 ) g.zBackend = xstrdup("?");
  if( g.zDevice==0 ) g.zDevice = xstrdup("?");
  if( g.zVersion==0 ) g.zVersion = xstrdup("?");
  fprintf(stderr, "sqlbench: gpuds %s, backend %s, device %s; SQLite %s; %lld rows, %lld queries; db %s\n",
          g.zVersion, g.zBackend, g.zDevice, sqlite3_libversion(),
          (long long)g.nRow, (long long)g.nQuery, g.zDb);

  phaseInsert();
  if( g.bMain ) dumpRows();
  phaseFootprint();
  phasePoint();
  phaseProbe();
  phaseRange();
  phaseDesc();
  phaseColumn();
  phaseMix();
  phaseDelete();
  phaseReload();
  structureCheck();
  g.zInfoEnd = queryText("SELECT gpuds_info()");

  printTable();
  if( zJson ) writeJson(zJson);

  dbClose();
  if( g.bTempDb && !g.bKeep ){
    removeTempDb();
  }else{
    fprintf(stderr, "database kept: %s\n", g.zDb);
  }
  g.bTempDb = 0;

  for(i=0; i<g.nW; i++) for(t=0; t<NTAB; t++) free(g.aW[i].a[t].zPlan);
  free(g.aW);
  for(i=0; i<g.nOnly; i++) free(g.azOnly[i]);
  free(g.azOnly);
  for(i=0; i<g.nPragma; i++) free(g.azPragma[i]);
  free(g.azPragma);
  for(t=0; t<NTAB; t++) free(g.fp[t].zBtrees);
  free(g.aOff); free(g.aPerm); free(g.aRw);
  free(aFloorRow);
  free(g.zInfo); free(g.zInfoEnd); free(g.zBackend); free(g.zDevice);
  free(g.zVersion); free(g.zJournal); free(g.zDb);
  return 0;
}
