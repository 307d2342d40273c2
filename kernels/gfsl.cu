/*
** gfsl.cu -- the GPU-Friendly Skiplist (GFSL; Moscovici & Petrank, PACT 2017)
** as the CUDA ordered store: gpudsCudaOrderedOps (zBackend "cuda", kind
** GPUDS_ORDERED; see backend/gpuds_backend.h for the contract).
**
** STRUCTURE.  As in the paper: several levels of singly linked lists of
** fixed-size CHUNKS, each read and written by one warp ("team") in a single
** coalesced instruction; chunks come from one pool and are named by 32-bit
** indices; a head array holds the first chunk of every level; a key reaches
** level i+1 only when a split adds a chunk to level i (the minimum key of the
** new chunk is raised, with a pointer to it); searches never lock; inserts
** and deletes lock the chunks they change; a chunk that falls below DSIZE/3
** keys is merged into its successor (which is split first if it is too full)
** and becomes a ZOMBIE that stays traversable until it is unlinked and
** reclaimed.  Each level's first chunk plays the role of the paper's -inf
** entry: a search that finds no key <= k in it steps down to the first chunk
** of the level below; the last chunk of a level has an implicit +inf bound.
** Neither is a key value, so every int64 key is a user key: a chunk holds its
** entry count explicitly instead of marking empty slots with a reserved key.
**
** CHUNK LAYOUT (512 bytes, 128-byte aligned; see struct Chunk):
**
**     bytes   0..239  key[0..29]   int64, ascending, key[0..cnt-1] valid
**     bytes 240..247  max          upper fence: keys of this chunk are <= max
**     bytes 248..251  next         index of the next chunk of the level
**     bytes 252..255  meta         count | LOCK | ZOMBIE | LAST | HEAD | level
**     bytes 256..495  val[0..29]   level 0: the 64-bit words of the keys;
**                                  upper levels: 32-bit down pointers in the
**                                  first 120 bytes (one cache line)
**
** Why: a search step only needs the keys, the fence and the link.  With the
** keys contiguous ("keys contiguous" in the 2025 report) they and the header
** fill exactly two 128-byte lines, and lane i of the warp loads the i-th
** 8-byte word: lanes 0..29 a key each, lane 30 the fence, lane 31 next+meta,
** one fully coalesced 256-byte load.  The paper's interleaved key/value pairs
** would need four lines for the same 30 keys.  On upper levels the down
** pointers are loaded in the same round (one more line, 120 bytes), so a
** step down costs one memory round trip, not two.  On the bottom level the
** value of a found key is one further 8-byte load.
**
** CONCURRENCY AND BATCHES.  The interface is batched with sequential
** semantics, so a batch is applied in phases, each one kernel launch over
** many warps:
**   1. sort the operations by key (CUB, stable, original index kept);
**   2. RESOLVE: one warp per run of equal keys searches the key lock-free,
**      replays the run's operations in array order (a warp scan finds each
**      operation's last preceding modification), writes every operation's
**      (found, old) and derives the run's net effect: value update in place,
**      insert of an absent key, delete of a present one, or nothing;
**   3. the memory the rest can need is reserved (pool grown) -- any failure
**      up to here leaves the store untouched;
**   4. value updates are written in place;
**   5. DELETE phases, then INSERT phases, each from level 0 up:
**      in the phase for level L many warps concurrently delete (insert) keys
**      at level L, locking the chunks they change, splitting, merging and
**      making zombies as in the paper.  Levels above L are not modified
**      during the phase, so the descent to level L reads them lock-free with
**      plain cached loads; at level L a warp only reads a chunk's contents
**      while holding its lock (walking right, lock by lock, to the chunk
**      whose range encloses the key).  Splits at level L emit raised keys,
**      which the phase for level L+1 inserts;
**   6. between batches: next pointers and down pointers that lead to zombies
**      or to chunks left of their key's chunk are repaired, zombies are
**      reclaimed into the free list, an empty top level is dropped.
** Invariants used (paper section IV-C): keys only ever move right (splits
** and merges push them into later chunks) and a chunk's max only decreases,
** so a pointer taken at any time leads to a chunk at or left of the key's
** enclosing chunk, from which a rightward walk finds it.
**
** Big batches into small stores (inserts >= half the keys, or an empty store)
** and xBulkLoad rebuild the store instead: the live keys are extracted in
** order, merged with the new ones (CUB DeviceMerge) and every level is built
** bottom-up directly into a new pool (24 keys per chunk on level 0, leaving
** room for inserts; 28 above, where changes are rarer), which is swapped
** in only when complete.
**
** LOOKUPS (xLookup, all-lookup batches) change nothing, so they search
** lock-free with cached read-only loads.  A big batch (>= 2^19 keys) is
** first sorted by key (CUB radix sort over the bits that vary, 32-bit keys
** when they suffice, original index kept); then each warp walks a segment of
** consecutive sorted keys along level 0 like a merge join, holding the chunk
** of the previous key in registers (kLookupSorted): neighbouring keys cost
** no memory access and most others one step right, and results are stored
** at the keys' original positions.  Smaller batches search one key per warp
** (kLookup1).  On H200, 10^7 keys, 10M random lookups: 8.0 G/s sorted (sort
** included) against 2.3 unsorted.
**
** SCANS use a directory of the bottom level: live level-0 chunks sorted by
** their fence (CUB radix sort) with a prefix sum of their counts (CUB scan),
** built lazily after a change.  A page is then a range of global ranks;
** one warp per chunk copies its part of the range straight to its place.
*/
#include "gfsl.cuh"
#include "gfsl_util.cuh"
#include "hostpipe.cuh"

#include <cub/device/device_merge.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

typedef long long i64;
typedef unsigned long long u64;

constexpr int DSIZE     = 30;          /* entries per chunk */
constexpr int MERGE_MIN = DSIZE/3;     /* fewer entries than this: merge */
constexpr int FILL      = 24;          /* level-0 entries per chunk, bulk build */
constexpr int FILL_IDX  = 28;          /* upper-level entries per chunk, bulk build */
constexpr int SPLIT_LO  = 16;          /* a split keeps 16, moves 15 */
constexpr int MAXLVL    = 32;          /* levels, at most */
constexpr uint32_t NIL  = 0xffffffffu; /* no chunk */
constexpr long STEP_LIMIT = 1L<<26;    /* a walk longer than this is a bug */

/* Bits of Chunk.meta. */
constexpr uint32_t M_CNT    = 0x3fu;     /* number of entries */
constexpr uint32_t M_LOCK   = 1u<<8;     /* held by a warp */
constexpr uint32_t M_ZOMBIE = 1u<<9;     /* merged away, still linked */
constexpr uint32_t M_LAST   = 1u<<10;    /* last chunk of its level (+inf) */
constexpr uint32_t M_HEAD   = 1u<<11;    /* first chunk of its level (-inf) */
constexpr uint32_t M_LIVE   = 1u<<12;    /* in use (live or zombie) */
constexpr int      M_LVL_SHIFT = 16;     /* level in bits 16..20 */

__host__ __device__ inline int metaLevel(uint32_t m){ return (m>>M_LVL_SHIFT)&31; }

/* One chunk; the layout is explained at the top of this file. */
struct __align__(128) Chunk {
  i64 key[DSIZE];
  i64 max;
  uint32_t next;
  uint32_t meta;
  u64 val[DSIZE];
  u64 spare[2];
};
static_assert(sizeof(Chunk)==512, "chunk must be 512 bytes");
static_assert(offsetof(Chunk, max)==240 && offsetof(Chunk, next)==248
              && offsetof(Chunk, meta)==252 && offsetof(Chunk, val)==256,
              "chunk layout");

/* A key to insert into an upper level: raised by a split. */
struct Item { i64 key; uint32_t down; int32_t level; };

/* Internal error codes, set on the device (first one wins). */
enum { E_OK=0, E_RESTART, E_LOOP, E_NOTFOUND, E_DUPKEY, E_RESERVE, E_LIST };
static const char *errName(int e){
  switch( e ){
    case E_RESTART:  return "search could not find a path";
    case E_LOOP:     return "walk did not terminate or left the pool";
    case E_NOTFOUND: return "key to delete not found";
    case E_DUPKEY:   return "key to insert already present";
    case E_RESERVE:  return "chunk reservation exceeded";
    case E_LIST:     return "raise list overflow";
  }
  return "unknown";
}

/* Counters of one batch (reset at its start). */
struct BatchCounters {
  unsigned int nIns, nDel, nUpd;
  unsigned int delAtLevel[MAXLVL];   /* deletes of keys present at level l */
  unsigned int rlCount[2];           /* raise lists (ping-pong) */
  unsigned int nDelRaise;            /* raises made by delete-phase splits */
  int delRaiseMaxLvl;
  unsigned int nSplit, nMerge;
  unsigned int opMax;
  i64 kMin, kMax;
  unsigned int nSel;                 /* generic CUB select output */
  unsigned int nReclaim;
  unsigned int maxGroup;             /* largest insert group */
};

/* First failure found by the invariant checker. */
struct CheckRes {
  int code, level;
  uint32_t chunk;
  int pos;
  i64 key;
  u64 sum;                           /* keys counted on the level */
  unsigned int nLive, nZombie, nFree, nBadFree;
};

/* Plan of one scan page: ranks [a,b) of the keys; chunk positions pa..pb. */
struct ScanPlan { u64 start, end, a, b; uint32_t pa, pb; };

/* Everything about the structure that lives on the device. */
struct DevState {
  uint32_t head[MAXLVL];
  int nLevels;
  int freeTop;                      /* free list entries [0,freeTop) */
  u64 levelKeys[MAXLVL];
  int levelChunks[MAXLVL];
  int err, errLevel;
  uint32_t errChunk;
  i64 errKey;
  unsigned int restarts;
  BatchCounters bc;
  CheckRes chk;
  ScanPlan plan;
};

/* What every structure kernel needs. */
struct KP {
  Chunk *pool;
  DevState *ds;
  uint32_t *freeList;
  uint32_t cap;                     /* chunks in the pool */
  int allocFloor;                   /* allocation may not go below this */
  int nLevels;                      /* levels while the kernel runs */
};

/* The arrays of one batch. */
struct BP {
  uint32_t n;
  const u64 *sk;                    /* sorted keys, minus kBase */
  i64 kBase;
  const uint32_t *perm;             /* sorted position -> original index */
  const uint8_t *op;
  const u64 *val;
  uint8_t *found;
  u64 *old;
  u64 *netVal;                      /* per run head: final value (delete: chunk) */
  uint8_t *netH;                    /* per run head: highest level holding key */
  uint8_t *flIns, *flDel;           /* per sorted position */
  u64 *updLoc, *updVal;             /* in-place value updates */
  uint32_t *insPos, *delPos;        /* run heads to insert / delete, sorted */
  i64 *delKeys;                     /* keys deleted by the batch, sorted */
  uint32_t nIns, nDel;
  Item *rl[2];                      /* raise lists */
  uint32_t rlCap;
  Item *dr;                         /* raises from delete-phase splits */
  uint32_t drCap;
};

__device__ __forceinline__ i64 sortedKey(const BP &B, size_t i){
  return (i64)(B.sk[i] + (u64)B.kBase);
}

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

/******************************** kernels **********************************/

/* Reset the per-batch counters. */
__global__ void kInitBatch(DevState *ds){
  if( threadIdx.x==0 && blockIdx.x==0 ){
    memset(&ds->bc, 0, sizeof(ds->bc));
    ds->bc.kMin = LLONG_MAX;
    ds->bc.kMax = LLONG_MIN;
    ds->bc.delRaiseMaxLvl = -1;
  }
}

