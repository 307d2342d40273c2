/*
** test_host_stores.c -- randomized differential tests of the host stores
** (backend/host_ordered.c, backend/host_hash.c) against a trivially correct
** reference, plus allocation-failure injection and a throughput print.
** The harness (the reference, the checks, the injection) is
** tests/c/storetest.c.
**
** Usage:  test_host_stores [SEED] [--small]
**
** Without SEED a fixed list of seeds runs, then one taken from the clock;
** every seed is printed so that a failure can be replayed by passing it.
** --small (or GPUDS_TEST_SMALL=1 in the environment) shrinks every size, for
** runs under valgrind; it also skips the throughput figures.  Under
** valgrind, --soname-synonyms=somalloc=nouserintercepts keeps the
** allocation-failure injection working (without it valgrind replaces the
** test's malloc() and the injection reports itself unavailable).
**
** Exit status 0 when every check passed, 1 on the first failure.
*/
#include "c/storetest.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Appends: keys written in order, past the largest present.               */

/* Fill the buffers with up to n absent domain keys past the largest present
** key, ascending (consecutive, or with random gaps when bGaps), as upserts
** of random values; returns how many (0 when the domain's top is taken). */
static size_t tGenAppend(T *t, size_t n, int bGaps){
  Ref *r = &t->ref;
  size_t iTop = r->nDom, m = 0, i;
  while( iTop>0 && !r->aHas[iTop-1] ) iTop--;
  tBuffers(t, n ? n : 1);
  for(i=iTop; i<r->nDom && m<n; i += bGaps ? 1 + rndN(3) : 1){
    t->aOp[m] = GPUDS_OP_UPSERT;
    t->aKey[m] = r->aDom[i];
    t->aVal[m] = rndVal();
    m++;
  }
  return m;
}

/* The store's and the reference's state agree after m appended keys. */
static void tAppendDone(T *t, size_t m){
  size_t i;
  for(i=0; i<m; i++){
    uint8_t f;
    uint64_t v;
    refApply(&t->ref, GPUDS_OP_UPSERT, t->aKey[i], t->aVal[i], &f, &v);
    CHECK( f==0, "append of a present key %lld", (long long)t->aKey[i] );
  }
  tCheckStructure(t);
}

/* Append up to n keys past the largest, by xBulkLoad or (bBatch) by an
** all-upsert xBatch, whose per-key results must say "new"; an append into
** a non-empty tree must build full leaves (not the half-full ones of
** key-by-key right-edge splits). */
static void tAppend(T *t, size_t n, int bBatch){
  size_t m = tGenAppend(t, n, rndN(4)==0), i;
  long long nLeaf0 = t->bOrdered ? tInfoField(t, "leaves") : 0;
  int64_t nKey0 = t->ref.nKey;
  int rc;
  if( m==0 ) return;
  if( bBatch ){
    memset(t->aFound, 0xAA, m);
    memset(t->aOld, 0xAA, m*sizeof(uint64_t));
    rc = t->pOps->xBatch(t->pS, m, t->aOp, t->aKey, t->aVal, t->aFound, t->aOld);
    CHECK( rc==GPUDS_OK, "append by xBatch of %zu: %s", m, t->pOps->xErrmsg(t->pS) );
    for(i=0; i<m; i++){
      CHECK( t->aFound[i]==0 && t->aOld[i]==0, "append by xBatch: op %zu", i );
    }
  }else{
    rc = t->pOps->xBulkLoad(t->pS, m, t->aKey, t->aVal);
    CHECK( rc==GPUDS_OK, "append of %zu: %s", m, t->pOps->xErrmsg(t->pS) );
  }
  tAppendDone(t, m);
  if( t->bOrdered && nKey0>0 ){
    long long nAdd = tInfoField(t, "leaves") - nLeaf0;
    CHECK( nAdd <= (long long)(m/64) + 1, "append of %zu keys added %lld leaves",
           m, nAdd );
  }
}

