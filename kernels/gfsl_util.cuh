/*
** gfsl_util.cuh -- small helpers shared by the GFSL store (kernels/gfsl.cu),
** its test and its benchmark: CUDA error checking and warp-level shorthands.
**
** Host code of the store never aborts on a CUDA error: GFSL_CK() turns a
** failed call into a GPUDS_* code (GPUDS_NOMEM for cudaErrorMemoryAllocation,
** GPUDS_ERROR otherwise) with the CUDA message recorded by gfslCudaFail(),
** which kernels/gfsl.cu defines for its store.
*/
#ifndef GFSL_UTIL_CUH
#define GFSL_UTIL_CUH

#include <cuda_runtime.h>
#include <cstdint>
#include "gpuds_backend.h"

#define GFSL_FULL_MASK 0xffffffffu

/* Record a failed CUDA call on store p (message "gfsl: what: CUDA text")
** and return its GPUDS_* code.  Defined in kernels/gfsl.cu. */
struct GfslStore;
int gfslCudaFail(GfslStore *p, cudaError_t e, const char *zWhat, int iLine);

/* The GPUDS_* code for a CUDA error. */
static inline int gfslCudaCode(cudaError_t e){
  if( e==cudaSuccess ) return GPUDS_OK;
  return e==cudaErrorMemoryAllocation ? GPUDS_NOMEM : GPUDS_ERROR;
}

/* Evaluate a CUDA runtime call; on failure return from the enclosing function
** with gfslCudaFail(p, err, "call text").  `p` must name the store. */
#define GFSL_CK(call) do{ cudaError_t e_ = (call); \
  if( e_!=cudaSuccess ) return gfslCudaFail(p, e_, #call, __LINE__); }while(0)

/* Check that the last kernel launch was accepted. */
#define GFSL_CKL(what) do{ cudaError_t e_ = cudaGetLastError(); \
  if( e_!=cudaSuccess ) return gfslCudaFail(p, e_, what, __LINE__); }while(0)

#ifdef __CUDACC__
/* Lane of the calling thread in its warp. */
__device__ __forceinline__ int gfslLane(){ return threadIdx.x & 31; }
/* Global warp number and warp count of a 1-D launch (grid-stride loops). */
__device__ __forceinline__ size_t gfslWarpId(){
  return (blockIdx.x*(size_t)blockDim.x + threadIdx.x) >> 5;
}
__device__ __forceinline__ size_t gfslWarpCount(){
  return (gridDim.x*(size_t)blockDim.x) >> 5;
}
#endif

#endif /* GFSL_UTIL_CUH */
