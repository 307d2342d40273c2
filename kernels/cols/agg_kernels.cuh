// kernels/cols/agg_kernels.cuh -- the kernels of the column set's
// aggregation (xAgg; kernels/cols/agg.cuh runs them, kernels/cols.cu
// describes the design).  Every decision about a row or a group is a
// function of backend/gpuds_aggrules.h; these kernels only decide which
// rows a thread steps and in which order states merge, an order fixed by
// the sizes of the data (never by timing), so results repeat exactly.
//
// Part of the CUDA column set's one translation unit (kernels/cols.cu).
#pragma once

#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <cstdint>

#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "gpuds_aggrules.h"
#include "cols/layout.cuh"
#include "cols/kernels.cuh"

namespace {

constexpr int kAggWT = 128;              // threads of kAggW1's blocks
constexpr int kAggWW = kAggWT/32;        // ... its warps
constexpr int64_t kAggSlotMax = 128;     // dense group numbers at most (path W)
constexpr int kAggRT = 256;              // threads of the merging blocks
static_assert(sizeof(AggReq)%8==0, "AggReq is copied as 8-byte words");
static_assert(sizeof(AggSt)==48, "AggSt layout");

// Counters of one xAgg on the device, read back into pinned memory.
struct AggHdr {
  int64_t i0, i1;        // the rows to read (sorted keys: kAggBounds)
  int64_t nRead, nCounted, nLeft;
  int64_t nSel;          // a selection's count
  int64_t nSeg;          // groups of the sorted path (kAggSegStart)
  int64_t pad;
  ull mn[AGG_STAT_MAX];  // per stat word (kAggStats): least and greatest
  ull mx[AGG_STAT_MAX];
};

// ------------------------------------------------------------ helpers --

// The request into shared memory (the block's threads, then a barrier).
__device__ __forceinline__ void aggLoadReq(const AggReq *g, AggReq *s){
  const ull *a = (const ull*)g;
  ull *b = (ull*)s;
  for(int i=threadIdx.x; i<(int)(sizeof(AggReq)/8); i+=blockDim.x) b[i] = a[i];
  __syncthreads();
}

__device__ __forceinline__ void aggZero(AggSt &s){
#pragma unroll
  for(int w=0; w<6; w++) s.w[w] = 0;
}

// States merged (aggMerge) as CUB's reductions take them.  WarpReduce and
// BlockReduce (warp reductions, then the warps' results in order) merge in
// an order fixed by the thread numbers: lane or thread 0 holds the result.
struct AggOp {
  int kind;
  __device__ __forceinline__ AggSt operator()(const AggSt &a, const AggSt &b) const {
    AggSt r = a;
    aggMerge(kind, &r, &b);
    return r;
  }
};
typedef cub::WarpReduce<AggSt> AggWarpRed;
typedef cub::BlockReduce<AggSt, kAggRT> AggBlockRed;

// Hand state acc of state aggregate y of group g on: BASE and the
// representative's aggregate into keep (g, S+g), the rest reported into
// out (stride S).
__device__ __forceinline__ void aggStore(const AggReq *r, int y, const AggSt &acc, AggSt *keep,
                                         const gpuds_aggres *out, int64_t g, int64_t S){
  if( y==0 ){ keep[g] = acc; return; }
  aggEmitFn(r, y, &acc, out, (int64_t)r->stFn[y]*S + g);
  if( r->stFn[y]==r->iRepFn ) keep[S+g] = acc;
}

// ------------------------------------------------------------- bounds --

// Sorted keys: h->i0 = first row with key >= lo, h->i1 = first row with key
// > hi (at least i0).  Launch: 1 block of 64 threads.
__global__ void kAggBounds(const int64_t *key, int64_t n, int64_t lo, int64_t hi, AggHdr *h){
  __shared__ int64_t b[2];
  const int w = threadIdx.x >> 5;
  int64_t r = warpBound<int64_t>(key, n, w==0 ? lo : hi, w==1);
  if( (threadIdx.x & 31)==0 ) b[w] = r;
  __syncthreads();
  if( threadIdx.x==0 ){
    h->i0 = b[0];
    h->i1 = b[1]<b[0] ? b[0] : b[1];
  }
}

// ------------------------------------------------------------ classes --

// The class of every row h->i0..h->i1-1 (aggClassify) into st[i - i0], and
// (bCount) the rows read, counted and leftover added into h.
__global__ void __launch_bounds__(kBlock) kAggClass(const AggReq *gr, AggHdr *h, uint8_t *st, int bCount){
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int64_t i0 = h->i0, i1 = h->i1;
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  ull nRead = 0, nCnt = 0, nLeft = 0;
  for(int64_t i=i0 + (int64_t)blockIdx.x*blockDim.x + threadIdx.x; i<i1; i+=stride){
    int c = aggClassify(&sr, i);
    st[i-i0] = (uint8_t)c;
    nRead += c!=AGG_ST_OUT;
    nCnt += c==AGG_ST_COUNTED;
    nLeft += c==AGG_ST_LEFT;
  }
  for(int o=16; o>0; o>>=1){
    nRead += __shfl_down_sync(0xffffffffu, nRead, o);
    nCnt += __shfl_down_sync(0xffffffffu, nCnt, o);
    nLeft += __shfl_down_sync(0xffffffffu, nLeft, o);
  }
  if( bCount && (threadIdx.x & 31)==0 ){
    if( nRead ) atomicAdd((ull*)&h->nRead, nRead);
    if( nCnt ) atomicAdd((ull*)&h->nCounted, nCnt);
    if( nLeft ) atomicAdd((ull*)&h->nLeft, nLeft);
  }
}

// The least and greatest stat words of the counted rows: block y < nKey,
// group key y's words 0..2 (stats 3y..3y+2); beyond, COUNTD aggregate
// d = y - nKey's canonical tag and value (stats 3 nKey + 2d, + 1).
__global__ void __launch_bounds__(kBlock) kAggStats(const AggReq *gr, AggHdr *h, const uint8_t *st){
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int y = blockIdx.y;
  const int nW = y<sr.nKey ? 3 : 2;
  const int s0 = y<sr.nKey ? 3*y : 3*sr.nKey + 2*(y - sr.nKey);
  const int64_t i0 = h->i0, i1 = h->i1;
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  ull mn[3] = {~0ULL, ~0ULL, ~0ULL}, mx[3] = {0, 0, 0};
  for(int64_t i=i0 + (int64_t)blockIdx.x*blockDim.x + threadIdx.x; i<i1; i+=stride){
    if( st[i-i0]!=AGG_ST_COUNTED ) continue;
    uint8_t ct = 0, tg = 0;
    uint64_t cv = 0, vl = 0;
    ull x[3];
    if( y<sr.nKey ){
      aggKeyCanon(&sr, y, i, &ct, &cv);
      x[0] = aggWord(ct, cv, 0); x[1] = aggWord(ct, cv, 1); x[2] = aggWord(ct, cv, 2);
    }else{
      aggColOf(&sr, sr.aFn[sr.cdFn[y - sr.nKey]].iCol, i, &tg, &vl);
      gpudsColCanon(tg, vl, &ct, &cv);
      x[0] = ct; x[1] = cv; x[2] = 0;
    }
#pragma unroll
    for(int w=0; w<3; w++){ mn[w] = x[w]<mn[w] ? x[w] : mn[w]; mx[w] = x[w]>mx[w] ? x[w] : mx[w]; }
  }
#pragma unroll
  for(int w=0; w<3; w++){
    for(int o=16; o>0; o>>=1){
      ull a = __shfl_down_sync(0xffffffffu, mn[w], o), b = __shfl_down_sync(0xffffffffu, mx[w], o);
      mn[w] = a<mn[w] ? a : mn[w]; mx[w] = b>mx[w] ? b : mx[w];
    }
  }
  if( (threadIdx.x & 31)==0 ){
    for(int w=0; w<nW; w++){
      if( mn[w]!=~0ULL || mx[w]!=0 ){
        atomicMin(&h->mn[s0+w], mn[w]);
        atomicMax(&h->mx[s0+w], mx[w]);
      }
    }
  }
}

// ----------------------------------------------- path W: dense numbers --

// Merge the lanes' states acc into their warp's states S[g] where fl: lanes
// of one group one after another, in lane order (a lane's rank among its
// peers is its round), so the order is the data's, never the scheduler's.
// acc is emptied where merged.  Every lane of the warp calls it.
__device__ __forceinline__ void aggFlush(AggSt *S, bool fl, int g, AggSt &acc, int kind){
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const unsigned act = __ballot_sync(full, fl);
  if( act==0 ) return;
  int rank = 0;
  if( fl ){
    const unsigned peers = __match_any_sync(act, g);
    rank = __popc(peers & ((1u<<lane) - 1u));
  }
  for(int r=0; ; r++){
    if( __ballot_sync(full, fl && rank>=r)==0 ) break;
    if( fl && rank==r ) aggMerge(kind, &S[g], &acc);
    __syncwarp();
  }
  if( fl ) aggZero(acc);
}

// Path W, state aggregate y = y0 + blockIdx.y over rows h->i0..h->i1-1:
// each warp takes a contiguous share, 32 rows a step; a lane keeps the
// state of its current group in registers and merges it into the warp's
// state of that group (shared memory, nSlot a warp) when its group changes
// (aFlush); the block's 4 warp states of each group merge in warp order
// into part[((y-y0)*gridDim.x + block)*nSlot + g].  Dynamic shared memory:
// kAggWW*nSlot states.
__global__ void __launch_bounds__(kAggWT) kAggW1(const AggReq *gr, const AggHdr *h, const uint8_t *st,
                                                  int nSlot, int y0, AggSt *part){
  extern __shared__ AggSt sS[];
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int y = y0 + blockIdx.y, kind = sr.stKind[y], col = sr.stCol[y];
  const int lane = threadIdx.x & 31, wb = threadIdx.x >> 5;
  for(int t=threadIdx.x; t<kAggWW*nSlot; t+=blockDim.x) aggZero(sS[t]);
  __syncthreads();
  AggSt *S = sS + wb*nSlot;
  const int64_t i0 = h->i0, i1 = h->i1;
  const int64_t nW = (int64_t)gridDim.x*kAggWW, wg = (int64_t)blockIdx.x*kAggWW + wb;
  int64_t per = (i1 - i0 + nW - 1)/nW;
  per = (per + 31) & ~(int64_t)31;
  const int64_t a = i0 + wg*per, b = a + per<i1 ? a + per : i1;
  int cur = -1;
  AggSt acc;
  aggZero(acc);
  for(int64_t base=a; base<b; base+=32){         // the same steps for every lane
    const int64_t i = base + lane;
    const bool ok = i<b && st[i-i0]==AGG_ST_COUNTED;
    const int g = ok ? (int)aggGid(&sr, i) : -1;
    aggFlush(S, ok && cur>=0 && g!=cur, cur, acc, kind);
    if( ok ){
      cur = g;
      aggAddRow(&sr, kind, col, &acc, i);
    }
  }
  aggFlush(S, cur>=0, cur, acc, kind);
  __syncthreads();
  for(int g=threadIdx.x; g<nSlot; g+=blockDim.x){
    AggSt m = sS[g];
    for(int w=1; w<kAggWW; w++) aggMerge(kind, &m, &sS[w*nSlot + g]);
    part[((int64_t)blockIdx.y*gridDim.x + blockIdx.x)*nSlot + g] = m;
  }
}

// Path W: group g = blockIdx.x's state of state aggregate y0 + blockIdx.y,
// the nBlk block states of kAggW1 merged in a fixed order, handed on
// (aggStore, stride nSlot).  Launch: (nSlot, states) blocks of kAggRT.
__global__ void __launch_bounds__(kAggRT) kAggW2(const AggReq *gr, const AggSt *part, int nBlk, int nSlot,
                                                  int y0, AggSt *keep, gpuds_aggres out){
  __shared__ AggReq sr;
  __shared__ AggBlockRed::TempStorage tmp;
  aggLoadReq(gr, &sr);
  const int y = y0 + blockIdx.y, kind = sr.stKind[y], g = blockIdx.x;
  AggSt acc;
  aggZero(acc);
  for(int b=threadIdx.x; b<nBlk; b+=blockDim.x){
    aggMerge(kind, &acc, &part[((int64_t)blockIdx.y*nBlk + b)*nSlot + g]);
  }
  acc = AggBlockRed(tmp).Reduce(acc, AggOp{kind});
  if( threadIdx.x==0 ) aggStore(&sr, y, acc, keep, &out, g, nSlot);
}

// No key, no COUNTD, at most kAggOneMax state aggregates (BASE and one
// more: count(*) and sum, avg, min... of a filter; more would cost this
// latency-bound pass registers and occupancy): one pass that
// classifies each row of h->i0..h->i1-1 (counts into h, no class array)
// and steps the counted ones into every state, lanes in registers.  Warps
// take contiguous shares as in kAggW1; a warp's lanes merge in a fixed
// tree, the block's warps in order, into part[y*gridDim.x + block] (the
// layout kAggW2 reads with one slot).
constexpr int kAggOneMax = 2;
__global__ void __launch_bounds__(kAggWT, 5) kAggOne(const AggReq *gr, AggHdr *h, AggSt *part){
  __shared__ AggReq sr;
  __shared__ AggSt sW[kAggWW][kAggOneMax];
  __shared__ AggWarpRed::TempStorage tmp[kAggWW];
  aggLoadReq(gr, &sr);
  const int lane = threadIdx.x & 31, wb = threadIdx.x >> 5, nSt = sr.nSt;
  const int64_t i0 = h->i0, i1 = h->i1;
  const int64_t nW = (int64_t)gridDim.x*kAggWW, wg = (int64_t)blockIdx.x*kAggWW + wb;
  int64_t per = (i1 - i0 + nW - 1)/nW;
  per = (per + 31) & ~(int64_t)31;
  const int64_t a = i0 + wg*per, b = a + per<i1 ? a + per : i1;
  AggSt acc[kAggOneMax];
  ull nRead = 0, nCnt = 0, nLeft = 0;
#pragma unroll
  for(int y=0; y<kAggOneMax; y++) aggZero(acc[y]);
  for(int64_t i=a + lane; i<b; i+=32){
    const int c = aggClassify(&sr, i);
    nRead += c!=AGG_ST_OUT;
    nLeft += c==AGG_ST_LEFT;
    if( c!=AGG_ST_COUNTED ) continue;
    nCnt++;
#pragma unroll
    for(int y=0; y<kAggOneMax; y++){
      if( y<nSt ) aggAddRow(&sr, sr.stKind[y], sr.stCol[y], &acc[y], i);
    }
  }
#pragma unroll
  for(int y=0; y<kAggOneMax; y++){
    if( y<nSt ){                               // the same for the whole block
      acc[y] = AggWarpRed(tmp[wb]).Reduce(acc[y], AggOp{sr.stKind[y]});
      if( lane==0 ) sW[wb][y] = acc[y];
      __syncwarp();
    }
  }
  for(int o=16; o>0; o>>=1){
    nRead += __shfl_down_sync(0xffffffffu, nRead, o);
    nCnt += __shfl_down_sync(0xffffffffu, nCnt, o);
    nLeft += __shfl_down_sync(0xffffffffu, nLeft, o);
  }
  if( lane==0 ){
    if( nRead ) atomicAdd((ull*)&h->nRead, nRead);
    if( nCnt ) atomicAdd((ull*)&h->nCounted, nCnt);
    if( nLeft ) atomicAdd((ull*)&h->nLeft, nLeft);
  }
  __syncthreads();
  if( (int)threadIdx.x<nSt ){
    const int y = threadIdx.x;
    AggSt m = sW[0][y];
    for(int w=1; w<kAggWW; w++) aggMerge(sr.stKind[y], &m, &sW[w][y]);
    part[(int64_t)y*gridDim.x + blockIdx.x] = m;
  }
}

// ----------------------------------------------- path L: sorted groups --

// Sort words of group key k's word w of the rows row[0..m) less mn.
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggKeyWord(const AggReq *gr, const IdxT *row, int64_t m,
                                                       int k, int w, ull mn, uint64_t *out){
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t p=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; p<m; p+=stride){
    uint8_t ct = 0;
    uint64_t cv = 0;
    aggKeyCanon(&sr, k, (int64_t)row[p], &ct, &cv);
    out[p] = aggWord(ct, cv, w) - mn;
  }
}