/* Smallest and largest key and largest op code of a batch. */
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
** identity permutation. */
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
** after the other and stores the 32 results coalesced. */
__global__ void __launch_bounds__(256, 8) kLookup(KP P, size_t n, const i64 *key,
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
** every lane (a broadcast), the result stored by lane 0. */
__global__ void __launch_bounds__(256) kLookup1(KP P, size_t n, const i64 *key,
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
** batch's key span fits, else u64) and the identity permutation. */
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
** shuffles, measured no faster on H200: the sort and the scattered result
** stores dominate.)  found/val may be NULL. */
template<typename K>
__global__ void __launch_bounds__(256) kLookupSorted(KP P, uint32_t n, uint32_t segLen, const K *sk,
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

/* RESOLVE: one warp per run of equal keys in the sorted batch.  Finds the
** key's state before the batch, replays the run's operations in array order
** (each operation sees the state left by the last UPSERT/DELETE before it),
** writes per-operation results at their original positions, and records the
** run's net effect. */
__global__ void __launch_bounds__(256) kResolve(KP P, BP B){
  const int lane = gfslLane();
  for( size_t i=gfslWarpId(); i<B.n; i+=gfslWarpCount() ){
    u64 uk = B.sk[i];
    if( i>0 && B.sk[i-1]==uk ){
      if( lane==0 ){ B.flIns[i] = 0; B.flDel[i] = 0; }
      continue;
    }
    i64 k = (i64)(uk + (u64)B.kBase);
    size_t j = i+1;                              /* end of the run */
    while( true ){
      size_t q = j + lane;
      unsigned b = __ballot_sync(GFSL_FULL_MASK, q>=B.n || B.sk[q]!=uk);
      if( b ){ j += __ffs(b)-1; break; }
      j += 32;
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
    const bool f0 = slot>=0;
    const u64 v0 = f0 ? fv : 0;
    bool f = f0;
    u64 v = v0;
    for( size_t b=i; b<j; b+=32 ){
      size_t q = b + lane;
      bool act = q<j;
      uint32_t o = act ? B.perm[q] : 0;
      int op = act ? (int)B.op[o] : GPUDS_OP_LOOKUP;
      u64 nv = (act && B.val) ? B.val[o] : 0;
      bool mod = act && op!=GPUDS_OP_LOOKUP;
      int lm = mod ? lane : -1;                  /* last modifier <= lane */
      for( int d=1; d<32; d<<=1 ){
        int t = __shfl_up_sync(GFSL_FULL_MASK, lm, d);
        if( lane>=d && t>lm ) lm = t;
      }
      int prev = __shfl_up_sync(GFSL_FULL_MASK, lm, 1);
      if( lane==0 ) prev = -1;
      int src = prev<0 ? 0 : prev;
      int pop = __shfl_sync(GFSL_FULL_MASK, op, src);
      u64 pv = __shfl_sync(GFSL_FULL_MASK, nv, src);
      bool bf; u64 bv;
      if( prev>=0 ){ bf = (pop==GPUDS_OP_UPSERT); bv = bf ? pv : 0; }
      else{ bf = f; bv = v; }
      if( act ){
        if( B.found ) B.found[o] = bf ? 1 : 0;
        if( B.old ) B.old[o] = bv;
      }
      int last = __shfl_sync(GFSL_FULL_MASK, lm, 31);
      if( last>=0 ){
        int lop = __shfl_sync(GFSL_FULL_MASK, op, last);
        u64 lv = __shfl_sync(GFSL_FULL_MASK, nv, last);
        f = (lop==GPUDS_OP_UPSERT);
        v = f ? lv : 0;
      }
    }
    if( lane==0 ){
      int h = seen>0 ? seen : 0;
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

/* delKeys[t] = key of delete t (sorted, for the raise filter). */
__global__ void kGatherDel(BP B){
  for( size_t t=blockIdx.x*(size_t)blockDim.x+threadIdx.x; t<B.nDel; t+=gridDim.x*(size_t)blockDim.x ){
    B.delKeys[t] = sortedKey(B, B.delPos[t]);
  }
}

/* Sorted keys/values of the inserts (for a rebuild). */
__global__ void kGatherIns(BP B, i64 *insK, u64 *insV){
  for( size_t t=blockIdx.x*(size_t)blockDim.x+threadIdx.x; t<B.nIns; t+=gridDim.x*(size_t)blockDim.x ){
    uint32_t pos = B.insPos[t];
    insK[t] = sortedKey(B, pos);
    insV[t] = B.netVal[pos];
  }
}

/* In-place value updates of keys that stay present. */
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
** of its key's enclosing chunk whether or not that key still exists). */
__global__ void __launch_bounds__(256) kDelete(KP P, BP B, int level){
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
** merges joined their chunks (the chunk locks order them there). */
__global__ void __launch_bounds__(256) kInsertGroups(KP P, int level, uint32_t nG, const uint32_t *gH,
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
** change meanwhile). */
__global__ void __launch_bounds__(256) kLocate(KP P, int level, uint32_t n, const i64 *K, uint32_t *T){
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

/* Group heads: flag[t] = 1 where T changes. */
__global__ void kGroupFlags(uint32_t n, const uint32_t *T, uint8_t *flag){
  for( size_t t=blockIdx.x*(size_t)blockDim.x+threadIdx.x; t<n; t+=gridDim.x*(size_t)blockDim.x ){
    flag[t] = (t==0 || T[t]!=T[t-1]);
  }
}

/* Largest group. */
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

/* Append the delete-phase raises for `level` to the raise list. */
__global__ void kAppendDR(const Item *dr, uint32_t nDR, int level, Item *rl, unsigned int *count, uint32_t cap,
                          DevState *ds){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<nDR; i+=gridDim.x*(size_t)blockDim.x ){
    Item it = dr[i];
    if( it.level!=level ) continue;
    unsigned int r = atomicAdd(count, 1u);
    if( r<cap ) rl[r] = it; else setErr(ds, E_LIST, level, it.down, it.key);
  }
}

/* Raise items -> key/value arrays (to be sorted). */
__global__ void kItemsToArrays(const Item *it, uint32_t n, i64 *K, u64 *V){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    K[i] = it[i].key;
    V[i] = it[i].down;
  }
}

/* Create empty levels up to `level` (a head chunk each). */
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

/* Repair 1: next pointers of live chunks skip zombies. */
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

/* Repair 2: every down pointer leads to the live chunk holding its key. */
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

/* Repair 3: zombies go back to the free list. */
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

/* Drop empty top levels (a lone head chunk with no key). */
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

/* Directory: flag the live, non-zombie chunks of a level. */
__global__ void kDirFlags(KP P, int level, uint8_t *flag){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<P.cap; i+=gridDim.x*(size_t)blockDim.x ){
    uint32_t m = P.pool[i].meta;
    flag[i] = (m & M_LIVE) && !(m & M_ZOMBIE) && metaLevel(m)==level;
  }
}
/* Directory: the fence of each selected chunk (+inf as LLONG_MAX). */
__global__ void kDirFence(KP P, const uint32_t *idx, uint32_t n, i64 *fence){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    const Chunk *c = &P.pool[idx[i]];
    fence[i] = (c->meta & M_LAST) ? LLONG_MAX : c->max;
  }
}
/* Directory: the entry count of each chunk in order (cnt[n] = 0). */
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

/* Plan a scan page (one thread). */
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
** per bottom-level chunk, positions pa.. of the directory. */
__global__ void __launch_bounds__(256) kScanCopy(KP P, const uint32_t *idx, const u64 *pre,
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

/* keep[i] = key i is not among the n sorted deleted keys. */
__global__ void kFlagKeep(const i64 *key, size_t n, const i64 *del, uint32_t nDel, uint8_t *keep){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    keep[i] = !inSorted(del, nDel, key[i]);
  }
}

/* Bulk build of one level: chunk j of nc takes entries [j*fill, ...) of
** the n sorted entries K (with V64 on level 0, D32 above). */
__global__ void __launch_bounds__(256) kBuild(Chunk *pool, uint32_t base, int level, uint32_t nc,
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
** the first, pointing to that chunk. */
__global__ void kUpKeys(const i64 *K, uint32_t ncPrev, uint32_t basePrev, int fillPrev, i64 *upK, uint32_t *upD){
  for( size_t e=blockIdx.x*(size_t)blockDim.x+threadIdx.x; e+1<ncPrev; e+=gridDim.x*(size_t)blockDim.x ){
    upK[e] = K[(e+1)*(size_t)fillPrev];
    upD[e] = basePrev + (uint32_t)(e+1);
  }
}

/* Free list entries [from, from+n) = chunk indices hi-1, hi-2, ... so that
** the lowest index is taken first. */
__global__ void kFillFree(uint32_t *freeList, uint32_t from, uint32_t n, uint32_t hi){
  for( size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; i<n; i+=gridDim.x*(size_t)blockDim.x ){
    freeList[from+i] = hi-1-(uint32_t)i;
  }
}

/* Checker: one warp per chunk of a level, in fence order. */
__global__ void __launch_bounds__(256) kCheckLevel(KP P, int level, const uint32_t *idx,
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
** below that holds it (walking right from its pointer). */
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

/* Checker: chunk states (live, zombie, free) and the free list. */
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

/* Checker: the lookups of all extracted keys found them with their values. */
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

/* A device buffer owned by the store; grows, never shrinks. */
struct DBuf { void *p = nullptr; size_t cap = 0; };

}  // namespace

/******************************* host side *********************************/

struct GfslStore {
  cudaStream_t st;
  int nSM;
  Chunk *pool;
  uint32_t cap;                 /* chunks in the pool */
  uint32_t *freeList;           /* cap entries */
  DevState *ds;                 /* device state */
  DevState hs;                  /* host copy, refreshed by readState() */
  DevState *hsPin;              /* pinned landing area for readState() */
  /* workspace */
  DBuf wOp, wKey, wVal, wFound, wOld;          /* xBatch/xLookup inputs/outputs */
  DBuf ukA, ukB, pA, pB;                       /* sort double buffers */
  DBuf netVal, netH, flIns, flDel, insPos, delPos, delKeys, updLoc, updVal;
  DBuf rl0, rl1, dr, tmp;
  DBuf exK, exV, exF, kpK, kpV, finK, finV, upK0, upK1, upD0, upD1;
  DBuf dirIdx, dirIdxT, dirFence, dirFenceT, dirCnt, dirPre, dirFlag;
  DBuf scanK, scanV, chkFound, chkVal, insK, insV, gK0, gK1, gV0, gV1, gT, gF, gH;
  uint32_t nDir;
  int dirLevel;                 /* level the directory describes, -1: none */
  /* staging */
  void *stage[2];
  cudaEvent_t ev[2];
  size_t stageBytes;
  /* xLookup pipeline (hostpipe.cuh): chunk size, pinned buffers and streams,
  ** per-slot device buffers (keys, found, values, sort buffers) */
  size_t chunk;
  gpuds_pipe::HostPipe pipe;
  DBuf pl[2][8];
  /* knobs and state */
  uint64_t memLimit;
  int rebuildMode;
  int lookupVariant;            /* see gfsl::setLookupVariant */
  int broken;
  int mutating;
  gfsl::BatchStats last;
  char zErr[512];
};

/* Record a CUDA failure (see gfsl_util.cuh). */
int gfslCudaFail(GfslStore *p, cudaError_t e, const char *zWhat, int iLine){
  int rc = gfslCudaCode(e);
  cudaGetLastError();                      /* clear a non-sticky error */
  if( p ){
    snprintf(p->zErr, sizeof(p->zErr), "gfsl: %s: %s (gfsl.cu:%d)%s", zWhat,
             cudaGetErrorString(e), iLine,
             p->mutating && rc!=GPUDS_NOMEM ? " -- store is no longer usable" : "");
    if( p->mutating ) p->broken = 1;
  }
  return rc;
}

namespace {

/* Set the store's message; return rc. */
int setMsg(GfslStore *p, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  vsnprintf(p->zErr, sizeof(p->zErr), zFmt, ap);
  va_end(ap);
  return rc;
}

/* Device bytes held by all buffers of the store. */
uint64_t deviceBytes(GfslStore *p){
  const DBuf *a[] = { &p->wOp, &p->wKey, &p->wVal, &p->wFound, &p->wOld, &p->ukA, &p->ukB,
    &p->pA, &p->pB, &p->netVal, &p->netH, &p->flIns, &p->flDel, &p->insPos, &p->delPos,
    &p->delKeys, &p->updLoc, &p->updVal, &p->rl0, &p->rl1, &p->dr, &p->tmp, &p->exK, &p->exV,
    &p->exF, &p->kpK, &p->kpV, &p->finK, &p->finV, &p->upK0, &p->upK1, &p->upD0, &p->upD1,
    &p->dirIdx, &p->dirIdxT, &p->dirFence, &p->dirFenceT, &p->dirCnt, &p->dirPre, &p->dirFlag,
    &p->scanK, &p->scanV, &p->chkFound, &p->chkVal, &p->insK, &p->insV,
    &p->gK0, &p->gK1, &p->gV0, &p->gV1, &p->gT, &p->gF, &p->gH };
  uint64_t n = (uint64_t)p->cap*(sizeof(Chunk)+sizeof(uint32_t)) + sizeof(DevState);
  for( const DBuf *b : a ) n += b->cap;
  for( const auto &sl : p->pl ) for( const DBuf &b : sl ) n += b.cap;
  return n;
}

/* Would allocating nMore bytes pass the test limit? */
bool overLimit(GfslStore *p, uint64_t nMore, uint64_t nFreed){
  return p->memLimit && deviceBytes(p) - nFreed + nMore > p->memLimit;
}

/* Make buffer b hold at least nByte bytes (its contents are lost). */
int ensureBuf(GfslStore *p, DBuf &b, size_t nByte){
  if( nByte<=b.cap ) return GPUDS_OK;
  size_t want = nByte + nByte/8 + 256;
  if( overLimit(p, want, b.cap) ){
    return setMsg(p, GPUDS_NOMEM, "gfsl: device memory limit reached (%llu bytes)",
                  (unsigned long long)p->memLimit);
  }
  if( b.p ){ cudaStreamSynchronize(p->st); cudaFree(b.p); b.p = nullptr; b.cap = 0; }
  cudaError_t e = cudaMalloc(&b.p, want);
  if( e!=cudaSuccess ){ b.p = nullptr; return gfslCudaFail(p, e, "cudaMalloc(workspace)", __LINE__); }
  b.cap = want;
  return GPUDS_OK;
}

template<class T> T *ptr(DBuf &b){ return static_cast<T*>(b.p); }

/* Grid sizes for grid-stride kernels. */
unsigned gridFor(GfslStore *p, size_t nThreads){
  size_t b = (nThreads + 255)/256;
  size_t mx = (size_t)p->nSM*16;
  if( b>mx ) b = mx;
  return b ? (unsigned)b : 1u;
}
unsigned gridWarps(GfslStore *p, size_t nWarps){ return gridFor(p, nWarps*32); }

/* Kernel parameters for the current state. */
KP kp(GfslStore *p, int allocFloor = INT_MAX){
  KP P;
  P.pool = p->pool; P.ds = p->ds; P.freeList = p->freeList; P.cap = p->cap;
  P.allocFloor = allocFloor; P.nLevels = p->hs.nLevels;
  return P;
}

/* Refresh the host copy of the device state (synchronizes). */
int readState(GfslStore *p){
  GFSL_CK(cudaMemcpyAsync(p->hsPin, p->ds, sizeof(DevState), cudaMemcpyDeviceToHost, p->st));
  GFSL_CK(cudaStreamSynchronize(p->st));
  memcpy(&p->hs, p->hsPin, sizeof(DevState));
  return GPUDS_OK;
}

/* Read one 32-bit counter of the device state (synchronizes). */
int readU32(GfslStore *p, const unsigned int *dp, unsigned int *pOut){
  GFSL_CK(cudaMemcpyAsync(&p->hsPin->bc.nSel, dp, sizeof(unsigned int), cudaMemcpyDeviceToHost, p->st));
  GFSL_CK(cudaStreamSynchronize(p->st));
  *pOut = p->hsPin->bc.nSel;
  return GPUDS_OK;
}

/* The internal error of the device state, if any, as a store error. */
int deviceErr(GfslStore *p){
  if( p->hs.err==0 ) return GPUDS_OK;
  p->broken = 1;
  return setMsg(p, GPUDS_ERROR, "gfsl: internal error: %s (level %d, chunk %u, key %lld)"
                " -- store is no longer usable", errName(p->hs.err), p->hs.errLevel,
                p->hs.errChunk, (long long)p->hs.errKey);
}

/* Copy host -> device through the pinned staging buffers: pieces of
** stageBytes, the memcpy of piece i+1 overlapping the DMA of piece i (so the
** bulk paths, xBatch and xBulkLoad, already upload in overlapped chunks; they
** cannot overlap their kernels with the transfers, since all-or-nothing needs
** the whole batch on the device before it is sorted and applied). */
int h2d(GfslStore *p, void *dst, const void *src, size_t n){
  if( n==0 ) return GPUDS_OK;
  if( !p->stage[0] ){
    GFSL_CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, p->st));
    return GPUDS_OK;
  }
  size_t off = 0; int i = 0;
  while( off<n ){
    size_t len = std::min(p->stageBytes, n-off);
    GFSL_CK(cudaEventSynchronize(p->ev[i]));
    memcpy(p->stage[i], (const char*)src+off, len);
    GFSL_CK(cudaMemcpyAsync((char*)dst+off, p->stage[i], len, cudaMemcpyHostToDevice, p->st));
    GFSL_CK(cudaEventRecord(p->ev[i], p->st));
    off += len; i ^= 1;
  }
  return GPUDS_OK;
}

/* Copy device -> host through the pinned staging buffers (synchronizes). */
int d2h(GfslStore *p, void *dst, const void *src, size_t n){
  if( n==0 ) return GPUDS_OK;
  if( !p->stage[0] ){
    GFSL_CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, p->st));
    GFSL_CK(cudaStreamSynchronize(p->st));
    return GPUDS_OK;
  }
  size_t off = 0, prevOff = 0, prevLen = 0; int i = 0;
  while( off<n ){
    size_t len = std::min(p->stageBytes, n-off);
    GFSL_CK(cudaEventSynchronize(p->ev[i]));    /* buffer i free */
    GFSL_CK(cudaMemcpyAsync(p->stage[i], (const char*)src+off, len, cudaMemcpyDeviceToHost, p->st));
    GFSL_CK(cudaEventRecord(p->ev[i], p->st));
    if( prevLen ){
      GFSL_CK(cudaEventSynchronize(p->ev[i^1]));
      memcpy((char*)dst+prevOff, p->stage[i^1], prevLen);
    }
    prevOff = off; prevLen = len;
    off += len; i ^= 1;
  }
  GFSL_CK(cudaEventSynchronize(p->ev[i^1]));
  memcpy((char*)dst+prevOff, p->stage[i^1], prevLen);
  return GPUDS_OK;
}

/* Make at least nNeed chunks free: grow the pool (new allocation, copy;
** indices stay valid).  Nothing changes on failure. */
int growPool(GfslStore *p, uint64_t nNeed){
  if( (uint64_t)p->hs.freeTop>=nNeed ) return GPUDS_OK;
  uint64_t used = p->cap - (uint64_t)p->hs.freeTop;
  uint64_t newCap = std::max<uint64_t>((uint64_t)p->cap*2, used + nNeed + nNeed/4 + 1024);
  if( newCap>=0xfffffff0ull ){
    newCap = 0xfffffff0ull;
    if( newCap-used<nNeed ) return setMsg(p, GPUDS_NOMEM, "gfsl: chunk pool would exceed 2^32 chunks");
  }
  uint64_t nByte = newCap*sizeof(Chunk), nFreeByte = newCap*sizeof(uint32_t);
  if( overLimit(p, nByte+nFreeByte, (uint64_t)p->cap*(sizeof(Chunk)+sizeof(uint32_t))) ){
    return setMsg(p, GPUDS_NOMEM, "gfsl: device memory limit reached growing the pool to %llu chunks",
                  (unsigned long long)newCap);
  }
  Chunk *np = nullptr; uint32_t *nf = nullptr;
  cudaError_t e = cudaMalloc(&np, nByte);
  if( e==cudaSuccess ) e = cudaMalloc(&nf, nFreeByte);
  if( e!=cudaSuccess ){
    if( np ) cudaFree(np);
    return gfslCudaFail(p, e, "cudaMalloc(chunk pool)", __LINE__);
  }
  uint32_t oldCap = p->cap, nAdd = (uint32_t)(newCap-oldCap);
  int ft = p->hs.freeTop;
  e = cudaMemcpyAsync(np, p->pool, (size_t)oldCap*sizeof(Chunk), cudaMemcpyDeviceToDevice, p->st);
  if( e==cudaSuccess ) e = cudaMemsetAsync(np+oldCap, 0, (size_t)nAdd*sizeof(Chunk), p->st);
  if( e==cudaSuccess && ft>0 ) e = cudaMemcpyAsync(nf, p->freeList, (size_t)ft*sizeof(uint32_t), cudaMemcpyDeviceToDevice, p->st);
  if( e==cudaSuccess ){
    kFillFree<<<gridFor(p, nAdd), 256, 0, p->st>>>(nf, (uint32_t)ft, nAdd, (uint32_t)newCap);
    e = cudaGetLastError();
  }
  int nft = ft + (int)nAdd;
  p->hsPin->freeTop = nft;
  if( e==cudaSuccess ) e = cudaMemcpyAsync(&p->ds->freeTop, &p->hsPin->freeTop, sizeof(int), cudaMemcpyHostToDevice, p->st);
  if( e==cudaSuccess ) e = cudaStreamSynchronize(p->st);
  if( e!=cudaSuccess ){
    cudaFree(np); cudaFree(nf);
    return gfslCudaFail(p, e, "growing the chunk pool", __LINE__);
  }
  cudaFree(p->pool); cudaFree(p->freeList);
  p->pool = np; p->freeList = nf; p->cap = (uint32_t)newCap;
  p->hs.freeTop = nft;
  p->dirLevel = -1;
  return GPUDS_OK;
}

/* Temp storage of at least n bytes in p->tmp. */
int ensureTmp(GfslStore *p, size_t n){ return ensureBuf(p, p->tmp, n ? n : 1); }

/* Directory of level `level`: live chunks sorted by fence (dirIdx/dirFence,
** p->nDir of them) and the prefix sums of their counts (dirPre, nDir+1). */
int buildDir(GfslStore *p, int level){
  if( p->dirLevel==level ) return GPUDS_OK;
  int rc;
  uint32_t cap = p->cap;
  if( (rc = ensureBuf(p, p->dirFlag, cap))
   || (rc = ensureBuf(p, p->dirIdxT, (size_t)cap*4))
   || (rc = ensureBuf(p, p->dirIdx, (size_t)cap*4))
   || (rc = ensureBuf(p, p->dirFenceT, (size_t)cap*8))
   || (rc = ensureBuf(p, p->dirFence, (size_t)cap*8))
   || (rc = ensureBuf(p, p->dirCnt, ((size_t)cap+1)*8))
   || (rc = ensureBuf(p, p->dirPre, ((size_t)cap+1)*8)) ) return rc;
  size_t t1 = 0, t2 = 0, t3 = 0;
  thrust::counting_iterator<uint32_t> cnt0(0);
  GFSL_CK(cub::DeviceSelect::Flagged(nullptr, t1, cnt0, ptr<uint8_t>(p->dirFlag), ptr<uint32_t>(p->dirIdxT),
                                     &p->ds->bc.nSel, (int64_t)cap, p->st));
  GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, t2, ptr<i64>(p->dirFenceT), ptr<i64>(p->dirFence),
                                          ptr<uint32_t>(p->dirIdxT), ptr<uint32_t>(p->dirIdx), (int64_t)cap,
                                          0, 64, p->st));
  GFSL_CK(cub::DeviceScan::ExclusiveSum(nullptr, t3, ptr<u64>(p->dirCnt), ptr<u64>(p->dirPre),
                                        (int64_t)cap+1, p->st));
  if( (rc = ensureTmp(p, std::max(t1, std::max(t2, t3)))) ) return rc;
  KP P = kp(p);
  kDirFlags<<<gridFor(p, cap), 256, 0, p->st>>>(P, level, ptr<uint8_t>(p->dirFlag));
  GFSL_CKL("kDirFlags");
  t1 = p->tmp.cap;
  GFSL_CK(cub::DeviceSelect::Flagged(p->tmp.p, t1, cnt0, ptr<uint8_t>(p->dirFlag), ptr<uint32_t>(p->dirIdxT),
                                     &p->ds->bc.nSel, (int64_t)cap, p->st));
  unsigned int n = 0;
  if( (rc = readU32(p, &p->ds->bc.nSel, &n)) ) return rc;
  kDirFence<<<gridFor(p, n), 256, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdxT), n, ptr<i64>(p->dirFenceT));
  GFSL_CKL("kDirFence");
  t2 = p->tmp.cap;
  GFSL_CK(cub::DeviceRadixSort::SortPairs(p->tmp.p, t2, ptr<i64>(p->dirFenceT), ptr<i64>(p->dirFence),
                                          ptr<uint32_t>(p->dirIdxT), ptr<uint32_t>(p->dirIdx), (int64_t)n,
                                          0, 64, p->st));
  kDirCounts<<<gridFor(p, (size_t)n+1), 256, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), n, ptr<u64>(p->dirCnt));
  GFSL_CKL("kDirCounts");
  t3 = p->tmp.cap;
  GFSL_CK(cub::DeviceScan::ExclusiveSum(p->tmp.p, t3, ptr<u64>(p->dirCnt), ptr<u64>(p->dirPre),
                                        (int64_t)n+1, p->st));
  GFSL_CK(cudaStreamSynchronize(p->st));
  p->nDir = n;
  p->dirLevel = level;
  return GPUDS_OK;
}

