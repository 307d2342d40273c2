// test_agg.cu -- the CUDA column set's aggregation (xAgg of gpudsCudaColsOps,
// kernels/cols/agg.cuh) against the host column set's (backend/host_agg.c):
// random sets and requests (tests/agg_gen.h: NULLs, 1 and 1.0 and '1',
// shared text prefixes, ambiguous 8-byte values, integers at the limits,
// -0.0, key ranges, skip lists, IN terms, DIV and MOD by 0, -1 and
// INT64_MIN, 0 to 8 keys, every aggregate, the representative's
// aggregate) go to both and every field must agree (REAL sums within 1e-15
// of the sum of the magnitudes).  Each request runs three times on the
// GPU: as it comes, again (bit for bit the same: no result may depend on
// timing), and with the groups always sorted, no fused pass, small chunks,
// merges and launches (the other paths, every kernel variant).
//
// Usage: test_agg [small | bench | bench8]
//   (none)  the random requests at full size (a few hundred, sets up to
//           10^6 rows), misuse, out of device memory;
//   small   fewer and smaller, for compute-sanitizer (memcheck, racecheck);
//   bench   the issue's query shapes at 10^7 rows: GPU time of xAgg
//           (CUDA events, median of 7 after 2 warm-ups), its wall time,
//           the host backend's, and the results compared;
//   bench8  the same at 10^8 rows, where memory allows (compared with the
//           host only with GPUDS_BENCH_HOST=1: minutes).
// GPUDS_TEST_SEED repeats a run.  Exit 0 passed, 1 failed, 77 SKIPPED (no
// usable CUDA device).
#include "gpuds_backend.h"
#include "gpuds_colval.h"

#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cols.cuh"
#include "check.h"
#include "agg_gen.h"

static AgRng gR;
static const gpuds_cols_ops *G = &gpudsCudaColsOps;
static const gpuds_cols_ops *H = &gpudsHostColsOps;

// Are x and y the same bit for bit (every array, NULL as zeros)?
static bool sameBits(const gpuds_aggres &x, const gpuds_aggres &y, int nKey, int nFn){
  if( x.nGroup!=y.nGroup || x.nLeft!=y.nLeft || x.nRead!=y.nRead ) return false;
  gpuds_aggres a = x, b = y;
  void **pa[AGG_RES_NARR], **pb[AGG_RES_NARR];
  aggResArrays(&a, pa);
  aggResArrays(&b, pb);
  for(int i=0; i<AGG_RES_NARR; i++){
    int nRow = aggResKind[i]==0 ? nKey : aggResKind[i]==1 ? 1 : nFn;
    size_t nb = (size_t)nRow*(size_t)x.nGroup*aggResElem[i];
    if( nb==0 ) continue;
    const char *za = (const char*)*pa[i], *zb = (const char*)*pb[i];
    for(size_t k=0; k<nb; k++){
      if( (za ? za[k] : 0)!=(zb ? zb[k] : 0) ) return false;
    }
  }
  for(int64_t i=0; i<x.nLeft; i++){
    if( x.aLeftKey[i]!=y.aLeftKey[i] || x.aLeftRow[i]!=y.aLeftRow[i] ) return false;
  }
  return true;
}

// Load s into the CUDA set *pg and the host set *ph.
static void loadBoth(const AgSet &s, gpuds_cols **pg, gpuds_cols **ph){
  char *zErr = nullptr;
  int rc = G->xLoad(pg, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, &zErr);
  if( rc!=GPUDS_OK ){ fprintf(stderr, "xLoad: %d %s\n", rc, zErr ? zErr : ""); exit(1); }
  free(zErr);
  rc = H->xLoad(ph, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, nullptr);
  if( rc!=GPUDS_OK ){ fprintf(stderr, "host xLoad: %d\n", rc); exit(1); }
}

struct Tally { int64_t nReq = 0, nGroup = 0, nLeft = 0, nDiff = 0, nRepeat = 0, nPath = 0; };

