// test_hash.cu -- differential tests of the GPU hash store (gpudsCudaHashOps)
// against a std::unordered_map model and, when backend/host_hash.c is part
// of the build, against the host hash store gpudsHostHashOps too.
//
// Exit 0: all passed; 1: a failure; 77: SKIPPED (no usable CUDA device).
// Argument "small": smaller sizes (for compute-sanitizer runs).
// testChunked covers the chunked host transfers (xLookup pipeline, staged
// batch copies) with a small chunk, so the small size crosses many chunks.
// Every batch the stores get holds distinct keys (the backend contract of
// xBatch): Harness::batch drops a key's later occurrences (keepFirst) before
// it hands a batch to the GPU store, the host store and the model.
#include "gpuds_backend.h"
#include "distinct_keys.h"
#include "hash.cuh"

#include <cuda_runtime.h>
#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if __has_include("host_hash.c")
#define HAVE_HOST_HASH 1
#else
#define HAVE_HOST_HASH 0
#endif

#include "check.h"

static const gpuds_store_ops *G = &gpudsCudaHashOps;

static const int64_t kSpecial[] = {
  INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN+1, INT64_MAX-1,
  (int64_t)gpuds_hash::kEmptyKey, (int64_t)gpuds_hash::kTombKey,
  (int64_t)(gpuds_hash::kEmptyKey+1), (int64_t)(gpuds_hash::kTombKey-1),
};
static const int nSpecial = sizeof(kSpecial)/sizeof(kSpecial[0]);

typedef std::vector<std::pair<int64_t,uint64_t>> Pairs;

// The reference: a map applied one op after another.
struct Model {
  std::unordered_map<int64_t,uint64_t> m;
  void apply(size_t n, const uint8_t *op, const int64_t *key, const uint64_t *val,
             uint8_t *found, uint64_t *old){
    for( size_t i=0; i<n; i++ ){
      auto it = m.find(key[i]);
      found[i] = it!=m.end();
      old[i] = found[i] ? it->second : 0;
      if( op[i]==GPUDS_OP_UPSERT ) m[key[i]] = val ? val[i] : 0;
      else if( op[i]==GPUDS_OP_DELETE && it!=m.end() ) m.erase(it);
    }
  }
  Pairs sorted() const {
    Pairs v(m.begin(), m.end());
    std::sort(v.begin(), v.end());
    return v;
  }
};

// One GPU store, optionally the host store, and the model, driven together.
struct Harness {
  gpuds_store *g = nullptr;
  gpuds_store *h = nullptr;   // host store (when available)
  Model ref;
  std::string name;

  explicit Harness(const char *zName) : name(zName){
    char *zErr = nullptr;
    int rc = G->xCreate(&g, &zErr);
    if( rc!=GPUDS_OK ){
      fprintf(stderr, "xCreate failed: %d %s\n", rc, zErr ? zErr : "");
      exit(1);
    }
    free(zErr);
#if HAVE_HOST_HASH
    zErr = nullptr;
    rc = gpudsHostHashOps.xCreate(&h, &zErr);
    if( rc!=GPUDS_OK ){ fprintf(stderr, "host xCreate failed\n"); exit(1); }
    free(zErr);
#endif
  }
  ~Harness(){
    G->xDestroy(g);
#if HAVE_HOST_HASH
    gpudsHostHashOps.xDestroy(h);
#endif
  }

  // Apply the batch, less the later occurrences of a repeated key (keepFirst:
  // the stores get distinct keys, their contract), to all three; compare
  // every op's (found, old) and counts.  Returns the GPU results (of the
  // ops kept) in *pF/*pO when given.
  void batch(const std::vector<uint8_t> &op0, const std::vector<int64_t> &key0,
             const std::vector<uint64_t> &val0, bool check=true,
             std::vector<uint8_t> *pF=nullptr, std::vector<uint64_t> *pO=nullptr){
    std::vector<uint8_t> op(op0);
    std::vector<int64_t> key(key0);
    std::vector<uint64_t> val(val0);
    keepFirst(op, key, val);
    size_t n = op.size();
    std::vector<uint8_t> fG(n, 7), fR(n);
    std::vector<uint64_t> oG(n, 7), oR(n);
    int rc = G->xBatch(g, n, op.data(), key.data(), val.data(), fG.data(), oG.data());
    CHECK(rc==GPUDS_OK, "[%s] xBatch rc=%d %s", name.c_str(), rc, G->xErrmsg(g));
    if( rc!=GPUDS_OK ) return;
    ref.apply(n, op.data(), key.data(), val.data(), fR.data(), oR.data());
    size_t bad = 0;
    for( size_t i=0; i<n; i++ ){
      if( fG[i]!=fR[i] || oG[i]!=oR[i] ){
        if( bad<5 ) CHECK(false, "[%s] op %zu (op %d key %" PRId64 "): gpu (%d,%" PRIu64
                          ") model (%d,%" PRIu64 ")", name.c_str(), i, op[i], key[i],
                          fG[i], oG[i], fR[i], oR[i]);
        bad++;
      }
    }
    CHECK(bad==0, "[%s] %zu mismatching ops of %zu", name.c_str(), bad, n);
#if HAVE_HOST_HASH
    {
      std::vector<uint8_t> fH(n);
      std::vector<uint64_t> oH(n);
      const gpuds_store_ops &HO = gpudsHostHashOps;
      rc = HO.xBatch(h, n, op.data(), key.data(), val.data(), fH.data(), oH.data());
      CHECK(rc==GPUDS_OK, "[%s] host xBatch rc=%d", name.c_str(), rc);
      size_t badH = 0;
      for( size_t i=0; i<n; i++ ) badH += fH[i]!=fG[i] || oH[i]!=oG[i];
      CHECK(badH==0, "[%s] %zu ops differ between gpu and host store", name.c_str(), badH);
      CHECK(gpudsHostHashOps.xCount(h)==G->xCount(g), "[%s] host count %lld gpu %lld",
            name.c_str(), (long long)gpudsHostHashOps.xCount(h), (long long)G->xCount(g));
    }
#endif
    CHECK(G->xCount(g)==(int64_t)ref.m.size(), "[%s] count %lld model %zu", name.c_str(),
          (long long)G->xCount(g), ref.m.size());
    if( check ){
      rc = G->xCheck(g);
      CHECK(rc==GPUDS_OK, "[%s] xCheck: %s", name.c_str(), G->xErrmsg(g));
    }
    if( pF ) *pF = fG;
    if( pO ) *pO = oG;
  }

