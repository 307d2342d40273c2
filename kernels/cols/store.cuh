// kernels/cols/store.cuh -- the column set CudaCols (its arrays and
// equality indexes, which the calls share) and a call's context ColsCtx (a
// stream, workspaces, a pinned buffer and the error text: what one call
// uses alone), the set's pool of contexts, and the helpers that hold their
// memory: the CUDA error record, device allocations through the shared
// accountant, growing workspaces, the pinned buffer, grid sizes.
//
// THREADS.  xQuery, xAgg, xBytes and xErrmsg may run on one set from
// several threads at once (gpudsCudaColsOps.bConcurrentReads); xLoad and
// xFree never run beside another call.  What makes each shared field safe:
//   - nCol, n, bSorted, nSM, id, nArrayBytes and the arrays dKey, dRow,
//     dTag, dVal: written by xLoad only (and read back by xFree), so every
//     call only reads them, host and device alike;
//   - aIdx: each column's equality index is built once, under muIdx, and
//     published by a release store of its state that the readers load with
//     acquire (kernels/cols/index.cuh); once published it never changes;
//   - mem: atomics (kernels/common/devmem.cuh), so the bytes of the arrays,
//     the indexes and every context's workspaces stay exact;
//   - the pool (pFree, pAll, nCtx, and cvPool's wait): under muPool; a
//     context taken from it belongs to one call until it is given back, so
//     nothing in ColsCtx is shared;
//   - the error text: a failed call's, copied from its context into the
//     calling thread's slot (errSlot) as the context goes back, so xErrmsg
//     on that thread gives it whatever the other threads do;
//   - the test hooks' fields (nFewMax, aggForceL, aggLaneRows,
//     aggR2BlockMax, aggYBatch): set by kernels/cols/hooks.cuh while no
//     call runs on the set (the tests' promise), read by calls; aggTime
//     and aggMs are atomics.
//
// Part of the CUDA column set's one translation unit (kernels/cols.cu,
// where the design is described).
#pragma once

#include <cuda_runtime.h>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <condition_variable>
#include <mutex>
#include <new>

#include "gpuds_backend.h"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "common/launch.cuh"
#include "cols/layout.cuh"

struct CudaCols;

// What one call uses alone: taken from the set's pool for the call
// (ctxTake), given back after it (ctxGive).  Made only where calls overlap
// (the pool holds as many as ran at once, at most kCtxMax), freed with the
// set.
struct ColsCtx {
  CudaCols *set;         // the set it belongs to
  cudaStream_t st;       // every launch and copy of the call
  DevBuf par;            // Hdr | terms | skip list | top-k histogram
  DevBuf sel, sort, out, tmp;
  DevBuf aSt, aW, aP, res; // xAgg: row classes; counted rows and groups; states; result
  void *hPin;            // pinned: Hdr read back | Hdr, terms, skip list going up
  void *dPin;            // hPin as the device sees it (mapped), or NULL
  size_t nPin;
  cudaEvent_t aggEv[2];  // xAgg timing (the set's aggTime), made on first use
  char zErr[512];        // the message of the call's failure
  ColsCtx *pNextFree;    // the pool's idle contexts
  ColsCtx *pNextAll;     // all the set's contexts
};

struct CudaCols {
  // read-only once xLoad has returned
  int nCol;
  int64_t n;
  int bSorted;
  int64_t *dKey;
  uint64_t *dRow;
  uint8_t *dTag;
  uint64_t *dVal;
  int nSM;
  uint64_t id;           // the set's number in the process (errSlot)
  uint64_t nArrayBytes;  // device bytes of the arrays
  // the equality indexes: built once each (kernels/cols/index.cuh)
  ColIdx *aIdx;          // per column (nCol)
  std::mutex muIdx;      // held while one is built
  std::atomic<uint64_t> nIdxBytes{0};  // device bytes of those built
  gpuds_mem::DevMem mem; // device bytes held (atomics), and the test hooks
  // the contexts
  std::mutex muPool;
  std::condition_variable cvPool;  // a context was given back (or not made)
  ColsCtx *pFree;        // idle
  ColsCtx *pAll;         // all (pNextAll)
  int nCtx;              // made or being made
  // test hooks (kernels/cols/hooks.cuh), set while no call runs
  int64_t nFewMax;       // few(): most results it returns (kFewMax; tests lower it)
  int aggForceL;         // never dense group numbers (path W) where keys are, no kAggOne
  int64_t aggLaneRows;   // rows a lane steps in a chunk (path L; 0: default)
  int64_t aggR2BlockMax; // groups up to which a block merges a group (0: default)
  int aggYBatch;         // most state aggregates a launch takes (0: no limit)
  std::atomic<bool> aggTime{false};  // time xAgg on its stream (aggEv) into aggMs
  std::atomic<float> aggMs{-1};
};

