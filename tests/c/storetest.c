/*
** storetest.c -- the harness of test_host_stores.c: allocation-failure
** injection (malloc() interposed, glibc only), seeded random numbers, the
** failure report, the reference a store is compared with (storetest.h
** describes it) and the checks of a store under test against it: batches,
** lookups, scans (also while the store changes), reloads, misuse, draining
** and allocation failures.
*/
#include "storetest.h"
#include "gpuds_mix.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------- */
/* Allocation-failure injection: glibc only, by interposing malloc().      */

#if defined(__GLIBC__) && !defined(GPUDS_TEST_NO_FAULT)
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void*, size_t);
static long long faultAfter = -1;  /* allocations to let through; -1: off */
static int faultPersist = 0;       /* keep failing after the first failure */
long long nFaultHit = 0;           /* failures injected so far */

/* True if the current allocation is to fail. */
static int faultNow(void){
  if( faultAfter<0 ) return 0;
  if( faultAfter>0 ){ faultAfter--; return 0; }
  nFaultHit++;
  if( !faultPersist ) faultAfter = -1;
  return 1;
}
void *malloc(size_t n){ return faultNow() ? 0 : __libc_malloc(n); }
void *calloc(size_t a, size_t b){ return faultNow() ? 0 : __libc_calloc(a, b); }
void *realloc(void *p, size_t n){ return faultNow() ? 0 : __libc_realloc(p, n); }
void faultArm(long long nOk, int bPersist){
  faultAfter = nOk;
  faultPersist = bPersist;
}
void faultOff(void){ faultAfter = -1; }
#else
long long nFaultHit = 0;
void faultArm(long long nOk, int bPersist){ (void)nOk; (void)bPersist; }
void faultOff(void){}
#endif

/* True if faultArm() really makes allocations fail (it may not, e.g. when
** valgrind replaces malloc). */
int faultWorks(void){
  void *(*volatile xMalloc)(size_t) = malloc;
  void *pX;
  faultArm(0, 0);
  pX = xMalloc(16);
  faultOff();
  free(pX);
  return pX==0;
}

/* ---------------------------------------------------------------------- */
/* Random numbers, failures, timing.                                       */

uint64_t rngState;

/* splitmix64: the state steps by the golden ratio, gpudsMix64 finalizes. */
uint64_t rnd64(void){
  return gpudsMix64(rngState += 0x9e3779b97f4a7c15ULL);
}
/* Uniform in [0,n); 0 when n is 0. */
uint64_t rndN(uint64_t n){ return n ? rnd64()%n : 0; }

long long nCheck = 0;
long long mxHeight = 0;    /* tallest b+tree seen (coverage) */
long long nHintSeen = 0;   /* checks that met a b+tree hint table */
uint64_t curSeed = 0;
const char *curWhat = "";

/* Report a failed check with the seed that replays it and exit. */
void failed(const char *zFile, int line, const char *zFmt, ...){
  va_list ap;
  fprintf(stderr, "FAILED (%s:%d, %s, seed %" PRIu64 "): ", zFile, line, curWhat,
          curSeed);
  va_start(ap, zFmt);
  vfprintf(stderr, zFmt, ap);
  va_end(ap);
  fprintf(stderr, "\nreplay with: test_host_stores %" PRIu64 "\n", curSeed);
  exit(1);
}

double nowSec(void){
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec*1e-9;
}

/* malloc() that never fails the test's own allocations silently. */
void *xmalloc(size_t n){
  void *p = malloc(n ? n : 1);
  if( p==0 ){ fprintf(stderr, "test: out of memory\n"); exit(1); }
  return p;
}

/* ---------------------------------------------------------------------- */
/* The reference.                                                          */


static int cmpI64(const void *a, const void *b){
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return x<y ? -1 : x>y;
}

/* First domain index whose key is >= k. */
static size_t refLower(const Ref *r, int64_t k){
  size_t lo = 0, hi = r->nDom;
  while( lo<hi ){
    size_t mid = lo + (hi-lo)/2;
    if( r->aDom[mid]<k ) lo = mid+1; else hi = mid;
  }
  return lo;
}
/* First domain index whose key is > k. */
static size_t refUpper(const Ref *r, int64_t k){
  size_t lo = 0, hi = r->nDom;
  while( lo<hi ){
    size_t mid = lo + (hi-lo)/2;
    if( r->aDom[mid]<=k ) lo = mid+1; else hi = mid;
  }
  return lo;
}
/* Domain index of k, or -1. */
static long long refFind(const Ref *r, int64_t k){
  size_t i = refLower(r, k);
  return (i<r->nDom && r->aDom[i]==k) ? (long long)i : -1;
}

