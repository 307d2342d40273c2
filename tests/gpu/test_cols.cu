// test_cols.cu -- differential tests of the CUDA column set (gpudsCudaColsOps,
// kernels/cols.cu) against the host column set (gpudsHostColsOps,
// backend/host_cols.c): the same random sets and queries go to both and every
// result (rc, count, keys, row words, sort keys) must be identical.
//
// Exit 0: all passed; 1: a failure; 77: SKIPPED (no usable CUDA device).
// Argument "small": fewer random sets and queries, no 10^7-row timing (for
// compute-sanitizer memcheck); "race": fewer still (racecheck, which is many
// times slower: one 10^5-row set with the top-k and sort paths, the small
// sets with a dozen queries each).
// Last: a 10^7-row set, timings printed (wall time of xQuery, median of 5),
// results also compared with the host set.
#include "gpuds_backend.h"
#include "gpuds_colval.h"

#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cols.cuh"

#include "check.h"
static std::mt19937_64 gRng(20240612);

static const gpuds_cols_ops *G = &gpudsCudaColsOps;
static const gpuds_cols_ops *H = &gpudsHostColsOps;

static uint64_t rnd(){ return gRng(); }
static uint64_t rndBelow(uint64_t n){ return n ? rnd()%n : 0; }

struct Val { uint8_t tag; uint64_t val; };

// "race": the smallest run, for compute-sanitizer racecheck (implies gSmall).
static bool gRace = false;

// A random short string over a small alphabet, often sharing prefixes.
static std::string rndStr(){
  static const char *aPre[] = {"", "ab", "abc", "abcd", "abcde", "zz", "a"};
  std::string s = aPre[rndBelow(7)];
  int k = (int)rndBelow(4);
  for(int i=0; i<k; i++) s.push_back("abcz\x01\xff"[rndBelow(6)]);
  if( rndBelow(10)==0 ) s.push_back('\0');
  return s;
}

// One random value of any tag, from value pools with many ties.
static Val rndVal(){
  static const int64_t aInt[] = {0, 1, -1, 2, 3, 7, -7, 100, INT64_MIN, INT64_MAX,
    INT64_MIN+1, INT64_MAX-1, 1LL<<53, (1LL<<53)+1, -((1LL<<53)+1), 1LL<<62,
    123456789012345LL};
  static const double aReal[] = {0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 0.1, 1e300, -1e300,
    9223372036854775808.0, -9223372036854775808.0, 9007199254740992.0,
    9007199254740994.0, 3.0, 7.0, 1e-300, 4.9e-324, 2.5, 99.99};
  Val v;
  switch( rndBelow(6) ){
    case 0: v.tag = GPUDS_TAG_NULL; v.val = 0; break;
    case 1:
      v.tag = GPUDS_TAG_INT;
      v.val = (uint64_t)(rndBelow(3)==0 ? (int64_t)rndBelow(50)-25
                         : aInt[rndBelow(sizeof(aInt)/8)]);
      break;
    case 2: {
      double d = rndBelow(3)==0 ? (double)((int64_t)rndBelow(50)-25)/4.0
                                : aReal[rndBelow(sizeof(aReal)/8)];
      v.tag = GPUDS_TAG_REAL; v.val = gpudsColReal(d);
      break;
    }
    case 3: case 4: {
      std::string s = rndStr();
      v.tag = GPUDS_TAG_TEXT;
      v.val = gpudsColBytes((const unsigned char*)s.data(), (uint32_t)s.size());
      break;
    }
    default: {
      std::string s = rndStr();
      v.tag = GPUDS_TAG_BLOB;
      v.val = gpudsColBytes((const unsigned char*)s.data(), (uint32_t)s.size());
      break;
    }
  }
  return v;
}

// A random column set's arrays.
struct Set {
  int nCol = 0;
  int64_t n = 0;
  int bSorted = 0;
  std::vector<int64_t> key;
  std::vector<uint64_t> row;
  std::vector<uint8_t> tag;
  std::vector<uint64_t> val;
  std::vector<Val> pool;     // per set: values columns draw from (and constants)
};