/* Plan and copy one scan page into device arrays; *pnOut entries. */
int scanPage(GfslStore *p, gpuds_scan *s, size_t nMax, i64 *dK, u64 *dV, size_t *pnOut,
             i64 *pLastKey){
  int rc = buildDir(p, 0);
  if( rc ) return rc;
  KP P = kp(p);
  kScanPlan<<<1, 32, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<i64>(p->dirFence), ptr<u64>(p->dirPre),
                                 p->nDir, s->lo, s->hi, s->desc, (u64)nMax);
  GFSL_CKL("kScanPlan");
  GFSL_CK(cudaMemcpyAsync(&p->hsPin->plan, &p->ds->plan, sizeof(ScanPlan), cudaMemcpyDeviceToHost, p->st));
  GFSL_CK(cudaStreamSynchronize(p->st));
  ScanPlan pl = p->hsPin->plan;
  u64 take = pl.b - pl.a;
  if( take>0 ){
    uint32_t nPos = pl.pb - pl.pa + 1;
    kScanCopy<<<gridWarps(p, nPos), 256, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<u64>(p->dirPre),
                                                     pl.pa, nPos, pl.a, pl.b, s->desc, dK, dV);
    GFSL_CKL("kScanCopy");
  }
  *pnOut = (size_t)take;
  if( take==pl.end-pl.start ) s->done = 1;     /* nothing left in range */
  if( pLastKey && take>0 ){
    GFSL_CK(cudaMemcpyAsync(&p->hsPin->errKey, dK+take-1, sizeof(i64), cudaMemcpyDeviceToHost, p->st));
    GFSL_CK(cudaStreamSynchronize(p->st));
    *pLastKey = p->hsPin->errKey;
  }
  return GPUDS_OK;
}