  // xLookup of keys, compared with the model; returns the number found.
  size_t lookup(const std::vector<int64_t> &key){
    size_t n = key.size(), nFound = 0, bad = 0;
    std::vector<uint8_t> f(n, 7);
    std::vector<uint64_t> v(n, 7);
    int rc = G->xLookup(g, n, key.data(), f.data(), v.data());
    CHECK(rc==GPUDS_OK, "[%s] xLookup rc=%d %s", name.c_str(), rc, G->xErrmsg(g));
    for( size_t i=0; i<n; i++ ){
      auto it = ref.m.find(key[i]);
      bool ef = it!=ref.m.end();
      uint64_t ev = ef ? it->second : 0;
      if( f[i]!=ef || v[i]!=ev ){
        if( bad<5 ) CHECK(false, "[%s] lookup %zu key %" PRId64 ": gpu (%d,%" PRIu64
                          ") model (%d,%" PRIu64 ")", name.c_str(), i, key[i], f[i], v[i],
                          ef, ev);
        bad++;
      }
      nFound += f[i];
    }
    CHECK(bad==0, "[%s] %zu lookups wrong of %zu", name.c_str(), bad, n);
    return nFound;
  }

  // Scan [lo,hi] in pages of nMax; compare with the model.
  void scan(int64_t lo, int64_t hi, size_t nMax){
    gpuds_scan sc;
    memset(&sc, 0, sizeof(sc));
    sc.lo = lo; sc.hi = hi;
    std::vector<int64_t> k(nMax);
    std::vector<uint64_t> v(nMax);
    Pairs got;
    int pages = 0;
    while( !sc.done ){
      size_t nOut = 0;
      int rc = G->xScan(g, &sc, nMax, k.data(), v.data(), &nOut);
      CHECK(rc==GPUDS_OK, "[%s] xScan rc=%d %s", name.c_str(), rc, G->xErrmsg(g));
      if( rc ) return;
      CHECK(nOut<=nMax, "[%s] xScan returned %zu > %zu", name.c_str(), nOut, nMax);
      for( size_t i=0; i<nOut; i++ ) got.push_back({k[i], v[i]});
      if( ++pages>50000000 ){ CHECK(false, "[%s] scan does not end", name.c_str()); return; }
    }
    std::sort(got.begin(), got.end());
    Pairs want;
    for( auto &e : ref.m ) if( e.first>=lo && e.first<=hi ) want.push_back(e);
    std::sort(want.begin(), want.end());
    CHECK(got==want, "[%s] scan [%" PRId64 ",%" PRId64 "] nMax %zu: got %zu entries, want %zu",
          name.c_str(), lo, hi, nMax, got.size(), want.size());
  }

  uint64_t devBytes(){
    char z[1024];
    G->xInfo(g, z, sizeof(z));
    const char *s = strstr(z, "\"device_bytes\":");
    return s ? strtoull(s+15, nullptr, 10) : 0;
  }
};

static int64_t pickKey(std::mt19937_64 &r, int64_t K){
  if( r()%100<3 ) return kSpecial[r()%nSpecial];
  return (int64_t)(r()%(uint64_t)(2*K)) - K;
}

// Random batch of at most n ops on distinct keys: pU/pD percent
// upserts/deletes, rest lookups.
static void randomBatch(std::mt19937_64 &r, size_t n, int64_t K, int pU, int pD,
                        std::vector<uint8_t> &op, std::vector<int64_t> &key,
                        std::vector<uint64_t> &val){
  op.resize(n); key.resize(n); val.resize(n);
  for( size_t i=0; i<n; i++ ){
    int x = (int)(r()%100);
    op[i] = x<pU ? GPUDS_OP_UPSERT : (x<pU+pD ? GPUDS_OP_DELETE : GPUDS_OP_LOOKUP);
    key[i] = pickKey(r, K);
    val[i] = r();
  }
  keepFirst(op, key, val);
}

// Sentinel patterns, extremes.
static void testSpecialKeys(){
  Harness H("special");
  std::vector<int64_t> k(kSpecial, kSpecial+nSpecial);
  std::vector<uint8_t> op(nSpecial, GPUDS_OP_UPSERT);
  std::vector<uint64_t> v(nSpecial);
  for( int i=0; i<nSpecial; i++ ) v[i] = 1000+i;
  H.batch(op, k, v);
  H.lookup(k);
  H.scan(INT64_MIN, INT64_MAX, 3);
  H.scan(-1, 0, 1);
  H.scan((int64_t)gpuds_hash::kTombKey, (int64_t)gpuds_hash::kEmptyKey, 2);
  // Every op kind on the special keys, batch after batch.
  std::mt19937_64 r(1);
  for( int it=0; it<20; it++ ){
    std::vector<uint8_t> o2; std::vector<int64_t> k2; std::vector<uint64_t> v2;
    for( int j=0; j<200; j++ ){
      o2.push_back((uint8_t)(r()%3));
      k2.push_back(kSpecial[r()%nSpecial]);
      v2.push_back(r());
    }
    H.batch(o2, k2, v2);
    H.lookup(k);
    H.scan(INT64_MIN, INT64_MAX, 1+r()%5);
  }
  // Delete everything, then check absence.
  std::vector<uint8_t> del(nSpecial, GPUDS_OP_DELETE);
  H.batch(del, k, v);
  CHECK(H.lookup(k)==0, "special keys still present after delete");
  CHECK(G->xCount(H.g)==0, "count not 0");
  printf("special keys: ok\n");
}

// Small key space: keys repeat across batches.
static void testRandomMixed(){
  Harness H("mixed");
  std::mt19937_64 r(2);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  int iters = gSmall ? 30 : 200;
  for( int it=0; it<iters; it++ ){
    size_t n = 1 + r()%(gSmall ? 1500 : 5000);
    int64_t K = (it%3==0) ? 50 : (it%3==1 ? 2000 : 100000);
    int pU = 20 + (int)(r()%50), pD = (int)(r()%40);
    randomBatch(r, n, K, pU, pD, op, key, val);
    H.batch(op, key, val);
  }
  H.scan(INT64_MIN, INT64_MAX, 1000);
  H.scan(-100, 100, 7);
  printf("random mixed batches: ok (count %lld)\n", (long long)G->xCount(H.g));
}

// One key (then three, two of them sentinels) through many small batches.
static void testSameKey(){
  Harness H("samekey");
  std::mt19937_64 r(3);
  const int nRound = gSmall ? 100 : 1000;
  for( int it=0; it<nRound; it++ ){
    std::vector<uint8_t> op(1, (uint8_t)(r()%3)); std::vector<int64_t> key(1, 42);
    std::vector<uint64_t> val(1, r());
    H.batch(op, key, val, it%16==0);
  }
  for( int it=0; it<nRound; it++ ){
    std::vector<uint8_t> op; std::vector<int64_t> key = { 42, -7, (int64_t)gpuds_hash::kEmptyKey };
    std::vector<uint64_t> val;
    for( int i=0; i<3; i++ ){ op.push_back((uint8_t)(r()%3)); val.push_back(r()); }
    H.batch(op, key, val, it%16==0);
  }
  printf("same key runs: ok\n");
}

