// hash.cuh -- internal C++ interface of the GPU hash store (kernels/hash.cu).
//
// The SQLite side only sees gpudsCudaHashOps (gpuds_backend.h).  This header
// adds what tests and benchmarks need beyond it: the table's layout constants
// (the sentinel key patterns, so tests can use them as user keys) and entry
// points that take DEVICE-resident arrays, so a benchmark can time kernels
// without host<->device copies.  All of them are synchronous: they return once
// the work is finished, with the same all-or-nothing error behaviour as the
// ops (GPUDS_OK, GPUDS_NOMEM, GPUDS_ERROR, GPUDS_MISUSE; message in xErrmsg).
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuds_backend.h"

namespace gpuds_hash {

// Layout: a bucket is 64 bytes: 4 slots of (key, value), two buckets per
// 128-byte cache line.  A slot's key word doubles as its state: kEmptyKey
// (never used) or kTombKey (deleted); user keys equal to those two bit
// patterns live in two side slots instead, so the full int64 range stays
// available.
constexpr int      kSlotsPerBucket = 4;
constexpr uint64_t kEmptyKey = 0xFEFEFEFEFEFEFEFEull;   // memset(0xFE) pattern
constexpr uint64_t kTombKey  = 0xFEFEFEFEFEFEFEFDull;

// Load policy (fractions of slots).  Before a batch, if (used slots incl.
// tombstones + upserts in the batch) would exceed kMaxLoad, the table is
// rehashed to kGrowLoad for the keys it will hold (or purged of tombstones
// at its size when that suffices).  After a batch that leaves fewer than
// kShrinkLoad of the slots holding keys, it is rehashed down to kGrowLoad.
constexpr double   kMaxLoad    = 0.85;
constexpr double   kGrowLoad   = 0.5;
constexpr double   kShrinkLoad = 0.125;
// A bulk load into an empty table (a reload) sizes it for this load: the
// keys it holds are all it has (24 B of table a key rather than 32 at
// kGrowLoad); later upserts grow it past kMaxLoad as above.
constexpr double   kBulkLoad   = 0.7;
constexpr uint64_t kMinBuckets = 128;

// Mixed batch of distinct keys on device arrays (same semantics and contract
// as xBatch): one kernel.  dVal may be NULL (all values 0); dFound/dOld may be
// NULL.
int batchDevice(gpuds_store *p, size_t n, const uint8_t *dOp,
                const int64_t *dKey, const uint64_t *dVal,
                uint8_t *dFound, uint64_t *dOld);

// Lookups on device arrays (same semantics as xLookup).
int lookupDevice(gpuds_store *p, size_t n, const int64_t *dKey,
                 uint8_t *dFound, uint64_t *dVal);

// Upserts of n distinct keys (keys may or may not be present already), as
// xBulkLoad does them.  dFound/dOld may be NULL.
int upsertDistinctDevice(gpuds_store *p, size_t n, const int64_t *dKey,
                         const uint64_t *dVal, uint8_t *dFound,
                         uint64_t *dOld);

// Presize: make room for nKeys keys at load factor `load` (0 < load <=
// kMaxLoad) now, so that inserting up to nKeys keys causes no resize.
int reserve(gpuds_store *p, uint64_t nKeys, double load);

// Number of buckets now (1 bucket = kSlotsPerBucket slots).
uint64_t buckets(gpuds_store *p);

// Number of resizes (rehashes) done since the store was created.
uint64_t rehashCount(gpuds_store *p);

// Testing hook: make device allocations that would bring this store's device
// memory above `bytes` fail as cudaErrorMemoryAllocation would (0 = no limit).
void setDeviceLimit(gpuds_store *p, uint64_t bytes);

// Fault injection (common/devmem.cuh): the k-th device allocation of the
// store from now fails as cudaMalloc does when the GPU is full (k >= 1;
// 0: none; it fires once).  allocCount: the device allocations the store has
// asked for so far (a test learns whether its fault was reached).
void failAlloc(gpuds_store *p, uint64_t k);
uint64_t allocCount(gpuds_store *p);

// Tuning knob (benchmarks): lookups run 1 or 2 operations per tile per
// iteration (default 2).  Process-wide; results do not depend on it.
void setLookupIlp(int nOps);

// The stream this store's work runs on (for timing with CUDA events).
cudaStream_t stream(gpuds_store *p);

// Host-array batches of more than nKeys keys move in chunks of nKeys through
// two pinned buffers (kernels/common/hostpipe.cuh): xLookup as a pipeline (copy-in,
// kernel and copy-out of successive chunks overlap), xBatch/xBulkLoad
// with staged copies (memcpy of one piece overlapping the DMA of
// the other).  0: every batch single-shot (the path before chunking).  The
// default is GPUDS_HOST_CHUNK from the environment at xCreate, else 2^19;
// at most 2^24.  Results never depend on it.
void setHostChunk(gpuds_store *p, size_t nKeys);

}  // namespace gpuds_hash
