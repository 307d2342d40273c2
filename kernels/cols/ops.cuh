// kernels/cols/ops.cuh -- the ops table: gpudsCudaColsOps and its entry
// points (xLoad, xFree, xQuery, xBytes, xErrmsg, xAgg), which convert the
// gpuds_cols handle to CudaCols.
//
// Part of the CUDA column set's one translation unit: included by
// kernels/cols.cu, after the query it calls.
#pragma once

#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpuds_backend.h"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "cols/layout.cuh"
#include "cols/store.cuh"
#include "cols/index.cuh"
#include "cols/agg.cuh"

namespace {

// xFree: everything p holds, and p (after its stream is idle).  NULL: no-op.
void colsFree(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  if( !p ) return;
  if( p->st ) (void)cudaStreamSynchronize(p->st);
  devFree(p, p->dKey, 0); devFree(p, p->dRow, 0);
  devFree(p, p->dTag, 0); devFree(p, p->dVal, 0);
  devFree(p, p->par.p, 0); devFree(p, p->sel.p, 0); devFree(p, p->sort.p, 0);
  devFree(p, p->out.p, 0); devFree(p, p->tmp.p, 0);
  devFree(p, p->aSt.p, 0); devFree(p, p->aW.p, 0); devFree(p, p->aP.p, 0); devFree(p, p->res.p, 0);
  for(int e=0; e<2; e++) if( p->aggEv[e] ) (void)cudaEventDestroy(p->aggEv[e]);
  if( p->aIdx ){
    for(int c=0; c<p->nCol; c++) idxDrop(p, c);
    free(p->aIdx);
  }
  if( p->hPin ) (void)cudaFreeHost(p->hPin);
  if( p->st ) (void)cudaStreamDestroy(p->st);
  (void)cudaGetLastError();
  /* The arrays and workspaces above were freed without their sizes: what
  ** the set's account still holds goes back to the process's account. */
  gpuds_mem::account().held -= p->mem.bytes;
  p->mem.bytes = 0;
  free(p);
}

// xLoad's work on a zeroed p: stream, arrays, upload.  GPUDS_OK or a code
// with p->zErr set (the caller frees p).
int loadInto(CudaCols *p, int64_t n, int nc, const int64_t *aKey, const uint64_t *aRow,
             const uint8_t *aTag, const uint64_t *aVal){
  GPUDS_CK(p, cudaDeviceGetAttribute(&p->nSM, cudaDevAttrMultiProcessorCount, 0));
  GPUDS_CK(p, cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
  if( n==0 ) return GPUDS_OK;
  if( (uint64_t)n > (uint64_t)SIZE_MAX/8/(uint64_t)(nc>0 ? nc : 1)/2 ){
    return colsSetErr(p, GPUDS_NOMEM, "column set too large");
  }
  size_t nn = (size_t)n, nv = (size_t)n*(size_t)nc;
  GPUDS_CK(p, devAlloc(p, (void**)&p->dKey, nn*8));
  GPUDS_CK(p, devAlloc(p, (void**)&p->dRow, nn*8));
  if( nc>0 ){
    GPUDS_CK(p, devAlloc(p, (void**)&p->dTag, nv));
    GPUDS_CK(p, devAlloc(p, (void**)&p->dVal, nv*8));
  }
  GPUDS_CK(p, cudaMemcpyAsync(p->dKey, aKey, nn*8, cudaMemcpyHostToDevice, p->st));
  GPUDS_CK(p, cudaMemcpyAsync(p->dRow, aRow, nn*8, cudaMemcpyHostToDevice, p->st));
  if( nc>0 ){
    GPUDS_CK(p, cudaMemcpyAsync(p->dTag, aTag, nv, cudaMemcpyHostToDevice, p->st));
    GPUDS_CK(p, cudaMemcpyAsync(p->dVal, aVal, nv*8, cudaMemcpyHostToDevice, p->st));
  }
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  return GPUDS_OK;
}

// A malloc()ed copy of z (NULL if out of memory).
char *dupStr(const char *z){
  size_t k = strlen(z)+1;
  char *r = (char*)malloc(k);
  if( r ) memcpy(r, z, k);
  return r;
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
  CudaCols *p = (CudaCols*)calloc(1, sizeof(CudaCols));
  if( !p ){
    if( pzErr ) *pzErr = dupStr("cudacols: out of memory");
    return GPUDS_NOMEM;
  }
  p->nCol = nCol;
  p->n = n>0 ? n : 0;
  p->bSorted = bSorted;
  p->nFewMax = kFewMax;
  p->aIdx = (ColIdx*)calloc(nCol>0 ? (size_t)nCol : 1, sizeof(ColIdx));
  if( !p->aIdx ){
    if( pzErr ) *pzErr = dupStr("cudacols: out of memory");
    free(p);
    return GPUDS_NOMEM;
  }
  int rc = loadInto(p, p->n, nCol>0 ? nCol : 0, aKey, aRow, aTag, aVal);
  if( rc!=GPUDS_OK ){
    if( pzErr ) *pzErr = dupStr(p->zErr);
    colsFree((gpuds_cols*)p);
    return rc;
  }
  *pp = (gpuds_cols*)p;
  return GPUDS_OK;
}

// After a query: the workspaces go back when they hold more than a store
// keeps (gpuds_mem::workspaceOverKeep: 32 MiB, or a quarter of the set's
// arrays if that is more) and this query needed no more than that, so that
// the set holds what its columns take, not its largest query's workspace
// (the queries of a sqlbench run otherwise leave workspace nearly as big as
// the arrays, for good).  A query that needed more leaves it to the next
// one: a top-10 over 10^7 rows needs ~240 MB, and taking and giving that
// back each time would cost more than the query itself.
void trimWorkspace(CudaCols *p){
  DevBuf *a[] = {&p->sel, &p->sort, &p->out, &p->tmp, &p->aSt, &p->aW, &p->aP, &p->res};
  uint64_t ws = 0, used = 0, fixed, arrays;
  for(DevBuf *b : a){
    ws += b->n;
    used += b->used;
    b->used = 0;
  }
  fixed = ws + p->par.n;
  arrays = p->mem.bytes>fixed ? p->mem.bytes-fixed : 0;
  if( gpuds_mem::workspaceOverKeep(used, arrays) ) return;
  if( !gpuds_mem::workspaceOverKeep(ws, arrays) ) return;
  (void)cudaStreamSynchronize(p->st);   // nothing may still use them
  for(DevBuf *b : a){
    devFree(p, b->p, b->n);
    b->p = nullptr; b->n = 0;
  }
  (void)cudaGetLastError();
}

// xQuery (see gpuds_backend.h).
int colsQuery(gpuds_cols *pCols, const gpuds_query *q, int64_t *pn, int64_t **paKey,
              uint64_t **paRow, uint64_t **paSort){
  CudaCols *p = cc(pCols);
  *pn = 0; *paKey = nullptr; *paRow = nullptr;
  if( paSort ) *paSort = nullptr;
  for(int t=0; t<q->nTerm; t++){
    if( q->aTerm[t].iCol<0 || q->aTerm[t].iCol>=p->nCol ){
      return colsSetErr(p, GPUDS_MISUSE, "term on a column the set does not have");
    }
  }
  if( q->iOrderCol>=p->nCol ) return colsSetErr(p, GPUDS_MISUSE, "order by a column the set does not have");
  if( p->n==0 ) return GPUDS_OK;
  int rc = (uint64_t)p->n <= (uint64_t)UINT32_MAX
         ? queryT<uint32_t>(p, q, pn, paKey, paRow, paSort)
         : queryT<uint64_t>(p, q, pn, paKey, paRow, paSort);
  trimWorkspace(p);
  return rc;
}

// xAgg (see gpuds_backend.h; kernels/cols/agg.cuh).
int colsAgg(gpuds_cols *pCols, const gpuds_agg *pAgg, gpuds_aggres *pRes){
  CudaCols *p = cc(pCols);
  int rc = aggRun(p, pAgg, pRes);
  trimWorkspace(p);
  return rc;
}

// xBytes: device bytes held (arrays and workspaces).
int64_t colsBytes(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  return p ? (int64_t)p->mem.bytes : 0;
}

// xErrmsg
const char *colsErrmsg(gpuds_cols *pCols){
  return pCols ? cc(pCols)->zErr : "";
}

}  // namespace

extern "C" const gpuds_cols_ops gpudsCudaColsOps = {
  "cuda", 0, colsLoad, colsFree, colsQuery, colsBytes, colsErrmsg, colsAgg
};
