/*
** bench_gfsl.cu -- throughput of the GFSL ordered store (kernels/gfsl.cu)
** on the workloads of the GFSL paper (Moscovici & Petrank, PACT 2017), with
** device-resident batches timed by CUDA events (host transfers excluded).
**
**   bench_gfsl [out.csv] [--quick] [--contains]
**
** Rows: for key ranges 10^4 .. 10^8 (--quick: up to 10^7)
**   mixes [insert,delete,contains] = [1,1,98] [5,5,90] [10,10,80] [20,20,60]:
**       store prefilled with a random half of the range, one batch of
**       min(range,10M) operations on distinct keys in random order (a batch
**       holds distinct keys: the backend contract of xBatch);
**   insert-only: empty store, min(range,10M) distinct random keys;
**   delete-only: store holding the whole range, min(range,10M) distinct keys;
**   contains-only: store holding the whole range, 10M random lookups
**       (median of 3) through the default lookup path (for 10M keys: the
**       sorted path, sort included); contains-unsorted: the same through
**       kLookup1 (the default before the sorted path); contains-only-v1:
**       kLookup; contains-batch: xBatch-style all-lookup batch of
**       min(range,10M) distinct keys;
**       contains-half / contains-half-unsorted: store prefilled with a
**       random half of the range (like the mixes);
** then range scans (widths 10, 10^3, 10^6 on 10^7 keys, rows/s into device
** memory) and a bulk build of 10^8 random 64-bit keys (sort included).
** Unless --quick: lookup batches of 2^10..2^22 keys on 10^7 keys, unsorted,
** sorted and the default (where the sorted path starts to pay).
** --contains: only the contains rows, that sweep, the bulk build and
** contains-built.
** --host: only the host-array rows: xLookup of 10^7 keys (uniform in
** [0, 2*10^7), so about half present, random order) from host arrays on a
** store of the 10^7 keys [0, 10^7), host clock, every transfer included,
** median of 5 after a warm-up call: host-lookup-single (gfsl::setHostChunk
** 0, the path before the pipeline: sorted), host-lookup-c2^k (the chunked
** pipeline, chunks of 2^k keys, default variant: unsorted chunks),
** host-lookup-c2^k-sorted (variant 3: sorted chunks),
** host-lookup-single-unsorted (variant 2); and host-lookup-devonly, the same
** keys from device memory (lookupDevice, default path, CUDA events), for
** reference.
*/
#include "gpuds_backend.h"
#include "gfsl.cuh"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#define CK(x) do{ cudaError_t e_ = (x); if( e_!=cudaSuccess ){ \
  fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(1); } }while(0)
#define OK(x, p) do{ int rc_ = (x); if( rc_!=GPUDS_OK ){ \
  fprintf(stderr, "gfsl error %d at %s:%d: %s\n", rc_, __FILE__, __LINE__, gpudsCudaOrderedOps.xErrmsg(p)); exit(1); } }while(0)

static const gpuds_store_ops *G = &gpudsCudaOrderedOps;
static FILE *gCsv = nullptr;

__host__ __device__ static inline unsigned long long splitmix(unsigned long long x){
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x>>30))*0xbf58476d1ce4e5b9ull;
  x = (x ^ (x>>27))*0x94d049bb133111ebull;
  return x ^ (x>>31);
}

/* A permutation of [0,R): i -> (i*A + B) mod R, A coprime to 10^k. */
__host__ __device__ static inline long long permKey(unsigned long long i, unsigned long long R){
  return (long long)((i*2654435761ull + 1234567ull) % R);
}

/* Keys 0..n-1 (sorted), values = key. */
__global__ void kSeq(size_t n, long long *k, unsigned long long *v){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){ k[i] = (long long)i; v[i] = i; }
}
/* Keys permKey(i) for i<n (distinct), values random. */
__global__ void kPerm(size_t n, unsigned long long R, long long *k, unsigned long long *v){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    k[i] = permKey(i, R); if( v ) v[i] = splitmix(i);
  }
}
/* Random distinct 64-bit keys (splitmix is a bijection). */
__global__ void kRand64(size_t n, unsigned long long seed, long long *k, unsigned long long *v){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    k[i] = (long long)splitmix(i + seed); v[i] = i;
  }
}
/* A mixed batch of n operations, ops by percentage; keys uniform in [0,R)
** (repeats possible: for lookups), or if bDistinct n <= R DISTINCT keys, a
** permutation window of [0,R) (permKey of n consecutive indices). */
__global__ void kMix(size_t n, unsigned long long R, int pI, int pD, unsigned long long seed,
                     unsigned char *op, long long *k, unsigned long long *v, bool bDistinct = false){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    unsigned long long h = splitmix(i*0x632be59bd9b4e019ull + seed);
    int x = (int)(h % 100);
    op[i] = x<pI ? GPUDS_OP_UPSERT : x<pI+pD ? GPUDS_OP_DELETE : GPUDS_OP_LOOKUP;
    k[i] = bDistinct ? permKey(i + seed, R) : (long long)(splitmix(h) % R);
    v[i] = h;
  }
}
__global__ void kFill8(size_t n, unsigned char x, unsigned char *a){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ) a[i] = x;
}

