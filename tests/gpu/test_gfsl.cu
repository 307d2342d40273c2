/*
** test_gfsl.cu -- differential test of the GFSL ordered store
** (gpudsCudaOrderedOps, kernels/gfsl.cu) against the host ordered store
** (gpudsHostOrderedOps, backend/host_ordered.c) and, at small sizes, a
** std::map replaying the same operations.
**
**   test_gfsl            the full test (stores up to ~10^7 keys)
**   test_gfsl small      small sizes only
**   test_gfsl tiny       a subset at small sizes (for compute-sanitizer)
**   GFSL_TEST_HUGE=1     adds a 10^8-key round (test_gfsl huge: only that)
**
** Exits 0 if everything matched, 1 on a mismatch, 77 (SKIPPED) when there is
** no usable CUDA device.  All randomness is seeded: a result that changes
** from one run to the next is a bug (a race).
*/
#include "gpuds_backend.h"
#include "distinct_keys.h"
#include "gfsl.cuh"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

static const gpuds_store_ops *G = &gpudsCudaOrderedOps;
static const gpuds_store_ops *H = &gpudsHostOrderedOps;
static int nFail = 0;
static bool bSmall = false, bTiny = false;
typedef std::mt19937_64 Rng;

#define EXPECT(c, ...) do{ if( !(c) ){ nFail++; \
  printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); fflush(stdout); \
  if( nFail>=10 ){ printf("too many failures, stopping\n"); exit(1); } } }while(0)

