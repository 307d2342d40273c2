/*
** kernels/gfsl/ops.cuh -- the ops table: gpudsCudaOrderedOps and its
** entry points, which convert the gpuds_store handle to GfslStore.
**
** Part of the GFSL store's one translation unit: included by
** kernels/gfsl.cu only, after the host store it calls.
*/
#pragma once

#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include "gpuds_backend.h"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "common/hostpipe.cuh"
#include "common/launch.cuh"
#include "gfsl/layout.cuh"
#include "gfsl/kernels.cuh"
#include "gfsl/store.cuh"

namespace {


void gfslDestroy(gpuds_store *pStore);

/* Set up a new store p (zeroed but for the knobs): stream, pinned landing
** area, device state, a pool of kPoolMinChunks chunks holding the empty
** level 0.  On failure p holds what was made so far (gfslDestroy frees it). */
int gfslInit(GfslStore *p){
  GPUDS_CK(p, cudaDeviceGetAttribute(&p->nSM, cudaDevAttrMultiProcessorCount, 0));
  GPUDS_CK(p, cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
  GPUDS_CK(p, gpuds_mem::allocPinnedT(&p->hsPin, sizeof(DevState)));
  GPUDS_CK(p, gpuds_mem::allocT(p->mem, &p->ds, sizeof(DevState)));
  GPUDS_CK(p, gpuds_mem::allocT(p->mem, &p->pool, (size_t)kPoolMinChunks*sizeof(Chunk)));
  p->cap = kPoolMinChunks;
  GPUDS_CK(p, gpuds_mem::allocT(p->mem, &p->freeList, (size_t)p->cap*sizeof(uint32_t)));
  /* empty store: level 0 is one chunk, head and last, no key */
  DevState ds;
  memset(&ds, 0, sizeof(ds));
  for( int l=0; l<MAXLVL; l++ ) ds.head[l] = NIL;
  ds.head[0] = 0; ds.nLevels = 1; ds.levelChunks[0] = 1; ds.freeTop = (int)p->cap-1;
  GPUDS_CK(p, cudaMemsetAsync(p->pool, 0, (size_t)p->cap*sizeof(Chunk), p->st));
  kFillFree<<<1, kBlock, 0, p->st>>>(p->freeList, 0, p->cap-1, p->cap);
  GPUDS_CK_LAUNCH(p, "kFillFree");
  Chunk c0;
  memset(&c0, 0, sizeof(c0));
  c0.next = NIL; c0.meta = M_LIVE|M_HEAD|M_LAST;
  GPUDS_CK(p, cudaMemcpyAsync(p->pool, &c0, sizeof(c0), cudaMemcpyHostToDevice, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  GPUDS_CK(p, cudaMemcpyAsync(p->ds, &ds, sizeof(ds), cudaMemcpyHostToDevice, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  memcpy(&p->hs, &ds, sizeof(ds));
  return GPUDS_OK;
}

int gfslCreate(gpuds_store **ppStore, char **pzErr){
  *ppStore = nullptr;
  if( pzErr ) *pzErr = nullptr;
  char zDev[256];
  auto fail = [&](const char *zMsg) -> int {
    if( pzErr ){
      *pzErr = (char*)malloc(strlen(zMsg)+1);
      if( *pzErr ) strcpy(*pzErr, zMsg);
    }
    return GPUDS_ERROR;
  };
  if( !gpudsCudaDevice(zDev, sizeof(zDev), nullptr, nullptr) ) return fail(zDev);
  GfslStore *p = new (std::nothrow) GfslStore();
  if( !p ) return GPUDS_NOMEM;
  p->dirLevel = -1;
  p->chunk = gpuds_pipe::defaultChunk();
  p->rebuildMode = gpudsConfig()->eGfslRebuild;
  int rc = gfslInit(p);
  if( rc ){
    char zMsg[sizeof(p->zErr)+32];
    snprintf(zMsg, sizeof(zMsg), "%s (creating the store)", p->zErr);
    gfslDestroy((gpuds_store*)p);
    fail(zMsg);
    return rc;
  }
  *ppStore = (gpuds_store*)p;
  return GPUDS_OK;
}

void gfslDestroy(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  if( !p ) return;
  if( p->st ) cudaStreamSynchronize(p->st);
  forEachBuf(p, [p](DBuf &b){ gpuds_mem::releaseBuf(p->mem, b); });
  gpuds_pipe::release(p->pipe);
  gpuds_mem::release(p->mem, p->pool, (size_t)p->cap*sizeof(Chunk));
  gpuds_mem::release(p->mem, p->freeList, (size_t)p->cap*sizeof(uint32_t));
  gpuds_mem::release(p->mem, p->ds, sizeof(DevState));
  if( p->hsPin ) cudaFreeHost(p->hsPin);
  if( p->st ) cudaStreamDestroy(p->st);
  cudaGetLastError();
  delete p;
}

int gfslBatchCall(gpuds_store *pStore, size_t n, const uint8_t *aOp, const int64_t *aKey,
              const uint64_t *aVal, uint8_t *aFound, uint64_t *aOld){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( n==0 ) return GPUDS_OK;
  bool anyMod = false;
  for( size_t i=0; i<n; i++ ){
    if( aOp[i]>GPUDS_OP_DELETE ) return setMsg(p, GPUDS_MISUSE, "gfsl: invalid operation code %u at %zu", aOp[i], i);
    if( aOp[i]!=GPUDS_OP_LOOKUP ) anyMod = true;
  }
  if( (rc = ensureBuf(p, p->wKey, n*8)) || (rc = ensureBuf(p, p->wFound, n))
   || (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
  if( anyMod && ((rc = ensureBuf(p, p->wOp, n)) || (rc = ensureBuf(p, p->wVal, n*8))) ) return rc;
  if( (rc = h2d(p, p->wKey.p, aKey, n*8)) ) return rc;
  if( !anyMod ){
    rc = lookupDev(p, n, ptr<i64>(p->wKey), ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld));
  }else{
    if( (rc = h2d(p, p->wOp.p, aOp, n)) ) return rc;
    if( aVal ){ if( (rc = h2d(p, p->wVal.p, aVal, n*8)) ) return rc; }
    else GPUDS_CK(p, cudaMemsetAsync(p->wVal.p, 0, n*8, p->st));
    rc = batchDev(p, n, ptr<uint8_t>(p->wOp), ptr<i64>(p->wKey), ptr<u64>(p->wVal),
                  ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld));
  }
  if( rc ) return rc;
  if( aFound && (rc = d2h(p, aFound, p->wFound.p, n)) ) return rc;
  if( aOld && (rc = d2h(p, aOld, p->wOld.p, n*8)) ) return rc;
  return GPUDS_OK;
}

int gfslLookupCall(gpuds_store *pStore, size_t n, const int64_t *aKey, uint8_t *aFound, uint64_t *aVal){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( n==0 ) return GPUDS_OK;
  if( p->chunk && n>p->chunk && n<=kMaxBatchOps ){
    /* big batches: the chunked pipeline (hostpipe.cuh) */
    bool done = false;
    rc = lookupPipelined(p, n, aKey, aFound, aVal, &done);
    if( done ) return rc;
  }
  /* single-shot: keys up through the staging buffers, one lookupDev, results
  ** down */
  if( (rc = ensureBuf(p, p->wKey, n*8)) || (rc = ensureBuf(p, p->wFound, n))
   || (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
  if( (rc = h2d(p, p->wKey.p, aKey, n*8)) ) return rc;
  if( (rc = lookupDev(p, n, ptr<i64>(p->wKey), ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld))) ) return rc;
  if( aFound && (rc = d2h(p, aFound, p->wFound.p, n)) ) return rc;
  if( aVal && (rc = d2h(p, aVal, p->wOld.p, n*8)) ) return rc;
  return GPUDS_OK;
}

int gfslScan(gpuds_store *pStore, gpuds_scan *s, size_t nMax, int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  *pnOut = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( s->done ) return GPUDS_OK;
  if( s->lo>s->hi ){ s->done = 1; return GPUDS_OK; }
  /* size the page: at most nMax, at most the keys in the store */
  size_t cap = (size_t)std::min<u64>((u64)nMax, p->hs.levelKeys[0]);
  if( (rc = ensureBuf(p, p->scanK, cap*8+8)) || (rc = ensureBuf(p, p->scanV, cap*8+8)) ) return rc;
  size_t take = 0;
  if( (rc = scanPage(p, s, cap, ptr<i64>(p->scanK), ptr<u64>(p->scanV), &take, nullptr)) ) return rc;
  if( (rc = d2h(p, aKey, p->scanK.p, take*8)) ) return rc;
  if( aVal && (rc = d2h(p, aVal, p->scanV.p, take*8)) ) return rc;
  *pnOut = take;
  if( take>0 ) scanAdvance(s, take, (i64)aKey[take-1]);
  return GPUDS_OK;
}

int gfslBulkLoadCall(gpuds_store *pStore, size_t n, const int64_t *aKey, const uint64_t *aVal){
  GfslStore *p = (GfslStore*)pStore;
  int rc;
  p->zErr[0] = 0;
  if( (rc = checkUsable(p)) ) return rc;
  if( n==0 ) return GPUDS_OK;
  for( size_t i=1; i<n; i++ ){
    if( aKey[i-1]>=aKey[i] ) return setMsg(p, GPUDS_MISUSE, "gfsl: bulk load keys not strictly ascending at %zu", i);
  }
  if( (rc = ensureBuf(p, p->wKey, n*8)) || (rc = ensureBuf(p, p->wVal, n*8))
   || (rc = ensureBuf(p, p->wFound, n)) ) return rc;
  if( (rc = h2d(p, p->wKey.p, aKey, n*8)) ) return rc;
  if( aVal ){ if( (rc = h2d(p, p->wVal.p, aVal, n*8)) ) return rc; }
  else GPUDS_CK(p, cudaMemsetAsync(p->wVal.p, 0, n*8, p->st));
  uint64_t count = p->hs.levelKeys[0];
  bool bRebuild = p->rebuildMode!=1 && (count==0 || (uint64_t)n*2>=count);
  if( bRebuild && count>0 ){
    /* the contract says no key is present; if one is, take the batch path
    ** (same result as upserts) rather than hold a key twice */
    if( (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
    if( (rc = lookupDev(p, n, ptr<i64>(p->wKey), ptr<uint8_t>(p->wFound), nullptr)) ) return rc;
    if( (rc = ensureBuf(p, p->wOp, n)) ) return rc;
    /* any found?  reuse kStats on the found flags as "ops" */
    kInitBatch<<<1, 32, 0, p->st>>>(p->ds);
    GPUDS_CK_LAUNCH(p, "kInitBatch");
    kStats<<<gridFor(p, n), kBlock, 0, p->st>>>(n, ptr<uint8_t>(p->wFound), ptr<i64>(p->wKey), p->ds);
    GPUDS_CK_LAUNCH(p, "kStats");
    if( (rc = readState(p)) ) return rc;
    if( p->hs.bc.opMax ) bRebuild = false;
  }
  if( bRebuild ) return bulkDev(p, n, ptr<i64>(p->wKey), ptr<u64>(p->wVal), 1);
  if( (rc = ensureBuf(p, p->wOp, n)) || (rc = ensureBuf(p, p->wOld, n*8)) ) return rc;
  GPUDS_CK(p, cudaMemsetAsync(p->wOp.p, GPUDS_OP_UPSERT, n, p->st));
  return batchDev(p, n, ptr<uint8_t>(p->wOp), ptr<i64>(p->wKey), ptr<u64>(p->wVal),
                  ptr<uint8_t>(p->wFound), ptr<u64>(p->wOld));
}

/* xBatch, xLookup, xBulkLoad: the calls above, then the workspace trimmed
** (trimWorkspace), whatever their outcome. */
int gfslBatch(gpuds_store *pStore, size_t n, const uint8_t *aOp, const int64_t *aKey,
              const uint64_t *aVal, uint8_t *aFound, uint64_t *aOld){
  int rc = gfslBatchCall(pStore, n, aOp, aKey, aVal, aFound, aOld);
  trimWorkspace((GfslStore*)pStore);
  return rc;
}
int gfslLookup(gpuds_store *pStore, size_t n, const int64_t *aKey, uint8_t *aFound, uint64_t *aVal){
  int rc = gfslLookupCall(pStore, n, aKey, aFound, aVal);
  trimWorkspace((GfslStore*)pStore);
  return rc;
}
int gfslBulkLoad(gpuds_store *pStore, size_t n, const int64_t *aKey, const uint64_t *aVal){
  int rc = gfslBulkLoadCall(pStore, n, aKey, aVal);
  trimWorkspace((GfslStore*)pStore);
  return rc;
}

int64_t gfslCount(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  return (int64_t)p->hs.levelKeys[0];
}

void gfslInfo(gpuds_store *pStore, char *zBuf, size_t nBuf){
  GfslStore *p = (GfslStore*)pStore;
  if( !zBuf || nBuf==0 ) return;
  snprintf(zBuf, nBuf, "{\"structure\":\"gfsl\",\"keys\":%lld,\"chunks_used\":%llu,"
           "\"levels\":%d,\"device_bytes\":%llu}",
           (long long)p->hs.levelKeys[0], (unsigned long long)(p->cap - (uint64_t)p->hs.freeTop),
           p->hs.nLevels, (unsigned long long)deviceBytes(p));
}

/* Invariant checker (see the list in gfslCheck's body). */
int gfslCheckImpl(GfslStore *p){
  int rc;
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  DevState hs = p->hs;
  if( hs.nLevels<1 || hs.nLevels>MAXLVL ) return setMsg(p, GPUDS_ERROR, "gfsl check: bad level count %d", hs.nLevels);
  KP P = kp(p);
  /* 1. chunk states and the free list */
  GPUDS_CK(p, cudaMemsetAsync(&p->ds->chk, 0, sizeof(CheckRes), p->st));
  kCheckStates<<<gridFor(p, p->cap), kBlock, 0, p->st>>>(P, hs.freeTop);
  GPUDS_CK_LAUNCH(p, "kCheckStates");
  if( (rc = readState(p)) ) return rc;
  CheckRes c = p->hs.chk;
  uint64_t liveWant = 0;
  for( int l=0; l<hs.nLevels; l++ ) liveWant += (uint64_t)hs.levelChunks[l];
  if( c.nZombie ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u zombie chunks left between batches", c.nZombie);
  if( c.nLive!=liveWant ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u live chunks, level counters say %llu",
                                        c.nLive, (unsigned long long)liveWant);
  if( c.nFree!=(unsigned)hs.freeTop ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u free chunks, free list holds %d",
                                                    c.nFree, hs.freeTop);
  if( c.nBadFree ) return setMsg(p, GPUDS_ERROR, "gfsl check: %u free-list entries name chunks in use", c.nBadFree);
  /* 2. every level: sorted, fences right, linked in fence order from its
  ** head, counts right; every index key leads to its key below */
  static const char *azCode[] = { "", "level field wrong", "count > 30", "left locked",
    "head chunk wrong", "last chunk wrong", "empty inner chunk", "fences not increasing",
    "next pointer does not lead to the following chunk", "keys unsorted / above max / not above previous max",
    "down pointer to a chunk that is not live on the level below", "down walk broken",
    "index key missing on the level below", "key not found by search from the top",
    "search from the top found a different value" };
  for( int l=0; l<hs.nLevels; l++ ){
    p->dirLevel = -1;
    if( (rc = buildDir(p, l)) ) return rc;
    if( p->nDir!=(uint32_t)hs.levelChunks[l] ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: level %d has %u live chunks, counter says %d",
                    l, p->nDir, hs.levelChunks[l]);
    }
    GPUDS_CK(p, cudaMemsetAsync(&p->ds->chk, 0, sizeof(CheckRes), p->st));
    kCheckLevel<<<gridWarps(p, p->nDir), kBlock, 0, p->st>>>(P, l, ptr<uint32_t>(p->dirIdx), ptr<i64>(p->dirFence), p->nDir);
    GPUDS_CK_LAUNCH(p, "kCheckLevel");
    if( l>0 ){
      kCheckIndex<<<gridFor(p, (size_t)p->nDir*32), kBlock, 0, p->st>>>(P, l, ptr<uint32_t>(p->dirIdx), p->nDir);
      GPUDS_CK_LAUNCH(p, "kCheckIndex");
    }
    if( (rc = readState(p)) ) return rc;
    c = p->hs.chk;
    if( c.code ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: level %d, chunk %u (position %d, key %lld): %s",
                    c.level, c.chunk, c.pos, (long long)c.key, c.code<15 ? azCode[c.code] : "?");
    }
    if( c.sum!=hs.levelKeys[l] ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: level %d holds %llu keys, counter says %llu",
                    l, (unsigned long long)c.sum, (unsigned long long)hs.levelKeys[l]);
    }
  }
  /* 3. every bottom-level key is found by a search from the top */
  p->dirLevel = -1;
  if( (rc = buildDir(p, 0)) ) return rc;
  uint64_t n = hs.levelKeys[0];
  if( n>0 ){
    if( (rc = ensureBuf(p, p->exK, n*8)) || (rc = ensureBuf(p, p->exV, n*8))
     || (rc = ensureBuf(p, p->chkFound, n)) || (rc = ensureBuf(p, p->chkVal, n*8)) ) return rc;
    kScanCopy<<<gridWarps(p, p->nDir), kBlock, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<u64>(p->dirPre), 0,
                                                        p->nDir, 0, n, 0, ptr<i64>(p->exK), ptr<u64>(p->exV));
    GPUDS_CK_LAUNCH(p, "kScanCopy");
    if( (rc = launchLookup(p, P, n, ptr<i64>(p->exK), ptr<uint8_t>(p->chkFound), ptr<u64>(p->chkVal))) ) return rc;
    GPUDS_CK(p, cudaMemsetAsync(&p->ds->chk, 0, sizeof(CheckRes), p->st));
    kCheckFound<<<gridFor(p, n), kBlock, 0, p->st>>>(n, ptr<i64>(p->exK), ptr<u64>(p->exV), ptr<uint8_t>(p->chkFound),
                                                  ptr<u64>(p->chkVal), p->ds);
    GPUDS_CK_LAUNCH(p, "kCheckFound");
    if( (rc = readState(p)) ) return rc;
    if( (rc = deviceErr(p)) ) return rc;
    c = p->hs.chk;
    if( c.code ){
      return setMsg(p, GPUDS_ERROR, "gfsl check: key %lld (rank %d): %s", (long long)c.key, c.pos,
                    azCode[c.code]);
    }
  }
  return GPUDS_OK;
}

int gfslCheck(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return gfslCheckImpl(p);
}

const char *gfslErrmsg(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  return p ? p->zErr : "";
}

}  // namespace

extern "C" const gpuds_store_ops gpudsCudaOrderedOps = {
  "cuda",
  GPUDS_ORDERED,
  0,              /* one stream and workspace a store */
  gfslCreate,
  gfslDestroy,
  gfslBatch,
  gfslLookup,
  gfslScan,
  gfslBulkLoad,
  gfslCount,
  gfslInfo,
  gfslCheck,
  gfslErrmsg,
};