// Growth from empty through several resizes; all-hit / all-miss lookups;
// delete-heavy phase that shrinks the table; scans.
static void testGrowShrink(){
  Harness H("grow");
  std::mt19937_64 r(4);
  const size_t N = gSmall ? (1u<<14) : (1u<<20), B = gSmall ? (1u<<11) : (1u<<16);
  std::vector<int64_t> keys(N);
  for( size_t i=0; i<N; i++ ) keys[i] = (int64_t)(r() | 1);   // odd keys
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::shuffle(keys.begin(), keys.end(), r);
  uint64_t nb0 = gpuds_hash::buckets(H.g), re0 = gpuds_hash::rehashCount(H.g);
  for( size_t s=0; s<keys.size(); s+=B ){
    size_t n = std::min(B, keys.size()-s);
    std::vector<uint8_t> op(n);
    std::vector<int64_t> k(keys.begin()+s, keys.begin()+s+n);
    std::vector<uint64_t> v(n);
    for( size_t i=0; i<n; i++ ){
      op[i] = r()%10<8 ? GPUDS_OP_UPSERT : GPUDS_OP_LOOKUP;
      v[i] = r();
      if( r()%20==0 ){ k[i] = keys[r()%(s+n)]; }   // re-touch an older key
    }
    H.batch(op, k, v, (s/B)%4==0);
  }
  uint64_t nb1 = gpuds_hash::buckets(H.g), re1 = gpuds_hash::rehashCount(H.g);
  CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck after growth: %s", G->xErrmsg(H.g));
  CHECK(nb1>nb0 && re1-re0>=3, "table did not grow through resizes (%llu -> %llu buckets, %llu rehashes)",
        (unsigned long long)nb0, (unsigned long long)nb1, (unsigned long long)(re1-re0));
  printf("growth: %llu -> %llu buckets, %llu rehashes, %lld keys\n", (unsigned long long)nb0,
         (unsigned long long)nb1, (unsigned long long)(re1-re0), (long long)G->xCount(H.g));
  // all-hit (present keys) and all-miss (even keys never inserted)
  std::vector<int64_t> hit;
  for( auto &e : H.ref.m ) hit.push_back(e.first);
  std::vector<int64_t> miss(hit.size());
  for( size_t i=0; i<miss.size(); i++ ) miss[i] = (int64_t)(r() & ~1ull);
  for( int ilp=1; ilp<=2; ilp++ ){      // both lookup kernels
    gpuds_hash::setLookupIlp(ilp);
    CHECK(H.lookup(hit)==hit.size(), "all-hit lookup missed keys (ilp %d)", ilp);
    CHECK(H.lookup(miss)==0, "all-miss lookup found keys (ilp %d)", ilp);
    std::vector<int64_t> odd(kSpecial, kSpecial+nSpecial);
    odd.insert(odd.end(), hit.begin(), hit.begin()+std::min<size_t>(hit.size(), 1001));
    H.lookup(odd);
  }
  gpuds_hash::setLookupIlp(2);
  {  // the same through xBatch (pure lookup batch of distinct keys)
    std::vector<uint8_t> op(hit.size()*2, GPUDS_OP_LOOKUP);
    std::vector<int64_t> k(hit); k.insert(k.end(), miss.begin(), miss.end());
    std::shuffle(k.begin(), k.end(), r);
    std::vector<uint64_t> v(k.size());
    H.batch(op, k, v, false);
  }
  H.scan(INT64_MIN, INT64_MAX, 4096);
  H.scan(0, INT64_MAX, 100000);
  H.scan(-1000000, 1000000, 5);
  // Delete-heavy: remove ~97% in mixed batches (deletes + some upserts).
  std::vector<int64_t> live(hit);
  std::shuffle(live.begin(), live.end(), r);
  size_t keep = live.size()/32;
  for( size_t s=keep; s<live.size(); s+=B ){
    size_t n = std::min(B, live.size()-s);
    std::vector<uint8_t> op(n, GPUDS_OP_DELETE);
    std::vector<int64_t> k(live.begin()+s, live.begin()+s+n);
    std::vector<uint64_t> v(n);
    for( size_t i=0; i<n; i++ ){
      if( r()%50==0 ){ op[i] = GPUDS_OP_UPSERT; v[i] = r(); k[i] = (int64_t)(r() & ~1ull); }
      else if( r()%50==0 ){ op[i] = GPUDS_OP_LOOKUP; }
    }
    H.batch(op, k, v, (s/B)%4==0);
  }
  uint64_t nb2 = gpuds_hash::buckets(H.g);
  CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck after deletes: %s", G->xErrmsg(H.g));
  CHECK(nb2<nb1, "table did not shrink after mass deletes (%llu buckets)", (unsigned long long)nb2);
  printf("shrink: %llu -> %llu buckets, %lld keys\n", (unsigned long long)nb1,
         (unsigned long long)nb2, (long long)G->xCount(H.g));
  CHECK(H.lookup(hit)==(size_t)std::count_if(hit.begin(), hit.end(),
        [&](int64_t x){ return H.ref.m.count(x)>0; }), "lookup after shrink");
  H.scan(INT64_MIN, INT64_MAX, 777);
  char z[512];
  G->xInfo(H.g, z, sizeof(z));
  CHECK(strstr(z, "\"structure\":") && strstr(z, "\"keys\":") && strstr(z, "\"buckets\":")
        && strstr(z, "\"load\":") && strstr(z, "\"device_bytes\":"), "xInfo: %s", z);
  printf("info: %s\n", z);
}

// Tombstone churn: repeated insert/delete of fresh keys at a steady size
// (tombstones must be reclaimed; lookups stay correct).
static void testChurn(){
  Harness H("churn");
  std::mt19937_64 r(5);
  const size_t N = gSmall ? 4000 : 100000;
  std::vector<int64_t> live;
  int64_t next = 1;
  int rounds = gSmall ? 10 : 40;
  for( int it=0; it<rounds; it++ ){
    std::vector<uint8_t> op; std::vector<int64_t> k; std::vector<uint64_t> v;
    while( live.size()<N ){ live.push_back(next); op.push_back(GPUDS_OP_UPSERT); k.push_back(next); v.push_back(next*3); next++; }
    std::shuffle(live.begin(), live.end(), r);
    for( size_t i=0; i<N/2; i++ ){ op.push_back(GPUDS_OP_DELETE); k.push_back(live.back()); v.push_back(0); live.pop_back(); }
    for( size_t i=0; i<N/4; i++ ){ op.push_back(GPUDS_OP_LOOKUP); k.push_back((int64_t)(r()%(uint64_t)next)); v.push_back(0); }
    H.batch(op, k, v);
  }
  char z[512];
  G->xInfo(H.g, z, sizeof(z));
  printf("churn: ok %s\n", z);
}

