// kernels/hash/store.cuh -- the host store GpuHashStore and the functions
// of kernels/hash.cu that the ops table (ops.cuh) and the hooks (hooks.cuh)
// call.
//
// Part of the GPU hash store's one translation unit (kernels/hash.cu,
// where the design is described).
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include "gpuds_backend.h"
#include "hash.cuh"
#include "common/devmem.cuh"
#include "common/hostpipe.cuh"
#include "common/launch.cuh"
#include "hash/layout.cuh"

struct GpuHashStore {
  // Blocks of kBlock threads per SM for grid-stride launches whose
  // occupancy is not asked for (gridFor without a kernel): 2048 threads,
  // what an SM holds at once.
  static constexpr int kBlocksPerSM = 2048/gpuds_launch::kBlock;
  Table T;               // the table (device)
  Meta *dMeta;           // device counters
  Meta h;                // host mirror of *dMeta, valid between calls
  gpuds_mem::DevMem mem; // every device allocation, counted (table + meta + scratch)
  gpuds_mem::DBuf scratch;     // reusable device scratch (batches, scans, checks)
  cudaStream_t st;
  gpuds_pipe::HostPipe pipe;   // every staged host<->device copy (common/hostpipe.cuh)
  size_t chunk;          // keys per chunk; host batches of more go through pipe
  uint64_t nRehash;
  int nSM;
  char zErr[512];
};

// Record a failed CUDA call on store p (see common/check.cuh).
int gpudsCudaFail(GpuHashStore *p, cudaError_t e, const char *zWhat, const char *zFile, int iLine);

namespace {

using gpuds_launch::kBlock;
using gpuds_launch::gridFor;

// Lookup kernel choice (tuning knob, see gpuds_hash::setLookupIlp).
int gLookupIlp = 2;

// x rounded up to 256 bytes (the offsets of a scratch buffer's parts).
inline size_t alignUp(size_t x){ return (x+255)&~(size_t)255; }

// The host store's functions (kernels/hash.cu) that the ops table and the
// hooks call; each is described where it is defined.
void devFree(GpuHashStore *p, void *ptr, size_t n);
int setErr(GpuHashStore *p, int rc, const char *zMsg);
ull bucketsFor(ull nKeys, double load);
ull sidesPresent(const GpuHashStore *p);
int ensureScratch(GpuHashStore *p, size_t n);
int readMeta(GpuHashStore *p);
int rehash(GpuHashStore *p, ull newNb);
int hostBatch(GpuHashStore *p, size_t n, const uint8_t *aOp, int defOp,
              const int64_t *aKey, const uint64_t *aVal, uint8_t *aFound,
              uint64_t *aOld);
int hostLookup(GpuHashStore *p, size_t n, const int64_t *aKey, uint8_t *aFound,
               uint64_t *aVal);
int deviceBatch(GpuHashStore *p, size_t n, const uint8_t *dOp, int defOp,
                const ull *dKey, const ull *dVal, uint8_t *dFound, ull *dOld);

}  // namespace
