/*
** sqlbench_main.c -- the command line, the keys' set-up, and the order in
** which the workloads run.
*/
#include "sqlbench.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
  floorFree();
  free(g.zInfo); free(g.zInfoEnd); free(g.zBackend); free(g.zDevice);
  free(g.zVersion); free(g.zJournal); free(g.zDb);
  return 0;
}
