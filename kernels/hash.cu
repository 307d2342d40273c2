// hash.cu -- the GPU hash store behind gpuhash tables: gpudsCudaHashOps
// (zBackend "cuda", kind GPUDS_HASH).  Keys are int64 (full range), each with
// one 64-bit word.
//
// SCHEME: bucketed linear probing, one operation per tile of 4 threads.
//   * A bucket is 64 bytes: 4 slots of (key, value), 16 bytes each; two
//     buckets share a 128-byte cache line.  64 bytes is the unit the memory
//     system moves for a random access (two 32-byte sectors, one DRAM burst),
//     so a probe costs exactly one access and a hit finds its value in the
//     bytes already read.  (A first version with 128-byte buckets of 8 keys
//     followed by 8 values needed a second access per hit; measured on H200:
//     find-hit 12.8 G ops/s at load 0.5 against the 16 G target.)
//   * A tile of 4 threads probes a bucket with one coalesced 64-byte load
//     (16 bytes per thread) and decides it with ballots: hit, or EMPTY slot
//     seen (miss), or go on to the next bucket.  Each tile applies one
//     operation at a time, so the warp stays converged and memory-level
//     parallelism comes from occupancy (thousands of tiles per GPU).
//   * A key's home bucket is mulhi(fmix64(key), nBuckets); probing goes to
//     the next bucket (wrapping) until a bucket holds the key or has an EMPTY
//     slot.
//   * Why bucketed linear probing rather than bucketed cuckoo or iceberg: SQL
//     does all of find-hit, find-miss, insert and delete.  Up to load ~0.85
//     nearly every operation ends in its home bucket: one 64-byte read for a
//     hit or a miss, plus a CAS and a store into the same sector for an
//     insert.  Cuckoo must read every candidate bucket on a miss (2-3
//     accesses) and moves keys on insert; iceberg reads a primary and two
//     secondary buckets on a miss.  Keys never move once placed, so lookups,
//     updates and deletes run concurrently with inserts of other keys without
//     locks, and a delete is a single tombstone store.
//   * Slot state lives in the key word: kEmptyKey (never used since the last
//     rehash) or kTombKey (deleted).  A user key equal to one of these two bit
//     patterns is kept in one of two side slots (in Meta), so no user key is
//     lost.  Invariant: if key k sits in bucket Y, no bucket from home(k) up
//     to Y holds an EMPTY slot.  It holds because slots only go EMPTY -> key
//     -> TOMB -> key ..., never back to EMPTY (only a rehash makes EMPTY
//     slots), and an insert takes the first free slot (EMPTY or TOMB) it can
//     claim by CAS, scanning from the home bucket.  Tombstones are reused by
//     inserts and all dropped by the next rehash.
//
// BATCHES: the backend contract (gpuds_backend.h) is that the keys of one
// batch are distinct, so operations on different keys commute and every op
// owns its key.  (A general path for repeated keys, a radix sort by hash bits
// and per-group sequential kernels, served no caller and was removed.)
// ONE KERNEL (xBatch, xBulkLoad, batchDevice, upsertDistinctDevice): all ops
// run in one kernel, kRun<M_MIXED>, in any order, one op per tile.  A lookup
// concurrent with inserts/deletes of other keys is exact: its key never
// moves, inserts only fill free slots and deletes leave tombstones, so no
// EMPTY slot appears between its home bucket and its slot.  Measured on H200
// against alternatives (bench_hash-h200-2e26.log): two ops per tile with
// both home buckets loaded first ran at half the speed (52 registers, half
// the occupancy); lookups first (read-only, two per tile), then the
// mutations, was slower at load 0.5 and faster at 0.8 (4.6 vs 3.9 G/s).
// The probe is written as separate steps (probeBucket/tileProbeFrom): the
// same algorithm written as one loop compiled to code that ran the
// [10,10,80] distinct batch at 6.5 G/s instead of 10.6, and inserts at 8.3
// instead of 9.8 (ptxas: 40 against 44 registers).
//
// GROWTH: before a batch the table is resized so that used slots (keys +
// tombstones) + upserts of the batch stay <= kMaxLoad; a rehash builds a new
// table on the GPU and swaps it in only when complete, so running out of GPU
// memory leaves the store unchanged (GPUDS_NOMEM).  After a batch that leaves
// the table below kShrinkLoad it is rehashed down.
#include "gpuds_backend.h"
#include "hash.cuh"
#include "hash_util.cuh"
#include "hostpipe.cuh"

#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cg = cooperative_groups;
using namespace gpuds_hash;
typedef unsigned long long ull;