static void testBulkLoad(){
  Harness H("bulk");
  std::mt19937_64 r(6);
  size_t n = gSmall ? 5000 : 200000;
  std::vector<int64_t> k(n);
  for( size_t i=0; i<n; i++ ) k[i] = (int64_t)r();
  for( int i=0; i<nSpecial; i++ ) k.push_back(kSpecial[i]);
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  std::vector<uint64_t> v(k.size());
  for( size_t i=0; i<k.size(); i++ ) v[i] = i*7;
  int rc = G->xBulkLoad(H.g, k.size(), k.data(), v.data());
  CHECK(rc==GPUDS_OK, "xBulkLoad rc=%d %s", rc, G->xErrmsg(H.g));
  for( size_t i=0; i<k.size(); i++ ) H.ref.m[k[i]] = v[i];
#if HAVE_HOST_HASH
  rc = gpudsHostHashOps.xBulkLoad(H.h, k.size(), k.data(), v.data());
  CHECK(rc==GPUDS_OK, "host xBulkLoad rc=%d", rc);
#endif
  CHECK(G->xCount(H.g)==(int64_t)k.size(), "bulk count");
  CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck after bulk: %s", G->xErrmsg(H.g));
  H.lookup(k);
  // not ascending: MISUSE, unchanged
  std::vector<int64_t> bad = {5, 3};
  std::vector<uint64_t> bv = {1, 2};
  rc = G->xBulkLoad(H.g, 2, bad.data(), bv.data());
  CHECK(rc==GPUDS_MISUSE && G->xErrmsg(H.g)[0], "unsorted bulk load: rc=%d", rc);
  CHECK(G->xCount(H.g)==(int64_t)k.size(), "count changed by a failed bulk load");
  // invalid op code: MISUSE, unchanged
  std::vector<uint8_t> op = {GPUDS_OP_UPSERT, 9};
  std::vector<int64_t> ik = {123456789, 987654321};
  rc = G->xBatch(H.g, 2, op.data(), ik.data(), bv.data(), nullptr, nullptr);
  CHECK(rc==GPUDS_MISUSE, "invalid op: rc=%d", rc);
  CHECK(G->xCount(H.g)==(int64_t)k.size(), "count changed by a failed batch");
  H.scan(INT64_MIN, INT64_MAX, 65536);
  printf("bulk load: ok (%zu keys)\n", k.size());
}

// Simulated out-of-memory: the batch fails with GPUDS_NOMEM, nothing changes.
static void testNoMem(){
  Harness H("nomem");
  std::mt19937_64 r(7);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  randomBatch(r, 3000, 1000000, 100, 0, op, key, val);
  H.batch(op, key, val);
  const uint64_t nb = gpuds_hash::buckets(H.g);
  const int64_t cnt = G->xCount(H.g);
  std::vector<int64_t> all;
  for( auto &e : H.ref.m ) all.push_back(e.first);
  // Size the scratch with a batch of the same shape that does not grow the
  // table (deletes of absent keys), then allow almost nothing more.
  const size_t n = 4000;
  std::vector<uint8_t> opD(n, GPUDS_OP_DELETE), opU(n, GPUDS_OP_UPSERT);
  std::vector<int64_t> kD(n), kU(n);
  std::vector<uint64_t> v(n, 1);
  for( size_t i=0; i<n; i++ ){ kD[i] = 7000000000ll+(int64_t)i; kU[i] = 5000000000ll+(int64_t)i; }
  H.batch(opD, kD, v);
  CHECK(gpuds_hash::buckets(H.g)==nb, "delete batch resized the table");
  gpuds_hash::setDeviceLimit(H.g, H.devBytes()+4096);
  int rc = G->xBatch(H.g, n, opU.data(), kU.data(), v.data(), nullptr, nullptr);
  CHECK(rc==GPUDS_NOMEM, "expected GPUDS_NOMEM (table growth), got %d", rc);
  CHECK(G->xErrmsg(H.g)[0]!=0, "no message for NOMEM");
  printf("nomem message (growth): %s\n", G->xErrmsg(H.g));
  CHECK(G->xCount(H.g)==cnt && gpuds_hash::buckets(H.g)==nb, "store changed by a failed batch");
  CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck after NOMEM: %s", G->xErrmsg(H.g));
  H.lookup(all);
  H.lookup(kU);
  // A batch whose scratch does not fit: NOMEM, unchanged.
  std::vector<uint8_t> opB; std::vector<int64_t> kB; std::vector<uint64_t> vB;
  randomBatch(r, 50000, 1000000, 60, 20, opB, kB, vB);
  rc = G->xBatch(H.g, kB.size(), opB.data(), kB.data(), vB.data(), nullptr, nullptr);
  CHECK(rc==GPUDS_NOMEM, "expected GPUDS_NOMEM (scratch), got %d", rc);
  printf("nomem message (scratch): %s\n", G->xErrmsg(H.g));
  CHECK(G->xCount(H.g)==cnt && gpuds_hash::buckets(H.g)==nb, "store changed by a failed batch");
  // Lift the limit: the same batches now work.
  gpuds_hash::setDeviceLimit(H.g, 0);
  H.batch(opU, kU, v);
  H.batch(opB, kB, vB);
  H.lookup(all);
  printf("nomem: ok\n");
}