// n rows, nCol columns; sorted keys (ascending, distinct) or shuffled (with
// duplicates when dup).
static Set makeSet(int64_t n, int nCol, bool sorted, bool dup){
  Set s;
  s.n = n; s.nCol = nCol; s.bSorted = sorted;
  s.key.resize(n); s.row.resize(n);
  for(int i=0; i<40; i++) s.pool.push_back(rndVal());
  int64_t base = rndBelow(4)==0 ? INT64_MIN : (int64_t)rndBelow(1000) - 500;
  int64_t k = base;
  for(int64_t i=0; i<n; i++){
    s.key[i] = k;
    uint64_t step = rndBelow(8)==0 ? 1 + rndBelow(1ULL<<40) : 1 + rndBelow(3);
    if( dup && rndBelow(5)==0 ) step = 0;
    uint64_t room = ~((uint64_t)k ^ 0x8000000000000000ULL);   // steps left below INT64_MAX
    if( room < step + (uint64_t)(n-i) ) step = 1;
    k = (int64_t)((uint64_t)k + step);
    s.row[i] = rnd();
  }
  if( n>0 && rndBelow(4)==0 && !dup ) s.key[n-1] = INT64_MAX;
  if( !sorted ) std::shuffle(s.key.begin(), s.key.end(), gRng);
  s.tag.resize((size_t)n*nCol); s.val.resize((size_t)n*nCol);
  for(int c=0; c<nCol; c++){
    int mode = (int)rndBelow(4);     // 0: all tags; 1: ints only; 2: text; 3: pool
    for(int64_t i=0; i<n; i++){
      Val v;
      if( mode==0 ) v = rndVal();
      else if( mode==1 ){ v.tag = GPUDS_TAG_INT; v.val = (uint64_t)((int64_t)rndBelow(1000)-500); }
      else if( mode==2 ){
        std::string z = rndStr();
        v.tag = GPUDS_TAG_TEXT; v.val = gpudsColBytes((const unsigned char*)z.data(), (uint32_t)z.size());
      }else v = s.pool[rndBelow(s.pool.size())];
      s.tag[(size_t)c*n+i] = v.tag;
      s.val[(size_t)c*n+i] = v.val;
    }
  }
  return s;
}

// A random key inside or near the set's keys.
static int64_t rndKey(const Set &s){
  switch( rndBelow(6) ){
    case 0: return INT64_MIN;
    case 1: return INT64_MAX;
    case 2: return (int64_t)rnd();
    default:
      if( s.n==0 ) return (int64_t)rndBelow(100);
      int64_t k = s.key[rndBelow(s.n)];
      int64_t d = (int64_t)rndBelow(3)-1;
      if( (d<0 && k==INT64_MIN) || (d>0 && k==INT64_MAX) ) d = 0;
      return k+d;
  }
}

