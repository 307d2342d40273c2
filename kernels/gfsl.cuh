/*
** gfsl.cuh -- internal C++ entry points of the GFSL ordered store
** (kernels/gfsl.cu) for callers that keep their data on the device: the
** benchmark (bench/bench_gfsl.cu) and the test (tests/gpu/test_gfsl.cu).
**
** The SQLite side never uses these; it goes through gpudsCudaOrderedOps
** (gpuds_backend.h), whose functions take ordinary host arrays.
**
** All functions here take DEVICE pointers, run on the store's stream and
** return when the work is complete (GPUDS_OK or a GPUDS_* code with a
** message from xErrmsg).  The same all-or-nothing promise as the public
** interface holds.
*/
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include "gpuds_backend.h"

namespace gfsl {

/* The stream the store's kernels run on (to record CUDA events). */
cudaStream_t stream(gpuds_store *p);

/* xBatch on device arrays (aOp/aKey/aVal/aFound/aOld are device pointers;
** aVal, aFound and aOld may be NULL). */
int batchDevice(gpuds_store *p, size_t n, const uint8_t *dOp,
                const int64_t *dKey, const uint64_t *dVal,
                uint8_t *dFound, uint64_t *dOld);

/* xLookup on device arrays. */
int lookupDevice(gpuds_store *p, size_t n, const int64_t *dKey,
                 uint8_t *dFound, uint64_t *dVal);

/* Bulk build from device arrays of DISTINCT keys, none present in the store.
** If bSorted is 0 the keys are sorted first (CUB radix sort), so the time
** of a call includes the sort. */
int bulkBuildDevice(gpuds_store *p, size_t n, const int64_t *dKey,
                    const uint64_t *dVal, int bSorted);

/* xScan writing the page into device arrays. */
int scanDevice(gpuds_store *p, gpuds_scan *pScan, size_t nMax,
               int64_t *dKey, uint64_t *dVal, size_t *pnOut);

/* Prepare the store for scans (build the ordered directory of bottom-level
** chunks now rather than on the first xScan after a change). */
int prepareScan(gpuds_store *p);

/* Test knobs.  setMemLimit: device bytes the store may hold in all (0: no
** limit); going past it is reported like cudaErrorMemoryAllocation.
** setRebuildMode: 0 = choose (default), 1 = never rebuild a batch from
** scratch (always the concurrent insert/delete kernels), 2 = always. */
void setMemLimit(gpuds_store *p, uint64_t nByte);
void setRebuildMode(gpuds_store *p, int mode);
/* Fault injection (common/devmem.cuh): the k-th device allocation of the
** store from now fails as cudaMalloc does when the GPU is full (k >= 1; 0:
** none; it fires once).  allocCount: the device allocations the store has
** asked for so far (a test learns whether its fault was reached). */
void failAlloc(gpuds_store *p, uint64_t k);
uint64_t allocCount(gpuds_store *p);
/* Lookup path (xLookup, lookup-only batches, lookupDevice; for the chunks
** of the xLookup pipeline see setHostChunk):
**   0 = choose (default): the sorted path (as 3) for batches of >= 2^19
**       lookups, kLookup1 below that;
**   1 = kLookup: unsorted, each warp prefetches 32 keys, searches them one
**       after the other and stores the 32 results coalesced;
**   2 = kLookup1: unsorted, one key per warp iteration;
**   3 = the sorted path for every batch: CUB radix sort of the keys, then
**       kLookupSorted (neighbouring keys share a level-0 chunk held in
**       registers; see gfsl.cu).
** Results never depend on it. */
void setLookupVariant(gpuds_store *p, int variant);
/* xLookup of more than nKeys host keys runs as a pipeline of chunks of nKeys
** (kernels/common/hostpipe.cuh: the host's copy of a chunk's keys into pinned
** memory, its transfers and its lookup overlap those of the chunks around
** it).  Chunks are looked up unsorted (kLookup1; kLookup under variant 1),
** sorted only under variant 3: the pipeline is bound by the host's copies,
** and the span the sort needs costs the host more than the sort saves (see
** lookupPipelined in gfsl.cu).  0: single-shot, the whole batch uploaded,
** looked up (sorted from 2^19 keys under variant 0) and downloaded at once,
** the path before the pipeline.  The default is GPUDS_HOST_CHUNK from the
** environment at xCreate, else 2^19; at most 2^24.  Results never depend on
** it. */
void setHostChunk(gpuds_store *p, size_t nKeys);

/* Figures of the last batch, for tests and the benchmark. */
struct BatchStats {
  uint64_t nInsert, nDelete, nUpdate;   /* net structural changes */
  uint64_t nSplit, nMerge;              /* chunk splits / merges */
  int rebuilt;                          /* 1 if the batch rebuilt the store */
  int nLevels;
  uint64_t nChunks;                     /* live chunks after the batch */
};
void lastBatchStats(gpuds_store *p, BatchStats *pStats);

}  // namespace gfsl
