// bench_hash.cu -- throughput of the GPU hash store on device-resident
// batches (not a test).  Kernels are timed with CUDA events on the store's
// stream; keys are pseudo-random distinct int64 (a bijective mix of an index).
//
// usage: bench_hash [out.csv] [maxLog2=27] [minLog2=20] [only|all] [loads=0.5,0.8]
// (only: run just the measurements whose name starts with it, e.g. "mixed";
// "all" or "" runs everything; the setup they need still runs.  loads: the
// target loads, comma-separated)
//
// For each table size N = 2^lg and target load L: a table presized for N
// keys at load L (gpuds_hash::reserve), then
//   insert-batch   N upserts through the batch path (batchDevice, op codes
//                  read), fresh presized table
//   insert         N upserts of distinct keys (upsertDistinctDevice)
//   find-hit       N lookups of present keys          (load L)
//   find-miss      N lookups of absent keys           (load L)
//   mixed          batches of N/4 ops of distinct keys (the backend
//                  contract): 10% upsert (new keys), 10% delete, 80% lookup,
//                  each variant on a fresh table of N keys (one warm-up
//                  batch, one timed):
//     mixed-distinct         batchDevice (device arrays, kernel time)
//     mixed-distinct-host    G->xBatch on host arrays, host clock,
//                            transfers included (not kernel time)
//   delete         N/2 deletes of present keys, batch path
// and growth from an empty table to 2^26 keys in batches of 2^22 through the
// table's own resizes (distinct-upsert path and batch path).
// (Until the backend contract said "keys in a batch are distinct", the rows
// mixed-10-10-80 and mixed-general-distinct measured a general path for
// repeated keys; it is gone, and so are they.)
// Host arrays, end to end (host clock, every transfer included; "host" as
// `only` runs just these):
//   host-lookup-*  xLookup of 10^7 keys (half present, half absent, random
//                  order) from host arrays on a table of 2^26 keys presized
//                  at load 0.5: single-shot (setHostChunk 0, the path before
//                  the pipeline) and the chunked pipeline with chunks of
//                  2^18..2^21 keys; median of 5 after a warm-up call;
//                  host-lookup-devonly: the same keys from device memory
//                  (lookupDevice, CUDA events: kernel only), for reference
//   host-upsert-*  xBatch of 2^20, 2^22, 2^24 upserts of fresh keys
//                  (found/old wanted) into a presized table: single-shot
//                  upload vs staged (chunks of 2^19); median of 3 after a
//                  warm-up batch
#include "gpuds_backend.h"
#include "hash.cuh"

#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do{ cudaError_t e_ = (x); if( e_!=cudaSuccess ){                 \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
            cudaGetErrorString(e_)); exit(1); } }while(0)
#define OK(x) do{ int rc_ = (x); if( rc_!=GPUDS_OK ){                          \
    fprintf(stderr, "%s:%d: %s: rc=%d\n", __FILE__, __LINE__, #x, rc_); exit(1); } }while(0)

static const gpuds_store_ops *G = &gpudsCudaHashOps;
static const uint64_t SEED = 0x5eed5eed12345678ull;

// splitmix64 finalizer: a bijection, so distinct indices give distinct keys.
__host__ __device__ static inline uint64_t smix(uint64_t x){
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27; x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}
__host__ __device__ static inline int64_t keyOf(uint64_t j){ return (int64_t)smix(j ^ SEED); }

// k[i] = key of index base+i, v[i] = base+i.
__global__ void kGen(int64_t *k, uint64_t *v, size_t n, uint64_t base){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=(size_t)gridDim.x*blockDim.x ){
    k[i] = keyOf(base+i);
    if( v ) v[i] = base+i;
  }
}