/* An append run again and again with the k-th allocation failing, k = 0,
** 1, ...: each failure leaves the store exactly as it was (content, and
** node counts and height), the run that gets through is right. */
static void tFaultAppend(T *t, size_t n){
  size_t m = tGenAppend(t, n, 0);
  long long k, nNode0, nHeight0;
  int rc = GPUDS_NOMEM, bBatch = (int)rndN(2);
  if( m==0 ) return;
  nNode0 = tInfoField(t, "nodes");
  nHeight0 = tInfoField(t, "height");
  for(k=0; rc!=GPUDS_OK; k++){
    faultArm(k, (int)rndN(2));
    rc = bBatch ? t->pOps->xBatch(t->pS, m, t->aOp, t->aKey, t->aVal, 0, 0)
                : t->pOps->xBulkLoad(t->pS, m, t->aKey, t->aVal);
    faultOff();
    if( rc!=GPUDS_OK ){
      CHECK( rc==GPUDS_NOMEM, "injected failure in an append: rc %d", rc );
      CHECK( tInfoField(t, "nodes")==nNode0 && tInfoField(t, "height")==nHeight0,
             "failed append changed the tree's shape" );
      tCheckStructure(t);
      if( k<3 || rndN(4)==0 ) tVerifyAll(t);
    }
    CHECK( k<100000, "append allocation failures never end" );
  }
  tAppendDone(t, m);
}

/* Delete the keys of the top part of the domain (every present key from a
** random domain index in its top eighth up), making room for more appends. */
static void tDropTop(T *t){
  Ref *r = &t->ref;
  size_t i0 = r->nDom - rndN(r->nDom/8 + 1), m = 0, i;
  tBuffers(t, r->nDom - i0 + 1);
  for(i=i0; i<r->nDom; i++){
    if( r->aHas[i] ){ t->aOp[m] = GPUDS_OP_DELETE; t->aKey[m++] = r->aDom[i]; }
  }
  if( m>0 ) tRunBatch(t, m);
}

/*
** Appends of every size (one key, part of a leaf, a leaf, many leaves, a
** level of inner nodes, ...) from an empty store up, growing the b+tree by
** several levels, interleaved with random batches, lookups, scans, removals
** of the domain's top and (bFault) appends under allocation failures; the
** structure is checked after each.  The tree must reach height hWant.
*/
static void appendScenario(const gpuds_store_ops *pOps, size_t nDom, int nRound,
                           int bFault, long long hWant){
  T t;
  int r;
  long long hMax = 0;
  tOpen(&t, pOps, nDom);
  for(r=0; r<nRound; r++){
    size_t n;
    switch( rndN(8) ){
      case 0:  n = 1; break;
      case 1:  n = 1 + rndN(63); break;                 /* part of a leaf */
      case 2:  n = 64; break;                            /* a leaf */
      case 3:  n = 64*(1 + rndN(70)); break;             /* leaves */
      case 4:  n = 1 + rndN(5000); break;
      case 5:  n = 4096 + rndN(70000); break;            /* inner levels */
      default: n = 1 + rndN(nDom/4 + 1); break;
    }
    tAppend(&t, n, rndN(3)==0);
    if( t.bOrdered && tInfoField(&t, "height")>hMax ) hMax = tInfoField(&t, "height");
    switch( rndN(10) ){
      case 0: case 1: {                                  /* a random batch */
        size_t nB = 1 + rndN(rndN(2) ? 50 : 2000), iTop = t.ref.nDom, i;
        tGenBatch(&t, nB, 20, (int)rndN(80));
        /* mostly leave the keys past the largest to the appends: an upsert
        ** there would leave them little room */
        while( iTop>0 && !t.ref.aHas[iTop-1] ) iTop--;
        for(i=0; i<nB; i++){
          if( t.aOp[i]==GPUDS_OP_UPSERT && rndN(16)
           && (iTop==0 || t.aKey[i]>t.ref.aDom[iTop-1]) ){
            t.aOp[i] = GPUDS_OP_LOOKUP;
          }
        }
        tRunBatch(&t, nB);
        break;
      }
      case 2:  tLookups(&t, 1 + rndN(2000)); break;
      case 3:  tScans(&t, 2); break;
      case 4:  if( bFault ) tFaultAppend(&t, 1 + rndN(rndN(2) ? 100 : 20000)); break;
      case 5:  tDropTop(&t); break;
      case 6:  if( rndN(4)==0 ) tVerifyAll(&t); break;
      default: break;
    }
    /* room for more: drop the top when the domain's last key is present */
    if( t.ref.aHas[t.ref.nDom-1] && rndN(2) ) tDropTop(&t);
  }
  tVerifyAll(&t);
  tLookups(&t, 500);
  tScans(&t, 4);
  /* then, from empty, appends alone of random sizes up to the domain's
  ** top: the tree grows level by level, to hWant at least */
  tDrain(&t);
  while( !t.ref.aHas[t.ref.nDom-1] ){
    tAppend(&t, 1 + rndN(rndN(2) ? 300 : nDom/8), rndN(3)==0);
    if( t.bOrdered && tInfoField(&t, "height")>hMax ) hMax = tInfoField(&t, "height");
  }
  tVerifyAll(&t);
  if( t.bOrdered ){
    CHECK( hMax>=hWant, "appends grew the b+tree to height %lld only, want %lld",
           hMax, hWant );
  }
  tDrain(&t);
  tAppend(&t, 100, 0);            /* into an empty, used store */
  tAppend(&t, 1, 1);
  tVerifyAll(&t);
  tClose(&t);
}