// Request a on both sets: the GPU's result against the host's, then the
// GPU's again (bit for bit) and with the other paths forced.
static void checkOne(gpuds_cols *g, gpuds_cols *h, const AgSet &s, const gpuds_agg &a,
                     const char *zWhat, Tally &T){
  gpuds_aggres rh, r1, r2, r3;
  int rcH = H->xAgg(h, &a, &rh);
  int rc1 = G->xAgg(g, &a, &r1);
  T.nReq++;
  CHECK(rc1==rcH, "%s: rc %d, host %d (%s)", zWhat, rc1, rcH, G->xErrmsg(g));
  if( rc1==GPUDS_OK && rcH==GPUDS_OK ){
    T.nGroup += rh.nGroup; T.nLeft += rh.nLeft;
    if( agCompare(&s, &a, &r1, &rh, zWhat) ){ T.nDiff++; CHECK(false, "%s: differs from the host", zWhat); }
    int rc2 = G->xAgg(g, &a, &r2);
    CHECK(rc2==GPUDS_OK && sameBits(r1, r2, a.nKey, a.nFn), "%s: a second run differs", zWhat);
    if( rc2==GPUDS_OK ) T.nRepeat++;
    gpudsAggResFree(&r2);
    // groups sorted (no fused pass), chunks of 32 x 1..4 rows, warp or
    // block merges, one to three aggregates a launch
    gpudsCudaColsAggTune(g, 1, 1 + (int64_t)agBelow(&gR, 4), agBelow(&gR, 2) ? 1 : 1000000,
                         1 + (int)agBelow(&gR, 3));
    int rc3 = G->xAgg(g, &a, &r3);
    gpudsCudaColsAggTune(g, 0, 0, 0, 0);
    CHECK(rc3==GPUDS_OK, "%s: other paths: rc %d (%s)", zWhat, rc3, G->xErrmsg(g));
    if( rc3==GPUDS_OK ){
      std::string z = std::string(zWhat) + " (other paths)";
      if( agCompare(&s, &a, &r3, &rh, z.c_str()) ){ T.nDiff++; CHECK(false, "%s: differs from the host", z.c_str()); }
      T.nPath++;
    }
    gpudsAggResFree(&r3);
  }else{
    CHECK(r1.nGroup==0 && r1.aRows==nullptr && r1.nLeft==0, "%s: a failed call left a result", zWhat);
  }
  gpudsAggResFree(&rh);
  gpudsAggResFree(&r1);
}

// Random sets of several sizes, random requests on each.
static void testRandom(){
  std::vector<int64_t> aN = {0, 1, 2, 100, 257, 1000, 3000, 3000, 70000};
  if( !gSmall ){ aN.push_back(300000); aN.push_back(1000000); }
  Tally T;
  for(int64_t n : aN){
    int nSets = gSmall ? (n>=70000 ? 1 : 2) : (n>=300000 ? 1 : n>=70000 ? 2 : 4);
    for(int k=0; k<nSets; k++){
      AgSet s;
      agSetMake(&gR, &s, n, 1 + (int)agBelow(&gR, 3), (int)agBelow(&gR, 4)!=0);
      gpuds_cols *g = nullptr, *h = nullptr;
      loadBoth(s, &g, &h);
      int nQ = gSmall ? (n>=70000 ? 3 : 12) : (n>=300000 ? 8 : n>=70000 ? 15 : 30);
      for(int i=0; i<nQ; i++){
        AgReq q;
        agReqMake(&gR, &q, &s);
        char z[128];
        snprintf(z, sizeof(z), "n=%" PRId64 " set %d (%s, %d cols) request %d (%d keys, %d aggregates)",
                 n, k, s.bSorted ? "sorted" : "unsorted", s.nCol, i, q.a.nKey, q.a.nFn);
        checkOne(g, h, s, q.a, z, T);
        agReqFree(&q);
      }
      G->xFree(g); H->xFree(h);
      agSetFree(&s);
    }
  }
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error in test");
  printf("random: %" PRId64 " requests, %" PRId64 " groups, %" PRId64 " leftover rows; "
         "%" PRId64 " repeated bit for bit, %" PRId64 " on the other paths; %" PRId64 " differ\n",
         T.nReq, T.nGroup, T.nLeft, T.nRepeat, T.nPath, T.nDiff);
}