/* Advance a scan past the last key of a page of `take` entries. */
void scanAdvance(gpuds_scan *s, size_t take, i64 lastKey){
  if( s->done || take==0 ) return;
  if( s->desc ){
    if( lastKey==LLONG_MIN ) s->done = 1; else s->hi = lastKey-1;
  }else{
    if( lastKey==LLONG_MAX ) s->done = 1; else s->lo = lastKey+1;
  }
  if( s->lo>s->hi ) s->done = 1;
}

/* Chunks a bulk build of n keys uses, and its number of levels. */
uint64_t buildChunks(uint64_t n, int *pLevels){
  uint64_t nc = n ? (n+FILL-1)/FILL : 1, total = nc;
  int L = 1;
  while( nc>1 ){
    uint64_t nl = nc-1;
    nc = (nl+FILL_IDX-1)/FILL_IDX;
    total += nc;
    L++;
  }
  if( pLevels ) *pLevels = L;
  return total;
}

/* Build all levels from n sorted distinct keys K/V into a fresh pool of
** newCap chunks (newPool, newFree), filling *pDs.  Needs upK0/upK1/upD0/upD1
** sized for (n/FILL+1) entries. */
int buildAll(GfslStore *p, Chunk *newPool, uint32_t *newFree, uint32_t newCap,
             const i64 *K, const u64 *V, uint64_t n, DevState *pDs){
  memset(pDs, 0, sizeof(*pDs));
  for( int l=0; l<MAXLVL; l++ ) pDs->head[l] = NIL;
  GFSL_CK(cudaMemsetAsync(newPool, 0, (size_t)newCap*sizeof(Chunk), p->st));
  uint64_t nc = n ? (n+FILL-1)/FILL : 1;
  uint32_t base = 0;
  kBuild<<<gridWarps(p, nc), 256, 0, p->st>>>(newPool, base, 0, (uint32_t)nc, n, K, V, nullptr, FILL);
  GFSL_CKL("kBuild");
  pDs->head[0] = base; pDs->levelChunks[0] = (int)nc; pDs->levelKeys[0] = n;
  int L = 1;
  const i64 *prevK = K;
  uint32_t prevBase = base;
  base += (uint32_t)nc;
  while( nc>1 ){
    uint64_t nl = nc-1;
    i64 *uK = ptr<i64>((L&1) ? p->upK0 : p->upK1);
    uint32_t *uD = ptr<uint32_t>((L&1) ? p->upD0 : p->upD1);
    kUpKeys<<<gridFor(p, nl), 256, 0, p->st>>>(prevK, (uint32_t)nc, prevBase, L==1 ? FILL : FILL_IDX, uK, uD);
    GFSL_CKL("kUpKeys");
    uint64_t ncl = (nl+FILL_IDX-1)/FILL_IDX;
    kBuild<<<gridWarps(p, ncl), 256, 0, p->st>>>(newPool, base, L, (uint32_t)ncl, nl, uK, nullptr, uD, FILL_IDX);
    GFSL_CKL("kBuild");
    pDs->head[L] = base; pDs->levelChunks[L] = (int)ncl; pDs->levelKeys[L] = nl;
    prevK = uK; prevBase = base;
    base += (uint32_t)ncl;
    nc = ncl;
    L++;
  }
  pDs->nLevels = L;
  pDs->freeTop = (int)(newCap - base);
  if( newCap>base ){
    kFillFree<<<gridFor(p, newCap-base), 256, 0, p->st>>>(newFree, 0, newCap-base, newCap);
    GFSL_CKL("kFillFree");
  }
  return GPUDS_OK;
}

/* REBUILD: replace the store by one built from its keys minus the nDel
** sorted delKeys, plus the nIns sorted insK/insV (none of them present),
** after applying the nUpd in-place value updates.  Everything that can fail
** is allocated first; the old pool is kept until the new one is complete. */
int rebuild(GfslStore *p, uint64_t nIns, const i64 *insK, const u64 *insV,
            uint32_t nDel, const i64 *delK, uint32_t nUpd, const u64 *updLoc, const u64 *updVal){
  int rc = buildDir(p, 0);
  if( rc ) return rc;
  uint64_t total = p->hs.levelKeys[0];
  uint64_t kept = total - nDel, fin = kept + nIns;
  int L = 0;
  uint64_t nChunks = buildChunks(fin, &L);
  uint64_t newCap = std::max<uint64_t>(1024, nChunks + nChunks/4 + 64);
  if( newCap>=0xfffffff0ull ) return setMsg(p, GPUDS_NOMEM, "gfsl: too many keys for one pool");
  uint64_t up = fin/FILL + 2;
  size_t tSel = 0, tMerge = 0;
  GFSL_CK(cub::DeviceSelect::Flagged(nullptr, tSel, ptr<i64>(p->exK), ptr<uint8_t>(p->exF), ptr<i64>(p->kpK),
                                     &p->ds->bc.nSel, (int64_t)total, p->st));
  GFSL_CK(cub::DeviceMerge::MergePairs(nullptr, tMerge, ptr<i64>(p->kpK), ptr<u64>(p->kpV), (int64_t)kept,
                                       insK, insV, (int64_t)nIns, ptr<i64>(p->finK), ptr<u64>(p->finV),
                                       cuda::std::less<i64>(), p->st));
  if( (rc = ensureBuf(p, p->exK, total*8+8)) || (rc = ensureBuf(p, p->exV, total*8+8))
   || (rc = ensureBuf(p, p->exF, total+1)) || (rc = ensureBuf(p, p->kpK, kept*8+8))
   || (rc = ensureBuf(p, p->kpV, kept*8+8)) || (rc = ensureBuf(p, p->finK, fin*8+8))
   || (rc = ensureBuf(p, p->finV, fin*8+8)) || (rc = ensureBuf(p, p->upK0, up*8))
   || (rc = ensureBuf(p, p->upK1, up*8)) || (rc = ensureBuf(p, p->upD0, up*4))
   || (rc = ensureBuf(p, p->upD1, up*4)) || (rc = ensureTmp(p, std::max(tSel, tMerge))) ) return rc;
  if( overLimit(p, newCap*(sizeof(Chunk)+4), 0) ){
    return setMsg(p, GPUDS_NOMEM, "gfsl: device memory limit reached (rebuild of %llu keys)",
                  (unsigned long long)fin);
  }
  Chunk *np = nullptr; uint32_t *nf = nullptr;
  cudaError_t e = cudaMalloc(&np, newCap*sizeof(Chunk));
  if( e==cudaSuccess ) e = cudaMalloc(&nf, newCap*sizeof(uint32_t));
  if( e!=cudaSuccess ){
    if( np ) cudaFree(np);
    return gfslCudaFail(p, e, "cudaMalloc(rebuilt pool)", __LINE__);
  }
  /* From here on the store changes; errors are no longer clean. */
  p->mutating = 1;
  KP P = kp(p);
  if( nUpd ){
    kUpdate<<<gridFor(p, nUpd), 256, 0, p->st>>>(P, nUpd, updLoc, updVal);
    GFSL_CKL("kUpdate");
  }
  const i64 *srcK = ptr<i64>(p->exK);
  const u64 *srcV = ptr<u64>(p->exV);
  if( total>0 ){
    kScanCopy<<<gridWarps(p, p->nDir), 256, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<u64>(p->dirPre), 0,
                                                        p->nDir, 0, total, 0, ptr<i64>(p->exK), ptr<u64>(p->exV));
    GFSL_CKL("kScanCopy");
  }
  if( nDel>0 ){
    kFlagKeep<<<gridFor(p, total), 256, 0, p->st>>>(ptr<i64>(p->exK), total, delK, nDel, ptr<uint8_t>(p->exF));
    GFSL_CKL("kFlagKeep");
    tSel = p->tmp.cap;
    GFSL_CK(cub::DeviceSelect::Flagged(p->tmp.p, tSel, ptr<i64>(p->exK), ptr<uint8_t>(p->exF), ptr<i64>(p->kpK),
                                       &p->ds->bc.nSel, (int64_t)total, p->st));
    tSel = p->tmp.cap;
    GFSL_CK(cub::DeviceSelect::Flagged(p->tmp.p, tSel, ptr<u64>(p->exV), ptr<uint8_t>(p->exF), ptr<u64>(p->kpV),
                                       &p->ds->bc.nSel, (int64_t)total, p->st));
    srcK = ptr<i64>(p->kpK); srcV = ptr<u64>(p->kpV);
  }
  if( nIns>0 ){
    if( kept>0 ){
      tMerge = p->tmp.cap;
      GFSL_CK(cub::DeviceMerge::MergePairs(p->tmp.p, tMerge, srcK, srcV, (int64_t)kept, insK, insV,
                                           (int64_t)nIns, ptr<i64>(p->finK), ptr<u64>(p->finV),
                                           cuda::std::less<i64>(), p->st));
      srcK = ptr<i64>(p->finK); srcV = ptr<u64>(p->finV);
    }else{
      srcK = insK; srcV = insV;
    }
  }
  DevState nds;
  if( (rc = buildAll(p, np, nf, (uint32_t)newCap, srcK, srcV, fin, &nds)) ) return rc;
  memcpy(p->hsPin, &nds, sizeof(DevState));
  GFSL_CK(cudaMemcpyAsync(p->ds, p->hsPin, sizeof(DevState), cudaMemcpyHostToDevice, p->st));
  GFSL_CK(cudaStreamSynchronize(p->st));
  cudaFree(p->pool); cudaFree(p->freeList);
  p->pool = np; p->freeList = nf; p->cap = (uint32_t)newCap;
  p->dirLevel = -1;
  if( (rc = readState(p)) ) return rc;
  p->last.rebuilt = 1;
  p->mutating = 0;
  return GPUDS_OK;
}

/* Chunks the insert phases of a batch may take, at most, and the
** capacities of the raise lists.
**
** In the insert phase of a level with C chunks at its start and m keys to
** insert, each split turns a full chunk (30 entries, 15 above half) into
** chunks of 16 and 15 entries, so it lowers the potential
** sum(max(0, count-15)) by 14; an insert without a split raises it by at
** most 1, and it starts at most 15*C.  Hence splits <= (15*C + m)/14, and
** splits <= m.  C includes the chunks the delete phases may add (one per
** delete at most).  Delete phases allocate only above the first R free-list
** positions (KP.allocFloor), so the insert phases always find their R. */
uint64_t reservation(GfslStore *p, uint64_t nIns, const unsigned int *delAt,
                     uint64_t *pRlCap, uint64_t *pDrCap){
  uint64_t R = MAXLVL + 2, dsum = 0, rlCap = 1;
  int topDel = -1;
  for( int l=0; l<MAXLVL; l++ ){ dsum += delAt[l]; if( delAt[l] ) topDel = l; }
  uint64_t m = nIns;
  for( int l=0; l<MAXLVL; l++ ){
    if( m==0 && l>topDel+1 ) break;
    uint64_t C = (l<p->hs.nLevels ? (uint64_t)p->hs.levelChunks[l] : 1) + delAt[l];
    uint64_t s = std::min<uint64_t>(m, (15*C + m)/14 + 1);
    R += s;
    if( l>=p->hs.nLevels ) R += 1;
    uint64_t mNext = s + delAt[l];
    rlCap = std::max<uint64_t>(rlCap, mNext+1);
    m = mNext;
  }
  *pRlCap = rlCap;
  *pDrCap = dsum+1;
  return R;
}