// The first position of each group: flags[p] = 1 where row perm[p]'s key
// tuple differs from perm[p-1]'s (and at 0), else 0.  keys: the sorted
// words of the one word that varies (then compared), or NULL (the tuples
// compared).
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggSegFlags(const AggReq *gr, const IdxT *perm, int64_t m,
                                                        const uint64_t *keys, IdxT *flags){
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t p=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; p<m; p+=stride){
    bool f = p==0;
    if( !f && keys ){
      f = keys[p]!=keys[p-1];
    }else if( !f ){
      const int64_t a = (int64_t)perm[p-1], b = (int64_t)perm[p];
      for(int k=0; k<sr.nKey && !f; k++){
        uint8_t ta = 0, tb = 0;
        uint64_t va = 0, vb = 0;
        aggKeyCanon(&sr, k, a, &ta, &va);
        aggKeyCanon(&sr, k, b, &tb, &vb);
        f = ta!=tb || va!=vb;
      }
    }
    flags[p] = f ? 1 : 0;
  }
}

// Groups from the flags and their inclusive sums gidp1: segStart[g] = first
// position of group g, segStart[nSeg] = m, h->nSeg = nSeg.
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggSegStart(const IdxT *flags, const IdxT *gidp1, int64_t m,
                                                        IdxT *segStart, AggHdr *h){
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t p=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; p<m; p+=stride){
    if( flags[p] ) segStart[(int64_t)gidp1[p]-1] = (IdxT)p;
    if( p==m-1 ){
      segStart[(int64_t)gidp1[p]] = (IdxT)m;
      h->nSeg = (int64_t)gidp1[p];
    }
  }
}

