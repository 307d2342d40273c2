// kernels/common/check.cuh -- the one way host code of the CUDA stores
// checks a CUDA call.
//
// A CUDA error never aborts: it becomes a SQLite-style code (GPUDS_NOMEM for
// cudaErrorMemoryAllocation, GPUDS_ERROR otherwise) with a message in the
// store.  Every host function of a store that touches CUDA returns a GPUDS_*
// code, and checks each call with
//
//   GPUDS_CK(p, call)          a cudaError_t expression
//   GPUDS_CK_LAUNCH(p, "name") the kernel launch just enqueued
//
// which on failure return gpudsCudaFail(p, e, "what", __FILE__, __LINE__)
// from the enclosing function.  Each store type defines that overload
//
//   int gpudsCudaFail(Store *p, cudaError_t e, const char *zWhat,
//                     const char *zFile, int iLine);
//
// (record the message with gpudsCudaMessage, clear the runtime's last-error
// slot, return gpudsCudaCode(e)).  A function that took something it must
// give back on error (a new table, a pinned buffer in use by copies in
// flight) does its CUDA work in a helper that returns the code, and releases
// in one place when the helper fails; there is no jump form.
#pragma once

#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include "gpuds_backend.h"
#include "common/devmem.cuh"

// The GPUDS_* code for a CUDA error (GPUDS_OK for cudaSuccess).
static inline int gpudsCudaCode(cudaError_t e){
  if( e==cudaSuccess ) return GPUDS_OK;
  return e==cudaErrorMemoryAllocation ? GPUDS_NOMEM : GPUDS_ERROR;
}

// Write "zStore: zWhat: CUDA's text (file:line)" into z (n bytes), the file
// without its directories.  Out of memory, it is why the allocation failed
// first (gpuds_mem::refusalText: the cap, the full GPU...), then "(zStore,
// file:line)": the words the SQLite side gives as the reason a table's
// store or column set is on the host.
static inline void gpudsCudaMessage(char *z, size_t n, const char *zStore, cudaError_t e,
                                    const char *zWhat, const char *zFile, int iLine){
  const char *zBase = strrchr(zFile, '/');
  if( e==cudaErrorMemoryAllocation ){
    char zWhy[256];
    gpuds_mem::refusalText(zWhy, sizeof(zWhy));
    snprintf(z, n, "%s (%s, %s:%d)", zWhy, zStore, zBase ? zBase+1 : zFile, iLine);
    return;
  }
  snprintf(z, n, "%s: %s: %s (%s:%d)", zStore, zWhat, cudaGetErrorString(e),
           zBase ? zBase+1 : zFile, iLine);
}

#define GPUDS_CK(p, call) do{                                               \
    cudaError_t e_ = (call);                                                \
    if( e_!=cudaSuccess ) return gpudsCudaFail((p), e_, #call, __FILE__, __LINE__); \
  }while(0)

#define GPUDS_CK_LAUNCH(p, zName) do{                                       \
    cudaError_t e_ = cudaGetLastError();                                    \
    if( e_!=cudaSuccess ) return gpudsCudaFail((p), e_, "launch " zName, __FILE__, __LINE__); \
  }while(0)