static double now(){
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* A GPU store, the host store, and optionally a std::map, fed the same ops. */
struct Pair {
  gpuds_store *g = nullptr, *h = nullptr;
  std::map<int64_t, uint64_t> *m = nullptr;
  std::string name;
};

static Pair mkPair(const std::string &name, int rebuildMode, bool withMap){
  Pair P;
  P.name = name;
  char *zErr = nullptr;
  int rc = G->xCreate(&P.g, &zErr);
  if( rc ){ printf("FAIL: cannot create GPU store: %s\n", zErr ? zErr : "?"); exit(1); }
  rc = H->xCreate(&P.h, &zErr);
  if( rc ){ printf("FAIL: cannot create host store: %s\n", zErr ? zErr : "?"); exit(1); }
  gfsl::setRebuildMode(P.g, rebuildMode);
  if( withMap ) P.m = new std::map<int64_t, uint64_t>();
  return P;
}
static void freePair(Pair &P){
  G->xDestroy(P.g); H->xDestroy(P.h); delete P.m;
  P.g = P.h = nullptr; P.m = nullptr;
}

/* Run one batch, less the later occurrences of a repeated key (keepFirst),
** on every member of the pair and compare all results. */
static bool batch(Pair &P, const std::vector<uint8_t> &op0, const std::vector<int64_t> &key0,
                  const std::vector<uint64_t> &val0, const char *zWhat){
  std::vector<uint8_t> op(op0); std::vector<int64_t> key(key0); std::vector<uint64_t> val(val0);
  keepFirst(op, key, val);
  size_t n = op.size();
  std::vector<uint8_t> fg(n, 7), fh(n, 9);
  std::vector<uint64_t> og(n, 77), oh(n, 99);
  int rg = G->xBatch(P.g, n, op.data(), key.data(), val.data(), fg.data(), og.data());
  int rh = H->xBatch(P.h, n, op.data(), key.data(), val.data(), fh.data(), oh.data());
  EXPECT(rg==GPUDS_OK, "[%s] %s: gpu xBatch(n=%zu) rc=%d: %s", P.name.c_str(), zWhat, n, rg, G->xErrmsg(P.g));
  EXPECT(rh==GPUDS_OK, "[%s] %s: host xBatch rc=%d: %s", P.name.c_str(), zWhat, rh, H->xErrmsg(P.h));
  if( rg || rh ) return false;
  for( size_t i=0; i<n; i++ ){
    if( fg[i]!=fh[i] || og[i]!=oh[i] ){
      EXPECT(false, "[%s] %s: op %zu of %zu (op %d key %lld): gpu (%d,%llu) host (%d,%llu)",
             P.name.c_str(), zWhat, i, n, op[i], (long long)key[i], fg[i], (unsigned long long)og[i],
             fh[i], (unsigned long long)oh[i]);
      return false;
    }
  }
  if( P.m ){
    for( size_t i=0; i<n; i++ ){
      auto it = P.m->find(key[i]);
      uint8_t f = it!=P.m->end();
      uint64_t o = f ? it->second : 0;
      if( f!=fh[i] || o!=oh[i] ){
        EXPECT(false, "[%s] %s: op %zu: std::map (%d,%llu) host (%d,%llu)", P.name.c_str(), zWhat, i,
               f, (unsigned long long)o, fh[i], (unsigned long long)oh[i]);
        return false;
      }
      if( op[i]==GPUDS_OP_UPSERT ) (*P.m)[key[i]] = val[i];
      else if( op[i]==GPUDS_OP_DELETE && f ) P.m->erase(it);
    }
    EXPECT((int64_t)P.m->size()==H->xCount(P.h), "[%s] %s: map size %zu host count %lld", P.name.c_str(),
           zWhat, P.m->size(), (long long)H->xCount(P.h));
  }
  EXPECT(G->xCount(P.g)==H->xCount(P.h), "[%s] %s: gpu count %lld host count %lld", P.name.c_str(), zWhat,
         (long long)G->xCount(P.g), (long long)H->xCount(P.h));
  return true;
}

/* Invariant checks on both stores. */
static void check(Pair &P, const char *zWhat){
  int rc = G->xCheck(P.g);
  EXPECT(rc==GPUDS_OK, "[%s] %s: gpu xCheck: %s", P.name.c_str(), zWhat, G->xErrmsg(P.g));
  rc = H->xCheck(P.h);
  EXPECT(rc==GPUDS_OK, "[%s] %s: host xCheck: %s", P.name.c_str(), zWhat, H->xErrmsg(P.h));
}

/* All entries of [lo,hi] in the given direction, paging by `page`. */
static bool scanAll(const gpuds_store_ops *ops, gpuds_store *s, int64_t lo, int64_t hi, int desc, size_t page,
                    std::vector<int64_t> &K, std::vector<uint64_t> &V, const char *zWho){
  K.clear(); V.clear();
  gpuds_scan sc;
  memset(&sc, 0, sizeof(sc));
  sc.lo = lo; sc.hi = hi; sc.desc = desc;
  std::vector<int64_t> k(page); std::vector<uint64_t> v(page);
  int empty = 0;
  while( !sc.done ){
    size_t n = 12345;
    int rc = ops->xScan(s, &sc, page, k.data(), v.data(), &n);
    if( rc ){ EXPECT(false, "%s xScan rc=%d: %s", zWho, rc, ops->xErrmsg(s)); return false; }
    if( n>page ){ EXPECT(false, "%s xScan returned %zu > page %zu", zWho, n, page); return false; }
    K.insert(K.end(), k.begin(), k.begin()+n);
    V.insert(V.end(), v.begin(), v.begin()+n);
    if( n==0 && ++empty>3 ){ EXPECT(sc.done, "%s xScan makes no progress", zWho); return false; }
  }
  return true;
}

static void compareScan(Pair &P, int64_t lo, int64_t hi, int desc, size_t page, const char *zWhat){
  std::vector<int64_t> kg, kh; std::vector<uint64_t> vg, vh;
  if( !scanAll(G, P.g, lo, hi, desc, page, kg, vg, "gpu") ) return;
  if( !scanAll(H, P.h, lo, hi, desc, page, kh, vh, "host") ) return;
  EXPECT(kg.size()==kh.size(), "[%s] %s: scan [%lld,%lld] %s page %zu: gpu %zu rows, host %zu",
         P.name.c_str(), zWhat, (long long)lo, (long long)hi, desc ? "desc" : "asc", page, kg.size(), kh.size());
  size_t n = std::min(kg.size(), kh.size());
  for( size_t i=0; i<n; i++ ){
    if( kg[i]!=kh[i] || vg[i]!=vh[i] ){
      EXPECT(false, "[%s] %s: scan [%lld,%lld] %s page %zu row %zu: gpu (%lld,%llu) host (%lld,%llu)",
             P.name.c_str(), zWhat, (long long)lo, (long long)hi, desc ? "desc" : "asc", page, i,
             (long long)kg[i], (unsigned long long)vg[i], (long long)kh[i], (unsigned long long)vh[i]);
      return;
    }
  }
}

/* Whole-store comparison: count, full scans both ways. */
static void compareAll(Pair &P, const char *zWhat, size_t page = 1000){
  EXPECT(G->xCount(P.g)==H->xCount(P.h), "[%s] %s: counts differ", P.name.c_str(), zWhat);
  compareScan(P, INT64_MIN, INT64_MAX, 0, page, zWhat);
  compareScan(P, INT64_MIN, INT64_MAX, 1, page*3+1, zWhat);
}

/* Keys: space 0 = the full int64 range, else [base, base+space). */
static int64_t genKey(Rng &r, uint64_t space, int64_t base, int dist){
  if( space==0 ){
    uint64_t x = r();
    if( (x & 63)==0 ) return (x & 64) ? INT64_MAX - (int64_t)((x>>8)&3) : INT64_MIN + (int64_t)((x>>8)&3);
    return (int64_t)x;
  }
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(r);
  uint64_t off;
  if( dist==1 ) off = (uint64_t)(u*u*u*u*(double)space);      /* skewed to low keys */
  else off = r() % space;
  if( off>=space ) off = space-1;
  return (int64_t)((uint64_t)base + off);
}

/* A random mixed batch of at most n ops on distinct keys: pU upserts, pD
** deletes, rest lookups (percent). */
static void genBatch(Rng &r, size_t n, uint64_t space, int64_t base, int dist, int pU, int pD,
                     std::vector<uint8_t> &op, std::vector<int64_t> &key, std::vector<uint64_t> &val){
  op.resize(n); key.resize(n); val.resize(n);
  for( size_t i=0; i<n; i++ ){
    int x = (int)(r()%100);
    op[i] = x<pU ? GPUDS_OP_UPSERT : x<pU+pD ? GPUDS_OP_DELETE : GPUDS_OP_LOOKUP;
    key[i] = genKey(r, space, base, dist);
    val[i] = r();
  }
  keepFirst(op, key, val);
}

/*------------------------------------------------------------------------*/

static double gT0 = 0;
/* Start a section: print the previous one's time and the new title. */
static void section(const char *zTitle){
  double t = now();
  if( gT0>0 ) printf("   (%.2f s)\n", t-gT0);
  gT0 = t;
  if( zTitle ) printf("-- %s\n", zTitle);
  fflush(stdout);
}

static void testEmpty(){
  section("empty store");
  Pair P = mkPair("empty", 0, true);
  EXPECT(G->xCount(P.g)==0, "count of empty store");
  int64_t k[3] = { INT64_MIN, 0, INT64_MAX };
  uint8_t f[3] = { 9, 9, 9 }; uint64_t v[3] = { 5, 5, 5 };
  EXPECT(G->xLookup(P.g, 3, k, f, v)==GPUDS_OK, "lookup on empty: %s", G->xErrmsg(P.g));
  EXPECT(f[0]==0 && f[1]==0 && f[2]==0 && v[0]==0 && v[2]==0, "lookup on empty found something");
  compareAll(P, "empty");
  check(P, "empty");
  char zInfo[512];
  G->xInfo(P.g, zInfo, sizeof(zInfo));
  EXPECT(strstr(zInfo, "\"structure\":\"gfsl\"") && strstr(zInfo, "\"keys\":0"), "info: %s", zInfo);
  printf("   info: %s\n", zInfo);
  /* a batch with only lookups and deletes changes nothing */
  std::vector<uint8_t> op = { GPUDS_OP_DELETE, GPUDS_OP_LOOKUP, GPUDS_OP_DELETE };
  std::vector<int64_t> key = { 1, 1, INT64_MIN };
  std::vector<uint64_t> val = { 1, 2, 3 };
  batch(P, op, key, val, "deletes on empty");
  check(P, "deletes on empty");
  /* invalid op code */
  uint8_t bad = 3; int64_t bk = 1; uint64_t bv = 1;
  EXPECT(G->xBatch(P.g, 1, &bad, &bk, &bv, nullptr, nullptr)==GPUDS_MISUSE, "bad op code accepted");
  freePair(P);
}

static void testExtremes(){
  section("extreme keys");
  for( int mode=0; mode<3; mode++ ){
    Pair P = mkPair("extremes/mode" + std::to_string(mode), mode, true);
    std::vector<int64_t> ks = { INT64_MIN, INT64_MIN+1, -1, 0, 1, INT64_MAX-1, INT64_MAX };
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    for( int64_t k : ks ){ op.push_back(GPUDS_OP_UPSERT); key.push_back(k); val.push_back((uint64_t)k ^ 0x5555); }
    for( int64_t k : ks ){ op.push_back(GPUDS_OP_LOOKUP); key.push_back(k); val.push_back(0); }
    op.push_back(GPUDS_OP_UPSERT); key.push_back(INT64_MAX); val.push_back(42);
    batch(P, op, key, val, "extremes insert");
    check(P, "extremes insert");
    for( size_t page : { (size_t)1, (size_t)2, (size_t)3, (size_t)100 } ){
      compareScan(P, INT64_MIN, INT64_MAX, 0, page, "extremes");
      compareScan(P, INT64_MIN, INT64_MAX, 1, page, "extremes");
      compareScan(P, INT64_MIN, INT64_MIN, 0, page, "extremes min");
      compareScan(P, INT64_MAX, INT64_MAX, 1, page, "extremes max");
      compareScan(P, -1, 1, 1, page, "extremes mid");
      compareScan(P, 5, -5, 0, page, "extremes empty range");
    }
    op.assign({ GPUDS_OP_DELETE, GPUDS_OP_DELETE, GPUDS_OP_LOOKUP, GPUDS_OP_LOOKUP });
    key.assign({ INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX });
    val.assign({ 0, 0, 0, 0 });
    batch(P, op, key, val, "extremes delete");
    check(P, "extremes delete");
    compareAll(P, "extremes delete", 2);
    freePair(P);
  }
}

/* Random mixed batches (keys repeat across batches), several key spaces and sizes. */
static void testMixed(int mode, uint64_t seed){
  char zT[80]; snprintf(zT, sizeof(zT), "random mixed batches, rebuild mode %d", mode);
  section(zT);
  struct Cfg { uint64_t space; int64_t base; int dist; size_t batch; int rounds; int pU, pD; };
  std::vector<Cfg> cfgs = {
    { 16, -8, 0, 7, 30, 40, 30 },
    { 64, 0, 0, 100, 30, 45, 25 },
    { 1000, -500, 0, 1000, 20, 40, 30 },
    { 1000, 0, 1, 3000, 12, 40, 35 },
    { 100000, -50000, 0, 5000, 12, 60, 10 },
    { 100000, -50000, 0, 5000, 12, 20, 60 },
    { 0, 0, 0, 2000, 10, 50, 20 },
  };
  if( bTiny ) cfgs.resize(5);
  if( !bSmall ){
    cfgs.push_back({ 1000000, 0, 0, 200000, 8, 45, 25 });
    cfgs.push_back({ 200000, 0, 1, 200000, 6, 40, 40 });
    cfgs.push_back({ 0, 0, 0, 300000, 5, 60, 10 });
  }
  Rng r(seed);
  int ci = 0;
  for( const Cfg &c : cfgs ){
    bool withMap = c.batch*c.rounds<=200000;
    Pair P = mkPair("mixed/mode" + std::to_string(mode) + "/cfg" + std::to_string(ci++), mode, withMap);
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    int rounds = bTiny ? (c.rounds+3)/4 : c.rounds;
    for( int round=0; round<rounds; round++ ){
      size_t n = c.batch==7 ? 1 + r()%7 : c.batch;
      genBatch(r, n, c.space, c.base, c.dist, c.pU, c.pD, op, key, val);
      if( round%5==3 ) std::sort(key.begin(), key.end());                 /* sorted order */
      if( round%5==4 ) std::sort(key.begin(), key.end(), std::greater<int64_t>());
      char zWhat[64]; snprintf(zWhat, sizeof(zWhat), "round %d", round);
      if( !batch(P, op, key, val, zWhat) ) break;
      if( round%4==0 || round==rounds-1 ) check(P, zWhat);
    }
    compareAll(P, "after mixed", 1 + r()%2000);
    gfsl::BatchStats st; gfsl::lastBatchStats(P.g, &st);
    printf("   %-22s keys %8lld levels %d chunks %8llu\n", P.name.c_str(), (long long)G->xCount(P.g),
           st.nLevels, (unsigned long long)st.nChunks);
    freePair(P);
  }
}

/* Grow by concurrent inserts (never rebuild), then delete nearly all in
** random order: splits, merges, zombies, emptying levels. */
static void testMerges(uint64_t seed){
  section("merges and zombies");
  Rng r(seed);
  size_t N = bTiny ? 6000 : bSmall ? 20000 : 400000;
  Pair P = mkPair("merges", 1, N<=20000);
  std::vector<int64_t> keys(N);
  for( size_t i=0; i<N; i++ ) keys[i] = (int64_t)(r()>>1) - (int64_t)(1ll<<62);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  /* a small bulk seed so the concurrent path has some structure to start */
  size_t step = N/16;
  for( size_t off=0; off<N; off+=step ){
    size_t n = std::min(step, N-off);
    op.assign(n, GPUDS_OP_UPSERT);
    key.assign(keys.begin()+off, keys.begin()+off+n);
    val.resize(n); for( size_t i=0; i<n; i++ ) val[i] = (uint64_t)key[i]*3;
    batch(P, op, key, val, "grow");
    step = std::max<size_t>(step, (size_t)G->xCount(P.g)/4);
  }
  check(P, "grown");
  gfsl::BatchStats st; gfsl::lastBatchStats(P.g, &st);
  printf("   grown: %lld keys, %d levels, %llu chunks, last batch %llu splits\n", (long long)G->xCount(P.g),
         st.nLevels, (unsigned long long)st.nChunks, (unsigned long long)st.nSplit);
  std::shuffle(keys.begin(), keys.end(), r);
  size_t del = 0;
  uint64_t merges = 0;
  while( del<N ){
    size_t n = std::min(N-del, N/7 + 1);
    op.assign(n, GPUDS_OP_DELETE);
    key.assign(keys.begin()+del, keys.begin()+del+n);
    /* mix in lookups of deleted keys and re-deletes */
    for( size_t i=0; i<n/10; i++ ){ op.push_back(GPUDS_OP_LOOKUP); key.push_back(keys[r()%N]); }
    val.assign(op.size(), 0);
    batch(P, op, key, val, "delete");
    gfsl::lastBatchStats(P.g, &st);
    merges += st.nMerge;
    del += n;
    check(P, "delete");
  }
  printf("   deleted all: %llu merges, count %lld\n", (unsigned long long)merges, (long long)G->xCount(P.g));
  EXPECT(merges>0, "no merge happened");
  EXPECT(G->xCount(P.g)==0, "store not empty");
  compareAll(P, "emptied");
  /* reuse after emptying */
  genBatch(r, 5000, 10000, 0, 0, 70, 10, op, key, val);
  batch(P, op, key, val, "refill");
  check(P, "refill");
  compareAll(P, "refill", 77);
  freePair(P);
}

/* Bulk loads: into empty, into small (merge), into big (batch path), with a
** present key (contract broken: must behave like upserts). */
static void testBulk(uint64_t seed){
  section("bulk loads");
  Rng r(seed);
  size_t N = bSmall ? 30000 : 2000000;
  Pair P = mkPair("bulk", 0, false);
  std::vector<int64_t> k(N); std::vector<uint64_t> v(N);
  for( size_t i=0; i<N; i++ ) k[i] = (int64_t)r();
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  N = k.size(); v.resize(N);
  for( size_t i=0; i<N; i++ ) v[i] = r();
  /* half the keys (odd positions) first */
  std::vector<int64_t> k1, k2; std::vector<uint64_t> v1, v2;
  for( size_t i=0; i<N; i++ ){ if( i&1 ){ k1.push_back(k[i]); v1.push_back(v[i]); } else { k2.push_back(k[i]); v2.push_back(v[i]); } }
  EXPECT(G->xBulkLoad(P.g, k1.size(), k1.data(), v1.data())==GPUDS_OK, "bulk 1: %s", G->xErrmsg(P.g));
  EXPECT(H->xBulkLoad(P.h, k1.size(), k1.data(), v1.data())==GPUDS_OK, "host bulk 1: %s", H->xErrmsg(P.h));
  check(P, "bulk into empty");
  compareAll(P, "bulk into empty", 4096);
  /* the other half: merge path */
  EXPECT(G->xBulkLoad(P.g, k2.size(), k2.data(), v2.data())==GPUDS_OK, "bulk 2: %s", G->xErrmsg(P.g));
  EXPECT(H->xBulkLoad(P.h, k2.size(), k2.data(), v2.data())==GPUDS_OK, "host bulk 2: %s", H->xErrmsg(P.h));
  check(P, "bulk merge");
  compareAll(P, "bulk merge", 100000);
  /* a small bulk into the big store: batch path */
  std::vector<int64_t> k3; std::vector<uint64_t> v3;
  for( int i=0; i<1000; i++ ){ int64_t x = (int64_t)r(); if( !std::binary_search(k.begin(), k.end(), x) ) k3.push_back(x); }
  std::sort(k3.begin(), k3.end()); k3.erase(std::unique(k3.begin(), k3.end()), k3.end());
  for( size_t i=0; i<k3.size(); i++ ) v3.push_back(i);
  EXPECT(G->xBulkLoad(P.g, k3.size(), k3.data(), v3.data())==GPUDS_OK, "bulk 3: %s", G->xErrmsg(P.g));
  EXPECT(H->xBulkLoad(P.h, k3.size(), k3.data(), v3.data())==GPUDS_OK, "host bulk 3: %s", H->xErrmsg(P.h));
  check(P, "bulk small into big");
  compareAll(P, "bulk small into big", 999);
  /* not ascending: refused */
  int64_t bad[2] = { 5, 5 }; uint64_t bv[2] = { 1, 2 };
  EXPECT(G->xBulkLoad(P.g, 2, bad, bv)==GPUDS_MISUSE, "non-ascending bulk load accepted");
  /* then mixed batches on top of a bulk-built store (never rebuild) */
  gfsl::setRebuildMode(P.g, 1);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  for( int round=0; round<6; round++ ){
    genBatch(r, bSmall ? 3000 : 100000, 0, 0, 0, 40, 40, op, key, val);
    for( size_t i=0; i<key.size(); i+=2 ) key[i] = k[r()%N];    /* hit existing keys */
    batch(P, op, key, val, "mixed after bulk");
  }
  check(P, "mixed after bulk");
  compareAll(P, "mixed after bulk", 12345);
  freePair(P);

  /* sorted appends into a big store (one hot gap) */
  Pair Q = mkPair("appends", 0, false);
  size_t M = bSmall ? 20000 : 1000000;
  std::vector<int64_t> ka(M); std::vector<uint64_t> va(M);
  for( size_t i=0; i<M; i++ ){ ka[i] = (int64_t)i*2; va[i] = i; }
  G->xBulkLoad(Q.g, M, ka.data(), va.data());
  H->xBulkLoad(Q.h, M, ka.data(), va.data());
  for( int mode=0; mode<2; mode++ ){
    gfsl::setRebuildMode(Q.g, mode==0 ? 0 : 1);
    size_t A = bSmall ? 3000 : (mode==0 ? 200000 : 20000);
    std::vector<uint8_t> op2(A, GPUDS_OP_UPSERT); std::vector<int64_t> key2(A); std::vector<uint64_t> val2(A);
    int64_t base = (int64_t)M*2 + (int64_t)mode*10000000;
    for( size_t i=0; i<A; i++ ){ key2[i] = base + (int64_t)i; val2[i] = i*7; }
    double t0 = now();
    batch(Q, op2, key2, val2, "appends");
    gfsl::BatchStats st; gfsl::lastBatchStats(Q.g, &st);
    printf("   %zu sorted appends to %zu keys (mode %d): %.3f s, rebuilt %d, %llu splits\n", A, M, mode,
           now()-t0, st.rebuilt, (unsigned long long)st.nSplit);
    check(Q, "appends");
  }
  compareAll(Q, "appends", 50000);
  freePair(Q);
}

/* Scans: random ranges and page sizes, both directions; a store modified
** between the pages of a scan. */
static void testScans(uint64_t seed){
  section("scans");
  Rng r(seed);
  Pair P = mkPair("scans", 0, false);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  genBatch(r, bSmall ? 20000 : 500000, 2000000, -1000000, 0, 100, 0, op, key, val);
  batch(P, op, key, val, "fill");
  int nRange = bSmall ? 30 : 60;
  for( int i=0; i<nRange; i++ ){
    /* narrow ranges with tiny pages, wide ones with pages that keep the
    ** number of xScan calls reasonable */
    int64_t a = genKey(r, 2400000, -1200000, 0), b = a + (int64_t)(r()% (i%3==0 ? 100 : 3000000));
    size_t narrow[] = { 1, 3, 64 }, wide[] = { 997, 65536, 1000000 };
    size_t pg = i%3==0 ? narrow[r()%3] : wide[r()%3];
    compareScan(P, a, b, (int)(r()&1), pg, "range");
  }
  /* scan with modifications between pages: both stores get the same
  ** modifications at the same points */
  for( int desc=0; desc<2; desc++ ){
    gpuds_scan sg, sh;
    int64_t w = bSmall ? 500000 : 100000;
    memset(&sg, 0, sizeof(sg)); sg.lo = -w; sg.hi = w; sg.desc = desc;
    sh = sg;
    std::vector<int64_t> kg(500), kh(500); std::vector<uint64_t> vg(500), vh(500);
    int pages = 0;
    while( !sg.done || !sh.done ){
      size_t ng = 0, nh = 0;
      EXPECT(G->xScan(P.g, &sg, 500, kg.data(), vg.data(), &ng)==GPUDS_OK, "scan: %s", G->xErrmsg(P.g));
      EXPECT(H->xScan(P.h, &sh, 500, kh.data(), vh.data(), &nh)==GPUDS_OK, "scan host");
      EXPECT(ng==nh && sg.done==sh.done, "modified scan: page %d: gpu %zu rows done %d, host %zu rows done %d",
             pages, ng, sg.done, nh, sh.done);
      if( ng!=nh ) break;
      bool same = true;
      for( size_t i=0; i<ng; i++ ) if( kg[i]!=kh[i] || vg[i]!=vh[i] ) same = false;
      EXPECT(same, "modified scan: page %d differs", pages);
      if( !same ) break;
      genBatch(r, 300, 2*(uint64_t)w+200000, -w-100000, 0, 50, 50, op, key, val);
      batch(P, op, key, val, "between pages");
      if( ++pages>100000 ) break;
    }
  }
  check(P, "scans");
  freePair(P);
}

/* Out of memory: with a device-memory limit the batch must fail with
** GPUDS_NOMEM and leave the store exactly as it was.  Two limits: one that
** stops the batch at its first allocation, one that leaves room for the
** workspace but (usually) not for the grown pool or the rebuilt store. */
static void testNoMem(uint64_t seed){
  section("out of memory");
  Rng r(seed);
  for( int mode=0; mode<3; mode++ ){
    Pair P = mkPair("nomem/mode" + std::to_string(mode), mode, false);
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    genBatch(r, 20000, 0, 0, 0, 100, 0, op, key, val);
    batch(P, op, key, val, "fill");
    /* same size batch of deletes of absent keys: sizes the workspace */
    size_t n = 200000;
    std::vector<uint8_t> op0(n, GPUDS_OP_DELETE); std::vector<int64_t> key0(n); std::vector<uint64_t> val0(n, 0);
    for( size_t i=0; i<n; i++ ) key0[i] = (int64_t)i*2 + 1;   /* (mostly) absent keys */
    batch(P, op0, key0, val0, "workspace");
    genBatch(r, n, 0, 0, 0, 60, 20, op, key, val);
    for( size_t i=0; i<key.size(); i+=3 ) key[i] = key[(i*7)%key.size()];
    keepFirst(op, key, val);
    for( int lim=0; lim<2; lim++ ){
      char zInfo[512]; G->xInfo(P.g, zInfo, sizeof(zInfo));
      const char *z = strstr(zInfo, "\"device_bytes\":");
      uint64_t bytes = z ? strtoull(z+15, nullptr, 10) : 0;
      gfsl::setMemLimit(P.g, bytes + (lim==0 ? 4096 : (uint64_t)24<<20));
      std::vector<uint8_t> f(op.size()); std::vector<uint64_t> o(op.size());
      int rc = G->xBatch(P.g, op.size(), op.data(), key.data(), val.data(), f.data(), o.data());
      printf("   mode %d limit %d: rc %d %s\n", mode, lim, rc, G->xErrmsg(P.g));
      if( lim==0 ) EXPECT(rc==GPUDS_NOMEM, "[%s] expected GPUDS_NOMEM, got %d (%s)", P.name.c_str(), rc, G->xErrmsg(P.g));
      EXPECT(rc==GPUDS_NOMEM || rc==GPUDS_OK, "[%s] rc %d (%s)", P.name.c_str(), rc, G->xErrmsg(P.g));
      gfsl::setMemLimit(P.g, 0);    /* the checker and scans need memory too */
      if( rc==GPUDS_NOMEM ){
        EXPECT(strlen(G->xErrmsg(P.g))>0, "no message with NOMEM");
        check(P, "after NOMEM");
        compareAll(P, "after NOMEM (store unchanged)", 5000);
      }else if( rc==GPUDS_OK ){
        /* it fitted: the host store applies the same batch and compares */
        std::vector<uint8_t> fh(op.size()); std::vector<uint64_t> oh(op.size());
        H->xBatch(P.h, op.size(), op.data(), key.data(), val.data(), fh.data(), oh.data());
        EXPECT(f==fh && o==oh, "[%s] results differ under a memory limit", P.name.c_str());
        check(P, "under a memory limit");
        compareAll(P, "under a memory limit", 5000);
        break;
      }
    }
    gfsl::setMemLimit(P.g, 0);
    genBatch(r, n, 0, 0, 0, 60, 20, op, key, val);
    batch(P, op, key, val, "after lifting the limit");
    check(P, "after lifting the limit");
    compareAll(P, "after lifting the limit", 5000);
    freePair(P);
  }
}

/* Fault injection: every device allocation a call makes is
** failed in turn (gfsl::failAlloc(k), on a fresh store in the same state for
** each k).  A call whose fault is reached must return GPUDS_NOMEM with a
** message and leave the store as it was (xCheck, all entries compared with
** the host store, which did not get the call); one that absorbs it (an
** optional buffer) must give the host store's results.  k grows until the
** call makes fewer than k allocations. */
enum { F_BATCH, F_BULK, F_LOOKUP };
static void faultCase(const char *zName, int kind, int mode, size_t nFill, size_t n, uint64_t seed,
                      size_t chunk, int variant){
  const int kMaxPoints = 400;      /* far more allocations than any call makes */
  int nReached = 0;
  bool bDone = false;
  for( int k=1; k<=kMaxPoints && !bDone && nFail==0; k++ ){
    Rng r(seed);
    Pair P = mkPair(std::string("fault/") + zName, mode, false);
    gfsl::setHostChunk(P.g, chunk);
    gfsl::setLookupVariant(P.g, variant);
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    genBatch(r, nFill, 1000000, 0, 0, 100, 0, op, key, val);
    if( nFill ) batch(P, op, key, val, "fill");
    /* the call */
    std::vector<int64_t> bk; std::vector<uint64_t> bv;
    if( kind==F_BULK ){
      std::vector<uint8_t> lo; std::vector<int64_t> lk; std::vector<uint64_t> lv;
      genBatch(r, n, 1000000, 2000000, 0, 100, 0, lo, lk, lv);  /* keys not in the store */
      std::sort(lk.begin(), lk.end());
      lk.erase(std::unique(lk.begin(), lk.end()), lk.end());
      bk = lk; bv.assign(lk.size(), 0);
      for( size_t i=0; i<bv.size(); i++ ) bv[i] = r();
    }else if( kind==F_LOOKUP ){
      bk.resize(n);
      for( size_t i=0; i<n; i++ ) bk[i] = genKey(r, 1000000, 0, 0);
    }else{
      genBatch(r, n, 1000000, 0, 0, 60, 20, op, key, val);
    }
    const size_t m = kind==F_BATCH ? op.size() : bk.size();
    std::vector<uint8_t> fg(m, 7), fh(m, 9);
    std::vector<uint64_t> og(m, 77), oh(m, 99);
    const uint64_t a0 = gfsl::allocCount(P.g);
    gfsl::failAlloc(P.g, (uint64_t)k);
    int rc;
    if( kind==F_BULK ) rc = G->xBulkLoad(P.g, m, bk.data(), bv.data());
    else if( kind==F_LOOKUP ) rc = G->xLookup(P.g, m, bk.data(), fg.data(), og.data());
    else rc = G->xBatch(P.g, m, op.data(), key.data(), val.data(), fg.data(), og.data());
    const bool reached = gfsl::allocCount(P.g) - a0 >= (uint64_t)k;
    gfsl::failAlloc(P.g, 0);
    if( reached ) nReached++;
    if( rc==GPUDS_NOMEM ){
      EXPECT(reached, "[%s] k=%d: NOMEM but the fault was not reached", P.name.c_str(), k);
      EXPECT(G->xErrmsg(P.g)[0]!=0, "[%s] k=%d: NOMEM without a message", P.name.c_str(), k);
      check(P, "after an injected allocation failure");
      compareAll(P, "after an injected allocation failure (store unchanged)", 700);
    }else{
      EXPECT(rc==GPUDS_OK, "[%s] k=%d: rc %d (%s), expected GPUDS_NOMEM or GPUDS_OK", P.name.c_str(), k,
             rc, G->xErrmsg(P.g));
      int rh;
      if( kind==F_BULK ) rh = H->xBulkLoad(P.h, m, bk.data(), bv.data());
      else if( kind==F_LOOKUP ) rh = H->xLookup(P.h, m, bk.data(), fh.data(), oh.data());
      else rh = H->xBatch(P.h, m, op.data(), key.data(), val.data(), fh.data(), oh.data());
      EXPECT(rh==GPUDS_OK, "[%s] host rc %d", P.name.c_str(), rh);
      if( kind!=F_BULK ){
        EXPECT(fg==fh && og==oh, "[%s] k=%d: results differ from the host store's", P.name.c_str(), k);
      }
      check(P, "after the call");
      compareAll(P, "after the call", 700);
      if( !reached ) bDone = true;
    }
    freePair(P);
  }
  EXPECT(bDone, "[fault/%s] still reaching a fault after %d allocations", zName, kMaxPoints);
  printf("   %s: %d allocation points failed\n", zName, nReached);
}

static void testFaults(uint64_t seed){
  section("injected device allocation failures");
  faultCase("batch/incremental", F_BATCH, 1, 3000, 30000, seed, 0, 0);    /* grows the pool */
  faultCase("batch/rebuild", F_BATCH, 2, 3000, 30000, seed+1, 0, 0);
  faultCase("batch/choose", F_BATCH, 0, 20000, 4000, seed+2, 0, 0);
  faultCase("batch/empty store", F_BATCH, 0, 0, 5000, seed+3, 0, 0);
  faultCase("bulk/empty store", F_BULK, 0, 0, 20000, seed+4, 0, 0);
  faultCase("bulk/into a store", F_BULK, 0, 20000, 30000, seed+5, 0, 0);
  faultCase("bulk/incremental", F_BULK, 1, 20000, 5000, seed+6, 0, 0);
  faultCase("lookup/pipelined sorted", F_LOOKUP, 0, 5000, 20000, seed+7, 4096, 3);
  faultCase("lookup/single-shot sorted", F_LOOKUP, 0, 5000, 20000, seed+8, 0, 3);
}

/* Determinism: the same contended batches on fresh stores give the same
** results and contents. */
static void testDeterminism(uint64_t seed){
  section("determinism");
  std::vector<std::vector<uint64_t>> results;
  std::vector<std::vector<int64_t>> contents;
  for( int rep=0; rep<3; rep++ ){
    Rng r(seed);
    gpuds_store *g = nullptr;
    G->xCreate(&g, nullptr);
    gfsl::setRebuildMode(g, 1);
    std::vector<uint64_t> all;
    std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
    for( int round=0; round<(bSmall ? 4 : 10); round++ ){
      genBatch(r, bSmall ? 5000 : 100000, 3000, 0, round&1, 45, 35, op, key, val);
      std::vector<uint8_t> f(op.size()); std::vector<uint64_t> o(op.size());
      EXPECT(G->xBatch(g, op.size(), op.data(), key.data(), val.data(), f.data(), o.data())==GPUDS_OK,
             "determinism batch: %s", G->xErrmsg(g));
      for( size_t i=0; i<op.size(); i++ ) all.push_back(o[i]*2 + f[i]);
    }
    std::vector<int64_t> K; std::vector<uint64_t> V;
    scanAll(G, g, INT64_MIN, INT64_MAX, 0, 777, K, V, "gpu");
    for( size_t i=0; i<V.size(); i++ ) K.push_back((int64_t)V[i]);
    results.push_back(all); contents.push_back(K);
    EXPECT(G->xCheck(g)==GPUDS_OK, "determinism check: %s", G->xErrmsg(g));
    G->xDestroy(g);
  }
  EXPECT(results[0]==results[1] && results[1]==results[2], "results differ between identical runs");
  EXPECT(contents[0]==contents[1] && contents[1]==contents[2], "contents differ between identical runs");
}

/* Lookups: xLookup with duplicates and absent keys; lookup-only batches. */
static void testLookups(uint64_t seed){
  section("lookups");
  Rng r(seed);
  Pair P = mkPair("lookups", 0, false);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  genBatch(r, bTiny ? 3000 : bSmall ? 10000 : 300000, 1000000, 0, 0, 100, 0, op, key, val);
  batch(P, op, key, val, "fill");
  size_t n = bTiny ? 3000 : bSmall ? 20000 : 1000000;
  std::vector<int64_t> q(n);
  for( size_t i=0; i<n; i++ ) q[i] = (i%4==0) ? key[r()%key.size()] : genKey(r, 1100000, -50000, 0);
  std::vector<uint8_t> fg(n), fh(n); std::vector<uint64_t> vg(n), vh(n);
  EXPECT(G->xLookup(P.g, n, q.data(), fg.data(), vg.data())==GPUDS_OK, "xLookup: %s", G->xErrmsg(P.g));
  EXPECT(H->xLookup(P.h, n, q.data(), fh.data(), vh.data())==GPUDS_OK, "host xLookup");
  size_t bad = 0, hits = 0;
  for( size_t i=0; i<n; i++ ){ if( fg[i]!=fh[i] || vg[i]!=vh[i] ) bad++; hits += fh[i]; }
  EXPECT(bad==0, "xLookup: %zu of %zu differ", bad, n);
  printf("   %zu lookups, %zu hits\n", n, hits);
  /* the other lookup paths give the same answers: kLookup (1), kLookup1
  ** (2), the sorted path at any size (3); with keys of a narrow span (sorted
  ** as 32-bit keys) and with the int64 extremes too (64-bit sort keys) */
  for( int wide=0; wide<2; wide++ ){
    if( wide ){
      for( size_t i=0; i<n; i+=7 ) q[i] = (i%14==0) ? INT64_MIN + (int64_t)(i%3) : INT64_MAX - (int64_t)(i%3);
      EXPECT(H->xLookup(P.h, n, q.data(), fh.data(), vh.data())==GPUDS_OK, "host xLookup");
    }
    for( int variant : {1, 2, 3, 0} ){
      gfsl::setLookupVariant(P.g, variant);
      std::fill(fg.begin(), fg.end(), 9); std::fill(vg.begin(), vg.end(), 9);
      EXPECT(G->xLookup(P.g, n, q.data(), fg.data(), vg.data())==GPUDS_OK, "xLookup (variant %d): %s",
             variant, G->xErrmsg(P.g));
      bad = 0;
      for( size_t i=0; i<n; i++ ) if( fg[i]!=fh[i] || vg[i]!=vh[i] ) bad++;
      EXPECT(bad==0, "xLookup (variant %d, %s span): %zu of %zu differ", variant, wide ? "64-bit" : "narrow",
             bad, n);
      /* a few small batches (odd sizes, one key) through the same path */
      for( size_t m : {(size_t)1, (size_t)31, (size_t)129} ){
        if( m>n ) continue;
        std::vector<uint8_t> f2(m, 9); std::vector<uint64_t> v2(m, 9);
        EXPECT(G->xLookup(P.g, m, q.data()+n-m, f2.data(), v2.data())==GPUDS_OK, "xLookup: %s", G->xErrmsg(P.g));
        bad = 0;
        for( size_t i=0; i<m; i++ ) if( f2[i]!=fh[n-m+i] || v2[i]!=vh[n-m+i] ) bad++;
        EXPECT(bad==0, "xLookup (variant %d, %zu keys): %zu differ", variant, m, bad);
      }
    }
  }
  /* a batch big enough for segments of several 32-key groups in the sorted
  ** kernel (segments grow with the batch) and for the default to sort, at
  ** every size mode */
  {
    const size_t m = 600000;
    std::vector<int64_t> q2(m);
    for( size_t i=0; i<m; i++ ) q2[i] = (i%3==0) ? key[r()%key.size()] : genKey(r, 1100000, -50000, 0);
    std::vector<uint8_t> f2(m), fh2(m); std::vector<uint64_t> v2(m), vh2(m);
    EXPECT(H->xLookup(P.h, m, q2.data(), fh2.data(), vh2.data())==GPUDS_OK, "host xLookup");
    for( int variant : {3, 0} ){
      gfsl::setLookupVariant(P.g, variant);
      std::fill(f2.begin(), f2.end(), 9); std::fill(v2.begin(), v2.end(), 9);
      EXPECT(G->xLookup(P.g, m, q2.data(), f2.data(), v2.data())==GPUDS_OK, "xLookup: %s", G->xErrmsg(P.g));
      bad = 0;
      for( size_t i=0; i<m; i++ ) if( f2[i]!=fh2[i] || v2[i]!=vh2[i] ) bad++;
      EXPECT(bad==0, "xLookup (variant %d, %zu keys): %zu differ", variant, m, bad);
    }
  }
  gfsl::setLookupVariant(P.g, 0);
  op.assign(n, GPUDS_OP_LOOKUP);
  val.assign(n, 0);
  batch(P, op, q, val, "lookup-only batch");
  freePair(P);
}

/* xLookup of q on both stores; every answer compared.  With `nulls`, again
** with each output array NULL (the other must not change). */
static void lookupBoth(Pair &P, const std::vector<int64_t> &q, const char *zWhat, bool nulls){
  const size_t n = q.size();
  std::vector<uint8_t> fg(n, 9), fh(n, 7); std::vector<uint64_t> vg(n, 9), vh(n, 7);
  int rg = G->xLookup(P.g, n, q.data(), fg.data(), vg.data());
  int rh = H->xLookup(P.h, n, q.data(), fh.data(), vh.data());
  EXPECT(rg==GPUDS_OK, "[%s] %s: gpu xLookup(n=%zu) rc=%d: %s", P.name.c_str(), zWhat, n, rg, G->xErrmsg(P.g));
  EXPECT(rh==GPUDS_OK, "[%s] %s: host xLookup rc=%d", P.name.c_str(), zWhat, rh);
  if( rg || rh ) return;
  size_t bad = 0, first = n;
  for( size_t i=0; i<n; i++ ) if( fg[i]!=fh[i] || vg[i]!=vh[i] ){ if( !bad ) first = i; bad++; }
  EXPECT(bad==0, "[%s] %s: %zu of %zu lookups differ (first %zu: key %lld gpu (%d,%llu) host (%d,%llu))",
         P.name.c_str(), zWhat, bad, n, first, bad ? (long long)q[first] : 0LL, bad ? fg[first] : 0,
         bad ? (unsigned long long)vg[first] : 0ULL, bad ? fh[first] : 0, bad ? (unsigned long long)vh[first] : 0ULL);
  if( !nulls ) return;
  std::vector<uint8_t> f2(n, 5); std::vector<uint64_t> v2(n, 5);
  rg = G->xLookup(P.g, n, q.data(), f2.data(), nullptr);
  EXPECT(rg==GPUDS_OK && f2==fh, "[%s] %s: xLookup with aVal NULL: rc %d, %s", P.name.c_str(), zWhat, rg,
         f2==fh ? "same" : "found flags differ");
  rg = G->xLookup(P.g, n, q.data(), nullptr, v2.data());
  EXPECT(rg==GPUDS_OK && v2==vh, "[%s] %s: xLookup with aFound NULL: rc %d, %s", P.name.c_str(), zWhat, rg,
         v2==vh ? "same" : "values differ");
}

/* n lookup keys: present keys (from `present`, repeated), absent keys, the
** int64 extremes, runs of one key; narrow: all within [base, base+space)
** (32-bit sort keys), else over the full int64 range (64-bit sort keys). */
static std::vector<int64_t> pipeKeys(Rng &r, const std::vector<int64_t> &present, size_t n, bool narrow,
                                     uint64_t space, int64_t base){
  std::vector<int64_t> q(n);
  for( size_t i=0; i<n; i++ ){
    const int x = (int)(r()%100);
    if( x<40 && !present.empty() ) q[i] = present[r()%present.size()];
    else if( x<46 && i>0 ) q[i] = q[r()%i];
    else if( x<49 && i>0 ) q[i] = q[i-1];
    else if( x<51 && !narrow ) q[i] = (x&1) ? INT64_MAX - (int64_t)(r()%3) : INT64_MIN + (int64_t)(r()%3);
    else q[i] = narrow ? genKey(r, space, base, 0) : (int64_t)r();
  }
  if( narrow && !present.empty() ){   /* keep to the band: present keys outside it become band keys */
    for( size_t i=0; i<n; i++ ) if( (uint64_t)q[i]-(uint64_t)base>=space ) q[i] = genKey(r, space, base, 0);
  }
  return q;
}

/* The xLookup pipeline (gfsl::setHostChunk): batches of several chunks
** against the host store, every lookup variant (sorted chunks with 32- and
** 64-bit sort keys, unsorted chunks), sizes around chunk boundaries, repeats,
** hits and misses, the int64 extremes, one key repeated over chunks, NULL
** output arrays, an empty store, chunk 1 and 0 (single-shot); in the full
** test also chunks of 2^20 and 2^19 keys (sorted chunks with 64- and 32-bit
** sort keys, unsorted chunks) on batches of several chunks.  level: 0
** micro, 1 tiny/small, 2 full. */
static void testPipeline(uint64_t seed, int level){
  section("chunked xLookup (pipeline)");
  Rng r(seed);
  Pair P = mkPair("pipeline", 0, false);
  const size_t C = level==0 ? 64 : level==1 ? 397 : 4000;
  gfsl::setHostChunk(P.g, C);
  std::vector<int64_t> none;
  gfsl::setLookupVariant(P.g, 3);
  lookupBoth(P, pipeKeys(r, none, 3*C+1, false, 0, 0), "empty store", false);
  gfsl::setLookupVariant(P.g, 0);
  /* fill: keys over the full range and a dense band [base, base+space) */
  const int64_t base = -(int64_t)1000000;
  const uint64_t space = level==0 ? 4000 : 400000;
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  genBatch(r, level==0 ? 500 : level==1 ? 4000 : 60000, 0, 0, 0, 100, 0, op, key, val);
  batch(P, op, key, val, "pipeline fill (full range)");
  genBatch(r, level==0 ? 500 : level==1 ? 4000 : 60000, space, base, 0, 100, 0, op, key, val);
  batch(P, op, key, val, "pipeline fill (band)");
  std::vector<int64_t> present, band;
  {
    std::vector<int64_t> K; std::vector<uint64_t> V;
    scanAll(H, P.h, INT64_MIN, INT64_MAX, 0, 100000, K, V, "host");
    present = K;
    for( int64_t k : K ) if( (uint64_t)k-(uint64_t)base<space ) band.push_back(k);
  }
  const int variants[] = { 0, 3, 2, 1 };
  for( int variant : variants ){
    if( level==0 && (variant==1 || variant==2) ) continue;
    gfsl::setLookupVariant(P.g, variant);
    const size_t sizes[] = { C+1, 2*C-1, 2*C, 2*C+1, 3*C+7, level==0 ? 5*C+3 : 12*C+5 };
    int j = 0;
    for( size_t n : sizes ){
      const bool narrow = (j++)&1;
      char z[96]; snprintf(z, sizeof(z), "variant %d, chunk %zu, %zu keys, %s", variant, C, n,
                           narrow ? "narrow span" : "full range");
      lookupBoth(P, pipeKeys(r, narrow ? band : present, n, narrow, space, base), z, n==2*C+1);
    }
  }
  gfsl::setLookupVariant(P.g, 3);
  {
    std::vector<int64_t> q(3*C+2, present[present.size()/2]);
    lookupBoth(P, q, "one key repeated over chunks", false);
    /* chunks of different spans: one key, a band, the full range */
    std::vector<int64_t> b = pipeKeys(r, band, C, true, space, base), w = pipeKeys(r, present, C+5, false, 0, 0);
    q.insert(q.end(), b.begin(), b.end());
    q.insert(q.end(), w.begin(), w.end());
    lookupBoth(P, q, "chunks of different spans", false);
  }
  gfsl::setLookupVariant(P.g, 0);
  if( level>0 ){
    gfsl::setHostChunk(P.g, 1);
    lookupBoth(P, pipeKeys(r, present, 150, false, 0, 0), "chunk 1", false);
  }
  gfsl::setHostChunk(P.g, 0);
  lookupBoth(P, pipeKeys(r, present, 3*C, false, 0, 0), "chunk 0 (single-shot)", false);
  gfsl::setHostChunk(P.g, C);
  genBatch(r, 6*C, 0, 0, 0, 30, 30, op, key, val);
  for( size_t i=0; i<op.size(); i+=3 ) key[i] = present[r()%present.size()];
  batch(P, op, key, val, "pipeline: mixed batch");
  lookupBoth(P, pipeKeys(r, present, 6*C+1, false, 0, 0), "after a mixed batch", true);
  check(P, "pipeline");
  if( level==2 ){   /* realistic chunks: 2^20 sorted (variant 3), 2^19 unsorted (the default) */
    std::vector<int64_t> K; std::vector<uint64_t> V;
    scanAll(H, P.h, INT64_MIN, INT64_MAX, 0, 100000, K, V, "host");
    std::vector<int64_t> b;
    for( int64_t k : K ) if( (uint64_t)k-(uint64_t)base<space ) b.push_back(k);
    gfsl::setHostChunk(P.g, (size_t)1<<20);
    gfsl::setLookupVariant(P.g, 3);
    lookupBoth(P, pipeKeys(r, K, ((size_t)2<<20) + ((size_t)1<<18) + 3, false, 0, 0), "chunk 2^20, sorted, 2.25 chunks", true);
    lookupBoth(P, pipeKeys(r, b, ((size_t)1<<20) + 1, true, space, base), "chunk 2^20 + 1, sorted, narrow", false);
    gfsl::setHostChunk(P.g, (size_t)1<<19);
    gfsl::setLookupVariant(P.g, 0);
    lookupBoth(P, pipeKeys(r, K, ((size_t)5<<19) + 11, false, 0, 0), "chunk 2^19, 5 chunks", false);
  }
  freePair(P);
}

/* Large stores: bulk N, mixed batches, lookups, scans, checks. */
static void testLarge(size_t N, size_t nBatch, uint64_t seed){
  char zT[80]; snprintf(zT, sizeof(zT), "large: %zu keys, batches of %zu", N, nBatch);
  section(zT);
  Rng r(seed);
  Pair P = mkPair("large" + std::to_string(N), 0, false);
  std::vector<int64_t> k(N); std::vector<uint64_t> v(N);
  for( size_t i=0; i<N; i++ ){ k[i] = (int64_t)(i*5) - (int64_t)N; v[i] = i; }
  double t0 = now();
  EXPECT(G->xBulkLoad(P.g, N, k.data(), v.data())==GPUDS_OK, "large bulk: %s", G->xErrmsg(P.g));
  double t1 = now();
  EXPECT(H->xBulkLoad(P.h, N, k.data(), v.data())==GPUDS_OK, "large host bulk");
  printf("   bulk load (host arrays): gpu %.3f s, host %.3f s\n", t1-t0, now()-t1);
  t0 = now();
  check(P, "large bulk");
  printf("   check: %.3f s\n", now()-t0);
  std::vector<uint8_t> op; std::vector<int64_t> key; std::vector<uint64_t> val;
  for( int round=0; round<3; round++ ){
    genBatch(r, nBatch, (uint64_t)N*5, -(int64_t)N, round==2, 10+10*round, 10+5*round, op, key, val);
    t0 = now();
    batch(P, op, key, val, "large mixed");
    gfsl::BatchStats st; gfsl::lastBatchStats(P.g, &st);
    printf("   batch %zu: %.3f s (gpu+host) ins %llu del %llu upd %llu splits %llu merges %llu rebuilt %d levels %d\n",
           nBatch, now()-t0, (unsigned long long)st.nInsert, (unsigned long long)st.nDelete,
           (unsigned long long)st.nUpdate, (unsigned long long)st.nSplit, (unsigned long long)st.nMerge,
           st.rebuilt, st.nLevels);
    check(P, "large mixed");
  }
  compareAll(P, "large", 1000000);
  {  /* a big lookup batch (the sorted path): present keys, absent ones, repeats */
    size_t n = std::min<size_t>(N/5, 2000000);
    std::vector<int64_t> q(n);
    for( size_t i=0; i<n; i++ ) q[i] = (i%3==0) ? (int64_t)((r()%N)*5) - (int64_t)N : genKey(r, (uint64_t)N*6, -(int64_t)N, 0);
    for( size_t i=0; i<n; i+=101 ) q[i] = q[i/2];
    std::vector<uint8_t> fg(n, 9), fh(n); std::vector<uint64_t> vg(n, 9), vh(n);
    t0 = now();
    EXPECT(G->xLookup(P.g, n, q.data(), fg.data(), vg.data())==GPUDS_OK, "large xLookup: %s", G->xErrmsg(P.g));
    double t1 = now();
    EXPECT(H->xLookup(P.h, n, q.data(), fh.data(), vh.data())==GPUDS_OK, "large host xLookup");
    size_t bad = 0, hits = 0;
    for( size_t i=0; i<n; i++ ){ bad += fg[i]!=fh[i] || vg[i]!=vh[i]; hits += fh[i]; }
    EXPECT(bad==0, "large xLookup: %zu of %zu differ", bad, n);
    printf("   %zu lookups (%zu hits): gpu %.3f s, host %.3f s\n", n, hits, t1-t0, now()-t1);
  }
  for( int i=0; i<10; i++ ){
    int64_t a = genKey(r, (uint64_t)N*5, -(int64_t)N, 0);
    compareScan(P, a, a + (int64_t)(r()%2000000), (int)(i&1), 1000 + r()%100000, "large range");
  }
  char zInfo[512]; G->xInfo(P.g, zInfo, sizeof(zInfo));
  printf("   info: %s\n", zInfo);
  freePair(P);
}

int main(int argc, char **argv){
  char zDev[256];
  uint64_t nFree = 0, nTotal = 0;
  if( !gpudsCudaDevice(zDev, sizeof(zDev), &nFree, &nTotal) ){
    printf("SKIPPED: no usable CUDA device (%s)\n", zDev);
    return 77;
  }
  if( argc>1 && strcmp(argv[1], "probe")==0 ){ printf("device: %s\n", zDev); return 0; }
  if( argc>1 && strcmp(argv[1], "huge")==0 ){     /* only the 10^8 round */
    double t = now();
    testLarge(100000000, 10000000, 11);
    section(nullptr);
    printf("%s: %d failure(s), %.1f s\n", nFail ? "FAILED" : "PASSED", nFail, now()-t);
    return nFail ? 1 : 0;
  }
  bool bMicro = argc>1 && strcmp(argv[1], "micro")==0;
  bTiny = bMicro || (argc>1 && strcmp(argv[1], "tiny")==0);
  bSmall = bTiny || (argc>1 && strcmp(argv[1], "small")==0);
  const char *zHuge = getenv("GFSL_TEST_HUGE");
  bool bHuge = zHuge && atoi(zHuge)>0 && !bSmall;
  printf("device: %s, %.1f GiB free of %.1f GiB; mode %s\n", zDev, nFree/1073741824.0, nTotal/1073741824.0,
         bTiny ? "tiny" : bSmall ? "small" : bHuge ? "full+huge" : "full");
  double t0 = now();
  if( bMicro ){
    testEmpty();
    testExtremes();
    testPipeline(12, 0);
    section(nullptr);
    printf("%s: %d failure(s), %.1f s\n", nFail ? "FAILED" : "PASSED", nFail, now()-t0);
    return nFail ? 1 : 0;
  }
  if( bTiny ){
    testEmpty();
    testExtremes();
    testMixed(1, 2);
    testMixed(0, 1);
    testMerges(4);
    testLookups(9);
    testPipeline(12, 1);
    section(nullptr);
    printf("%s: %d failure(s), %.1f s\n", nFail ? "FAILED" : "PASSED", nFail, now()-t0);
    return nFail ? 1 : 0;
  }
  testEmpty();
  testExtremes();
  testMixed(0, 1);
  testMixed(1, 2);
  testMixed(2, 3);
  testMerges(4);
  testBulk(5);
  testScans(6);
  testNoMem(7);
  testFaults(13);
  testDeterminism(8);
  testLookups(9);
  testPipeline(12, bSmall ? 1 : 2);
  if( bSmall ) testLarge(100000, 20000, 10);
  else testLarge(10000000, 1000000, 10);
  if( bHuge ) testLarge(100000000, 10000000, 11);
  section(nullptr);
  printf("%s: %d failure(s), %.1f s\n", nFail ? "FAILED" : "PASSED", nFail, now()-t0);
  return nFail ? 1 : 0;
}