/* A domain of about nTarget keys: the extremes of the range and the
** neighbourhood of 0 densely, powers of two and their neighbours, a few
** clusters of close keys, the rest uniformly random. */
static void refInit(Ref *r, size_t nTarget){
  size_t n = 0, nAlloc = nTarget + 400, e, i, j;
  int64_t *a = (int64_t*)xmalloc(nAlloc*sizeof(int64_t));
  e = nTarget/16;
  if( e<4 ) e = 4;
  for(i=0; i<e && n<nAlloc; i++){
    a[n++] = INT64_MIN + (int64_t)i;
    a[n++] = INT64_MAX - (int64_t)i;
    a[n++] = (int64_t)i - (int64_t)(e/2);
  }
  for(i=0; i<63 && nTarget>=2000 && n+4<=nAlloc; i++){
    int64_t v = (int64_t)1<<i;
    a[n++] = v; a[n++] = v-1; a[n++] = -v; a[n++] = -v+1;
  }
  for(j=0; j<4; j++){
    int64_t base = (int64_t)(rnd64()>>2) - ((int64_t)1<<61);
    int64_t step = 1 + (int64_t)rndN(3);
    for(i=0; i<nTarget/16 && n<nAlloc; i++) a[n++] = base + (int64_t)i*step;
  }
  while( n<nTarget ) a[n++] = (int64_t)rnd64();
  qsort(a, n, sizeof(int64_t), cmpI64);
  for(i=j=0; i<n; i++){
    if( j==0 || a[i]!=a[j-1] ) a[j++] = a[i];
  }
  r->aDom = a;
  r->nDom = j;
  r->aHas = (uint8_t*)xmalloc(j);
  r->aVal = (uint64_t*)xmalloc(j*sizeof(uint64_t));
  memset(r->aHas, 0, j);
  memset(r->aVal, 0, j*sizeof(uint64_t));
  r->nKey = 0;
  r->iZero = refLower(r, 0);
}

static void refFree(Ref *r){
  free(r->aDom);
  free(r->aHas);
  free(r->aVal);
  memset(r, 0, sizeof(*r));
}

/* Apply one operation to the reference: the expected (found, old). */
void refApply(Ref *r, int op, int64_t k, uint64_t v, uint8_t *pFound,
                     uint64_t *pOld){
  long long i = refFind(r, k);
  if( i<0 ){
    if( op==GPUDS_OP_UPSERT ){ fprintf(stderr, "test bug\n"); exit(1); }
    *pFound = 0;
    *pOld = 0;
    return;
  }
  *pFound = r->aHas[i];
  *pOld = r->aHas[i] ? r->aVal[i] : 0;
  if( op==GPUDS_OP_UPSERT ){
    if( !r->aHas[i] ) r->nKey++;
    r->aHas[i] = 1;
    r->aVal[i] = v;
  }else if( op==GPUDS_OP_DELETE ){
    if( r->aHas[i] ) r->nKey--;
    r->aHas[i] = 0;
    r->aVal[i] = 0;
  }
}

/* A key that is not in the domain. */
static int64_t refOutside(const Ref *r){
  for(;;){
    int64_t k;
    switch( rndN(3) ){
      case 0:  k = (int64_t)rnd64(); break;
      case 1:  k = (int64_t)((uint64_t)r->aDom[rndN(r->nDom)] + 1); break;
      default: k = (int64_t)((uint64_t)r->aDom[rndN(r->nDom)] - 1); break;
    }
    if( refFind(r, k)<0 ) return k;
  }
}

/* A random value, sometimes an edge value. */
uint64_t rndVal(void){
  switch( rndN(16) ){
    case 0:  return 0;
    case 1:  return UINT64_MAX;
    case 2:  return rndN(4);
    default: return rnd64();
  }
}

/* ---------------------------------------------------------------------- */
/* A store under test and its reference.                                   */


/* Make the batch buffers hold at least n operations. */
void tBuffers(T *t, size_t n){
  if( n<=t->nBuf ) return;
  free(t->aOp); free(t->aFound);
  free(t->aKey); free(t->aVal); free(t->aOld);
  t->nBuf = n;
  t->aOp = (uint8_t*)xmalloc(n);
  t->aFound = (uint8_t*)xmalloc(n);
  t->aKey = (int64_t*)xmalloc(n*sizeof(int64_t));
  t->aVal = (uint64_t*)xmalloc(n*sizeof(uint64_t));
  t->aOld = (uint64_t*)xmalloc(n*sizeof(uint64_t));
}

/* A numeric field of the store's xInfo JSON, -1 if absent. */
long long tInfoField(T *t, const char *zField){
  char zInfo[400], zPat[64];
  const char *z;
  t->pOps->xInfo(t->pS, zInfo, sizeof(zInfo));
  snprintf(zPat, sizeof(zPat), "\"%s\":", zField);
  z = strstr(zInfo, zPat);
  return z ? atoll(z + strlen(zPat)) : -1;
}