// Fault injection: every device allocation a call makes is
// failed in turn (gpuds_hash::failAlloc(k), on a fresh store in the same
// state for each k).  A call whose fault is reached must return GPUDS_NOMEM
// with a message and leave the store as it was (count, xCheck, a full scan
// and lookups against the model, which did not get the call); one that
// absorbs it (the shrink after deletes is optional) must give the model's
// results.  k grows until the call makes fewer than k allocations.
enum { F_BATCH, F_BULK, F_LOOKUP };
static void faultCase(const char *zName, int kind, size_t nFill, size_t n, uint64_t seed,
                      size_t chunk, int pU, int pD){
  const int kMaxPoints = 200;      // far more allocations than any call makes
  int nReached = 0;
  bool bDone = false;
  for( int k=1; k<=kMaxPoints && !bDone && gFail==0; k++ ){
    std::mt19937_64 r(seed);
    std::string name = std::string("fault/") + zName;
    Harness H(name.c_str());
    gpuds_hash::setHostChunk(H.g, chunk);
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    if( nFill ){
      randomBatch(r, nFill, 1000000, 100, 0, op, key, val);
      H.batch(op, key, val);
    }
    std::vector<int64_t> all;
    for( auto &e : H.ref.m ) all.push_back(e.first);
    if( kind==F_BULK ){
      key.resize(n); val.resize(n);
      for( size_t i=0; i<n; i++ ){ key[i] = 3000000 + 2*(int64_t)i; val[i] = r(); }
      op.assign(n, GPUDS_OP_UPSERT);
    }else if( kind==F_LOOKUP ){
      key.resize(n);
      for( size_t i=0; i<n; i++ ) key[i] = pickKey(r, 1000000);
    }else if( pD==100 ){             // delete every key: the table shrinks after
      key = all;
      op.assign(key.size(), GPUDS_OP_DELETE);
      val.assign(key.size(), 0);
    }else{
      randomBatch(r, n, 1000000, pU, pD, op, key, val);
      keepFirst(op, key, val);
    }
    const size_t m = key.size();
    std::vector<uint8_t> fG(m, 7), fR(m);
    std::vector<uint64_t> oG(m, 7), oR(m);
    const uint64_t a0 = gpuds_hash::allocCount(H.g);
    gpuds_hash::failAlloc(H.g, (uint64_t)k);
    int rc;
    if( kind==F_BULK ) rc = G->xBulkLoad(H.g, m, key.data(), val.data());
    else if( kind==F_LOOKUP ) rc = G->xLookup(H.g, m, key.data(), fG.data(), oG.data());
    else rc = G->xBatch(H.g, m, op.data(), key.data(), val.data(), fG.data(), oG.data());
    const bool reached = gpuds_hash::allocCount(H.g) - a0 >= (uint64_t)k;
    gpuds_hash::failAlloc(H.g, 0);
    if( reached ) nReached++;
    if( rc==GPUDS_NOMEM ){
      CHECK(reached, "[%s] k=%d: NOMEM but the fault was not reached", zName, k);
      CHECK(G->xErrmsg(H.g)[0]!=0, "[%s] k=%d: NOMEM without a message", zName, k);
    }else{
      CHECK(rc==GPUDS_OK, "[%s] k=%d: rc %d (%s), expected GPUDS_NOMEM or GPUDS_OK", zName, k, rc,
            G->xErrmsg(H.g));
      if( kind==F_LOOKUP ){
        std::vector<uint8_t> lo(m, GPUDS_OP_LOOKUP);
        H.ref.apply(m, lo.data(), key.data(), nullptr, fR.data(), oR.data());
      }else{
        H.ref.apply(m, op.data(), key.data(), val.data(), fR.data(), oR.data());
      }
      if( kind!=F_BULK ) CHECK(fG==fR && oG==oR, "[%s] k=%d: results differ from the model", zName, k);
      if( !reached ) bDone = true;
    }
    CHECK(G->xCount(H.g)==(int64_t)H.ref.m.size(), "[%s] k=%d: count %lld, model %zu", zName, k,
          (long long)G->xCount(H.g), H.ref.m.size());
    CHECK(G->xCheck(H.g)==GPUDS_OK, "[%s] k=%d: xCheck: %s", zName, k, G->xErrmsg(H.g));
    H.scan(INT64_MIN, INT64_MAX, 4096);
    H.lookup(all);
  }
  CHECK(bDone, "[fault/%s] still reaching a fault after %d allocations", zName, kMaxPoints);
  printf("fault %s: %d allocation points failed\n", zName, nReached);
}

static void testFaults(){
  faultCase("batch/growth", F_BATCH, 3000, 30000, 21, 0, 70, 10);
  faultCase("batch/shrink", F_BATCH, 30000, 30000, 22, 0, 0, 100);
  faultCase("batch/staged", F_BATCH, 3000, 30000, 23, 4096, 70, 10);
  faultCase("bulk/empty store", F_BULK, 0, 20000, 24, 0, 0, 0);
  faultCase("bulk/into a store", F_BULK, 3000, 20000, 25, 4096, 0, 0);
  faultCase("lookup/pipelined", F_LOOKUP, 3000, 20000, 26, 4096, 0, 0);
  printf("faults: ok\n");
}

// Big contended batches, run twice on fresh stores: results must be identical
// (and equal to the model).
static void testDeterminism(){
  const size_t n = gSmall ? (1u<<14) : (1u<<20);
  std::vector<std::vector<uint8_t>> F[2];
  std::vector<std::vector<uint64_t>> O[2];
  Pairs S[2];
  for( int run=0; run<2; run++ ){
    Harness H(run ? "determinism-2" : "determinism-1");
    std::mt19937_64 r(8);
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    for( int it=0; it<4; it++ ){
      int64_t K = it==0 ? (int64_t)(n/2) : (it==1 ? 4096 : (it==2 ? (int64_t)n*4 : 64));
      randomBatch(r, n, K, 45, 25, op, key, val);
      std::vector<uint8_t> f; std::vector<uint64_t> o;
      H.batch(op, key, val, true, &f, &o);
      F[run].push_back(f); O[run].push_back(o);
    }
    S[run] = H.ref.sorted();
    H.scan(INT64_MIN, INT64_MAX, 1u<<16);
  }
  for( size_t i=0; i<F[0].size(); i++ ){
    CHECK(F[0][i]==F[1][i] && O[0][i]==O[1][i], "batch %zu results differ between runs", i);
  }
  printf("determinism / contention: ok\n");
}

// A random batch of n ops on DISTINCT keys: pU/pD percent upserts/deletes,
// the rest lookups; each op's key is a present key (from `present`) or a
// fresh one (random, now and then a special key) -- deletes and lookups
// mostly present keys, upserts mostly fresh ones.
static void distinctBatch(std::mt19937_64 &r, size_t n, int pU, int pD,
                          const std::vector<int64_t> &present,
                          std::vector<uint8_t> &op, std::vector<int64_t> &key,
                          std::vector<uint64_t> &val){
  op.clear(); key.clear(); val.clear();
  std::unordered_set<int64_t> used;
  for( size_t i=0; i<n; i++ ){
    const int x = (int)(r()%100);
    const uint8_t o = x<pU ? GPUDS_OP_UPSERT : (x<pU+pD ? GPUDS_OP_DELETE : GPUDS_OP_LOOKUP);
    const bool wantPresent = o==GPUDS_OP_DELETE ? r()%10<9 : (o==GPUDS_OP_LOOKUP ? r()%10<7 : r()%4==0);
    for( int tries=0; tries<4; tries++ ){
      int64_t k;
      if( wantPresent && !present.empty() ) k = present[r()%present.size()];
      else if( r()%300==0 ) k = kSpecial[r()%nSpecial];
      else k = (int64_t)r();
      if( used.insert(k).second ){
        op.push_back(o); key.push_back(k); val.push_back(r());
        break;
      }
    }
  }
}