// A random query (its terms and skip list kept in *aT, *aSkip).
static gpuds_query makeQuery(const Set &s, std::vector<gpuds_term> &aT,
                             std::vector<int64_t> &aSkip){
  gpuds_query q;
  memset(&q, 0, sizeof(q));
  q.lo = INT64_MIN; q.hi = INT64_MAX;
  int r = (int)rndBelow(5);
  if( r==1 ){ q.lo = rndKey(s); q.hi = rndKey(s); if( q.lo>q.hi && rndBelow(4) ) std::swap(q.lo, q.hi); }
  else if( r==2 ) q.lo = rndKey(s);
  else if( r==3 ) q.hi = rndKey(s);
  aT.clear();
  if( s.nCol>0 ){
    int nT = (int)rndBelow(5);
    for(int t=0; t<nT; t++){
      gpuds_term T;
      memset(&T, 0, sizeof(T));
      T.iCol = (int)rndBelow(s.nCol);
      T.op = 1 + (int)rndBelow(18);                 // every op but IN (11) ...
      if( T.op>=GPUDS_CMP_IN ) T.op++;                // ... which comes below
      Val v = rndBelow(3)==0 ? rndVal() : s.pool[rndBelow(s.pool.size())];
      if( rndBelow(2)==0 && s.n>0 ){                // a value of the column
        size_t o = (size_t)T.iCol*s.n + rndBelow(s.n);
        v.tag = s.tag[o]; v.val = s.val[o];
      }
      T.tag = v.tag; T.val = v.val;
      aT.push_back(T);
    }
  }
  // IN terms: a list of values (sorted as gpudsColInCompare orders them)
  // per term, one after another, and random GPUDS_IN_xxx flags
  static std::vector<uint8_t> inTag;
  static std::vector<uint64_t> inVal;
  inTag.clear(); inVal.clear();
  for(size_t t=0; t<aT.size(); t++){
    if( rndBelow(4) ) continue;
    std::vector<std::pair<uint8_t,uint64_t>> L;
    int nv = (int)rndBelow(6);
    for(int j=0; j<nv; j++){
      Val v = s.pool[rndBelow(s.pool.size())];
      if( rndBelow(2)==0 && s.n>0 ){
        size_t o = (size_t)aT[t].iCol*s.n + rndBelow(s.n);
        v.tag = s.tag[o]; v.val = s.val[o];
      }
      if( v.tag!=GPUDS_TAG_NULL ) L.push_back({v.tag, v.val});
    }
    std::sort(L.begin(), L.end(), [](const std::pair<uint8_t,uint64_t> &a, const std::pair<uint8_t,uint64_t> &b){
      return gpudsColInCompare(a.first, a.second, b.first, b.second)<0; });
    aT[t].op = GPUDS_CMP_IN;
    aT[t].tag = (uint8_t)(rndBelow(2)*GPUDS_IN_TEXT | rndBelow(2)*GPUDS_IN_NUM);
    aT[t].val = ((uint64_t)inTag.size()<<32) | (uint32_t)L.size();
    for(auto &e : L){ inTag.push_back(e.first); inVal.push_back(e.second); }
  }
  q.aInTag = inTag.empty() ? nullptr : inTag.data();
  q.aInVal = inVal.empty() ? nullptr : inVal.data();
  q.nIn = (int64_t)inTag.size();
  aSkip.clear();
  if( rndBelow(3)==0 ){
    int64_t nS = rndBelow(4)==0 ? (int64_t)rndBelow(s.n/2+2) : (int64_t)rndBelow(20);
    for(int64_t i=0; i<nS; i++) aSkip.push_back(rndKey(s));
    std::sort(aSkip.begin(), aSkip.end());
    aSkip.erase(std::unique(aSkip.begin(), aSkip.end()), aSkip.end());
  }
  q.aTerm = aT.empty() ? nullptr : aT.data();
  q.nTerm = (int)aT.size();
  q.aSkip = aSkip.empty() ? nullptr : aSkip.data();
  q.nSkip = (int64_t)aSkip.size();
  q.iOrderCol = (s.nCol>0 && rndBelow(2)) ? (int)rndBelow(s.nCol) : -1;
  q.bDesc = (int)rndBelow(2);
  static const int64_t aFirst[] = {0, 1, 10, -1};
  int64_t f = aFirst[rndBelow(4)];
  q.nFirst = f<0 ? s.n : f;
  // a cap on the matches (past it: none returned, *pn = -1), either side
  // of the count
  q.nMost = rndBelow(4)==0 ? (int64_t)rndBelow((uint64_t)s.n + 3) : 0;
  return q;
}