/* The structure check and the count, after every change. */
void tCheckStructure(T *t){
  int rc = t->pOps->xCheck(t->pS);
  CHECK( rc==GPUDS_OK, "xCheck: %s", t->pOps->xErrmsg(t->pS) );
  CHECK( t->pOps->xCount(t->pS)==t->ref.nKey, "xCount %lld, expected %lld",
         (long long)t->pOps->xCount(t->pS), (long long)t->ref.nKey );
  if( t->bOrdered ){
    long long h = tInfoField(t, "height");
    if( h>mxHeight ) mxHeight = h;
    if( tInfoField(t, "hint_slots")>0 ) nHintSeen++;
  }
}

/* The whole content equals the reference: an ascending full scan for the
** ordered store, a set comparison of a full scan for the hash store. */
void tVerifyAll(T *t){
  size_t nPage = 1000, nOut, i;
  int64_t aK[1000];
  uint64_t aV[1000];
  gpuds_scan sc;
  int64_t nSeen = 0;
  size_t iNext = 0;
  uint8_t *aSeen = 0;
  int nLoop = 0;
  memset(&sc, 0, sizeof(sc));
  sc.lo = INT64_MIN;
  sc.hi = INT64_MAX;
  if( !t->bOrdered ){
    aSeen = (uint8_t*)xmalloc(t->ref.nDom);
    memset(aSeen, 0, t->ref.nDom);
  }
  while( !sc.done ){
    int rc = t->pOps->xScan(t->pS, &sc, nPage, aK, aV, &nOut);
    CHECK( rc==GPUDS_OK, "xScan rc %d", rc );
    CHECK( nOut<=nPage, "xScan returned %zu > %zu", nOut, nPage );
    CHECK( ++nLoop < 1000000, "xScan does not end" );
    for(i=0; i<nOut; i++){
      if( t->bOrdered ){
        while( iNext<t->ref.nDom && !t->ref.aHas[iNext] ) iNext++;
        CHECK( iNext<t->ref.nDom, "full scan: extra key %lld", (long long)aK[i] );
        CHECK( aK[i]==t->ref.aDom[iNext], "full scan: key %lld, expected %lld",
               (long long)aK[i], (long long)t->ref.aDom[iNext] );
        CHECK( aV[i]==t->ref.aVal[iNext], "full scan: value of %lld",
               (long long)aK[i] );
        iNext++;
      }else{
        long long x = refFind(&t->ref, aK[i]);
        CHECK( x>=0 && t->ref.aHas[x], "hash scan: unexpected key %lld",
               (long long)aK[i] );
        CHECK( !aSeen[x], "hash scan: key %lld returned twice", (long long)aK[i] );
        CHECK( aV[i]==t->ref.aVal[x], "hash scan: value of %lld",
               (long long)aK[i] );
        aSeen[x] = 1;
      }
      nSeen++;
    }
  }
  CHECK( nSeen==t->ref.nKey, "full scan returned %lld keys, expected %lld",
         (long long)nSeen, (long long)t->ref.nKey );
  free(aSeen);
}

/* Fill the batch buffers with n operations: op mix (percent lookups,
** upserts; the rest deletes) and a key pattern. */
void tGenBatch(T *t, size_t n, int pctLookup, int pctUpsert){
  Ref *r = &t->ref;
  int pattern = (int)rndN(8);
  size_t start = rndN(r->nDom), i;
  size_t w = 1 + rndN(r->nDom<64 ? r->nDom : 64);
  size_t aHot[5];
  for(i=0; i<5; i++) aHot[i] = rndN(r->nDom);
  tBuffers(t, n);
  for(i=0; i<n; i++){
    int x = (int)rndN(100);
    int op = x<pctLookup ? GPUDS_OP_LOOKUP
           : x<pctLookup+pctUpsert ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE;
    size_t idx;
    switch( pattern ){
      case 0:  idx = rndN(r->nDom); break;                        /* random */
      case 1:  idx = (start + i) % r->nDom; break;                /* ascending */
      case 2:  idx = (start + r->nDom - i%r->nDom) % r->nDom; break; /* desc. */
      case 3:  idx = (start + rndN(w)) % r->nDom; break;          /* cluster */
      case 4:  idx = aHot[rndN(5)]; break;                        /* hot keys */
      case 5: {                                                   /* edges */
        size_t e = rndN(8);
        switch( rndN(3) ){
          case 0:  idx = e; break;
          case 1:  idx = r->nDom-1-e; break;
          default: idx = (r->iZero + r->nDom - 4 + e) % r->nDom; break;
        }
        break;
      }
      case 6:  idx = rndN(2) ? (start + i/3) % r->nDom : rndN(r->nDom); break;
      default:                                  /* a range delete */
        idx = (start + i) % r->nDom;
        if( rndN(10)!=0 ) op = GPUDS_OP_DELETE;
        break;
    }
    t->aOp[i] = (uint8_t)op;
    t->aKey[i] = r->aDom[idx];
    t->aVal[i] = rndVal();
    if( op!=GPUDS_OP_UPSERT && rndN(20)==0 ) t->aKey[i] = refOutside(r);
  }
}