/* Locate the n sorted keys gK on level `level` (gT) and group them by
** chunk (heads in gH); *pnG groups, *pMax keys in the largest. */
int locateGroups(GfslStore *p, const KP &P, int level, uint32_t n, const i64 *K,
                 uint32_t *pnG, uint32_t *pMax){
  int rc;
  kLocate<<<gridWarps(p, n), 256, 0, p->st>>>(P, level, n, K, ptr<uint32_t>(p->gT));
  GFSL_CKL("kLocate");
  kGroupFlags<<<gridFor(p, n), 256, 0, p->st>>>(n, ptr<uint32_t>(p->gT), ptr<uint8_t>(p->gF));
  GFSL_CKL("kGroupFlags");
  thrust::counting_iterator<uint32_t> cnt0(0);
  size_t tb = p->tmp.cap;
  GFSL_CK(cub::DeviceSelect::Flagged(p->tmp.p, tb, cnt0, ptr<uint8_t>(p->gF), ptr<uint32_t>(p->gH),
                                     &p->ds->bc.nSel, (int64_t)n, p->st));
  unsigned int nG = 0;
  if( (rc = readU32(p, &p->ds->bc.nSel, &nG)) ) return rc;
  GFSL_CK(cudaMemsetAsync(&p->ds->bc.maxGroup, 0, sizeof(unsigned int), p->st));
  kGroupMax<<<gridFor(p, nG), 256, 0, p->st>>>(nG, ptr<uint32_t>(p->gH), n, p->ds);
  GFSL_CKL("kGroupMax");
  unsigned int mx = 0;
  if( (rc = readU32(p, &p->ds->bc.maxGroup, &mx)) ) return rc;
  *pnG = nG;
  if( pMax ) *pMax = mx;
  return GPUDS_OK;
}

/* INCREMENTAL: the concurrent delete and insert phases, then the repairs.
** The level-0 inserts are in gK0/gV0 (sorted), located and grouped already
** (gT, gH, nG0 groups); R chunks are reserved (see reservation()). */
int applyIncremental(GfslStore *p, BP &B, uint32_t nUpd, uint64_t R, uint32_t nG0){
  int rc;
  p->mutating = 1;
  p->dirLevel = -1;
  KP P = kp(p, (int)R);               /* delete phases: keep R for inserts */
  if( nUpd ){
    kUpdate<<<gridFor(p, nUpd), 256, 0, p->st>>>(P, nUpd, ptr<u64>(p->updLoc), ptr<u64>(p->updVal));
    GFSL_CKL("kUpdate");
  }
  /* Delete phases, level 0 first: one warp per key, concurrent. */
  for( int l=0; l<P.nLevels; l++ ){
    if( p->hs.bc.delAtLevel[l]==0 ) continue;
    kDelete<<<gridWarps(p, B.nDel), 256, 0, p->st>>>(P, B, l);
    GFSL_CKL("kDelete");
  }
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  uint32_t nDR = std::min<uint32_t>(p->hs.bc.nDelRaise, B.drCap);
  int drMax = p->hs.bc.delRaiseMaxLvl;
  if( p->hs.freeTop<(int)R ) return setMsg(p, GPUDS_ERROR, "gfsl: internal error: reservation lost");
  P.allocFloor = 0;                   /* insert phases: R chunks are there */
  /* Insert phases, level 0 first. */
  Item *rl[2] = { B.rl[0], B.rl[1] };
  unsigned int *rlCount = p->ds->bc.rlCount;
  GFSL_CK(cudaMemsetAsync(rlCount, 0, 2*sizeof(unsigned int), p->st));
  if( B.nIns>0 ){
    kInsertGroups<<<gridWarps(p, nG0), 256, 0, p->st>>>(P, 0, nG0, ptr<uint32_t>(p->gH), B.nIns,
        ptr<i64>(p->gK0), ptr<u64>(p->gV0), ptr<uint32_t>(p->gT), rl[1], &rlCount[1], B.rlCap);
    GFSL_CKL("kInsertGroups");
  }
  size_t tb;
  for( int l=1; l<MAXLVL; l++ ){
    if( nDR>0 && l<=drMax ){
      kAppendDR<<<gridFor(p, nDR), 256, 0, p->st>>>(B.dr, nDR, l, rl[l&1], &rlCount[l&1], B.rlCap, p->ds);
      GFSL_CKL("kAppendDR");
    }
    unsigned int m = 0;
    if( (rc = readU32(p, &rlCount[l&1], &m)) ) return rc;
    m = std::min<uint32_t>(m, B.rlCap);
    GFSL_CK(cudaMemsetAsync(&rlCount[(l+1)&1], 0, sizeof(unsigned int), p->st));
    if( m==0 ){
      if( l>=drMax ) break;
      continue;
    }
    if( l>=P.nLevels ){
      kEnsureLevel<<<1, 32, 0, p->st>>>(P, l);
      GFSL_CKL("kEnsureLevel");
      P.nLevels = l+1;
    }
    kItemsToArrays<<<gridFor(p, m), 256, 0, p->st>>>(rl[l&1], m, ptr<i64>(p->gK1), ptr<u64>(p->gV1));
    GFSL_CKL("kItemsToArrays");
    tb = p->tmp.cap;
    GFSL_CK(cub::DeviceRadixSort::SortPairs(p->tmp.p, tb, ptr<i64>(p->gK1), ptr<i64>(p->gK0),
                                            ptr<u64>(p->gV1), ptr<u64>(p->gV0), (int64_t)m, 0, 64, p->st));
    uint32_t nG = 0;
    if( (rc = locateGroups(p, P, l, m, ptr<i64>(p->gK0), &nG, nullptr)) ) return rc;
    kInsertGroups<<<gridWarps(p, nG), 256, 0, p->st>>>(P, l, nG, ptr<uint32_t>(p->gH), m,
        ptr<i64>(p->gK0), ptr<u64>(p->gV0), ptr<uint32_t>(p->gT), rl[(l+1)&1], &rlCount[(l+1)&1], B.rlCap);
    GFSL_CKL("kInsertGroups");
  }
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  /* Repairs between batches. */
  if( p->hs.bc.nSplit || p->hs.bc.nMerge ){
    P.nLevels = p->hs.nLevels;
    kFixNext<<<gridFor(p, p->cap), 256, 0, p->st>>>(P);
    GFSL_CKL("kFixNext");
    kFixDown<<<gridFor(p, (size_t)p->cap*32), 256, 0, p->st>>>(P);
    GFSL_CKL("kFixDown");
    kReclaim<<<gridFor(p, p->cap), 256, 0, p->st>>>(P);
    GFSL_CKL("kReclaim");
  }
  kDropLevels<<<1, 32, 0, p->st>>>(P);
  GFSL_CKL("kDropLevels");
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  p->mutating = 0;
  return GPUDS_OK;
}

/* Ensure the per-operation workspace for a batch of n. */
int ensureBatchWs(GfslStore *p, size_t n){
  int rc;
  if( (rc = ensureBuf(p, p->ukA, n*8)) || (rc = ensureBuf(p, p->ukB, n*8))
   || (rc = ensureBuf(p, p->pA, n*4)) || (rc = ensureBuf(p, p->pB, n*4))
   || (rc = ensureBuf(p, p->netVal, n*8)) || (rc = ensureBuf(p, p->netH, n))
   || (rc = ensureBuf(p, p->flIns, n)) || (rc = ensureBuf(p, p->flDel, n))
   || (rc = ensureBuf(p, p->insPos, n*4)) || (rc = ensureBuf(p, p->delPos, n*4))
   || (rc = ensureBuf(p, p->delKeys, n*8)) || (rc = ensureBuf(p, p->updLoc, n*8))
   || (rc = ensureBuf(p, p->updVal, n*8)) ) return rc;
  size_t t1 = 0, t2 = 0;
  cub::DoubleBuffer<u64> dk(ptr<u64>(p->ukA), ptr<u64>(p->ukB));
  cub::DoubleBuffer<uint32_t> dv(ptr<uint32_t>(p->pA), ptr<uint32_t>(p->pB));
  GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, t1, dk, dv, (int64_t)n, 0, 64, p->st));
  thrust::counting_iterator<uint32_t> cnt0(0);
  GFSL_CK(cub::DeviceSelect::Flagged(nullptr, t2, cnt0, ptr<uint8_t>(p->flIns), ptr<uint32_t>(p->insPos),
                                     &p->ds->bc.nIns, (int64_t)n, p->st));
  return ensureTmp(p, std::max(t1, t2));
}

/* Launch an unsorted lookup kernel on stream st (default: the store's):
** kLookup (tiled) for variant 1, else kLookup1. */
int launchLookup(GfslStore *p, const KP &P, size_t n, const i64 *dKey, uint8_t *dFound, u64 *dVal,
                 cudaStream_t st = nullptr){
  if( !st ) st = p->st;
  if( p->lookupVariant==1 ){
    kLookup<<<gridWarps(p, (n+31)/32), 256, 0, st>>>(P, n, dKey, dFound, dVal);
  }else{
    kLookup1<<<gridWarps(p, n), 256, 0, st>>>(P, n, dKey, dFound, dVal);
  }
  GFSL_CKL("kLookup");
  return GPUDS_OK;
}

/* Batches of at least this many lookups take the sorted path (variant 0):
** on H200, 10^7 keys, the sorted path took 0.228 ms for 2^18 random lookups
** against 0.133 unsorted, and 0.294 against 0.481 for 2^20. */
constexpr size_t SORTED_LOOKUP_MIN = (size_t)1<<19;

/* Enqueue the sorted lookup of n keys (dKey, all within kBase + [0, 2^bits))
** on stream st: kPrepLookupSort into A/IA, the CUB radix sort (A/B, IA/IB
** as double buffers, tmp of tmpBytes temp storage), kLookupSorted. */
template<typename K>
int enqueueSorted(GfslStore *p, const KP &P, cudaStream_t st, size_t n, const i64 *dKey, i64 kBase,
                  int bits, K *A, K *B, uint32_t *IA, uint32_t *IB, void *tmp, size_t tmpBytes,
                  uint8_t *dFound, u64 *dVal){
  cub::DoubleBuffer<K> dk(A, B);
  cub::DoubleBuffer<uint32_t> dv(IA, IB);
  kPrepLookupSort<K><<<gridFor(p, n), 256, 0, st>>>(n, dKey, kBase, dk.Current(), dv.Current());
  GFSL_CKL("kPrepLookupSort");
  size_t tb = tmpBytes;
  GFSL_CK(cub::DeviceRadixSort::SortPairs(tmp, tb, dk, dv, (int64_t)n, 0, bits, st));
  /* segments of up to 128 keys, but at least ~2 per warp the GPU holds, so
  ** that small batches (sparse keys, a descent each) still spread out */
  const size_t nWarps = (size_t)p->nSM*64;
  size_t seg = n/(2*nWarps);
  seg = seg<1 ? 1 : (seg>128 ? 128 : seg);
  const size_t nSeg = (n + seg - 1)/seg;
  kLookupSorted<K><<<gridWarps(p, nSeg), 256, 0, st>>>(P, (uint32_t)n, (uint32_t)seg,
      dk.Current(), kBase, dv.Current(), dFound, dVal);
  GFSL_CKL("kLookupSorted");
  return GPUDS_OK;
}

/* The sorted lookup path: sort the keys (CUB radix sort over the bits that
** vary in the batch, 32-bit keys when they suffice, original index kept),
** then kLookupSorted.  Promises the results of launchLookup; *pFallback is
** set (and nothing launched) when its workspace cannot be had, so the caller
** can use an unsorted kernel, which needs none. */
template<typename K>
int lookupSortedDev(GfslStore *p, const KP &P, size_t n, const i64 *dKey, i64 kBase, int bits,
                    uint8_t *dFound, u64 *dVal, bool *pFallback){
  int rc;
  *pFallback = false;
  cub::DoubleBuffer<K> dk(nullptr, nullptr);
  cub::DoubleBuffer<uint32_t> dv(nullptr, nullptr);
  size_t tb = 0;
  GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, dk, dv, (int64_t)n, 0, bits, p->st));
  if( (rc = ensureBuf(p, p->ukA, n*sizeof(K))) || (rc = ensureBuf(p, p->ukB, n*sizeof(K)))
   || (rc = ensureBuf(p, p->pA, n*4)) || (rc = ensureBuf(p, p->pB, n*4)) || (rc = ensureTmp(p, tb)) ){
    if( rc!=GPUDS_NOMEM ) return rc;
    p->zErr[0] = 0;
    *pFallback = true;
    return GPUDS_OK;
  }
  return enqueueSorted<K>(p, P, p->st, n, dKey, kBase, bits, ptr<K>(p->ukA), ptr<K>(p->ukB),
                          ptr<uint32_t>(p->pA), ptr<uint32_t>(p->pB), p->tmp.p, p->tmp.cap,
                          dFound, dVal);
}

