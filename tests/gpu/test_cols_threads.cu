// test_cols_threads.cu -- the CUDA column set (gpudsCudaColsOps) under
// concurrent read calls, as the connections of one process make them on
// one shared set (bConcurrentReads): T threads issue random xQuery and xAgg
// calls on ONE CUDA set at once, and each answer is compared with the host
// column set's (gpudsHostColsOps) on the same rows.
//   1. racing equality-index builds: every thread's first calls are
//      equality filters on the columns in turn, whose indexes are not built
//      yet (a column's index is built at its second such query);
//   2. a random mix: equality filters (the one-pass path, the indexes),
//      key ranges, top-k ordered by a column with sort keys, LIMIT hints
//      (nFirst), caps (nMost), aggregation requests (tests/agg_gen.h), a
//      call on a column the set lacks (GPUDS_MISUSE and its message, on the
//      thread that made it), xBytes; then the process's device-memory
//      account must hold exactly what the sets say (xBytes), and nothing
//      once they are freed;
//   3. a failed call among good ones: on a fresh set, one thread's device
//      allocations are made to fail (gpudsCudaColsFailThread) while its
//      xAgg needs a workspace no earlier call on that set made (aSt): that
//      call gets GPUDS_NOMEM and the allocation's message on its thread;
//      the other threads' queries, running meanwhile, stay right, and their
//      xErrmsg stays empty; the failed request then succeeds.
// Sorted and shuffled keys.  Usage: test_cols_threads [small] [T]
//   small  fewer rows and calls (compute-sanitizer);  T  threads (8).
// GPUDS_TEST_SEED repeats a run (the seed is printed).  Exit 0 passed, 1
// failed, 77 SKIPPED (no usable CUDA device).
#include "gpuds_backend.h"
#include "gpuds_colval.h"

#include <cuda_runtime.h>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "cols.cuh"
#include "check.h"
#include "agg_gen.h"

static const gpuds_cols_ops *G = &gpudsCudaColsOps;
static const gpuds_cols_ops *H = &gpudsHostColsOps;

static uint64_t gSeed = 0;
static int gThreads = 8;

// Calls per thread in phase 2, rows of a set.
static int nCalls(){ return gSmall ? 24 : 120; }
static int64_t nRows(){ return gSmall ? 20000 : 200000; }

static uint64_t held(){
  gpuds_gpumem m;
  gpudsGpuMemory(&m);
  return m.nHeld;
}

// A query with the storage its pointers use.
struct Q {
  gpuds_query q;
  gpuds_term aT[2];
  bool bSort;                // ask for the sort keys
};

enum { kEq, kRange, kTopk, kMisuse, kKinds };

// A value of column c of s (a random row's).
static void colValue(AgRng *g, const AgSet &s, int c, gpuds_term *pT){
  size_t o = (size_t)c*(size_t)s.n + agBelow(g, (uint64_t)s.n);
  pT->tag = s.aTag[o];
  pT->val = s.aVal[o];
}

// Two keys of s in order (a key range that holds rows).
static void keyRange(AgRng *g, const AgSet &s, int64_t *pLo, int64_t *pHi){
  int64_t x = s.aKey[agBelow(g, (uint64_t)s.n)], y = s.aKey[agBelow(g, (uint64_t)s.n)];
  *pLo = x<y ? x : y;
  *pHi = x<y ? y : x;
}