// Chunks of each group: nch[g] = ceil(length / ch) for g < nSeg, 0 at nSeg.
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggChunks(const IdxT *segStart, int64_t nSeg, int64_t ch,
                                                      int64_t *nch){
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t g=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; g<=nSeg; g+=stride){
    nch[g] = g<nSeg ? ((int64_t)segStart[g+1] - (int64_t)segStart[g] + ch - 1)/ch : 0;
  }
}

// Path L, state aggregate y0 + blockIdx.y: one warp a chunk c (of ch
// positions of one group; chunkFirst[g] is group g's first chunk): lane l
// steps rows perm[p] for p = l, l+32, ... of the chunk, then the warp's
// states merge (fixed tree) into part[blockIdx.y*cMax + c].
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggL1(const AggReq *gr, const IdxT *perm, const IdxT *segStart,
                                                  const int64_t *chunkFirst, int64_t nSeg, int64_t cMax,
                                                  int64_t ch, int y0, AggSt *part){
  __shared__ AggReq sr;
  __shared__ AggWarpRed::TempStorage tmp[kBlock/32];
  aggLoadReq(gr, &sr);
  const int y = y0 + blockIdx.y, kind = sr.stKind[y], col = sr.stCol[y];
  const int lane = threadIdx.x & 31;
  const int64_t c = (int64_t)blockIdx.x*(blockDim.x>>5) + (threadIdx.x>>5);
  if( c>=chunkFirst[nSeg] ) return;                 // the whole warp
  int64_t lo = 0, hi = nSeg;                         // the last g with chunkFirst[g] <= c
  while( hi-lo>1 ){
    int64_t mid = lo + (hi-lo)/2;
    if( chunkFirst[mid]<=c ) lo = mid; else hi = mid;
  }
  const int64_t p0 = (int64_t)segStart[lo] + (c - chunkFirst[lo])*ch;
  const int64_t pe = (int64_t)segStart[lo+1], p1 = p0 + ch<pe ? p0 + ch : pe;
  AggSt acc;
  aggZero(acc);
  for(int64_t p=p0 + lane; p<p1; p+=32) aggAddRow(&sr, kind, col, &acc, (int64_t)perm[p]);
  acc = AggWarpRed(tmp[threadIdx.x>>5]).Reduce(acc, AggOp{kind});
  if( lane==0 ) part[(int64_t)blockIdx.y*cMax + c] = acc;
}