/* Key and position of an operation, for tKeepFirst. */
typedef struct KeyPos { int64_t k; size_t i; } KeyPos;
static int cmpKeyPos(const void *a, const void *b){
  const KeyPos *x = (const KeyPos*)a, *y = (const KeyPos*)b;
  if( x->k!=y->k ) return x->k<y->k ? -1 : 1;
  return x->i<y->i ? -1 : x->i>y->i;
}

/* Drop every operation of the n in the buffers whose key occurred earlier
** (keep the first), so the batch keeps the backend contract of xBatch:
** distinct keys.  Returns the number of operations left. */
static size_t tKeepFirst(T *t, size_t n){
  KeyPos *a = (KeyPos*)xmalloc((n ? n : 1)*sizeof(KeyPos));
  uint8_t *aDrop = (uint8_t*)xmalloc(n ? n : 1);
  size_t i, j;
  for(i=0; i<n; i++){ a[i].k = t->aKey[i]; a[i].i = i; aDrop[i] = 0; }
  qsort(a, n, sizeof(KeyPos), cmpKeyPos);
  for(i=1; i<n; i++) if( a[i].k==a[i-1].k ) aDrop[a[i].i] = 1;
  for(i=j=0; i<n; i++){
    if( aDrop[i] ) continue;
    t->aOp[j] = t->aOp[i]; t->aKey[j] = t->aKey[i]; t->aVal[j] = t->aVal[i];
    j++;
  }
  free(a);
  free(aDrop);
  return j;
}

/* Apply the n operations in the buffers, less the later occurrences of a
** repeated key (tKeepFirst), to the store and the reference and compare
** every per-operation result, the structure and the count. */
void tRunBatch(T *t, size_t n){
  int bWant = rndN(8)!=0;
  int bUpsert = 0, rc;
  size_t i;
  n = tKeepFirst(t, n);
  for(i=0; i<n; i++) if( t->aOp[i]==GPUDS_OP_UPSERT ) bUpsert = 1;
  memset(t->aFound, 0xAA, n);
  rc = t->pOps->xBatch(t->pS, n, t->aOp, t->aKey,
                       (bUpsert || rndN(2)) ? t->aVal : 0,
                       bWant ? t->aFound : 0, bWant ? t->aOld : 0);
  CHECK( rc==GPUDS_OK, "xBatch rc %d: %s", rc, t->pOps->xErrmsg(t->pS) );
  for(i=0; i<n; i++){
    uint8_t f;
    uint64_t v;
    refApply(&t->ref, t->aOp[i], t->aKey[i], t->aVal[i], &f, &v);
    if( bWant ){
      CHECK( t->aFound[i]==f && t->aOld[i]==v,
             "batch op %zu (op %d key %lld): got (%d,%llu), expected (%d,%llu)",
             i, t->aOp[i], (long long)t->aKey[i], t->aFound[i],
             (unsigned long long)t->aOld[i], f, (unsigned long long)v );
    }
  }
  tCheckStructure(t);
}

/* n random point lookups through xLookup, in and out of the domain. */
void tLookups(T *t, size_t n){
  size_t i;
  int bVal = rndN(8)!=0;
  tBuffers(t, n);
  for(i=0; i<n; i++){
    t->aKey[i] = rndN(4) ? t->ref.aDom[rndN(t->ref.nDom)] : refOutside(&t->ref);
  }
  CHECK( t->pOps->xLookup(t->pS, n, t->aKey, t->aFound,
                          bVal ? t->aOld : 0)==GPUDS_OK, "xLookup" );
  for(i=0; i<n; i++){
    long long x = refFind(&t->ref, t->aKey[i]);
    int f = x>=0 && t->ref.aHas[x];
    CHECK( t->aFound[i]==f, "xLookup found of %lld", (long long)t->aKey[i] );
    if( bVal ){
      CHECK( t->aOld[i]==(f ? t->ref.aVal[x] : 0), "xLookup value of %lld",
             (long long)t->aKey[i] );
    }
  }
}

/* A random scan bound: a domain key, a neighbour of one, or an extreme. */
static int64_t tRandomBound(T *t){
  int64_t k = t->ref.aDom[rndN(t->ref.nDom)];
  switch( rndN(6) ){
    case 0:  return INT64_MIN;
    case 1:  return INT64_MAX;
    case 2:  return k==INT64_MAX ? k : k+1;
    case 3:  return k==INT64_MIN ? k : k-1;
    default: return k;
  }
}

