// kernels/hash/ops.cuh -- the ops table: gpudsCudaHashOps and its entry
// points, which convert the gpuds_store handle to GpuHashStore.
//
// Part of the GPU hash store's one translation unit: included by
// kernels/hash.cu only, after the host store it calls.
#pragma once

#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include "gpuds_backend.h"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "common/hostpipe.cuh"
#include "hash/layout.cuh"
#include "hash/kernels.cuh"
#include "hash/store.cuh"

namespace {

// Slots a scan page examines per step: enough for about nMax entries at the
// table's load (x1.25), but at least kScanWindowMin (a smaller window makes
// the per-step launches and the count read-back dominate) and at most
// kScanWindowMax (the window's scratch, 8 bytes a slot, stays <= 128 MiB).
constexpr ull kScanWindowMin = 4096;
constexpr ull kScanWindowMax = 1ull<<24;
// Slots to look at per entry wanted: 1/load, and a quarter more, so that a
// page usually needs one window.
constexpr double kScanWindowSlack = 1.25;

void hashDestroy(gpuds_store *pStore);

// Set up a new (zeroed) store p: a stream, the counters, an empty table of
// kMinBuckets buckets.  On failure p holds what was made so far
// (hashDestroy frees it).
int hashInit(GpuHashStore *p){
  const size_t tb = kMinBuckets*sizeof(Bucket);
  GPUDS_CK(p, cudaDeviceGetAttribute(&p->nSM, cudaDevAttrMultiProcessorCount, 0));
  GPUDS_CK(p, cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
  p->chunk = gpuds_pipe::defaultChunk();
  GPUDS_CK(p, gpuds_mem::alloc(p->mem, (void**)&p->dMeta, sizeof(Meta)));
  GPUDS_CK(p, cudaMemsetAsync(p->dMeta, 0, sizeof(Meta), p->st));
  GPUDS_CK(p, gpuds_mem::alloc(p->mem, (void**)&p->T.b, tb));
  p->T.nb = kMinBuckets;
  GPUDS_CK(p, cudaMemsetAsync(p->T.b, 0xFE, tb, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  return GPUDS_OK;
}

// Create an empty store: kMinBuckets buckets, a stream, the counters.
int hashCreate(gpuds_store **ppStore, char **pzErr){
  int rc = GPUDS_OK;
  char zDev[256];
  GpuHashStore *p = nullptr;
  *ppStore = nullptr;
  if( pzErr ) *pzErr = nullptr;
  if( !gpudsCudaDevice(zDev, sizeof(zDev), 0, 0) ){
    if( pzErr ){
      *pzErr = (char*)malloc(300);
      if( *pzErr ) snprintf(*pzErr, 300, "gpuhash: no usable CUDA device: %s", zDev);
    }
    return GPUDS_ERROR;
  }
  p = new (std::nothrow) GpuHashStore();   // (its DevMem holds atomics)
  if( !p ){
    if( pzErr ) *pzErr = strdup("gpuhash: out of host memory");
    return GPUDS_NOMEM;
  }
  rc = hashInit(p);
  if( rc ){
    if( pzErr ) *pzErr = strdup(p->zErr);
    hashDestroy((gpuds_store*)p);
    return rc;
  }
  *ppStore = (gpuds_store*)p;
  return GPUDS_OK;
}

// Free the store and everything it holds; NULL is a no-op.
void hashDestroy(gpuds_store *pStore){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !p ) return;
  if( p->st ) cudaStreamSynchronize(p->st);
  devFree(p, p->T.b, (size_t)p->T.nb*sizeof(Bucket));
  devFree(p, p->dMeta, sizeof(Meta));
  gpuds_mem::releaseBuf(p->mem, p->scratch);
  gpuds_pipe::release(p->pipe);
  if( p->st ) cudaStreamDestroy(p->st);
  (void)cudaGetLastError();
  delete p;
}

// xBatch: the keys are distinct (the backend contract), so no op needs
// ordering: one kernel applies all of them.
int hashBatch(gpuds_store *pStore, size_t n, const uint8_t *aOp, const int64_t *aKey,
              const uint64_t *aVal, uint8_t *aFound, uint64_t *aOld){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( p && n && !aOp ) return setErr(p, GPUDS_MISUSE, "NULL op array");
  return hostBatch(p, n, aOp, GPUDS_OP_LOOKUP, aKey, aVal, aFound, aOld);
}

int hashLookup(gpuds_store *pStore, size_t n, const int64_t *aKey, uint8_t *aFound,
               uint64_t *aVal){
  GpuHashStore *p = (GpuHashStore*)pStore;
  return hostLookup(p, n, aKey, aFound, aVal);
}

// Sorted bulk load: verified strictly ascending (so distinct), then upserted
// as one batch; an empty table is first sized for the keys at kBulkLoad.
int hashBulkLoad(gpuds_store *pStore, size_t n, const int64_t *aKey,
                 const uint64_t *aVal){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !p ) return GPUDS_MISUSE;
  if( n && !aKey ) return setErr(p, GPUDS_MISUSE, "NULL key array");
  for( size_t i=1; i<n; i++ ){
    if( aKey[i]<=aKey[i-1] ){
      char z[96];
      snprintf(z, sizeof(z), "xBulkLoad: keys not strictly ascending at index %zu", i);
      return setErr(p, GPUDS_MISUSE, z);
    }
  }
  if( p->h.count==0 && n>0 ){
    const ull nb = bucketsFor(n, kBulkLoad);
    if( nb>p->T.nb ){
      int rc = rehash(p, nb);
      if( rc ) return rc;
    }
  }
  return hostBatch(p, n, nullptr, GPUDS_OP_UPSERT, aKey, aVal, nullptr, nullptr);
}

// Next page of a scan: slots from pScan->pos in order (table slots, then the
// two side slots), entries with lo <= key <= hi.
int hashScan(gpuds_store *pStore, gpuds_scan *pScan, size_t nMax, int64_t *aKey,
             uint64_t *aVal, size_t *pnOut){
  GpuHashStore *p = (GpuHashStore*)pStore;
  int rc = GPUDS_OK;
  const ull total = p ? p->T.nb*TS : 0;
  ull pos = pScan->pos;
  size_t out = 0;
  size_t nTemp = 0;
  ull W = 0, nSel = 0, *dSel, *dNum, *dK, *dV;
  char *S;
  *pnOut = 0;
  if( !p ) return GPUDS_MISUSE;
  if( pScan->done ) return GPUDS_OK;
  if( pScan->lo>pScan->hi ){ pScan->done = 1; return GPUDS_OK; }
  if( nMax==0 ) return GPUDS_OK;
  if( !aKey ) return setErr(p, GPUDS_MISUSE, "xScan: NULL key array");
  {
    // Window of slots expected to yield about nMax entries, within limits.
    const ull keys = p->h.count ? p->h.count : 1;
    double w = (double)nMax*(double)total/(double)keys*kScanWindowSlack;
    W = w<kScanWindowMin ? kScanWindowMin : (w>(double)kScanWindowMax ? kScanWindowMax : (ull)w);
  }
  while( out<nMax && pos<total ){
    const ull room = nMax-out;
    const ull win = total-pos<W ? total-pos : W;
    const ull nGather = room<win ? room : win;
    ScanPred pred{p->T.b, pScan->lo, pScan->hi};
    thrust::counting_iterator<ull> it(pos);
    nTemp = 0;
    GPUDS_CK(p, cub::DeviceSelect::If(nullptr, nTemp, it, (ull*)nullptr, (ull*)nullptr,
                                     (int64_t)win, pred, p->st));
    rc = ensureScratch(p, alignUp(8*win)+alignUp(16*nGather)+256+alignUp(nTemp));
    if( rc ) return rc;
    S = (char*)p->scratch.p;
    dSel = (ull*)S;
    dK = (ull*)(S+alignUp(8*win));
    dV = dK+nGather;
    dNum = (ull*)(S+alignUp(8*win)+alignUp(16*nGather));
    GPUDS_CK(p, cub::DeviceSelect::If(S+alignUp(8*win)+alignUp(16*nGather)+256, nTemp, it,
                                     dSel, dNum, (int64_t)win, pred, p->st));
    GPUDS_CK(p, cudaMemcpyAsync(&nSel, dNum, sizeof(ull), cudaMemcpyDeviceToHost, p->st));
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
    {
      const ull take = nSel<room ? nSel : room;
      if( take ){
        kGather<<<gridFor(p, take), kBlock, 0, p->st>>>(p->T.b, take, dSel, dK, dV);
        GPUDS_CK_LAUNCH(p, "kGather");
        GPUDS_CK(p, cudaMemcpyAsync(aKey+out, dK, 8*take, cudaMemcpyDeviceToHost, p->st));
        if( aVal ) GPUDS_CK(p, cudaMemcpyAsync(aVal+out, dV, 8*take, cudaMemcpyDeviceToHost, p->st));
      }
      if( nSel>room ){
        ull last = 0;
        GPUDS_CK(p, cudaMemcpyAsync(&last, dSel+take-1, sizeof(ull), cudaMemcpyDeviceToHost, p->st));
        GPUDS_CK(p, cudaStreamSynchronize(p->st));
        pos = last+1;
      }else{
        GPUDS_CK(p, cudaStreamSynchronize(p->st));
        pos += win;
      }
      out += take;
    }
    if( out<nMax && W<kScanWindowMax ) W *= 2;   // sparse range: widen the window
  }
  while( out<nMax && pos>=total && pos<total+2 ){
    const int s = (int)(pos-total);
    const long long k = (long long)(s==0 ? kEmptyKey : kTombKey);
    if( p->h.sidePresent[s] && k>=pScan->lo && k<=pScan->hi ){
      aKey[out] = k;
      if( aVal ) aVal[out] = p->h.sideVal[s];
      out++;
    }
    pos++;
  }
  pScan->pos = pos;
  pScan->done = pos>=total+2;
  *pnOut = out;
  return GPUDS_OK;
}

int64_t hashCount(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? (int64_t)p->h.count : 0; }

void hashInfo(gpuds_store *pStore, char *zBuf, size_t nBuf){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !zBuf || nBuf==0 ) return;
  if( !p ){ snprintf(zBuf, nBuf, "{}"); return; }
  const ull slots = p->T.nb*TS;
  const ull keys = p->h.count - sidesPresent(p);
  snprintf(zBuf, nBuf,
    "{\"structure\":\"cuda-hash: bucketed linear probing, 4 slots per 64-byte bucket\","
    "\"keys\":%llu,\"buckets\":%llu,\"slots\":%llu,\"load\":%.4f,"
    "\"tombstones\":%llu,\"device_bytes\":%llu,\"rehashes\":%llu}",
    (ull)p->h.count, (ull)p->T.nb, slots, slots ? (double)keys/(double)slots : 0.0,
    (ull)(p->h.used-keys), (ull)p->mem.bytes, (ull)p->nRehash);
}

// Check: every live key is found by the probe rule at its own slot (so no
// duplicates and no key behind an EMPTY slot), counts match the counters.
int hashCheck(gpuds_store *pStore){
  GpuHashStore *p = (GpuHashStore*)pStore;
  int rc = GPUDS_OK;
  ull res[4] = {0, 0, 0, ~0ull};
  ull *d;
  char z[300];
  if( !p ) return GPUDS_MISUSE;
  rc = ensureScratch(p, 256);
  if( rc ) return rc;
  d = (ull*)p->scratch.p;
  GPUDS_CK(p, cudaMemcpyAsync(d, res, sizeof(res), cudaMemcpyHostToDevice, p->st));
  kCheck<<<gridFor(p, (size_t)p->T.nb*TS, (const void*)kCheck), kBlock, 0, p->st>>>(p->T, d);
  GPUDS_CK_LAUNCH(p, "kCheck");
  GPUDS_CK(p, cudaMemcpyAsync(res, d, sizeof(res), cudaMemcpyDeviceToHost, p->st));
  rc = readMeta(p);   // synchronises
  if( rc ) return rc;
  if( res[2] ){
    snprintf(z, sizeof(z), "check: %llu keys not found at their slot by the probe rule "
             "(duplicate or misplaced), first at slot %llu", res[2], res[3]);
    return setErr(p, GPUDS_ERROR, z);
  }
  if( p->h.sidePresent[0]>1 || p->h.sidePresent[1]>1 )
    return setErr(p, GPUDS_ERROR, "check: side slot flag is not 0/1");
  if( res[0]+sidesPresent(p)!=p->h.count ){
    snprintf(z, sizeof(z), "check: %llu keys in slots + %llu side keys != count %llu",
             res[0], sidesPresent(p), p->h.count);
    return setErr(p, GPUDS_ERROR, z);
  }
  if( res[1]!=p->h.used ){
    snprintf(z, sizeof(z), "check: %llu non-empty slots != used counter %llu",
             res[1], p->h.used);
    return setErr(p, GPUDS_ERROR, z);
  }
  if( (double)p->h.used > (double)(p->T.nb*TS) ){
    return setErr(p, GPUDS_ERROR, "check: used slots exceed the table");
  }
  return GPUDS_OK;
}

const char *hashErrmsg(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->zErr : ""; }

}  // namespace

extern "C" const gpuds_store_ops gpudsCudaHashOps = {
  "cuda",
  GPUDS_HASH,
  0,              /* one stream and workspace a store */
  hashCreate,
  hashDestroy,
  hashBatch,
  hashLookup,
  hashScan,
  hashBulkLoad,
  hashCount,
  hashInfo,
  hashCheck,
  hashErrmsg,
};
