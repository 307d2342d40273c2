/*
** kernels/gfsl/kernels.cuh -- the kernels: batch phases (resolve, deletes,
** inserts, repairs), bulk build, directory, scans, lookups and the checker.
**
** Part of the GFSL store's one translation unit: included by
** kernels/gfsl.cu only (the design is described at its top).
*/
#pragma once

#include <cuda_runtime.h>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include "gpuds_backend.h"
#include "common/launch.cuh"
#include "gfsl/layout.cuh"
#include "gfsl/device_ops.cuh"

namespace {

/******************************** kernels **********************************/

/* Reset the per-batch counters.
** @param ds  device state whose batch counters (bc) are reset */
__global__ void kInitBatch(DevState *ds){
  if( threadIdx.x==0 && blockIdx.x==0 ){
    memset(&ds->bc, 0, sizeof(ds->bc));
    ds->bc.kMin = LLONG_MAX;
    ds->bc.kMax = LLONG_MIN;
    ds->bc.delRaiseMaxLvl = -1;
  }
}

/* Smallest and largest key and largest op code of a batch.
** @param n    operations in the batch
** @param op   their codes; NULL: not looked at
** @param key  their keys
** @param ds   device state: bc.kMin, bc.kMax and bc.opMax, raised atomically */
__global__ void kStats(size_t n, const uint8_t *op, const i64 *key, DevState *ds){
  i64 mn = LLONG_MAX, mx = LLONG_MIN;
  unsigned int om = 0;
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    i64 k = key[i];
    mn = k<mn ? k : mn;
    mx = k>mx ? k : mx;
    if( op ){ unsigned int o = op[i]; om = o>om ? o : om; }
  }
  for( int d=16; d>0; d>>=1 ){
    i64 a = __shfl_down_sync(GFSL_FULL_MASK, mn, d);
    i64 b = __shfl_down_sync(GFSL_FULL_MASK, mx, d);
    unsigned int c = __shfl_down_sync(GFSL_FULL_MASK, om, d);
    mn = a<mn ? a : mn; mx = b>mx ? b : mx; om = c>om ? c : om;
  }
  if( gfslLane()==0 ){
    atomicMin(&ds->bc.kMin, mn);
    atomicMax(&ds->bc.kMax, mx);
    atomicMax(&ds->bc.opMax, om);
  }
}

/* Sort input: keys relative to kBase (order-preserving as unsigned) and the
** identity permutation.
** @param n      keys
** @param key    the keys
** @param kBase  the smallest key (subtracted)
** @param uk     out: key[i] - kBase as unsigned
** @param iota   out: iota[i] = i */
__global__ void kPrepSort(size_t n, const i64 *key, i64 kBase, u64 *uk, uint32_t *iota){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    uk[i] = (u64)key[i] - (u64)kBase;
    iota[i] = (uint32_t)i;
  }
}

/* Point lookups, one warp per key (lock-free; nothing changes meanwhile),
** unsorted, opt-in variant (gfsl::setLookupVariant(p,1)):
** a warp takes 32 consecutive keys at a time, loads them with one coalesced
** load (so no lookup starts with a dependent key load), searches them one
** after the other and stores the 32 results coalesced.
** @param P      the structure: pool, device state, free list (KP)
** @param n      keys to look up
** @param key    the keys
** @param found  out: 1 where the key is present, else 0; may be NULL
** @param val    out: its word, 0 where absent; may be NULL */
// Blocks of 256 threads kLookup asks to keep resident on one SM: 8 fill the
// 2048 threads an SM of sm_80, sm_90 and sm_100 holds; the other
// generations hold 1024 (sm_75) or 1536 threads, where 4 is what fits.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__!=800 && __CUDA_ARCH__!=900 && __CUDA_ARCH__!=1000
# define KLOOKUP_MIN_BLOCKS 4
#else
# define KLOOKUP_MIN_BLOCKS 8
#endif

__global__ void __launch_bounds__(gpuds_launch::kBlock, KLOOKUP_MIN_BLOCKS) kLookup(KP P, size_t n, const i64 *key,
                                               uint8_t *found, u64 *val){
  const int lane = gfslLane();
  for( size_t base=gfslWarpId()*32; base<n; base+=gfslWarpCount()*32 ){
    const size_t mine = base + lane;
    const i64 myKey = mine<n ? key[mine] : 0;
    const int cnt = (int)(n-base<32 ? n-base : 32);
    uint8_t myF = 0;
    u64 myV = 0;
    for( int j=0; j<cnt; j++ ){
      i64 k = (i64)__shfl_sync(GFSL_FULL_MASK, (u64)myKey, j);
      int seen = -1;
      uint32_t ch = NIL;
      uint32_t s = descend(P, k, 0, &seen);
      u64 v = 0;
      int slot = s==NIL ? -2 : findStatic(P, s, k, &ch, &v);
      if( slot==-2 && lane==0 ) setErr(P.ds, s==NIL ? E_RESTART : E_LOOP, 0, s, k);
      if( lane==j ){ myF = slot>=0; myV = slot>=0 ? v : 0; }
    }
    if( mine<n ){
      if( found ) found[mine] = myF;
      if( val ) val[mine] = myV;
    }
  }
}

/* Point lookups (the default): one key per warp iteration, the key loaded by
** every lane (a broadcast), the result stored by lane 0.
** @param P      the structure: pool, device state, free list (KP)
** @param n      keys to look up
** @param key    the keys
** @param found  out: 1 where the key is present, else 0; may be NULL
** @param val    out: its word, 0 where absent; may be NULL */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kLookup1(KP P, size_t n, const i64 *key,
                                                uint8_t *found, u64 *val){
  const int lane = gfslLane();
  for( size_t i=gfslWarpId(); i<n; i+=gfslWarpCount() ){
    i64 k = key[i];
    int seen = -1;
    uint32_t ch = NIL;
    uint32_t s = descend(P, k, 0, &seen);
    u64 v = 0;
    int slot = s==NIL ? -2 : findStatic(P, s, k, &ch, &v);
    if( slot<0 ) v = 0;
    if( lane==0 ){
      if( slot==-2 ) setErr(P.ds, s==NIL ? E_RESTART : E_LOOP, 0, s, k);
      if( found ) found[i] = slot>=0;
      if( val ) val[i] = v;
    }
  }
}

/* Sort input of a lookup batch: keys relative to kBase in K (u32 when the
** batch's key span fits, else u64) and the identity permutation.
** @param n      keys
** @param key    the keys
** @param kBase  the smallest key (subtracted)
** @param uk     out: key[i] - kBase in K
** @param iota   out: iota[i] = i */
template<typename K>
__global__ void kPrepLookupSort(size_t n, const i64 *key, i64 kBase, K *uk, uint32_t *iota){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    uk[i] = (K)((u64)key[i] - (u64)kBase);
    iota[i] = (uint32_t)i;
  }
}