struct Dev {
  unsigned char *op = nullptr, *found = nullptr;
  long long *k = nullptr, *k2 = nullptr;
  unsigned long long *v = nullptr, *v2 = nullptr, *old = nullptr;
};

static void row(const char *zWork, unsigned long long range, double nOps, double sec, const char *zUnit,
                const char *zNote){
  double rate = nOps/sec;
  printf("%-16s %12llu %12.0f %10.3f ms %10.1f M%s/s  %s\n", zWork, range, nOps, sec*1e3, rate/1e6, zUnit, zNote);
  fflush(stdout);
  if( gCsv ){
    fprintf(gCsv, "\"%s\",%llu,%.0f,%.6f,%.0f,%s\n", zWork, range, nOps, sec, rate, zUnit);  /* quoted: mix[10,10,80] holds commas */
    fflush(gCsv);
  }
}

/* Fresh store; prefill: 0 none, 1 a random half of [0,R), 2 all of [0,R). */
static gpuds_store *mkStore(int prefill, unsigned long long R, Dev &d){
  gpuds_store *p = nullptr;
  char *zErr = nullptr;
  if( G->xCreate(&p, &zErr) ){ fprintf(stderr, "create: %s\n", zErr ? zErr : "?"); exit(1); }
  if( prefill==1 ){
    kPerm<<<1024, 256>>>(R/2, R, d.k2, d.v2);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    OK(gfsl::bulkBuildDevice(p, R/2, (const int64_t*)d.k2, (const uint64_t*)d.v2, 0), p);
  }else if( prefill==2 ){
    kSeq<<<1024, 256>>>(R, d.k2, d.v2);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    OK(gfsl::bulkBuildDevice(p, R, (const int64_t*)d.k2, (const uint64_t*)d.v2, 1), p);
  }
  return p;
}

/* Time one device batch with CUDA events on the store's stream. */
static double timeBatch(gpuds_store *p, size_t n, Dev &d, bool lookupOnly){
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  cudaStream_t st = gfsl::stream(p);
  CK(cudaDeviceSynchronize());
  CK(cudaEventRecord(e0, st));
  if( lookupOnly ) OK(gfsl::lookupDevice(p, n, (const int64_t*)d.k, d.found, (uint64_t*)d.old), p);
  else OK(gfsl::batchDevice(p, n, d.op, (const int64_t*)d.k, (const uint64_t*)d.v, d.found, (uint64_t*)d.old), p);
  CK(cudaEventRecord(e1, st));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return ms/1e3;
}

/* Median of 3 timings of a lookup batch of n keys (d.k) with the lookup
** variant v (the store does not change). */
static double timeLookup(gpuds_store *p, size_t n, Dev &d, int v){
  gfsl::setLookupVariant(p, v);
  double t[3];
  for( int r=0; r<3; r++ ) t[r] = timeBatch(p, n, d, true);
  gfsl::setLookupVariant(p, 0);
  std::sort(t, t+3);
  return t[1];
}

static std::string note(gpuds_store *p){
  gfsl::BatchStats s; gfsl::lastBatchStats(p, &s);
  char z[200];
  snprintf(z, sizeof(z), "(ins %llu del %llu splits %llu merges %llu%s levels %d keys %lld)",
           (unsigned long long)s.nInsert, (unsigned long long)s.nDelete, (unsigned long long)s.nSplit,
           (unsigned long long)s.nMerge, s.rebuilt ? " REBUILT" : "", s.nLevels, (long long)G->xCount(p));
  return z;
}

