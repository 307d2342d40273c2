/*
** test_overlay.c -- the write buffer's map (ext/overlay.c) against a plain
** reference (a sorted array), on random puts, deletes, gets, clears and
** ordered scans in both directions with random bounds and page sizes.
** Usage: test_overlay [seed]
*/
#include "overlay.h"
#include "gpuds_mix.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rngState;
/* splitmix64: the state steps by the golden ratio, gpudsMix64 finalizes. */
static uint64_t rnd(void){
  return gpudsMix64(rngState += 0x9e3779b97f4a7c15ULL);
}

/* Reference: sorted keys with values. */
static int64_t *refK; static uint64_t *refV; static int nRef;
static int refFind(int64_t k, int *pFound){
  int lo = 0, hi = nRef;
  while( lo<hi ){ int m = (lo+hi)/2; if( refK[m]<k ) lo = m+1; else hi = m; }
  *pFound = lo<nRef && refK[lo]==k;
  return lo;
}
static void refPut(int64_t k, uint64_t v){
  int f, i = refFind(k, &f);
  if( f ){ refV[i] = v; return; }
  memmove(&refK[i+1], &refK[i], (nRef-i)*8); memmove(&refV[i+1], &refV[i], (nRef-i)*8);
  refK[i] = k; refV[i] = v; nRef++;
}
static void refDel(int64_t k){
  int f, i = refFind(k, &f);
  if( !f ) return;
  memmove(&refK[i], &refK[i+1], (nRef-i-1)*8); memmove(&refV[i], &refV[i+1], (nRef-i-1)*8);
  nRef--;
}

static int64_t nextAsc;
static int64_t randKey(int mode){
  switch( mode ){
    case 3: case 4: return nextAsc++;  /* ascending: the no-sort path */
    case 0: return (int64_t)(rnd()%200) - 100;                 /* dense */
    case 1: case 5: return (int64_t)rnd();                      /* full range */
    default: {                                                  /* extremes */
      int64_t e[] = { INT64_MIN, INT64_MIN+1, -1, 0, 1, INT64_MAX-1, INT64_MAX };
      return (rnd()%2) ? e[rnd()%7] : (int64_t)(rnd()%16) - 8;
    }
  }
}

static int nFail = 0;
static long nCheck = 0;
#define CHECK(c, ...) do{ nCheck++; if(!(c)){ nFail++; printf(__VA_ARGS__); printf("\n"); return; } }while(0)

/* Scan the overlay and the reference over random bounds; compare. */
static void checkScan(GpudsOverlay *p, int mode){
  gpuds_scan s;
  int64_t aK[64]; uint64_t aV[64];
  int64_t lo = randKey(mode), hi = randKey(mode);
  size_t nPage = 1 + rnd()%(rnd()%2 ? 3 : 64), n, j;
  int desc = rnd()%2, f, i, iEnd;
  if( rnd()%4==0 ){ lo = INT64_MIN; hi = INT64_MAX; }
  memset(&s, 0, sizeof(s));
  s.lo = lo; s.hi = hi; s.desc = desc;
  /* expected positions */
  i = refFind(lo, &f);
  iEnd = refFind(hi, &f); if( f ) iEnd++;
  if( lo>hi ) iEnd = i;
  if( desc ){ int t = iEnd-1; iEnd = i-1; i = t; }
  while( !s.done ){
    CHECK(gpudsOvScan(p, &s, nPage, aK, aV, &n)==GPUDS_OK, "scan failed");
    for(j=0; j<n; j++){
      CHECK(desc ? i>iEnd : i<iEnd, "scan returned extra key %lld", (long long)aK[j]);
      CHECK(aK[j]==refK[i] && aV[j]==refV[i], "scan: key %lld val %llu, expected %lld %llu",
            (long long)aK[j], (unsigned long long)aV[j], (long long)refK[i], (unsigned long long)refV[i]);
      i += desc ? -1 : 1;
    }
  }
  CHECK(i==iEnd, "scan ended early (lo=%lld hi=%lld desc=%d)", (long long)lo, (long long)hi, desc);
}