// A random query of the given kind on s; kEq filters column col.
static void makeQuery(AgRng *g, const AgSet &s, int kind, int col, Q *x){
  static const int aOp[] = {GPUDS_CMP_LT, GPUDS_CMP_GE, GPUDS_CMP_NE, GPUDS_CMP_NOTNULL};
  static const int64_t aFirst[] = {0, 0, 1, 10, 100};
  gpuds_query *q = &x->q;
  memset(x, 0, sizeof(*x));
  q->lo = INT64_MIN; q->hi = INT64_MAX;
  q->iOrderCol = -1;
  q->aTerm = x->aT;
  switch( kind ){
    case kEq:
      x->aT[0].iCol = col;
      if( agBelow(g, 8)==0 ){
        x->aT[0].op = GPUDS_CMP_ISNULL;
      }else{
        x->aT[0].op = GPUDS_CMP_EQ;
        colValue(g, s, col, &x->aT[0]);
      }
      q->nTerm = 1;
      if( agBelow(g, 4)==0 ){                        // and a second term
        x->aT[1].iCol = (int)agBelow(g, (uint64_t)s.nCol);
        x->aT[1].op = aOp[agBelow(g, 4)];
        colValue(g, s, x->aT[1].iCol, &x->aT[1]);
        q->nTerm = 2;
      }
      if( agBelow(g, 4)==0 ) keyRange(g, s, &q->lo, &q->hi);
      q->bDesc = (int)agBelow(g, 2);
      q->nFirst = aFirst[agBelow(g, 5)];
      if( agBelow(g, 6)==0 ) q->nMost = (int64_t)agBelow(g, 200);
      break;
    case kRange:
      keyRange(g, s, &q->lo, &q->hi);
      if( agBelow(g, 2) ){
        x->aT[0].iCol = (int)agBelow(g, (uint64_t)s.nCol);
        x->aT[0].op = aOp[agBelow(g, 4)];
        colValue(g, s, x->aT[0].iCol, &x->aT[0]);
        q->nTerm = 1;
      }
      q->bDesc = (int)agBelow(g, 2);
      q->nFirst = aFirst[agBelow(g, 5)];
      break;
    case kTopk:
      if( agBelow(g, 3)==0 ) keyRange(g, s, &q->lo, &q->hi);
      if( agBelow(g, 3)==0 ){
        x->aT[0].iCol = (int)agBelow(g, (uint64_t)s.nCol);
        x->aT[0].op = aOp[agBelow(g, 4)];
        colValue(g, s, x->aT[0].iCol, &x->aT[0]);
        q->nTerm = 1;
      }
      q->iOrderCol = (int)agBelow(g, (uint64_t)s.nCol);
      q->bDesc = (int)agBelow(g, 2);
      q->nFirst = 1 + (int64_t)agBelow(g, 3)*(int64_t)agBelow(g, 50);
      x->bSort = agBelow(g, 2)!=0;
      break;
    default:                                         // kMisuse
      x->aT[0].iCol = s.nCol;
      x->aT[0].op = GPUDS_CMP_ISNULL;
      q->nTerm = 1;
      break;
  }
}

// Run query x on both sets; every field must agree.  Returns the GPU's rc.
static int compareQuery(gpuds_cols *g, gpuds_cols *h, const Q &x, const char *zWhat){
  const gpuds_query &q = x.q;
  int64_t nG = -1, nH = -1;
  int64_t *kG = nullptr, *kH = nullptr;
  uint64_t *rG = nullptr, *rH = nullptr, *sG = nullptr, *sH = nullptr;
  int rcG = G->xQuery(g, &q, &nG, &kG, &rG, x.bSort ? &sG : nullptr);
  const char *zErr = G->xErrmsg(g);
  if( rcG!=GPUDS_OK ){
    CHECK(zErr[0]!=0, "%s: rc %d with no message on the thread that failed", zWhat, rcG);
  }
  int rcH = H->xQuery(h, &q, &nH, &kH, &rH, x.bSort ? &sH : nullptr);
  CHECK(rcG==rcH, "%s: rc %d, host %d (%s)", zWhat, rcG, rcH, rcG ? zErr : "");
  if( rcG==GPUDS_OK && rcH==GPUDS_OK ){
    CHECK(nG==nH, "%s: %" PRId64 " rows, host %" PRId64 " (nTerm %d order %d desc %d nFirst %"
           PRId64 " nMost %" PRId64 ")", zWhat, nG, nH, q.nTerm, q.iOrderCol, q.bDesc, q.nFirst,
           q.nMost);
    if( nG==nH && nG>0 ){
      bool ok = memcmp(kG, kH, (size_t)nG*8)==0 && memcmp(rG, rH, (size_t)nG*8)==0;
      if( x.bSort && q.iOrderCol>=0 ) ok = ok && sG && sH && memcmp(sG, sH, (size_t)nG*8)==0;
      CHECK(ok, "%s: rows differ from the host's (n %" PRId64 " nTerm %d order %d desc %d nFirst %"
             PRId64 ")", zWhat, nG, q.nTerm, q.iOrderCol, q.bDesc, q.nFirst);
    }
  }
  free(kG); free(kH); free(rG); free(rH); free(sG); free(sH);
  return rcG;
}

