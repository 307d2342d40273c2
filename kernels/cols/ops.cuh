// kernels/cols/ops.cuh -- the ops table: gpudsCudaColsOps and its entry
// points (xLoad, xFree, xQuery, xBytes, xErrmsg, xAgg), which convert the
// gpuds_cols handle to CudaCols, and run each call on a context of the
// set's pool (kernels/cols/store.cuh says why calls may run at once).
//
// Part of the CUDA column set's one translation unit: included by
// kernels/cols.cu, after the query it calls.
#pragma once

#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "gpuds_backend.h"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "cols/layout.cuh"
#include "cols/store.cuh"
#include "cols/index.cuh"
#include "cols/agg.cuh"

namespace {

// xFree: everything p holds, and p (no call runs on it).  NULL: no-op.
void colsFree(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  if( !p ) return;
  while( p->pAll ){
    ColsCtx *cx = p->pAll;
    p->pAll = cx->pNextAll;
    ctxFree(cx);
  }
  p->pFree = nullptr;
  p->nCtx = 0;
  devFree(p, p->dKey, 0); devFree(p, p->dRow, 0);
  devFree(p, p->dTag, 0); devFree(p, p->dVal, 0);
  if( p->aIdx ){
    for(int c=0; c<p->nCol; c++) idxDrop(p, c);
    delete[] p->aIdx;
  }
  (void)cudaGetLastError();
  /* The arrays above were freed without their sizes: what the set's
  ** account still holds goes back to the process's account. */
  gpuds_mem::account().held -= p->mem.bytes.load();
  p->mem.bytes = 0;
  delete p;
}

// The arrays of p (n rows, nc columns) onto the device on cx's stream.
int loadArrays(CudaCols *p, ColsCtx *cx, int64_t n, int nc, const int64_t *aKey,
               const uint64_t *aRow, const uint8_t *aTag, const uint64_t *aVal){
  GPUDS_CK(cx, cudaDeviceGetAttribute(&p->nSM, cudaDevAttrMultiProcessorCount, 0));
  if( n==0 ) return GPUDS_OK;
  if( (uint64_t)n > (uint64_t)SIZE_MAX/8/(uint64_t)(nc>0 ? nc : 1)/2 ){
    return colsSetErr(cx, GPUDS_NOMEM, "column set too large");
  }
  size_t nn = (size_t)n, nv = (size_t)n*(size_t)nc;
  GPUDS_CK(cx, devAlloc(p, (void**)&p->dKey, nn*8));
  GPUDS_CK(cx, devAlloc(p, (void**)&p->dRow, nn*8));
  if( nc>0 ){
    GPUDS_CK(cx, devAlloc(p, (void**)&p->dTag, nv));
    GPUDS_CK(cx, devAlloc(p, (void**)&p->dVal, nv*8));
  }
  p->nArrayBytes = nn*16 + nv*9;
  GPUDS_CK(cx, cudaMemcpyAsync(p->dKey, aKey, nn*8, cudaMemcpyHostToDevice, cx->st));
  GPUDS_CK(cx, cudaMemcpyAsync(p->dRow, aRow, nn*8, cudaMemcpyHostToDevice, cx->st));
  if( nc>0 ){
    GPUDS_CK(cx, cudaMemcpyAsync(p->dTag, aTag, nv, cudaMemcpyHostToDevice, cx->st));
    GPUDS_CK(cx, cudaMemcpyAsync(p->dVal, aVal, nv*8, cudaMemcpyHostToDevice, cx->st));
  }
  GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
  return GPUDS_OK;
}

// A malloc()ed copy of z (NULL if out of memory).
char *dupStr(const char *z){
  size_t k = strlen(z)+1;
  char *r = (char*)malloc(k);
  if( r ) memcpy(r, z, k);
  return r;
}

// xLoad's work on a new p: the first context (kept in the pool), the
// arrays, the upload on that context's stream.  GPUDS_OK or a code with
// the message in *pzErr (if not NULL; the caller frees p).
int loadInto(CudaCols *p, int64_t n, int nc, const int64_t *aKey, const uint64_t *aRow,
             const uint8_t *aTag, const uint64_t *aVal, char **pzErr){
  ColsCtx *cx = nullptr;
  int rc = ctxTake(p, &cx);
  if( rc ){
    if( pzErr ) *pzErr = dupStr(colsErrmsgOf(p));
    return rc;
  }
  rc = loadArrays(p, cx, n, nc, aKey, aRow, aTag, aVal);
  if( rc && pzErr ) *pzErr = dupStr(cx->zErr);
  ctxGive(p, cx, rc);
  return rc;
}

// xLoad (see gpuds_backend.h).
int colsLoad(gpuds_cols **pp, int nCol, int64_t n, int bSorted, const int64_t *aKey,
             const uint64_t *aRow, const uint8_t *aTag, const uint64_t *aVal, char **pzErr){
  char zDev[256];
  *pp = nullptr;
  if( pzErr ) *pzErr = nullptr;
  if( !gpudsCudaDevice(zDev, sizeof(zDev), nullptr, nullptr) ){
    if( pzErr ){
      *pzErr = (char*)malloc(300);
      if( *pzErr ) snprintf(*pzErr, 300, "cudacols: no usable CUDA device: %s", zDev);
    }
    return GPUDS_ERROR;
  }
  CudaCols *p = new (std::nothrow) CudaCols();
  if( p ) p->aIdx = new (std::nothrow) ColIdx[nCol>0 ? (size_t)nCol : 1]();
  if( !p || !p->aIdx ){
    if( pzErr ) *pzErr = dupStr("cudacols: out of memory");
    delete p;
    return GPUDS_NOMEM;
  }
  p->id = newSetId();
  p->nCol = nCol;
  p->n = n>0 ? n : 0;
  p->bSorted = bSorted;
  p->nFewMax = kFewMax;
  int rc = loadInto(p, p->n, nCol>0 ? nCol : 0, aKey, aRow, aTag, aVal, pzErr);
  if( rc!=GPUDS_OK ){
    colsFree((gpuds_cols*)p);
    return rc;
  }
  *pp = (gpuds_cols*)p;
  return GPUDS_OK;
}

// After a call on context cx: its workspaces go back when they hold more
// than a store keeps (gpuds_mem::workspaceOverKeep: 32 MiB, or a quarter
// of the set's arrays and indexes if that is more) and this call needed no
// more than that, so that the set holds what its columns take, not its
// largest query's workspace (the queries of a sqlbench run otherwise leave
// workspace nearly as big as the arrays, for good).  A call that needed
// more leaves it to the next one: a top-10 over 10^7 rows needs ~240 MB,
// and taking and giving that back each time would cost more than the query
// itself.  Each context is trimmed on its own: the set keeps at most that
// much per context, and makes contexts only where calls overlap.
void trimWorkspace(CudaCols *p, ColsCtx *cx){
  // (par, small, is kept)
  DevBuf *a[] = {&cx->sel, &cx->sort, &cx->out, &cx->tmp, &cx->aSt, &cx->aW, &cx->aP, &cx->res};
  uint64_t ws = 0, used = 0;
  const uint64_t arrays = p->nArrayBytes + p->nIdxBytes.load();
  for(DevBuf *b : a){
    ws += b->n;
    used += b->used;
    b->used = 0;
  }
  if( gpuds_mem::workspaceOverKeep(used, arrays) ) return;
  if( !gpuds_mem::workspaceOverKeep(ws, arrays) ) return;
  (void)cudaStreamSynchronize(cx->st);   // nothing may still use them
  for(DevBuf *b : a){
    devFree(p, b->p, b->n);
    b->p = nullptr; b->n = 0;
  }
  (void)cudaGetLastError();
}

// xQuery's work on context cx.
int queryRun(CudaCols *p, ColsCtx *cx, const gpuds_query *q, int64_t *pn, int64_t **paKey,
             uint64_t **paRow, uint64_t **paSort){
  for(int t=0; t<q->nTerm; t++){
    if( q->aTerm[t].iCol<0 || q->aTerm[t].iCol>=p->nCol ){
      return colsSetErr(cx, GPUDS_MISUSE, "term on a column the set does not have");
    }
  }
  if( q->iOrderCol>=p->nCol ) return colsSetErr(cx, GPUDS_MISUSE, "order by a column the set does not have");
  if( p->n==0 ) return GPUDS_OK;
  return (uint64_t)p->n <= (uint64_t)UINT32_MAX
         ? queryT<uint32_t>(p, cx, q, pn, paKey, paRow, paSort)
         : queryT<uint64_t>(p, cx, q, pn, paKey, paRow, paSort);
}

// xQuery (see gpuds_backend.h).
int colsQuery(gpuds_cols *pCols, const gpuds_query *q, int64_t *pn, int64_t **paKey,
              uint64_t **paRow, uint64_t **paSort){
  CudaCols *p = cc(pCols);
  ColsCtx *cx = nullptr;
  *pn = 0; *paKey = nullptr; *paRow = nullptr;
  if( paSort ) *paSort = nullptr;
  int rc = ctxTake(p, &cx);
  if( rc ) return rc;
  rc = queryRun(p, cx, q, pn, paKey, paRow, paSort);
  trimWorkspace(p, cx);
  ctxGive(p, cx, rc);
  return rc;
}

// xAgg (see gpuds_backend.h; kernels/cols/agg.cuh).
int colsAgg(gpuds_cols *pCols, const gpuds_agg *pAgg, gpuds_aggres *pRes){
  CudaCols *p = cc(pCols);
  ColsCtx *cx = nullptr;
  memset(pRes, 0, sizeof(*pRes));
  int rc = ctxTake(p, &cx);
  if( rc ) return rc;
  rc = aggRun(p, cx, pAgg, pRes);
  trimWorkspace(p, cx);
  ctxGive(p, cx, rc);
  return rc;
}

// xBytes: device bytes held: the arrays, the indexes and every context's
// workspaces (an atomic load: exact between calls).
int64_t colsBytes(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  return p ? (int64_t)p->mem.bytes.load() : 0;
}

// xErrmsg: the calling thread's message of its last failed call on the
// set (ctxGive put it there), "" if that call was on another set.
const char *colsErrmsg(gpuds_cols *pCols){
  return pCols ? colsErrmsgOf(cc(pCols)) : "";
}

}  // namespace

extern "C" const gpuds_cols_ops gpudsCudaColsOps = {
  "cuda", 1, colsLoad, colsFree, colsQuery, colsBytes, colsErrmsg, colsAgg
};
