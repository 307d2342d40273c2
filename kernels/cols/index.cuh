// kernels/cols/index.cuh -- a column's equality index: its build (the row
// numbers sorted by tag and value, idxBuild, at the column's second query
// that can use it, idxEnsure) and its probe (kProbe: the candidates of a
// few (tag, value) pairs, checked against the whole filter).
//
// Part of the CUDA column set's one translation unit (kernels/cols.cu,
// where the design is described).
#pragma once

#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "gpuds_backend.h"
#include "common/check.cuh"
#include "cols/layout.cuh"
#include "cols/kernels.cuh"
#include "cols/store.cuh"

namespace {

// ---------------------------------------------------------------- device --

// Equality index build (idxBuild): out[j] = j.
// @param out  out: out[j] = j
// @param n    entries
template<typename IdxT>
__global__ void kIota(IdxT *out, int64_t n){
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<n; j+=stride) out[j] = (IdxT)j;
}

// Equality index build: the tag (oT) or the value (oV) of row idx[j], and
// the rows of each tag counted into cnt[0..4].
// @param idx  row numbers
// @param n    their number
// @param tag  the column's tags (with oT)
// @param val  its values (with oV)
// @param oT   out: the tags in idx order; may be NULL
// @param oV   out: the values in idx order; may be NULL
// @param cnt  the rows of each of the 5 tags, added to; may be NULL
template<typename IdxT>
__global__ void kIdxGather(const IdxT *idx, int64_t n, const uint8_t *tag, const uint64_t *val,
                           uint8_t *oT, uint64_t *oV, ull *cnt){
  __shared__ unsigned sh[5];
  if( threadIdx.x<5 ) sh[threadIdx.x] = 0;
  __syncthreads();
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<n; j+=stride){
    int64_t i = (int64_t)idx[j];
    if( oT ){
      uint8_t t = tag[i];
      oT[j] = t;
      if( cnt && t<5 ) atomicAdd(&sh[t], 1u);
    }
    if( oV ) oV[j] = val[i];
  }
  __syncthreads();
  if( cnt && threadIdx.x<5 && sh[threadIdx.x] ) atomicAdd(&cnt[threadIdx.x], (ull)sh[threadIdx.x]);
}

// few() through a column's equality index: the rows whose value equals one
// of pa's pairs or has a tag of pa.any (ranges of the index: a warp
// searches a pair) are the candidates;
// if there are more than cap, out[0] = -2 and nothing else (the caller
// scans instead); otherwise those within rows h->i0..h->i1-1 (h NULL: all
// n) that satisfy pred (its terms from ta if ta.n > 0) are written as
// kFewOut writes them (count, keys, row words, row numbers, in no order).
// out may be mapped host memory: with the terms as an argument, a query
// makes no copy either way.  Launch: one block of kBlock threads.
// @param pred  the selection predicate
// @param ta    the terms by value (ta.n > 0: used instead of pred's)
// @param pa    the (tag, value) pairs and whole tags looked up
// @param h     rows h->i0..h->i1-1; NULL: all n
// @param n     rows of the set
// @param iv    the index's values
// @param ir    its row numbers
// @param g     its tag segments
// @param cap   candidates allowed, and entries of each part of out
// @param key   the set's keys
// @param row   its row words
// @param out   out: as kFewOut writes it, or -2 in out[0] for too many
//              candidates
template<typename IdxT>
__global__ void kProbe(SelPred pred, TermArg ta, ProbeArg pa, const Hdr *h, int64_t n,
                       const uint64_t *iv, const IdxT *ir, Segs g, int64_t cap,
                       const int64_t *key, const uint64_t *row, int64_t *out){
  constexpr int kR = kProbeMax + 5;       // ranges: the pairs', then the tags'
  __shared__ int64_t ra[kR], rb[kR];
  __shared__ ull cnt;
  __shared__ DTerm sT[kTermsArg];
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nW = blockDim.x >> 5;
  if( ta.n>0 ){
    for(int t=threadIdx.x; t<ta.n; t+=blockDim.x) sT[t] = ta.t[t];
    pred.term = sT;       // (read after the __syncthreads below)
  }
  for(int k=w; k<pa.n; k+=nW){
    int64_t a = 0, b = 0;
    const int t = pa.t[k];
    if( t<5 ){
      const int64_t s0 = g.s[t], m = g.s[t+1] - s0;
      a = s0 + warpBound<uint64_t>(iv + s0, m, pa.v[k], false);
      b = s0 + warpBound<uint64_t>(iv + s0, m, pa.v[k], true);
    }
    if( lane==0 ){ ra[k] = a; rb[k] = b; }
  }
  if( (int)threadIdx.x>=pa.n && threadIdx.x<kProbeMax ){
    ra[threadIdx.x] = rb[threadIdx.x] = 0;
  }else if( threadIdx.x>=kProbeMax && threadIdx.x<kR ){
    const int t = threadIdx.x - kProbeMax;
    const bool on = ((pa.any>>t) & 1u)!=0;
    ra[threadIdx.x] = on ? g.s[t] : 0;
    rb[threadIdx.x] = on ? g.s[t+1] : 0;
  }
  if( threadIdx.x==0 ) cnt = 0;
  __syncthreads();
  int64_t total = 0;
  for(int k=0; k<kR; k++) total += rb[k] - ra[k];
  if( total>cap ){
    if( threadIdx.x==0 ) out[0] = -2;
    return;
  }
  const int64_t i0 = h ? h->i0 : 0, i1 = h ? h->i1 : n;
  for(int64_t t=threadIdx.x; t<total; t+=blockDim.x){
    int k = 0;
    int64_t off = t;
    while( off>=rb[k]-ra[k] ){ off -= rb[k]-ra[k]; k++; }
    int64_t i = (int64_t)ir[ra[k]+off];
    if( i<i0 || i>=i1 || !pred(i) ) continue;
    ull j = atomicAdd(&cnt, 1ULL);
    out[1 + j] = key[i];
    out[1 + cap + j] = (int64_t)row[i];
    out[1 + 2*cap + j] = i;
  }
  __syncthreads();
  if( threadIdx.x==0 ) out[0] = (int64_t)cnt;
}