/* Move the finger -- a level-0 chunk `cur` held in registers (this lane's
** key/header word w and value word v, the header h) -- to the chunk
** enclosing k.  Precondition: k >= a key the finger enclosed (or cur is NIL),
** so the finger is at or left of k's enclosing chunk (the argument of
** findStatic's lateral walk): one step right is tried, then a descent from
** the top and a walk right.  Nothing may change meanwhile.  Returns false
** (finger cleared, error recorded) on a broken walk. */
__device__ __forceinline__ bool moveFinger(const KP &P, i64 k, int lane, uint32_t &cur,
                                           u64 &w, u64 &v, Hdr &h){
  long budget = 1;                               /* lateral steps before a descent */
  bool descended = false;
  while( true ){
    if( cur!=NIL && !(h.meta & M_ZOMBIE) && ((h.meta & M_LAST) || k<=h.mx) ) return true;
    uint32_t nx;
    int code = E_LOOP;
    if( cur!=NIL && budget>0 ){ nx = h.next; budget--; }
    else if( !descended ){
      int seen = -1;
      nx = descend(P, k, 0, &seen);
      descended = true; budget = STEP_LIMIT; code = E_RESTART;
    }else nx = NIL;
    if( nx>=P.cap ){
      if( lane==0 ) setErr(P.ds, code, 0, cur, k);
      cur = NIL;
      return false;
    }
    cur = nx;
    const Chunk *c = P.pool + cur;
    w = ldS(c, lane);
    v = lane<DSIZE ? __ldg(reinterpret_cast<const u64*>(c->val) + lane) : 0;
    h = hdrOf(w);
  }
}

/* Point lookups over a batch sorted by key (the sorted lookup path; nothing
** changes meanwhile): sk[i]+kBase is the i-th smallest key of the batch and
** perm[i] its index in the caller's arrays.  Each warp takes segments of
** segLen consecutive sorted keys and walks them like a merge join with level
** 0: the level-0 chunk that enclosed the previous key (the finger) stays in
** the warp's registers, keys and values, so a key in the same chunk costs no
** memory access; a key past it moves one chunk right, and only a key further
** away descends from the top (whose chunks the neighbouring warps, searching
** neighbouring keys, keep in L1/L2).  The keys of a segment are loaded 32 at
** a time, one per lane, and searched one after the other, each by a ballot.
** (Answering all keys a chunk encloses at once, by binary searches over
** shuffles, gains nothing: the sort and the scattered result stores
** dominate.)  found/val may be NULL.
** @param P       the structure: pool, device state, free list (KP)
** @param n       keys
** @param segLen  sorted keys a warp takes at a time
** @param sk      the keys sorted, less kBase
** @param kBase   added back to sk
** @param perm    sorted position -> index in found and val
** @param found   out: 1 where the key is present, else 0; may be NULL
** @param val     out: its word, 0 where absent; may be NULL */
template<typename K>
__global__ void __launch_bounds__(gpuds_launch::kBlock) kLookupSorted(KP P, uint32_t n, uint32_t segLen, const K *sk,
                                                     i64 kBase, const uint32_t *perm, uint8_t *found,
                                                     u64 *val){
  const int lane = gfslLane();
  const uint32_t nSeg = (n + segLen - 1)/segLen;
  for( size_t seg=gfslWarpId(); seg<nSeg; seg+=gfslWarpCount() ){
    const uint32_t beg = (uint32_t)seg*segLen;
    const uint32_t end = n-beg<segLen ? n : beg+segLen;
    uint32_t cur = NIL;                          /* the finger */
    u64 w = 0, v = 0;
    Hdr h; h.meta = 0; h.next = NIL; h.mx = 0; h.cnt = 0;
    for( uint32_t base=beg; base<end; base+=32 ){
      const uint32_t mine = base + lane;
      const bool in = mine<end;
      const i64 myKey = in ? (i64)((u64)sk[mine] + (u64)kBase) : 0;
      const uint32_t myPerm = in ? perm[mine] : 0;
      const int cnt = (int)(end-base<32 ? end-base : 32);
      uint8_t myF = 0;
      u64 myV = 0;
      for( int j=0; j<cnt; j++ ){
        const i64 k = (i64)__shfl_sync(GFSL_FULL_MASK, (u64)myKey, j);
        if( !moveFinger(P, k, lane, cur, w, v, h) ) continue;   /* the call fails */
        const unsigned eq = __ballot_sync(GFSL_FULL_MASK, lane<h.cnt && (i64)w==k);
        const u64 fv = __shfl_sync(GFSL_FULL_MASK, v, eq ? __ffs(eq)-1 : 0);
        if( lane==j ){ myF = eq ? 1 : 0; myV = eq ? fv : 0; }
      }
      if( in ){
        if( found ) found[myPerm] = myF;
        if( val ) val[myPerm] = myV;
      }
    }
  }
}

/* RESOLVE: the search phase of a batch, one warp per operation of the
** sorted batch, whose keys are distinct (the backend contract).  Finds the
** key's state before the batch, writes the operation's (found, old) at its
** original position and records its net effect: a value update in place,
** the insert of an absent key, the delete of a present one, or nothing (a
** lookup, the delete of an absent key).  Every batch needs this phase; the
** replay of runs of equal keys it once did (for batches that could repeat a
** key) is gone: a key that appears twice is counted in bc.nDup instead, and
** the host refuses the batch before anything changes.
** @param P  the structure: pool, device state, free list (KP)
** @param B  the batch sorted by key and its per-operation arrays (BP): found,
**           old, the net effect arrays and the update list are written */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kResolve(KP P, BP B){
  const int lane = gfslLane();
  for( size_t i=gfslWarpId(); i<B.n; i+=gfslWarpCount() ){
    const u64 uk = B.sk[i];
    const i64 k = (i64)(uk + (u64)B.kBase);
    if( i>0 && B.sk[i-1]==uk ){
      if( lane==0 ){
        B.flIns[i] = 0; B.flDel[i] = 0;
        atomicAdd(&P.ds->bc.nDup, 1u);
        P.ds->bc.dupKey = k;
      }
      continue;
    }
    int seen = -1;
    uint32_t ch = NIL;
    uint32_t s = descend(P, k, 0, &seen);
    u64 fv = 0;
    int slot = s==NIL ? -2 : findStatic(P, s, k, &ch, &fv);
    if( slot==-2 ){
      if( lane==0 ) setErr(P.ds, s==NIL ? E_RESTART : E_LOOP, 0, s, k);
      slot = -1;
    }
    if( lane==0 ){
      const bool f0 = slot>=0;                   /* before the batch */
      const u64 v0 = f0 ? fv : 0;
      const uint32_t o = B.perm[i];
      const int op = (int)B.op[o];
      if( B.found ) B.found[o] = f0 ? 1 : 0;
      if( B.old ) B.old[o] = v0;
      bool f = f0;                               /* after the batch */
      u64 v = v0;
      if( op==GPUDS_OP_UPSERT ){ f = true; v = B.val ? B.val[o] : 0; }
      else if( op==GPUDS_OP_DELETE ){ f = false; v = 0; }
      const int h = seen>0 ? seen : 0;
      uint8_t ins = 0, del = 0;
      if( f0 && f && v!=v0 ){
        unsigned int u = atomicAdd(&P.ds->bc.nUpd, 1u);
        B.updLoc[u] = ((u64)ch<<5) | (u64)slot;
        B.updVal[u] = v;
      }
      if( !f0 && f ) ins = 1;
      if( f0 && !f ){
        del = 1;
        for( int l=0; l<=h; l++ ) atomicAdd(&P.ds->bc.delAtLevel[l], 1u);
      }
      B.flIns[i] = ins;
      B.flDel[i] = del;
      B.netVal[i] = del ? (u64)ch : v;      /* a delete: where the key is */
      B.netH[i] = (uint8_t)h;
    }
  }
}