// [10,10,80] mix of DISTINCT keys for round d of a table holding indices
// [0, nKeys), nKeys = 4*n: upserts of fresh keys (index insBase+i), deletes
// of index (d*n+i) mod nKeys, lookups of index ((d+2)*n+i) mod nKeys (two
// disjoint windows, so no key repeats; both present unless an earlier round
// deleted them).
__global__ void kGenMixedDistinct(uint8_t *op, int64_t *k, uint64_t *v, size_t n,
                                  uint64_t nKeys, uint64_t insBase, uint64_t d,
                                  uint64_t salt){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=(size_t)gridDim.x*blockDim.x ){
    uint64_t r = smix(i*0x9E3779B97F4A7C15ull ^ salt);
    int x = (int)(r%10);
    if( x==0 ){ op[i] = GPUDS_OP_UPSERT; k[i] = keyOf(insBase+i); v[i] = insBase+i; }
    else if( x==1 ){ op[i] = GPUDS_OP_DELETE; k[i] = keyOf((d*n+i)%nKeys); v[i] = 0; }
    else{ op[i] = GPUDS_OP_LOOKUP; k[i] = keyOf(((d+2)*n+i)%nKeys); v[i] = 0; }
  }
}

// *out += number of ops that are not upserts.
__global__ void kCountNonUpsert(const uint8_t *op, size_t n, unsigned long long *out){
  unsigned long long s = 0;
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=(size_t)gridDim.x*blockDim.x ) s += op[i]!=GPUDS_OP_UPSERT;
  for( int o=16; o>0; o>>=1 ) s += __shfl_xor_sync(0xffffffffu, s, o);
  if( (threadIdx.x&31)==0 && s ) atomicAdd(out, s);
}

__global__ void kFill(uint8_t *p, size_t n, uint8_t x){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=(size_t)gridDim.x*blockDim.x ) p[i] = x;
}

// *out = number of found flags set.
__global__ void kSum(const uint8_t *f, size_t n, unsigned long long *out){
  unsigned long long s = 0;
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=(size_t)gridDim.x*blockDim.x ) s += f[i];
  for( int o=16; o>0; o>>=1 ) s += __shfl_xor_sync(0xffffffffu, s, o);
  if( (threadIdx.x&31)==0 && s ) atomicAdd(out, s);
}

static unsigned long long countFound(const uint8_t *dF, size_t n){
  unsigned long long *d, h = 0;
  CK(cudaMalloc(&d, 8));
  CK(cudaMemset(d, 0, 8));
  kSum<<<1024, 256>>>(dF, n, d);
  CK(cudaGetLastError());
  CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  return h;
}

struct Timer {
  cudaEvent_t a, b;
  cudaStream_t s;
  explicit Timer(cudaStream_t st) : s(st){ CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); }
  ~Timer(){ cudaEventDestroy(a); cudaEventDestroy(b); }
  void start(){ CK(cudaEventRecord(a, s)); }
  double stop(){ float ms; CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
                 CK(cudaEventElapsedTime(&ms, a, b)); return ms; }
};

static FILE *gCsv = nullptr;
static const char *gOnly = nullptr;
static bool want(const char *z){ return !gOnly || strncmp(z, gOnly, strlen(gOnly))==0; }
static char gDev[256];

static void report(const char *op, int lg, double loadTarget, double loadActual,
                   size_t nOps, double ms, const char *note){
  double gops = nOps/(ms*1e-3)/1e9;
  printf("%-13s 2^%-2d load %.2f (actual %.3f)  %11zu ops  %9.3f ms  %7.2f G ops/s  %s\n",
         op, lg, loadTarget, loadActual, nOps, ms, gops, note);
  fflush(stdout);
  if( gCsv ){
    fprintf(gCsv, "%s,%d,%.2f,%.4f,%zu,%.4f,%.3f,\"%s\",\"%s\"\n", op, lg, loadTarget,
            loadActual, nOps, ms, gops, note, gDev);
    fflush(gCsv);
  }
}

static unsigned long long countNonUpsert(const uint8_t *dOp, size_t n){
  unsigned long long *d, h = 0;
  CK(cudaMalloc(&d, 8));
  CK(cudaMemset(d, 0, 8));
  kCountNonUpsert<<<1024, 256>>>(dOp, n, d);
  CK(cudaGetLastError());
  CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  return h;
}

static double loadOf(gpuds_store *p){
  return (double)G->xCount(p)/(double)(gpuds_hash::buckets(p)*gpuds_hash::kSlotsPerBucket);
}

static double hostMs(std::chrono::steady_clock::time_point t0){
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now()-t0).count();
}

static double median(std::vector<double> v){
  std::sort(v.begin(), v.end());
  return v[v.size()/2];
}

static gpuds_store *mk();