/* Lookups of n device keys: the sorted path for big batches (variant 0) or
** always (variant 3); otherwise (and when the sort's workspace does not fit
** in memory) an unsorted kernel. */
int lookupDev(GfslStore *p, size_t n, const i64 *dKey, uint8_t *dFound, u64 *dVal,
              bool haveStats = false){
  if( n==0 ) return GPUDS_OK;
  if( n>0x7fffffffu ) return setMsg(p, GPUDS_ERROR, "gfsl: batch of %zu lookups is too large", n);
  KP P = kp(p);
  int rc;
  bool sorted = p->lookupVariant==3 || (p->lookupVariant==0 && n>=SORTED_LOOKUP_MIN);
  if( sorted ){
    if( !haveStats ){            /* the key span (batchDev has it already) */
      kInitBatch<<<1, 32, 0, p->st>>>(p->ds);
      GFSL_CKL("kInitBatch");
      kStats<<<gridFor(p, n), 256, 0, p->st>>>(n, nullptr, dKey, p->ds);
      GFSL_CKL("kStats");
      if( (rc = readState(p)) ) return rc;
    }
    const i64 kBase = p->hs.bc.kMin;
    const u64 span = (u64)p->hs.bc.kMax - (u64)kBase;
    const int bits = span ? 64 - __builtin_clzll(span) : 1;
    bool fallback = false;
    rc = bits<=32 ? lookupSortedDev<uint32_t>(p, P, n, dKey, kBase, bits, dFound, dVal, &fallback)
                  : lookupSortedDev<u64>(p, P, n, dKey, kBase, bits, dFound, dVal, &fallback);
    if( rc ) return rc;
    sorted = !fallback;
  }
  if( !sorted && (rc = launchLookup(p, P, n, dKey, dFound, dVal)) ) return rc;
  if( (rc = readState(p)) ) return rc;
  return deviceErr(p);
}

/* xLookup of n > p->chunk host keys through the pipeline of hostpipe.cuh.
** Each chunk is looked up on its own: under variant 3 by the sorted path,
** otherwise (the default, 0, included) by the unsorted kernel of the variant
** (kLookup for 1, else kLookup1).  Why the default does not sort chunks
** (H200, 10^7 host keys on a 10^7-key store; bench/results/
** bench_gfsl-h200-host.log and -run1.log): the pipeline is bound by the
** host's copies (about 1-2 ms a chunk of 2^19-2^20 keys against 0.2-0.5 ms
** of GPU work, sorted or not), and the sort needs the chunk's key span,
** which the host takes while it copies the keys: that pass cost more than
** the sort saved: chunks of 2^19 31.0 ms sorted against 23.8 unsorted, 2^20
** 33.4 against 27.9 (run 1: 23.3 against 18.4); single-shot, sorted, 24.2
** (run 1: 20.7).
** Each slot has its own device buffers (p->pl), kept between calls.
** *pDone is false (and nothing done) when the pipe cannot be had (no pinned
** memory): the caller then takes the single-shot path. */
int lookupPipelined(GfslStore *p, size_t n, const int64_t *aKey, uint8_t *aFound, uint64_t *aVal,
                    bool *pDone){
  enum { PK = 0, PF, PV, SA, SB, IA, IB, TMP };
  int rc;
  const char *zWhat = "";
  *pDone = false;
  if( gpuds_pipe::prepare(p->pipe, p->chunk, &zWhat)!=cudaSuccess ){
    cudaGetLastError();
    return GPUDS_OK;
  }
  *pDone = true;
  const size_t C = p->pipe.chunk;
  const int variant = p->lookupVariant;
  for( int s=0; s<2; s++ ){
    if( (rc = ensureBuf(p, p->pl[s][PK], C*8)) || (rc = ensureBuf(p, p->pl[s][PF], C))
     || (rc = ensureBuf(p, p->pl[s][PV], C*8)) ) return rc;
  }
  /* the sort's buffers are optional, as in lookupDev: without them every
  ** chunk takes the unsorted kernel */
  bool sortable = variant==3;
  if( sortable ){
    size_t t32 = 0, t64 = 0;
    {
      cub::DoubleBuffer<uint32_t> dk(nullptr, nullptr), dv(nullptr, nullptr);
      GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, t32, dk, dv, (int64_t)C, 0, 32, p->st));
    }
    {
      cub::DoubleBuffer<u64> dk(nullptr, nullptr);
      cub::DoubleBuffer<uint32_t> dv(nullptr, nullptr);
      GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, t64, dk, dv, (int64_t)C, 0, 64, p->st));
    }
    for( int s=0; s<2 && sortable; s++ ){
      DBuf *B = p->pl[s];
      if( (rc = ensureBuf(p, B[SA], C*8)) || (rc = ensureBuf(p, B[SB], C*8))
       || (rc = ensureBuf(p, B[IA], C*4)) || (rc = ensureBuf(p, B[IB], C*4))
       || (rc = ensureBuf(p, B[TMP], std::max<size_t>(std::max(t32, t64), 1))) ){
        if( rc!=GPUDS_NOMEM ) return rc;
        p->zErr[0] = 0;
        sortable = false;
      }
    }
  }
  KP P = kp(p);
  int64_t *dK[2]; uint8_t *dF[2]; uint64_t *dV[2];
  for( int s=0; s<2; s++ ){
    dK[s] = ptr<int64_t>(p->pl[s][PK]); dF[s] = ptr<uint8_t>(p->pl[s][PF]); dV[s] = ptr<uint64_t>(p->pl[s][PV]);
  }
  rc = gpuds_pipe::runLookups(p->pipe, p->st, n, aKey, aFound, aVal, sortable, dK, dF, dV,
    [&](int s, cudaStream_t st, size_t m, const int64_t *k, uint8_t *f, uint64_t *v,
        int64_t kMin, int64_t kMax) -> int {
      const i64 *dk = reinterpret_cast<const i64*>(k);
      u64 *dv = reinterpret_cast<u64*>(v);
      if( sortable ){
        const u64 span = (u64)kMax - (u64)kMin;
        const int bits = span ? 64 - __builtin_clzll(span) : 1;
        DBuf *B = p->pl[s];
        size_t need = 0;
        cub::DoubleBuffer<uint32_t> iv(nullptr, nullptr);
        if( bits<=32 ){
          cub::DoubleBuffer<uint32_t> kv(nullptr, nullptr);
          GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, need, kv, iv, (int64_t)m, 0, bits, st));
          if( need<=B[TMP].cap ){
            return enqueueSorted<uint32_t>(p, P, st, m, dk, kMin, bits, ptr<uint32_t>(B[SA]),
                ptr<uint32_t>(B[SB]), ptr<uint32_t>(B[IA]), ptr<uint32_t>(B[IB]), B[TMP].p,
                B[TMP].cap, f, dv);
          }
        }else{
          cub::DoubleBuffer<u64> kv(nullptr, nullptr);
          GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, need, kv, iv, (int64_t)m, 0, bits, st));
          if( need<=B[TMP].cap ){
            return enqueueSorted<u64>(p, P, st, m, dk, kMin, bits, ptr<u64>(B[SA]),
                ptr<u64>(B[SB]), ptr<uint32_t>(B[IA]), ptr<uint32_t>(B[IB]), B[TMP].p,
                B[TMP].cap, f, dv);
          }
        }
      }
      return launchLookup(p, P, m, dk, f, dv, st);
    },
    [p](cudaError_t e, const char *zW) -> int { return gfslCudaFail(p, e, zW, __LINE__); });
  if( rc ) return rc;
  if( (rc = readState(p)) ) return rc;
  return deviceErr(p);
}

/* The whole batch on device arrays (see the top of this file). */
int batchDev(GfslStore *p, size_t n, const uint8_t *dOp, const i64 *dKey, const u64 *dVal,
             uint8_t *dFound, u64 *dOld){
  int rc;
  memset(&p->last, 0, sizeof(p->last));
  if( n==0 ) return GPUDS_OK;
  if( n>0x7fffffffu ) return setMsg(p, GPUDS_ERROR, "gfsl: batch of %zu operations is too large", n);
  kInitBatch<<<1, 32, 0, p->st>>>(p->ds);
  GFSL_CKL("kInitBatch");
  kStats<<<gridFor(p, n), 256, 0, p->st>>>(n, dOp, dKey, p->ds);
  GFSL_CKL("kStats");
  if( (rc = readState(p)) ) return rc;
  if( p->hs.bc.opMax>GPUDS_OP_DELETE ) return setMsg(p, GPUDS_MISUSE, "gfsl: invalid operation code %u", p->hs.bc.opMax);
  if( p->hs.bc.opMax==GPUDS_OP_LOOKUP ) return lookupDev(p, n, dKey, dFound, dOld, true);
  if( (rc = ensureBatchWs(p, n)) ) return rc;

  /* 1. sort by key (only the bits that vary), keeping original indices */
  i64 kBase = p->hs.bc.kMin;
  u64 span = (u64)p->hs.bc.kMax - (u64)kBase;
  int bits = span ? 64 - __builtin_clzll(span) : 1;
  kPrepSort<<<gridFor(p, n), 256, 0, p->st>>>(n, dKey, kBase, ptr<u64>(p->ukA), ptr<uint32_t>(p->pA));
  GFSL_CKL("kPrepSort");
  cub::DoubleBuffer<u64> dk(ptr<u64>(p->ukA), ptr<u64>(p->ukB));
  cub::DoubleBuffer<uint32_t> dv(ptr<uint32_t>(p->pA), ptr<uint32_t>(p->pB));
  size_t tb = p->tmp.cap;
  GFSL_CK(cub::DeviceRadixSort::SortPairs(p->tmp.p, tb, dk, dv, (int64_t)n, 0, bits, p->st));

  BP B;
  memset(&B, 0, sizeof(B));
  B.n = (uint32_t)n; B.sk = dk.Current(); B.kBase = kBase; B.perm = dv.Current();
  B.op = dOp; B.val = dVal; B.found = dFound; B.old = dOld;
  B.netVal = ptr<u64>(p->netVal); B.netH = ptr<uint8_t>(p->netH);
  B.flIns = ptr<uint8_t>(p->flIns); B.flDel = ptr<uint8_t>(p->flDel);
  B.updLoc = ptr<u64>(p->updLoc); B.updVal = ptr<u64>(p->updVal);
  B.insPos = ptr<uint32_t>(p->insPos); B.delPos = ptr<uint32_t>(p->delPos);
  B.delKeys = ptr<i64>(p->delKeys);

  /* 2. resolve runs, select inserts and deletes (stable: sorted by key) */
  KP P = kp(p);
  kResolve<<<gridWarps(p, n), 256, 0, p->st>>>(P, B);
  GFSL_CKL("kResolve");
  thrust::counting_iterator<uint32_t> cnt0(0);
  tb = p->tmp.cap;
  GFSL_CK(cub::DeviceSelect::Flagged(p->tmp.p, tb, cnt0, B.flIns, B.insPos, &p->ds->bc.nIns, (int64_t)n, p->st));
  tb = p->tmp.cap;
  GFSL_CK(cub::DeviceSelect::Flagged(p->tmp.p, tb, cnt0, B.flDel, B.delPos, &p->ds->bc.nDel, (int64_t)n, p->st));
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  B.nIns = p->hs.bc.nIns; B.nDel = p->hs.bc.nDel;
  uint32_t nUpd = p->hs.bc.nUpd;
  p->last.nInsert = B.nIns; p->last.nDelete = B.nDel; p->last.nUpdate = nUpd;

  if( B.nIns==0 && B.nDel==0 ){
    if( nUpd ){
      kUpdate<<<gridFor(p, nUpd), 256, 0, p->st>>>(P, nUpd, B.updLoc, B.updVal);
      GFSL_CKL("kUpdate");
      GFSL_CK(cudaStreamSynchronize(p->st));
    }
  }else{
    /* 3. choose: rebuild, or concurrent phases (and reserve for them) */
    uint64_t count = p->hs.levelKeys[0];
    bool bRebuild = p->rebuildMode==2
        || (p->rebuildMode==0 && B.nIns>0 && ((uint64_t)B.nIns*2>=count || count<4096));
    uint64_t rlCap = 0, drCap = 0, R = 0;
    if( !bRebuild ){
      R = reservation(p, B.nIns, p->hs.bc.delAtLevel, &rlCap, &drCap);
      if( R>0x7fff0000ull ) return setMsg(p, GPUDS_NOMEM, "gfsl: batch needs too many chunks (%llu)", (unsigned long long)R);
    }
    size_t gcap = std::max<size_t>(B.nIns, rlCap) + 1;
    if( (rc = ensureBuf(p, p->gK0, gcap*8)) || (rc = ensureBuf(p, p->gV0, gcap*8)) ) return rc;
    if( !bRebuild ){
      if( (rc = ensureBuf(p, p->gK1, gcap*8)) || (rc = ensureBuf(p, p->gV1, gcap*8))
       || (rc = ensureBuf(p, p->gT, gcap*4)) || (rc = ensureBuf(p, p->gF, gcap))
       || (rc = ensureBuf(p, p->gH, gcap*4)) || (rc = ensureBuf(p, p->rl0, rlCap*sizeof(Item)))
       || (rc = ensureBuf(p, p->rl1, rlCap*sizeof(Item))) || (rc = ensureBuf(p, p->dr, drCap*sizeof(Item))) ) return rc;
      size_t t1 = 0, t2 = 0;
      GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, t1, ptr<i64>(p->gK1), ptr<i64>(p->gK0),
                                              ptr<u64>(p->gV1), ptr<u64>(p->gV0), (int64_t)gcap, 0, 64, p->st));
      GFSL_CK(cub::DeviceSelect::Flagged(nullptr, t2, cnt0, ptr<uint8_t>(p->gF), ptr<uint32_t>(p->gH),
                                         &p->ds->bc.nSel, (int64_t)gcap, p->st));
      if( (rc = ensureTmp(p, std::max(t1, t2))) ) return rc;
      uint64_t dsum = 0;
      for( int l=0; l<MAXLVL; l++ ) dsum += p->hs.bc.delAtLevel[l];
      uint64_t soft = std::min<uint64_t>(dsum, 1024 + dsum/64);  /* for merges' splits */
      if( (rc = growPool(p, R + soft)) ) return rc;
      P = kp(p);
    }
    if( B.nIns ){
      kGatherIns<<<gridFor(p, B.nIns), 256, 0, p->st>>>(B, ptr<i64>(p->gK0), ptr<u64>(p->gV0));
      GFSL_CKL("kGatherIns");
    }
    if( B.nDel ){
      kGatherDel<<<gridFor(p, B.nDel), 256, 0, p->st>>>(B);
      GFSL_CKL("kGatherDel");
    }
    uint32_t nG0 = 0, maxG = 0;
    if( !bRebuild && B.nIns ){
      /* where the inserts land, before anything changes; a huge group (a
      ** burst of keys into one gap, e.g. sorted appends) is cheaper to
      ** rebuild than to insert one by one */
      if( (rc = locateGroups(p, P, 0, B.nIns, ptr<i64>(p->gK0), &nG0, &maxG)) ) return rc;
      if( p->rebuildMode==0 && (uint64_t)maxG>count/2000 + 512 ) bRebuild = true;
    }
    if( bRebuild ){
      rc = rebuild(p, B.nIns, ptr<i64>(p->gK0), ptr<u64>(p->gV0), B.nDel, B.delKeys, nUpd, B.updLoc, B.updVal);
      if( rc ) return rc;
    }else{
      B.rl[0] = ptr<Item>(p->rl0); B.rl[1] = ptr<Item>(p->rl1); B.rlCap = (uint32_t)rlCap;
      B.dr = ptr<Item>(p->dr); B.drCap = (uint32_t)drCap;
      if( (rc = applyIncremental(p, B, nUpd, R, nG0)) ) return rc;
      p->last.nSplit = p->hs.bc.nSplit;
      p->last.nMerge = p->hs.bc.nMerge;
    }
  }
  p->dirLevel = -1;
  if( (rc = readState(p)) ) return rc;
  p->last.nLevels = p->hs.nLevels;
  p->last.nChunks = p->cap - (uint64_t)p->hs.freeTop;
  return deviceErr(p);
}