/* delKeys[t] = key of delete t (sorted, for the raise filter).
** @param B  the batch sorted by key and its per-operation arrays (BP): delKeys
**           written from delPos */
__global__ void kGatherDel(BP B){
  for( size_t t=blockIdx.x*(size_t)blockDim.x+threadIdx.x; t<B.nDel; t+=gridDim.x*(size_t)blockDim.x ){
    B.delKeys[t] = sortedKey(B, B.delPos[t]);
  }
}

/* Sorted keys/values of the inserts (for a rebuild).
** @param B     the batch sorted by key and its per-operation arrays (BP)
**              (insPos, netVal)
** @param insK  out: the inserted keys, ascending
** @param insV  out: their words */
__global__ void kGatherIns(BP B, i64 *insK, u64 *insV){
  for( size_t t=blockIdx.x*(size_t)blockDim.x+threadIdx.x; t<B.nIns; t+=gridDim.x*(size_t)blockDim.x ){
    uint32_t pos = B.insPos[t];
    insK[t] = sortedKey(B, pos);
    insV[t] = B.netVal[pos];
  }
}

/* In-place value updates of keys that stay present.
** @param P    the structure: pool, device state, free list (KP)
** @param n    updates
** @param loc  each one's place: chunk << 5 | slot
** @param val  the new words */
__global__ void kUpdate(KP P, uint32_t n, const u64 *loc, const u64 *val){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    u64 l = loc[i];
    P.pool[l>>5].val[l&31] = val[i];
  }
}

/* Element x of the concatenation [C's first cnt2 entries, N's entries]
** (all lanes call it; x may differ per lane). */
__device__ __forceinline__ void elemCat(int x, int cnt2, u64 w, u64 vv, u64 nw, u64 nv,
                                        u64 &ek, u64 &ev){
  int ci = x<31 ? (x<0 ? 0 : x) : 31;
  int ni = x-cnt2; ni = ni<0 ? 0 : (ni>31 ? 31 : ni);
  u64 ck = __shfl_sync(GFSL_FULL_MASK, w, ci);
  u64 cv = __shfl_sync(GFSL_FULL_MASK, vv, ci);
  u64 nk = __shfl_sync(GFSL_FULL_MASK, nw, ni);
  u64 nvv = __shfl_sync(GFSL_FULL_MASK, nv, ni);
  if( x<cnt2 ){ ek = ck; ev = cv; }else{ ek = nk; ev = nvv; }
}

/* Merge locked chunk C (cnt2 entries left, in w/vv) into its successor, as
** in the paper: lock the next non-zombie chunk N (unlinking zombies met on
** the way); if everything fits, N takes C's entries in front of its own;
** otherwise N is split first (C's entries + N's lower half stay in N, the
** upper half goes to a new chunk S, whose smallest key not deleted by this
** batch is raised).  C becomes a zombie.  Releases both locks.
** Delete phases may only take chunks beyond the inserts' reservation; if
** none is left the merge is skipped and C stays under-full (never empty:
** an empty C always fits into N). */
__device__ void mergeNext(const KP &P, const BP &B, int level, uint32_t C, Hdr h,
                          int cnt2, u64 w, u64 vv){
  const int lane = gfslLane();
  Chunk *pc = &P.pool[C];
  uint32_t N = h.next;
  u64 nw = 0, nv = 0;
  Hdr nh;
  for( long steps=0; ; steps++ ){
    if( N>=P.cap || steps>STEP_LIMIT ){
      if( lane==0 ) setErr(P.ds, E_LOOP, level, C, 0);
      if( lane<cnt2 ) stEntry(pc, lane, w, vv, level);
      unlockChunk(P, C, (h.meta & ~M_CNT) | (uint32_t)cnt2);
      return;
    }
    lockChunk(P, N);
    nw = ldL(&P.pool[N], lane);
    nh = hdrOf(nw);
    if( !(nh.meta & M_ZOMBIE) ) break;
    uint32_t nn = nh.next;
    if( lane==0 ) __stcg(&pc->next, nn);         /* unlink the zombie */
    unlockChunk(P, N, nh.meta);
    N = nn;
  }
  nv = ldLVal(&P.pool[N], lane, level);
  Chunk *pn = &P.pool[N];
  const int nN = nh.cnt, t = cnt2 + nN;
  u64 ek, ev;
  if( t<=DSIZE ){
    elemCat(lane, cnt2, w, vv, nw, nv, ek, ev);
    if( lane<t ) stEntry(pn, lane, ek, ev, level);
    unlockChunk(P, N, (nh.meta & ~M_CNT) | (uint32_t)t);
    unlockChunk(P, C, h.meta | M_ZOMBIE);
    if( lane==0 ){
      atomicSub(&P.ds->levelChunks[level], 1);
      atomicAdd(&P.ds->bc.nMerge, 1u);
    }
    return;
  }
  uint32_t S = NIL;
  if( lane==0 ) S = allocChunk(P);
  S = __shfl_sync(GFSL_FULL_MASK, S, 0);
  if( S==NIL ){                                  /* no spare chunk: no merge */
    if( lane<cnt2 ) stEntry(pc, lane, w, vv, level);
    unlockChunk(P, N, nh.meta);
    unlockChunk(P, C, (h.meta & ~M_CNT) | (uint32_t)cnt2);
    return;
  }
  Chunk *ps = &P.pool[S];
  const int hN = t/2, sN = t-hN;
  elemCat(hN+lane, cnt2, w, vv, nw, nv, ek, ev);           /* S's entries */
  if( lane<sN ) stEntry(ps, lane, ek, ev, level);
  bool gone = lane<sN && inSorted(B.delKeys, B.nDel, (i64)ek);
  unsigned okm = __ballot_sync(GFSL_FULL_MASK, lane<sN && !gone);
  u64 rk = okm ? __shfl_sync(GFSL_FULL_MASK, ek, __ffs(okm)-1) : 0;
  if( lane==0 ){
    ps->max = nh.mx;
    ps->next = nh.next;
    ps->meta = M_LIVE | ((uint32_t)level<<M_LVL_SHIFT) | (nh.meta & M_LAST) | (uint32_t)sN;
  }
  elemCat(lane, cnt2, w, vv, nw, nv, ek, ev);              /* N's entries */
  u64 nMax = __shfl_sync(GFSL_FULL_MASK, ek, hN-1);
  if( lane<hN ) stEntry(pn, lane, ek, ev, level);
  if( lane==0 ){
    __stcg(&pn->max, (i64)nMax);
    __stcg(&pn->next, S);
  }
  unlockChunk(P, N, (nh.meta & ~(M_CNT|M_LAST)) | (uint32_t)hN);
  unlockChunk(P, C, h.meta | M_ZOMBIE);
  if( lane==0 ){
    atomicAdd(&P.ds->bc.nMerge, 1u);
    atomicAdd(&P.ds->bc.nSplit, 1u);
    if( okm && level+1<MAXLVL ){
      unsigned int r = atomicAdd(&P.ds->bc.nDelRaise, 1u);
      if( r<B.drCap ){
        Item it; it.key = (i64)rk; it.down = S; it.level = level+1;
        B.dr[r] = it;
        atomicMax(&P.ds->bc.delRaiseMaxLvl, level+1);
      }else{
        setErr(P.ds, E_LIST, level, S, (i64)rk);
      }
    }
  }
}