// Path L: group g's state of state aggregate y0 + blockIdx.y, its chunks'
// states merged in a fixed order, handed on (aggStore, stride nSeg).  TPG
// threads a group: 32 (a warp; 8 groups a block) or kAggRT (the block).
template<int TPG>
__global__ void __launch_bounds__(kAggRT) kAggL2(const AggReq *gr, const AggSt *part,
                                                  const int64_t *chunkFirst, int64_t nSeg, int64_t cMax,
                                                  int y0, AggSt *keep, gpuds_aggres out){
  __shared__ AggReq sr;
  __shared__ AggWarpRed::TempStorage wtmp[kAggRT/32];
  __shared__ AggBlockRed::TempStorage btmp;
  aggLoadReq(gr, &sr);
  const int y = y0 + blockIdx.y, kind = sr.stKind[y];
  const int64_t g = TPG==32 ? (int64_t)blockIdx.x*(kAggRT/32) + (threadIdx.x>>5) : (int64_t)blockIdx.x;
  const int t = TPG==32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
  AggSt acc;
  aggZero(acc);
  if( g<nSeg ){
    for(int64_t c=chunkFirst[g] + t; c<chunkFirst[g+1]; c+=TPG){
      aggMerge(kind, &acc, &part[(int64_t)blockIdx.y*cMax + c]);
    }
  }
  if( TPG==32 ) acc = AggWarpRed(wtmp[threadIdx.x>>5]).Reduce(acc, AggOp{kind});
  else acc = AggBlockRed(btmp).Reduce(acc, AggOp{kind});
  if( t==0 && g<nSeg ) aggStore(&sr, y, acc, keep, &out, g, nSeg);
}

