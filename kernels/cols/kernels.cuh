// kernels/cols/kernels.cuh -- the query kernels of the column set: key
// bounds, the selection predicate, sort words, the top-k passes, ties, the
// gathering of the output, and the one-pass filter of few() (kAppend,
// kFewOut).
//
// Part of the CUDA column set's one translation unit (kernels/cols.cu,
// where the design is described).
#pragma once

#include <cuda_runtime.h>
#include <cstdint>

#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "cols/layout.cuh"

namespace {

// One warp: the first index i of ascending a[0..n-1] with a[i] > k (upper)
// or a[i] >= k (!upper); n if none.  Each step probes 32 evenly spaced
// positions and narrows the range to 1/33.  All lanes return the answer.
template<typename T>
__device__ int64_t warpBound(const T *a, int64_t n, T k, bool upper){
  const unsigned full = 0xffffffffu;
  int lane = threadIdx.x & 31;
  int64_t lo = 0, hi = n;
  while( lo<hi ){
    int64_t len = hi-lo;
    int64_t pos = lo + (len/33)*(lane+1) + ((len%33)*(lane+1))/33;   // < hi
    T v = a[pos];
    bool below = upper ? !(k<v) : (v<k);
    unsigned b = __ballot_sync(full, below);
    int c = __popc(b);
    int64_t pLast = __shfl_sync(full, pos, c>0 ? c-1 : 0);
    int64_t pNext = __shfl_sync(full, pos, c<32 ? c : 31);
    if( c>0 ) lo = pLast+1;
    if( c<32 ) hi = pNext;
  }
  return lo;
}

// Sorted keys: h->i0 = first row with key >= lo (warp 0), h->i1 = first row
// with key > hi (warp 1).  Launch: 1 block of 64 threads.
// @param key  the set's keys, ascending
// @param n    their number
// @param lo   the smallest key in range
// @param hi   the largest key in range
// @param h    out: h->i0 and h->i1
__global__ void kBounds(const int64_t *key, int64_t n, int64_t lo, int64_t hi, Hdr *h){
  int w = threadIdx.x >> 5;
  int64_t r = warpBound<int64_t>(key, n, w==0 ? lo : hi, w==1);
  if( (threadIdx.x & 31)==0 ){
    if( w==0 ) h->i0 = r; else h->i1 = r;
  }
}

// The selection predicate of row i: key bounds (unsorted keys only), every
// term ("maybe" passes), then not in the skip list.
struct SelPred {
  const int64_t *key;
  const uint8_t *tag;
  const uint64_t *val;
  const DTerm *term;
  const int64_t *skip;
  int64_t nSkip;
  const uint64_t *inVal;   // the IN terms' values ...
  const uint8_t *inTag;    // ... and their tags
  int64_t lo, hi;
  int nTerm;
  int checkKey;
  // term pairTerm as words (gpudsColAsPairs; the first term that can be,
  // for kAppend's one-term pass and kProbe): nPair < 0 if none; tags with
  // their bit in pairAny match, and values equal to a pair
  int pairTerm;
  int nPair;
  uint32_t pairAny;
  uint8_t pairT[3];
  uint64_t pairV[3];
  __device__ __forceinline__ bool operator()(int64_t i) const {
    if( checkKey ){
      int64_t k = key[i];
      if( k<lo || k>hi ) return false;
    }
    for(int t=0; t<nTerm; t++){
      const DTerm *T = &term[t];
      int64_t o = T->off + i;
      if( T->op==GPUDS_CMP_IN ){
        uint32_t i0 = (uint32_t)(T->cval>>32);
        if( gpudsColMatchIn(tag[o], val[o], (uint8_t)T->ctag, inTag + i0, inVal + i0,
                            (uint32_t)T->cval)==0 ) return false;
      }else if( gpudsColMatch(tag[o], val[o], T->op, (uint8_t)T->ctag, T->cval)==0 ){
        return false;
      }
    }
    if( nSkip>0 ){
      int64_t k = key[i], a = 0, b = nSkip;
      while( a<b ){
        int64_t mid = a + (b-a)/2;
        if( skip[mid]<k ) a = mid+1; else b = mid;
      }
      if( a<nSkip && skip[a]==k ) return false;
    }
    return true;
  }
};

// OR and AND of v over the block's threads into *pOr, *pAnd (atomics, one
// per warp).
__device__ __forceinline__ void orAndReduce(ull o, ull a, ull *pOr, ull *pAnd){
  for(int s=16; s>0; s>>=1){
    o |= __shfl_xor_sync(0xffffffffu, o, s);
    a &= __shfl_xor_sync(0xffffffffu, a, s);
  }
  if( (threadIdx.x & 31)==0 ){
    atomicOr(pOr, o);
    atomicAnd(pAnd, a);
  }
}

// The sort word of each match j < m: key ^ sign bit (mode 0) or the
// column's gpudsColSortKey (mode 1; tag, val point at the column), inverted
// if inv; into out[j], with their OR and AND into h->orv, h->andv (which the
// caller reset to 0 and ~0).
// @param idx   the matches' row numbers
// @param m     their number
// @param key   the set's keys
// @param tag   the order column's tags (mode 1)
// @param val   its values (mode 1)
// @param mode  0: order by key, 1: by the column
// @param inv   nonzero: every word inverted (descending)
// @param out   out: the sort words
// @param h     h->orv and h->andv, OR and AND of the words
template<typename IdxT>
__global__ void kWords(const IdxT *idx, int64_t m, const int64_t *key,
                       const uint8_t *tag, const uint64_t *val, int mode, int inv,
                       uint64_t *out, Hdr *h){
  ull o = 0, a = ~0ULL;
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<m; j+=stride){
    int64_t i = (int64_t)idx[j];
    uint64_t w = mode==0 ? ((uint64_t)key[i] ^ kSign) : gpudsColSortKey(tag[i], val[i]);
    if( inv ) w = ~w;
    out[j] = w;
    o |= w; a &= w;
  }
  orAndReduce(o, a, &h->orv, &h->andv);
}