// Batches of distinct keys against the model and the host store: growth from empty
// through resizes, a steady mix (value updates, hits, misses, deletes), a
// delete-heavy phase, then mass deletes that shrink the table; single-op
// and odd-sized batches.
static void testDistinct(){
  Harness H("distinct");
  std::mt19937_64 r(10);
  const uint64_t re0 = gpuds_hash::rehashCount(H.g), nb0 = gpuds_hash::buckets(H.g);
  const int rounds = gSmall ? 24 : 48;
  const size_t maxB = gSmall ? 3000 : 100000;
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  std::vector<int64_t> present;
  size_t nOps = 0;
  for( int it=0; it<rounds; it++ ){
    const int phase = it<rounds/2 ? 0 : (it<rounds*3/4 ? 1 : 2);  // growth, steady, deletes
    const int pU = phase==0 ? 60 : (phase==1 ? 10 : 5);
    const int pD = phase==0 ? 10 : (phase==1 ? 10 : 70);
    size_t n;
    if( it<3 ) n = (size_t)it + 1;                                  // 1, 2, 3 ops
    else if( phase==0 ) n = 1 + r()%(maxB*(size_t)(it+1)/(size_t)(rounds/2));
    else n = 1 + r()%maxB;
    present.clear();
    for( auto &e : H.ref.m ) present.push_back(e.first);
    distinctBatch(r, n, pU, pD, present, op, key, val);
    H.batch(op, key, val, it%4==0 || it==rounds-1);
    nOps += op.size();
  }
  const uint64_t nb1 = gpuds_hash::buckets(H.g), re1 = gpuds_hash::rehashCount(H.g);
  CHECK(nb1>nb0 && re1-re0>=3, "distinct: table did not grow through resizes (%llu -> %llu buckets, "
        "%llu rehashes)", (unsigned long long)nb0, (unsigned long long)nb1,
        (unsigned long long)(re1-re0));
  // Mass deletes (keep 1/32), with a few lookups of kept keys and upserts of
  // fresh keys in the same batches: the table shrinks.
  present.clear();
  for( auto &e : H.ref.m ) present.push_back(e.first);
  std::shuffle(present.begin(), present.end(), r);
  const size_t keep = present.size()/32;
  for( size_t s=keep, b=0; s<present.size(); b++ ){
    const size_t n = std::min(maxB, present.size()-s);
    op.assign(n, GPUDS_OP_DELETE);
    key.assign(present.begin()+s, present.begin()+s+n);
    val.assign(n, 0);
    for( size_t i=0; i<n; i++ ){
      if( r()%50==0 && keep ){ op[i] = GPUDS_OP_LOOKUP; key[i] = present[(s+i)%keep]; }
      else if( r()%50==0 ){ op[i] = GPUDS_OP_UPSERT; key[i] = (int64_t)(r() | 1ull<<62); val[i] = r(); }
    }
    // lookups of kept keys could repeat when keep < n: drop repeats
    std::unordered_set<int64_t> seen;
    size_t w = 0;
    for( size_t i=0; i<n; i++ ){
      if( seen.insert(key[i]).second ){ op[w] = op[i]; key[w] = key[i]; val[w] = val[i]; w++; }
    }
    op.resize(w); key.resize(w); val.resize(w);
    H.batch(op, key, val, b%3==0);
    nOps += w;
    s += n;
  }
  const uint64_t nb2 = gpuds_hash::buckets(H.g);
  CHECK(G->xCheck(H.g)==GPUDS_OK, "distinct: xCheck after mass deletes: %s", G->xErrmsg(H.g));
  CHECK(nb2<nb1, "distinct: table did not shrink after mass deletes (%llu buckets)", (unsigned long long)nb2);
  present.clear();
  for( auto &e : H.ref.m ) present.push_back(e.first);
  H.lookup(present);
  H.scan(INT64_MIN, INT64_MAX, 4096);
  printf("distinct batches: ok (%zu ops; %llu -> %llu -> %llu buckets, %llu rehashes, %lld keys)\n",
         nOps, (unsigned long long)nb0, (unsigned long long)nb1, (unsigned long long)nb2,
         (unsigned long long)(gpuds_hash::rehashCount(H.g)-re0), (long long)G->xCount(H.g));
}

// Device-array entry points agree with the host-array ones.
static void testDeviceApi(){
  Harness H("device-api");
  std::mt19937_64 r(9);
  const size_t nMax = gSmall ? 4096 : (1u<<18);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  randomBatch(r, nMax, (int64_t)nMax, 50, 20, op, key, val);
  const size_t n = op.size();
  uint8_t *dOp, *dF; int64_t *dK; uint64_t *dV, *dO;
  cudaMalloc(&dOp, nMax); cudaMalloc(&dF, nMax); cudaMalloc(&dK, 8*nMax);
  cudaMalloc(&dV, 8*nMax); cudaMalloc(&dO, 8*nMax);
  cudaMemcpy(dOp, op.data(), n, cudaMemcpyHostToDevice);
  cudaMemcpy(dK, key.data(), 8*n, cudaMemcpyHostToDevice);
  cudaMemcpy(dV, val.data(), 8*n, cudaMemcpyHostToDevice);
  int rc = gpuds_hash::batchDevice(H.g, n, dOp, dK, dV, dF, dO);
  CHECK(rc==GPUDS_OK, "batchDevice rc=%d %s", rc, G->xErrmsg(H.g));
  std::vector<uint8_t> f(n), fR(n); std::vector<uint64_t> o(n), oR(n);
  cudaMemcpy(f.data(), dF, n, cudaMemcpyDeviceToHost);
  cudaMemcpy(o.data(), dO, 8*n, cudaMemcpyDeviceToHost);
  H.ref.apply(n, op.data(), key.data(), val.data(), fR.data(), oR.data());
  CHECK(f==fR && o==oR, "batchDevice results differ from the model");
  rc = gpuds_hash::lookupDevice(H.g, n, dK, dF, dO);
  CHECK(rc==GPUDS_OK, "lookupDevice rc=%d", rc);
  cudaMemcpy(f.data(), dF, n, cudaMemcpyDeviceToHost);
  cudaMemcpy(o.data(), dO, 8*n, cudaMemcpyDeviceToHost);
  size_t bad = 0;
  for( size_t i=0; i<n; i++ ){
    auto it = H.ref.m.find(key[i]);
    bad += f[i]!=(it!=H.ref.m.end()) || o[i]!=(it!=H.ref.m.end() ? it->second : 0);
  }
  CHECK(bad==0, "lookupDevice: %zu wrong", bad);
  // distinct upserts (fresh keys)
  for( size_t i=0; i<n; i++ ) key[i] = (int64_t)(0x4000000000000000ull + i*0x9E3779B97F4A7C15ull % (1ull<<60));
  std::sort(key.begin(), key.end());
  key.erase(std::unique(key.begin(), key.end()), key.end());
  size_t m = key.size();
  cudaMemcpy(dK, key.data(), 8*m, cudaMemcpyHostToDevice);
  rc = gpuds_hash::upsertDistinctDevice(H.g, m, dK, dV, nullptr, nullptr);
  CHECK(rc==GPUDS_OK, "upsertDistinctDevice rc=%d", rc);
  for( size_t i=0; i<m; i++ ) H.ref.m[key[i]] = val[i];
  CHECK(G->xCount(H.g)==(int64_t)H.ref.m.size(), "count after upsertDistinctDevice");
  CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck: %s", G->xErrmsg(H.g));
  H.lookup(key);
  // batchDevice on a mixed batch of distinct keys over present and fresh keys
  {
    std::vector<int64_t> present;
    for( auto &e : H.ref.m ) present.push_back(e.first);
    std::mt19937_64 r2(11);
    distinctBatch(r2, n, 20, 20, present, op, key, val);
    const size_t m2 = op.size();
    cudaMemcpy(dOp, op.data(), m2, cudaMemcpyHostToDevice);
    cudaMemcpy(dK, key.data(), 8*m2, cudaMemcpyHostToDevice);
    cudaMemcpy(dV, val.data(), 8*m2, cudaMemcpyHostToDevice);
    rc = gpuds_hash::batchDevice(H.g, m2, dOp, dK, dV, dF, dO);
    CHECK(rc==GPUDS_OK, "batchDevice (2) rc=%d %s", rc, G->xErrmsg(H.g));
    f.resize(m2); fR.resize(m2); o.resize(m2); oR.resize(m2);
    cudaMemcpy(f.data(), dF, m2, cudaMemcpyDeviceToHost);
    cudaMemcpy(o.data(), dO, 8*m2, cudaMemcpyDeviceToHost);
    H.ref.apply(m2, op.data(), key.data(), val.data(), fR.data(), oR.data());
    CHECK(f==fR && o==oR, "batchDevice (2) results differ from the model");
    CHECK(G->xCount(H.g)==(int64_t)H.ref.m.size(), "count after batchDevice (2)");
    CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck: %s", G->xErrmsg(H.g));
  }
  cudaFree(dOp); cudaFree(dF); cudaFree(dK); cudaFree(dV); cudaFree(dO);
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error in test");
  printf("device api: ok\n");
}