namespace {

CudaCols *cc(gpuds_cols *p){ return (CudaCols*)p; }

// The calling thread's message of its last failed call on a set (set id):
// xErrmsg reads it.
struct ErrSlot {
  uint64_t id;
  char z[512];
};
ErrSlot &errSlot(){ static thread_local ErrSlot s; return s; }

// Give the calling thread message z of a failed call on set p.
void errToThread(const CudaCols *p, const char *z){
  ErrSlot &s = errSlot();
  s.id = p->id;
  snprintf(s.z, sizeof(s.z), "%s", z);
}

// The calling thread's message of its last failed call, if that call was
// on set p; else "".
const char *colsErrmsgOf(const CudaCols *p){
  const ErrSlot &s = errSlot();
  return s.id==p->id ? s.z : "";
}

// A new set's number (never 0).
uint64_t newSetId(){
  static std::atomic<uint64_t> nLast{0};
  return ++nLast;
}

// Record the failed CUDA call on cx and return its GPUDS_* code: GPUDS_NOMEM
// for an allocation failure, GPUDS_ERROR otherwise.  Waits for cx's stream
// so that nothing is left in flight, and clears the runtime's last error
// (the calling thread's).
int gpudsCudaFail(ColsCtx *cx, cudaError_t e, const char *zWhat, const char *zFile, int iLine){
  int rc = gpudsCudaCode(e);
  gpudsCudaMessage(cx->zErr, sizeof(cx->zErr), "cudacols", e, zWhat, zFile, iLine);
  (void)cudaGetLastError();
  if( cx->st ) (void)cudaStreamSynchronize(cx->st);
  (void)cudaGetLastError();
  return rc;
}

// Record message z with code rc on cx; returns rc.
int colsSetErr(ColsCtx *cx, int rc, const char *z){
  snprintf(cx->zErr, sizeof(cx->zErr), "cudacols: %s", z);
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

// Make b (a workspace of cx) at least n bytes (contents not kept; grows by
// 1.25x at least, to 2 MiB steps).  On failure b is empty and the code is
// returned.
int ensure(ColsCtx *cx, DevBuf &b, size_t n){
  if( n>b.used ) b.used = n;
  if( b.n>=n ) return GPUDS_OK;
  size_t want = n + n/4;
  if( want<n ) want = n;
  want = (want + ((size_t)2<<20) - 1) & ~(((size_t)2<<20) - 1);
  if( want<n ) want = n;
  devFree(cx->set, b.p, b.n);
  b.p = nullptr; b.n = 0;
  cudaError_t e = devAlloc(cx->set, &b.p, want);
  if( e!=cudaSuccess && want>n ){
    (void)cudaGetLastError();
    e = devAlloc(cx->set, &b.p, n);
    want = n;
  }
  if( e!=cudaSuccess ) return gpudsCudaFail(cx, e, "device workspace", __FILE__, __LINE__);
  b.n = want;
  return GPUDS_OK;
}

// Make cx's pinned buffer at least n bytes (nothing may be in flight on it).
int ensurePin(ColsCtx *cx, size_t n){
  if( cx->nPin>=n ) return GPUDS_OK;
  if( cx->hPin ){ (void)cudaFreeHost(cx->hPin); cx->hPin = nullptr; cx->dPin = nullptr; cx->nPin = 0; }
  size_t want = n<4096 ? 4096 : n + n/4;
  GPUDS_CK(cx, gpuds_mem::allocPinned(&cx->hPin, want));
  cx->nPin = want;
  // kernels may write results straight into it (kProbe), where it is mapped
  if( cudaHostGetDevicePointer(&cx->dPin, cx->hPin, 0)!=cudaSuccess ){
    cx->dPin = nullptr;
    (void)cudaGetLastError();
  }
  return GPUDS_OK;
}

// Free context cx (not in use) and everything it holds.
void ctxFree(ColsCtx *cx){
  DevBuf *a[] = {&cx->par, &cx->sel, &cx->sort, &cx->out, &cx->tmp,
                 &cx->aSt, &cx->aW, &cx->aP, &cx->res};
  if( cx->st ) (void)cudaStreamSynchronize(cx->st);
  for(DevBuf *b : a) devFree(cx->set, b->p, b->n);
  for(int e=0; e<2; e++) if( cx->aggEv[e] ) (void)cudaEventDestroy(cx->aggEv[e]);
  if( cx->hPin ) (void)cudaFreeHost(cx->hPin);
  if( cx->st ) (void)cudaStreamDestroy(cx->st);
  (void)cudaGetLastError();
  delete cx;
}

// Contexts a set makes at most: more calls at once than this wait for one
// to be given back (the GPU gains nothing from more, and each keeps its
// workspaces).
constexpr int kCtxMax = 16;

// A context for a call on p: an idle one of the pool, else a new one
// (where calls overlap), else, with kCtxMax made, the first one given
// back.  On failure the message is the calling thread's (errToThread) and
// *pcx is NULL.
int ctxTake(CudaCols *p, ColsCtx **pcx){
  *pcx = nullptr;
  {
    std::unique_lock<std::mutex> g(p->muPool);
    p->cvPool.wait(g, [p]{ return p->pFree!=nullptr || p->nCtx<kCtxMax; });
    if( p->pFree ){
      *pcx = p->pFree;
      p->pFree = p->pFree->pNextFree;
      (*pcx)->pNextFree = nullptr;
      return GPUDS_OK;
    }
    p->nCtx++;            // this one, made outside the lock: a stream takes
  }                       // a while, and the calls that find one idle need
                          // not wait for it
  int rc = GPUDS_OK;
  ColsCtx *cx = new (std::nothrow) ColsCtx();
  if( !cx ){
    errToThread(p, "cudacols: out of memory");
    rc = GPUDS_NOMEM;
  }else{
    cx->set = p;
    cudaError_t e = cudaStreamCreateWithFlags(&cx->st, cudaStreamNonBlocking);
    if( e!=cudaSuccess ){
      cx->st = nullptr;
      rc = gpudsCudaFail(cx, e, "stream of a call", __FILE__, __LINE__);
      errToThread(p, cx->zErr);
      ctxFree(cx);
    }
  }
  std::lock_guard<std::mutex> g(p->muPool);
  if( rc ){
    p->nCtx--;
    p->cvPool.notify_one();
    return rc;
  }
  cx->pNextAll = p->pAll;
  p->pAll = cx;
  *pcx = cx;
  return GPUDS_OK;
}

// Give context cx back to p's pool after a call that returned rc: a
// failure's message goes to the calling thread first (xErrmsg).
void ctxGive(CudaCols *p, ColsCtx *cx, int rc){
  if( rc!=GPUDS_OK ) errToThread(p, cx->zErr);
  cx->zErr[0] = 0;
  {
    std::lock_guard<std::mutex> g(p->muPool);
    cx->pNextFree = p->pFree;
    p->pFree = cx;
  }
  p->cvPool.notify_one();
}

size_t alignUp(size_t x){ return (x+255) & ~(size_t)255; }

// Blocks for a grid-stride kernel over n items (8 resident blocks an SM).
unsigned gridFor(const CudaCols *p, int64_t n){
  return gpuds_launch::gridBlocks(p->nSM>0 ? p->nSM : 1, 8, n>0 ? (size_t)n : 0);
}

// The query (kernels/cols.cu) for a set whose row numbers fit IdxT.
template<typename IdxT>
int queryT(CudaCols *p, ColsCtx *cx, const gpuds_query *q, int64_t *pn, int64_t **paKey,
           uint64_t **paRow, uint64_t **paSort);

}  // namespace
