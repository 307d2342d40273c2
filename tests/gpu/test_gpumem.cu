// test_gpumem.cu -- the process's account of device memory and its cap,
// GPUDS_GPU_MEMORY (kernels/common/devmem.cuh), on the CUDA stores and
// column set directly:
//   1. the account holds exactly what the stores and the column set say
//      they hold (xInfo's device_bytes, xBytes), and nothing once they are
//      freed;
//   2. a cap of 0 refuses even an empty store (GPUDS_NOMEM, the message
//      naming the cap);
//   3. under a cap, a store's growth past it fails with GPUDS_NOMEM and a
//      message that starts with the cap, the store unchanged, and the
//      account never passes the cap;
//   4. four threads, a store each, under one cap: the account (atomics)
//      never passes it, some allocations are refused, and every byte comes
//      back.
// Random keys from a printed seed.  Exit 0: all passed; 1: a failure; 77:
// SKIPPED (no usable CUDA device).  Argument "small": smaller sizes (for
// compute-sanitizer runs).
#include "gpuds_backend.h"
#include "gpuds_config.h"
#include "gpuds_colval.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

// Set GPUDS_GPU_MEMORY (NULL: unset) and read the configuration again.
static void setCap(const char *z){
  if( z ) setenv("GPUDS_GPU_MEMORY", z, 1);
  else unsetenv("GPUDS_GPU_MEMORY");
  char zErr[300];
  if( gpudsConfigLoad(zErr, sizeof(zErr)) ){
    fprintf(stderr, "cannot set GPUDS_GPU_MEMORY=%s: %s\n", z ? z : "", zErr);
    exit(1);
  }
}

static uint64_t held(){
  gpuds_gpumem m;
  gpudsGpuMemory(&m);
  return m.nHeld;
}

// The device_bytes of a store's xInfo.
static uint64_t deviceBytes(const gpuds_store_ops *pOps, gpuds_store *p){
  char z[4096];
  pOps->xInfo(p, z, sizeof(z));
  const char *k = strstr(z, "\"device_bytes\":");
  return k ? strtoull(k + 15, nullptr, 10) : 0;
}

