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
**   column:  filters and ORDER BY on the non-key columns, each
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
#include "sqlbench.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The tables' kinds and names (see sqlbench.h). */
const char *const azKind[NTAB] = { "sqlite", "gfsl", "gpuhash", "sqlite_index", "floor", "sqlite_default" };
const char *const azLabel[NTAB] = { "sqlite", "gfsl", "gpuhash", "sq-index", "floor", "sq-default" };
const char *const azTab[NTAB]  = { "t_sqlite", "t_gfsl", "t_gpuhash", "t_sqlite_index", "t_floor", "t_sqlite_default" };
const char *const azKvTab[NTAB] = { "kv_sqlite", "kv_gfsl", "kv_gpuhash", "kv_sqlite_index", "kv_floor", "kv_sqlite_default" };
const char *const zCols = "k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT";
const char *const azIdxCol[3] = { "v", "r", "s" };

Bench g;

/* ---------------------------------------------------------------- helpers */

double now(void){
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9*(double)ts.tv_nsec;
}

void die(const char *zFmt, ...){
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
void removeTempDb(void){
  static const char *const azSuf[] = { "", "-journal", "-wal", "-shm" };
  int i;
  if( !g.bTempDb || g.bKeep || g.zDb==0 ) return;
  for(i=0; i<4; i++){
    char *z = sqlite3_mprintf("%s%s", g.zDb, azSuf[i]);
    if( z ){ unlink(z); sqlite3_free(z); }
  }
}

/* A wrong answer: keep the database for a look, exit with status 1. */
void mismatchExit(void){
  g.bKeep = 1;
  fprintf(stderr, "database kept for inspection: %s\n", g.zDb ? g.zDb : "?");
  exit(1);
}

void *xmalloc(size_t n){
  void *p = malloc(n ? n : 1);
  if( p==0 ) die("out of memory (%zu bytes)", n);
  return p;
}

char *xstrdup(const char *z){
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
uint64_t rngNext(Rng *r){ r->s += 0x9e3779b97f4a7c15ULL; return mix64(r->s); }
uint64_t rngBelow(Rng *r, uint64_t n){ return n ? rngNext(r) % n : 0; }
void rngSeed(Rng *r, uint64_t salt){ r->s = mix64(g.seed ^ mix64(salt)); }

/* Key of row i, and absent keys of the same stratum (j = 0..KEY_SPACING-2). */
int64_t keyOf(int64_t i){ return i*KEY_SPACING + g.aOff[i]; }
int64_t absentKey(int64_t i, int j){
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
int64_t vOf(int64_t k){ return (int64_t)(mix64((uint64_t)k) % (uint64_t)g.nV); }
int64_t wOf(int64_t k){
  int64_t i = k/KEY_SPACING;
  return k>=0 && i<g.nRow ? (int64_t)g.aRw[i] : (int64_t)(mix64((uint64_t)k) % (uint64_t)g.nRow);
}
double rOf(int64_t k){ return (double)wOf(k)/1024.0; }
static int64_t uOf(int64_t k){
  return (int64_t)(mix64((uint64_t)k ^ 0x2545f4914f6cdd1dULL) % (uint64_t)g.nS);
}
int sOfU(int64_t u, char *z){     /* string u of the domain: 10..25 chars, returns length */
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
int sOf(int64_t k, char *z){ return sOfU(uOf(k), z); }
/* A text prefix of the strings (parameter type 'x'): x, 0..4095, as 3 hex
** digits into z (8 bytes); returns its length. */
int hexPrefix(int64_t x, char *z){
  return snprintf(z, 8, "%03llx", (unsigned long long)x);
}

/* Human-readable rate: 3 significant digits with k/M/G. */
const char *fmtNum(double x, char *z, size_t n){
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