/* Bulk build from device arrays (sorted or not) of keys not in the store. */
int bulkDev(GfslStore *p, size_t n, const i64 *dKey, const u64 *dVal, int bSorted){
  int rc;
  memset(&p->last, 0, sizeof(p->last));
  if( n==0 ) return GPUDS_OK;
  if( n>0x7fffffffu ) return setMsg(p, GPUDS_ERROR, "gfsl: bulk load of %zu keys is too large", n);
  const i64 *K = dKey;
  const u64 *V = dVal;
  if( !bSorted ){
    if( (rc = ensureBuf(p, p->insK, n*8)) || (rc = ensureBuf(p, p->insV, n*8)) ) return rc;
    size_t tb = 0;
    GFSL_CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, dKey, ptr<i64>(p->insK), dVal, ptr<u64>(p->insV),
                                            (int64_t)n, 0, 64, p->st));
    if( (rc = ensureTmp(p, tb)) ) return rc;
    tb = p->tmp.cap;
    GFSL_CK(cub::DeviceRadixSort::SortPairs(p->tmp.p, tb, dKey, ptr<i64>(p->insK), dVal, ptr<u64>(p->insV),
                                            (int64_t)n, 0, 64, p->st));
    K = ptr<i64>(p->insK); V = ptr<u64>(p->insV);
  }
  rc = rebuild(p, n, K, V, 0, nullptr, 0, nullptr, nullptr);
  if( rc ) return rc;
  p->last.nInsert = n;
  p->last.nLevels = p->hs.nLevels;
  p->last.nChunks = p->cap - (uint64_t)p->hs.freeTop;
  return deviceErr(p);
}

/* Reject calls on a store an earlier internal failure left unusable. */
int checkUsable(GfslStore *p){
  if( !p->broken ) return GPUDS_OK;
  if( !p->zErr[0] ) setMsg(p, GPUDS_ERROR, "gfsl: store is no longer usable after an earlier error");
  return GPUDS_ERROR;
}

/************************** gpuds_store_ops *********************************/

void gfslDestroy(gpuds_store *pStore);

int gfslCreate(gpuds_store **ppStore, char **pzErr){
  *ppStore = nullptr;
  char zDev[256];
  auto fail = [&](const char *zMsg) -> int {
    if( pzErr ){
      *pzErr = (char*)malloc(strlen(zMsg)+1);
      if( *pzErr ) strcpy(*pzErr, zMsg);
    }
    return GPUDS_ERROR;
  };
  if( !gpudsCudaDevice(zDev, sizeof(zDev), nullptr, nullptr) ) return fail(zDev);
  GfslStore *p = new (std::nothrow) GfslStore();
  if( !p ){ if( pzErr ) *pzErr = nullptr; return GPUDS_NOMEM; }
  p->dirLevel = -1;
  p->stageBytes = 4u<<20;
  p->chunk = gpuds_pipe::defaultChunk();
  p->rebuildMode = gpudsConfig()->eGfslRebuild;
  cudaError_t e = cudaDeviceGetAttribute(&p->nSM, cudaDevAttrMultiProcessorCount, 0);
  if( e==cudaSuccess ) e = cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking);
  if( e==cudaSuccess ) e = cudaMallocHost(&p->hsPin, sizeof(DevState));
  if( e==cudaSuccess ) e = cudaMalloc(&p->ds, sizeof(DevState));
  p->cap = 1024;
  if( e==cudaSuccess ) e = cudaMalloc(&p->pool, (size_t)p->cap*sizeof(Chunk));
  if( e==cudaSuccess ) e = cudaMalloc(&p->freeList, (size_t)p->cap*sizeof(uint32_t));
  if( e==cudaSuccess ) e = cudaEventCreateWithFlags(&p->ev[0], cudaEventDisableTiming);
  if( e==cudaSuccess ) e = cudaEventCreateWithFlags(&p->ev[1], cudaEventDisableTiming);
  if( e==cudaSuccess ){
    /* pinned staging is an optimisation: go without it if it fails */
    if( cudaMallocHost(&p->stage[0], p->stageBytes)!=cudaSuccess
     || cudaMallocHost(&p->stage[1], p->stageBytes)!=cudaSuccess ){
      cudaGetLastError();
      if( p->stage[0] ) cudaFreeHost(p->stage[0]);
      p->stage[0] = p->stage[1] = nullptr;
    }
  }
  if( e==cudaSuccess ){
    /* empty store: level 0 is one chunk, head and last, no key */
    DevState ds;
    memset(&ds, 0, sizeof(ds));
    for( int l=0; l<MAXLVL; l++ ) ds.head[l] = NIL;
    ds.head[0] = 0; ds.nLevels = 1; ds.levelChunks[0] = 1; ds.freeTop = (int)p->cap-1;
    e = cudaMemsetAsync(p->pool, 0, (size_t)p->cap*sizeof(Chunk), p->st);
    if( e==cudaSuccess ){
      kFillFree<<<1, 256, 0, p->st>>>(p->freeList, 0, p->cap-1, p->cap);
      e = cudaGetLastError();
    }
    Chunk c0;
    memset(&c0, 0, sizeof(c0));
    c0.next = NIL; c0.meta = M_LIVE|M_HEAD|M_LAST;
    if( e==cudaSuccess ) e = cudaMemcpyAsync(p->pool, &c0, sizeof(c0), cudaMemcpyHostToDevice, p->st);
    if( e==cudaSuccess ) e = cudaStreamSynchronize(p->st);
    if( e==cudaSuccess ) e = cudaMemcpyAsync(p->ds, &ds, sizeof(ds), cudaMemcpyHostToDevice, p->st);
    if( e==cudaSuccess ) e = cudaStreamSynchronize(p->st);
    if( e==cudaSuccess ) memcpy(&p->hs, &ds, sizeof(ds));
  }
  if( e!=cudaSuccess ){
    char zMsg[300];
    snprintf(zMsg, sizeof(zMsg), "gfsl: cannot create store: %s", cudaGetErrorString(e));
    int rc = gfslCudaCode(e);
    cudaGetLastError();
    gfslDestroy((gpuds_store*)p);
    fail(zMsg);
    return rc;
  }
  *ppStore = (gpuds_store*)p;
  return GPUDS_OK;
}

void gfslDestroy(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  if( !p ) return;
  if( p->st ) cudaStreamSynchronize(p->st);
  DBuf *a[] = { &p->wOp, &p->wKey, &p->wVal, &p->wFound, &p->wOld, &p->ukA, &p->ukB,
    &p->pA, &p->pB, &p->netVal, &p->netH, &p->flIns, &p->flDel, &p->insPos, &p->delPos,
    &p->delKeys, &p->updLoc, &p->updVal, &p->rl0, &p->rl1, &p->dr, &p->tmp, &p->exK, &p->exV,
    &p->exF, &p->kpK, &p->kpV, &p->finK, &p->finV, &p->upK0, &p->upK1, &p->upD0, &p->upD1,
    &p->dirIdx, &p->dirIdxT, &p->dirFence, &p->dirFenceT, &p->dirCnt, &p->dirPre, &p->dirFlag,
    &p->scanK, &p->scanV, &p->chkFound, &p->chkVal, &p->insK, &p->insV,
    &p->gK0, &p->gK1, &p->gV0, &p->gV1, &p->gT, &p->gF, &p->gH };
  for( DBuf *b : a ) if( b->p ) cudaFree(b->p);
  gpuds_pipe::release(p->pipe);
  for( auto &sl : p->pl ) for( DBuf &b : sl ) if( b.p ) cudaFree(b.p);
  if( p->pool ) cudaFree(p->pool);
  if( p->freeList ) cudaFree(p->freeList);
  if( p->ds ) cudaFree(p->ds);
  if( p->hsPin ) cudaFreeHost(p->hsPin);
  if( p->stage[0] ) cudaFreeHost(p->stage[0]);
  if( p->stage[1] ) cudaFreeHost(p->stage[1]);
  if( p->ev[0] ) cudaEventDestroy(p->ev[0]);
  if( p->ev[1] ) cudaEventDestroy(p->ev[1]);
  if( p->st ) cudaStreamDestroy(p->st);
  cudaGetLastError();
  delete p;
}

int gfslBatch(gpuds_store *pStore, size_t n, const uint8_t *aOp, const int64_t *aKey,
              const uint64_t *aVal, uint8_t *aFound, uint64_t *aOld){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( n==0 ) return GPUDS_OK;
  bool anyMod = false;
  for( size_t i=0; i<n; i++ ){
    if( aOp[i]>GPUDS_OP_DELETE ) return setMsg(p, GPUDS_MISUSE, "gfsl: invalid operation code %u at %zu", aOp[i], i);
    if( aOp[i]!=GPUDS_OP_LOOKUP ) anyMod = true;
  }
  if( (rc = ensureBuf(p, p->wKey, n*8)) || (rc = ensureBuf(p, p->wFound, n))
   || (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
  if( anyMod && ((rc = ensureBuf(p, p->wOp, n)) || (rc = ensureBuf(p, p->wVal, n*8))) ) return rc;
  if( (rc = h2d(p, p->wKey.p, aKey, n*8)) ) return rc;
  if( !anyMod ){
    rc = lookupDev(p, n, ptr<i64>(p->wKey), ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld));
  }else{
    if( (rc = h2d(p, p->wOp.p, aOp, n)) ) return rc;
    if( aVal ){ if( (rc = h2d(p, p->wVal.p, aVal, n*8)) ) return rc; }
    else GFSL_CK(cudaMemsetAsync(p->wVal.p, 0, n*8, p->st));
    rc = batchDev(p, n, ptr<uint8_t>(p->wOp), ptr<i64>(p->wKey), ptr<u64>(p->wVal),
                  ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld));
  }
  if( rc ) return rc;
  if( aFound && (rc = d2h(p, aFound, p->wFound.p, n)) ) return rc;
  if( aOld && (rc = d2h(p, aOld, p->wOld.p, n*8)) ) return rc;
  return GPUDS_OK;
}

