/*
** sqlbench_report.c -- the table printed at the end of a run: rates,
** latencies and ratios per workload and table, and the footprint.
*/
#include "sqlbench.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ output */

/* False for reload_kv: an ordinary table has nothing to load, so there is
** no ratio to show. */
int hasRatio(const Work *w){
  return strcmp(w->zName, "reload_kv")!=0;
}

/* Table t's rate over table ref's (NaN where either is missing). */
double ratioTo(const Work *w, int t, int ref){
  const Res *a = &w->a[t], *s = &w->a[ref];
  if( !hasRatio(w) ) return NAN;
  if( !a->bRan || !s->bRan || a->bTimeout || s->bTimeout || s->rate<=0 ) return NAN;
  return a->rate / s->rate;
}
double ratioOf(const Work *w, int t){ return ratioTo(w, t, T_SQLITE); }
/* Table t's rate over the default-cache ordinary table's. */
double ratioDefault(const Work *w, int t){ return ratioTo(w, t, T_SQLDEF); }

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

void printTable(void){
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