// Top-k pass: histogram of bits [shift, shift+w) of the words whose bits
// already decided (h->mask) equal h->prefix, added into hist (2^w bins,
// zeroed by the caller).  Lanes with the same bin add once (__match_any).
// @param s      the sort words
// @param m      their number
// @param h      the bits decided so far (prefix, mask)
// @param shift  the lowest bit of this pass
// @param w      its width in bits
// @param hist   the 2^w bins, added to
__global__ void kHist(const uint64_t *s, int64_t m, const Hdr *h, int shift, int w,
                      ull *hist){
  __shared__ unsigned sh[kHistMax];
  const int bins = 1<<w;
  for(int i=threadIdx.x; i<bins; i+=blockDim.x) sh[i] = 0;
  __syncthreads();
  const ull mask = h->mask, prefix = h->prefix;
  const int lane = threadIdx.x & 31;
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  // b is the same for every lane of a warp: the loop stays converged
  for(int64_t b=(int64_t)blockIdx.x*blockDim.x + (threadIdx.x & ~31); b<m; b+=stride){
    int64_t j = b + lane;
    uint64_t v = j<m ? s[j] : 0;
    bool ok = j<m && (v & mask)==prefix;
    unsigned act = __ballot_sync(0xffffffffu, ok);
    if( ok ){
      unsigned bin = (unsigned)(v>>shift) & (unsigned)(bins-1);
      unsigned peers = __match_any_sync(act, bin);
      if( lane==__ffs(peers)-1 ) atomicAdd(&sh[bin], (unsigned)__popc(peers));
    }
  }
  __syncthreads();
  for(int i=threadIdx.x; i<bins; i+=blockDim.x){
    if( sh[i] ) atomicAdd(&hist[i], (ull)sh[i]);
  }
}

