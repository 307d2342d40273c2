// hash_util.cuh -- CUDA error checking for the GPU hash store (kernels/hash.cu).
//
// Every CUDA runtime call and every kernel launch in hash.cu goes through
// HASH_CK, which turns a failure into a gpuds result code plus a message in
// the store and jumps to the function's cleanup label `fail`.
#ifndef GPUDS_HASH_UTIL_CUH
#define GPUDS_HASH_UTIL_CUH

#include <cuda_runtime.h>
#include <cstdio>
#include "gpuds_backend.h"

// Map a CUDA error to a gpuds result code and write "gpuhash: WHAT: reason"
// into zErr (nErr bytes).  cudaErrorMemoryAllocation becomes GPUDS_NOMEM,
// everything else GPUDS_ERROR.  Clears the runtime's last-error slot so that
// a recovered (non-sticky) error does not resurface at a later check.
static inline int gpudsHashCudaRc(cudaError_t e, char *zErr, size_t nErr,
                                  const char *zWhat){
  if( e==cudaSuccess ) return GPUDS_OK;
  snprintf(zErr, nErr, "gpuhash: %s: %s (%s)", zWhat, cudaGetErrorString(e),
           e==cudaErrorMemoryAllocation ? "out of GPU memory" : "CUDA error");
  (void)cudaGetLastError();
  return e==cudaErrorMemoryAllocation ? GPUDS_NOMEM : GPUDS_ERROR;
}

// Check a cudaError_t expression; on failure set `rc` and the store's message
// (`p->zErr`) and `goto fail`.  Needs `int rc` and a `fail:` label in scope.
#define HASH_CK(p, expr) do{                                                  \
    cudaError_t e_ = (expr);                                                  \
    if( e_!=cudaSuccess ){                                                    \
      rc = gpudsHashCudaRc(e_, (p)->zErr, sizeof((p)->zErr), #expr);          \
      goto fail;                                                              \
    }                                                                         \
  }while(0)

// Check the launch of the kernel just enqueued (configuration errors, and
// sticky errors left by earlier work).  zName is a string literal.
#define HASH_CK_LAUNCH(p, zName) do{                                          \
    cudaError_t e_ = cudaGetLastError();                                      \
    if( e_!=cudaSuccess ){                                                    \
      rc = gpudsHashCudaRc(e_, (p)->zErr, sizeof((p)->zErr), "launch " zName); \
      goto fail;                                                              \
    }                                                                         \
  }while(0)

#endif // GPUDS_HASH_UTIL_CUH