// Run request a on both sets; every field must agree (agCompare).
static int compareAgg(gpuds_cols *g, gpuds_cols *h, const AgSet &s, const gpuds_agg &a,
                      const char *zWhat){
  gpuds_aggres rg, rh;
  int rcG = G->xAgg(g, &a, &rg);
  const char *zErr = G->xErrmsg(g);
  int rcH = H->xAgg(h, &a, &rh);
  CHECK(rcG==rcH, "%s: rc %d, host %d (%s)", zWhat, rcG, rcH, rcG ? zErr : "");
  if( rcG==GPUDS_OK && rcH==GPUDS_OK ){
    int nDiff;
    {
      std::lock_guard<std::mutex> lk(gFailPrint);    // (agCompare prints)
      nDiff = agCompare(&s, &a, &rg, &rh, zWhat);
    }
    CHECK(nDiff==0, "%s: the aggregate differs from the host's", zWhat);
  }
  gpudsAggResFree(&rg);
  gpudsAggResFree(&rh);
  return rcG;
}

// Start all threads' calls at once.
struct Gate {
  std::atomic<int> nIn{0};
  void wait(int n){ nIn++; while( nIn.load()<n ) std::this_thread::yield(); }
};

// Load s into the CUDA set *pg and the host set *ph.
static bool loadBoth(const AgSet &s, gpuds_cols **pg, gpuds_cols **ph){
  char *zErr = nullptr;
  int rc = G->xLoad(pg, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, &zErr);
  CHECK(rc==GPUDS_OK, "xLoad: %d %s", rc, zErr ? zErr : "");
  free(zErr);
  if( rc ) return false;
  rc = H->xLoad(ph, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, nullptr);
  CHECK(rc==GPUDS_OK, "host xLoad: %d", rc);
  if( rc ){ G->xFree(*pg); return false; }
  return true;
}