// ------------------------------------------------------------------ host --

// Drop column c's equality index (if any).
void idxDrop(CudaCols *p, int c){
  ColIdx *x = &p->aIdx[c];
  if( x->val ) devFree(p, x->val, (size_t)p->n*8);
  if( x->row ) devFree(p, x->row, x->nBytes - (size_t)p->n*8);
  x->val = nullptr; x->row = nullptr; x->nBytes = 0;
}

// Build column c's equality index (ColIdx, not yet published: idxEnsure
// does that) on cx's stream: the row numbers sorted by value (a radix sort
// of all 64 bits), then stably by tag (3 bits), then the values gathered
// in that order.  Temporary buffers are freed before it returns, and the
// stream is idle: what it wrote is complete on the device.  The index holds
// 8 + sizeof(IdxT) bytes a row.
template<typename IdxT>
int idxBuild(CudaCols *p, ColsCtx *cx, int c){
  const int64_t n = p->n;
  const size_t nn = (size_t)n;
  const uint8_t *tag = p->dTag + (size_t)c*nn;
  const uint64_t *val = p->dVal + (size_t)c*nn;
  ColIdx *x = &p->aIdx[c];
  void *aBuf[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  IdxT *r0 = nullptr, *r1 = nullptr;
  int rc = GPUDS_OK;
  size_t nTmp = 0;
  ull hCnt[5];
  cudaError_t e;
#define IDX_CK(call) do{ e = (call); if( e!=cudaSuccess ){ \
    rc = gpudsCudaFail(cx, e, "equality index", __FILE__, __LINE__); goto idx_out; } }while(0)
  // 1. rows by value: keys (a copy of the values) and rows, double buffers
  IDX_CK(devAlloc(p, &aBuf[0], nn*8 + 512));    // (+ the tag counts, step 2)
  IDX_CK(devAlloc(p, &aBuf[1], nn*8));
  IDX_CK(devAlloc(p, &aBuf[2], nn*sizeof(IdxT)));
  IDX_CK(devAlloc(p, &aBuf[3], nn*sizeof(IdxT)));
  r0 = (IdxT*)aBuf[2]; r1 = (IdxT*)aBuf[3];
  IDX_CK(cudaMemcpyAsync(aBuf[0], val, nn*8, cudaMemcpyDeviceToDevice, cx->st));
  kIota<IdxT><<<gridFor(p, n), kBlock, 0, cx->st>>>(r0, n);
  IDX_CK(cudaGetLastError());
  {
    cub::DoubleBuffer<uint64_t> k((uint64_t*)aBuf[0], (uint64_t*)aBuf[1]);
    cub::DoubleBuffer<IdxT> v(r0, r1);
    IDX_CK(cub::DeviceRadixSort::SortPairs(nullptr, nTmp, k, v, (IdxT)n, 0, 64, cx->st));
    if( (rc = ensure(cx, cx->tmp, nTmp<1 ? 1 : nTmp))!=0 ) goto idx_out;
    nTmp = cx->tmp.n;
    IDX_CK(cub::DeviceRadixSort::SortPairs(cx->tmp.p, nTmp, k, v, (IdxT)n, 0, 64, cx->st));
    r0 = v.Current(); r1 = v.Alternate();
  }
  // 2. stably by tag: the keys' buffers hold the tags now (and the counts)
  {
    uint8_t *t0 = (uint8_t*)aBuf[0], *t1 = (uint8_t*)aBuf[1];
    ull *dCnt = (ull*)((char*)aBuf[0] + ((nn + 255) & ~(size_t)255));
    IDX_CK(cudaMemsetAsync(dCnt, 0, 5*sizeof(ull), cx->st));
    kIdxGather<IdxT><<<gridFor(p, n), kBlock, 0, cx->st>>>(r0, n, tag, nullptr, t0, nullptr, dCnt);
    IDX_CK(cudaGetLastError());
    IDX_CK(cudaMemcpyAsync(hCnt, dCnt, sizeof(hCnt), cudaMemcpyDeviceToHost, cx->st));
    cub::DoubleBuffer<uint8_t> k(t0, t1);
    cub::DoubleBuffer<IdxT> v(r0, r1);
    nTmp = 0;
    IDX_CK(cub::DeviceRadixSort::SortPairs(nullptr, nTmp, k, v, (IdxT)n, 0, 3, cx->st));
    if( (rc = ensure(cx, cx->tmp, nTmp<1 ? 1 : nTmp))!=0 ) goto idx_out;
    nTmp = cx->tmp.n;
    IDX_CK(cub::DeviceRadixSort::SortPairs(cx->tmp.p, nTmp, k, v, (IdxT)n, 0, 3, cx->st));
    r0 = v.Current(); r1 = v.Alternate();
  }
  // 3. the values in that order; the index keeps r0 and them
  IDX_CK(devAlloc(p, &aBuf[4], nn*8));
  kIdxGather<IdxT><<<gridFor(p, n), kBlock, 0, cx->st>>>(r0, n, nullptr, val, nullptr,
                                                      (uint64_t*)aBuf[4], nullptr);
  IDX_CK(cudaGetLastError());
  IDX_CK(cudaStreamSynchronize(cx->st));
  x->seg[0] = 0;
  for(int t=0; t<5; t++) x->seg[t+1] = x->seg[t] + (int64_t)hCnt[t];
  if( x->seg[5]!=n ){ rc = colsSetErr(cx, GPUDS_ERROR, "internal error: index tags do not add up"); goto idx_out; }
  x->val = (uint64_t*)aBuf[4]; aBuf[4] = nullptr;
  x->row = r0;
  if( r0==(IdxT*)aBuf[2] ) aBuf[2] = nullptr; else aBuf[3] = nullptr;
  x->nBytes = nn*(8 + sizeof(IdxT));