// ------------------------------------------------------------ COUNTD --

// COUNTD aggregate d's item at payload j (a position among the counted
// rows): its row rows[j], its group (gidp1[j] - 1 on path L, aggGid on
// path W) and its canonical value.
template<typename IdxT>
__device__ __forceinline__ void aggCdItem(const AggReq *r, int d, const IdxT *rows, const IdxT *gidp1,
                                          int64_t j, int64_t *pG, uint8_t *pT, uint64_t *pV){
  const int64_t i = (int64_t)rows[j];
  uint8_t tg;
  uint64_t vl;
  *pG = gidp1 ? (int64_t)gidp1[j] - 1 : aggGid(r, i);
  aggColOf(r, r->aFn[r->cdFn[d]].iCol, i, &tg, &vl);
  gpudsColCanon(tg, vl, pT, pV);
}

// Sort words of COUNTD d's items pay[0..m): spec 0 the group, 1 the
// canonical tag, 2 the canonical value; less mn.
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggCdWord(const AggReq *gr, const IdxT *pay, int64_t m,
                                                      const IdxT *rows, const IdxT *gidp1, int d,
                                                      int spec, ull mn, uint64_t *out){
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t p=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; p<m; p+=stride){
    int64_t g;
    uint8_t ct;
    uint64_t cv;
    aggCdItem<IdxT>(&sr, d, rows, gidp1, (int64_t)pay[p], &g, &ct, &cv);
    out[p] = (spec==0 ? (ull)g : spec==1 ? (ull)ct : cv) - mn;
  }
}

