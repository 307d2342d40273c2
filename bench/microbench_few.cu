// microbench_few.cu -- the fixed costs of a selective column filter on the
// GPU (kernels/cols.cu's few() path), apart from gpuds: an empty wait, a
// launch, small copies each way, a kernel writing mapped host memory, and
// variants of the one-pass select over 10^7 (tag, value) rows (CUB's
// ordered select, flags + CUB, warp-atomic append at several grid sizes and
// unrolls) against a device-to-device copy as the bandwidth reference.
// Wall time (host clock) and GPU time (events), median of 30.  Built with
// the other benchmarks (build/microbench_few, CUDA builds); no arguments.
// Its output on the GPU machine: bench/results/microbench-few-h100-20261125.log.
#include "gpuds_colval.h"
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <chrono>
#include <random>
#define CK(x) do{ cudaError_t e=(x); if(e){printf("%s:%d %s\n",__FILE__,__LINE__,cudaGetErrorString(e)); exit(1);} }while(0)
struct DTerm { int64_t off; uint64_t cval; int op; int ctag; };
struct Pred {
  const uint8_t *tag; const uint64_t *val; const DTerm *term; int nTerm;
  __device__ __forceinline__ bool operator()(int64_t i) const {
    for(int t=0;t<nTerm;t++){ const DTerm *T=&term[t]; int64_t o=T->off+i;
      if( gpudsColMatch(tag[o], val[o], T->op, (uint8_t)T->ctag, T->cval)==0 ) return false; }
    return true; }
};
struct PredV {
  const uint8_t *tag; const uint64_t *val; DTerm T;
  __device__ __forceinline__ bool operator()(int64_t i) const {
    int64_t o=T.off+i; return gpudsColMatch(tag[o], val[o], T.op, (uint8_t)T.ctag, T.cval)!=0; }
};
struct PredS {
  const uint8_t *tag; const uint64_t *val;
  __device__ __forceinline__ bool operator()(int64_t i) const { return tag[i]==GPUDS_TAG_INT && val[i]==4242; }
};
// fused: warp ballot + atomic append (unordered), up to cap
template<class P>
__global__ void kAppendP(P p, int64_t n, unsigned *cnt, unsigned *out, unsigned cap){
  int64_t s=(int64_t)gridDim.x*blockDim.x;
  for(int64_t base=(int64_t)blockIdx.x*blockDim.x;base<n;base+=s){
    int64_t i=base+threadIdx.x; bool m = i<n && p(i);
    unsigned b=__ballot_sync(0xffffffff,m); if(!b) continue;
    int lane=threadIdx.x&31; unsigned pos=0;
    if(lane==0) pos=atomicAdd(cnt,__popc(b));
    pos=__shfl_sync(0xffffffff,pos,0)+__popc(b&((1u<<lane)-1));
    if(m && pos<cap) out[pos]=(unsigned)i;
  }
}
__global__ void kFlags(Pred p, int64_t n, uint8_t *f){
  int64_t s=(int64_t)gridDim.x*blockDim.x;
  for(int64_t i=(int64_t)blockIdx.x*blockDim.x+threadIdx.x;i<n;i+=s) f[i]=p(i);
}
// ILP: each warp takes U*32 consecutive items, item j of thread = base + k*32 + lane
template<int U>
__global__ void kAppendU(Pred p, int64_t n, unsigned *cnt, unsigned *out, unsigned cap){
  const int lane=threadIdx.x&31; const int64_t warp=((int64_t)blockIdx.x*blockDim.x+threadIdx.x)>>5;
  const int64_t nWarp=((int64_t)gridDim.x*blockDim.x)>>5;
  for(int64_t base=warp*U*32; base<n; base+=nWarp*U*32){
    bool m[U];
    #pragma unroll
    for(int k=0;k<U;k++){ int64_t i=base+k*32+lane; m[k]= i<n && p(i); }
    #pragma unroll
    for(int k=0;k<U;k++){
      unsigned b=__ballot_sync(0xffffffff,m[k]); if(!b) continue;
      unsigned pos=0; if(lane==0) pos=atomicAdd(cnt,__popc(b));
      pos=__shfl_sync(0xffffffff,pos,0)+__popc(b&((1u<<lane)-1));
      if(m[k] && pos<cap) out[pos]=(unsigned)(base+k*32+lane);
    }
  }
}
__global__ void kEmpty(){}
__global__ void kMapped(uint64_t *o, int n){ int i=blockIdx.x*blockDim.x+threadIdx.x; if(i<n) o[i]=i; }
int main(){
  const int64_t n=10000000; std::mt19937_64 r(1);
  std::vector<uint8_t> tag(n,GPUDS_TAG_INT); std::vector<uint64_t> val(n);
  for(auto &v:val) v=r()%100000;
  uint8_t *dT; uint64_t *dV; DTerm *dTerm; unsigned *dOut,*dCnt; uint8_t *dF; int64_t *dN;
  CK(cudaMalloc(&dT,n)); CK(cudaMalloc(&dV,n*8)); CK(cudaMalloc(&dTerm,64)); CK(cudaMalloc(&dOut,n*4));
  CK(cudaMalloc(&dCnt,64)); CK(cudaMalloc(&dF,n)); CK(cudaMalloc(&dN,64));
  CK(cudaMemcpy(dT,tag.data(),n,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dV,val.data(),n*8,cudaMemcpyHostToDevice));
  DTerm T{0,4242,GPUDS_CMP_EQ,GPUDS_TAG_INT}; CK(cudaMemcpy(dTerm,&T,sizeof T,cudaMemcpyHostToDevice));
  Pred p{dT,dV,dTerm,1};
  cudaStream_t st; CK(cudaStreamCreateWithFlags(&st,cudaStreamNonBlocking));
  int nSM; cudaDeviceGetAttribute(&nSM,cudaDevAttrMultiProcessorCount,0);
  void *tmp=0; size_t nTmp=0, nTmp2=0;
  thrust::counting_iterator<int64_t> it(0);
  cub::DeviceSelect::If(nullptr,nTmp,it,dOut,dN,n,p,st);
  cub::DeviceSelect::Flagged(nullptr,nTmp2,it,dF,dOut,dN,n,st);
  CK(cudaMalloc(&tmp,std::max(nTmp,nTmp2)));
  int64_t *hN; CK(cudaMallocHost(&hN,64));
  char *hBig; CK(cudaMallocHost(&hBig,1<<20));
  uint64_t *hMapped, *dMapped; CK(cudaHostAlloc(&hMapped,1<<20,cudaHostAllocMapped)); CK(cudaHostGetDevicePointer(&dMapped,hMapped,0));
  cudaEvent_t e0,e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto timeit=[&](const char *z, auto f){
    std::vector<double> w, g;
    for(int k=0;k<30;k++){ auto t0=std::chrono::steady_clock::now(); cudaEventRecord(e0,st); f(); cudaEventRecord(e1,st); CK(cudaStreamSynchronize(st));
      auto t1=std::chrono::steady_clock::now(); float ms; cudaEventElapsedTime(&ms,e0,e1); g.push_back(ms*1000); w.push_back(std::chrono::duration<double,std::micro>(t1-t0).count()); }
    std::sort(w.begin(),w.end()); std::sort(g.begin(),g.end());
    printf("%-40s wall %7.1f us  gpu %7.1f us  (n=%lld)\n",z,w[15],g[15],(long long)*hN);
  };
  timeit("empty sync", [&]{});
  timeit("empty kernel + sync", [&]{ kEmpty<<<1,32,0,st>>>(); });
  timeit("2 empty kernels + sync", [&]{ kEmpty<<<1,32,0,st>>>(); kEmpty<<<1,32,0,st>>>(); });
  timeit("D2H 49KB", [&]{ cudaMemcpyAsync(hBig,dOut,49160,cudaMemcpyDeviceToHost,st);});
  timeit("D2H 6KB", [&]{ cudaMemcpyAsync(hBig,dOut,6152,cudaMemcpyDeviceToHost,st);});
  timeit("H2D 200B", [&]{ cudaMemcpyAsync(dOut,hBig,200,cudaMemcpyHostToDevice,st);});
  timeit("kernel writes 3KB to mapped host", [&]{ kMapped<<<4,256,0,st>>>(dMapped, 384); });
  timeit("H2D 64B + D2H 64B", [&]{ cudaMemcpyAsync(dN,hN,64,cudaMemcpyHostToDevice,st); cudaMemcpyAsync(hN,dN,64,cudaMemcpyDeviceToHost,st);});
  timeit("CUB If(counting, pred)", [&]{ size_t t=nTmp; cub::DeviceSelect::If(tmp,t,it,dOut,dN,n,p,st); cudaMemcpyAsync(hN,dN,8,cudaMemcpyDeviceToHost,st);});
  timeit("flags kernel only", [&]{ kFlags<<<nSM*8,256,0,st>>>(p,n,dF);});
  timeit("flags + CUB Flagged", [&]{ kFlags<<<nSM*8,256,0,st>>>(p,n,dF); size_t t=nTmp2; cub::DeviceSelect::Flagged(tmp,t,it,dF,dOut,dN,n,st); cudaMemcpyAsync(hN,dN,8,cudaMemcpyDeviceToHost,st);});
  for(int bs: {256, 512}) for(int mult: {4, 8, 16}){
    char z[64]; snprintf(z,64,"fused append bs=%d x%d",bs,mult);
    timeit(z, [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendP<<<nSM*mult,bs,0,st>>>(p,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
  }
  { PredV pv{dT,dV,T}; PredS ps{dT,dV};
    timeit("append PredV x8", [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendP<<<nSM*8,256,0,st>>>(pv,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
    timeit("append PredS x8", [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendP<<<nSM*8,256,0,st>>>(ps,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
    timeit("append PredS x32", [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendP<<<nSM*32,256,0,st>>>(ps,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
    timeit("append PredV x32", [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendP<<<nSM*32,256,0,st>>>(pv,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
    unsigned nb=(unsigned)((n+255)/256);
    timeit("append PredV one item/thread", [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendP<<<nb,256,0,st>>>(pv,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
    timeit("append Pred one item/thread", [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendP<<<nb,256,0,st>>>(p,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
  }
  for(int mult: {8}){ char z[64];
    snprintf(z,64,"ILP4 bs=256 x%d",mult); timeit(z, [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendU<4><<<nSM*mult,256,0,st>>>(p,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
    snprintf(z,64,"ILP8 bs=256 x%d",mult); timeit(z, [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendU<8><<<nSM*mult,256,0,st>>>(p,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
    snprintf(z,64,"ILP16 bs=256 x%d",mult); timeit(z, [&]{ cudaMemsetAsync(dCnt,0,4,st); kAppendU<16><<<nSM*mult,256,0,st>>>(p,n,dCnt,dOut,4096); cudaMemcpyAsync(hN,dCnt,4,cudaMemcpyDeviceToHost,st);});
  }
  // pure bandwidth: read tag+val
  timeit("memcpy D2D 80MB (bw ref)", [&]{ cudaMemcpyAsync(dOut,dV,n*4,cudaMemcpyDeviceToDevice,st);});
  return 0;
}
