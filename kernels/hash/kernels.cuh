// kernels/hash/kernels.cuh -- the kernels: batches (kRun), lookups
// (kLookup2), op counts, rehash, the checker and the scan gather.
//
// Part of the GPU hash store's one translation unit: included by
// kernels/hash.cu only (the design is described at its top).
#pragma once

#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cstdint>
#include "gpuds_backend.h"
#include "common/launch.cuh"
#include "hash/layout.cuh"
#include "hash/device_ops.cuh"

namespace {

// Apply ops i = list[j] for j in [0,n) (i = j if list is NULL), one per
// tile, whose keys are distinct among the ops not skipped (skip[i] != 0
// skips op i; skip may be NULL).  ops NULL: every op is defOp.  vals NULL:
// values 0.  found/old may be NULL.  (Every caller passes list and skip as
// NULL since the general path for repeated keys is gone; they stay so that
// this kernel keeps the code it was tuned as: its speed depends on its code
// shape (see the top of hash.cu), and a version without them, two
// registers fewer, was not shown to be as fast.)
// @param T      the table
// @param meta   its counters, updated at the end
// @param n      operations
// @param list   the operations to apply, by index; NULL: 0..n-1
// @param ops    their codes; NULL: every one is defOp
// @param defOp  the code where ops is NULL
// @param keys   their keys
// @param vals   their words; NULL: 0
// @param skip   nonzero: the operation is skipped; may be NULL
// @param found  out: 1 where the key was present; may be NULL
// @param old    out: its word before, 0 where absent; may be NULL
template<int MODE>
__global__ void __launch_bounds__(gpuds_launch::kBlock)
kRun(Table T, Meta *meta, size_t n, const uint32_t *list, const uint8_t *ops,
     int defOp, const ull *keys, const ull *vals, const uint8_t *skip,
     uint8_t *found, ull *old){
  Tile tile = cg::tiled_partition<TS>(cg::this_thread_block());
  const int lane = tile.thread_rank();
  const size_t tileId = (size_t(blockIdx.x)*blockDim.x + threadIdx.x)/TS;
  const size_t nTiles = size_t(gridDim.x)*blockDim.x/TS;
  long long dC = 0, dU = 0; int bad = 0;
  for( size_t j=tileId; j<n; j+=nTiles ){
    const size_t i = list ? list[j] : j;
    if( skip && skip[i] ) continue;
    const int op = ops ? ops[i] : defOp;
    const ull k = keys[i];
    const ull v = vals ? vals[i] : 0;
    uint8_t f; ull o;
    tileOp<MODE>(tile, T, meta, op, k, v, f, o, dC, dU, bad);
    if( lane==0 ){
      if( found ) found[i] = f;
      if( old ) old[i] = o;
    }
  }
  if( MODE!=M_LOOKUP ) finishCounters(meta, lane, dC, dU, bad);
}

// Finish a lookup of k whose home-bucket slot (this lane's) was already
// loaded as (sk, sv).  Promises (f, old) as tileOp<M_LOOKUP>.
__device__ __forceinline__ void tileLookupFrom(const Tile &tile, const Table T,
                                               const Meta *meta, ull k, ull sk,
                                               ull sv, uint8_t &f, ull &old){
  long long dC = 0, dU = 0; int bad = 0;
  if( sideOf(k)>=0 ){
    tileOp<M_LOOKUP>(tile, T, (Meta*)meta, GPUDS_OP_LOOKUP, k, 0, f, old, dC, dU, bad);
    return;
  }
  const unsigned hm = tile.ballot(sk==k);
  if( hm ){
    f = 1; old = tile.shfl(sv, __ffs(hm)-1);
    return;
  }
  if( tile.any(sk==kEmptyKey) ){ f = 0; old = 0; return; }
  Probe pr;
  tileProbe<true>(tile, T, k, pr, nextB(homeOf(k, T.nb), T.nb));
  f = pr.found ? 1 : 0;
  old = pr.found ? pr.val : 0;
}

// Lookups with two operations per tile: both home-bucket loads are issued
// before either is used (more memory-level parallelism than kRun<M_LOOKUP>).
// @param T      the table
// @param meta   its counters (the side slots)
// @param n      keys
// @param keys   the keys
// @param found  out: 1 where the key is present; may be NULL
// @param vals   out: its word, 0 where absent; may be NULL
__global__ void __launch_bounds__(gpuds_launch::kBlock)
kLookup2(Table T, const Meta *meta, size_t n, const ull *keys, uint8_t *found,
         ull *vals){
  Tile tile = cg::tiled_partition<TS>(cg::this_thread_block());
  const int lane = tile.thread_rank();
  const size_t tileId = (size_t(blockIdx.x)*blockDim.x + threadIdx.x)/TS;
  const size_t nTiles = size_t(gridDim.x)*blockDim.x/TS;
  for( size_t i=2*tileId; i<n; i+=2*nTiles ){
    const bool two = i+1<n;
    const ull k0 = keys[i];
    const ull k1 = two ? keys[i+1] : k0;
    ull a0, b0, a1, b1;
    ldSlot<true>(&T.b[homeOf(k0, T.nb)].s[lane], a0, b0);
    ldSlot<true>(&T.b[homeOf(k1, T.nb)].s[lane], a1, b1);
    uint8_t f0, f1; ull o0, o1;
    tileLookupFrom(tile, T, meta, k0, a0, b0, f0, o0);
    tileLookupFrom(tile, T, meta, k1, a1, b1, f1, o1);
    if( lane==0 ){
      if( found ){ found[i] = f0; if( two ) found[i+1] = f1; }
      if( vals ){ vals[i] = o0; if( two ) vals[i+1] = o1; }
    }
  }
}

// The sum of x over the 32 lanes of a full warp, in every lane
// (__reduce_add_sync where the hardware has it, sm_80 on; shuffles before).
__device__ __forceinline__ unsigned warpSum(unsigned x){
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_add_sync(0xffffffffu, x);
#else
  for( int o=16; o>0; o>>=1 ) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
#endif
}

// out[0] += upserts, out[1] += deletes, out[2] += invalid op codes.
// @param n    operations
// @param ops  their codes
// @param out  the three counts, added to
__global__ void kCountOps(size_t n, const uint8_t *ops, ull *out){
  unsigned u = 0, d = 0, bad = 0;
  for( size_t i=size_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n;
       i+=size_t(gridDim.x)*blockDim.x ){
    const uint8_t o = ops[i];
    u += o==GPUDS_OP_UPSERT; d += o==GPUDS_OP_DELETE; bad += o>GPUDS_OP_DELETE;
  }
  u = warpSum(u);
  d = warpSum(d);
  bad = warpSum(bad);
  if( (threadIdx.x&31)==0 ){
    if( u ) atomicAdd(&out[0], (ull)u);
    if( d ) atomicAdd(&out[1], (ull)d);
    if( bad ) atomicAdd(&out[2], (ull)bad);
  }
}

// Insert every live key of the old table (one slot per tile) into the fresh
// table T (no tombstones there; keys distinct, so no probe for presence).
// @param oldB   the old table's buckets
// @param oldNb  their number
// @param T      the new table, empty
// @param meta   counters: err set if a key finds no slot
__global__ void __launch_bounds__(gpuds_launch::kBlock)
kRehash(const Bucket *oldB, ull oldNb, Table T, Meta *meta){
  Tile tile = cg::tiled_partition<TS>(cg::this_thread_block());
  const int lane = tile.thread_rank();
  const size_t tileId = (size_t(blockIdx.x)*blockDim.x + threadIdx.x)/TS;
  const size_t nTiles = size_t(gridDim.x)*blockDim.x/TS;
  const ull nSlots = oldNb*TS;
  int bad = 0;
  for( ull j=tileId; j<nSlots; j+=nTiles ){
    ull k, v;
    ldSlot<true>(&oldB[j/TS].s[j%TS], k, v);
    if( !isFree(k) && tileClaim(tile, T, k, v, homeOf(k, T.nb))<0 ) bad = 1;
  }
  finishCounters(meta, lane, 0, 0, bad);
}

// Invariant check: out[0] += live slots, out[1] += non-EMPTY slots, out[2] +=
// live keys the probe rule does not find at their own slot (misplaced or
// duplicated), out[3] = min such slot.
// @param T    the table
// @param out  out: the four results above
__global__ void __launch_bounds__(gpuds_launch::kBlock)
kCheck(Table T, ull *out){
  Tile tile = cg::tiled_partition<TS>(cg::this_thread_block());
  const int lane = tile.thread_rank();
  const size_t tileId = (size_t(blockIdx.x)*blockDim.x + threadIdx.x)/TS;
  const size_t nTiles = size_t(gridDim.x)*blockDim.x/TS;
  ull live = 0, nonEmpty = 0, nBad = 0;
  for( ull b=tileId; b<T.nb; b+=nTiles ){
    const ull k = __ldg(&T.b[b].s[lane].key);
    live += !isFree(k);
    nonEmpty += k!=kEmptyKey;
    unsigned lm = tile.ballot(!isFree(k));
    while( lm ){
      const int t = __ffs(lm)-1;
      lm &= lm-1;
      const ull kt = tile.shfl(k, t);
      Probe pr;
      tileProbe<true>(tile, T, kt, pr);
      if( !pr.found || pr.b!=b || pr.l!=t ){
        if( lane==0 ){ nBad++; atomicMin(&out[3], b*TS+t); }
      }
    }
  }
#pragma unroll
  for( int o=16; o>0; o>>=1 ){
    live += __shfl_xor_sync(0xffffffffu, live, o);
    nonEmpty += __shfl_xor_sync(0xffffffffu, nonEmpty, o);
    nBad += __shfl_xor_sync(0xffffffffu, nBad, o);
  }
  if( (threadIdx.x&31)==0 ){
    atomicAdd(&out[0], live);
    atomicAdd(&out[1], nonEmpty);
    if( nBad ) atomicAdd(&out[2], nBad);
  }
}

// Scan predicate: slot s holds a live key within [lo, hi].
struct ScanPred {
  const Bucket *b;
  long long lo, hi;
  __device__ bool operator()(const ull &s) const {
    const ull k = b[s/TS].s[s%TS].key;
    if( isFree(k) ) return false;
    const long long x = (long long)k;
    return x>=lo && x<=hi;
  }
};

// key[i], val[i] = contents of slot sel[i].
// @param B    the table's buckets
// @param m    slots to read
// @param sel  their numbers
// @param key  out: their keys
// @param val  out: their words
__global__ void kGather(const Bucket *B, size_t m, const ull *sel,
                        ull *key, ull *val){
  for( size_t i=size_t(blockIdx.x)*blockDim.x+threadIdx.x; i<m;
       i+=size_t(gridDim.x)*blockDim.x ){
    const ull s = sel[i];
    key[i] = B[s/TS].s[s%TS].key;
    val[i] = B[s/TS].s[s%TS].val;
  }
}

}  // namespace