// xLookup of q on the GPU store against the model and the host store; then
// again with each output array NULL (same answers in the other).
static void lookupAll(Harness &H, const std::vector<int64_t> &q, const char *zWhat){
  const size_t n = q.size();
  std::vector<uint8_t> f(n, 7); std::vector<uint64_t> v(n, 7);
  int rc = G->xLookup(H.g, n, q.data(), f.data(), v.data());
  CHECK(rc==GPUDS_OK, "[%s] %s: xLookup(n=%zu) rc=%d %s", H.name.c_str(), zWhat, n, rc, G->xErrmsg(H.g));
  if( rc ) return;
  size_t bad = 0;
  for( size_t i=0; i<n; i++ ){
    auto it = H.ref.m.find(q[i]);
    const bool ef = it!=H.ref.m.end();
    const uint64_t ev = ef ? it->second : 0;
    if( f[i]!=ef || v[i]!=ev ){
      if( bad<3 ) CHECK(false, "[%s] %s: lookup %zu of %zu key %" PRId64 ": gpu (%d,%" PRIu64
                        ") model (%d,%" PRIu64 ")", H.name.c_str(), zWhat, i, n, q[i], f[i], v[i],
                        ef, ev);
      bad++;
    }
  }
  CHECK(bad==0, "[%s] %s: %zu of %zu lookups differ from the model", H.name.c_str(), zWhat, bad, n);
#if HAVE_HOST_HASH
  {
    std::vector<uint8_t> fh(n, 9); std::vector<uint64_t> vh(n, 9);
    rc = gpudsHostHashOps.xLookup(H.h, n, q.data(), fh.data(), vh.data());
    CHECK(rc==GPUDS_OK, "[%s] host xLookup rc=%d", H.name.c_str(), rc);
    CHECK(fh==f && vh==v, "[%s] %s: gpu and host store lookups differ (n=%zu)", H.name.c_str(), zWhat, n);
  }
#endif
  std::vector<uint8_t> f2(n, 5); std::vector<uint64_t> v2(n, 5);
  rc = G->xLookup(H.g, n, q.data(), f2.data(), nullptr);
  CHECK(rc==GPUDS_OK && f2==f, "[%s] %s: xLookup with aVal NULL: rc=%d, %s", H.name.c_str(), zWhat,
        rc, f2==f ? "same" : "found flags differ");
  rc = G->xLookup(H.g, n, q.data(), nullptr, v2.data());
  CHECK(rc==GPUDS_OK && v2==v, "[%s] %s: xLookup with aFound NULL: rc=%d, %s", H.name.c_str(), zWhat,
        rc, v2==v ? "same" : "values differ");
}

// n lookup keys: present keys of the model (with repeats), absent keys
// over the full int64 range, the special keys, runs of one key.
static std::vector<int64_t> lookupKeys(std::mt19937_64 &r, const Harness &H, size_t n){
  std::vector<int64_t> present;
  present.reserve(H.ref.m.size());
  for( auto &e : H.ref.m ) present.push_back(e.first);
  std::vector<int64_t> q(n);
  for( size_t i=0; i<n; i++ ){
    const int x = (int)(r()%100);
    if( x<45 && !present.empty() ) q[i] = present[r()%present.size()];
    else if( x<50 && i>0 ) q[i] = q[r()%i];                 // a repeat
    else if( x<53 ) q[i] = kSpecial[r()%nSpecial];
    else if( x<55 && i>0 ) q[i] = q[i-1];                   // a run
    else q[i] = (int64_t)r();                              // (almost surely) absent
  }
  return q;
}