// Run q on both sets; compare everything.  Returns the row count.
static int64_t compare(gpuds_cols *g, gpuds_cols *h, const gpuds_query &q, const char *zWhat,
                       bool bSort=true){
  int64_t nG = -1, nH = -1;
  int64_t *kG = nullptr, *kH = nullptr;
  uint64_t *rG = nullptr, *rH = nullptr, *sG = nullptr, *sH = nullptr;
  int rcH = H->xQuery(h, &q, &nH, &kH, &rH, bSort ? &sH : nullptr);
  int rcG = G->xQuery(g, &q, &nG, &kG, &rG, bSort ? &sG : nullptr);
  CHECK(rcG==rcH, "%s: rc %d, host %d (%s)", zWhat, rcG, rcH, G->xErrmsg(g));
  if( rcG==rcH && rcG==GPUDS_OK ){
    CHECK(nG==nH, "%s: %" PRId64 " rows, host %" PRId64 " (nTerm %d nSkip %" PRId64
          " order %d desc %d nFirst %" PRId64 " lo %" PRId64 " hi %" PRId64 ")",
          zWhat, nG, nH, q.nTerm, q.nSkip, q.iOrderCol, q.bDesc, q.nFirst, q.lo, q.hi);
    if( nG==nH ){
      bool okK = true, okR = true, okS = true;
      for(int64_t i=0; i<nG; i++){
        if( kG[i]!=kH[i] ) okK = false;
        if( rG[i]!=rH[i] ) okR = false;
      }
      if( bSort && q.iOrderCol>=0 && nG>0 ){
        if( !sG || !sH ) okS = false;
        else for(int64_t i=0; i<nG; i++) if( sG[i]!=sH[i] ){ okS = false; break; }
      }
      if( bSort && (q.iOrderCol<0 || nG==0) ) okS = sG==nullptr && sH==nullptr;
      CHECK(okK && okR && okS, "%s: differs (keys %d rows %d sorts %d; n %" PRId64
            " nTerm %d nSkip %" PRId64 " order %d desc %d nFirst %" PRId64 ")",
            zWhat, okK, okR, okS, nG, q.nTerm, q.nSkip, q.iOrderCol, q.bDesc, q.nFirst);
      CHECK(nG>0 || (kG==nullptr && rG==nullptr), "%s: arrays for 0 rows", zWhat);
    }
  }
  free(kG); free(kH); free(rG); free(rH); free(sG); free(sH);
  return nG;
}

// Load s into both implementations.
static void loadBoth(const Set &s, gpuds_cols **pg, gpuds_cols **ph){
  char *zErr = nullptr;
  int rc = G->xLoad(pg, s.nCol, s.n, s.bSorted, s.key.data(), s.row.data(), s.tag.data(),
                    s.val.data(), &zErr);
  if( rc!=GPUDS_OK ){ fprintf(stderr, "xLoad: %d %s\n", rc, zErr ? zErr : ""); exit(1); }
  free(zErr); zErr = nullptr;
  // the one-pass path of filters: its default, or a cap that small results
  // overflow (then the ordered path runs after it), or never
  switch( rndBelow(4) ){
    case 0: gpudsCudaColsSetFewMax(*pg, 1 + (int64_t)rndBelow(8)); break;
    case 1: gpudsCudaColsSetFewMax(*pg, 0); break;
    default: break;
  }
  rc = H->xLoad(ph, s.nCol, s.n, s.bSorted, s.key.data(), s.row.data(), s.tag.data(),
                s.val.data(), &zErr);
  if( rc!=GPUDS_OK ){ fprintf(stderr, "host xLoad: %d\n", rc); exit(1); }
  free(zErr);
}