// Requests outside the contract: GPUDS_MISUSE as the host says, nothing
// to free.
static void testMisuse(){
  AgSet s;
  agSetMake(&gR, &s, 100, 2, 1);
  gpuds_cols *g = nullptr, *h = nullptr;
  loadBoth(s, &g, &h);
  int nMisuse = 0, nReq = 0;
  for(int i=0; i<200; i++){
    AgReq q;
    agReqMake(&gR, &q, &s);
    agReqBreak(&gR, &q, s.nCol);
    gpuds_aggres rg, rh;
    int rcH = H->xAgg(h, &q.a, &rh), rcG = G->xAgg(g, &q.a, &rg);
    CHECK(rcG==rcH, "misuse %d: rc %d, host %d", i, rcG, rcH);
    if( rcG==GPUDS_MISUSE ){
      nMisuse++;
      CHECK(rg.nGroup==0 && rg.aRows==nullptr && rg.aN==nullptr && G->xErrmsg(g)[0], "misuse leaves a result");
    }
    nReq++;
    gpudsAggResFree(&rg); gpudsAggResFree(&rh);
    agReqFree(&q);
  }
  G->xFree(g); H->xFree(h);
  agSetFree(&s);
  printf("misuse: %d requests, %d refused as the host refuses them\n", nReq, nMisuse);
}

// Out of device memory: GPUDS_NOMEM with a message and no result; the set
// answers again once memory is there.
static void testNoMem(){
  AgSet s;
  agSetMake(&gR, &s, 100000, 3, 1);
  gpuds_cols *g = nullptr, *h = nullptr;
  loadBoth(s, &g, &h);
  int nNoMem = 0, nOk = 0;
  for(int i=0; i<12; i++){
    AgReq q;
    agReqMake(&gR, &q, &s);
    if( i%2 ){ q.a.nKey = 1; q.aKey[0].iCol = -1; q.aKey[0].op = GPUDS_AGGKEY_COL; }  // sorted groups
    gpudsCudaColsSetDeviceLimit(g, (uint64_t)G->xBytes(g) + 4096);
    gpuds_aggres r;
    int rc = G->xAgg(g, &q.a, &r);
    CHECK(rc==GPUDS_NOMEM || rc==GPUDS_OK, "under a device limit: rc %d", rc);
    if( rc==GPUDS_NOMEM ){
      nNoMem++;
      CHECK(G->xErrmsg(g)[0]!=0 && r.nGroup==0 && r.aRows==nullptr, "NOMEM: message, no result");
    }
    gpudsAggResFree(&r);
    gpudsCudaColsSetDeviceLimit(g, 0);
    Tally T;
    checkOne(g, h, s, q.a, "after lifting the device limit", T);
    nOk += T.nDiff==0;
    agReqFree(&q);
  }
  CHECK(nNoMem>0, "no request ran out of device memory");
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error after NOMEM");
  G->xFree(g); H->xFree(h);
  agSetFree(&s);
  printf("nomem: %d of 12 requests refused under a limit, %d right after it was lifted\n", nNoMem, nOk);
}

// ------------------------------------------------------------- bench --

// The issue's table: k INTEGER PRIMARY KEY (0..n-1, in order), v INTEGER
// (10^5 values), r REAL in [0, 100), s TEXT (1,000 values).
static void benchSet(AgSet *s, int64_t n){
  s->n = n; s->nCol = 3; s->bSorted = 1;
  s->aKey = (int64_t*)malloc((size_t)n*8);
  s->aRow = (uint64_t*)malloc((size_t)n*8);
  s->aTag = (uint8_t*)malloc((size_t)n*3);
  s->aVal = (uint64_t*)malloc((size_t)n*3*8);
  if( !s->aKey || !s->aRow || !s->aTag || !s->aVal ){ fprintf(stderr, "bench: out of memory\n"); exit(1); }
  std::vector<uint64_t> text(1000);
  for(int t=0; t<1000; t++){
    char z[32];
    int nz = snprintf(z, sizeof(z), "sensor-%04d", t);
    text[t] = gpudsColBytes((const unsigned char*)z, (uint32_t)nz);
  }
  for(int64_t i=0; i<n; i++){
    uint64_t x = agRnd(&gR);
    s->aKey[i] = i;
    s->aRow[i] = 0x100000 + (uint64_t)i;
    s->aTag[i] = GPUDS_TAG_INT; s->aVal[i] = (x & 0xffffffff) % 100000;
    s->aTag[n+i] = GPUDS_TAG_REAL; s->aVal[n+i] = gpudsColReal((double)(x>>40)*(100.0/16777216.0));
    s->aTag[2*n+i] = GPUDS_TAG_TEXT; s->aVal[2*n+i] = text[(x>>32) % 1000];
  }
}