static void runSeedMode(uint64_t seed, int nOp, int mode){
  GpudsOverlay *p = gpudsOvNew();
  int i;
  rngState = seed;
  nextAsc = 0;
  nRef = 0;
  for(i=0; i<nOp && nFail==0; i++){
    unsigned r = (unsigned)(rnd()%100);
    int64_t k = randKey(mode);
    uint64_t v = rnd(), got = 0;
    if( mode==4 ){
      /* Mode 4 keeps the overlay in its append-only mode (ascending puts,
      ** gets below and above the largest key) and leaves it rarely, by a
      ** delete or an overwrite (one op in 500) or a clear (back in). */
      unsigned q = (unsigned)(rnd()%1000);
      if( q<2 ) r = 60;                             /* delete */
      else if( q<4 ) r = 99;                        /* clear */
      else if( q<600 ) r = rnd()%8==0 ? 0 : 1;      /* put (maybe overwrite) */
      else if( q<900 ) r = 80;                      /* get */
      else r = 95;                                  /* scan */
      if( r==80 || r==60 ) k = (int64_t)(rnd()%(uint64_t)(nextAsc+10)) - 5;
    }
    if( mode==5 ){
      /* Mode 5 is a bulk load into one big overlay: hashed, its filter
      ** grown, new keys through the unindexed tail and indexed in batches;
      ** gets of present and absent keys, a few deletes (of tail and
      ** indexed entries), rare scans, no clear. */
      unsigned q = (unsigned)(rnd()%1000);
      if( q<20 ) r = 60;                            /* delete */
      else if( q<650 ) r = 1;                       /* put (maybe overwrite) */
      else if( q<990 ) r = 80;                      /* get */
      else r = 95;                                  /* scan */
      if( r==80 && nRef>0 && rnd()%2 ){
        /* a present key, often one of the newest (in the tail) */
        k = refK[rnd()%nRef];
      }
    }
    if( r<55 ){
      int had, fr; uint64_t prev;
      int j = refFind(k, &fr);
      uint64_t vOld = fr ? refV[j] : 0;
      if( (mode==4 ? r==0 && rnd()%60==0 : rnd()%8==0) && nRef>0 ) k = refK[rnd()%nRef];   /* overwrite */
      j = refFind(k, &fr); vOld = fr ? refV[j] : 0;
      if( gpudsOvPut(p, k, v, &had, &prev)!=GPUDS_OK ){ nFail++; printf("put failed\n"); break; }
      if( had!=fr || (fr && prev!=vOld) ){ nFail++; printf("put %lld: had %d prev %llu, expected %d %llu\n", (long long)k, had, (unsigned long long)prev, fr, (unsigned long long)vOld); break; }
      refPut(k, v);
    }else if( r<75 ){
      if( nRef>0 && rnd()%2 ) k = refK[rnd()%nRef];
      gpudsOvDel(p, k);
      refDel(k);
    }else if( r<90 ){
      int fr, j = refFind(k, &fr);
      int hit = gpudsOvGet(p, k, &got);
      nCheck++;
      if( hit!=fr || (fr && got!=refV[j]) ){ nFail++; printf("get %lld: %d %llu\n", (long long)k, hit, (unsigned long long)got); break; }
    }else if( r<99 && rnd()%8==0 ){
      /* everything in key order at once (a flush) */
      int64_t *aK = malloc((nRef+1)*8); uint64_t *aV = malloc((nRef+1)*8);
      int j, bOk = aK && aV && gpudsOvSorted(p, aK, aV)==GPUDS_OK;
      for(j=0; bOk && j<nRef; j++) bOk = aK[j]==refK[j] && aV[j]==refV[j];
      free(aK); free(aV);
      nCheck++;
      if( !bOk ){ nFail++; printf("sorted: mismatch\n"); break; }
    }else if( r<99 ){
      checkScan(p, mode);
    }else{
      gpudsOvClear(p);
      nRef = 0;
    }
    nCheck++;
    if( gpudsOvCount(p)!=nRef ){ nFail++; printf("count %lld, expected %d\n", (long long)gpudsOvCount(p), nRef); break; }
  }
  if( nFail ) printf("FAILED: replay with: test_overlay %llu\n", (unsigned long long)seed);
  gpudsOvFree(p);
}
static void runSeed(uint64_t seed, int nOp){
  runSeedMode(seed, nOp, (int)(seed%5));
}

int main(int argc, char **argv){
  int nMax = 400000, s;
  setvbuf(stdout, 0, _IOLBF, 0);
  refK = malloc(nMax*8); refV = malloc(nMax*8);
  if( argc>1 ){
    runSeed(strtoull(argv[1], 0, 10), 200000);
  }else{
    uint64_t t = (uint64_t)time(0);
    printf("time seed %llu\n", (unsigned long long)t);
    for(s=1; s<=15 && nFail==0; s++) runSeed(s, 60000);
    if( nFail==0 ) runSeed(t, 60000);
    /* seeds = 3 (mod 5) append ascending keys: the no-sort path */
    if( nFail==0 ) runSeed(1000003, 100000);
    /* seeds = 4 (mod 5) stay mostly in the append-only (unhashed) mode */
    if( nFail==0 ) runSeed(1000004, 200000);
    /* one big overlay (the Bloom filter and its tail) */
    if( nFail==0 ) runSeedMode(t+1, 60000, 5);
  }
  printf("%ld passed, %d failed\n", nCheck, nFail);
  free(refK); free(refV);
  return nFail!=0;
}