/* DELETE phase for one level: one warp per deleted key present there.
** The phases run from level 0 up, so the levels above the one being changed
** are still intact for the descents (a pointer leads to a chunk at or left
** of its key's enclosing chunk whether or not that key still exists).
** @param P      the structure: pool, device state, free list (KP)
** @param B      the batch sorted by key and its per-operation arrays (BP)
**               (delPos, delKeys, netH, netVal)
** @param level  the level this phase changes */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kDelete(KP P, BP B, int level){
  const int lane = gfslLane();
  for( size_t t=gfslWarpId(); t<B.nDel; t+=gfslWarpCount() ){
    uint32_t pos = B.delPos[t];
    if( (int)B.netH[pos]<level ) continue;
    i64 k = B.delKeys[t];
    int seen = -1;
    /* level 0: start where RESOLVE found the key (at or left of it now) */
    uint32_t s = level==0 ? (uint32_t)B.netVal[pos] : descend(P, k, level, &seen);
    if( s==NIL ){ if( lane==0 ) setErr(P.ds, E_RESTART, level, s, k); continue; }
    u64 w = 0, vv = 0;
    Hdr h;
    uint32_t C = lockWalk(P, k, s, level, w, vv, &h);
    if( C==NIL ){ if( lane==0 ) setErr(P.ds, E_LOOP, level, s, k); continue; }
    unsigned eq = __ballot_sync(GFSL_FULL_MASK, lane<h.cnt && (i64)w==k);
    if( !eq ){
      if( lane==0 ) setErr(P.ds, E_NOTFOUND, level, C, k);
      unlockChunk(P, C, h.meta);
      continue;
    }
    const int slot = __ffs(eq)-1;
    const int cnt2 = h.cnt-1;
    u64 wn = __shfl_down_sync(GFSL_FULL_MASK, w, 1);
    u64 vn = __shfl_down_sync(GFSL_FULL_MASK, vv, 1);
    if( lane>=slot && lane<cnt2 ){ w = wn; vv = vn; }
    if( lane==0 ) atomicAdd(&P.ds->levelKeys[level], (u64)(-1LL));
    if( cnt2>=MERGE_MIN || (h.meta & (M_LAST|M_HEAD)) ){
      if( lane>=slot && lane<cnt2 ) stEntry(&P.pool[C], lane, w, vv, level);
      unlockChunk(P, C, (h.meta & ~M_CNT) | (uint32_t)cnt2);
      continue;
    }
    mergeNext(P, B, level, C, h, cnt2, w, vv);
  }
}