/*
** The main randomized scenario on a domain of about nDom keys: nRound
** batches in four phases (grow, mixed, shrink, churn), with lookups, scans,
** bulk loads, reloads, misuse and mutating scans in between, then a drain.
*/
static void scenario(const gpuds_store_ops *pOps, size_t nDom, int nRound){
  T t;
  int r;
  tOpen(&t, pOps, nDom);
  for(r=0; r<nRound; r++){
    int phase = r*4/nRound;
    size_t n;
    static const int aMix[4][2] = {{10,80},{30,40},{10,15},{20,40}};
    switch( rndN(4) ){
      case 0:  n = 1; break;
      case 1:  n = 1 + rndN(8); break;
      case 2:  n = 1 + rndN(200); break;
      default: n = 1 + rndN(nDom<2000 ? nDom : 2000); break;
    }
    tGenBatch(&t, n, aMix[phase][0], aMix[phase][1]);
    tRunBatch(&t, n);
    switch( rndN(12) ){
      case 0:  tLookups(&t, 1 + rndN(500)); break;
      case 1:  tScans(&t, 3); break;
      case 2:  if( t.bOrdered ) tScanMutating(&t); else tScans(&t, 1); break;
      case 3:  if( rndN(4)==0 ) tReload(&t); break;
      case 4:  if( rndN(3)==0 ) tBulkMore(&t, (int)(1 + rndN(rndN(2) ? 5 : 60)));
               break;
      case 5:  if( rndN(4)==0 ) tMisuse(&t); break;
      case 6:  if( rndN(4)==0 ) tVerifyAll(&t); break;
      default: break;
    }
  }
  tLookups(&t, 200);
  tScans(&t, 8);
  tVerifyAll(&t);
  tDrain(&t);
  tBulkMore(&t, 50);             /* bulk load into an empty, used store */
  tVerifyAll(&t);
  tScans(&t, 4);
  tClose(&t);
}

/* Allocation-failure injection on a moderately sized store. */
static void faultScenario(const gpuds_store_ops *pOps, size_t nDom, int nBatch){
  T t;
  int i;
  tFaultCreate(pOps);
  tOpen(&t, pOps, nDom);
  tFaultOne(&t, 1);                        /* bulk load into the empty store */
  for(i=0; i<nBatch; i++){
    tFaultOne(&t, rndN(6)==0);
  }
  tDrain(&t);
  tClose(&t);
}

