/*
** kernels/gfsl/device_ops.cuh -- device operations: warp-level reads, locks,
** descents and searches of the skiplist that the kernels are built from.
**
** Part of the GFSL store's one translation unit: included by
** kernels/gfsl.cu only (the design is described at its top).
*/
#pragma once

#include <cuda_runtime.h>
#include <cstdint>
#include "gfsl/layout.cuh"

namespace {

/*************************** device helpers ********************************/

/* Record the first internal error (called by one lane). */
__device__ void setErr(DevState *ds, int code, int level, uint32_t chunk, i64 key){
  if( atomicCAS(&ds->err, 0, code)==0 ){
    ds->errLevel = level; ds->errChunk = chunk; ds->errKey = key;
  }
}

/* Word `lane` of the first 256 bytes of a chunk (key, max, next|meta):
** ldS for chunks nobody modifies during the kernel (cached, read-only path),
** ldL for chunks read under their lock (L2, coherent). */
__device__ __forceinline__ u64 ldS(const Chunk *c, int lane){
  return __ldg(reinterpret_cast<const u64*>(c) + lane);
}
__device__ __forceinline__ u64 ldL(const Chunk *c, int lane){
  return __ldcg(reinterpret_cast<const u64*>(c) + lane);
}
/* Down pointer `lane` of an upper-level chunk, read-only path. */
__device__ __forceinline__ uint32_t ldSDown(const Chunk *c, int lane){
  return lane<DSIZE ? __ldg(reinterpret_cast<const unsigned int*>(c->val) + lane) : NIL;
}
/* Value (level 0) or down pointer (upper levels) `lane`, under lock. */
__device__ __forceinline__ u64 ldLVal(const Chunk *c, int lane, int level){
  if( lane>=DSIZE ) return 0;
  if( level==0 ) return __ldcg(reinterpret_cast<const u64*>(c->val) + lane);
  return __ldcg(reinterpret_cast<const unsigned int*>(c->val) + lane);
}
/* Store entry `slot` (called by the lane owning it). */
__device__ __forceinline__ void stEntry(Chunk *c, int slot, u64 k, u64 v, int level){
  __stcg(reinterpret_cast<u64*>(c->key) + slot, k);
  if( level==0 ) __stcg(reinterpret_cast<u64*>(c->val) + slot, v);
  else __stcg(reinterpret_cast<unsigned int*>(c->val) + slot, (unsigned int)v);
}

/* The header fields of a chunk, from the words the warp loaded. */
struct Hdr { uint32_t meta, next; i64 mx; int cnt; };
__device__ __forceinline__ Hdr hdrOf(u64 w){
  Hdr h;
  u64 x = __shfl_sync(GFSL_FULL_MASK, w, 31);
  h.meta = (uint32_t)(x>>32);
  h.next = (uint32_t)x;
  h.mx = (i64)__shfl_sync(GFSL_FULL_MASK, w, 30);
  h.cnt = (int)(h.meta & M_CNT);
  return h;
}

/* Acquire the lock of chunk c (whole warp; spins with exponential backoff,
** the 2025 report's remedy for contention on hot chunks). */
__device__ void lockChunk(const KP &P, uint32_t c){
  unsigned int *pm = &P.pool[c].meta;
  unsigned int ns = 32;
  while( true ){
    int ok = 0;
    if( gfslLane()==0 ){
      unsigned int m = *(volatile unsigned int*)pm;
      if( !(m & M_LOCK) ) ok = (atomicCAS(pm, m, m|M_LOCK)==m);
    }
    ok = __shfl_sync(GFSL_FULL_MASK, ok, 0);
    if( ok ) break;
    __nanosleep(ns);
    if( ns<2048 ) ns *= 2;
  }
  __syncwarp();
  __threadfence();
}

/* Publish what the warp wrote under the lock of c, then release it with
** meta as the new meta word (its LOCK bit is cleared). */
__device__ void unlockChunk(const KP &P, uint32_t c, uint32_t meta){
  __threadfence();
  __syncwarp();
  if( gfslLane()==0 ) atomicExch(&P.pool[c].meta, meta & ~M_LOCK);
  __syncwarp();
}

/* Take a chunk from the free list (one lane); NIL if that would go below
** P.allocFloor.  A failed attempt gives its decrement back: once the counter
** is at the floor it stays there, so a position is never handed out twice. */
__device__ uint32_t allocChunk(const KP &P){
  int i = atomicSub(&P.ds->freeTop, 1) - 1;
  if( i<P.allocFloor || i<0 ){
    atomicAdd(&P.ds->freeTop, 1);
    return NIL;
  }
  return P.freeList[i];
}

/* Lock-free descent from the top level to level `target` for key k.
** Levels above `target` must not change while it runs.  Returns the chunk of
** level `target` a pointer led to -- at or left of k's enclosing chunk --
** or NIL if no path was found.  *pSeen is raised to the highest level above
** `target` whose chunk holds k as a key. */
__device__ uint32_t descend(const KP &P, i64 k, int target, int *pSeen){
  const int lane = gfslLane();
  const DevState *ds = P.ds;
  int lv = P.nLevels - 1;
  uint32_t cur = ds->head[lv];
  uint32_t carry = NIL;      /* down pointer of the last key <= k seen on lv */
  int restarts = 0;
  long steps = 0;
  while( lv>target ){
    if( cur>=P.cap || ++steps>STEP_LIMIT ) return NIL;
    const Chunk *c = P.pool + cur;
    u64 w = ldS(c, lane);
    uint32_t dn = ldSDown(c, lane);
    Hdr h = hdrOf(w);
    if( h.meta & M_ZOMBIE ){ cur = h.next; continue; }
    unsigned le = __ballot_sync(GFSL_FULL_MASK, lane<h.cnt && (i64)w<=k);
    if( !(h.meta & M_LAST) && k>h.mx ){          /* lateral step */
      if( le ) carry = __shfl_sync(GFSL_FULL_MASK, dn, 31-__clz(le));
      else if( h.meta & M_HEAD ) carry = ds->head[lv-1];
      cur = h.next;
      continue;
    }
    uint32_t d;
    if( le ){                                    /* down via largest key <= k */
      int j = 31-__clz(le);
      d = __shfl_sync(GFSL_FULL_MASK, dn, j);
      if( (i64)__shfl_sync(GFSL_FULL_MASK, w, j)==k && lv>*pSeen ) *pSeen = lv;
    }else if( carry!=NIL ){                      /* backtrack */
      d = carry;
    }else if( h.meta & M_HEAD ){                 /* the -inf entry */
      d = ds->head[lv-1];
    }else{
      d = NIL;
    }
    if( d==NIL ){                                /* restart (paper IV-B1c) */
      if( ++restarts>64 ) return NIL;
      lv = P.nLevels - 1; cur = ds->head[lv]; carry = NIL;
      continue;
    }
    lv--; cur = d; carry = NIL;
  }
  return cur;
}

/* Lateral walk on a level nobody modifies, from chunk cur to the chunk
** enclosing k.  Returns the slot of k there (-1 if absent; -2 on a broken
** walk) and the chunk in *pChunk; with pVal (level 0 only) also k's value,
** loaded in the same round as the keys (one memory round trip, not two). */
__device__ int findStatic(const KP &P, uint32_t cur, i64 k, uint32_t *pChunk, u64 *pVal = nullptr){
  const int lane = gfslLane();
  for( long steps=0; ; steps++ ){
    if( cur>=P.cap || steps>STEP_LIMIT ){ *pChunk = NIL; return -2; }
    const Chunk *c = P.pool + cur;
    u64 w = ldS(c, lane);
    u64 v = (pVal && lane<DSIZE) ? __ldg(reinterpret_cast<const u64*>(c->val) + lane) : 0;
    Hdr h = hdrOf(w);
    if( (h.meta & M_ZOMBIE) || (!(h.meta & M_LAST) && k>h.mx) ){
      cur = h.next;
      continue;
    }
    unsigned eq = __ballot_sync(GFSL_FULL_MASK, lane<h.cnt && (i64)w==k);
    *pChunk = cur;
    int slot = eq ? __ffs(eq)-1 : -1;
    if( pVal ) *pVal = __shfl_sync(GFSL_FULL_MASK, v, slot<0 ? 0 : slot);
    return slot;
  }
}

/* Walk right on level `level` from chunk cur, lock by lock, to the chunk
** enclosing k, and return it LOCKED with its words in w (keys/header) and
** vv (values or down pointers) and its header in *pH.  NIL on a broken walk. */
__device__ uint32_t lockWalk(const KP &P, i64 k, uint32_t cur, int level,
                             u64 &w, u64 &vv, Hdr *pH){
  const int lane = gfslLane();
  for( long steps=0; ; steps++ ){
    if( cur>=P.cap || steps>STEP_LIMIT ) return NIL;
    /* A zombie's next pointer is final once its ZOMBIE bit is visible (set
    ** by the unlocking store, after the fence): pass it without locking. */
    unsigned int m0 = *(volatile unsigned int*)&P.pool[cur].meta;
    if( m0 & M_ZOMBIE ){
      __threadfence();
      cur = __ldcg(&P.pool[cur].next);
      continue;
    }
    lockChunk(P, cur);
    const Chunk *c = P.pool + cur;
    w = ldL(c, lane);
    Hdr h = hdrOf(w);
    if( (h.meta & M_ZOMBIE) || (!(h.meta & M_LAST) && k>h.mx) ){
      unlockChunk(P, cur, h.meta);
      cur = h.next;
      continue;
    }
    vv = ldLVal(c, lane, level);
    *pH = h;
    return cur;
  }
}

/* True if k is one of the n sorted keys a[]. */
__device__ bool inSorted(const i64 *a, uint32_t n, i64 k){
  uint32_t lo = 0, hi = n;
  while( lo<hi ){
    uint32_t mid = lo + (hi-lo)/2;
    i64 x = a[mid];
    if( x==k ) return true;
    if( x<k ) lo = mid+1; else hi = mid;
  }
  return false;
}

}  // namespace