/*
** Scan [lo,hi] in pages of nPage and compare with the reference: for the
** ordered store the exact sequence (either direction), for the hash store
** the set.  Also checks that an ordered scan narrows its bounds past the
** last key it returned.
*/
static void tScanCheck(T *t, int64_t lo, int64_t hi, int desc, size_t nPage){
  Ref *r = &t->ref;
  size_t a = refLower(r, lo), b = refUpper(r, hi), nOut, i;
  long long cur = desc ? (long long)b-1 : (long long)a;
  int64_t nExp = 0, nGot = 0;
  int64_t *aK = (int64_t*)xmalloc(nPage*sizeof(int64_t));
  uint64_t *aV = (uint64_t*)xmalloc(nPage*sizeof(uint64_t));
  uint8_t *aSeen = 0;
  gpuds_scan sc;
  long long nLoop = 0;
  if( lo>hi ){ a = b = 0; cur = -1; }
  for(i=a; i<b; i++) nExp += r->aHas[i];
  if( !t->bOrdered ){
    aSeen = (uint8_t*)xmalloc(r->nDom);
    memset(aSeen, 0, r->nDom);
  }
  memset(&sc, 0, sizeof(sc));
  sc.lo = lo;
  sc.hi = hi;
  sc.desc = desc;
  while( !sc.done ){
    uint64_t *pV = rndN(16) ? aV : 0;     /* values are optional */
    int rc = t->pOps->xScan(t->pS, &sc, nPage, aK, pV, &nOut);
    CHECK( rc==GPUDS_OK, "xScan rc %d", rc );
    CHECK( nOut<=nPage, "xScan page %zu > %zu", nOut, nPage );
    CHECK( ++nLoop <= nExp/(int64_t)nPage + 3, "xScan: too many pages" );
    for(i=0; i<nOut; i++){
      if( t->bOrdered ){
        if( desc ){
          while( cur>=(long long)a && !r->aHas[cur] ) cur--;
          CHECK( cur>=(long long)a, "scan: extra key %lld", (long long)aK[i] );
        }else{
          while( cur<(long long)b && !r->aHas[cur] ) cur++;
          CHECK( cur<(long long)b, "scan: extra key %lld", (long long)aK[i] );
        }
        CHECK( aK[i]==r->aDom[cur],
               "scan [%lld,%lld] %s page %zu: key %lld, expected %lld",
               (long long)lo, (long long)hi, desc ? "desc" : "asc", nPage,
               (long long)aK[i], (long long)r->aDom[cur] );
        CHECK( pV==0 || pV[i]==r->aVal[cur], "scan: value of %lld",
               (long long)aK[i] );
        cur += desc ? -1 : 1;
      }else{
        long long x = refFind(r, aK[i]);
        CHECK( aK[i]>=lo && aK[i]<=hi, "hash scan: key out of range" );
        CHECK( x>=0 && r->aHas[x] && !aSeen[x],
               "hash scan: unexpected or repeated key %lld", (long long)aK[i] );
        CHECK( pV==0 || pV[i]==r->aVal[x], "hash scan: value of %lld",
               (long long)aK[i] );
        aSeen[x] = 1;
      }
      nGot++;
    }
    if( nOut>0 && !sc.done && t->bOrdered ){
      if( desc ){
        CHECK( sc.hi<aK[nOut-1], "desc scan did not narrow hi" );
      }else{
        CHECK( sc.lo>aK[nOut-1], "asc scan did not narrow lo" );
      }
    }
  }
  CHECK( nGot==nExp, "scan [%lld,%lld] %s page %zu: %lld entries, expected %lld",
         (long long)lo, (long long)hi, desc ? "desc" : "asc", nPage,
         (long long)nGot, (long long)nExp );
  /* A finished scan stays finished. */
  CHECK( t->pOps->xScan(t->pS, &sc, nPage, aK, aV, &nOut)==GPUDS_OK && nOut==0,
         "scan after done" );
  free(aK);
  free(aV);
  free(aSeen);
}

/* nScan random scans: full, short or random ranges, either direction (for
** the ordered store), page sizes 1, 2, 7 and 1000. */
void tScans(T *t, int nScan){
  static const size_t aPage[] = {1, 2, 7, 1000};
  int i;
  for(i=0; i<nScan; i++){
    int64_t lo, hi;
    size_t nPage = aPage[rndN(4)];
    int desc = t->bOrdered ? (int)rndN(2) : 0;
    switch( rndN(4) ){
      case 0:  lo = INT64_MIN; hi = INT64_MAX; break;
      case 1: {                          /* a short range around a key */
        size_t x = rndN(t->ref.nDom), y = x + rndN(20);
        if( y>=t->ref.nDom ) y = t->ref.nDom-1;
        lo = t->ref.aDom[x];
        hi = t->ref.aDom[y];
        break;
      }
      default: lo = tRandomBound(t); hi = tRandomBound(t); break;
    }
    if( lo>hi && rndN(4) ){ int64_t x = lo; lo = hi; hi = x; }
    tScanCheck(t, lo, hi, desc, nPage);
  }
}