/* A big store: bulk loaded, then emptied by delete-heavy batches, checking
** the structure after every batch (deep trees, inner merges). */
static void bigScenario(const gpuds_store_ops *pOps, size_t nDom){
  T t;
  int r;
  tOpen(&t, pOps, nDom);
  tBulkMore(&t, 70);
  tVerifyAll(&t);
  for(r=0; r<24; r++){
    size_t n = nDom/8;
    if( r==12 ){ tBulkMore(&t, 40); tVerifyAll(&t); }
    tGenBatch(&t, n, 10, r<12 ? 5 : 45);
    tRunBatch(&t, n);
    if( r%3==0 ){
      /* a range delete of up to a sixteenth of the domain (whole leaves) */
      size_t nD = t.ref.nDom, m = 1 + rndN(nD/16), i0 = rndN(nD), j;
      tBuffers(&t, m);
      for(j=0; j<m; j++){
        t.aOp[j] = GPUDS_OP_DELETE;
        t.aKey[j] = t.ref.aDom[(i0+j) % nD];
      }
      tRunBatch(&t, m);
    }
    if( r%4==0 ){ tScans(&t, 1); tLookups(&t, 1000); }
  }
  tVerifyAll(&t);
  tDrain(&t);
  tClose(&t);
}

/* Operations per second for a few bulk workloads (printed, not asserted). */
static void throughput(const gpuds_store_ops *pOps, const char *zName){
  size_t n = 1000000, nB = 10000, i;
  gpuds_store *p = 0;
  int64_t *aKey = (int64_t*)xmalloc(n*sizeof(int64_t));
  uint64_t *aVal = (uint64_t*)xmalloc(n*sizeof(uint64_t));
  uint8_t *aOp = (uint8_t*)xmalloc(nB), *aF = (uint8_t*)xmalloc(nB);
  uint64_t *aOld = (uint64_t*)xmalloc(nB*sizeof(uint64_t));
  double t0, tUp, tLook;
  for(i=0; i<n; i++){ aKey[i] = (int64_t)rnd64(); aVal[i] = i; }
  memset(aOp, GPUDS_OP_UPSERT, nB);
  CHECK( pOps->xCreate(&p, 0)==GPUDS_OK, "xCreate" );
  t0 = nowSec();
  for(i=0; i<n; i+=nB){
    CHECK( pOps->xBatch(p, nB, aOp, aKey+i, aVal+i, aF, aOld)==GPUDS_OK, "up" );
  }
  tUp = nowSec() - t0;
  t0 = nowSec();
  for(i=0; i<n; i+=nB){
    CHECK( pOps->xLookup(p, nB, aKey + (n-nB-i), aF, aOld)==GPUDS_OK, "look" );
  }
  tLook = nowSec() - t0;
  CHECK( pOps->xCheck(p)==GPUDS_OK, "xCheck" );
  printf("  %-8s 1e6 random upserts: %6.2f Mops/s   1e6 random lookups: "
         "%6.2f Mops/s\n", zName, n/tUp/1e6, n/tLook/1e6);
  pOps->xDestroy(p);
  free(aKey); free(aVal); free(aOp); free(aF); free(aOld);
}

/* Bulk load of n sorted keys into an empty ordered store, timed. */
static void bulkThroughput(size_t n){
  const gpuds_store_ops *pOps = &gpudsHostOrderedOps;
  gpuds_store *p = 0;
  int64_t *aKey = (int64_t*)xmalloc(n*sizeof(int64_t));
  uint64_t *aVal = (uint64_t*)xmalloc(n*sizeof(uint64_t));
  size_t i;
  double t0, t1;
  for(i=0; i<n; i++){ aKey[i] = (int64_t)(i*3) - (int64_t)n; aVal[i] = i; }
  CHECK( pOps->xCreate(&p, 0)==GPUDS_OK, "xCreate" );
  t0 = nowSec();
  CHECK( pOps->xBulkLoad(p, n, aKey, aVal)==GPUDS_OK, "bulk load" );
  t1 = nowSec();
  CHECK( pOps->xCount(p)==(int64_t)n, "bulk count" );
  printf("  ordered  bulk load of %zu sorted keys: %.3f s\n", n, t1-t0);
  pOps->xDestroy(p);
  /* the same keys written in order, flushed in bulk loads of 2^20 (appends) */
  CHECK( pOps->xCreate(&p, 0)==GPUDS_OK, "xCreate" );
  t0 = nowSec();
  for(i=0; i<n; i+=(size_t)1<<20){
    size_t m = n-i < ((size_t)1<<20) ? n-i : (size_t)1<<20;
    CHECK( pOps->xBulkLoad(p, m, aKey+i, aVal+i)==GPUDS_OK, "append" );
  }
  t1 = nowSec();
  CHECK( pOps->xCount(p)==(int64_t)n && pOps->xCheck(p)==GPUDS_OK, "appends" );
  printf("  ordered  %zu sorted keys in bulk loads of 2^20: %.3f s\n", n, t1-t0);
  pOps->xDestroy(p);
  free(aKey);
  free(aVal);
}