namespace {

constexpr int TS = kSlotsPerBucket;     // tile size = slots per bucket
constexpr ull NONE = ~0ull;
constexpr int BLOCK = 256;
constexpr size_t kMaxBatch = 0x7fffffffu;   // op indices are 32-bit

struct Slot {
  ull key;
  ull val;
};
struct alignas(64) Bucket {
  Slot s[TS];
};
static_assert(sizeof(Bucket)==64, "a bucket is 64 bytes");

struct Table {
  Bucket *b;
  ull nb;          // number of buckets (any value >= 1)
};

// Counters and side slots, on the device (kernels update them) and mirrored
// on the host after every call.
struct Meta {
  ull count;            // keys held, side slots included
  ull used;             // table slots that are not EMPTY (keys + tombstones)
  ull sidePresent[2];   // side slot 0 holds user key kEmptyKey, 1 kTombKey
  ull sideVal[2];
  ull err;              // nonzero: a kernel could not place a key (a bug)
};

enum { M_LOOKUP = 0, M_MIXED = 1 };

using Tile = cg::thread_block_tile<TS, cg::thread_block>;

// ---------------------------------------------------------------- device --

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

// Apply ops i in [0,n), one per tile, whose keys are distinct.  ops NULL:
// every op is defOp.  vals NULL: values 0.  found/old may be NULL.
template<int MODE>
__global__ void __launch_bounds__(BLOCK)
kRun(Table T, Meta *meta, size_t n, const uint8_t *ops, int defOp,
     const ull *keys, const ull *vals, uint8_t *found, ull *old){
  Tile tile = cg::tiled_partition<TS>(cg::this_thread_block());
  const int lane = tile.thread_rank();
  const size_t tileId = (size_t(blockIdx.x)*blockDim.x + threadIdx.x)/TS;
  const size_t nTiles = size_t(gridDim.x)*blockDim.x/TS;
  long long dC = 0, dU = 0; int bad = 0;
  for( size_t i=tileId; i<n; i+=nTiles ){
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
__global__ void __launch_bounds__(BLOCK)
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

// out[0] += upserts, out[1] += deletes, out[2] += invalid op codes.
__global__ void kCountOps(size_t n, const uint8_t *ops, ull *out){
  unsigned u = 0, d = 0, bad = 0;
  for( size_t i=size_t(blockIdx.x)*blockDim.x+threadIdx.x; i<n;
       i+=size_t(gridDim.x)*blockDim.x ){
    const uint8_t o = ops[i];
    u += o==GPUDS_OP_UPSERT; d += o==GPUDS_OP_DELETE; bad += o>GPUDS_OP_DELETE;
  }
  u = __reduce_add_sync(0xffffffffu, u);
  d = __reduce_add_sync(0xffffffffu, d);
  bad = __reduce_add_sync(0xffffffffu, bad);
  if( (threadIdx.x&31)==0 ){
    if( u ) atomicAdd(&out[0], (ull)u);
    if( d ) atomicAdd(&out[1], (ull)d);
    if( bad ) atomicAdd(&out[2], (ull)bad);
  }
}

// Insert every live key of the old table (one slot per tile) into the fresh
// table T (no tombstones there; keys distinct, so no probe for presence).
__global__ void __launch_bounds__(BLOCK)
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
__global__ void __launch_bounds__(BLOCK)
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

// ------------------------------------------------------------------ host --

struct GpuHashStore {
  Table T;               // the table (device)
  Meta *dMeta;           // device counters
  Meta h;                // host mirror of *dMeta, valid between calls
  void *dScratch;        // reusable device scratch (batches, scans, checks)
  size_t nScratch;
  void *hStage;          // reusable pinned staging buffer (may be NULL)
  size_t nStage;
  cudaStream_t st;
  gpuds_pipe::HostPipe pipe;   // chunked host transfers (hostpipe.cuh)
  size_t chunk;          // keys per chunk; host batches of more go through pipe
  uint64_t devBytes;     // device bytes held (table + meta + scratch)
  uint64_t devLimit;     // testing hook: simulated device memory limit
  uint64_t nRehash;
  int nSM;
  char zErr[512];
};

namespace {

// Allocate device memory, counted in p->devBytes (and held to p->devLimit).
cudaError_t devAlloc(GpuHashStore *p, void **pp, size_t n){
  *pp = nullptr;
  if( p->devLimit && p->devBytes+n > p->devLimit ) return cudaErrorMemoryAllocation;
  cudaError_t e = cudaMalloc(pp, n);
  if( e==cudaSuccess ) p->devBytes += n; else *pp = nullptr;
  return e;
}

// Free memory from devAlloc (NULL is a no-op).
void devFree(GpuHashStore *p, void *ptr, size_t n){
  if( ptr ){ cudaFree(ptr); p->devBytes -= n; }
}

int setErr(GpuHashStore *p, int rc, const char *zMsg){
  snprintf(p->zErr, sizeof(p->zErr), "gpuhash: %s", zMsg);
  return rc;
}

// Blocks for a grid-stride kernel over `threads` threads: no more than
// fit on the GPU at once (so the grid-stride loop, not the block scheduler,
// spreads the work).
unsigned gridFor(const GpuHashStore *p, size_t threads, const void *kernel=nullptr){
  int perSM = 2048/BLOCK;
  if( kernel ){
    int occ = 0;
    if( cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, BLOCK, 0)==cudaSuccess
        && occ>0 ) perSM = occ;
    else (void)cudaGetLastError();
  }
  size_t b = (threads+BLOCK-1)/BLOCK;
  size_t cap = (size_t)p->nSM*perSM;
  if( b>cap ) b = cap;
  return b<1 ? 1u : (unsigned)b;
}

// Buckets needed to hold nKeys at load factor `load` (at least kMinBuckets).
ull bucketsFor(ull nKeys, double load){
  double nb = (double)nKeys/load/TS;
  ull r = (ull)nb;
  if( (double)r<nb ) r++;
  return r<kMinBuckets ? kMinBuckets : r;
}

ull sidesPresent(const GpuHashStore *p){
  return (p->h.sidePresent[0]?1:0) + (p->h.sidePresent[1]?1:0);
}

// Make the scratch buffer at least n bytes (contents not kept).  On failure
// the store is unchanged apart from having no scratch.
int ensureScratch(GpuHashStore *p, size_t n){
  int rc = GPUDS_OK;
  if( p->nScratch>=n ) return GPUDS_OK;
  devFree(p, p->dScratch, p->nScratch);
  p->dScratch = nullptr; p->nScratch = 0;
  n = (n+4095)&~(size_t)4095;
  HASH_CK(p, devAlloc(p, &p->dScratch, n));
  p->nScratch = n;
  return GPUDS_OK;
fail:
  return rc;
}

// A pinned staging buffer of at least n bytes, or NULL (then the caller
// copies from pageable memory directly).
void *stage(GpuHashStore *p, size_t n){
  if( p->nStage>=n ) return p->hStage;
  if( p->hStage ){ cudaFreeHost(p->hStage); p->hStage = nullptr; p->nStage = 0; }
  if( cudaMallocHost(&p->hStage, n)!=cudaSuccess ){
    (void)cudaGetLastError();
    p->hStage = nullptr;
    return nullptr;
  }
  p->nStage = n;
  return p->hStage;
}

// Copy *dMeta to the host mirror (synchronises the stream).  Promises
// GPUDS_ERROR if a kernel reported it could not place a key.
int readMeta(GpuHashStore *p){
  int rc = GPUDS_OK;
  HASH_CK(p, cudaMemcpyAsync(&p->h, p->dMeta, sizeof(Meta), cudaMemcpyDeviceToHost, p->st));
  HASH_CK(p, cudaStreamSynchronize(p->st));
  if( p->h.err ) return setErr(p, GPUDS_ERROR, "internal error: a key found no free slot");
  return GPUDS_OK;
fail:
  return rc;
}

// Rebuild the table with newNb buckets (drops tombstones).  Promises: on
// success the table holds the same keys; on failure (GPUDS_NOMEM when the new
// table does not fit) the old table is untouched and still in use.
int rehash(GpuHashStore *p, ull newNb){
  int rc = GPUDS_OK;
  Bucket *nb = nullptr;
  const size_t bytes = (size_t)newNb*sizeof(Bucket);
  Table NT;
  ull used = p->h.count - sidesPresent(p);
  HASH_CK(p, devAlloc(p, (void**)&nb, bytes));
  HASH_CK(p, cudaMemsetAsync(nb, 0xFE, bytes, p->st));
  NT.b = nb; NT.nb = newNb;
  if( p->h.used>0 ){
    kRehash<<<gridFor(p, (size_t)p->T.nb*TS*TS, (const void*)kRehash), BLOCK, 0, p->st>>>(
        p->T.b, p->T.nb, NT, p->dMeta);
    HASH_CK_LAUNCH(p, "kRehash");
  }
  HASH_CK(p, cudaMemcpyAsync(&p->dMeta->used, &used, sizeof(ull), cudaMemcpyHostToDevice, p->st));
  rc = readMeta(p);
  if( rc ) goto fail;
  devFree(p, p->T.b, (size_t)p->T.nb*sizeof(Bucket));
  p->T = NT;
  p->nRehash++;
  return GPUDS_OK;
fail:
  devFree(p, nb, bytes);
  return rc;
}

// Make room for `extra` more keys before a batch (see kMaxLoad).  Promises:
// afterwards used + extra <= kMaxLoad * slots, or an error with the table
// unchanged.
int ensureRoom(GpuHashStore *p, ull extra){
  const ull slots = p->T.nb*TS;
  if( (double)(p->h.used+extra) <= kMaxLoad*(double)slots ) return GPUDS_OK;
  const ull need = p->h.count - sidesPresent(p) + extra;
  ull nb = bucketsFor(need, kGrowLoad);
  if( nb<p->T.nb && (double)need>=kShrinkLoad*(double)slots ) nb = p->T.nb;
  return rehash(p, nb);
}

// After a batch with deletes: shrink when the table is nearly empty.  A
// failure is ignored (the table is just bigger than needed).
void maybeShrink(GpuHashStore *p){
  const ull keys = p->h.count - sidesPresent(p);
  if( p->T.nb<=kMinBuckets || (double)keys>=kShrinkLoad*(double)(p->T.nb*TS) ) return;
  const ull nb = bucketsFor(keys, kGrowLoad);
  if( nb>=p->T.nb ) return;
  char zSave[sizeof(p->zErr)];
  memcpy(zSave, p->zErr, sizeof(zSave));
  if( rehash(p, nb)!=GPUDS_OK ) memcpy(p->zErr, zSave, sizeof(zSave));
}

// Lookup kernel choice (tuning knob, see gpuds_hash::setLookupIlp).
int gLookupIlp = 2;

size_t alignUp(size_t x){ return (x+255)&~(size_t)255; }

// Scratch layout of a batch of n ops: device copies of the inputs and
// outputs (host calls).
struct Layout {
  size_t oKey, oVal, oOp, oOld, oFound;
  size_t total;
};

// Compute the layout; `io`: include I/O arrays (else only the minimum).
void layoutBatch(size_t n, bool io, Layout *L){
  size_t o = 0;
  memset(L, 0, sizeof(*L));
  if( io ){
    L->oKey = o;   o = alignUp(o+8*n);
    L->oVal = o;   o = alignUp(o+8*n);
    L->oOp = o;    o = alignUp(o+n);
    L->oOld = o;   o = alignUp(o+8*n);
    L->oFound = o; o = alignUp(o+n);
  }
  L->total = o<256 ? 256 : o;
}

// Apply a batch of distinct keys whose arrays are on the device.  nUps/nDel:
// number of upserts/deletes.  Promises the xBatch semantics; on error before
// any kernel ran the store is unchanged.
int applyBatch(GpuHashStore *p, size_t n, const uint8_t *dOp, int defOp,
               const ull *dKey, const ull *dVal, uint8_t *dFound, ull *dOld,
               ull nUps, ull nDel){
  int rc = GPUDS_OK;
  const bool pure = nUps==0 && nDel==0;
  Table T;
  if( !pure ){
    rc = ensureRoom(p, nUps);
    if( rc ) return rc;
  }
  T = p->T;
  if( pure ){
    if( gLookupIlp==2 ){
      kLookup2<<<gridFor(p, (n+1)/2*TS, (const void*)kLookup2), BLOCK, 0, p->st>>>(
          T, p->dMeta, n, dKey, dFound, dOld);
      HASH_CK_LAUNCH(p, "kLookup2");
    }else{
      kRun<M_LOOKUP><<<gridFor(p, n*TS, (const void*)kRun<M_LOOKUP>), BLOCK, 0, p->st>>>(
          T, p->dMeta, n, nullptr, GPUDS_OP_LOOKUP, dKey, nullptr, dFound, dOld);
      HASH_CK_LAUNCH(p, "kRun<lookup>");
    }
  }else{
    kRun<M_MIXED><<<gridFor(p, n*TS, (const void*)kRun<M_MIXED>), BLOCK, 0, p->st>>>(
        T, p->dMeta, n, dOp, defOp, dKey, dVal, dFound, dOld);
    HASH_CK_LAUNCH(p, "kRun<mixed>");
  }
  rc = readMeta(p);
  if( rc ) return rc;
  if( nDel ) maybeShrink(p);
  return GPUDS_OK;
fail:
  return rc;
}

// Count op codes on the host.  Promises GPUDS_MISUSE for an invalid code.
int countOps(GpuHashStore *p, size_t n, const uint8_t *aOp, ull *pUps, ull *pDel){
  ull u = 0, d = 0;
  for( size_t i=0; i<n; i++ ){
    const uint8_t o = aOp[i];
    if( o>GPUDS_OP_DELETE ){
      char z[96];
      snprintf(z, sizeof(z), "invalid operation code %d at index %zu", (int)o, i);
      return setErr(p, GPUDS_MISUSE, z);
    }
    u += o==GPUDS_OP_UPSERT;
    d += o==GPUDS_OP_DELETE;
  }
  *pUps = u; *pDel = d;
  return GPUDS_OK;
}

// Make the store's pipe ready for its chunk size.  Returns false (and clears
// the error) when it cannot be had, e.g. no pinned memory: the caller then
// takes the single-shot path, which needs none.
bool pipeReady(GpuHashStore *p){
  const char *zWhat;
  if( p->chunk==0 ) return false;
  if( gpuds_pipe::prepare(p->pipe, p->chunk, &zWhat)!=cudaSuccess ){
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

// Host-array batch: stage inputs, apply, copy results back.  aOp NULL means
// every op is defOp (lookups for xLookup, upserts for xBulkLoad).
//
// Batches of more than p->chunk ops move their arrays in pieces through the
// store's two pinned chunk buffers, the host memcpy of one piece overlapping
// the DMA of the other (gpuds_pipe::h2dStaged/d2hStaged); smaller ones (and
// chunk 0) go single-shot: all inputs memcpy'd into one pinned buffer of the
// batch's size, one copy in, one copy out.  Unlike xLookup, these batches
// cannot overlap their kernels with the transfers: all-or-nothing needs the
// whole batch on the device before ensureRoom, and the results exist
// only once the whole batch is applied.  The staged path also keeps the pinned
// memory at two chunk buffers instead of one buffer as big as the biggest
// batch.  Measured on H200 (bench_hash host-upsert rows: xBatch of
// fresh upserts from host arrays, found/old wanted, transfers included;
// bench/results/bench_hash-h200-host.log): 2^20 ops 5.05 -> 4.48 ms, 2^22
// 22.6 -> 18.7, 2^24 93.2 -> 68.8 (run 1, chunks of 2^20: 4.08 -> 3.62,
// 19.5 -> 15.4, 82.9 -> 65.1).
int hostBatch(GpuHashStore *p, size_t n, const uint8_t *aOp, int defOp,
              const int64_t *aKey, const uint64_t *aVal, uint8_t *aFound,
              uint64_t *aOld){
  int rc = GPUDS_OK;
  ull nUps = 0, nDel = 0;
  Layout L;
  char *S, *H = nullptr;
  bool staged;
  const char *zWhat = "";
  cudaError_t e;
  if( !p ) return GPUDS_MISUSE;
  if( n==0 ) return GPUDS_OK;
  if( !aKey ) return setErr(p, GPUDS_MISUSE, "NULL key array");
  if( n>kMaxBatch ) return setErr(p, GPUDS_MISUSE, "batch too large (more than 2^31-1 ops)");
  if( aOp ){
    rc = countOps(p, n, aOp, &nUps, &nDel);
    if( rc ) return rc;
  }else{
    nUps = defOp==GPUDS_OP_UPSERT ? n : 0;
    nDel = defOp==GPUDS_OP_DELETE ? n : 0;
  }
  layoutBatch(n, true, &L);
  rc = ensureScratch(p, L.total);
  if( rc ) return rc;
  S = (char*)p->dScratch;
  staged = n>p->chunk && pipeReady(p);
  if( staged ){
    e = gpuds_pipe::h2dStaged(p->pipe, p->st, S+L.oKey, aKey, 8*n, &zWhat);
    if( e!=cudaSuccess ) goto stagedFail;
    if( aVal ){
      e = gpuds_pipe::h2dStaged(p->pipe, p->st, S+L.oVal, aVal, 8*n, &zWhat);
      if( e!=cudaSuccess ) goto stagedFail;
    }else HASH_CK(p, cudaMemsetAsync(S+L.oVal, 0, 8*n, p->st));
    if( aOp ){
      e = gpuds_pipe::h2dStaged(p->pipe, p->st, S+L.oOp, aOp, n, &zWhat);
      if( e!=cudaSuccess ) goto stagedFail;
    }else HASH_CK(p, cudaMemsetAsync(S+L.oOp, defOp, n, p->st));
  }else{
    H = (char*)stage(p, L.oFound+n);   // inputs and outputs packed as in scratch
    if( H ){
      memcpy(H+L.oKey, aKey, 8*n);
      if( aVal ) memcpy(H+L.oVal, aVal, 8*n); else memset(H+L.oVal, 0, 8*n);
      if( aOp ) memcpy(H+L.oOp, aOp, n); else memset(H+L.oOp, defOp, n);
      HASH_CK(p, cudaMemcpyAsync(S, H, L.oOld, cudaMemcpyHostToDevice, p->st));
    }else{
      HASH_CK(p, cudaMemcpyAsync(S+L.oKey, aKey, 8*n, cudaMemcpyHostToDevice, p->st));
      if( aVal ) HASH_CK(p, cudaMemcpyAsync(S+L.oVal, aVal, 8*n, cudaMemcpyHostToDevice, p->st));
      else HASH_CK(p, cudaMemsetAsync(S+L.oVal, 0, 8*n, p->st));
      if( aOp ) HASH_CK(p, cudaMemcpyAsync(S+L.oOp, aOp, n, cudaMemcpyHostToDevice, p->st));
      else HASH_CK(p, cudaMemsetAsync(S+L.oOp, defOp, n, p->st));
    }
  }
  rc = applyBatch(p, n, (const uint8_t*)(S+L.oOp), defOp, (const ull*)(S+L.oKey),
                  (const ull*)(S+L.oVal), (uint8_t*)(S+L.oFound), (ull*)(S+L.oOld),
                  nUps, nDel);
  if( rc ) goto fail;
  if( aFound || aOld ){
    if( staged ){
      if( aOld ){
        e = gpuds_pipe::d2hStaged(p->pipe, p->st, aOld, S+L.oOld, 8*n, &zWhat);
        if( e!=cudaSuccess ) goto stagedFail;
      }
      if( aFound ){
        e = gpuds_pipe::d2hStaged(p->pipe, p->st, aFound, S+L.oFound, n, &zWhat);
        if( e!=cudaSuccess ) goto stagedFail;
      }
    }else if( H ){
      HASH_CK(p, cudaMemcpyAsync(H+L.oOld, S+L.oOld, L.oFound+n-L.oOld, cudaMemcpyDeviceToHost, p->st));
      HASH_CK(p, cudaStreamSynchronize(p->st));
      if( aOld ) memcpy(aOld, H+L.oOld, 8*n);
      if( aFound ) memcpy(aFound, H+L.oFound, n);
    }else{
      if( aOld ) HASH_CK(p, cudaMemcpyAsync(aOld, S+L.oOld, 8*n, cudaMemcpyDeviceToHost, p->st));
      if( aFound ) HASH_CK(p, cudaMemcpyAsync(aFound, S+L.oFound, n, cudaMemcpyDeviceToHost, p->st));
      HASH_CK(p, cudaStreamSynchronize(p->st));
    }
  }
  return GPUDS_OK;
stagedFail:
  rc = gpudsHashCudaRc(e, p->zErr, sizeof(p->zErr), zWhat);
fail:
  // nothing may stay in flight (the staged copies read pinned buffers the
  // next call reuses); the error is already recorded
  if( staged ){
    cudaStreamSynchronize(p->st);
    (void)cudaGetLastError();
  }
  return rc;
}

// Lookup kernel for m keys on stream st (one of the pipe's).
int enqueueLookup(GpuHashStore *p, cudaStream_t st, size_t m, const ull *dKey,
                  uint8_t *dFound, ull *dVal){
  int rc = GPUDS_OK;
  if( gLookupIlp==2 ){
    kLookup2<<<gridFor(p, (m+1)/2*TS, (const void*)kLookup2), BLOCK, 0, st>>>(
        p->T, p->dMeta, m, dKey, dFound, dVal);
    HASH_CK_LAUNCH(p, "kLookup2 (pipelined)");
  }else{
    kRun<M_LOOKUP><<<gridFor(p, m*TS, (const void*)kRun<M_LOOKUP>), BLOCK, 0, st>>>(
        p->T, p->dMeta, m, nullptr, GPUDS_OP_LOOKUP, dKey, nullptr, dFound, dVal);
    HASH_CK_LAUNCH(p, "kRun<lookup> (pipelined)");
  }
  return GPUDS_OK;
fail:
  return rc;
}

// xLookup.  Up to p->chunk keys (or chunk 0): the single-shot hostBatch.
// More: the chunked, double-buffered pipeline of hostpipe.cuh (lookups change
// nothing, so chunks are independent and may overlap): per slot a device area
// of keys | values | found flags in the scratch.
int hostLookup(GpuHashStore *p, size_t n, const int64_t *aKey, uint8_t *aFound,
               uint64_t *aVal){
  int rc = GPUDS_OK;
  if( !p ) return GPUDS_MISUSE;
  if( n<=p->chunk || p->chunk==0 || !aKey || n>kMaxBatch || !pipeReady(p) ){
    return hostBatch(p, n, nullptr, GPUDS_OP_LOOKUP, aKey, nullptr, aFound, aVal);
  }
  const size_t C = p->pipe.chunk;
  const size_t oVal = alignUp(8*C), oFound = oVal + alignUp(8*C), slot = alignUp(oFound + C);
  rc = ensureScratch(p, 2*slot);
  if( rc ) return rc;
  char *S = (char*)p->dScratch;
  int64_t *dKey[2] = { (int64_t*)S, (int64_t*)(S+slot) };
  uint64_t *dVal[2] = { (uint64_t*)(S+oVal), (uint64_t*)(S+slot+oVal) };
  uint8_t *dFound[2] = { (uint8_t*)(S+oFound), (uint8_t*)(S+slot+oFound) };
  return gpuds_pipe::runLookups(p->pipe, p->st, n, aKey, aFound, aVal, false, dKey, dFound, dVal,
      [p](int, cudaStream_t st, size_t m, const int64_t *k, uint8_t *f, uint64_t *v,
          int64_t, int64_t) -> int {
        return enqueueLookup(p, st, m, (const ull*)k, f, (ull*)v);
      },
      [p](cudaError_t e, const char *zWhat) -> int {
        return gpudsHashCudaRc(e, p->zErr, sizeof(p->zErr), zWhat);
      });
}

// ------------------------------------------------------------ the ops ----

void hashDestroy(gpuds_store *pStore);

// Create an empty store: kMinBuckets buckets, a stream, the counters.
int hashCreate(gpuds_store **ppStore, char **pzErr){
  int rc = GPUDS_OK;
  char zDev[256];
  const size_t tb = kMinBuckets*sizeof(Bucket);
  GpuHashStore *p = nullptr;
  *ppStore = nullptr;
  if( pzErr ) *pzErr = nullptr;
  if( !gpudsCudaDevice(zDev, sizeof(zDev), 0, 0) ){
    if( pzErr ){
      *pzErr = (char*)malloc(300);
      if( *pzErr ) snprintf(*pzErr, 300, "gpuhash: no usable CUDA device: %s", zDev);
    }
    return GPUDS_ERROR;
  }
  p = (GpuHashStore*)calloc(1, sizeof(GpuHashStore));
  if( !p ){
    if( pzErr ) *pzErr = strdup("gpuhash: out of host memory");
    return GPUDS_NOMEM;
  }
  HASH_CK(p, cudaDeviceGetAttribute(&p->nSM, cudaDevAttrMultiProcessorCount, 0));
  HASH_CK(p, cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
  p->chunk = gpuds_pipe::defaultChunk();
  HASH_CK(p, devAlloc(p, (void**)&p->dMeta, sizeof(Meta)));
  HASH_CK(p, cudaMemsetAsync(p->dMeta, 0, sizeof(Meta), p->st));
  HASH_CK(p, devAlloc(p, (void**)&p->T.b, tb));
  p->T.nb = kMinBuckets;
  HASH_CK(p, cudaMemsetAsync(p->T.b, 0xFE, tb, p->st));
  HASH_CK(p, cudaStreamSynchronize(p->st));
  *ppStore = (gpuds_store*)p;
  return GPUDS_OK;
fail:
  if( pzErr ) *pzErr = strdup(p->zErr);
  hashDestroy((gpuds_store*)p);
  return rc;
}

// Free the store and everything it holds; NULL is a no-op.
void hashDestroy(gpuds_store *pStore){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !p ) return;
  if( p->st ) cudaStreamSynchronize(p->st);
  devFree(p, p->T.b, (size_t)p->T.nb*sizeof(Bucket));
  devFree(p, p->dMeta, sizeof(Meta));
  devFree(p, p->dScratch, p->nScratch);
  if( p->hStage ) cudaFreeHost(p->hStage);
  gpuds_pipe::release(p->pipe);
  if( p->st ) cudaStreamDestroy(p->st);
  (void)cudaGetLastError();
  free(p);
}

// xBatch: the keys are distinct (the backend contract), so no op needs
// ordering: one kernel applies all of them.
int hashBatch(gpuds_store *pStore, size_t n, const uint8_t *aOp, const int64_t *aKey,
              const uint64_t *aVal, uint8_t *aFound, uint64_t *aOld){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( p && n && !aOp ) return setErr(p, GPUDS_MISUSE, "NULL op array");
  return hostBatch(p, n, aOp, GPUDS_OP_LOOKUP, aKey, aVal, aFound, aOld);
}

int hashLookup(gpuds_store *pStore, size_t n, const int64_t *aKey, uint8_t *aFound,
               uint64_t *aVal){
  GpuHashStore *p = (GpuHashStore*)pStore;
  return hostLookup(p, n, aKey, aFound, aVal);
}

// Sorted bulk load: verified strictly ascending (so distinct), then upserted
// as one batch.
int hashBulkLoad(gpuds_store *pStore, size_t n, const int64_t *aKey,
                 const uint64_t *aVal){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !p ) return GPUDS_MISUSE;
  if( n && !aKey ) return setErr(p, GPUDS_MISUSE, "NULL key array");
  for( size_t i=1; i<n; i++ ){
    if( aKey[i]<=aKey[i-1] ){
      char z[96];
      snprintf(z, sizeof(z), "xBulkLoad: keys not strictly ascending at index %zu", i);
      return setErr(p, GPUDS_MISUSE, z);
    }
  }
  return hostBatch(p, n, nullptr, GPUDS_OP_UPSERT, aKey, aVal, nullptr, nullptr);
}

// Next page of a scan: slots from pScan->pos in order (table slots, then the
// two side slots), entries with lo <= key <= hi.
int hashScan(gpuds_store *pStore, gpuds_scan *pScan, size_t nMax, int64_t *aKey,
             uint64_t *aVal, size_t *pnOut){
  GpuHashStore *p = (GpuHashStore*)pStore;
  int rc = GPUDS_OK;
  const ull total = p ? p->T.nb*TS : 0;
  ull pos = pScan->pos;
  size_t out = 0;
  size_t nTemp = 0;
  ull W = 0, nSel = 0, *dSel, *dNum, *dK, *dV;
  char *S;
  *pnOut = 0;
  if( !p ) return GPUDS_MISUSE;
  if( pScan->done ) return GPUDS_OK;
  if( pScan->lo>pScan->hi ){ pScan->done = 1; return GPUDS_OK; }
  if( nMax==0 ) return GPUDS_OK;
  if( !aKey ) return setErr(p, GPUDS_MISUSE, "xScan: NULL key array");
  {
    // Window of slots expected to yield about nMax entries, within limits.
    const ull keys = p->h.count ? p->h.count : 1;
    double w = (double)nMax*(double)total/(double)keys*1.25;
    W = w<4096 ? 4096 : (w>(double)(1ull<<24) ? (1ull<<24) : (ull)w);
  }
  while( out<nMax && pos<total ){
    const ull room = nMax-out;
    const ull win = total-pos<W ? total-pos : W;
    const ull nGather = room<win ? room : win;
    ScanPred pred{p->T.b, pScan->lo, pScan->hi};
    thrust::counting_iterator<ull> it(pos);
    nTemp = 0;
    HASH_CK(p, cub::DeviceSelect::If(nullptr, nTemp, it, (ull*)nullptr, (ull*)nullptr,
                                     (int64_t)win, pred, p->st));
    rc = ensureScratch(p, alignUp(8*win)+alignUp(16*nGather)+256+alignUp(nTemp));
    if( rc ) return rc;
    S = (char*)p->dScratch;
    dSel = (ull*)S;
    dK = (ull*)(S+alignUp(8*win));
    dV = dK+nGather;
    dNum = (ull*)(S+alignUp(8*win)+alignUp(16*nGather));
    HASH_CK(p, cub::DeviceSelect::If(S+alignUp(8*win)+alignUp(16*nGather)+256, nTemp, it,
                                     dSel, dNum, (int64_t)win, pred, p->st));
    HASH_CK(p, cudaMemcpyAsync(&nSel, dNum, sizeof(ull), cudaMemcpyDeviceToHost, p->st));
    HASH_CK(p, cudaStreamSynchronize(p->st));
    {
      const ull take = nSel<room ? nSel : room;
      if( take ){
        kGather<<<gridFor(p, take), BLOCK, 0, p->st>>>(p->T.b, take, dSel, dK, dV);
        HASH_CK_LAUNCH(p, "kGather");
        HASH_CK(p, cudaMemcpyAsync(aKey+out, dK, 8*take, cudaMemcpyDeviceToHost, p->st));
        if( aVal ) HASH_CK(p, cudaMemcpyAsync(aVal+out, dV, 8*take, cudaMemcpyDeviceToHost, p->st));
      }
      if( nSel>room ){
        ull last = 0;
        HASH_CK(p, cudaMemcpyAsync(&last, dSel+take-1, sizeof(ull), cudaMemcpyDeviceToHost, p->st));
        HASH_CK(p, cudaStreamSynchronize(p->st));
        pos = last+1;
      }else{
        HASH_CK(p, cudaStreamSynchronize(p->st));
        pos += win;
      }
      out += take;
    }
    if( out<nMax && W<(1ull<<24) ) W *= 2;   // sparse range: widen the window
  }
  while( out<nMax && pos>=total && pos<total+2 ){
    const int s = (int)(pos-total);
    const long long k = (long long)(s==0 ? kEmptyKey : kTombKey);
    if( p->h.sidePresent[s] && k>=pScan->lo && k<=pScan->hi ){
      aKey[out] = k;
      if( aVal ) aVal[out] = p->h.sideVal[s];
      out++;
    }
    pos++;
  }
  pScan->pos = pos;
  pScan->done = pos>=total+2;
  *pnOut = out;
  return GPUDS_OK;
fail:
  return rc;
}

int64_t hashCount(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? (int64_t)p->h.count : 0; }

void hashInfo(gpuds_store *pStore, char *zBuf, size_t nBuf){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !zBuf || nBuf==0 ) return;
  if( !p ){ snprintf(zBuf, nBuf, "{}"); return; }
  const ull slots = p->T.nb*TS;
  const ull keys = p->h.count - sidesPresent(p);
  snprintf(zBuf, nBuf,
    "{\"structure\":\"cuda-hash: bucketed linear probing, 4 slots per 64-byte bucket\","
    "\"keys\":%llu,\"buckets\":%llu,\"slots\":%llu,\"load\":%.4f,"
    "\"tombstones\":%llu,\"device_bytes\":%llu,\"rehashes\":%llu}",
    (ull)p->h.count, (ull)p->T.nb, slots, slots ? (double)keys/(double)slots : 0.0,
    (ull)(p->h.used-keys), (ull)p->devBytes, (ull)p->nRehash);
}

// Check: every live key is found by the probe rule at its own slot (so no
// duplicates and no key behind an EMPTY slot), counts match the counters.
int hashCheck(gpuds_store *pStore){
  GpuHashStore *p = (GpuHashStore*)pStore;
  int rc = GPUDS_OK;
  ull res[4] = {0, 0, 0, ~0ull};
  ull *d;
  char z[300];
  if( !p ) return GPUDS_MISUSE;
  rc = ensureScratch(p, 256);
  if( rc ) return rc;
  d = (ull*)p->dScratch;
  HASH_CK(p, cudaMemcpyAsync(d, res, sizeof(res), cudaMemcpyHostToDevice, p->st));
  kCheck<<<gridFor(p, (size_t)p->T.nb*TS, (const void*)kCheck), BLOCK, 0, p->st>>>(p->T, d);
  HASH_CK_LAUNCH(p, "kCheck");
  HASH_CK(p, cudaMemcpyAsync(res, d, sizeof(res), cudaMemcpyDeviceToHost, p->st));
  rc = readMeta(p);   // synchronises
  if( rc ) return rc;
  if( res[2] ){
    snprintf(z, sizeof(z), "check: %llu keys not found at their slot by the probe rule "
             "(duplicate or misplaced), first at slot %llu", res[2], res[3]);
    return setErr(p, GPUDS_ERROR, z);
  }
  if( p->h.sidePresent[0]>1 || p->h.sidePresent[1]>1 )
    return setErr(p, GPUDS_ERROR, "check: side slot flag is not 0/1");
  if( res[0]+sidesPresent(p)!=p->h.count ){
    snprintf(z, sizeof(z), "check: %llu keys in slots + %llu side keys != count %llu",
             res[0], sidesPresent(p), p->h.count);
    return setErr(p, GPUDS_ERROR, z);
  }
  if( res[1]!=p->h.used ){
    snprintf(z, sizeof(z), "check: %llu non-empty slots != used counter %llu",
             res[1], p->h.used);
    return setErr(p, GPUDS_ERROR, z);
  }
  if( (double)p->h.used > (double)(p->T.nb*TS) ){
    return setErr(p, GPUDS_ERROR, "check: used slots exceed the table");
  }
  return GPUDS_OK;
fail:
  return rc;
}

const char *hashErrmsg(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->zErr : ""; }

// Device-array variant of the batch entry points (see hash.cuh).
int deviceBatch(GpuHashStore *p, size_t n, const uint8_t *dOp, int defOp,
                const ull *dKey, const ull *dVal, uint8_t *dFound, ull *dOld){
  int rc = GPUDS_OK;
  ull cnt[3] = {0, 0, 0};
  if( !p ) return GPUDS_MISUSE;
  if( n==0 ) return GPUDS_OK;
  if( n>kMaxBatch ) return setErr(p, GPUDS_MISUSE, "batch too large (more than 2^31-1 ops)");
  if( dOp ){
    rc = ensureScratch(p, 256);
    if( rc ) return rc;
    HASH_CK(p, cudaMemsetAsync(p->dScratch, 0, sizeof(cnt), p->st));
    kCountOps<<<gridFor(p, n), BLOCK, 0, p->st>>>(n, dOp, (ull*)p->dScratch);
    HASH_CK_LAUNCH(p, "kCountOps");
    HASH_CK(p, cudaMemcpyAsync(cnt, p->dScratch, sizeof(cnt), cudaMemcpyDeviceToHost, p->st));
    HASH_CK(p, cudaStreamSynchronize(p->st));
    if( cnt[2] ) return setErr(p, GPUDS_MISUSE, "invalid operation code in batch");
  }else{
    cnt[0] = defOp==GPUDS_OP_UPSERT ? n : 0;
    cnt[1] = defOp==GPUDS_OP_DELETE ? n : 0;
  }
  return applyBatch(p, n, dOp, defOp, dKey, dVal, dFound, dOld, cnt[0], cnt[1]);
fail:
  return rc;
}

}  // namespace

// ------------------------------------------------- C++ internal interface --

namespace gpuds_hash {

int batchDevice(gpuds_store *pStore, size_t n, const uint8_t *dOp, const int64_t *dKey,
                const uint64_t *dVal, uint8_t *dFound, uint64_t *dOld){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( p && n && (!dOp || !dKey) ) return setErr(p, GPUDS_MISUSE, "NULL array");
  return deviceBatch(p, n, dOp, GPUDS_OP_LOOKUP, (const ull*)dKey, (const ull*)dVal,
                     dFound, (ull*)dOld);
}

int lookupDevice(gpuds_store *pStore, size_t n, const int64_t *dKey, uint8_t *dFound,
                 uint64_t *dVal){
  GpuHashStore *p = (GpuHashStore*)pStore;
  return deviceBatch(p, n, nullptr, GPUDS_OP_LOOKUP, (const ull*)dKey, nullptr,
                     dFound, (ull*)dVal);
}

int upsertDistinctDevice(gpuds_store *pStore, size_t n, const int64_t *dKey,
                         const uint64_t *dVal, uint8_t *dFound, uint64_t *dOld){
  GpuHashStore *p = (GpuHashStore*)pStore;
  return deviceBatch(p, n, nullptr, GPUDS_OP_UPSERT, (const ull*)dKey,
                     (const ull*)dVal, dFound, (ull*)dOld);
}

int reserve(gpuds_store *pStore, uint64_t nKeys, double load){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !p ) return GPUDS_MISUSE;
  if( !(load>0.0 && load<=kMaxLoad) ) return setErr(p, GPUDS_MISUSE, "reserve: load out of (0, kMaxLoad]");
  const ull nb = bucketsFor(nKeys, load);
  if( nb<=p->T.nb ) return GPUDS_OK;
  return rehash(p, nb);
}

uint64_t buckets(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->T.nb : 0; }
void setLookupIlp(int nOps){ gLookupIlp = nOps==1 ? 1 : 2; }
uint64_t rehashCount(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->nRehash : 0; }
void setDeviceLimit(gpuds_store *pStore, uint64_t bytes){ GpuHashStore *p = (GpuHashStore*)pStore; if( p ) p->devLimit = bytes; }
cudaStream_t stream(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->st : nullptr; }
void setHostChunk(gpuds_store *pStore, size_t nKeys){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( p ) p->chunk = nKeys>gpuds_pipe::kMaxChunk ? gpuds_pipe::kMaxChunk : nKeys;
}

}  // namespace gpuds_hash

extern "C" const gpuds_store_ops gpudsCudaHashOps = {
  "cuda",
  GPUDS_HASH,
  hashCreate,
  hashDestroy,
  hashBatch,
  hashLookup,
  hashScan,
  hashBulkLoad,
  hashCount,
  hashInfo,
  hashCheck,
  hashErrmsg,
};
