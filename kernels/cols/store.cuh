// kernels/cols/store.cuh -- the host column set CudaCols (its arrays,
// stream, workspaces and pinned buffer) and the helpers that hold its
// memory: the CUDA error record, device allocations through the shared
// accountant, growing workspaces, the pinned buffer, grid sizes.
//
// Part of the CUDA column set's one translation unit (kernels/cols.cu,
// where the design is described).
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "gpuds_backend.h"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "common/launch.cuh"
#include "cols/layout.cuh"

struct CudaCols {
  int nCol;
  int64_t n;
  int bSorted;
  int64_t *dKey;
  uint64_t *dRow;
  uint8_t *dTag;
  uint64_t *dVal;
  cudaStream_t st;
  int nSM;
  DevBuf par;            // Hdr | terms | skip list | top-k histogram
  DevBuf sel, sort, out, tmp;
  void *hPin;            // pinned: Hdr read back | Hdr, terms, skip list going up
  void *dPin;            // hPin as the device sees it (mapped), or NULL
  size_t nPin;
  gpuds_mem::DevMem mem; // device bytes held, and the test hooks
  int64_t nFewMax;       // few(): most results it returns (kFewMax; tests lower it)
  ColIdx *aIdx;          // per column, its equality index (nCol, calloc()ed)
  DevBuf aSt, aW, aP, res; // xAgg: row classes; counted rows and groups; states; result
  int aggForceL;         // test hook: never dense group numbers (path W) where keys are, no kAggOne
  int64_t aggLaneRows;   // test hook: rows a lane steps in a chunk (path L; 0: default)
  int64_t aggR2BlockMax; // test hook: groups up to which a block merges a group (0: default)
  int aggYBatch;         // test hook: most state aggregates a launch takes (0: no limit)
  bool aggTime;          // test hook: time xAgg on the stream (aggEv) into aggMs
  cudaEvent_t aggEv[2];
  float aggMs;
  char zErr[512];
};

namespace {

CudaCols *cc(gpuds_cols *p){ return (CudaCols*)p; }

// Record the failed CUDA call on p and return its GPUDS_* code: GPUDS_NOMEM
// for an allocation failure, GPUDS_ERROR otherwise.  Waits for p's stream
// so that nothing is left in flight, and clears the runtime's last error.
int gpudsCudaFail(CudaCols *p, cudaError_t e, const char *zWhat, const char *zFile, int iLine){
  int rc = gpudsCudaCode(e);
  gpudsCudaMessage(p->zErr, sizeof(p->zErr), "cudacols", e, zWhat, zFile, iLine);
  (void)cudaGetLastError();
  if( p->st ) (void)cudaStreamSynchronize(p->st);
  (void)cudaGetLastError();
  return rc;
}

// Record message z with code rc on p; returns rc.
int colsSetErr(CudaCols *p, int rc, const char *z){
  snprintf(p->zErr, sizeof(p->zErr), "cudacols: %s", z);
  return rc;
}

// Device memory through the shared accountant (kernels/common/devmem.cuh).
cudaError_t devAlloc(CudaCols *p, void **pp, size_t n){
  *pp = nullptr;
  if( n==0 ) return cudaSuccess;
  return gpuds_mem::alloc(p->mem, pp, n);
}

// Free memory from devAlloc (NULL is a no-op).
void devFree(CudaCols *p, void *ptr, size_t n){
  gpuds_mem::release(p->mem, ptr, n);
}

// Make b at least n bytes (contents not kept; grows by 1.25x at least, to
// 2 MiB steps).  On failure b is empty and the code is returned.
int ensure(CudaCols *p, DevBuf &b, size_t n){
  if( n>b.used ) b.used = n;
  if( b.n>=n ) return GPUDS_OK;
  size_t want = n + n/4;
  if( want<n ) want = n;
  want = (want + ((size_t)2<<20) - 1) & ~(((size_t)2<<20) - 1);
  if( want<n ) want = n;
  devFree(p, b.p, b.n);
  b.p = nullptr; b.n = 0;
  cudaError_t e = devAlloc(p, &b.p, want);
  if( e!=cudaSuccess && want>n ){
    (void)cudaGetLastError();
    e = devAlloc(p, &b.p, n);
    want = n;
  }
  if( e!=cudaSuccess ) return gpudsCudaFail(p, e, "device workspace", __FILE__, __LINE__);
  b.n = want;
  return GPUDS_OK;
}

// Make the pinned buffer at least n bytes (nothing may be in flight on it).
int ensurePin(CudaCols *p, size_t n){
  if( p->nPin>=n ) return GPUDS_OK;
  if( p->hPin ){ (void)cudaFreeHost(p->hPin); p->hPin = nullptr; p->dPin = nullptr; p->nPin = 0; }
  size_t want = n<4096 ? 4096 : n + n/4;
  GPUDS_CK(p, gpuds_mem::allocPinned(&p->hPin, want));
  p->nPin = want;
  // kernels may write results straight into it (kProbe), where it is mapped
  if( cudaHostGetDevicePointer(&p->dPin, p->hPin, 0)!=cudaSuccess ){
    p->dPin = nullptr;
    (void)cudaGetLastError();
  }
  return GPUDS_OK;
}

size_t alignUp(size_t x){ return (x+255) & ~(size_t)255; }

// Blocks for a grid-stride kernel over n items (8 resident blocks an SM).
unsigned gridFor(const CudaCols *p, int64_t n){
  return gpuds_launch::gridBlocks(p->nSM>0 ? p->nSM : 1, 8, n>0 ? (size_t)n : 0);
}

// The query (kernels/cols.cu) for a set whose row numbers fit IdxT.
template<typename IdxT>
int queryT(CudaCols *p, const gpuds_query *q, int64_t *pn, int64_t **paKey,
           uint64_t **paRow, uint64_t **paSort);

}  // namespace