/*
** An ordered scan with random batches applied between its pages.  Each page
** must continue strictly past the last key returned, stay in [lo,hi], and
** return only entries present (with their current values) at that moment;
** every key present throughout and never touched must be returned.
*/
void tScanMutating(T *t){
  Ref *r = &t->ref;
  int64_t lo = tRandomBound(t), hi = tRandomBound(t), last = 0;
  int desc = (int)rndN(2), bAny = 0;
  size_t nPage = 1 + rndN(8), nOut, i, a, b;
  int64_t aK[8];
  uint64_t aV[8];
  uint8_t *aState;   /* bit 0: present at start, 1: touched, 2: returned */
  gpuds_scan sc;
  long long nLoop = 0;
  if( lo>hi ){ int64_t x = lo; lo = hi; hi = x; }
  a = refLower(r, lo);
  b = refUpper(r, hi);
  aState = (uint8_t*)xmalloc(r->nDom);
  for(i=0; i<r->nDom; i++) aState[i] = r->aHas[i];
  memset(&sc, 0, sizeof(sc));
  sc.lo = lo;
  sc.hi = hi;
  sc.desc = desc;
  while( !sc.done ){
    CHECK( t->pOps->xScan(t->pS, &sc, nPage, aK, aV, &nOut)==GPUDS_OK,
           "xScan" );
    CHECK( ++nLoop < 10*(long long)r->nDom + 10, "mutating scan does not end" );
    for(i=0; i<nOut; i++){
      long long x = refFind(r, aK[i]);
      CHECK( aK[i]>=lo && aK[i]<=hi, "mutating scan: key out of range" );
      if( bAny ){
        CHECK( desc ? aK[i]<last : aK[i]>last,
               "mutating scan: key %lld does not continue past %lld",
               (long long)aK[i], (long long)last );
      }
      CHECK( x>=0 && r->aHas[x] && r->aVal[x]==aV[i],
             "mutating scan: key %lld not present or wrong value",
             (long long)aK[i] );
      aState[x] |= 4;
      last = aK[i];
      bAny = 1;
    }
    if( !sc.done && b>a ){
      size_t n = 1 + rndN(6), j;
      tGenBatch(t, n, 10, 50);
      for(j=0; j<n; j++){
        size_t x = a + rndN(b-a);
        if( t->aOp[j]==GPUDS_OP_UPSERT || rndN(2) ) t->aKey[j] = r->aDom[x];
      }
      for(j=0; j<n; j++){
        long long x = refFind(r, t->aKey[j]);
        if( x>=0 && t->aOp[j]!=GPUDS_OP_LOOKUP ) aState[x] |= 2;
      }
      tRunBatch(t, n);
    }
  }
  for(i=a; i<b; i++){
    CHECK( (aState[i]&3)!=1 || (aState[i]&4),
           "mutating scan missed untouched key %lld", (long long)r->aDom[i] );
  }
  free(aState);
}

/* Replace the store by a new one bulk loaded (into an empty store) with the
** reference's content, then check everything. */
void tReload(T *t){
  gpuds_store *pNew = 0;
  char *zErr = 0;
  size_t n = 0, i;
  int rc;
  tBuffers(t, (size_t)t->ref.nKey);
  for(i=0; i<t->ref.nDom; i++){
    if( t->ref.aHas[i] ){
      t->aKey[n] = t->ref.aDom[i];
      t->aVal[n] = t->ref.aVal[i];
      n++;
    }
  }
  rc = t->pOps->xCreate(&pNew, &zErr);
  CHECK( rc==GPUDS_OK && pNew && zErr==0, "xCreate" );
  rc = t->pOps->xBulkLoad(pNew, n, t->aKey, t->aVal);
  CHECK( rc==GPUDS_OK, "xBulkLoad into empty: %s", t->pOps->xErrmsg(pNew) );
  t->pOps->xDestroy(t->pS);
  t->pS = pNew;
  tCheckStructure(t);
  tVerifyAll(t);
}

/* Bulk load into the (maybe non-empty) store a sorted random selection of
** absent domain keys, each taken with probability pct/100. */
void tBulkMore(T *t, int pct){
  Ref *r = &t->ref;
  size_t n = 0, i;
  int rc;
  tBuffers(t, r->nDom);
  for(i=0; i<r->nDom; i++){
    if( !r->aHas[i] && (int)rndN(100)<pct ){
      t->aKey[n] = r->aDom[i];
      t->aVal[n] = rndVal();
      n++;
    }
  }
  rc = t->pOps->xBulkLoad(t->pS, n, t->aKey, t->aVal);
  CHECK( rc==GPUDS_OK, "xBulkLoad of %zu: %s", n, t->pOps->xErrmsg(t->pS) );
  for(i=0; i<n; i++){
    uint8_t f;
    uint64_t v;
    refApply(r, GPUDS_OP_UPSERT, t->aKey[i], t->aVal[i], &f, &v);
  }
  tCheckStructure(t);
}