// Up to n distinct random keys, ascending.
static std::vector<int64_t> sortedKeys(std::mt19937_64 &rng, size_t n){
  std::vector<int64_t> a(n);
  for( size_t i=0; i<n; i++ ) a[i] = (int64_t)rng();
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

static void testAccount(uint64_t seed, size_t n){
  std::mt19937_64 rng(seed);
  uint64_t h0 = held();
  CHECK(h0==0, "the account starts empty (holds %" PRIu64 ")", h0);
  gpuds_store *g = nullptr, *h = nullptr;
  char *zErr = nullptr;
  CHECK(gpudsCudaOrderedOps.xCreate(&g, &zErr)==GPUDS_OK, "gfsl xCreate: %s", zErr ? zErr : "");
  free(zErr); zErr = nullptr;
  CHECK(gpudsCudaHashOps.xCreate(&h, &zErr)==GPUDS_OK, "hash xCreate: %s", zErr ? zErr : "");
  free(zErr); zErr = nullptr;
  if( !g || !h ) return;
  std::vector<int64_t> k = sortedKeys(rng, n);
  std::vector<uint64_t> v(k.size());
  for( size_t i=0; i<k.size(); i++ ) v[i] = (uint64_t)k[i] * 3 + 1;
  CHECK(gpudsCudaOrderedOps.xBulkLoad(g, k.size(), k.data(), v.data())==GPUDS_OK, "gfsl bulk load");
  CHECK(gpudsCudaHashOps.xBulkLoad(h, k.size(), k.data(), v.data())==GPUDS_OK, "hash bulk load");
  std::vector<uint8_t> tag(k.size());
  for( size_t i=0; i<k.size(); i++ ) tag[i] = GPUDS_TAG_INT;
  gpuds_cols *c = nullptr;
  CHECK(gpudsCudaColsOps.xLoad(&c, 1, (int64_t)k.size(), 1, k.data(), v.data(), tag.data(),
                               v.data(), &zErr)==GPUDS_OK, "cols xLoad: %s", zErr ? zErr : "");
  free(zErr); zErr = nullptr;
  uint64_t sum = deviceBytes(&gpudsCudaOrderedOps, g) + deviceBytes(&gpudsCudaHashOps, h)
               + (c ? (uint64_t)gpudsCudaColsOps.xBytes(c) : 0);
  CHECK(held()==sum, "the account holds what the structures say: %" PRIu64 " vs %" PRIu64,
        held(), sum);
  gpudsCudaOrderedOps.xDestroy(g);
  gpudsCudaHashOps.xDestroy(h);
  if( c ) gpudsCudaColsOps.xFree(c);
  CHECK(held()==0, "every byte back once freed (holds %" PRIu64 ")", held());
  printf("account: %zu keys in a gfsl, a hash store and a column set: %" PRIu64 " bytes\n",
         k.size(), sum);
}

static void testCapZero(){
  setCap("0");
  gpuds_store *g = nullptr;
  char *zErr = nullptr;
  int rc = gpudsCudaOrderedOps.xCreate(&g, &zErr);
  CHECK(rc==GPUDS_NOMEM && g==nullptr, "a cap of 0 refuses an empty gfsl store (rc %d)", rc);
  CHECK(zErr && strstr(zErr, "the GPU memory cap (GPUDS_GPU_MEMORY=0) would be exceeded"),
        "the message names the cap: %s", zErr ? zErr : "(none)");
  free(zErr); zErr = nullptr;
  gpuds_store *h = nullptr;
  rc = gpudsCudaHashOps.xCreate(&h, &zErr);
  CHECK(rc==GPUDS_NOMEM && h==nullptr, "a cap of 0 refuses an empty hash store (rc %d)", rc);
  free(zErr);
  CHECK(held()==0, "nothing held after the refusals (%" PRIu64 ")", held());
  setCap(nullptr);
}

// Grow store p (ops pOps) by batches of random upserts until it fails;
// the failure must be the cap's, all-or-nothing, and the account under it.
static void growUntilRefused(const gpuds_store_ops *pOps, uint64_t seed, uint64_t cap,
                             size_t nBatch){
  std::mt19937_64 rng(seed);
  gpuds_store *p = nullptr;
  char *zErr = nullptr;
  if( pOps->xCreate(&p, &zErr)!=GPUDS_OK ){
    CHECK(false, "%s xCreate under the cap: %s", pOps->zBackend, zErr ? zErr : "");
    free(zErr);
    return;
  }
  std::vector<uint8_t> op(nBatch, GPUDS_OP_UPSERT);
  std::vector<int64_t> k(nBatch);
  std::vector<uint64_t> v(nBatch);
  int rc = GPUDS_OK;
  int nOk = 0;
  while( rc==GPUDS_OK && nOk<10000 ){
    for( size_t i=0; i<nBatch; i++ ){ k[i] = (int64_t)(rng() >> 1); v[i] = (uint64_t)i; }
    std::sort(k.begin(), k.end());
    k.erase(std::unique(k.begin(), k.end()), k.end());
    int64_t nBefore = pOps->xCount(p);
    rc = pOps->xBatch(p, k.size(), op.data(), k.data(), v.data(), nullptr, nullptr);
    CHECK(held()<=cap, "%s: the account passed the cap: %" PRIu64 " > %" PRIu64,
          pOps->kind==GPUDS_ORDERED ? "gfsl" : "hash", held(), cap);
    if( rc==GPUDS_OK ){ nOk++; continue; }
    const char *zMsg = pOps->xErrmsg(p);
    CHECK(rc==GPUDS_NOMEM, "the refusal is GPUDS_NOMEM (%d: %s)", rc, zMsg);
    CHECK(strstr(zMsg, "the GPU memory cap (GPUDS_GPU_MEMORY=")==zMsg,
          "the message starts with the cap: %s", zMsg);
    if( !strstr(zMsg, "no longer usable") ){
      CHECK(pOps->xCount(p)==nBefore, "the refused batch changed nothing (%" PRId64 " -> %" PRId64 ")",
            nBefore, pOps->xCount(p));
      CHECK(pOps->xCheck(p)==GPUDS_OK, "the store's invariants hold: %s", pOps->xErrmsg(p));
    }
    printf("%s: %d batches of %zu under a cap of %" PRIu64 " bytes, then: %s\n",
           pOps->kind==GPUDS_ORDERED ? "gfsl" : "hash", nOk, nBatch, cap, zMsg);
  }
  CHECK(rc!=GPUDS_OK, "the store grew past the cap without a refusal");
  pOps->xDestroy(p);
  CHECK(held()==0, "every byte back (%" PRIu64 ")", held());
}

static void testCap(uint64_t seed, size_t nBatch){
  const uint64_t cap = (uint64_t)(gSmall ? 4 : 64) << 20;
  char z[32];
  snprintf(z, sizeof(z), "%" PRIu64 "", cap);
  setCap(z);
  growUntilRefused(&gpudsCudaOrderedOps, seed, cap, nBatch);
  growUntilRefused(&gpudsCudaHashOps, seed + 1, cap, nBatch);
  setCap(nullptr);
}

static void testThreads(uint64_t seed, size_t nBatch){
  const uint64_t cap = (uint64_t)(gSmall ? 8 : 128) << 20;
  char z[32];
  snprintf(z, sizeof(z), "%" PRIu64 "", cap);
  setCap(z);
  gpuds_gpumem m0;
  gpudsGpuMemory(&m0);
  std::atomic<uint64_t> worst{0};
  std::atomic<int> nRefused{0};
  std::vector<std::thread> th;
  for( int t=0; t<4; t++ ){
    th.emplace_back([&, t](){
      const gpuds_store_ops *pOps = (t&1) ? &gpudsCudaHashOps : &gpudsCudaOrderedOps;
      std::mt19937_64 rng(seed + 10 + t);
      gpuds_store *p = nullptr;
      if( pOps->xCreate(&p, nullptr)!=GPUDS_OK ){ nRefused++; return; }
      std::vector<uint8_t> op(nBatch, GPUDS_OP_UPSERT);
      std::vector<int64_t> k(nBatch);
      std::vector<uint64_t> v(nBatch, 5);
      for( int b=0; b<200; b++ ){
        for( size_t i=0; i<nBatch; i++ ) k[i] = (int64_t)(rng() >> 1);
        std::sort(k.begin(), k.end());
        k.erase(std::unique(k.begin(), k.end()), k.end());
        int rc = pOps->xBatch(p, k.size(), op.data(), k.data(), v.data(), nullptr, nullptr);
        uint64_t x = held(), w = worst.load();
        while( x>w && !worst.compare_exchange_weak(w, x) ){}
        if( rc!=GPUDS_OK ){ nRefused++; break; }
      }
      pOps->xDestroy(p);
    });
  }
  for( auto &t : th ) t.join();
  gpuds_gpumem m;
  gpudsGpuMemory(&m);
  CHECK(worst.load()<=cap, "four threads: the account passed the cap: %" PRIu64 " > %" PRIu64,
        worst.load(), cap);
  CHECK(nRefused.load()>0 && m.nRefusedCap>m0.nRefusedCap,
        "four threads: the cap refused some allocations (%d stores stopped)", nRefused.load());
  CHECK(m.nHeld==0, "four threads: every byte back (%" PRIu64 ")", m.nHeld);
  printf("threads: 4 stores under a cap of %" PRIu64 " bytes: held at most %" PRIu64
         ", %d stopped by the cap\n", cap, worst.load(), nRefused.load());
  setCap(nullptr);
}

int main(int argc, char **argv){
  char zDev[256];
  uint64_t nFree = 0;
  if( !gpuTestStart(argc, argv, zDev, sizeof(zDev), &nFree) ) return 77;
  uint64_t seed = getenv("GPUDS_TEST_SEED") ? strtoull(getenv("GPUDS_TEST_SEED"), nullptr, 0)
                                            : (uint64_t)time(nullptr);
  printf("device: %s; seed %" PRIu64 " (GPUDS_TEST_SEED=%" PRIu64 " replays it)%s\n",
         zDev, seed, seed, gSmall ? "; small" : "");
  setCap(nullptr);
  testAccount(seed, gSmall ? 20000 : 2000000);
  testCapZero();
  testCap(seed, gSmall ? 4096 : 65536);
  testThreads(seed, gSmall ? 4096 : 65536);
  printf("%s: %d failure(s)\n", gFail ? "FAILED" : "PASSED", gFail.load());
  return gFail ? 1 : 0;
}