// Top-k: pick the bin of the pass holding the h->rank-th candidate, make its
// digit part of h->prefix and the rank relative to it.  Launch: one warp.
// @param hist   the pass's bins
// @param shift  the lowest bit of the pass
// @param w      its width in bits
// @param h      prefix, mask and rank, updated
__global__ void kChoose(const ull *hist, int shift, int w, Hdr *h){
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int bins = 1<<w, per = bins/32;
  ull sum = 0;
  for(int i=0; i<per; i++) sum += hist[lane*per+i];
  ull incl = sum;
  for(int o=1; o<32; o<<=1){
    ull t = __shfl_up_sync(full, incl, o);
    if( lane>=o ) incl += t;
  }
  ull rank = h->rank;
  unsigned b = __ballot_sync(full, incl>=rank);
  int L = b ? __ffs(b)-1 : 31;     // b is never 0: rank <= candidates
  if( lane==L ){
    ull c = incl - sum;
    int d = lane*per + per - 1;
    for(int i=0; i<per; i++){
      ull x = hist[lane*per+i];
      if( c+x>=rank ){ d = lane*per+i; break; }
      c += x;
    }
    h->rank = rank - c;
    h->prefix |= (ull)d << shift;
    h->mask |= (ull)(bins-1) << shift;
  }
}

// Top-k candidate test of position j: word <= T, T = h->prefix | fixed.
struct LeThr {
  const uint64_t *s;
  const Hdr *h;
  ull fixed;
  __device__ __forceinline__ bool operator()(int64_t j) const {
    return s[j] <= (h->prefix | fixed);
  }
};

// out[t] = in[pos[t]] for t < c.
// @param pos  positions in in
// @param c    their number
// @param in   row numbers
// @param out  out: the row numbers at pos
template<typename IdxT>
__global__ void kGatherIdx(const IdxT *pos, int64_t c, const IdxT *in, IdxT *out){
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t t=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; t<c; t+=stride){
    out[t] = in[(int64_t)pos[t]];
  }
}

// The end of the run of words equal to s[nFirst-1] from nFirst on (s sorted
// ascending, nFirst < m): h->m.  Launch: one warp.
// @param s       the sort words, ascending
// @param m       their number
// @param nFirst  rows asked for (< m)
// @param h       out: h->m
__global__ void kTies(const uint64_t *s, int64_t m, int64_t nFirst, Hdr *h){
  uint64_t v = s[nFirst-1];
  int64_t r = warpBound<uint64_t>(s+nFirst, m-nFirst, v, true);
  if( threadIdx.x==0 ) h->m = nFirst + r;
}

// The output rows j < m: row idx[j] (idx[nAll-1-j] if rev): its key, row word
// and (if oS) the sort word s[j] (inverted back if inv).
// @param idx   the rows in order
// @param nAll  their number
// @param m     rows returned
// @param rev   nonzero: taken from the end of idx
// @param key   the set's keys
// @param row   its row words
// @param s     the rows' sort words; may be NULL when oS is
// @param inv   nonzero: the sort words were inverted
// @param oK    out: keys
// @param oR    out: row words
// @param oS    out: sort words; may be NULL
template<typename IdxT>
__global__ void kOut(const IdxT *idx, int64_t nAll, int64_t m, int rev,
                     const int64_t *key, const uint64_t *row, const uint64_t *s,
                     int inv, int64_t *oK, uint64_t *oR, uint64_t *oS){
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<m; j+=stride){
    int64_t i = (int64_t)idx[rev ? nAll-1-j : j];
    oK[j] = key[i];
    oR[j] = row[i];
    if( oS ) oS[j] = inv ? ~s[j] : s[j];
  }
}