// Random sets of every size, random queries.
static void testRandom(){
  static const int64_t aN[] = {0, 1, 2, 255, 256, 257, 1000, 100000};
  int64_t nQueries = 0, nRows = 0, nIndexed = 0;
  for(int64_t n : aN){
    // small (under compute-sanitizer): fewer sets and queries, every path
    int nSets = n>=100000 ? (gRace ? 1 : gSmall ? 2 : 6) : (gRace ? 2 : gSmall ? 4 : 10);
    for(int k=0; k<nSets; k++){
      int nCol = (int)rndBelow(5);
      bool sorted = (k&1)==0;
      bool dup = !sorted && (k%4)==3;
      Set s = makeSet(n, nCol, sorted, dup);
      gpuds_cols *g = nullptr, *h = nullptr;
      loadBoth(s, &g, &h);
      int nQ = n>=100000 ? (gRace ? 2 : gSmall ? 8 : 60) : (gRace ? 12 : gSmall ? 40 : 150);
      for(int i=0; i<nQ; i++){
        std::vector<gpuds_term> aT;
        std::vector<int64_t> aSkip;
        gpuds_query q = makeQuery(s, aT, aSkip);
        char z[96];
        snprintf(z, sizeof(z), "n=%" PRId64 " set %d (%s%s, %d cols) query %d", n, k,
                 sorted ? "sorted" : "unsorted", dup ? ", dup keys" : "", nCol, i);
        nRows += compare(g, h, q, z, rndBelow(4)!=0);
        nQueries++;
      }
      // the paths every size must take at least once: all rows in every
      // order, with and without nFirst (top-k on the big sets)
      for(int o=-1; o<(gRace && nCol>0 ? 1 : nCol); o++){
        for(int d=0; d<2; d++){
          for(int64_t f : {(int64_t)0, (int64_t)1, (int64_t)10, n}){
            if( gRace && (f==1 || (f==n && n>=100000)) ) continue;
            gpuds_query q;
            memset(&q, 0, sizeof(q));
            q.lo = INT64_MIN; q.hi = INT64_MAX;
            q.iOrderCol = o; q.bDesc = d; q.nFirst = f;
            char z[96];
            snprintf(z, sizeof(z), "n=%" PRId64 " set %d all rows order %d desc %d first %" PRId64,
                     n, k, o, d, f);
            nRows += compare(g, h, q, z);
            nQueries++;
          }
        }
      }
      CHECK(G->xBytes(g)>=(int64_t)(n*(16+9*(int64_t)nCol)), "xBytes %" PRId64 " too small",
            G->xBytes(g));
      nIndexed += gpudsCudaColsIndexed(g);
      G->xFree(g);
      H->xFree(h);
    }
  }
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error in test");
  // the equality indexes were built and used by some of those queries
  CHECK(nIndexed>0, "no column's equality index was built");
  printf("random: %" PRId64 " queries, %" PRId64 " rows compared, %" PRId64 " indexed columns\n",
         nQueries, nRows, nIndexed);
}

// Columns the set does not have: GPUDS_MISUSE, as the host says.
// gpudsColAsPairs (the words kAppend compares for one term) against
// gpudsColMatch on every pair of edge values: numbers at the int/real
// boundaries (2^53 + 1, 2^63, -0.0), text and blobs sharing prefixes, NULL.
static void testPairs(){
  std::vector<uint8_t> tags;
  std::vector<uint64_t> vals;
  const int64_t ints[] = {0, 1, -1, 3, 4242, 9007199254740992LL, 9007199254740993LL,
                          -9007199254740993LL, INT64_MAX, INT64_MIN};
  const double reals[] = {0.0, -0.0, 1.0, -1.0, 3.0, 0.5, 4242.0, 9007199254740992.0,
                          9007199254740994.0, 9223372036854775808.0, -9223372036854775808.0,
                          9.2e18, 1e300, -1e300};
  const char *texts[] = {"", "a", "3", "12", "abcd", "abcde", "abce"};
  for(int64_t i : ints){ tags.push_back(GPUDS_TAG_INT); vals.push_back((uint64_t)i); }
  for(double r : reals){ tags.push_back(GPUDS_TAG_REAL); vals.push_back(gpudsColReal(r)); }
  for(const char *z : texts){
    for(uint8_t t : {(uint8_t)GPUDS_TAG_TEXT, (uint8_t)GPUDS_TAG_BLOB}){
      tags.push_back(t); vals.push_back(gpudsColBytes((const unsigned char*)z, (uint32_t)strlen(z)));
    }
  }
  tags.push_back(GPUDS_TAG_NULL); vals.push_back(0);
  int nTaken = 0;
  for(int op=GPUDS_CMP_EQ; op<=GPUDS_CMP_UGE; op++){
    for(size_t c=0; c<tags.size(); c++){
      uint32_t any = 0; uint8_t aT[3]; uint64_t aV[3]; int n = 0;
      if( !gpudsColAsPairs(op, tags[c], vals[c], &any, aT, aV, &n) ) continue;
      nTaken++;
      for(size_t r=0; r<tags.size(); r++){
        bool want = gpudsColMatch(tags[r], vals[r], op, tags[c], vals[c])!=0;
        bool got = ((any>>tags[r]) & 1u)!=0;
        for(int k=0; k<n; k++) got |= aT[k]==tags[r] && aV[k]==vals[r];
        if( want!=got ){
          fprintf(stderr, "pairs: op %d const (%d, %016llx) value (%d, %016llx): %d, match %d\n", op,
                  tags[c], (unsigned long long)vals[c], tags[r], (unsigned long long)vals[r], got, want);
          gFail++;
        }
      }
    }
  }
  if( nTaken<4*(int)tags.size() ){ fprintf(stderr, "pairs: %d terms taken\n", nTaken); gFail++; }
}