/* The --host rows (see the top of this file). */
static int hostRows(Dev &d){
  const unsigned long long R = 10000000ull;
  const size_t NQ = 10000000;
  gpuds_store *p = mkStore(2, R, d);
  std::vector<int64_t> q(NQ);
  size_t nHit = 0;
  for( size_t i=0; i<NQ; i++ ){
    q[i] = (int64_t)(splitmix(i*0x632be59bd9b4e019ull + 4242) % (2*R));
    nHit += (unsigned long long)q[i]<R;
  }
  std::vector<uint8_t> f(NQ, 0);
  std::vector<uint64_t> v(NQ, 0);
  struct Cfg { const char *z; size_t chunk; int variant; } cfg[] = {
    { "host-lookup-single", 0, 0 }, { "host-lookup-c2^18", (size_t)1<<18, 0 },
    { "host-lookup-c2^19", (size_t)1<<19, 0 }, { "host-lookup-c2^20", (size_t)1<<20, 0 },
    { "host-lookup-c2^21", (size_t)1<<21, 0 }, { "host-lookup-c2^19-sorted", (size_t)1<<19, 3 },
    { "host-lookup-c2^20-sorted", (size_t)1<<20, 3 }, { "host-lookup-single-unsorted", 0, 2 } };
  for( const Cfg &c : cfg ){
    gfsl::setHostChunk(p, c.chunk);
    gfsl::setLookupVariant(p, c.variant);
    std::vector<double> t;
    for( int r=0; r<6; r++ ){
      memset(f.data(), 7, NQ);
      auto t0 = std::chrono::steady_clock::now();
      OK(G->xLookup(p, NQ, q.data(), f.data(), v.data()), p);
      double sec = std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count();
      if( r ) t.push_back(sec);
    }
    size_t bad = 0;
    for( size_t i=0; i<NQ; i++ ){
      const bool hit = (unsigned long long)q[i]<R;
      bad += f[i]!=(hit ? 1 : 0) || v[i]!=(hit ? (uint64_t)q[i] : 0);
    }
    if( bad ){ fprintf(stderr, "%s: %zu wrong\n", c.z, bad); return 1; }
    std::sort(t.begin(), t.end());
    char zn[160];
    snprintf(zn, sizeof(zn), "(xLookup host arrays, host clock incl. transfers, median of 5, %zu/%zu found, %s%s)",
             nHit, NQ, c.chunk ? "chunked pipeline" : "single-shot",
             c.variant==2 ? ", variant 2: unsorted kLookup1" : c.variant==3 ? ", variant 3: sorted chunks" :
             c.chunk ? ", variant 0: unsorted chunks" : ", variant 0: sorted");
    row(c.z, R, NQ, t[2], "ops", zn);
  }
  gfsl::setHostChunk(p, (size_t)1<<19);
  gfsl::setLookupVariant(p, 0);
  CK(cudaMemcpy(d.k, q.data(), NQ*8, cudaMemcpyHostToDevice));
  double s = timeLookup(p, NQ, d, 0);
  row("host-lookup-devonly", R, NQ, s, "ops", "(the same keys from device memory, lookupDevice, default path: sorted; median of 3)");
  G->xDestroy(p);
  return 0;
}