// Chunked host transfers (setHostChunk): xLookup as a pipeline over several
// chunks, and the staged copies of xBatch/xBulkLoad, against
// the model and the host store: sizes around chunk boundaries, repeated lookups,
// hits and misses, the full int64 range; chunk 1 and 0 (single-shot); the
// default chunk on a batch of several chunks (full size); a NOMEM failure of
// the pipeline that changes nothing.
static void testChunked(){
  {
    Harness H("chunked");
    std::mt19937_64 r(13);
    const size_t C = gSmall ? 97 : 1000;
    gpuds_hash::setHostChunk(H.g, C);
    // fill through the staged paths: random batches, a batch over present
    // and fresh keys, a bulk load; keys over the full range
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    for( int it=0; it<3; it++ ){
      randomBatch(r, 5*C+it, INT64_MAX/2, 60, 15, op, key, val);
      for( size_t i=0; i<key.size(); i+=2 ) key[i] = (int64_t)r();
      H.batch(op, key, val);
    }
    {
      std::vector<int64_t> present;
      for( auto &e : H.ref.m ) present.push_back(e.first);
      distinctBatch(r, 4*C+3, 40, 20, present, op, key, val);
      H.batch(op, key, val);
    }
    {
      std::vector<int64_t> k;
      for( size_t i=0; i<3*C+1; i++ ) k.push_back((int64_t)r());
      std::sort(k.begin(), k.end());
      k.erase(std::unique(k.begin(), k.end()), k.end());
      std::vector<uint64_t> v(k.size());
      for( size_t i=0; i<k.size(); i++ ) v[i] = r();
      int rc = G->xBulkLoad(H.g, k.size(), k.data(), v.data());
      CHECK(rc==GPUDS_OK, "chunked xBulkLoad rc=%d %s", rc, G->xErrmsg(H.g));
#if HAVE_HOST_HASH
      rc = gpudsHostHashOps.xBulkLoad(H.h, k.size(), k.data(), v.data());
      CHECK(rc==GPUDS_OK, "host xBulkLoad rc=%d", rc);
#endif
      for( size_t i=0; i<k.size(); i++ ) H.ref.m[k[i]] = v[i];
      CHECK(G->xCount(H.g)==(int64_t)H.ref.m.size(), "count after chunked xBulkLoad");
      CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck after chunked xBulkLoad: %s", G->xErrmsg(H.g));
    }
    const size_t sizes[] = { 1, C-1, C, C+1, 2*C-1, 2*C, 2*C+1, 3*C, 7*C+5, gSmall ? 20*C+11 : 100*C+11 };
    for( size_t n : sizes ){
      char z[64]; snprintf(z, sizeof(z), "chunk %zu, %zu keys", C, n);
      lookupAll(H, lookupKeys(r, H, n), z);
    }
    {  // one key through several chunks
      std::vector<int64_t> q(3*C+2, H.ref.m.begin()->first);
      lookupAll(H, q, "one key repeated");
    }
    gpuds_hash::setLookupIlp(1);
    lookupAll(H, lookupKeys(r, H, 5*C+3), "1 lookup per tile");
    gpuds_hash::setLookupIlp(2);
    gpuds_hash::setHostChunk(H.g, 1);
    lookupAll(H, lookupKeys(r, H, gSmall ? 150 : 2000), "chunk 1");
    gpuds_hash::setHostChunk(H.g, 0);
    lookupAll(H, lookupKeys(r, H, 5*C), "chunk 0 (single-shot)");
    gpuds_hash::setHostChunk(H.g, C);
    randomBatch(r, 6*C, INT64_MAX/2, 30, 30, op, key, val);
    H.batch(op, key, val);
    lookupAll(H, lookupKeys(r, H, 6*C+1), "after a mixed batch");
    H.scan(INT64_MIN, INT64_MAX, 4096);
  }
  if( !gSmall ){  // the default chunk (2^19): bulk load and lookups of several chunks
    Harness H("chunked-default");
    std::mt19937_64 r(14);
    std::vector<int64_t> k;
    for( size_t i=0; i<(1u<<20)+(1u<<18); i++ ) k.push_back((int64_t)r());
    for( int i=0; i<nSpecial; i++ ) k.push_back(kSpecial[i]);
    std::sort(k.begin(), k.end());
    k.erase(std::unique(k.begin(), k.end()), k.end());
    std::vector<uint64_t> v(k.size());
    for( size_t i=0; i<k.size(); i++ ) v[i] = r();
    int rc = G->xBulkLoad(H.g, k.size(), k.data(), v.data());
    CHECK(rc==GPUDS_OK, "xBulkLoad rc=%d %s", rc, G->xErrmsg(H.g));
#if HAVE_HOST_HASH
    rc = gpudsHostHashOps.xBulkLoad(H.h, k.size(), k.data(), v.data());
    CHECK(rc==GPUDS_OK, "host xBulkLoad rc=%d", rc);
#endif
    for( size_t i=0; i<k.size(); i++ ) H.ref.m[k[i]] = v[i];
    CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck: %s", G->xErrmsg(H.g));
    lookupAll(H, lookupKeys(r, H, (2u<<20)+(1u<<19)+7), "default chunk, 2^21+2^19+7 keys");
    lookupAll(H, lookupKeys(r, H, (1u<<19)+1), "2^19+1 keys");
  }
  {  // the pipeline's scratch does not fit: GPUDS_NOMEM, nothing changes
    Harness H("chunked-nomem");
    std::mt19937_64 r(15);
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    randomBatch(r, 2000, INT64_MAX/2, 100, 0, op, key, val);
    H.batch(op, key, val);
    const int64_t cnt = G->xCount(H.g);
    const uint64_t nb = gpuds_hash::buckets(H.g);
    gpuds_hash::setHostChunk(H.g, 50000);
    gpuds_hash::setDeviceLimit(H.g, H.devBytes()+4096);
    std::vector<int64_t> q = lookupKeys(r, H, 120000);
    std::vector<uint8_t> f(q.size()); std::vector<uint64_t> v(q.size());
    int rc = G->xLookup(H.g, q.size(), q.data(), f.data(), v.data());
    CHECK(rc==GPUDS_NOMEM, "chunked xLookup under a device limit: expected GPUDS_NOMEM, got %d", rc);
    CHECK(G->xErrmsg(H.g)[0]!=0, "no message for NOMEM");
    CHECK(G->xCount(H.g)==cnt && gpuds_hash::buckets(H.g)==nb, "store changed by a failed lookup");
    gpuds_hash::setDeviceLimit(H.g, 0);
    CHECK(G->xCheck(H.g)==GPUDS_OK, "xCheck after NOMEM: %s", G->xErrmsg(H.g));
    lookupAll(H, q, "after lifting the limit");
  }
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error in test");
  printf("chunked host transfers: ok\n");
}

int main(int argc, char **argv){
  char zDev[256];
  uint64_t nFree = 0;
  if( !gpuTestStart(argc, argv, zDev, sizeof(zDev), &nFree) ) return 77;
  printf("device: %s, %.1f GiB free; host store oracle: %s; sizes: %s\n", zDev,
         nFree/1073741824.0, HAVE_HOST_HASH ? "yes" : "no (model only)",
         gSmall ? "small" : "full");
  testSpecialKeys();
  testRandomMixed();
  testSameKey();
  testBulkLoad();
  testChurn();
  testGrowShrink();
  testNoMem();
  testFaults();
  testDeterminism();
  testDistinct();
  testDeviceApi();
  testChunked();
  if( gFail ){
    printf("FAILED: %d checks\n", gFail.load());
    return 1;
  }
  printf("PASS\n");
  return 0;
}