/* Insert k -> v into level `level`, walking right (lock by lock) from
** chunk `cur`, which must be at or left of k's enclosing chunk.  A full
** chunk is split as in the paper: it keeps 16 entries, a new chunk takes 15,
** and the new chunk's smallest key is raised (appended to `out` for the
** next level).  A key already present (only possible above level 0, when a
** key was raised twice) gets the new down pointer.  Returns the chunk that
** holds k afterwards (a valid start for a larger key), NIL on error. */
__device__ uint32_t insertOne(const KP &P, int level, i64 k, u64 v, uint32_t cur,
                              Item *out, unsigned int *outCount, uint32_t outCap){
  const int lane = gfslLane();
  u64 w = 0, vv = 0;
  Hdr h;
  uint32_t D = lockWalk(P, k, cur, level, w, vv, &h);
  if( D==NIL ){ if( lane==0 ) setErr(P.ds, E_LOOP, level, cur, k); return NIL; }
  Chunk *pd = &P.pool[D];
  unsigned eq = __ballot_sync(GFSL_FULL_MASK, lane<h.cnt && (i64)w==k);
  if( eq ){
    int j = __ffs(eq)-1;
    if( level==0 ){ if( lane==0 ) setErr(P.ds, E_DUPKEY, level, D, k); }
    else if( lane==j ) __stcg(reinterpret_cast<unsigned int*>(pd->val) + j, (unsigned int)v);
    unlockChunk(P, D, h.meta);
    return D;
  }
  const int p = __popc(__ballot_sync(GFSL_FULL_MASK, lane<h.cnt && (i64)w<k));
  if( h.cnt<DSIZE ){
    u64 uk = __shfl_up_sync(GFSL_FULL_MASK, w, 1);
    u64 uv = __shfl_up_sync(GFSL_FULL_MASK, vv, 1);
    u64 nk = w, nv = vv;
    if( lane==p ){ nk = (u64)k; nv = v; }
    else if( lane>p ){ nk = uk; nv = uv; }
    if( lane>=p && lane<=h.cnt ) stEntry(pd, lane, nk, nv, level);
    unlockChunk(P, D, (h.meta & ~M_CNT) | (uint32_t)(h.cnt+1));
    if( lane==0 ) atomicAdd(&P.ds->levelKeys[level], 1ull);
    return D;
  }
  /* Split: 31 entries, element x = x<p ? D[x] : x==p ? new : D[x-1]. */
  uint32_t S = NIL;
  if( lane==0 ) S = allocChunk(P);
  S = __shfl_sync(GFSL_FULL_MASK, S, 0);
  if( S==NIL ){
    if( lane==0 ) setErr(P.ds, E_RESERVE, level, D, k);
    unlockChunk(P, D, h.meta);
    return NIL;
  }
  Chunk *ps = &P.pool[S];
  u64 ek, ev;
  {
    int x = SPLIT_LO + lane;
    int src = x<p ? x : x-1; src = src<0 ? 0 : (src>31 ? 31 : src);
    ek = __shfl_sync(GFSL_FULL_MASK, w, src);
    ev = __shfl_sync(GFSL_FULL_MASK, vv, src);
    if( x==p ){ ek = (u64)k; ev = v; }
  }
  const int sN = DSIZE+1-SPLIT_LO;
  if( lane<sN ) stEntry(ps, lane, ek, ev, level);
  u64 sMin = __shfl_sync(GFSL_FULL_MASK, ek, 0);
  if( lane==0 ){
    ps->max = h.mx;
    ps->next = h.next;
    ps->meta = M_LIVE | ((uint32_t)level<<M_LVL_SHIFT) | (h.meta & M_LAST) | (uint32_t)sN;
  }
  {
    int x = lane;
    int src = x<p ? x : x-1; src = src<0 ? 0 : (src>31 ? 31 : src);
    ek = __shfl_sync(GFSL_FULL_MASK, w, src);
    ev = __shfl_sync(GFSL_FULL_MASK, vv, src);
    if( x==p ){ ek = (u64)k; ev = v; }
  }
  u64 dMax = __shfl_sync(GFSL_FULL_MASK, ek, SPLIT_LO-1);
  if( lane<SPLIT_LO && lane>=p ) stEntry(pd, lane, ek, ev, level);
  if( lane==0 ){
    __stcg(&pd->max, (i64)dMax);
    __stcg(&pd->next, S);
  }
  unlockChunk(P, D, (h.meta & ~(M_CNT|M_LAST)) | (uint32_t)SPLIT_LO);
  if( lane==0 ){
    atomicAdd(&P.ds->levelKeys[level], 1ull);
    atomicAdd(&P.ds->levelChunks[level], 1);
    atomicAdd(&P.ds->bc.nSplit, 1u);
    if( level+1<MAXLVL ){
      unsigned int r = atomicAdd(outCount, 1u);
      if( r<outCap ){
        Item it; it.key = (i64)sMin; it.down = S; it.level = level+1;
        out[r] = it;
      }else{
        setErr(P.ds, E_LIST, level, S, (i64)sMin);
      }
    }
  }
  return p<SPLIT_LO ? D : S;
}

/* INSERT phase for one level.  The n keys K (sorted, values V: level-0
** values or down pointers) were located beforehand: T[t] is the chunk that
** enclosed K[t] when nothing was changing, and the keys with the same T form
** a group (heads gH[0..nG)).  One warp per group inserts its keys in order,
** each walk starting where the previous key went, so a group never walks
** over the chunks its own splits made and different groups meet only where
** merges joined their chunks (the chunk locks order them there).
** @param P         the structure: pool, device state, free list (KP)
** @param level     the level this phase changes
** @param nG        groups
** @param gH        the first position of each group in K
** @param n         keys in K
** @param K         the keys to insert, ascending
** @param V         their words (level 0) or down pointers
** @param T         the chunk kLocate found for each key
** @param out       out: the keys raised to the next level by splits
** @param outCount  entries of out, raised atomically
** @param outCap    capacity of out */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kInsertGroups(KP P, int level, uint32_t nG, const uint32_t *gH,
                                                     uint32_t n, const i64 *K, const u64 *V,
                                                     const uint32_t *T, Item *out,
                                                     unsigned int *outCount, uint32_t outCap){
  for( size_t g=gfslWarpId(); g<nG; g+=gfslWarpCount() ){
    uint32_t t0 = gH[g], t1 = g+1<nG ? gH[g+1] : n;
    uint32_t cur = T[t0];
    for( uint32_t t=t0; t<t1 && cur!=NIL; t++ ){
      cur = insertOne(P, level, K[t], V[t], cur, out, outCount, outCap);
    }
  }
}

/* Locate: T[t] = the chunk of level `level` enclosing K[t] (nothing may
** change meanwhile).
** @param P      the structure: pool, device state, free list (KP)
** @param level  the level searched
** @param n      keys
** @param K      the keys
** @param T      out: the chunk enclosing each key */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kLocate(KP P, int level, uint32_t n, const i64 *K, uint32_t *T){
  const int lane = gfslLane();
  for( size_t t=gfslWarpId(); t<n; t+=gfslWarpCount() ){
    i64 k = K[t];
    int seen = -1;
    uint32_t ch = NIL;
    uint32_t s = descend(P, k, level, &seen);
    int r = s==NIL ? -2 : findStatic(P, s, k, &ch);
    if( lane==0 ){
      if( r==-2 ){ setErr(P.ds, s==NIL ? E_RESTART : E_LOOP, level, s, k); ch = P.ds->head[level]; }
      T[t] = ch;
    }
  }
}

/* Group heads: flag[t] = 1 where T changes.
** @param n     entries of T
** @param T     chunk per key (kLocate)
** @param flag  out: 1 where a group starts */
__global__ void kGroupFlags(uint32_t n, const uint32_t *T, uint8_t *flag){
  for( size_t t=blockIdx.x*(size_t)blockDim.x+threadIdx.x; t<n; t+=gridDim.x*(size_t)blockDim.x ){
    flag[t] = (t==0 || T[t]!=T[t-1]);
  }
}

/* Largest group.
** @param nG  groups
** @param gH  the first position of each group
** @param n   keys in all
** @param ds  device state: bc.maxGroup raised atomically */
__global__ void kGroupMax(uint32_t nG, const uint32_t *gH, uint32_t n, DevState *ds){
  unsigned int mx = 0;
  for( size_t g=blockIdx.x*(size_t)blockDim.x+threadIdx.x; g<nG; g+=gridDim.x*(size_t)blockDim.x ){
    uint32_t e = g+1<nG ? gH[g+1] : n;
    unsigned int sz = e-gH[g];
    mx = sz>mx ? sz : mx;
  }
  for( int d=16; d>0; d>>=1 ){
    unsigned int o = __shfl_down_sync(GFSL_FULL_MASK, mx, d);
    mx = o>mx ? o : mx;
  }
  if( gfslLane()==0 ) atomicMax(&ds->bc.maxGroup, mx);
}