int main(int argc, char **argv){
  char zDev[256];
  uint64_t nFree = 0, nTotal = 0;
  if( !gpudsCudaDevice(zDev, sizeof(zDev), &nFree, &nTotal) ){
    printf("SKIPPED: no usable CUDA device (%s)\n", zDev);
    return 77;
  }
  bool bQuick = false, bContains = false, bHost = false;
  const char *zCsv = nullptr;
  for( int i=1; i<argc; i++ ){
    if( !strcmp(argv[i], "--quick") ) bQuick = true;
    else if( !strcmp(argv[i], "--contains") ) bContains = true;
    else if( !strcmp(argv[i], "--host") ) bHost = true;
    else zCsv = argv[i];
  }
  if( zCsv ){
    gCsv = fopen(zCsv, "w");
    if( !gCsv ){ perror(zCsv); return 1; }
    fprintf(gCsv, "workload,range,ops,seconds,rate_per_s,unit\n");
  }
  printf("device: %s (%.1f GiB)\n", zDev, nTotal/1073741824.0);
  const size_t NOPS = 10000000;
  const unsigned long long MAXR = bQuick || bHost ? 10000000ull : 100000000ull;
  Dev d;
  size_t nBuf = std::max<size_t>(NOPS, MAXR);
  CK(cudaMalloc(&d.op, NOPS)); CK(cudaMalloc(&d.found, NOPS));
  CK(cudaMalloc(&d.k, NOPS*8)); CK(cudaMalloc(&d.v, NOPS*8)); CK(cudaMalloc(&d.old, NOPS*8));
  CK(cudaMalloc(&d.k2, nBuf*8)); CK(cudaMalloc(&d.v2, nBuf*8));

  printf("%-16s %12s %12s %13s %16s\n", "workload", "range", "ops", "time", "rate");
  if( bHost ){
    int rc = hostRows(d);
    if( gCsv ) fclose(gCsv);
    return rc;
  }
  /* warm-up */
  {
    gpuds_store *p = mkStore(1, 100000, d);
    kMix<<<1024, 256>>>(100000, 100000, 10, 10, 99, d.op, d.k, d.v, true);
    CK(cudaGetLastError());
    timeBatch(p, 100000, d, false);
    G->xDestroy(p);
  }
  struct Mix { const char *z; int i, dl; } mixes[] = {
    { "mix[1,1,98]", 1, 1 }, { "mix[5,5,90]", 5, 5 }, { "mix[10,10,80]", 10, 10 }, { "mix[20,20,60]", 20, 20 } };
  for( unsigned long long R=10000; R<=MAXR; R*=10 ){
    size_t n = std::min<size_t>(R, NOPS);
    for( const Mix &m : mixes ){
      if( bContains ) break;
      gpuds_store *p = mkStore(1, R, d);
      kMix<<<1024, 256>>>(n, R, m.i, m.dl, R*7+m.i, d.op, d.k, d.v, true);
      CK(cudaGetLastError());
      double s = timeBatch(p, n, d, false);
      row(m.z, R, n, s, "ops", note(p).c_str());
      G->xDestroy(p);
    }
    if( !bContains ){
      gpuds_store *p = mkStore(0, R, d);
      kPerm<<<1024, 256>>>(n, R, d.k, d.v);
      kFill8<<<1024, 256>>>(n, GPUDS_OP_UPSERT, d.op);
      CK(cudaGetLastError());
      double s = timeBatch(p, n, d, false);
      row("insert-only", R, n, s, "ops", note(p).c_str());
      G->xDestroy(p);
    }
    if( !bContains ){
      gpuds_store *p = mkStore(2, R, d);
      kPerm<<<1024, 256>>>(n, R, d.k, d.v);
      kFill8<<<1024, 256>>>(n, GPUDS_OP_DELETE, d.op);
      CK(cudaGetLastError());
      double s = timeBatch(p, n, d, false);
      row("delete-only", R, n, s, "ops", note(p).c_str());
      G->xDestroy(p);
    }
    {
      gpuds_store *p = mkStore(2, R, d);
      kMix<<<1024, 256>>>(NOPS, R, 0, 0, R*11, d.op, d.k, d.v);
      CK(cudaGetLastError());
      double s = timeLookup(p, NOPS, d, 0);
      row("contains-only", R, NOPS, s, "ops", "(lookupDevice, default path: sorted, sort included; median of 3)");
      s = timeLookup(p, NOPS, d, 2);
      row("contains-unsorted", R, NOPS, s, "ops", "(lookupDevice, variant 2: kLookup1, unsorted; median of 3)");
      s = timeLookup(p, NOPS, d, 1);
      row("contains-only-v1", R, NOPS, s, "ops", "(lookupDevice, variant 1: kLookup, 32-key tiles per warp, unsorted)");
      kMix<<<1024, 256>>>(n, R, 0, 0, R*11, d.op, d.k, d.v, true);
      CK(cudaGetLastError());
      s = timeBatch(p, n, d, false);
      row("contains-batch", R, n, s, "ops", "(batchDevice, all lookups of distinct keys, default path)");
      G->xDestroy(p);
    }
    {
      gpuds_store *p = mkStore(1, R, d);
      kMix<<<1024, 256>>>(NOPS, R, 0, 0, R*13, d.op, d.k, d.v);
      CK(cudaGetLastError());
      double s = timeLookup(p, NOPS, d, 0);
      row("contains-half", R, NOPS, s, "ops", "(prefilled to half; default path, sorted; median of 3)");
      s = timeLookup(p, NOPS, d, 2);
      row("contains-half-unsorted", R, NOPS, s, "ops", "(prefilled to half; kLookup1, unsorted; median of 3)");
      G->xDestroy(p);
    }
  }
  if( !bQuick || bContains ){   /* where the sorted path starts to pay: batch sizes on 10^7 keys */
    const unsigned long long R = 10000000ull;
    gpuds_store *p = mkStore(2, R, d);
    for( size_t n=1024; n<=((size_t)1<<22); n*=4 ){
      kMix<<<1024, 256>>>(n, R, 0, 0, n*17, d.op, d.k, d.v);
      CK(cudaGetLastError());
      char zw[64];
      double su = timeLookup(p, n, d, 2), ss = timeLookup(p, n, d, 3), s0 = timeLookup(p, n, d, 0);
      snprintf(zw, sizeof(zw), "lookup-n%zu-unsorted", n);
      row(zw, R, n, su, "ops", "(variant 2, kLookup1; median of 3)");
      snprintf(zw, sizeof(zw), "lookup-n%zu-sorted", n);
      row(zw, R, n, ss, "ops", "(variant 3, sorted path; median of 3)");
      snprintf(zw, sizeof(zw), "lookup-n%zu-default", n);
      row(zw, R, n, s0, "ops", "(variant 0, the default: sorted from 2^19 keys; median of 3)");
    }
    G->xDestroy(p);
  }
  /* range scans on 10^7 keys, into device memory */
  if( !bContains ){
    const unsigned long long R = 10000000ull;
    gpuds_store *p = mkStore(2, R, d);
    OK(gfsl::prepareScan(p), p);
    unsigned long long widths[] = { 10, 1000, 1000000 };
    for( unsigned long long w : widths ){
      int reps = w<=1000 ? 2000 : 50;
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
      double rows = 0;
      CK(cudaEventRecord(e0, gfsl::stream(p)));
      for( int r=0; r<reps; r++ ){
        gpuds_scan sc; memset(&sc, 0, sizeof(sc));
        sc.lo = (long long)(splitmix(r) % (R-w)); sc.hi = sc.lo + (long long)w - 1; sc.desc = r&1;
        size_t got = 0;
        OK(gfsl::scanDevice(p, &sc, w, (int64_t*)d.k2, (uint64_t*)d.v2, &got), p);
        rows += got;
      }
      CK(cudaEventRecord(e1, gfsl::stream(p)));
      CK(cudaEventSynchronize(e1));
      float ms = 0; CK(cudaEventElapsedTime(&ms, e0, e1));
      char zw[64]; snprintf(zw, sizeof(zw), "scan-w%llu", w);
      char zn[64]; snprintf(zn, sizeof(zn), "(%d scans, %.1f us each)", reps, ms*1e3/reps);
      row(zw, R, rows, ms/1e3, "rows", zn);
      cudaEventDestroy(e0); cudaEventDestroy(e1);
    }
    G->xDestroy(p);
  }
  /* bulk build of random 64-bit keys, sort included */
  {
    size_t n = (size_t)MAXR;
    kRand64<<<1024, 256>>>(n, 12345, d.k2, d.v2);
    CK(cudaGetLastError());
    gpuds_store *p = mkStore(0, 0, d);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0, gfsl::stream(p)));
    OK(gfsl::bulkBuildDevice(p, n, (const int64_t*)d.k2, (const uint64_t*)d.v2, 0), p);
    CK(cudaEventRecord(e1, gfsl::stream(p)));
    CK(cudaEventSynchronize(e1));
    float ms = 0; CK(cudaEventElapsedTime(&ms, e0, e1));
    row("bulk-build", n, n, ms/1e3, "keys", note(p).c_str());
    /* the same store answers lookups */
    kMix<<<1024, 256>>>(NOPS, ~0ull, 0, 0, 5, d.op, d.k, d.v);
    CK(cudaMemcpy(d.k, d.k2, NOPS*8, cudaMemcpyDeviceToDevice));
    double s = timeLookup(p, NOPS, d, 0);
    row("contains-built", n, NOPS, s, "ops", "(keys present, random order; default path: sorted, 64-bit sort keys)");
    s = timeLookup(p, NOPS, d, 2);
    row("contains-built-unsorted", n, NOPS, s, "ops", "(keys present, random order; kLookup1, unsorted)");
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    G->xDestroy(p);
  }
  if( gCsv ) fclose(gCsv);
  return 0;
}
