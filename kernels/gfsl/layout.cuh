/*
** kernels/gfsl/layout.cuh -- device layout: chunk format, constants, the
** device state and the parameter blocks (KP, BP) every kernel takes.
**
** Part of the GFSL store's one translation unit: included by
** kernels/gfsl.cu only (the design is described at its top).
*/
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>

namespace {

/* Warp-level shorthands. */
#define GFSL_FULL_MASK 0xffffffffu
/* Lane of the calling thread in its warp. */
__device__ __forceinline__ int gfslLane(){ return threadIdx.x & 31; }
/* Global warp number and warp count of a 1-D launch (grid-stride loops). */
__device__ __forceinline__ size_t gfslWarpId(){
  return (blockIdx.x*(size_t)blockDim.x + threadIdx.x) >> 5;
}
__device__ __forceinline__ size_t gfslWarpCount(){
  return (gridDim.x*(size_t)blockDim.x) >> 5;
}

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
  unsigned int nDup;                 /* keys repeated in the batch (refused) */
  i64 dupKey;                        /* one of them */
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
  u64 *netVal;                      /* per sorted position: final value (delete: chunk) */
  uint8_t *netH;                    /* per sorted position: highest level holding key */
  uint8_t *flIns, *flDel;           /* per sorted position */
  u64 *updLoc, *updVal;             /* in-place value updates */
  uint32_t *insPos, *delPos;        /* sorted positions to insert / delete */
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

}  // namespace