/* Append the delete-phase raises for `level` to the raise list.
** @param dr     raises made by delete-phase splits
** @param nDR    their number
** @param level  the level whose raises are taken
** @param rl     the raise list appended to
** @param count  its entries, raised atomically
** @param cap    its capacity
** @param ds     device state (an overflow is recorded as E_LIST) */
__global__ void kAppendDR(const Item *dr, uint32_t nDR, int level, Item *rl, unsigned int *count, uint32_t cap,
                          DevState *ds){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<nDR; i+=gridDim.x*(size_t)blockDim.x ){
    Item it = dr[i];
    if( it.level!=level ) continue;
    unsigned int r = atomicAdd(count, 1u);
    if( r<cap ) rl[r] = it; else setErr(ds, E_LIST, level, it.down, it.key);
  }
}

/* Raise items -> key/value arrays (to be sorted).
** @param it  raise items
** @param n   their number
** @param K   out: their keys
** @param V   out: their down pointers */
__global__ void kItemsToArrays(const Item *it, uint32_t n, i64 *K, u64 *V){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    K[i] = it[i].key;
    V[i] = it[i].down;
  }
}

/* Create empty levels up to `level` (a head chunk each).
** @param P      the structure: pool, device state, free list (KP)
** @param level  the highest level that must exist */
__global__ void kEnsureLevel(KP P, int level){
  if( threadIdx.x || blockIdx.x ) return;
  DevState *ds = P.ds;
  for( int l=ds->nLevels; l<=level; l++ ){
    uint32_t c = allocChunk(P);
    if( c==NIL ){ setErr(ds, E_RESERVE, l, NIL, 0); return; }
    Chunk *pc = &P.pool[c];
    pc->max = 0;
    pc->next = NIL;
    pc->meta = M_LIVE | M_HEAD | M_LAST | ((uint32_t)l<<M_LVL_SHIFT);
    ds->head[l] = c;
    ds->levelChunks[l] = 1;
    ds->levelKeys[l] = 0;
    ds->nLevels = l+1;
  }
}

/* Repair 1: next pointers of live chunks skip zombies.
** @param P  the structure: pool, device state, free list (KP) */
__global__ void kFixNext(KP P){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<P.cap; i+=gridDim.x*(size_t)blockDim.x ){
    uint32_t m = P.pool[i].meta;
    if( !(m & M_LIVE) || (m & M_ZOMBIE) ) continue;
    uint32_t n0 = P.pool[i].next, n = n0;
    long steps = 0;
    while( n!=NIL && n<P.cap && (P.pool[n].meta & M_ZOMBIE) && steps++<STEP_LIMIT ) n = P.pool[n].next;
    if( n!=n0 ) P.pool[i].next = n;
  }
}

/* Repair 2: every down pointer leads to the live chunk holding its key.
** @param P  the structure: pool, device state, free list (KP) */
__global__ void kFixDown(KP P){
  for( size_t g=blockIdx.x*(size_t)blockDim.x+threadIdx.x; g<(size_t)P.cap*32; g+=gridDim.x*(size_t)blockDim.x ){
    size_t i = g>>5; int j = (int)(g&31);
    uint32_t m = P.pool[i].meta;
    if( !(m & M_LIVE) || (m & M_ZOMBIE) || metaLevel(m)==0 || j>=(int)(m & M_CNT) ) continue;
    i64 K = P.pool[i].key[j];
    unsigned int *pd = reinterpret_cast<unsigned int*>(P.pool[i].val) + j;
    uint32_t d0 = *pd, d = d0;
    long steps = 0;
    while( d<P.cap && steps++<STEP_LIMIT ){
      uint32_t md = P.pool[d].meta;
      if( (md & M_ZOMBIE) || (!(md & M_LAST) && K>P.pool[d].max) ){ d = P.pool[d].next; continue; }
      break;
    }
    if( d!=d0 && d<P.cap ) *pd = d;
  }
}

/* Repair 3: zombies go back to the free list.
** @param P  the structure: pool, device state, free list (KP) */
__global__ void kReclaim(KP P){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<P.cap; i+=gridDim.x*(size_t)blockDim.x ){
    uint32_t m = P.pool[i].meta;
    if( (m & M_LIVE) && (m & M_ZOMBIE) ){
      int r = atomicAdd(&P.ds->freeTop, 1);
      P.freeList[r] = (uint32_t)i;
      P.pool[i].meta = 0;
      atomicAdd(&P.ds->bc.nReclaim, 1u);
    }
  }
}

/* Drop empty top levels (a lone head chunk with no key).
** @param P  the structure: pool, device state, free list (KP) */
__global__ void kDropLevels(KP P){
  if( threadIdx.x || blockIdx.x ) return;
  DevState *ds = P.ds;
  while( ds->nLevels>1 ){
    int l = ds->nLevels-1;
    if( ds->levelKeys[l]!=0 || ds->levelChunks[l]!=1 ) break;
    uint32_t c = ds->head[l];
    P.pool[c].meta = 0;
    P.freeList[ds->freeTop++] = c;
    ds->head[l] = NIL;
    ds->levelChunks[l] = 0;
    ds->nLevels = l;
  }
}

/* Directory: flag the live, non-zombie chunks of a level.
** @param P      the structure: pool, device state, free list (KP)
** @param level  the level described
** @param flag   out: per chunk of the pool, 1 if selected */
__global__ void kDirFlags(KP P, int level, uint8_t *flag){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<P.cap; i+=gridDim.x*(size_t)blockDim.x ){
    uint32_t m = P.pool[i].meta;
    flag[i] = (m & M_LIVE) && !(m & M_ZOMBIE) && metaLevel(m)==level;
  }
}
/* Directory: the fence of each selected chunk (+inf as LLONG_MAX).
** @param P      the structure: pool, device state, free list (KP)
** @param idx    the selected chunks
** @param n      their number
** @param fence  out: their fences */
__global__ void kDirFence(KP P, const uint32_t *idx, uint32_t n, i64 *fence){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    const Chunk *c = &P.pool[idx[i]];
    fence[i] = (c->meta & M_LAST) ? LLONG_MAX : c->max;
  }
}
/* Directory: the entry count of each chunk in order (cnt[n] = 0).
** @param P    the structure: pool, device state, free list (KP)
** @param idx  the chunks in fence order
** @param n    their number
** @param cnt  out: n+1 entry counts (the last 0), to be prefix-summed */
__global__ void kDirCounts(KP P, const uint32_t *idx, uint32_t n, u64 *cnt){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<=n; i+=gridDim.x*(size_t)blockDim.x ){
    cnt[i] = i<n ? (P.pool[idx[i]].meta & M_CNT) : 0;
  }
}