// COUNTD d: its items pay[0..m) sorted by (group, tag, value); each first
// of a run of equal ones with a non-NULL value counts one for its group
// into cnt[group] (warps add once a group).  keys: where only spec vs
// varied, its sorted words (less mnS): compared instead of the items;
// gC, tC: the group and tag where they do not vary.
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggCdCount(const AggReq *gr, const IdxT *pay, int64_t m,
                                                       const IdxT *rows, const IdxT *gidp1, int d,
                                                       const uint64_t *keys, int vs, ull mnS, int64_t gC,
                                                       ull tC, ull *cnt){
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int lane = threadIdx.x & 31;
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t base=(int64_t)blockIdx.x*blockDim.x + (threadIdx.x & ~31); base<m; base+=stride){
    const int64_t p = base + lane;
    bool on = false;
    int64_t g = 0;
    if( p<m ){
      uint8_t ct = 0;
      bool fresh = p==0;
      if( keys ){
        g = vs==0 ? (int64_t)(keys[p] + mnS) : gC;
        ct = (uint8_t)(vs==1 ? keys[p] + mnS : tC);
        fresh = fresh || keys[p]!=keys[p-1];
      }else{
        int64_t g2;
        uint8_t t2;
        uint64_t cv, v2;
        aggCdItem<IdxT>(&sr, d, rows, gidp1, (int64_t)pay[p], &g, &ct, &cv);
        if( !fresh ){
          aggCdItem<IdxT>(&sr, d, rows, gidp1, (int64_t)pay[p-1], &g2, &t2, &v2);
          fresh = g!=g2 || ct!=t2 || cv!=v2;
        }
      }
      on = fresh && ct!=GPUDS_TAG_NULL;
    }
    const unsigned act = __ballot_sync(0xffffffffu, on);
    if( on ){
      const unsigned peers = __match_any_sync(act, (unsigned long long)g);
      if( lane==__ffs(peers)-1 ) atomicAdd(&cnt[g], (ull)__popc(peers));
    }
  }
}