idx_out:
#undef IDX_CK
  if( rc && cx->st ) (void)cudaStreamSynchronize(cx->st);
  devFree(p, aBuf[0], nn*8 + 512); devFree(p, aBuf[1], nn*8);
  devFree(p, aBuf[2], nn*sizeof(IdxT)); devFree(p, aBuf[3], nn*sizeof(IdxT));
  devFree(p, aBuf[4], nn*8);
  (void)cudaGetLastError();
  return rc;
}

// Column c's equality index for a query that can use it: built at the
// second such query (a one-off query does not pay for it), never where
// there was no room (the query scans; the message is dropped).  NULL if
// none; a code other than GPUDS_NOMEM from the build is returned in *pRc.
// Calls run at once: one builds at a time (muIdx), and publishes the index
// complete (state 1, release; read with acquire); a call that finds
// another building does not wait for it but scans, and the column's index
// is built at a later query if that build was another column's.
template<typename IdxT>
ColIdx *idxEnsure(CudaCols *p, ColsCtx *cx, int c, int *pRc){
  ColIdx *x = &p->aIdx[c];
  *pRc = GPUDS_OK;
  int st = x->state.load(std::memory_order_acquire);
  if( st==0 && x->nAsk.fetch_add(1, std::memory_order_relaxed)+1>=2 ){
    std::unique_lock<std::mutex> g(p->muIdx, std::try_to_lock);
    // under muIdx, the last builder's writes are visible
    if( g.owns_lock() && x->state.load(std::memory_order_relaxed)==0 ){
      int rc = idxBuild<IdxT>(p, cx, c);
      if( rc ){
        idxDrop(p, c);
        x->state.store(-1, std::memory_order_release);
        cx->zErr[0] = 0;
        if( rc!=GPUDS_NOMEM ){ *pRc = rc; return nullptr; }
      }else{
        p->nIdxBytes += x->nBytes;
        x->state.store(1, std::memory_order_release);
      }
    }
    st = x->state.load(std::memory_order_acquire);
  }
  return st==1 ? x : nullptr;
}

}  // namespace