int main(int argc, char **argv){
  static const uint64_t aSeed[] = {1, 2, 3, 0xdeadbeef, 20240607};
  uint64_t aRun[8];
  int nRun = 0, i, bSmall = 0, bFault;
  const char *zSmall = getenv("GPUDS_TEST_SMALL");
  double t0 = nowSec();
  if( zSmall && zSmall[0] && strcmp(zSmall, "0")!=0 ) bSmall = 1;
  for(i=1; i<argc; i++){
    if( strcmp(argv[i], "--small")==0 ){
      bSmall = 1;
    }else{
      aRun[nRun++] = strtoull(argv[i], 0, 0);
      if( nRun>=8 ) break;
    }
  }
  if( nRun==0 ){
    for(i=0; i<(int)(sizeof(aSeed)/sizeof(aSeed[0])); i++) aRun[nRun++] = aSeed[i];
    aRun[nRun++] = (uint64_t)time(0) ^ ((uint64_t)getpid()<<32);
  }
  bFault = faultWorks();
  CHECK( strcmp(gpudsHostOrderedOps.zBackend, "host")==0
         && gpudsHostOrderedOps.kind==GPUDS_ORDERED, "ordered ops identity" );
  CHECK( strcmp(gpudsHostHashOps.zBackend, "host")==0
         && gpudsHostHashOps.kind==GPUDS_HASH, "hash ops identity" );
  gpudsHostOrderedOps.xDestroy(0);
  gpudsHostHashOps.xDestroy(0);
  printf("host stores: %s run, allocation-failure injection %s\n",
         bSmall ? "small" : "full", bFault ? "on" : "unavailable");

  for(i=0; i<nRun; i++){
    int s;
    double tSeed = nowSec();
    curSeed = aRun[i];
    printf("seed %" PRIu64 "\n", curSeed);
    fflush(stdout);
    for(s=0; s<2; s++){
      const gpuds_store_ops *pOps = s ? &gpudsHostHashOps : &gpudsHostOrderedOps;
      curWhat = s ? "hash" : "ordered";
      rngState = curSeed*2 + (uint64_t)s;
      scenario(pOps, 40, bSmall ? 60 : 400);
      scenario(pOps, 400, bSmall ? 80 : 600);
      scenario(pOps, bSmall ? 6000 : 20000, bSmall ? 100 : 300);
      if( bFault ) faultScenario(pOps, bSmall ? 3000 : 4000, bSmall ? 10 : 25);
      if( s==0 ){
        /* height 3 from 20000 keys, 4 from 400000 (full leaves: 64^3) */
        appendScenario(pOps, 20000, bSmall ? 60 : 150, bFault, 3);
        if( !bSmall && i<2 ) appendScenario(pOps, 400000, 120, 0, 4);
      }
      if( !bSmall && i==0 ) bigScenario(pOps, 3<<17);
    }
    printf("seed %" PRIu64 " passed (%.1f s)\n", curSeed, nowSec()-tSeed);
  }
  if( !bSmall ){
    curWhat = "throughput";
    printf("throughput (one thread):\n");
    throughput(&gpudsHostOrderedOps, "ordered");
    throughput(&gpudsHostHashOps, "hash");
    bulkThroughput(10000000);
  }
  /* Lookups must have met the b+tree's hint table (built after enough
  ** descents) and the batches after it, or its paths went untested. */
  if( nHintSeen==0 ){
    printf("FAIL: no check met a b+tree hint table\n");
    return 1;
  }
  printf("host stores: %lld checks passed (%lld allocation failures injected,"
         " b+tree height up to %lld, %lld with a hint table) in %.1f s\n",
         nCheck, nFaultHit, mxHeight, nHintSeen, nowSec()-t0);
  return 0;
}