static double msSince(std::chrono::steady_clock::time_point t0){
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One shape: GPU time (events) and wall time of xAgg, medians of 7 after 2
// warm-ups; the host backend's wall time (one run); the results compared.
static void benchShape(gpuds_cols *g, gpuds_cols *h, const AgSet &s, const gpuds_agg &a, const char *zName,
                       bool bHost){
  std::vector<double> tg, tw;
  gpuds_aggres r;
  int64_t nG = 0;
  gpudsCudaColsAggTime(g);
  for(int k=0; k<9; k++){
    auto t0 = std::chrono::steady_clock::now();
    int rc = G->xAgg(g, &a, &r);
    double w = msSince(t0);
    CHECK(rc==GPUDS_OK, "%s: rc %d %s", zName, rc, G->xErrmsg(g));
    nG = r.nGroup;
    if( k>=2 ){ tg.push_back(gpudsCudaColsAggTime(g)); tw.push_back(w); }
    if( k<8 ) gpudsAggResFree(&r);
  }
  std::sort(tg.begin(), tg.end());
  std::sort(tw.begin(), tw.end());
  double hms = -1;
  const char *zOk = "not compared";
  if( bHost ){
    gpuds_aggres rh;
    auto t0 = std::chrono::steady_clock::now();
    int rc = H->xAgg(h, &a, &rh);
    hms = msSince(t0);
    CHECK(rc==GPUDS_OK, "%s: host rc %d", zName, rc);
    zOk = rc==GPUDS_OK && agCompare(&s, &a, &r, &rh, zName)==0 ? "same as host" : "DIFFERS";
    if( zOk[0]=='D' ) CHECK(false, "%s: differs from the host", zName);
    gpudsAggResFree(&rh);
  }
  gpudsAggResFree(&r);
  printf("bench n=%" PRId64 " %-44s %8" PRId64 " groups  gpu %8.3f ms  wall %8.3f ms  host %9.2f ms  %s\n",
         s.n, zName, nG, tg[tg.size()/2], tw[tw.size()/2], hms, zOk);
}

static void bench(int64_t n){
  uint64_t nFree = 0, nTotal = 0;
  cudaMemGetInfo(&nFree, &nTotal);
  if( (double)nFree < (double)n*43*2.2 ){
    printf("bench n=%" PRId64 ": SKIPPED, %.1f GiB free on the device\n", n, nFree/1073741824.0);
    return;
  }
  AgSet s;
  benchSet(&s, n);
  gpuds_cols *g = nullptr, *h = nullptr;
  loadBoth(s, &g, &h);
  // at 10^8 the host backend's runs and the comparisons take minutes:
  // only with GPUDS_BENCH_HOST=1
  const bool bHost = n<=10000000 || (getenv("GPUDS_BENCH_HOST") && atoi(getenv("GPUDS_BENCH_HOST")));
  gpuds_term t[1];
  gpuds_aggkey k[1];
  gpuds_aggfn f[3];
  gpuds_agg a;
  auto reset = [&](){
    memset(&a, 0, sizeof(a)); memset(t, 0, sizeof(t)); memset(k, 0, sizeof(k)); memset(f, 0, sizeof(f));
    a.q.lo = INT64_MIN; a.q.hi = INT64_MAX; a.q.aTerm = t; a.aKey = k; a.aFn = f; a.iRepFn = -1;
  };
  // count(*), sum(v) WHERE r > 50 (half the rows), r > 99 (1%)
  for(double x : {50.0, 99.0}){
    reset();
    t[0].iCol = 1; t[0].op = GPUDS_CMP_GT; t[0].tag = GPUDS_TAG_REAL; t[0].val = gpudsColReal(x);
    a.q.nTerm = 1;
    f[0].fn = GPUDS_AGG_COUNTSTAR; f[1].fn = GPUDS_AGG_SUM; f[1].iCol = 0; a.nFn = 2;
    benchShape(g, h, s, a, x==50.0 ? "count(*), sum(v) WHERE r > 50" : "count(*), sum(v) WHERE r > 99", bHost);
  }
  // GROUP BY v % 100: count(*), avg(r)
  reset();
  k[0].iCol = 0; k[0].op = GPUDS_AGGKEY_MOD; k[0].n = 100; a.nKey = 1;
  f[0].fn = GPUDS_AGG_COUNTSTAR; f[1].fn = GPUDS_AGG_SUM; f[1].iCol = 1; a.nFn = 2;
  benchShape(g, h, s, a, "GROUP BY v % 100: count(*), avg(r)", bHost);
  // GROUP BY s WHERE v < 50000: count(*), avg(r)
  reset();
  t[0].iCol = 0; t[0].op = GPUDS_CMP_LT; t[0].tag = GPUDS_TAG_INT; t[0].val = 50000; a.q.nTerm = 1;
  k[0].iCol = 2; k[0].op = GPUDS_AGGKEY_COL; a.nKey = 1;
  f[0].fn = GPUDS_AGG_COUNTSTAR; f[1].fn = GPUDS_AGG_SUM; f[1].iCol = 1; a.nFn = 2;
  benchShape(g, h, s, a, "GROUP BY s WHERE v < 50000: count(*), avg(r)", bHost);
  // count(DISTINCT v)
  reset();
  f[0].fn = GPUDS_AGG_COUNTD; f[0].iCol = 0; a.nFn = 1;
  benchShape(g, h, s, a, "count(DISTINCT v)", bHost);
  // sum(r) over half the key range
  reset();
  a.q.lo = n/4; a.q.hi = n/4 + n/2 - 1;
  f[0].fn = GPUDS_AGG_SUM; f[0].iCol = 1; a.nFn = 1;
  benchShape(g, h, s, a, "sum(r) over half the key range", bHost);
  // GROUP BY k / 10 (n/10 groups): count(*), sum(v)
  reset();
  k[0].iCol = -1; k[0].op = GPUDS_AGGKEY_DIV; k[0].n = 10; a.nKey = 1;
  f[0].fn = GPUDS_AGG_COUNTSTAR; f[1].fn = GPUDS_AGG_SUM; f[1].iCol = 0; a.nFn = 2;
  benchShape(g, h, s, a, "GROUP BY k / 10: count(*), sum(v)", bHost);
  // GROUP BY v (10^5 groups): count(*), min(r), max(r)
  reset();
  k[0].iCol = 0; k[0].op = GPUDS_AGGKEY_COL; a.nKey = 1;
  f[0].fn = GPUDS_AGG_COUNTSTAR; f[1].fn = GPUDS_AGG_MIN; f[1].iCol = 1;
  f[2].fn = GPUDS_AGG_MAX; f[2].iCol = 1; a.nFn = 3;
  benchShape(g, h, s, a, "GROUP BY v: count(*), min(r), max(r)", bHost);
  // count(*) WHERE v = 4242 (about 100 rows)
  reset();
  t[0].iCol = 0; t[0].op = GPUDS_CMP_EQ; t[0].tag = GPUDS_TAG_INT; t[0].val = 4242; a.q.nTerm = 1;
  f[0].fn = GPUDS_AGG_COUNTSTAR; a.nFn = 1;
  benchShape(g, h, s, a, "count(*) WHERE v = 4242", bHost);
  printf("bench n=%" PRId64 ": device bytes held after the shapes %.1f MiB (the set's arrays %.1f MiB)\n",
         n, G->xBytes(g)/1048576.0, n*43/1048576.0);
  G->xFree(g); H->xFree(h);
  agSetFree(&s);
}

int main(int argc, char **argv){
  char zDev[256];
  uint64_t nFree = 0;
  bool bBench = argc>1 && strcmp(argv[1], "bench")==0;
  bool bBench8 = argc>1 && strcmp(argv[1], "bench8")==0;
  if( !gpuTestStart(argc, argv, zDev, sizeof(zDev), &nFree) ) return 77;
  const char *zSeed = getenv("GPUDS_TEST_SEED");
  gR.s = zSeed ? strtoull(zSeed, nullptr, 0) : 20261127;
  printf("device: %s, %.1f GiB free; mode: %s; seed %llu (GPUDS_TEST_SEED)\n", zDev,
         nFree/1073741824.0, bBench ? "bench" : bBench8 ? "bench8" : gSmall ? "small" : "full",
         (unsigned long long)gR.s);
  if( bBench || bBench8 ){
    bench(bBench8 ? 100000000 : 10000000);
  }else{
    testMisuse();
    testNoMem();
    testRandom();
  }
  if( gFail ){
    printf("FAILED: %d checks\n", gFail.load());
    return 1;
  }
  printf("PASS\n");
  return 0;
}