/* First position in a[0..n) with a[pos] >= x. */
__device__ uint32_t lowerBound(const i64 *a, uint32_t n, i64 x){
  uint32_t lo = 0, hi = n;
  while( lo<hi ){ uint32_t mid = lo+(hi-lo)/2; if( a[mid]<x ) lo = mid+1; else hi = mid; }
  return lo;
}
/* Last position in pre[0..n] with pre[pos] <= r. */
__device__ uint32_t rankPos(const u64 *pre, uint32_t n, u64 r){
  uint32_t lo = 0, hi = n+1;                      /* first with pre > r */
  while( lo<hi ){ uint32_t mid = lo+(hi-lo)/2; if( pre[mid]<=r ) lo = mid+1; else hi = mid; }
  return lo==0 ? 0 : lo-1;
}

/* Plan a scan page (one thread).
** @param P      the structure: pool, device state, free list (KP); the plan
**               goes to P.ds->plan
** @param idx    the directory: level-0 chunks in fence order
** @param fence  their fences
** @param pre    prefix sums of their entry counts (n+1)
** @param n      chunks in the directory
** @param lo     the smallest key of the range
** @param hi     the largest key of the range
** @param desc   nonzero: the page ends at hi
** @param nMax   entries a page holds at most */
__global__ void kScanPlan(KP P, const uint32_t *idx, const i64 *fence, const u64 *pre,
                          uint32_t n, i64 lo, i64 hi, int desc, u64 nMax){
  if( threadIdx.x || blockIdx.x ) return;
  ScanPlan pl;
  u64 total = pre[n];
  uint32_t p = lowerBound(fence, n, lo);
  if( p==n ) pl.start = total;
  else{
    const Chunk *c = &P.pool[idx[p]];
    int cnt = c->meta & M_CNT, m = 0;
    while( m<cnt && c->key[m]<lo ) m++;
    pl.start = pre[p] + m;
  }
  uint32_t r = lowerBound(fence, n, hi);
  if( r==n ) pl.end = total;
  else{
    const Chunk *c = &P.pool[idx[r]];
    int cnt = c->meta & M_CNT, m = 0;
    while( m<cnt && c->key[m]<=hi ) m++;
    pl.end = pre[r] + m;
  }
  if( pl.end<pl.start ) pl.end = pl.start;
  u64 take = pl.end-pl.start;
  if( take>nMax ) take = nMax;
  if( desc ){ pl.b = pl.end; pl.a = pl.end-take; }
  else{ pl.a = pl.start; pl.b = pl.start+take; }
  pl.pa = pl.pb = 0;
  if( take>0 ){
    pl.pa = rankPos(pre, n, pl.a);
    pl.pb = rankPos(pre, n, pl.b-1);
  }
  P.ds->plan = pl;
}

/* Copy ranks [a,b) of the keys into outK/outV (reversed if desc): one warp
** per bottom-level chunk, positions pa.. of the directory.
** @param P     the structure: pool, device state, free list (KP)
** @param idx   the directory: level-0 chunks in fence order
** @param pre   prefix sums of their entry counts
** @param pa    the first directory position of the page
** @param nPos  directory positions the page spans
** @param a     the first rank copied
** @param b     one past the last rank copied
** @param desc  nonzero: written in descending order
** @param outK  out: the keys
** @param outV  out: their words; may be NULL */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kScanCopy(KP P, const uint32_t *idx, const u64 *pre,
                                                 uint32_t pa, uint32_t nPos, u64 a, u64 b, int desc,
                                                 i64 *outK, u64 *outV){
  const int lane = gfslLane();
  for( size_t q=gfslWarpId(); q<nPos; q+=gfslWarpCount() ){
    uint32_t pos = pa + (uint32_t)q;
    const Chunk *c = &P.pool[idx[pos]];
    u64 g = pre[pos] + lane;
    int cnt = c->meta & M_CNT;
    if( lane<cnt && g>=a && g<b ){
      u64 o = desc ? (b-1-g) : (g-a);
      outK[o] = c->key[lane];
      if( outV ) outV[o] = c->val[lane];
    }
  }
}

/* keep[i] = key i is not among the n sorted deleted keys.
** @param key   the keys
** @param n     their number
** @param del   the deleted keys, ascending
** @param nDel  their number
** @param keep  out: 1 where the key is not deleted */
__global__ void kFlagKeep(const i64 *key, size_t n, const i64 *del, uint32_t nDel, uint8_t *keep){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    keep[i] = !inSorted(del, nDel, key[i]);
  }
}

/* Bulk build of one level: chunk j of nc takes entries [j*fill, ...) of
** the n sorted entries K (with V64 on level 0, D32 above).
** @param pool   the new pool
** @param base   the index of the level's first chunk
** @param level  the level built
** @param nc     its chunks
** @param n      its entries
** @param K      their keys, ascending
** @param V64    level 0: their words
** @param D32    upper levels: their down pointers
** @param fill   entries a chunk takes */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kBuild(Chunk *pool, uint32_t base, int level, uint32_t nc,
                                              size_t n, const i64 *K, const u64 *V64,
                                              const uint32_t *D32, int fill){
  const int lane = gfslLane();
  for( size_t j=gfslWarpId(); j<nc; j+=gfslWarpCount() ){
    size_t e0 = j*(size_t)fill;
    int cnt = n>e0 ? (int)std::min<size_t>(fill, n-e0) : 0;
    Chunk *c = pool + base + j;
    if( lane<cnt ){
      c->key[lane] = K[e0+lane];
      if( level==0 ) c->val[lane] = V64[e0+lane];
      else reinterpret_cast<unsigned int*>(c->val)[lane] = D32[e0+lane];
    }
    if( lane==0 ){
      bool last = (j==nc-1);
      c->max = (!last && cnt>0) ? K[e0+cnt-1] : 0;
      c->next = last ? NIL : (uint32_t)(base+j+1);
      c->meta = M_LIVE | ((uint32_t)level<<M_LVL_SHIFT) | (uint32_t)cnt
              | (j==0 ? M_HEAD : 0) | (last ? M_LAST : 0);
    }
  }
}

/* Keys of the next level of a bulk build: the first key of every chunk but
** the first, pointing to that chunk.
** @param K         the keys of the level below
** @param ncPrev    its chunks
** @param basePrev  the index of its first chunk
** @param fillPrev  entries per chunk there
** @param upK       out: the keys of the next level
** @param upD       out: their down pointers */
__global__ void kUpKeys(const i64 *K, uint32_t ncPrev, uint32_t basePrev, int fillPrev, i64 *upK, uint32_t *upD){
  for( size_t e=blockIdx.x*(size_t)blockDim.x+threadIdx.x; e+1<ncPrev; e+=gridDim.x*(size_t)blockDim.x ){
    upK[e] = K[(e+1)*(size_t)fillPrev];
    upD[e] = basePrev + (uint32_t)(e+1);
  }
}