int gfslLookup(gpuds_store *pStore, size_t n, const int64_t *aKey, uint8_t *aFound, uint64_t *aVal){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( n==0 ) return GPUDS_OK;
  if( p->chunk && n>p->chunk && n<=0x7fffffffu ){
    /* big batches: the chunked pipeline (hostpipe.cuh) */
    bool done = false;
    rc = lookupPipelined(p, n, aKey, aFound, aVal, &done);
    if( done ) return rc;
  }
  /* single-shot: keys up through the staging buffers, one lookupDev, results
  ** down */
  if( (rc = ensureBuf(p, p->wKey, n*8)) || (rc = ensureBuf(p, p->wFound, n))
   || (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
  if( (rc = h2d(p, p->wKey.p, aKey, n*8)) ) return rc;
  if( (rc = lookupDev(p, n, ptr<i64>(p->wKey), ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld))) ) return rc;
  if( aFound && (rc = d2h(p, aFound, p->wFound.p, n)) ) return rc;
  if( aVal && (rc = d2h(p, aVal, p->wOld.p, n*8)) ) return rc;
  return GPUDS_OK;
}

int gfslScan(gpuds_store *pStore, gpuds_scan *s, size_t nMax, int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  *pnOut = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( s->done ) return GPUDS_OK;
  if( s->lo>s->hi ){ s->done = 1; return GPUDS_OK; }
  /* size the page: at most nMax, at most the keys in the store */
  size_t cap = (size_t)std::min<u64>((u64)nMax, p->hs.levelKeys[0]);
  if( (rc = ensureBuf(p, p->scanK, cap*8+8)) || (rc = ensureBuf(p, p->scanV, cap*8+8)) ) return rc;
  size_t take = 0;
  if( (rc = scanPage(p, s, cap, ptr<i64>(p->scanK), ptr<u64>(p->scanV), &take, nullptr)) ) return rc;
  if( (rc = d2h(p, aKey, p->scanK.p, take*8)) ) return rc;
  if( aVal && (rc = d2h(p, aVal, p->scanV.p, take*8)) ) return rc;
  *pnOut = take;
  if( take>0 ) scanAdvance(s, take, (i64)aKey[take-1]);
  return GPUDS_OK;
}

int gfslBulkLoad(gpuds_store *pStore, size_t n, const int64_t *aKey, const uint64_t *aVal){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( n==0 ) return GPUDS_OK;
  for( size_t i=1; i<n; i++ ){
    if( aKey[i-1]>=aKey[i] ) return setMsg(p, GPUDS_MISUSE, "gfsl: bulk load keys not strictly ascending at %zu", i);
  }
  if( (rc = ensureBuf(p, p->wKey, n*8)) || (rc = ensureBuf(p, p->wVal, n*8))
   || (rc = ensureBuf(p, p->wFound, n)) ) return rc;
  if( (rc = h2d(p, p->wKey.p, aKey, n*8)) ) return rc;
  if( aVal ){ if( (rc = h2d(p, p->wVal.p, aVal, n*8)) ) return rc; }
  else GFSL_CK(cudaMemsetAsync(p->wVal.p, 0, n*8, p->st));
  uint64_t count = p->hs.levelKeys[0];
  bool bRebuild = p->rebuildMode!=1 && (count==0 || (uint64_t)n*2>=count);
  if( bRebuild && count>0 ){
    /* the contract says no key is present; if one is, take the batch path
    ** (same result as upserts) rather than hold a key twice */
    if( (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
    if( (rc = lookupDev(p, n, ptr<i64>(p->wKey), ptr<uint8_t>(p->wFound), nullptr)) ) return rc;
    if( (rc = ensureBuf(p, p->wOp, n)) ) return rc;
    /* any found?  reuse kStats on the found flags as "ops" */
    kInitBatch<<<1, 32, 0, p->st>>>(p->ds);
    GFSL_CKL("kInitBatch");
    kStats<<<gridFor(p, n), 256, 0, p->st>>>(n, ptr<uint8_t>(p->wFound), ptr<i64>(p->wKey), p->ds);
    GFSL_CKL("kStats");
    if( (rc = readState(p)) ) return rc;
    if( p->hs.bc.opMax ) bRebuild = false;
  }
  if( bRebuild ) return bulkDev(p, n, ptr<i64>(p->wKey), ptr<u64>(p->wVal), 1);
  if( (rc = ensureBuf(p, p->wOp, n)) || (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
  GFSL_CK(cudaMemsetAsync(p->wOp.p, GPUDS_OP_UPSERT, n, p->st));
  return batchDev(p, n, ptr<uint8_t>(p->wOp), ptr<i64>(p->wKey), ptr<u64>(p->wVal),
                  ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld));
}

int64_t gfslCount(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  return (int64_t)p->hs.levelKeys[0];
}

void gfslInfo(gpuds_store *pStore, char *zBuf, size_t nBuf){
  GfslStore *p = (GfslStore*)pStore;
  if( !zBuf || nBuf==0 ) return;
  snprintf(zBuf, nBuf, "{\"structure\":\"gfsl\",\"keys\":%lld,\"chunks_used\":%llu,"
           "\"levels\":%d,\"device_bytes\":%llu}",
           (long long)p->hs.levelKeys[0], (unsigned long long)(p->cap - (uint64_t)p->hs.freeTop),
           p->hs.nLevels, (unsigned long long)deviceBytes(p));
}

/* Invariant checker (see the list in gfslCheck's body). */
int gfslCheckImpl(GfslStore *p){
  int rc;
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  DevState hs = p->hs;
  if( hs.nLevels<1 || hs.nLevels>MAXLVL ) return setMsg(p, GPUDS_ERROR, "gfsl check: bad level count %d", hs.nLevels);
  KP P = kp(p);
  /* 1. chunk states and the free list */
  GFSL_CK(cudaMemsetAsync(&p->ds->chk, 0, sizeof(CheckRes), p->st));
  kCheckStates<<<gridFor(p, p->cap), 256, 0, p->st>>>(P, hs.freeTop);
  GFSL_CKL("kCheckStates");
  if( (rc = readState(p)) ) return rc;
  CheckRes c = p->hs.chk;
  uint64_t liveWant = 0;
  for( int l=0; l<hs.nLevels; l++ ) liveWant += (uint64_t)hs.levelChunks[l];
  if( c.nZombie ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u zombie chunks left between batches", c.nZombie);
  if( c.nLive!=liveWant ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u live chunks, level counters say %llu",
                                        c.nLive, (unsigned long long)liveWant);
  if( c.nFree!=(unsigned)hs.freeTop ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u free chunks, free list holds %d",
                                                    c.nFree, hs.freeTop);
  if( c.nBadFree ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u free-list entries name chunks in use", c.nBadFree);
  /* 2. every level: sorted, fences right, linked in fence order from its
  ** head, counts right; every index key leads to its key below */
  static const char *azCode[] = { "", "level field wrong", "count > 30", "left locked",
    "head chunk wrong", "last chunk wrong", "empty inner chunk", "fences not increasing",
    "next pointer does not lead to the following chunk", "keys unsorted / above max / not above previous max",
    "down pointer to a chunk that is not live on the level below", "down walk broken",
    "index key missing on the level below", "key not found by search from the top",
    "search from the top found a different value" };
  for( int l=0; l<hs.nLevels; l++ ){
    p->dirLevel = -1;
    if( (rc = buildDir(p, l)) ) return rc;
    if( p->nDir!=(uint32_t)hs.levelChunks[l] ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: level %d has %u live chunks, counter says %d",
                    l, p->nDir, hs.levelChunks[l]);
    }
    GFSL_CK(cudaMemsetAsync(&p->ds->chk, 0, sizeof(CheckRes), p->st));
    kCheckLevel<<<gridWarps(p, p->nDir), 256, 0, p->st>>>(P, l, ptr<uint32_t>(p->dirIdx), ptr<i64>(p->dirFence), p->nDir);
    GFSL_CKL("kCheckLevel");
    if( l>0 ){
      kCheckIndex<<<gridFor(p, (size_t)p->nDir*32), 256, 0, p->st>>>(P, l, ptr<uint32_t>(p->dirIdx), p->nDir);
      GFSL_CKL("kCheckIndex");
    }
    if( (rc = readState(p)) ) return rc;
    c = p->hs.chk;
    if( c.code ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: level %d, chunk %u (position %d, key %lld): %s",
                    c.level, c.chunk, c.pos, (long long)c.key, c.code<15 ? azCode[c.code] : "?");
    }
    if( c.sum!=hs.levelKeys[l] ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: level %d holds %llu keys, counter says %llu",
                    l, (unsigned long long)c.sum, (unsigned long long)hs.levelKeys[l]);
    }
  }
  /* 3. every bottom-level key is found by a search from the top */
  p->dirLevel = -1;
  if( (rc = buildDir(p, 0)) ) return rc;
  uint64_t n = hs.levelKeys[0];
  if( n>0 ){
    if( (rc = ensureBuf(p, p->exK, n*8)) || (rc = ensureBuf(p, p->exV, n*8))
     || (rc = ensureBuf(p, p->chkFound, n)) || (rc = ensureBuf(p, p->chkVal, n*8)) ) return rc;
    kScanCopy<<<gridWarps(p, p->nDir), 256, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<u64>(p->dirPre), 0,
                                                        p->nDir, 0, n, 0, ptr<i64>(p->exK), ptr<u64>(p->exV));
    GFSL_CKL("kScanCopy");
    if( (rc = launchLookup(p, P, n, ptr<i64>(p->exK), ptr<uint8_t>(p->chkFound), ptr<u64>(p->chkVal))) ) return rc;
    GFSL_CK(cudaMemsetAsync(&p->ds->chk, 0, sizeof(CheckRes), p->st));
    kCheckFound<<<gridFor(p, n), 256, 0, p->st>>>(n, ptr<i64>(p->exK), ptr<u64>(p->exV), ptr<uint8_t>(p->chkFound),
                                                  ptr<u64>(p->chkVal), p->ds);
    GFSL_CKL("kCheckFound");
    if( (rc = readState(p)) ) return rc;
    if( (rc = deviceErr(p)) ) return rc;
    c = p->hs.chk;
    if( c.code ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: key %lld (rank %d): %s", (long long)c.key, c.pos,
                    azCode[c.code]);
    }
  }
  return GPUDS_OK;
}

int gfslCheck(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return gfslCheckImpl(p);
}

const char *gfslErrmsg(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  return p ? p->zErr : "";
}

}  // namespace

extern "C" const gpuds_store_ops gpudsCudaOrderedOps = {
  "cuda",
  GPUDS_ORDERED,
  gfslCreate,
  gfslDestroy,
  gfslBatch,
  gfslLookup,
  gfslScan,
  gfslBulkLoad,
  gfslCount,
  gfslInfo,
  gfslCheck,
  gfslErrmsg,
};

/*************************** gfsl:: entry points ****************************/

namespace gfsl {

cudaStream_t stream(gpuds_store *pStore){ GfslStore *p = (GfslStore*)pStore; return p->st; }

int batchDevice(gpuds_store *pStore, size_t n, const uint8_t *dOp, const int64_t *dKey,
                const uint64_t *dVal, uint8_t *dFound, uint64_t *dOld){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return batchDev(p, n, dOp, reinterpret_cast<const i64*>(dKey), reinterpret_cast<const u64*>(dVal),
                  dFound, reinterpret_cast<u64*>(dOld));
}

int lookupDevice(gpuds_store *pStore, size_t n, const int64_t *dKey, uint8_t *dFound, uint64_t *dVal){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return lookupDev(p, n, reinterpret_cast<const i64*>(dKey), dFound, reinterpret_cast<u64*>(dVal));
}

int bulkBuildDevice(gpuds_store *pStore, size_t n, const int64_t *dKey, const uint64_t *dVal, int bSorted){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return bulkDev(p, n, reinterpret_cast<const i64*>(dKey), reinterpret_cast<const u64*>(dVal), bSorted);
}

int scanDevice(gpuds_store *pStore, gpuds_scan *s, size_t nMax, int64_t *dKey, uint64_t *dVal, size_t *pnOut){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  *pnOut = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  if( s->done ) return GPUDS_OK;
  if( s->lo>s->hi ){ s->done = 1; return GPUDS_OK; }
  i64 last = 0;
  size_t take = 0;
  rc = scanPage(p, s, nMax, reinterpret_cast<i64*>(dKey), reinterpret_cast<u64*>(dVal), &take, &last);
  if( rc ) return rc;
  *pnOut = take;
  if( take>0 ) scanAdvance(s, take, last);
  return GPUDS_OK;
}

int prepareScan(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return buildDir(p, 0);
}

void setMemLimit(gpuds_store *pStore, uint64_t nByte){ GfslStore *p = (GfslStore*)pStore; p->memLimit = nByte; }
void setRebuildMode(gpuds_store *pStore, int mode){ GfslStore *p = (GfslStore*)pStore; p->rebuildMode = mode; }
void setLookupVariant(gpuds_store *pStore, int v){ GfslStore *p = (GfslStore*)pStore; p->lookupVariant = v; }
void setHostChunk(gpuds_store *pStore, size_t nKeys){
  GfslStore *p = (GfslStore*)pStore;
  p->chunk = nKeys>gpuds_pipe::kMaxChunk ? gpuds_pipe::kMaxChunk : nKeys;
}
void lastBatchStats(gpuds_store *pStore, BatchStats *s){ GfslStore *p = (GfslStore*)pStore; *s = p->last; }

}  // namespace gfsl