// Phases 1 and 2 on one set of s's rows.
static void testMix(const AgSet &s){
  gpuds_cols *g = nullptr, *h = nullptr;
  if( !loadBoth(s, &g, &h) ) return;
  const char *zKeys = s.bSorted ? "sorted" : "shuffled";
  Gate gate;
  std::atomic<int64_t> aN[kKinds + 1];
  for(auto &n : aN) n = 0;
  auto worker = [&](int t){
    AgRng r = { gSeed*1000003 + (uint64_t)t*7919 + (s.bSorted ? 1 : 2) };
    char z[128];
    gate.wait(gThreads);
    // 1. the first equality filters of every thread, on each column in
    // turn: the second query of a column builds its index, so the threads
    // race to build it
    for(int c=0; c<s.nCol; c++){
      for(int k=0; k<2; k++){
        Q x;
        makeQuery(&r, s, kEq, c, &x);
        snprintf(z, sizeof(z), "%s keys, thread %d, first filters on column %d (%d)", zKeys, t, c, k);
        compareQuery(g, h, x, z);
        aN[kEq]++;
      }
    }
    // 2. the mix
    for(int i=0; i<nCalls(); i++){
      const uint64_t u = agBelow(&r, 100);
      if( u<35 ){
        AgReq a;
        agReqMake(&r, &a, &s);
        snprintf(z, sizeof(z), "%s keys, thread %d, call %d (xAgg)", zKeys, t, i);
        compareAgg(g, h, s, a.a, z);
        agReqFree(&a);
        aN[kKinds]++;
        continue;
      }
      const int kind = u<60 ? kEq : u<78 ? kRange : u<97 ? kTopk : kMisuse;
      Q x;
      makeQuery(&r, s, kind, (int)agBelow(&r, (uint64_t)s.nCol), &x);
      snprintf(z, sizeof(z), "%s keys, thread %d, call %d (kind %d)", zKeys, t, i, kind);
      int rc = compareQuery(g, h, x, z);
      if( kind==kMisuse ){
        CHECK(rc==GPUDS_MISUSE && strstr(G->xErrmsg(g), "does not have"),
               "%s: misuse: rc %d, message \"%s\"", z, rc, G->xErrmsg(g));
      }
      aN[kind]++;
      if( agBelow(&r, 10)==0 ){
        int64_t nb = G->xBytes(g);
        CHECK(nb>=s.n*(16 + 9*(int64_t)s.nCol), "%s: xBytes %" PRId64 " below the arrays'", z, nb);
      }
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> aT;
  for(int t=0; t<gThreads; t++) aT.emplace_back(worker, t);
  for(auto &th : aT) th.join();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int nIdx = gpudsCudaColsIndexed(g), nCtx = gpudsCudaColsContexts(g);
  printf("mix (%s keys, %" PRId64 " rows, %d columns): %d threads, %.0f ms: %" PRId64
         " equality, %" PRId64 " range, %" PRId64 " top-k, %" PRId64 " misuse queries, %" PRId64
         " xAgg; %d indexes built, %d contexts\n", zKeys, s.n, s.nCol, gThreads, ms,
         aN[kEq].load(), aN[kRange].load(), aN[kTopk].load(), aN[kMisuse].load(),
         aN[kKinds].load(), nIdx, nCtx);
  CHECK(nIdx>0, "%s keys: no equality index was built", zKeys);
  CHECK(nCtx>=1 && nCtx<=gThreads, "%s keys: %d contexts for %d threads", zKeys, nCtx, gThreads);
  if( gThreads>1 ) CHECK(nCtx>1, "%s keys: the calls of %d threads never overlapped", zKeys, gThreads);
  // the account: exactly the set's bytes (nothing else holds device memory)
  CHECK(held()==(uint64_t)G->xBytes(g), "%s keys: the account holds %" PRIu64 ", the set %" PRId64,
         zKeys, held(), G->xBytes(g));
  G->xFree(g);
  H->xFree(h);
  CHECK(held()==0, "%s keys: %" PRIu64 " bytes held once the set is freed", zKeys, held());
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error after the mix");
}

// Phase 3: one thread's xAgg fails for want of device memory while the
// others' queries run.
static void testFailOne(const AgSet &s){
  gpuds_cols *g = nullptr, *h = nullptr;
  if( !loadBoth(s, &g, &h) ) return;
  Gate gate;
  std::atomic<int> nStarted{0};
  std::atomic<bool> bVictimDone{false};
  std::atomic<int64_t> nOthers{0};
  auto victim = [&](){
    AgRng r = { gSeed*31 + 5 };
    gate.wait(gThreads);
    // the others are running: each made a call
    while( nStarted.load()<gThreads-1 ) std::this_thread::yield();
    // a request the set takes (the host answers it); on this fresh set,
    // where only queries ran, its row classes need a new workspace
    AgReq a;
    for(;;){
      gpuds_aggres rh;
      agReqMake(&r, &a, &s);
      int rcH = H->xAgg(h, &a.a, &rh);
      gpudsAggResFree(&rh);
      if( rcH==GPUDS_OK ) break;
      agReqFree(&a);
    }
    gpudsCudaColsFailThread(1);
    gpuds_aggres rg;
    int rc = G->xAgg(g, &a.a, &rg);
    gpudsCudaColsFailThread(0);
    const char *zErr = G->xErrmsg(g);
    CHECK(rc==GPUDS_NOMEM, "the call whose allocations fail: rc %d (%s)", rc, zErr);
    CHECK(strstr(zErr, "a test failed this allocation")!=nullptr,
           "its message on its thread: \"%s\"", zErr);
    CHECK(rg.nGroup==0 && rg.aRows==nullptr && rg.nLeft==0, "a failed xAgg left a result");
    gpudsAggResFree(&rg);
    printf("fail one: the failed call: rc %d, \"%s\"\n", rc, zErr);
    bVictimDone = true;
    // the set answers the same request now
    compareAgg(g, h, s, a.a, "the failed request again");
    agReqFree(&a);
  };
  auto other = [&](int t){
    AgRng r = { gSeed*131 + (uint64_t)t };
    char z[96];
    gate.wait(gThreads);
    for(int i=0; i<nCalls() || !bVictimDone.load(); i++){
      Q x;
      makeQuery(&r, s, agBelow(&r, 2) ? kEq : agBelow(&r, 2) ? kRange : kTopk,
                (int)agBelow(&r, (uint64_t)s.nCol), &x);
      snprintf(z, sizeof(z), "fail one: thread %d, call %d", t, i);
      int rc = compareQuery(g, h, x, z);
      CHECK(rc==GPUDS_OK, "%s: rc %d beside the failed call", z, rc);
      if( i==0 ) nStarted++;
      nOthers++;
    }
    // this thread's calls all succeeded: no message is its
    CHECK(G->xErrmsg(g)[0]==0, "thread %d sees a message of another thread: \"%s\"", t,
           G->xErrmsg(g));
  };
  std::vector<std::thread> aT;
  aT.emplace_back(victim);
  for(int t=1; t<gThreads; t++) aT.emplace_back(other, t);
  for(auto &th : aT) th.join();
  printf("fail one: %" PRId64 " queries of %d other threads right beside it; %d contexts\n",
         nOthers.load(), gThreads-1, gpudsCudaColsContexts(g));
  CHECK(held()==(uint64_t)G->xBytes(g), "fail one: the account holds %" PRIu64 ", the set %" PRId64,
         held(), G->xBytes(g));
  G->xFree(g);
  H->xFree(h);
  CHECK(held()==0, "fail one: %" PRIu64 " bytes held once the set is freed", held());
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error after the failed call");
}

int main(int argc, char **argv){
  char zDev[256];
  uint64_t nFree = 0;
  if( !gpuTestStart(argc, argv, zDev, sizeof(zDev), &nFree) ) return 77;
  for(int i=1; i<argc; i++){
    if( atoi(argv[i])>0 ) gThreads = atoi(argv[i]);
  }
  const char *zSeed = getenv("GPUDS_TEST_SEED");
  gSeed = zSeed ? strtoull(zSeed, nullptr, 0)
                : (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  printf("device: %s, %.1f GiB free; sizes: %s; %d threads; seed %" PRIu64
         " (GPUDS_TEST_SEED repeats it)\n", zDev, nFree/1073741824.0, gSmall ? "small" : "full",
         gThreads, gSeed);
  if( held()!=0 ){ fprintf(stderr, "device memory held before the test\n"); return 1; }
  AgRng r = { gSeed };
  for(int bSorted=1; bSorted>=0; bSorted--){
    AgSet s;
    agSetMake(&r, &s, nRows(), 4, bSorted);
    testMix(s);
    if( !bSorted ) testFailOne(s);
    agSetFree(&s);
  }
  if( gFail ){
    printf("FAILED: %d checks (seed %" PRIu64 ")\n", gFail.load(), gSeed);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
