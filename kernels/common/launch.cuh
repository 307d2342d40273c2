// kernels/common/launch.cuh -- the one grid-size helper of the CUDA stores.
//
// Kernels of both stores are grid-stride loops in blocks of kBlock threads.
// gridFor(p, nThreads[, kernel]) gives the blocks for nThreads threads:
// enough to cover them, but no more than the GPU holds at once (p->nSM SMs
// times the blocks an SM runs at a time), so that the grid-stride loop, not
// the block scheduler, spreads big inputs.  Blocks per SM: the kernel's
// occupancy when the kernel is given (cudaOccupancy...), else the store's
// Store::kBlocksPerSM.
#pragma once

#include <cuda_runtime.h>
#include <cstddef>

namespace gpuds_launch {

// Threads per block of every grid-stride kernel (kernels declare
// __launch_bounds__(kBlock)).
constexpr int kBlock = 256;

// Blocks for nThreads threads: ceil(nThreads/kBlock), at most nSM*perSM, at
// least 1.
inline unsigned gridBlocks(int nSM, int perSM, size_t nThreads){
  size_t b = (nThreads + kBlock - 1)/kBlock;
  const size_t mx = (size_t)nSM*(size_t)perSM;
  if( b>mx ) b = mx;
  return b ? (unsigned)b : 1u;
}

// Blocks of kBlock threads of `kernel` one SM runs at once, or `fallback`
// when the runtime cannot say (the error is cleared: a grid size is never a
// reason to fail).
inline int residentBlocks(const void *kernel, int fallback){
  int occ = 0;
  if( cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, kBlock, 0)==cudaSuccess
      && occ>0 ) return occ;
  (void)cudaGetLastError();
  return fallback;
}

// The grid of a grid-stride launch over nThreads threads on store p's GPU.
template<class Store>
unsigned gridFor(const Store *p, size_t nThreads, const void *kernel = nullptr){
  const int perSM = kernel ? residentBlocks(kernel, Store::kBlocksPerSM) : Store::kBlocksPerSM;
  return gridBlocks(p->nSM, perSM, nThreads);
}

// The grid of a launch with one warp per item, nWarps items.
template<class Store>
unsigned gridWarps(const Store *p, size_t nWarps){ return gridFor(p, nWarps*32); }

}  // namespace gpuds_launch