/* Calls that must fail and change nothing: a bulk load out of order, a
** batch with a bad operation code.  Plus a few trivial calls. */
void tMisuse(T *t){
  Ref *r = &t->ref;
  size_t n = 2 + rndN(50), i, j;
  int rc;
  char zInfo[400];
  gpuds_scan sc;
  size_t nOut;
  int64_t k;
  uint64_t v;

  /* Out-of-order (or repeated) keys in a bulk load. */
  tBuffers(t, n);
  for(i=0; i<n; i++){
    t->aKey[i] = r->aDom[rndN(r->nDom)];
    t->aVal[i] = 1;
  }
  qsort(t->aKey, n, sizeof(int64_t), cmpI64);
  i = rndN(n-1);
  if( rndN(2) ){
    t->aKey[i+1] = t->aKey[i];                      /* a repeated key */
  }else{
    k = t->aKey[i]; t->aKey[i] = t->aKey[i+1]; t->aKey[i+1] = k;  /* swap */
  }
  rc = t->pOps->xBulkLoad(t->pS, n, t->aKey, t->aVal);
  CHECK( rc!=GPUDS_OK, "unsorted xBulkLoad accepted" );
  CHECK( t->pOps->xErrmsg(t->pS)[0]!=0, "no message after a failed call" );
  tCheckStructure(t);

  /* A bad operation code anywhere in a batch. */
  tGenBatch(t, n, 20, 60);
  n = tKeepFirst(t, n);
  j = rndN(n);
  t->aOp[j] = (uint8_t)(rndN(2) ? 3 : 3 + rndN(253));
  rc = t->pOps->xBatch(t->pS, n, t->aOp, t->aKey, t->aVal, t->aFound, t->aOld);
  CHECK( rc==GPUDS_MISUSE, "bad op code: rc %d", rc );
  tCheckStructure(t);

  /* Empty batch, empty bulk load, empty lookups. */
  CHECK( t->pOps->xBatch(t->pS, 0, 0, 0, 0, 0, 0)==GPUDS_OK, "empty batch" );
  CHECK( t->pOps->xBulkLoad(t->pS, 0, 0, 0)==GPUDS_OK, "empty bulk load" );
  CHECK( t->pOps->xLookup(t->pS, 0, 0, 0, 0)==GPUDS_OK, "empty lookup" );

  /* An empty range, and a zero-sized page. */
  memset(&sc, 0, sizeof(sc));
  sc.lo = 5;
  sc.hi = 4;
  CHECK( t->pOps->xScan(t->pS, &sc, 10, &k, &v, &nOut)==GPUDS_OK
         && nOut==0 && sc.done, "lo>hi scan" );

  /* xInfo: the keys figure, and a too-small buffer. */
  t->pOps->xInfo(t->pS, zInfo, sizeof(zInfo));
  {
    const char *z = strstr(zInfo, "\"keys\":");
    CHECK( zInfo[0]=='{' && strstr(zInfo, "\"structure\":") && z
           && atoll(z+7)==t->ref.nKey, "xInfo: %s", zInfo );
    CHECK( strstr(zInfo, t->bOrdered ? "b+tree" : "open-addressing")!=0,
           "xInfo structure: %s", zInfo );
  }
  t->pOps->xInfo(t->pS, zInfo, 10);
  CHECK( strlen(zInfo)<10, "xInfo overflowed a small buffer" );
  t->pOps->xInfo(t->pS, zInfo, 1);
  CHECK( zInfo[0]==0, "xInfo with nBuf 1" );
  tVerifyAll(t);
}

/* Delete every key, in random order, in batches; the structure must shrink
** back to its smallest size. */
void tDrain(T *t){
  Ref *r = &t->ref;
  size_t n = 0, i;
  size_t *aIdx = (size_t*)xmalloc((r->nDom+1)*sizeof(size_t));
  for(i=0; i<r->nDom; i++) if( r->aHas[i] ) aIdx[n++] = i;
  for(i=n; i>1; i--){
    size_t j = rndN(i), x = aIdx[i-1];
    aIdx[i-1] = aIdx[j]; aIdx[j] = x;
  }
  i = 0;
  while( i<n ){
    size_t m = 1 + rndN(n/4 + 1), j;
    if( m>n-i ) m = n-i;
    tBuffers(t, m);
    for(j=0; j<m; j++){
      t->aOp[j] = GPUDS_OP_DELETE;
      t->aKey[j] = r->aDom[aIdx[i+j]];
    }
    tRunBatch(t, m);
    i += m;
  }
  free(aIdx);
  CHECK( r->nKey==0 && t->pOps->xCount(t->pS)==0, "drain left keys" );
  if( t->bOrdered ){
    CHECK( tInfoField(t, "nodes")==1 && tInfoField(t, "height")==1,
           "empty b+tree holds %lld nodes", tInfoField(t, "nodes") );
  }else{
    CHECK( tInfoField(t, "slots")==64, "empty hash table holds %lld slots",
           tInfoField(t, "slots") );
  }
  tVerifyAll(t);
}

