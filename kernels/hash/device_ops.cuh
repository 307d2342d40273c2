// kernels/hash/device_ops.cuh -- device operations: the 4-thread tile's probe,
// claim, insert and per-key state that the kernels are built from.
//
// Part of the GPU hash store's one translation unit: included by
// kernels/hash.cu only (the design is described at its top).
#pragma once

#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cstdint>
#include "hash/layout.cuh"

namespace {

// murmur3 fmix64: a bijection on 64-bit words, so equal hashes mean equal keys.
__host__ __device__ __forceinline__ ull mix64(ull h){
  h ^= h >> 33; h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}
__device__ __forceinline__ ull homeOf(ull k, ull nb){ return __umul64hi(mix64(k), nb); }
__device__ __forceinline__ ull nextB(ull b, ull nb){ return b+1==nb ? 0 : b+1; }
__host__ __device__ __forceinline__ int sideOf(ull k){
  return k==kEmptyKey ? 0 : (k==kTombKey ? 1 : -1);
}
__device__ __forceinline__ bool isFree(ull k){ return k==kEmptyKey || k==kTombKey; }

// Load one slot (16 bytes): through the read-only path when no thread of the
// kernel writes the table (RO), else from L2 (never a stale L1 line).
template<bool RO>
__device__ __forceinline__ void ldSlot(const Slot *p, ull &k, ull &v){
  longlong2 x;
  if constexpr( RO ) x = __ldg((const longlong2*)p);
  else x = __ldcg((const longlong2*)p);
  k = (ull)x.x; v = (ull)x.y;
}
template<bool RO> __device__ __forceinline__ ull ld(const ull *p){
  if constexpr( RO ) return __ldg(p);
  else return __ldcg(p);
}

// Outcome of probing for a key (tile-uniform, except myExp).
struct Probe {
  bool found;
  int l;           // slot of the key (found)
  ull b;           // bucket of the key (found)
  ull val;         // its value (found)
  ull freeB;       // first probed bucket with a free slot, NONE if none
  int freeL;       // first free slot in freeB
  ull myExp;       // lane freeL only: the free slot's key word when seen
};

// One probe step: bucket b, whose slot of this lane holds (sk, sv), examined
// for k.  Promises: true when the probe ends here (pr.found and its (b, l,
// val) if b holds k; else an EMPTY slot was seen, so k is absent); the first
// free slot seen is recorded in pr.freeB/freeL/myExp (mutating probes only).
template<bool RO>
__device__ __forceinline__ bool probeBucket(const Tile &tile, ull k, ull b,
                                            ull sk, ull sv, Probe &pr){
  const int lane = tile.thread_rank();
  const unsigned hm = tile.ballot(sk==k);
  if( hm ){
    pr.found = true; pr.b = b; pr.l = __ffs(hm)-1;
    pr.val = tile.shfl(sv, pr.l);
    return true;
  }
  if( !RO && pr.freeB==NONE ){
    const unsigned fm = tile.ballot(isFree(sk));
    if( fm ){
      pr.freeB = b; pr.freeL = __ffs(fm)-1;
      if( lane==pr.freeL ) pr.myExp = sk;
    }
  }
  return tile.any(sk==kEmptyKey);
}

__device__ __forceinline__ void probeInit(Probe &pr){
  pr.found = false; pr.freeB = NONE; pr.freeL = -1; pr.myExp = 0;
  pr.b = 0; pr.l = 0; pr.val = 0;
}

// Continue a probe for k at bucket b (pr as left by the buckets before).
template<bool RO>
__device__ __forceinline__ void tileProbeFrom(const Tile &tile, const Table T, ull k,
                                              Probe &pr, ull b){
  const int lane = tile.thread_rank();
  for( ull step=0; step<T.nb; step++ ){
    ull sk, sv;
    ldSlot<RO>(&T.b[b].s[lane], sk, sv);
    if( probeBucket<RO>(tile, k, b, sk, sv, pr) ) return;
    b = nextB(b, T.nb);
  }
}

// Probe for k (not a sentinel) by the lookup rule: from home(k), visit
// buckets until one holds k or one has an EMPTY slot.  Promises: pr.found
// with (b, l, val) = the first slot holding k in probe order, or not found
// if k is absent; pr.freeB/freeL = first free slot seen (candidate for an
// insert of k).
template<bool RO>
__device__ __forceinline__ void tileProbe(const Tile &tile, const Table T, ull k,
                                          Probe &pr, ull b = NONE){
  if( b==NONE ) b = homeOf(k, T.nb);     // else: resume at bucket b
  probeInit(pr);
  tileProbeFrom<RO>(tile, T, k, pr, b);
}

// Put k -> v in the first free slot that a CAS wins, scanning from bucket b
// (k absent and owned by this tile).  Promises: one slot now holds k; returns
// 1 if it was EMPTY (used grows), 0 if a tombstone, -1 if none was found in
// two sweeps of the table (cannot happen while used < slots; a bug).
__device__ int tileClaim(const Tile &tile, const Table T, ull k, ull v, ull b){
  const int lane = tile.thread_rank();
  for( ull step=0; step<2*T.nb; step++ ){
    const ull sk = __ldcg(&T.b[b].s[lane].key);
    unsigned fr = tile.ballot(isFree(sk));
    while( fr ){
      const int l = __ffs(fr)-1;
      int ok = 0;
      if( lane==l ){
        if( atomicCAS(&T.b[b].s[l].key, sk, k)==sk ){
          __stcg(&T.b[b].s[l].val, v);
          ok = sk==kEmptyKey ? 2 : 1;
        }
      }
      ok = tile.shfl(ok, l);
      if( ok ) return ok-1;
      fr &= fr-1;
    }
    b = nextB(b, T.nb);
  }
  return -1;
}

// Insert k -> v after a probe found k absent: CAS the free slot the probe
// saw, else scan on from there.  Same promises as tileClaim.
__device__ __forceinline__ int tileInsert(const Tile &tile, const Table T,
                                          ull k, ull v, const Probe &pr){
  const int lane = tile.thread_rank();
  if( pr.freeB==NONE ) return tileClaim(tile, T, k, v, homeOf(k, T.nb));
  int ok = 0;
  if( lane==pr.freeL ){
    Slot *s = &T.b[pr.freeB].s[lane];
    if( atomicCAS(&s->key, pr.myExp, k)==pr.myExp ){
      __stcg(&s->val, v);
      ok = pr.myExp==kEmptyKey ? 2 : 1;
    }
  }
  ok = tile.shfl(ok, pr.freeL);
  if( ok ) return ok-1;
  return tileClaim(tile, T, k, v, pr.freeB);
}

// State of one key during a run of operations on it (tile-uniform).
struct KeyState {
  ull key;
  int side;        // -1: table key; 0/1: side slot
  bool present0;   // present before the run
  bool present;    // present after the ops applied so far
  bool dirty;      // an upsert happened (value to write back)
  ull val;         // current value
  Probe pr;        // where the key is / could go (table keys)
};

// Read the state of key k (before a run of ops on it).
template<bool RO>
__device__ KeyState tileLoadState(const Tile &tile, const Table T,
                                  const Meta *meta, ull k){
  KeyState s;
  s.key = k; s.side = sideOf(k); s.dirty = false; s.val = 0;
  if( s.side>=0 ){
    s.present0 = ld<RO>(&meta->sidePresent[s.side])!=0;
    if( s.present0 ) s.val = ld<RO>(&meta->sideVal[s.side]);
    s.pr.found = false; s.pr.freeB = NONE;
  }else{
    tileProbe<RO>(tile, T, k, s.pr);
    s.present0 = s.pr.found;
    s.val = s.pr.found ? s.pr.val : 0;
  }
  s.present = s.present0;
  return s;
}

// Apply one operation to a key state in registers; report (found, old).
__device__ __forceinline__ void applyOp(KeyState &s, int op, ull v,
                                        uint8_t &f, ull &old){
  f = s.present ? 1 : 0;
  old = s.present ? s.val : 0;
  if( op==GPUDS_OP_UPSERT ){ s.present = true; s.val = v; s.dirty = true; }
  else if( op==GPUDS_OP_DELETE ){ s.present = false; s.val = 0; }
}

// Write a key's final state back to the table (or its side slot).  Promises:
// afterwards the store holds exactly what s says; dC/dU (tile-uniform) get
// the change in count/used; bad is set if no slot could be claimed.
__device__ void tileFlush(const Tile &tile, const Table T, Meta *meta,
                          const KeyState &s, long long &dC, long long &dU,
                          int &bad){
  const int lane = tile.thread_rank();
  if( s.side>=0 ){
    if( lane==0 && (s.present!=s.present0 || s.dirty) ){
      __stcg(&meta->sidePresent[s.side], (ull)(s.present ? 1 : 0));
      __stcg(&meta->sideVal[s.side], s.present ? s.val : 0ull);
    }
    dC += (int)s.present - (int)s.present0;
    return;
  }
  if( s.present0 && s.present ){
    if( s.dirty && lane==s.pr.l ) __stcg(&T.b[s.pr.b].s[lane].val, s.val);
  }else if( s.present0 ){
    if( lane==s.pr.l ) atomicExch(&T.b[s.pr.b].s[lane].key, kTombKey);
    dC -= 1;
  }else if( s.present ){
    const int r = tileInsert(tile, T, s.key, s.val, s.pr);
    if( r<0 ) bad = 1; else dU += r;
    dC += 1;
  }
}

// Apply a mutating op on table key k (not a sentinel) whose probe result is
// pr: (f, old) = state before; the table updated; dC/dU/bad as in tileFlush.
__device__ __forceinline__ void applyProbed(const Tile &tile, const Table T, int op,
                                            ull k, ull v, const Probe &pr,
                                            long long &dC, long long &dU, int &bad){
  const int lane = tile.thread_rank();
  if( op==GPUDS_OP_UPSERT ){
    if( pr.found ){
      if( lane==pr.l ) __stcg(&T.b[pr.b].s[lane].val, v);
    }else{
      const int r = tileInsert(tile, T, k, v, pr);
      if( r<0 ) bad = 1; else dU += r;
      dC += 1;
    }
  }else if( op==GPUDS_OP_DELETE && pr.found ){
    if( lane==pr.l ) atomicExch(&T.b[pr.b].s[lane].key, kTombKey);
    dC -= 1;
  }
}

// Apply one operation on a key that no other tile touches in this kernel.
// Promises: (f, old) = state of k before the op; the table updated;
// dC/dU/bad as in tileFlush.
template<int MODE>
__device__ __forceinline__ void tileOp(const Tile &tile, const Table T, Meta *meta,
                                       int op, ull k, ull v, uint8_t &f, ull &old,
                                       long long &dC, long long &dU, int &bad){
  constexpr bool RO = MODE==M_LOOKUP;
  if( sideOf(k)>=0 ){           // rare: user key equal to a sentinel
    KeyState s = tileLoadState<RO>(tile, T, meta, k);
    applyOp(s, op, v, f, old);
    if( !RO ) tileFlush(tile, T, meta, s, dC, dU, bad);
    return;
  }
  Probe pr;
  tileProbe<RO>(tile, T, k, pr);
  f = pr.found ? 1 : 0;
  old = pr.found ? pr.val : 0;
  if constexpr( MODE==M_MIXED ) applyProbed(tile, T, op, k, v, pr, dC, dU, bad);
}

// Add the per-tile deltas (held by tile lane 0) of a warp to Meta.
__device__ void finishCounters(Meta *meta, int lane, long long dC,
                               long long dU, int bad){
  long long c = lane==0 ? dC : 0, u = lane==0 ? dU : 0;
#pragma unroll
  for( int o=16; o>0; o>>=1 ){
    c += __shfl_xor_sync(0xffffffffu, c, o);
    u += __shfl_xor_sync(0xffffffffu, u, o);
    bad |= __shfl_xor_sync(0xffffffffu, bad, o);
  }
  if( (threadIdx.x&31)==0 ){
    if( c ) atomicAdd(&meta->count, (ull)c);
    if( u ) atomicAdd(&meta->used, (ull)u);
    if( bad ) atomicExch(&meta->err, 1ull);
  }
}

}  // namespace