static void testMisuse(){
  Set s = makeSet(100, 2, true, false);
  gpuds_cols *g = nullptr, *h = nullptr;
  loadBoth(s, &g, &h);
  gpuds_term T;
  memset(&T, 0, sizeof(T));
  T.iCol = 2; T.op = GPUDS_CMP_ISNULL;
  gpuds_query q;
  memset(&q, 0, sizeof(q));
  q.lo = INT64_MIN; q.hi = INT64_MAX; q.iOrderCol = -1;
  q.aTerm = &T; q.nTerm = 1;
  compare(g, h, q, "term on column 2 of 2");
  T.iCol = -1;
  compare(g, h, q, "term on column -1");
  q.nTerm = 0; q.iOrderCol = 2;
  compare(g, h, q, "order by column 2 of 2");
  int64_t n = 5, *aK = (int64_t*)1;
  uint64_t *aR = (uint64_t*)1;
  CHECK(G->xQuery(g, &q, &n, &aK, &aR, nullptr)==GPUDS_MISUSE && n==0 && !aK && !aR,
        "misuse leaves outputs empty");
  G->xFree(g); H->xFree(h);
  G->xFree(nullptr);
  printf("misuse: ok\n");
}

// Out of device memory: xLoad and xQuery return GPUDS_NOMEM with a message;
// the set works again once memory is there.
static void testNoMem(){
  Set s = makeSet(100000, 3, false, false);
  gpuds_cols *g = nullptr, *h = nullptr;
  loadBoth(s, &g, &h);
  gpuds_query q;
  memset(&q, 0, sizeof(q));
  q.lo = INT64_MIN; q.hi = INT64_MAX; q.iOrderCol = 1; q.bDesc = 1;
  int64_t held = G->xBytes(g);
  gpudsCudaColsSetDeviceLimit(g, (uint64_t)held + 1000);
  int64_t n = 0, *aK = nullptr;
  uint64_t *aR = nullptr, *aS = nullptr;
  int rc = G->xQuery(g, &q, &n, &aK, &aR, &aS);
  CHECK(rc==GPUDS_NOMEM, "query under a device limit: rc %d", rc);
  CHECK(G->xErrmsg(g)[0]!=0, "no message for NOMEM");
  CHECK(n==0 && !aK && !aR && !aS, "outputs after NOMEM");
  gpudsCudaColsSetDeviceLimit(g, 0);
  compare(g, h, q, "after lifting the limit");
  q.nFirst = 10;
  compare(g, h, q, "after lifting the limit, top 10");
  CHECK(cudaGetLastError()==cudaSuccess, "CUDA error after NOMEM");
  G->xFree(g); H->xFree(h);
  printf("nomem: ok\n");
}