// The host-array rows (see the top of this file).
static int hostRows(int64_t *dK, uint64_t *dV, uint8_t *dF){
  char note[200];
  {
    const size_t N = (size_t)1<<26, NQ = 10000000;
    gpuds_store *p = mk();
    OK(gpuds_hash::reserve(p, N, 0.5));
    kGen<<<2048, 256>>>(dK, dV, N, 0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    OK(gpuds_hash::upsertDistinctDevice(p, N, dK, dV, nullptr, nullptr));
    std::vector<int64_t> q(NQ);
    std::vector<uint64_t> idx(NQ);
    size_t nHit = 0;
    for( size_t i=0; i<NQ; i++ ){
      const uint64_t r = smix(i*0x9E3779B97F4A7C15ull ^ 0xabcdefull);
      idx[i] = (r&1) ? (r>>1)%N : N + (r>>1)%N;
      q[i] = keyOf(idx[i]);
      nHit += idx[i]<N;
    }
    std::vector<uint8_t> f(NQ, 0);
    std::vector<uint64_t> v(NQ, 0);
    const size_t chunks[] = { 0, (size_t)1<<18, (size_t)1<<19, (size_t)1<<20, (size_t)1<<21 };
    for( size_t c : chunks ){
      gpuds_hash::setHostChunk(p, c);
      std::vector<double> t;
      for( int r=0; r<6; r++ ){
        memset(f.data(), 7, NQ);
        auto t0 = std::chrono::steady_clock::now();
        OK(G->xLookup(p, NQ, q.data(), f.data(), v.data()));
        const double ms = hostMs(t0);
        if( r ) t.push_back(ms);
      }
      size_t bad = 0;
      for( size_t i=0; i<NQ; i++ ){
        const bool hit = idx[i]<N;
        bad += f[i]!=(hit ? 1 : 0) || v[i]!=(hit ? idx[i] : 0);
      }
      if( bad ){ fprintf(stderr, "host-lookup chunk %zu: %zu wrong\n", c, bad); return 1; }
      char name[40];
      if( c ) snprintf(name, sizeof(name), "host-lookup-c2^%d", __builtin_ctzll(c));
      else snprintf(name, sizeof(name), "host-lookup-single");
      snprintf(note, sizeof(note), "xLookup host arrays, host clock incl. transfers, median of 5, "
               "%zu/%zu found, %s", nHit, NQ, c ? "chunked pipeline" : "single-shot (chunk 0)");
      report(name, 26, 0.5, loadOf(p), NQ, median(t), note);
    }
    gpuds_hash::setHostChunk(p, (size_t)1<<19);
    CK(cudaMemcpy(dK, q.data(), 8*NQ, cudaMemcpyHostToDevice));
    Timer t(gpuds_hash::stream(p));
    std::vector<double> tv;
    for( int r=0; r<4; r++ ){
      t.start();
      OK(gpuds_hash::lookupDevice(p, NQ, dK, dF, dV));
      const double ms = t.stop();
      if( r ) tv.push_back(ms);
    }
    snprintf(note, sizeof(note), "the same keys from device memory (lookupDevice), kernel only, median of 3");
    report("host-lookup-devonly", 26, 0.5, loadOf(p), NQ, median(tv), note);
    G->xDestroy(p);
  }
  for( int lgB=20; lgB<=24; lgB+=2 ){
    const size_t B = (size_t)1<<lgB;
    std::vector<uint8_t> op(B, GPUDS_OP_UPSERT), f(B, 0);
    std::vector<int64_t> k(B);
    std::vector<uint64_t> v(B), o(B, 0);
    for( int staged=0; staged<2; staged++ ){
      gpuds_store *p = mk();
      OK(gpuds_hash::reserve(p, 4*B, 0.5));
      gpuds_hash::setHostChunk(p, staged ? (size_t)1<<19 : 0);
      std::vector<double> t;
      for( int r=0; r<4; r++ ){
        for( size_t i=0; i<B; i++ ){ k[i] = keyOf(r*B+i); v[i] = r*B+i; }
        auto t0 = std::chrono::steady_clock::now();
        OK(G->xBatch(p, B, op.data(), k.data(), v.data(), f.data(), o.data()));
        const double ms = hostMs(t0);
        if( r ) t.push_back(ms);
      }
      if( G->xCount(p)!=(int64_t)(4*B) ){ fprintf(stderr, "host-upsert: count\n"); return 1; }
      snprintf(note, sizeof(note), "xBatch upserts, host arrays, found/old wanted, host clock, "
               "median of 3, %s", staged ? "staged copies (chunks of 2^19)" : "single-shot (chunk 0)");
      report(staged ? "host-upsert-staged" : "host-upsert-single", lgB, 0.5, loadOf(p), B, median(t), note);
      G->xDestroy(p);
    }
  }
  return 0;
}

static gpuds_store *mk(){
  gpuds_store *p = nullptr;
  char *z = nullptr;
  if( G->xCreate(&p, &z)!=GPUDS_OK ){ fprintf(stderr, "xCreate: %s\n", z ? z : ""); exit(1); }
  return p;
}

int main(int argc, char **argv){
  const char *zCsv = argc>1 ? argv[1] : "bench_hash.csv";
  int maxLg = argc>2 ? atoi(argv[2]) : 27;
  int minLg = argc>3 ? atoi(argv[3]) : 20;
  gOnly = argc>4 && argv[4][0] && strcmp(argv[4], "all")!=0 ? argv[4] : nullptr;
  std::vector<double> loads;
  {
    const char *z = argc>5 ? argv[5] : "0.5,0.8";
    while( *z ){
      char *e = nullptr;
      double x = strtod(z, &e);
      if( e==z || !(x>0 && x<=gpuds_hash::kMaxLoad) ){ fprintf(stderr, "bad load list %s\n", argv[5]); return 1; }
      loads.push_back(x);
      z = *e==',' ? e+1 : e;
    }
  }
  uint64_t nFree = 0, nTotal = 0;
  if( !gpudsCudaDevice(gDev, sizeof(gDev), &nFree, &nTotal) ){
    printf("SKIPPED: no usable CUDA device (%s)\n", gDev);
    return 77;
  }
  printf("device: %s (%.1f GiB free)\n", gDev, nFree/1073741824.0);
  gCsv = fopen(zCsv, "w");
  if( !gCsv ){ perror(zCsv); return 1; }
  fprintf(gCsv, "op,log2n,load_target,load_actual,ops,ms,gops,note,device\n");

  const size_t NMAX = (size_t)1<<std::max(maxLg, 26);
  int64_t *dK, *dK2; uint64_t *dV, *dOld; uint8_t *dF, *dOp;
  CK(cudaMalloc(&dK, 8*NMAX)); CK(cudaMalloc(&dK2, 8*NMAX));
  CK(cudaMalloc(&dV, 8*NMAX)); CK(cudaMalloc(&dOld, 8*NMAX));
  CK(cudaMalloc(&dF, NMAX)); CK(cudaMalloc(&dOp, NMAX));

  {  // warm up (module load, first allocations)
    gpuds_store *p = mk();
    kGen<<<1024, 256>>>(dK, dV, 1<<20, 0);
    OK(gpuds_hash::upsertDistinctDevice(p, 1<<20, dK, dV, nullptr, nullptr));
    OK(gpuds_hash::lookupDevice(p, 1<<20, dK, dF, dOld));
    G->xDestroy(p);
  }

  for( int lg=minLg; lg<=maxLg; lg++ ){
    for( double L : loads ){
      const size_t N = (size_t)1<<lg;
      char note[160];
      // insert through the batch path (fresh presized table)
      if( want("insert-batch") ){
        gpuds_store *p = mk();
        OK(gpuds_hash::reserve(p, N, L));
        kGen<<<2048, 256>>>(dK, dV, N, 0);
        kFill<<<2048, 256>>>(dOp, N, GPUDS_OP_UPSERT);
        CK(cudaDeviceSynchronize());
        Timer t(gpuds_hash::stream(p));
        uint64_t nb = gpuds_hash::buckets(p);
        t.start();
        OK(gpuds_hash::batchDevice(p, N, dOp, dK, dV, dF, dOld));
        double ms = t.stop();
        snprintf(note, sizeof(note), "batch path, presized%s",
                 gpuds_hash::buckets(p)!=nb ? ", RESIZED" : "");
        if( G->xCount(p)!=(int64_t)N ){ fprintf(stderr, "insert-batch: count %lld\n", (long long)G->xCount(p)); return 1; }
        report("insert-batch", lg, L, loadOf(p), N, ms, note);
        G->xDestroy(p);
      }
      // insert of distinct keys into a fresh presized table (the table stays
      // for the rows below)
      gpuds_store *p = mk();
      Timer t(gpuds_hash::stream(p));
      OK(gpuds_hash::reserve(p, N, L));
      uint64_t nb = gpuds_hash::buckets(p);
      kGen<<<2048, 256>>>(dK, dV, N, 0);
      CK(cudaDeviceSynchronize());
      t.start();
      OK(gpuds_hash::upsertDistinctDevice(p, N, dK, dV, nullptr, nullptr));
      double ms = t.stop();
      if( G->xCount(p)!=(int64_t)N ){ fprintf(stderr, "insert: count %lld\n", (long long)G->xCount(p)); return 1; }
      if( want("insert") ) report("insert", lg, L, loadOf(p), N, ms,
             gpuds_hash::buckets(p)!=nb ? "distinct keys, presized, RESIZED" : "distinct keys, presized");
      // find-hit / find-miss, with 2 and 1 lookups per tile per iteration
      for( int ilp=2; ilp>=1 && want("find"); ilp-- ){
        gpuds_hash::setLookupIlp(ilp);
        for( int miss=0; miss<2; miss++ ){
          const int64_t *q = miss ? dK2 : dK;
          if( miss ){ kGen<<<2048, 256>>>(dK2, nullptr, N, N); CK(cudaDeviceSynchronize()); }
          std::vector<double> v;
          for( int r=0; r<4; r++ ){
            t.start();
            OK(gpuds_hash::lookupDevice(p, N, q, dF, dOld));
            double x = t.stop();
            if( r ) v.push_back(x);
          }
          std::sort(v.begin(), v.end());
          unsigned long long nf = countFound(dF, N);
          snprintf(note, sizeof(note), "median of 3, %llu/%zu found, %d lookups/tile", nf, N, ilp);
          if( nf!=(miss ? 0 : N) ){ fprintf(stderr, "find: %llu found\n", nf); return 1; }
          char name[32];
          snprintf(name, sizeof(name), "%s%s", miss ? "find-miss" : "find-hit", ilp==2 ? "" : "-ilp1");
          report(name, lg, L, loadOf(p), N, v[1], note);
        }
      }
      gpuds_hash::setLookupIlp(2);
      // mixed [10,10,80], batches of N/4, each variant on a fresh table of
      // N keys (one warm-up batch, one timed)
      struct MixVar { const char *z; int path; };   // path: 1 device arrays, 2 host arrays
      const MixVar mv[] = { { "mixed-distinct", 1 }, { "mixed-distinct-host", 2 } };
      for( const MixVar &m : mv ){
        if( !want(m.z) ) continue;
        const size_t B = N/4;
        gpuds_store *q = mk();
        OK(gpuds_hash::reserve(q, N, L));
        kGen<<<2048, 256>>>(dK, dV, N, 0);
        CK(cudaDeviceSynchronize());
        OK(gpuds_hash::upsertDistinctDevice(q, N, dK, dV, nullptr, nullptr));
        Timer tq(gpuds_hash::stream(q));
        uint64_t re0 = gpuds_hash::rehashCount(q);
        double msT = 0;
        unsigned long long nf = 0, nExp = 0;
        std::vector<uint8_t> hOp, hF; std::vector<int64_t> hK; std::vector<uint64_t> hV, hO;
        for( int r=0; r<2; r++ ){
          kGenMixedDistinct<<<2048, 256>>>(dOp, dK2, dOld, B, N, 4*(uint64_t)N + r*(uint64_t)B, r, 77+r);
          CK(cudaDeviceSynchronize());
          if( m.path==2 ){
            hOp.resize(B); hK.resize(B); hV.resize(B); hF.resize(B); hO.resize(B);
            CK(cudaMemcpy(hOp.data(), dOp, B, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hK.data(), dK2, 8*B, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hV.data(), dOld, 8*B, cudaMemcpyDeviceToHost));
            auto h0 = std::chrono::steady_clock::now();
            OK(G->xBatch(q, B, hOp.data(), hK.data(), hV.data(), hF.data(), hO.data()));
            msT = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now()-h0).count();
            nf = 0;
            for( size_t i=0; i<B; i++ ) nf += hF[i];
          }else{
            tq.start();
            OK(gpuds_hash::batchDevice(q, B, dOp, dK2, dOld, dF, dV));
            msT = tq.stop();
            nf = countFound(dF, B);
          }
        }
        nExp = countNonUpsert(dOp, B);
        if( nf!=nExp ){ fprintf(stderr, "%s: %llu found, expected %llu\n", m.z, nf, nExp); return 1; }
        OK(G->xCheck(q));
        snprintf(note, sizeof(note), "batch N/4, %s, %llu/%zu found%s", 
                 m.path==1 ? "batchDevice" : "xBatch host arrays, host clock incl. transfers", nf, B,
                 gpuds_hash::rehashCount(q)!=re0 ? ", REHASHED" : "");
        report(m.z, lg, L, loadOf(q), B, msT, note);
        G->xDestroy(q);
      }
      // delete N/2 present keys (indices [N/2, N))
      if( want("delete") ){
        kGen<<<2048, 256>>>(dK2, nullptr, N/2, N/2);
        kFill<<<2048, 256>>>(dOp, N/2, GPUDS_OP_DELETE);
        CK(cudaDeviceSynchronize());
        uint64_t re0 = gpuds_hash::rehashCount(p);
        int64_t c0 = G->xCount(p);
        double l0 = loadOf(p);
        t.start();
        OK(gpuds_hash::batchDevice(p, N/2, dOp, dK2, nullptr, dF, dOld));
        ms = t.stop();
        unsigned long long nf = countFound(dF, N/2);
        snprintf(note, sizeof(note), "batch path, %llu/%zu found%s", nf, N/2,
                 gpuds_hash::rehashCount(p)!=re0 ? ", SHRUNK" : "");
        if( c0-G->xCount(p)!=(int64_t)nf ){ fprintf(stderr, "delete: count mismatch\n"); return 1; }
        report("delete", lg, L, l0, N/2, ms, note);
      }
      OK(G->xCheck(p));
      G->xDestroy(p);
    }
  }

  if( want("host") && hostRows(dK, dV, dF) ) return 1;

  // growth from empty to 2^26 keys in batches of 2^22 through resizes
  for( int path=0; path<2 && want("growth"); path++ ){
    const size_t N = (size_t)1<<26, B = (size_t)1<<22;
    gpuds_store *p = mk();
    Timer t(gpuds_hash::stream(p));
    kGen<<<2048, 256>>>(dK, dV, N, 0);
    kFill<<<2048, 256>>>(dOp, B, GPUDS_OP_UPSERT);
    CK(cudaDeviceSynchronize());
    uint64_t re0 = gpuds_hash::rehashCount(p);
    t.start();
    for( size_t s=0; s<N; s+=B ){
      if( path==0 ) OK(gpuds_hash::upsertDistinctDevice(p, B, dK+s, dV+s, nullptr, nullptr));
      else OK(gpuds_hash::batchDevice(p, B, dOp, dK+s, dV+s, dF, dOld));
    }
    double ms = t.stop();
    if( G->xCount(p)!=(int64_t)N ){ fprintf(stderr, "growth: count\n"); return 1; }
    char note[160];
    snprintf(note, sizeof(note), "%s, batches of 2^22, %llu resizes, final %llu buckets",
             path==0 ? "distinct-upsert path" : "batch path",
             (unsigned long long)(gpuds_hash::rehashCount(p)-re0),
             (unsigned long long)gpuds_hash::buckets(p));
    report(path==0 ? "growth" : "growth-batch", 26, 0, loadOf(p), N, ms, note);
    char z[512];
    G->xInfo(p, z, sizeof(z));
    printf("  %s\n", z);
    OK(G->xCheck(p));
    G->xDestroy(p);
  }
  cudaFree(dK); cudaFree(dK2); cudaFree(dV); cudaFree(dOld); cudaFree(dF); cudaFree(dOp);
  fclose(gCsv);
  printf("csv: %s\n", zCsv);
  return 0;
}