/* Free list entries [from, from+n) = chunk indices hi-1, hi-2, ... so that
** the lowest index is taken first.
** @param freeList  the free list
** @param from      the first entry written
** @param n         entries written
** @param hi        one past the highest chunk index listed */
__global__ void kFillFree(uint32_t *freeList, uint32_t from, uint32_t n, uint32_t hi){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    freeList[from+i] = hi-1-(uint32_t)i;
  }
}

/* Checker: one warp per chunk of a level, in fence order.
** @param P      the structure: pool, device state, free list (KP); the first
**               failure goes to P.ds->chk
** @param level  the level checked
** @param idx    its chunks in fence order
** @param fence  their fences
** @param n      their number */
__global__ void __launch_bounds__(gpuds_launch::kBlock) kCheckLevel(KP P, int level, const uint32_t *idx,
                                                   const i64 *fence, uint32_t n){
  const int lane = gfslLane();
  DevState *ds = P.ds;
  for( size_t i=gfslWarpId(); i<n; i+=gfslWarpCount() ){
    uint32_t c = idx[i];
    const Chunk *pc = &P.pool[c];
    u64 w = ldL(pc, lane);
    Hdr h = hdrOf(w);
    int code = 0;
    if( metaLevel(h.meta)!=level ) code = 1;
    else if( h.cnt>DSIZE ) code = 2;
    else if( h.meta & M_LOCK ) code = 3;
    else if( (i==0)!=(c==ds->head[level]) || (i==0)!=((h.meta & M_HEAD)!=0) ) code = 4;
    else if( (i==n-1)!=((h.meta & M_LAST)!=0) ) code = 5;
    else if( i>0 && i<n-1 && h.cnt==0 ) code = 6;
    else if( i>0 && fence[i-1]>=fence[i] ) code = 7;
    if( !code ){
      uint32_t nx = h.next;
      long steps = 0;
      while( nx!=NIL && nx<P.cap && (P.pool[nx].meta & M_ZOMBIE) && steps++<STEP_LIMIT ) nx = P.pool[nx].next;
      if( i<n-1 ? nx!=idx[i+1] : nx!=NIL ) code = 8;
    }
    i64 k = (i64)w;
    i64 kn = (i64)__shfl_down_sync(GFSL_FULL_MASK, w, 1);
    unsigned bad = __ballot_sync(GFSL_FULL_MASK,
        (lane+1<h.cnt && !(k<kn))                                /* ascending */
     || (lane<h.cnt && !(h.meta & M_LAST) && k>h.mx)             /* <= max */
     || (lane<h.cnt && i>0 && k<=fence[i-1]));                   /* > prev max */
    if( !code && bad ) code = 9;
    i64 badKey = (i64)__shfl_sync(GFSL_FULL_MASK, w, bad ? __ffs(bad)-1 : 0);
    if( lane==0 ){
      atomicAdd(&ds->chk.sum, (u64)h.cnt);
      if( code && atomicCAS(&ds->chk.code, 0, code)==0 ){
        ds->chk.level = level; ds->chk.chunk = c; ds->chk.pos = (int)i;
        ds->chk.key = bad ? badKey : 0;
      }
    }
  }
}

/* Checker: every key of an upper level leads down to a chunk of the level
** below that holds it (walking right from its pointer).
** @param P      the structure: pool, device state, free list (KP); the first
**               failure goes to P.ds->chk
** @param level  the upper level checked
** @param idx    its chunks
** @param n      their number */
__global__ void kCheckIndex(KP P, int level, const uint32_t *idx, uint32_t n){
  DevState *ds = P.ds;
  for( size_t g=blockIdx.x*(size_t)blockDim.x+threadIdx.x; g<(size_t)n*32; g+=gridDim.x*(size_t)blockDim.x ){
    const Chunk *pc = &P.pool[idx[g>>5]];
    int j = (int)(g&31);
    if( j>=(int)(pc->meta & M_CNT) ) continue;
    i64 K = pc->key[j];
    uint32_t d = reinterpret_cast<const unsigned int*>(pc->val)[j];
    int code = 0;
    long steps = 0;
    if( d>=P.cap || !(P.pool[d].meta & M_LIVE) || metaLevel(P.pool[d].meta)!=level-1 ) code = 10;
    while( !code ){
      if( d>=P.cap || steps++>STEP_LIMIT ){ code = 11; break; }
      uint32_t md = P.pool[d].meta;
      if( (md & M_ZOMBIE) || (!(md & M_LAST) && K>P.pool[d].max) ){ d = P.pool[d].next; continue; }
      int cnt = md & M_CNT, m = 0;
      while( m<cnt && P.pool[d].key[m]!=K ) m++;
      if( m==cnt ) code = 12;
      break;
    }
    if( code && atomicCAS(&ds->chk.code, 0, code)==0 ){
      ds->chk.level = level; ds->chk.chunk = idx[g>>5]; ds->chk.pos = j; ds->chk.key = K;
    }
  }
}

/* Checker: chunk states (live, zombie, free) and the free list.
** @param P        the structure: pool, device state, free list (KP); the counts
**                 go to P.ds->chk
** @param freeTop  entries of the free list in use */
__global__ void kCheckStates(KP P, int freeTop){
  DevState *ds = P.ds;
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<P.cap; i+=gridDim.x*(size_t)blockDim.x ){
    uint32_t m = P.pool[i].meta;
    if( m & M_LIVE ){
      if( m & M_ZOMBIE ) atomicAdd(&ds->chk.nZombie, 1u); else atomicAdd(&ds->chk.nLive, 1u);
    }else{
      atomicAdd(&ds->chk.nFree, 1u);
    }
    if( (int)i<freeTop ){
      uint32_t f = P.freeList[i];
      if( f>=P.cap || P.pool[f].meta!=0 ) atomicAdd(&ds->chk.nBadFree, 1u);
    }
  }
}

/* Checker: the lookups of all extracted keys found them with their values.
** @param n      keys
** @param key    the keys extracted
** @param val    their words
** @param found  what the lookups found
** @param got    the words they returned
** @param ds     device state: the first failure goes to ds->chk */
__global__ void kCheckFound(size_t n, const i64 *key, const u64 *val, const uint8_t *found,
                            const u64 *got, DevState *ds){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    if( !found[i] || got[i]!=val[i] ){
      if( atomicCAS(&ds->chk.code, 0, found[i] ? 14 : 13)==0 ){
        ds->chk.level = 0; ds->chk.chunk = NIL; ds->chk.pos = (int)i; ds->chk.key = key[i];
      }
    }
  }
}
}  // namespace
