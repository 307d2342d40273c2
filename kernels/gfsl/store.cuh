/*
** kernels/gfsl/store.cuh -- the host store GfslStore: its tuning constants,
** its device buffers (GFSL_WORKSPACE) and fields, and the functions of
** kernels/gfsl.cu that the ops table (ops.cuh) and the hooks (hooks.cuh)
** call.
**
** Part of the GFSL store's one translation unit (kernels/gfsl.cu, where
** the design is described).
*/
#pragma once

#include <cuda_runtime.h>
#include <climits>
#include <cstddef>
#include <cstdint>
#include "gpuds_backend.h"
#include "gfsl.cuh"
#include "common/devmem.cuh"
#include "common/hostpipe.cuh"
#include "common/launch.cuh"
#include "gfsl/layout.cuh"

namespace {

/* A batch with inserts into a store of fewer keys than this rebuilds the
** whole structure (as a batch inserting at least half the store's keys
** does) instead of running the concurrent insert/delete phases: a small
** store is cheap to rebuild, and a rebuild leaves it at the bulk-build fill.
** (A heuristic kept from the first version; no measurement recorded.) */
constexpr uint64_t kRebuildBelowKeys = 4096;

/* Chunks reserved beyond the computed need of a batch with d deletes, for
** the splits its merges can cause: min(d, kMergeSlackBase + d/kMergeSlackDiv).
** A merge moves keys into a neighbour that may then split; only a fraction
** of the deletes merge, hence d/64, and the base covers small batches.
** (A heuristic kept from the first version; no measurement recorded.) */
constexpr uint64_t kMergeSlackBase = 1024;
constexpr uint64_t kMergeSlackDiv  = 64;

/* Operations in one batch, at most: positions in a batch are 32-bit
** (perm, insPos, delPos, KP/BP counts) and CUB takes int offsets. */
constexpr size_t kMaxBatchOps = 0x7fffffffu;

/* Chunks in one pool, at most: chunk indices are 32-bit and NIL
** (0xffffffff) names no chunk; the top 16 values are kept out of use. */
constexpr uint64_t kMaxPoolChunks = 0xfffffff0ull;

/* Pool sizes.  A new store, and the smallest rebuilt pool, has
** kPoolMinChunks chunks: 1024 * 516 bytes, about half a MiB of device
** memory, which small tables never outgrow.  A grown pool takes a quarter
** more than it needs plus kGrowSlackChunks, a rebuilt one a quarter more
** plus kRebuildSlackChunks: room for inserts before the next growth, which
** copies the pool.  (Kept from the first version; no measurement recorded.) */
constexpr uint32_t kPoolMinChunks = 1024;
constexpr uint64_t kGrowSlackChunks = 1024;
constexpr uint64_t kRebuildSlackChunks = 64;

/* A batch whose largest group of inserts into one chunk (a burst of keys
** into one gap, e.g. sorted appends) has more than count/kGroupRebuildDiv
** + kGroupRebuildBase keys rebuilds instead of inserting: one warp would
** insert the whole group key by key, splitting all the way.  (A heuristic
** kept from the first version; no measurement recorded.) */
constexpr uint64_t kGroupRebuildDiv = 2000;
constexpr uint64_t kGroupRebuildBase = 512;

/* Sorted lookups (kLookupSorted): each warp walks a segment of at most
** kSortedSegMax consecutive sorted keys, but segments are shortened so that
** there are at least about two per warp of kSortedWarpsPerSM warps per SM
** (2048 threads: what an SM holds at once), so small batches of sparse keys
** (a descent each) still spread over the GPU. */
constexpr size_t kSortedSegMax = 128;
constexpr size_t kSortedWarpsPerSM = 64;

using gpuds_launch::kBlock;
using gpuds_launch::gridFor;
using gpuds_launch::gridWarps;
using gpuds_mem::DBuf;
using gpuds_mem::ptr;

}  // namespace

/******************************* host side *********************************/