// Median wall time (ms) of 5 runs of q on g; the result compared with h once.
static double timeQuery(gpuds_cols *g, gpuds_cols *h, const gpuds_query &q, const char *zWhat,
                        int64_t *pn){
  std::vector<double> t;
  int64_t nOut = 0;
  for(int r=0; r<5; r++){
    int64_t n = 0, *aK = nullptr;
    uint64_t *aR = nullptr, *aS = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    int rc = G->xQuery(g, &q, &n, &aK, &aR, &aS);
    auto t1 = std::chrono::steady_clock::now();
    CHECK(rc==GPUDS_OK, "%s: rc %d %s", zWhat, rc, G->xErrmsg(g));
    t.push_back(std::chrono::duration<double, std::milli>(t1-t0).count());
    nOut = n;
    free(aK); free(aR); free(aS);
  }
  std::sort(t.begin(), t.end());
  compare(g, h, q, zWhat);
  *pn = nOut;
  return t[2];
}

// 10^7 rows: timings of typical queries (printed, not asserted).
static void testTiming(){
  const int64_t n = 10000000;
  Set s;
  s.n = n; s.nCol = 3; s.bSorted = 0;
  s.key.resize(n); s.row.resize(n); s.tag.resize(3*n); s.val.resize(3*n);
  for(int64_t i=0; i<n; i++){ s.key[i] = i*3; s.row[i] = rnd(); }
  std::shuffle(s.key.begin(), s.key.end(), gRng);
  for(int64_t i=0; i<n; i++){
    s.tag[i] = GPUDS_TAG_INT; s.val[i] = rndBelow(100000);          // c0: ~100 rows a value
    s.tag[n+i] = GPUDS_TAG_REAL; s.val[n+i] = gpudsColReal((double)rndBelow(1000000)/7.0);
    std::string z = rndStr();
    s.tag[2*n+i] = GPUDS_TAG_TEXT;
    s.val[2*n+i] = gpudsColBytes((const unsigned char*)z.data(), (uint32_t)z.size());
  }
  for(int sorted=0; sorted<2; sorted++){
    if( sorted ){ std::sort(s.key.begin(), s.key.end()); s.bSorted = 1; }
    gpuds_cols *g = nullptr, *h = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    char *zErr = nullptr;
    int rc = G->xLoad(&g, s.nCol, s.n, s.bSorted, s.key.data(), s.row.data(), s.tag.data(),
                      s.val.data(), &zErr);
    auto t1 = std::chrono::steady_clock::now();
    if( rc ){ fprintf(stderr, "xLoad 10^7: %d %s\n", rc, zErr ? zErr : ""); gFail++; free(zErr); return; }
    rc = H->xLoad(&h, s.nCol, s.n, s.bSorted, s.key.data(), s.row.data(), s.tag.data(),
                  s.val.data(), nullptr);
    if( rc ){ fprintf(stderr, "host xLoad 10^7 failed\n"); gFail++; G->xFree(g); return; }
    printf("timing (%s keys): xLoad of 10^7 rows x 3 cols %.1f ms\n",
           sorted ? "sorted" : "unsorted", std::chrono::duration<double, std::milli>(t1-t0).count());
    gpuds_term T;
    memset(&T, 0, sizeof(T));
    gpuds_query q;
    int64_t nOut = 0;
    double ms;
    struct { const char *z; int nTerm; int op; int order; int desc; int64_t first; int64_t lo, hi; } aCase[] = {
      {"c0 = v (about 100 rows), key order", 1, GPUDS_CMP_EQ, -1, 0, 0, INT64_MIN, INT64_MAX},
      {"c0 = v, key order desc", 1, GPUDS_CMP_EQ, -1, 1, 0, INT64_MIN, INT64_MAX},
      {"c0 = v, order by c1", 1, GPUDS_CMP_EQ, 1, 0, 0, INT64_MIN, INT64_MAX},
      {"key range of 1000 rows", 0, 0, -1, 0, 0, 3000000, 3002997},
      {"all rows, order by c1 limit 10", 0, 0, 1, 0, 10, INT64_MIN, INT64_MAX},
      {"all rows, order by c2 desc limit 10", 0, 0, 2, 1, 10, INT64_MIN, INT64_MAX},
      {"all rows, key order desc limit 10", 0, 0, -1, 1, 10, INT64_MIN, INT64_MAX},
      {"c0 < 50000 (half), order by c1", 1, GPUDS_CMP_LT, 1, 0, 0, INT64_MIN, INT64_MAX},
      {"all rows, key order", 0, 0, -1, 0, 0, INT64_MIN, INT64_MAX},
    };
    for(auto &C : aCase){
      memset(&q, 0, sizeof(q));
      T.iCol = 0; T.op = C.op; T.tag = GPUDS_TAG_INT;
      T.val = C.op==GPUDS_CMP_LT ? 50000 : 4242;
      q.aTerm = &T; q.nTerm = C.nTerm;
      q.lo = C.lo; q.hi = C.hi; q.iOrderCol = C.order; q.bDesc = C.desc; q.nFirst = C.first;
      ms = timeQuery(g, h, q, C.z, &nOut);
      printf("timing (%s keys): %-40s %9" PRId64 " rows %8.3f ms\n",
             sorted ? "sorted" : "unsorted", C.z, nOut, ms);
    }
    printf("timing: device bytes held %.1f MiB\n", G->xBytes(g)/1048576.0);
    {
      // A query that returned all 10^7 rows keeps its workspace for the
      // next; after a selective one the set holds its arrays (keys, rows, 3
      // tags and values: 43 B a row, and c0's equality index, which the
      // c0 = v timings built: 12 B a row) and at most a quarter of them as
      // workspace (and its small parameter buffer): the rest went back
      // (trimWorkspace, kernels/cols/ops.cuh).
      int64_t arrays = n*(43 + 12), most = arrays + arrays/4 + ((int64_t)8<<20);
      CHECK(G->xBytes(g)>most, "a big query's workspace is kept for the next: %" PRId64
            " <= %" PRId64, G->xBytes(g), most);
      memset(&q, 0, sizeof(q));
      T.iCol = 0; T.op = GPUDS_CMP_EQ; T.tag = GPUDS_TAG_INT; T.val = 4242;
      q.aTerm = &T; q.nTerm = 1; q.lo = INT64_MIN; q.hi = INT64_MAX; q.iOrderCol = -1;
      compare(g, h, q, "c0 = v after the big queries");
      CHECK(G->xBytes(g)<=most, "device bytes held after a selective query: %" PRId64 " > %" PRId64,
            G->xBytes(g), most);
      printf("timing: device bytes held after a selective query %.1f MiB\n", G->xBytes(g)/1048576.0);
    }
    G->xFree(g); H->xFree(h);
  }
}

int main(int argc, char **argv){
  char zDev[256];
  uint64_t nFree = 0;
  if( argc>1 && strcmp(argv[1], "race")==0 ) gRace = gSmall = true;
  if( !gpuTestStart(argc, argv, zDev, sizeof(zDev), &nFree) ) return 77;
  if( getenv("GPUDS_TEST_SEED") ) gRng.seed(strtoull(getenv("GPUDS_TEST_SEED"), nullptr, 0));
  printf("device: %s, %.1f GiB free; sizes: %s; seed %s\n", zDev, nFree/1073741824.0,
         gRace ? "race" : gSmall ? "small" : "full",
         getenv("GPUDS_TEST_SEED") ? getenv("GPUDS_TEST_SEED") : "20240612 (GPUDS_TEST_SEED)");
  testPairs();
  testMisuse();
  testNoMem();
  testRandom();
  if( !gSmall ) testTiming();
  if( gFail ){
    printf("FAILED: %d checks\n", gFail.load());
    return 1;
  }
  printf("PASS\n");
  return 0;
}