// The matches of pred among rows h->i0..h->i1-1, unordered: their count
// added to h->nSel (zero before) and the first cap of them (in no order)
// in out.  One pass for a selective filter: DeviceSelect keeps the matches
// in order, which costs it about twice this kernel's time and which a
// result of a few rows, sorted afterwards, does not need.  Each
// warp reserves its matches' slots with one atomic.  blockDim.x: a
// multiple of 32.
// @param pred  the selection predicate
// @param h     rows h->i0..h->i1-1; h->nSel counts the matches
// @param out   out: the first cap matches' row numbers, in no order
// @param cap   capacity of out
template<typename IdxT>
__global__ void kAppend(SelPred pred, Hdr *h, IdxT *out, int64_t cap){
  // the terms in shared memory: every row reads them, and from global
  // memory they are a noticeable part of the kernel's time
  __shared__ DTerm sT[kTermsShared];
  if( pred.nTerm<=kTermsShared ){
    for(int t=threadIdx.x; t<pred.nTerm; t+=blockDim.x) sT[t] = pred.term[t];
    __syncthreads();
    pred.term = sT;
  }
  const int64_t i0 = h->i0, i1 = h->i1;
  const int lane = threadIdx.x & 31;
  // one warp's slots for its matches m (one atomic); m's row i to out
  auto append = [&](bool m, int64_t i){
    unsigned b = __ballot_sync(0xffffffffu, m);
    if( b==0 ) return;
    ull pos = 0;
    if( lane==0 ) pos = atomicAdd((ull*)&h->nSel, (ull)__popc(b));
    pos = __shfl_sync(0xffffffffu, pos, 0) + (ull)__popc(b & ((1u<<lane)-1));
    if( m && pos<(ull)cap ) out[pos] = (IdxT)i;
  };
  if( pred.nTerm==1 && !pred.checkKey && pred.nSkip==0 && pred.term[0].op!=GPUDS_CMP_IN ){
    // one comparison (the common case, e.g. v = ?): each thread loads the
    // tags and values of kUnroll rows before it compares any, so that
    // enough bytes are in flight to keep HBM busy (one row a thread per
    // step leaves it at about half its bandwidth)
    constexpr int kUnroll = 4;
    const DTerm T = pred.term[0];
    const uint8_t *tag = pred.tag + T.off;
    const uint64_t *val = pred.val + T.off;
    const int64_t stride = (int64_t)gridDim.x*blockDim.x*kUnroll;
    for(int64_t base=i0 + (int64_t)blockIdx.x*blockDim.x*kUnroll; base<i1; base+=stride){
      uint8_t tg[kUnroll];
      uint64_t vl[kUnroll];
#pragma unroll
      for(int u=0; u<kUnroll; u++){
        int64_t i = base + (int64_t)u*blockDim.x + threadIdx.x;
        tg[u] = GPUDS_TAG_NULL; vl[u] = 0;
        if( i<i1 ){ tg[u] = __ldg(tag + i); vl[u] = __ldg((const ull*)val + i); }
      }
#pragma unroll
      for(int u=0; u<kUnroll; u++){
        int64_t i = base + (int64_t)u*blockDim.x + threadIdx.x;
        bool m;
        if( pred.nPair>=0 ){
          // words, not values: fewer branches than gpudsColMatch's, and
          // about a third less time
          m = ((pred.pairAny>>tg[u]) & 1u)!=0;
#pragma unroll
          for(int k=0; k<3; k++) m |= k<pred.nPair && tg[u]==pred.pairT[k] && vl[u]==pred.pairV[k];
        }else{
          m = gpudsColMatch(tg[u], vl[u], T.op, (uint8_t)T.ctag, T.cval)!=0;
        }
        append(i<i1 && m, i);
      }
    }
    return;
  }
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t base=i0 + (int64_t)blockIdx.x*blockDim.x; base<i1; base+=stride){
    int64_t i = base + threadIdx.x;
    append(i<i1 && pred(i), i);
  }
}

// The read-back area of few(): the count h->nSel, then the keys, row words
// and row numbers of the first min(count, cap) matches idx[] (cap of each
// slot; the row numbers order equal keys as the ordered path does).
// @param idx  the matches' row numbers (kAppend)
// @param h    h->nSel: their count
// @param cap  entries of each part of out
// @param key  the set's keys
// @param row  its row words
// @param out  out: count, then cap keys, cap row words, cap row numbers
template<typename IdxT>
__global__ void kFewOut(const IdxT *idx, const Hdr *h, int64_t cap, const int64_t *key,
                        const uint64_t *row, int64_t *out){
  const int64_t m = h->nSel<cap ? h->nSel : cap;
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  int64_t j = (int64_t)blockIdx.x*blockDim.x + threadIdx.x;
  if( j==0 ) out[0] = h->nSel;
  for(; j<m; j+=stride){
    int64_t i = (int64_t)idx[j];
    out[1 + j] = key[i];
    out[1 + cap + j] = (int64_t)row[i];
    out[1 + 2*cap + j] = i;
  }
}

}  // namespace