// ------------------------------------------------------------- groups --

// Every group g < S: its own fields (aggEmitGroup: rows, representative,
// key tuple, COUNTSTAR) from keep (BASE at g, the representative's
// aggregate at S+g), and its COUNTD counts from cnt (d*S+g).
__global__ void __launch_bounds__(kBlock) kAggFinal(const AggReq *gr, const AggSt *keep, const ull *cnt,
                                                     int64_t S, gpuds_aggres out){
  __shared__ AggReq sr;
  aggLoadReq(gr, &sr);
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t g=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; g<S; g+=stride){
    aggEmitGroup(&sr, &keep[g], &keep[S+g], &out, g, S);
    for(int d=0; d<sr.nCd; d++) out.aN[(int64_t)sr.cdFn[d]*S + g] = (int64_t)cnt[(int64_t)d*S + g];
  }
}

// ---------------------------------------------------------- leftovers --

// Selection predicate: row i has class v (st indexed from i0).
struct AggIs {
  const uint8_t *st;
  int64_t i0;
  uint8_t v;
  __device__ __forceinline__ bool operator()(int64_t i) const { return st[i-i0]==v; }
};

// Leftover rows idx[0..m): sort words (key, sign bit flipped) into w, or
// (w NULL) their keys and row words into oK, oR.
template<typename IdxT>
__global__ void __launch_bounds__(kBlock) kAggLeft(const IdxT *idx, int64_t m, const int64_t *key,
                                                    const uint64_t *row, uint64_t *w, int64_t *oK, uint64_t *oR){
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t p=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; p<m; p+=stride){
    const int64_t i = (int64_t)idx[p];
    if( w ){ w[p] = (uint64_t)key[i] ^ kSign; continue; }
    oK[p] = key[i];
    oR[p] = row[i];
  }
}

}  // namespace