/*
** A batch (or a bulk load, bBulk) run again and again with the k-th
** allocation failing, k = 0, 1, ...: each failure must leave the store
** exactly as it was; the run that gets through must be right.
*/
void tFaultOne(T *t, int bBulk){
  Ref *r = &t->ref;
  size_t n, i;
  long long k;
  int rc = GPUDS_NOMEM;
  if( bBulk ){
    int pct = (int)(1 + rndN(60));
    tBuffers(t, r->nDom);
    for(i=n=0; i<r->nDom; i++){
      if( !r->aHas[i] && (int)rndN(100)<pct ){
        t->aOp[n] = GPUDS_OP_UPSERT;
        t->aKey[n] = r->aDom[i];
        t->aVal[n] = rndVal();
        n++;
      }
    }
  }else{
    n = 1 + rndN(300);
    tGenBatch(t, n, 10, 30 + (int)rndN(60));
    n = tKeepFirst(t, n);
  }
  for(k=0; rc!=GPUDS_OK; k++){
    faultArm(k, (int)rndN(2));
    if( bBulk ){
      rc = t->pOps->xBulkLoad(t->pS, n, t->aKey, t->aVal);
    }else{
      rc = t->pOps->xBatch(t->pS, n, t->aOp, t->aKey, t->aVal, t->aFound,
                           t->aOld);
    }
    faultOff();
    if( rc!=GPUDS_OK ){
      CHECK( rc==GPUDS_NOMEM, "injected failure: rc %d", rc );
      CHECK( t->pOps->xErrmsg(t->pS)[0]!=0, "no message after NOMEM" );
      tCheckStructure(t);
      if( rndN(3)==0 || k<3 ) tVerifyAll(t);
    }
    CHECK( k<100000, "allocation failures never end" );
  }
  for(i=0; i<n; i++){
    uint8_t f;
    uint64_t v;
    refApply(r, t->aOp[i], t->aKey[i], t->aVal[i], &f, &v);
    if( !bBulk ){
      CHECK( t->aFound[i]==f && t->aOld[i]==v, "after faults: batch op %zu", i);
    }
  }
  tCheckStructure(t);
  tVerifyAll(t);
}

/* xCreate with failing allocations: NOMEM, no store, maybe a message. */
void tFaultCreate(const gpuds_store_ops *pOps){
  long long k;
  for(k=0; ; k++){
    gpuds_store *p = (gpuds_store*)1;
    char *zErr = 0;
    int rc;
    faultArm(k, (int)(k&1));
    rc = pOps->xCreate(&p, &zErr);
    faultOff();
    if( rc==GPUDS_OK ){
      CHECK( p!=0 && zErr==0, "xCreate ok" );
      pOps->xDestroy(p);
      break;
    }
    CHECK( rc==GPUDS_NOMEM && p==0, "xCreate under failure: rc %d", rc );
    free(zErr);
    CHECK( k<1000, "xCreate failures never end" );
  }
}

/* ---------------------------------------------------------------------- */
/* A store under test opened and closed.                                   */

/* Open t: a new store of pOps beside a reference over a domain of about
** nDom keys, both empty. */
void tOpen(T *t, const gpuds_store_ops *pOps, size_t nDom){
  char *zErr = 0;
  memset(t, 0, sizeof(*t));
  t->pOps = pOps;
  t->bOrdered = pOps->kind==GPUDS_ORDERED;
  refInit(&t->ref, nDom);
  CHECK( pOps->xCreate(&t->pS, &zErr)==GPUDS_OK && t->pS && zErr==0,
         "xCreate" );
  CHECK( strcmp(pOps->xErrmsg(t->pS), "")==0, "fresh xErrmsg not empty" );
  tCheckStructure(t);
  tVerifyAll(t);
}

/* Close t: the store, the reference and the batch buffers. */
void tClose(T *t){
  t->pOps->xDestroy(t->pS);
  refFree(&t->ref);
  free(t->aOp); free(t->aFound);
  free(t->aKey); free(t->aVal); free(t->aOld);
  memset(t, 0, sizeof(*t));
}