/* The store's workspace: every device buffer besides the pool, the free
** list and the device state, listed once.  X(name) for each; the store has a
** DBuf of that name, and forEachBuf walks them all (release). */
#define GFSL_WORKSPACE(X) \
  /* xBatch/xLookup inputs and outputs */                                   \
  X(wOp) X(wKey) X(wVal) X(wFound) X(wOld)                                  \
  /* sort double buffers */                                                 \
  X(ukA) X(ukB) X(pA) X(pB)                                                 \
  /* a batch's resolved operations (BP) */                                  \
  X(netVal) X(netH) X(flIns) X(flDel) X(insPos) X(delPos) X(delKeys)        \
  X(updLoc) X(updVal)                                                       \
  /* raise lists, delete raises, CUB temporary storage */                   \
  X(rl0) X(rl1) X(dr) X(tmp)                                                \
  /* rebuild: extracted, kept and final keys, upper levels */               \
  X(exK) X(exV) X(exF) X(kpK) X(kpV) X(finK) X(finV)                        \
  X(upK0) X(upK1) X(upD0) X(upD1)                                           \
  /* scan directory */                                                      \
  X(dirIdx) X(dirIdxT) X(dirFence) X(dirFenceT) X(dirCnt) X(dirPre) X(dirFlag) \
  /* scan pages, the checker, bulk-load sort, insert groups */              \
  X(scanK) X(scanV) X(chkFound) X(chkVal) X(insK) X(insV)                   \
  X(gK0) X(gK1) X(gV0) X(gV1) X(gT) X(gF) X(gH)

struct GfslStore {
  /* Blocks of kBlock threads per SM for grid-stride launches (gridFor):
  ** 16 = 4096 threads, twice what an SM holds at once, so a launch covers
  ** the GPU even where a kernel's occupancy is lower than full.  (Kept from
  ** the first version; no measurement recorded.) */
  static constexpr int kBlocksPerSM = 16;
  cudaStream_t st;
  int nSM;
  gpuds_mem::DevMem mem;        /* every device allocation, counted */
  Chunk *pool;
  uint32_t cap;                 /* chunks in the pool */
  uint32_t *freeList;           /* cap entries */
  DevState *ds;                 /* device state */
  DevState hs;                  /* host copy, refreshed by readState() */
  DevState *hsPin;              /* pinned landing area for readState() */
#define X(name) DBuf name;
  GFSL_WORKSPACE(X)
#undef X
  uint32_t nDir;
  int dirLevel;                 /* level the directory describes, -1: none */
  /* host<->device transfers (common/hostpipe.cuh): the xLookup pipeline's
  ** chunk size, pinned buffers and streams (also the staging of every
  ** other copy), per-slot device buffers (keys, found, values, sort
  ** buffers) */
  size_t chunk;
  gpuds_pipe::HostPipe pipe;
  DBuf pl[2][8];
  /* knobs and state */
  int rebuildMode;
  int lookupVariant;            /* see gfsl::setLookupVariant */
  int broken;
  int mutating;
  gfsl::BatchStats last;
  char zErr[512];
};

/* Record a failed CUDA call on store p (see common/check.cuh). */
int gpudsCudaFail(GfslStore *p, cudaError_t e, const char *zWhat, const char *zFile, int iLine);

/* The host store's functions (kernels/gfsl.cu) that the ops table and the
** hooks call; each is described where it is defined. */
namespace {

int setMsg(GfslStore *p, int rc, const char *zFmt, ...);
template<class F> void forEachBuf(GfslStore *p, F f);
uint64_t deviceBytes(GfslStore *p);
void trimWorkspace(GfslStore *p);
int ensureBuf(GfslStore *p, DBuf &b, size_t nByte);
KP kp(GfslStore *p, int allocFloor = INT_MAX);
int readState(GfslStore *p);
int deviceErr(GfslStore *p);
int h2d(GfslStore *p, void *dst, const void *src, size_t n);
int d2h(GfslStore *p, void *dst, const void *src, size_t n);
int buildDir(GfslStore *p, int level);
int scanPage(GfslStore *p, gpuds_scan *s, size_t nMax, i64 *dK, u64 *dV, size_t *pnOut,
             i64 *pLastKey);
void scanAdvance(gpuds_scan *s, size_t take, i64 lastKey);
int launchLookup(GfslStore *p, const KP &P, size_t n, const i64 *dKey, uint8_t *dFound, u64 *dVal,
                 cudaStream_t st = nullptr);
int lookupDev(GfslStore *p, size_t n, const i64 *dKey, uint8_t *dFound, u64 *dVal,
              bool haveStats = false);
int lookupPipelined(GfslStore *p, size_t n, const int64_t *aKey, uint8_t *aFound, uint64_t *aVal,
                    bool *pDone);
int batchDev(GfslStore *p, size_t n, const uint8_t *dOp, const i64 *dKey, const u64 *dVal,
             uint8_t *dFound, u64 *dOld);
int bulkDev(GfslStore *p, size_t n, const i64 *dKey, const u64 *dVal, int bSorted);
int checkUsable(GfslStore *p);

}  // namespace
