/*
** gfsl.cu -- the GPU-Friendly Skiplist (GFSL; Moscovici & Petrank, PACT 2017)
** as the CUDA ordered store: gpudsCudaOrderedOps (zBackend "cuda", kind
** GPUDS_ORDERED; see backend/gpuds_backend.h for the contract).
**
** STRUCTURE.  As in the paper: several levels of singly linked lists of
** fixed-size CHUNKS, each read and written by one warp ("team") in a single
** coalesced instruction; chunks come from one pool and are named by 32-bit
** indices; a head array holds the first chunk of every level; a key reaches
** level i+1 only when a split adds a chunk to level i (the minimum key of the
** new chunk is raised, with a pointer to it); searches never lock; inserts
** and deletes lock the chunks they change; a chunk that falls below DSIZE/3
** keys is merged into its successor (which is split first if it is too full)
** and becomes a ZOMBIE that stays traversable until it is unlinked and
** reclaimed.  Each level's first chunk plays the role of the paper's -inf
** entry: a search that finds no key <= k in it steps down to the first chunk
** of the level below; the last chunk of a level has an implicit +inf bound.
** Neither is a key value, so every int64 key is a user key: a chunk holds its
** entry count explicitly instead of marking empty slots with a reserved key.
**
** CHUNK LAYOUT (512 bytes, 128-byte aligned; see struct Chunk):
**
**     bytes   0..239  key[0..29]   int64, ascending, key[0..cnt-1] valid
**     bytes 240..247  max          upper fence: keys of this chunk are <= max
**     bytes 248..251  next         index of the next chunk of the level
**     bytes 252..255  meta         count | LOCK | ZOMBIE | LAST | HEAD | level
**     bytes 256..495  val[0..29]   level 0: the 64-bit words of the keys;
**                                  upper levels: 32-bit down pointers in the
**                                  first 120 bytes (one cache line)
**
** Why: a search step only needs the keys, the fence and the link.  With the
** keys contiguous ("keys contiguous" in the 2025 report) they and the header
** fill exactly two 128-byte lines, and lane i of the warp loads the i-th
** 8-byte word: lanes 0..29 a key each, lane 30 the fence, lane 31 next+meta,
** one fully coalesced 256-byte load.  The paper's interleaved key/value pairs
** would need four lines for the same 30 keys.  On upper levels the down
** pointers are loaded in the same round (one more line, 120 bytes), so a
** step down costs one memory round trip, not two.  On the bottom level the
** value of a found key is one further 8-byte load.
**
** CONCURRENCY AND BATCHES.  A batch is applied in phases, each one kernel
** launch over many warps.  The keys of a batch are distinct (the backend
** contract); a batch that repeats one is refused (GPUDS_MISUSE) after phase
** 2, before anything changes.
**   1. sort the operations by key (CUB, stable, original index kept);
**   2. RESOLVE: one warp per operation searches its key lock-free, writes
**      the operation's (found, old) and derives its net effect: value
**      update in place, insert of an absent key, delete of a present one,
**      or nothing.  (The phase once replayed runs of equal keys in array
**      order, when batches could repeat keys; that part is gone, the search
**      is what every batch needs);
**   3. the memory the rest can need is reserved (pool grown) -- any failure
**      up to here leaves the store untouched;
**   4. value updates are written in place;
**   5. DELETE phases, then INSERT phases, each from level 0 up:
**      in the phase for level L many warps concurrently delete (insert) keys
**      at level L, locking the chunks they change, splitting, merging and
**      making zombies as in the paper.  Levels above L are not modified
**      during the phase, so the descent to level L reads them lock-free with
**      plain cached loads; at level L a warp only reads a chunk's contents
**      while holding its lock (walking right, lock by lock, to the chunk
**      whose range encloses the key).  Splits at level L emit raised keys,
**      which the phase for level L+1 inserts;
**   6. between batches: next pointers and down pointers that lead to zombies
**      or to chunks left of their key's chunk are repaired, zombies are
**      reclaimed into the free list, an empty top level is dropped.
** Invariants used (paper section IV-C): keys only ever move right (splits
** and merges push them into later chunks) and a chunk's max only decreases,
** so a pointer taken at any time leads to a chunk at or left of the key's
** enclosing chunk, from which a rightward walk finds it.
**
** Big batches into small stores (inserts >= half the keys, or an empty store)
** and xBulkLoad rebuild the store instead: the live keys are extracted in
** order, merged with the new ones (CUB DeviceMerge) and every level is built
** bottom-up directly into a new pool (24 keys per chunk on level 0, leaving
** room for inserts; 28 above, where changes are rarer), which is swapped
** in only when complete.
**
** LOOKUPS (xLookup, all-lookup batches) change nothing, so they search
** lock-free with cached read-only loads.  A big batch (>= 2^19 keys) is
** first sorted by key (CUB radix sort over the bits that vary, 32-bit keys
** when they suffice, original index kept); then each warp walks a segment of
** consecutive sorted keys along level 0 like a merge join, holding the chunk
** of the previous key in registers (kLookupSorted): neighbouring keys cost
** no memory access and most others one step right, and results are stored
** at the keys' original positions: for a big batch of random keys, several
** times the rate of unsorted searches, the sort included.  Smaller batches
** search one key per warp (kLookup1).
**
** SCANS use a directory of the bottom level: live level-0 chunks sorted by
** their fence (CUB radix sort) with a prefix sum of their counts (CUB scan),
** built lazily after a change.  A page is then a range of global ranks;
** one warp per chunk copies its part of the range straight to its place.
**
** FILES.  One translation unit, in layers (each file includes nothing of a
** layer above it, and each header compiles on its own):
**   kernels/gfsl/layout.cuh      device layout: chunks, device state, KP/BP
**   kernels/gfsl/device_ops.cuh  warp-level reads, locks, descents, searches
**   kernels/gfsl/kernels.cuh     the kernels (batch phases, build, scans, ...)
**   kernels/gfsl/store.cuh       GfslStore, its constants, and the functions
**                                of this file that ops.cuh and hooks.cuh call
**   kernels/gfsl.cu (this file)  the host store GfslStore: buffers, batches,
**                                lookups, rebuilds, host<->device transfers
**   kernels/gfsl/ops.cuh         gpudsCudaOrderedOps and its entry points
**   kernels/gfsl/hooks.cuh       gfsl:: test and benchmark hooks (gfsl.cuh)
** and, shared with the hash store, kernels/common/: check.cuh (the CUDA
** error check), devmem.cuh (device allocations, counted; the fault hook),
** launch.cuh (grid sizes), hostpipe.cuh (every staged host<->device copy).
*/
#include "gfsl.cuh"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "common/hostpipe.cuh"
#include "common/launch.cuh"

#include <cub/device/device_merge.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gfsl/layout.cuh"
#include "gfsl/device_ops.cuh"
#include "gfsl/kernels.cuh"
#include "gfsl/store.cuh"

/* Record a failed CUDA call on store p (see common/check.cuh).  A failure
** while the store is being changed (p->mutating) leaves it unusable. */
int gpudsCudaFail(GfslStore *p, cudaError_t e, const char *zWhat, const char *zFile, int iLine){
  int rc = gpudsCudaCode(e);
  cudaGetLastError();                      /* clear a non-sticky error */
  if( p ){
    gpudsCudaMessage(p->zErr, sizeof(p->zErr), "gfsl", e, zWhat, zFile, iLine);
    if( p->mutating ){
      p->broken = 1;
      size_t n = strlen(p->zErr);
      snprintf(p->zErr+n, sizeof(p->zErr)-n, " -- store is no longer usable");
    }
  }
  return rc;
}

namespace {

/* Set the store's message; return rc. */
int setMsg(GfslStore *p, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  vsnprintf(p->zErr, sizeof(p->zErr), zFmt, ap);
  va_end(ap);
  return rc;
}

/* Call f on every workspace buffer of the store (GFSL_WORKSPACE and the
** lookup pipeline's slots). */
template<class F> void forEachBuf(GfslStore *p, F f){
#define X(name) f(p->name);
  GFSL_WORKSPACE(X)
#undef X
  for( auto &sl : p->pl ) for( DBuf &b : sl ) f(b);
}

/* Device bytes the store holds (pool, free list, state, workspace). */
uint64_t deviceBytes(GfslStore *p){ return p->mem.bytes; }

/* After a batch, bulk load or lookup: give the workspace back when it
** holds more than a store keeps (gpuds_mem::workspaceOverKeep, against the
** pool's bytes), after the stream is idle. */
void trimWorkspace(GfslStore *p){
  uint64_t ws = 0;
  if( !p ) return;
  forEachBuf(p, [&ws](DBuf &b){ ws += b.cap; });
  if( !gpuds_mem::workspaceOverKeep(ws, (uint64_t)p->cap*sizeof(Chunk)) ) return;
  cudaStreamSynchronize(p->st);
  forEachBuf(p, [p](DBuf &b){ gpuds_mem::releaseBuf(p->mem, b); });
  p->nDir = 0;
  p->dirLevel = -1;
}

/* Make buffer b hold at least nByte bytes (its contents are lost). */
int ensureBuf(GfslStore *p, DBuf &b, size_t nByte){
  GPUDS_CK(p, gpuds_mem::ensure(p->mem, b, nByte, p->st));
  return GPUDS_OK;
}

/* Kernel parameters for the current state. */
KP kp(GfslStore *p, int allocFloor){
  KP P;
  P.pool = p->pool; P.ds = p->ds; P.freeList = p->freeList; P.cap = p->cap;
  P.allocFloor = allocFloor; P.nLevels = p->hs.nLevels;
  return P;
}

/* Refresh the host copy of the device state (synchronizes). */
int readState(GfslStore *p){
  GPUDS_CK(p, cudaMemcpyAsync(p->hsPin, p->ds, sizeof(DevState), cudaMemcpyDeviceToHost, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  memcpy(&p->hs, p->hsPin, sizeof(DevState));
  return GPUDS_OK;
}

/* Read one 32-bit counter of the device state (synchronizes). */
int readU32(GfslStore *p, const unsigned int *dp, unsigned int *pOut){
  GPUDS_CK(p, cudaMemcpyAsync(&p->hsPin->bc.nSel, dp, sizeof(unsigned int), cudaMemcpyDeviceToHost, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  *pOut = p->hsPin->bc.nSel;
  return GPUDS_OK;
}

/* The internal error of the device state, if any, as a store error. */
int deviceErr(GfslStore *p){
  if( p->hs.err==0 ) return GPUDS_OK;
  p->broken = 1;
  return setMsg(p, GPUDS_ERROR, "gfsl: internal error: %s (level %d, chunk %u, key %lld)"
                " -- store is no longer usable", errName(p->hs.err), p->hs.errLevel,
                p->hs.errChunk, (long long)p->hs.errKey);
}

/* Get the pipe's pinned buffers for staged copies, sized for the store's
** chunk (or the default chunk when the store does not chunk lookups); if
** none can be had, h2d/d2h copy from pageable memory. */
void stageReady(GfslStore *p){
  (void)gpuds_pipe::prepare(p->pipe, p->chunk ? p->chunk : gpuds_pipe::kDefaultChunk);
}

/* Copy n bytes host -> device on the store's stream, staged through the
** pipe (common/hostpipe.cuh: the memcpy of one piece overlapping the DMA of
** the other, so the bulk paths, xBatch and xBulkLoad, upload in overlapped
** chunks; they cannot overlap their kernels with the transfers, since
** all-or-nothing needs the whole batch on the device before it is sorted
** and applied).  Returns with the last DMAs possibly in flight. */
int h2d(GfslStore *p, void *dst, const void *src, size_t n){
  if( n==0 ) return GPUDS_OK;
  stageReady(p);
  return gpuds_pipe::upload(p, p->pipe, p->st, dst, src, n);
}

/* Copy n bytes device -> host, staged through the pipe (synchronizes). */
int d2h(GfslStore *p, void *dst, const void *src, size_t n){
  if( n==0 ) return GPUDS_OK;
  stageReady(p);
  return gpuds_pipe::download(p, p->pipe, p->st, dst, src, n);
}

/* The part of growPool that can fail: allocate a pool and free list of
** newCap entries (*pNp, *pNf: what was allocated, also on failure), copy the
** old pool and free list into them, add the new chunks to the free list and
** set the device state's freeTop.  The store itself is not changed. */
int fillGrownPool(GfslStore *p, uint32_t newCap, Chunk **pNp, uint32_t **pNf){
  GPUDS_CK(p, gpuds_mem::allocT(p->mem, pNp, (size_t)newCap*sizeof(Chunk)));
  GPUDS_CK(p, gpuds_mem::allocT(p->mem, pNf, (size_t)newCap*sizeof(uint32_t)));
  Chunk *np = *pNp; uint32_t *nf = *pNf;
  const uint32_t oldCap = p->cap, nAdd = newCap - oldCap;
  const int ft = p->hs.freeTop;
  GPUDS_CK(p, cudaMemcpyAsync(np, p->pool, (size_t)oldCap*sizeof(Chunk), cudaMemcpyDeviceToDevice, p->st));
  GPUDS_CK(p, cudaMemsetAsync(np+oldCap, 0, (size_t)nAdd*sizeof(Chunk), p->st));
  if( ft>0 ) GPUDS_CK(p, cudaMemcpyAsync(nf, p->freeList, (size_t)ft*sizeof(uint32_t), cudaMemcpyDeviceToDevice, p->st));
  kFillFree<<<gridFor(p, nAdd), kBlock, 0, p->st>>>(nf, (uint32_t)ft, nAdd, newCap);
  GPUDS_CK_LAUNCH(p, "kFillFree");
  p->hsPin->freeTop = ft + (int)nAdd;
  GPUDS_CK(p, cudaMemcpyAsync(&p->ds->freeTop, &p->hsPin->freeTop, sizeof(int), cudaMemcpyHostToDevice, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  return GPUDS_OK;
}

/* Make at least nNeed chunks free: grow the pool (new allocation, copy;
** indices stay valid).  Nothing changes on failure. */
int growPool(GfslStore *p, uint64_t nNeed){
  if( (uint64_t)p->hs.freeTop>=nNeed ) return GPUDS_OK;
  uint64_t used = p->cap - (uint64_t)p->hs.freeTop;
  uint64_t newCap = std::max<uint64_t>((uint64_t)p->cap*2, used + nNeed + nNeed/4 + kGrowSlackChunks);
  if( newCap>=kMaxPoolChunks ){
    newCap = kMaxPoolChunks;
    if( newCap-used<nNeed ) return setMsg(p, GPUDS_NOMEM, "gfsl: chunk pool would exceed 2^32 chunks");
  }
  const size_t nByte = newCap*sizeof(Chunk), nFreeByte = newCap*sizeof(uint32_t);
  Chunk *np = nullptr; uint32_t *nf = nullptr;
  int rc = fillGrownPool(p, (uint32_t)newCap, &np, &nf);
  if( rc ){
    /* the old pool is still the store's; the device state was not written
    ** (its freeTop is the last copy, after the synchronize) */
    cudaStreamSynchronize(p->st);
    cudaGetLastError();
    gpuds_mem::release(p->mem, np, nByte);
    gpuds_mem::release(p->mem, nf, nFreeByte);
    return rc;
  }
  gpuds_mem::release(p->mem, p->pool, (size_t)p->cap*sizeof(Chunk));
  gpuds_mem::release(p->mem, p->freeList, (size_t)p->cap*sizeof(uint32_t));
  p->hs.freeTop += (int)(newCap - p->cap);
  p->pool = np; p->freeList = nf; p->cap = (uint32_t)newCap;
  p->dirLevel = -1;
  return GPUDS_OK;
}

/* Temp storage of at least n bytes in p->tmp. */
int ensureTmp(GfslStore *p, size_t n){ return ensureBuf(p, p->tmp, n ? n : 1); }

/* Directory of level `level`: live chunks sorted by fence (dirIdx/dirFence,
** p->nDir of them) and the prefix sums of their counts (dirPre, nDir+1). */
int buildDir(GfslStore *p, int level){
  if( p->dirLevel==level ) return GPUDS_OK;
  int rc;
  uint32_t cap = p->cap;
  if( (rc = ensureBuf(p, p->dirFlag, cap))
   || (rc = ensureBuf(p, p->dirIdxT, (size_t)cap*4))
   || (rc = ensureBuf(p, p->dirIdx, (size_t)cap*4))
   || (rc = ensureBuf(p, p->dirFenceT, (size_t)cap*8))
   || (rc = ensureBuf(p, p->dirFence, (size_t)cap*8))
   || (rc = ensureBuf(p, p->dirCnt, ((size_t)cap+1)*8))
   || (rc = ensureBuf(p, p->dirPre, ((size_t)cap+1)*8)) ) return rc;
  size_t t1 = 0, t2 = 0, t3 = 0;
  thrust::counting_iterator<uint32_t> cnt0(0);
  GPUDS_CK(p, cub::DeviceSelect::Flagged(nullptr, t1, cnt0, ptr<uint8_t>(p->dirFlag), ptr<uint32_t>(p->dirIdxT),
                                     &p->ds->bc.nSel, (int64_t)cap, p->st));
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, t2, ptr<i64>(p->dirFenceT), ptr<i64>(p->dirFence),
                                          ptr<uint32_t>(p->dirIdxT), ptr<uint32_t>(p->dirIdx), (int64_t)cap,
                                          0, 64, p->st));
  GPUDS_CK(p, cub::DeviceScan::ExclusiveSum(nullptr, t3, ptr<u64>(p->dirCnt), ptr<u64>(p->dirPre),
                                        (int64_t)cap+1, p->st));
  if( (rc = ensureTmp(p, std::max(t1, std::max(t2, t3)))) ) return rc;
  KP P = kp(p);
  kDirFlags<<<gridFor(p, cap), kBlock, 0, p->st>>>(P, level, ptr<uint8_t>(p->dirFlag));
  GPUDS_CK_LAUNCH(p, "kDirFlags");
  t1 = p->tmp.cap;
  GPUDS_CK(p, cub::DeviceSelect::Flagged(p->tmp.p, t1, cnt0, ptr<uint8_t>(p->dirFlag), ptr<uint32_t>(p->dirIdxT),
                                     &p->ds->bc.nSel, (int64_t)cap, p->st));
  unsigned int n = 0;
  if( (rc = readU32(p, &p->ds->bc.nSel, &n)) ) return rc;
  kDirFence<<<gridFor(p, n), kBlock, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdxT), n, ptr<i64>(p->dirFenceT));
  GPUDS_CK_LAUNCH(p, "kDirFence");
  t2 = p->tmp.cap;
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(p->tmp.p, t2, ptr<i64>(p->dirFenceT), ptr<i64>(p->dirFence),
                                          ptr<uint32_t>(p->dirIdxT), ptr<uint32_t>(p->dirIdx), (int64_t)n,
                                          0, 64, p->st));
  kDirCounts<<<gridFor(p, (size_t)n+1), kBlock, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), n, ptr<u64>(p->dirCnt));
  GPUDS_CK_LAUNCH(p, "kDirCounts");
  t3 = p->tmp.cap;
  GPUDS_CK(p, cub::DeviceScan::ExclusiveSum(p->tmp.p, t3, ptr<u64>(p->dirCnt), ptr<u64>(p->dirPre),
                                        (int64_t)n+1, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  p->nDir = n;
  p->dirLevel = level;
  return GPUDS_OK;
}

/* Plan and copy one scan page into device arrays; *pnOut entries. */
int scanPage(GfslStore *p, gpuds_scan *s, size_t nMax, i64 *dK, u64 *dV, size_t *pnOut,
             i64 *pLastKey){
  int rc = buildDir(p, 0);
  if( rc ) return rc;
  KP P = kp(p);
  kScanPlan<<<1, 32, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<i64>(p->dirFence), ptr<u64>(p->dirPre),
                                 p->nDir, s->lo, s->hi, s->desc, (u64)nMax);
  GPUDS_CK_LAUNCH(p, "kScanPlan");
  GPUDS_CK(p, cudaMemcpyAsync(&p->hsPin->plan, &p->ds->plan, sizeof(ScanPlan), cudaMemcpyDeviceToHost, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  ScanPlan pl = p->hsPin->plan;
  u64 take = pl.b - pl.a;
  if( take>0 ){
    uint32_t nPos = pl.pb - pl.pa + 1;
    kScanCopy<<<gridWarps(p, nPos), kBlock, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<u64>(p->dirPre),
                                                     pl.pa, nPos, pl.a, pl.b, s->desc, dK, dV);
    GPUDS_CK_LAUNCH(p, "kScanCopy");
  }
  *pnOut = (size_t)take;
  if( take==pl.end-pl.start ) s->done = 1;     /* nothing left in range */
  if( pLastKey && take>0 ){
    GPUDS_CK(p, cudaMemcpyAsync(&p->hsPin->errKey, dK+take-1, sizeof(i64), cudaMemcpyDeviceToHost, p->st));
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
    *pLastKey = p->hsPin->errKey;
  }
  return GPUDS_OK;
}

/* Advance a scan past the last key of a page of `take` entries. */
void scanAdvance(gpuds_scan *s, size_t take, i64 lastKey){
  if( s->done || take==0 ) return;
  if( s->desc ){
    if( lastKey==LLONG_MIN ) s->done = 1; else s->hi = lastKey-1;
  }else{
    if( lastKey==LLONG_MAX ) s->done = 1; else s->lo = lastKey+1;
  }
  if( s->lo>s->hi ) s->done = 1;
}

/* Chunks a bulk build of n keys uses, and its number of levels. */
uint64_t buildChunks(uint64_t n, int *pLevels){
  uint64_t nc = n ? (n+FILL-1)/FILL : 1, total = nc;
  int L = 1;
  while( nc>1 ){
    uint64_t nl = nc-1;
    nc = (nl+FILL_IDX-1)/FILL_IDX;
    total += nc;
    L++;
  }
  if( pLevels ) *pLevels = L;
  return total;
}

/* Build all levels from n sorted distinct keys K/V into a fresh pool of
** newCap chunks (newPool, newFree), filling *pDs.  Needs upK0/upK1/upD0/upD1
** sized for (n/FILL+1) entries. */
int buildAll(GfslStore *p, Chunk *newPool, uint32_t *newFree, uint32_t newCap,
             const i64 *K, const u64 *V, uint64_t n, DevState *pDs){
  memset(pDs, 0, sizeof(*pDs));
  for( int l=0; l<MAXLVL; l++ ) pDs->head[l] = NIL;
  GPUDS_CK(p, cudaMemsetAsync(newPool, 0, (size_t)newCap*sizeof(Chunk), p->st));
  uint64_t nc = n ? (n+FILL-1)/FILL : 1;
  uint32_t base = 0;
  kBuild<<<gridWarps(p, nc), kBlock, 0, p->st>>>(newPool, base, 0, (uint32_t)nc, n, K, V, nullptr, FILL);
  GPUDS_CK_LAUNCH(p, "kBuild");
  pDs->head[0] = base; pDs->levelChunks[0] = (int)nc; pDs->levelKeys[0] = n;
  int L = 1;
  const i64 *prevK = K;
  uint32_t prevBase = base;
  base += (uint32_t)nc;
  while( nc>1 ){
    uint64_t nl = nc-1;
    i64 *uK = ptr<i64>((L&1) ? p->upK0 : p->upK1);
    uint32_t *uD = ptr<uint32_t>((L&1) ? p->upD0 : p->upD1);
    kUpKeys<<<gridFor(p, nl), kBlock, 0, p->st>>>(prevK, (uint32_t)nc, prevBase, L==1 ? FILL : FILL_IDX, uK, uD);
    GPUDS_CK_LAUNCH(p, "kUpKeys");
    uint64_t ncl = (nl+FILL_IDX-1)/FILL_IDX;
    kBuild<<<gridWarps(p, ncl), kBlock, 0, p->st>>>(newPool, base, L, (uint32_t)ncl, nl, uK, nullptr, uD, FILL_IDX);
    GPUDS_CK_LAUNCH(p, "kBuild");
    pDs->head[L] = base; pDs->levelChunks[L] = (int)ncl; pDs->levelKeys[L] = nl;
    prevK = uK; prevBase = base;
    base += (uint32_t)ncl;
    nc = ncl;
    L++;
  }
  pDs->nLevels = L;
  pDs->freeTop = (int)(newCap - base);
  if( newCap>base ){
    kFillFree<<<gridFor(p, newCap-base), kBlock, 0, p->st>>>(newFree, 0, newCap-base, newCap);
    GPUDS_CK_LAUNCH(p, "kFillFree");
  }
  return GPUDS_OK;
}

/* The part of rebuild that can fail: allocate the new pool and free list
** of newCap entries (*pNp, *pNf: what was allocated, also on failure), apply
** the nUpd in-place updates, extract the live keys (total, from the
** directory), drop the nDel deleted ones (kept remain), merge in the nIns
** inserts (fin in all), build every level into the new pool and write the
** device state for it.  The caller swaps the pools on success and frees the
** new one on failure. */
int rebuildInto(GfslStore *p, uint32_t newCap, Chunk **pNp, uint32_t **pNf, uint64_t total,
                uint64_t kept, uint64_t fin, uint64_t nIns, const i64 *insK, const u64 *insV,
                uint32_t nDel, const i64 *delK, uint32_t nUpd, const u64 *updLoc, const u64 *updVal){
  int rc;
  size_t tSel, tMerge;
  GPUDS_CK(p, gpuds_mem::allocT(p->mem, pNp, (size_t)newCap*sizeof(Chunk)));
  GPUDS_CK(p, gpuds_mem::allocT(p->mem, pNf, (size_t)newCap*sizeof(uint32_t)));
  /* From here on the store changes; errors are no longer clean. */
  p->mutating = 1;
  KP P = kp(p);
  if( nUpd ){
    kUpdate<<<gridFor(p, nUpd), kBlock, 0, p->st>>>(P, nUpd, updLoc, updVal);
    GPUDS_CK_LAUNCH(p, "kUpdate");
  }
  const i64 *srcK = ptr<i64>(p->exK);
  const u64 *srcV = ptr<u64>(p->exV);
  if( total>0 ){
    kScanCopy<<<gridWarps(p, p->nDir), kBlock, 0, p->st>>>(P, ptr<uint32_t>(p->dirIdx), ptr<u64>(p->dirPre), 0,
                                                        p->nDir, 0, total, 0, ptr<i64>(p->exK), ptr<u64>(p->exV));
    GPUDS_CK_LAUNCH(p, "kScanCopy");
  }
  if( nDel>0 ){
    kFlagKeep<<<gridFor(p, total), kBlock, 0, p->st>>>(ptr<i64>(p->exK), total, delK, nDel, ptr<uint8_t>(p->exF));
    GPUDS_CK_LAUNCH(p, "kFlagKeep");
    tSel = p->tmp.cap;
    GPUDS_CK(p, cub::DeviceSelect::Flagged(p->tmp.p, tSel, ptr<i64>(p->exK), ptr<uint8_t>(p->exF), ptr<i64>(p->kpK),
                                       &p->ds->bc.nSel, (int64_t)total, p->st));
    tSel = p->tmp.cap;
    GPUDS_CK(p, cub::DeviceSelect::Flagged(p->tmp.p, tSel, ptr<u64>(p->exV), ptr<uint8_t>(p->exF), ptr<u64>(p->kpV),
                                       &p->ds->bc.nSel, (int64_t)total, p->st));
    srcK = ptr<i64>(p->kpK); srcV = ptr<u64>(p->kpV);
  }
  if( nIns>0 ){
    if( kept>0 ){
      tMerge = p->tmp.cap;
      GPUDS_CK(p, cub::DeviceMerge::MergePairs(p->tmp.p, tMerge, srcK, srcV, (int64_t)kept, insK, insV,
                                           (int64_t)nIns, ptr<i64>(p->finK), ptr<u64>(p->finV),
                                           cuda::std::less<i64>(), p->st));
      srcK = ptr<i64>(p->finK); srcV = ptr<u64>(p->finV);
    }else{
      srcK = insK; srcV = insV;
    }
  }
  DevState nds;
  if( (rc = buildAll(p, *pNp, *pNf, newCap, srcK, srcV, fin, &nds)) ) return rc;
  memcpy(p->hsPin, &nds, sizeof(DevState));
  GPUDS_CK(p, cudaMemcpyAsync(p->ds, p->hsPin, sizeof(DevState), cudaMemcpyHostToDevice, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  return GPUDS_OK;
}

/* REBUILD: replace the store by one built from its keys minus the nDel
** sorted delKeys, plus the nIns sorted insK/insV (none of them present),
** after applying the nUpd in-place value updates.  Everything that can fail
** is allocated first; the old pool is kept until the new one is complete. */
int rebuild(GfslStore *p, uint64_t nIns, const i64 *insK, const u64 *insV,
            uint32_t nDel, const i64 *delK, uint32_t nUpd, const u64 *updLoc, const u64 *updVal){
  int rc = buildDir(p, 0);
  if( rc ) return rc;
  uint64_t total = p->hs.levelKeys[0];
  uint64_t kept = total - nDel, fin = kept + nIns;
  int L = 0;
  uint64_t nChunks = buildChunks(fin, &L);
  uint64_t newCap = std::max<uint64_t>(kPoolMinChunks, nChunks + nChunks/4 + kRebuildSlackChunks);
  if( newCap>=kMaxPoolChunks ) return setMsg(p, GPUDS_NOMEM, "gfsl: too many keys for one pool");
  uint64_t up = fin/FILL + 2;
  size_t tSel = 0, tMerge = 0;
  GPUDS_CK(p, cub::DeviceSelect::Flagged(nullptr, tSel, ptr<i64>(p->exK), ptr<uint8_t>(p->exF), ptr<i64>(p->kpK),
                                     &p->ds->bc.nSel, (int64_t)total, p->st));
  GPUDS_CK(p, cub::DeviceMerge::MergePairs(nullptr, tMerge, ptr<i64>(p->kpK), ptr<u64>(p->kpV), (int64_t)kept,
                                       insK, insV, (int64_t)nIns, ptr<i64>(p->finK), ptr<u64>(p->finV),
                                       cuda::std::less<i64>(), p->st));
  if( (rc = ensureBuf(p, p->exK, total*8+8)) || (rc = ensureBuf(p, p->exV, total*8+8))
   || (rc = ensureBuf(p, p->exF, total+1)) || (rc = ensureBuf(p, p->kpK, kept*8+8))
   || (rc = ensureBuf(p, p->kpV, kept*8+8)) || (rc = ensureBuf(p, p->finK, fin*8+8))
   || (rc = ensureBuf(p, p->finV, fin*8+8)) || (rc = ensureBuf(p, p->upK0, up*8))
   || (rc = ensureBuf(p, p->upK1, up*8)) || (rc = ensureBuf(p, p->upD0, up*4))
   || (rc = ensureBuf(p, p->upD1, up*4)) || (rc = ensureTmp(p, std::max(tSel, tMerge))) ) return rc;
  Chunk *np = nullptr; uint32_t *nf = nullptr;
  rc = rebuildInto(p, (uint32_t)newCap, &np, &nf, total, kept, fin, nIns, insK, insV, nDel, delK,
                   nUpd, updLoc, updVal);
  if( rc ){
    /* the new pool is not the store's: free it (the store is unusable if
    ** the failure came after p->mutating was set) */
    cudaStreamSynchronize(p->st);
    cudaGetLastError();
    gpuds_mem::release(p->mem, np, newCap*sizeof(Chunk));
    gpuds_mem::release(p->mem, nf, newCap*sizeof(uint32_t));
    return rc;
  }
  gpuds_mem::release(p->mem, p->pool, (size_t)p->cap*sizeof(Chunk));
  gpuds_mem::release(p->mem, p->freeList, (size_t)p->cap*sizeof(uint32_t));
  p->pool = np; p->freeList = nf; p->cap = (uint32_t)newCap;
  p->dirLevel = -1;
  if( (rc = readState(p)) ) return rc;
  p->last.rebuilt = 1;
  p->mutating = 0;
  return GPUDS_OK;
}

/* Chunks the insert phases of a batch may take, at most, and the
** capacities of the raise lists.
**
** In the insert phase of a level with C chunks at its start and m keys to
** insert, each split turns a full chunk (30 entries, 15 above half) into
** chunks of 16 and 15 entries, so it lowers the potential
** sum(max(0, count-15)) by 14; an insert without a split raises it by at
** most 1, and it starts at most 15*C.  Hence splits <= (15*C + m)/14, and
** splits <= m.  C includes the chunks the delete phases may add (one per
** delete at most).  Delete phases allocate only above the first R free-list
** positions (KP.allocFloor), so the insert phases always find their R. */
uint64_t reservation(GfslStore *p, uint64_t nIns, const unsigned int *delAt,
                     uint64_t *pRlCap, uint64_t *pDrCap){
  uint64_t R = MAXLVL + 2, dsum = 0, rlCap = 1;
  int topDel = -1;
  for( int l=0; l<MAXLVL; l++ ){ dsum += delAt[l]; if( delAt[l] ) topDel = l; }
  uint64_t m = nIns;
  for( int l=0; l<MAXLVL; l++ ){
    if( m==0 && l>topDel+1 ) break;
    uint64_t C = (l<p->hs.nLevels ? (uint64_t)p->hs.levelChunks[l] : 1) + delAt[l];
    uint64_t s = std::min<uint64_t>(m, (15*C + m)/14 + 1);
    R += s;
    if( l>=p->hs.nLevels ) R += 1;
    uint64_t mNext = s + delAt[l];
    rlCap = std::max<uint64_t>(rlCap, mNext+1);
    m = mNext;
  }
  *pRlCap = rlCap;
  *pDrCap = dsum+1;
  return R;
}

/* Locate the n sorted keys gK on level `level` (gT) and group them by
** chunk (heads in gH); *pnG groups, *pMax keys in the largest. */
int locateGroups(GfslStore *p, const KP &P, int level, uint32_t n, const i64 *K,
                 uint32_t *pnG, uint32_t *pMax){
  int rc;
  kLocate<<<gridWarps(p, n), kBlock, 0, p->st>>>(P, level, n, K, ptr<uint32_t>(p->gT));
  GPUDS_CK_LAUNCH(p, "kLocate");
  kGroupFlags<<<gridFor(p, n), kBlock, 0, p->st>>>(n, ptr<uint32_t>(p->gT), ptr<uint8_t>(p->gF));
  GPUDS_CK_LAUNCH(p, "kGroupFlags");
  thrust::counting_iterator<uint32_t> cnt0(0);
  size_t tb = p->tmp.cap;
  GPUDS_CK(p, cub::DeviceSelect::Flagged(p->tmp.p, tb, cnt0, ptr<uint8_t>(p->gF), ptr<uint32_t>(p->gH),
                                     &p->ds->bc.nSel, (int64_t)n, p->st));
  unsigned int nG = 0;
  if( (rc = readU32(p, &p->ds->bc.nSel, &nG)) ) return rc;
  GPUDS_CK(p, cudaMemsetAsync(&p->ds->bc.maxGroup, 0, sizeof(unsigned int), p->st));
  kGroupMax<<<gridFor(p, nG), kBlock, 0, p->st>>>(nG, ptr<uint32_t>(p->gH), n, p->ds);
  GPUDS_CK_LAUNCH(p, "kGroupMax");
  unsigned int mx = 0;
  if( (rc = readU32(p, &p->ds->bc.maxGroup, &mx)) ) return rc;
  *pnG = nG;
  if( pMax ) *pMax = mx;
  return GPUDS_OK;
}

/* INCREMENTAL: the concurrent delete and insert phases, then the repairs.
** The level-0 inserts are in gK0/gV0 (sorted), located and grouped already
** (gT, gH, nG0 groups); R chunks are reserved (see reservation()). */
int applyIncremental(GfslStore *p, BP &B, uint32_t nUpd, uint64_t R, uint32_t nG0){
  int rc;
  p->mutating = 1;
  p->dirLevel = -1;
  KP P = kp(p, (int)R);               /* delete phases: keep R for inserts */
  if( nUpd ){
    kUpdate<<<gridFor(p, nUpd), kBlock, 0, p->st>>>(P, nUpd, ptr<u64>(p->updLoc), ptr<u64>(p->updVal));
    GPUDS_CK_LAUNCH(p, "kUpdate");
  }
  /* Delete phases, level 0 first: one warp per key, concurrent. */
  for( int l=0; l<P.nLevels; l++ ){
    if( p->hs.bc.delAtLevel[l]==0 ) continue;
    kDelete<<<gridWarps(p, B.nDel), kBlock, 0, p->st>>>(P, B, l);
    GPUDS_CK_LAUNCH(p, "kDelete");
  }
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  uint32_t nDR = std::min<uint32_t>(p->hs.bc.nDelRaise, B.drCap);
  int drMax = p->hs.bc.delRaiseMaxLvl;
  if( p->hs.freeTop<(int)R ) return setMsg(p, GPUDS_ERROR, "gfsl: internal error: reservation lost");
  P.allocFloor = 0;                   /* insert phases: R chunks are there */
  /* Insert phases, level 0 first. */
  Item *rl[2] = { B.rl[0], B.rl[1] };
  unsigned int *rlCount = p->ds->bc.rlCount;
  GPUDS_CK(p, cudaMemsetAsync(rlCount, 0, 2*sizeof(unsigned int), p->st));
  if( B.nIns>0 ){
    kInsertGroups<<<gridWarps(p, nG0), kBlock, 0, p->st>>>(P, 0, nG0, ptr<uint32_t>(p->gH), B.nIns,
        ptr<i64>(p->gK0), ptr<u64>(p->gV0), ptr<uint32_t>(p->gT), rl[1], &rlCount[1], B.rlCap);
    GPUDS_CK_LAUNCH(p, "kInsertGroups");
  }
  size_t tb;
  for( int l=1; l<MAXLVL; l++ ){
    if( nDR>0 && l<=drMax ){
      kAppendDR<<<gridFor(p, nDR), kBlock, 0, p->st>>>(B.dr, nDR, l, rl[l&1], &rlCount[l&1], B.rlCap, p->ds);
      GPUDS_CK_LAUNCH(p, "kAppendDR");
    }
    unsigned int m = 0;
    if( (rc = readU32(p, &rlCount[l&1], &m)) ) return rc;
    m = std::min<uint32_t>(m, B.rlCap);
    GPUDS_CK(p, cudaMemsetAsync(&rlCount[(l+1)&1], 0, sizeof(unsigned int), p->st));
    if( m==0 ){
      if( l>=drMax ) break;
      continue;
    }
    if( l>=P.nLevels ){
      kEnsureLevel<<<1, 32, 0, p->st>>>(P, l);
      GPUDS_CK_LAUNCH(p, "kEnsureLevel");
      P.nLevels = l+1;
    }
    kItemsToArrays<<<gridFor(p, m), kBlock, 0, p->st>>>(rl[l&1], m, ptr<i64>(p->gK1), ptr<u64>(p->gV1));
    GPUDS_CK_LAUNCH(p, "kItemsToArrays");
    tb = p->tmp.cap;
    GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(p->tmp.p, tb, ptr<i64>(p->gK1), ptr<i64>(p->gK0),
                                            ptr<u64>(p->gV1), ptr<u64>(p->gV0), (int64_t)m, 0, 64, p->st));
    uint32_t nG = 0;
    if( (rc = locateGroups(p, P, l, m, ptr<i64>(p->gK0), &nG, nullptr)) ) return rc;
    kInsertGroups<<<gridWarps(p, nG), kBlock, 0, p->st>>>(P, l, nG, ptr<uint32_t>(p->gH), m,
        ptr<i64>(p->gK0), ptr<u64>(p->gV0), ptr<uint32_t>(p->gT), rl[(l+1)&1], &rlCount[(l+1)&1], B.rlCap);
    GPUDS_CK_LAUNCH(p, "kInsertGroups");
  }
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  /* Repairs between batches. */
  if( p->hs.bc.nSplit || p->hs.bc.nMerge ){
    P.nLevels = p->hs.nLevels;
    kFixNext<<<gridFor(p, p->cap), kBlock, 0, p->st>>>(P);
    GPUDS_CK_LAUNCH(p, "kFixNext");
    kFixDown<<<gridFor(p, (size_t)p->cap*32), kBlock, 0, p->st>>>(P);
    GPUDS_CK_LAUNCH(p, "kFixDown");
    kReclaim<<<gridFor(p, p->cap), kBlock, 0, p->st>>>(P);
    GPUDS_CK_LAUNCH(p, "kReclaim");
  }
  kDropLevels<<<1, 32, 0, p->st>>>(P);
  GPUDS_CK_LAUNCH(p, "kDropLevels");
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  p->mutating = 0;
  return GPUDS_OK;
}

/* Ensure the per-operation workspace for a batch of n. */
int ensureBatchWs(GfslStore *p, size_t n){
  int rc;
  if( (rc = ensureBuf(p, p->ukA, n*8)) || (rc = ensureBuf(p, p->ukB, n*8))
   || (rc = ensureBuf(p, p->pA, n*4)) || (rc = ensureBuf(p, p->pB, n*4))
   || (rc = ensureBuf(p, p->netVal, n*8)) || (rc = ensureBuf(p, p->netH, n))
   || (rc = ensureBuf(p, p->flIns, n)) || (rc = ensureBuf(p, p->flDel, n))
   || (rc = ensureBuf(p, p->insPos, n*4)) || (rc = ensureBuf(p, p->delPos, n*4))
   || (rc = ensureBuf(p, p->delKeys, n*8)) || (rc = ensureBuf(p, p->updLoc, n*8))
   || (rc = ensureBuf(p, p->updVal, n*8)) ) return rc;
  size_t t1 = 0, t2 = 0;
  cub::DoubleBuffer<u64> dk(ptr<u64>(p->ukA), ptr<u64>(p->ukB));
  cub::DoubleBuffer<uint32_t> dv(ptr<uint32_t>(p->pA), ptr<uint32_t>(p->pB));
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, t1, dk, dv, (int64_t)n, 0, 64, p->st));
  thrust::counting_iterator<uint32_t> cnt0(0);
  GPUDS_CK(p, cub::DeviceSelect::Flagged(nullptr, t2, cnt0, ptr<uint8_t>(p->flIns), ptr<uint32_t>(p->insPos),
                                     &p->ds->bc.nIns, (int64_t)n, p->st));
  return ensureTmp(p, std::max(t1, t2));
}

/* Launch an unsorted lookup kernel on stream st (default: the store's):
** kLookup (tiled) for variant 1, else kLookup1. */
int launchLookup(GfslStore *p, const KP &P, size_t n, const i64 *dKey, uint8_t *dFound, u64 *dVal,
                 cudaStream_t st){
  if( !st ) st = p->st;
  if( p->lookupVariant==1 ){
    kLookup<<<gridWarps(p, (n+31)/32), kBlock, 0, st>>>(P, n, dKey, dFound, dVal);
  }else{
    kLookup1<<<gridWarps(p, n), kBlock, 0, st>>>(P, n, dKey, dFound, dVal);
  }
  GPUDS_CK_LAUNCH(p, "kLookup");
  return GPUDS_OK;
}

/* Batches of at least this many lookups take the sorted path (variant 0):
** below it the sort costs more than the walk saves (2^18 random lookups
** run faster unsorted, 2^20 sorted). */
constexpr size_t SORTED_LOOKUP_MIN = (size_t)1<<19;

/* Enqueue the sorted lookup of n keys (dKey, all within kBase + [0, 2^bits))
** on stream st: kPrepLookupSort into A/IA, the CUB radix sort (A/B, IA/IB
** as double buffers, tmp of tmpBytes temp storage), kLookupSorted. */
template<typename K>
int enqueueSorted(GfslStore *p, const KP &P, cudaStream_t st, size_t n, const i64 *dKey, i64 kBase,
                  int bits, K *A, K *B, uint32_t *IA, uint32_t *IB, void *tmp, size_t tmpBytes,
                  uint8_t *dFound, u64 *dVal){
  cub::DoubleBuffer<K> dk(A, B);
  cub::DoubleBuffer<uint32_t> dv(IA, IB);
  kPrepLookupSort<K><<<gridFor(p, n), kBlock, 0, st>>>(n, dKey, kBase, dk.Current(), dv.Current());
  GPUDS_CK_LAUNCH(p, "kPrepLookupSort");
  size_t tb = tmpBytes;
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(tmp, tb, dk, dv, (int64_t)n, 0, bits, st));
  /* segments of up to kSortedSegMax keys, at least ~2 per warp the GPU holds */
  const size_t nWarps = (size_t)p->nSM*kSortedWarpsPerSM;
  size_t seg = n/(2*nWarps);
  seg = seg<1 ? 1 : (seg>kSortedSegMax ? kSortedSegMax : seg);
  const size_t nSeg = (n + seg - 1)/seg;
  kLookupSorted<K><<<gridWarps(p, nSeg), kBlock, 0, st>>>(P, (uint32_t)n, (uint32_t)seg,
      dk.Current(), kBase, dv.Current(), dFound, dVal);
  GPUDS_CK_LAUNCH(p, "kLookupSorted");
  return GPUDS_OK;
}

/* The sorted lookup path: sort the keys (CUB radix sort over the bits that
** vary in the batch, 32-bit keys when they suffice, original index kept),
** then kLookupSorted.  Promises the results of launchLookup; *pFallback is
** set (and nothing launched) when its workspace cannot be had, so the caller
** can use an unsorted kernel, which needs none. */
template<typename K>
int lookupSortedDev(GfslStore *p, const KP &P, size_t n, const i64 *dKey, i64 kBase, int bits,
                    uint8_t *dFound, u64 *dVal, bool *pFallback){
  int rc;
  *pFallback = false;
  cub::DoubleBuffer<K> dk(nullptr, nullptr);
  cub::DoubleBuffer<uint32_t> dv(nullptr, nullptr);
  size_t tb = 0;
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, tb, dk, dv, (int64_t)n, 0, bits, p->st));
  if( (rc = ensureBuf(p, p->ukA, n*sizeof(K))) || (rc = ensureBuf(p, p->ukB, n*sizeof(K)))
   || (rc = ensureBuf(p, p->pA, n*4)) || (rc = ensureBuf(p, p->pB, n*4)) || (rc = ensureTmp(p, tb)) ){
    if( rc!=GPUDS_NOMEM ) return rc;
    p->zErr[0] = 0;
    *pFallback = true;
    return GPUDS_OK;
  }
  return enqueueSorted<K>(p, P, p->st, n, dKey, kBase, bits, ptr<K>(p->ukA), ptr<K>(p->ukB),
                          ptr<uint32_t>(p->pA), ptr<uint32_t>(p->pB), p->tmp.p, p->tmp.cap,
                          dFound, dVal);
}

/* Lookups of n device keys: the sorted path for big batches (variant 0) or
** always (variant 3); otherwise (and when the sort's workspace does not fit
** in memory) an unsorted kernel. */
int lookupDev(GfslStore *p, size_t n, const i64 *dKey, uint8_t *dFound, u64 *dVal,
              bool haveStats){
  if( n==0 ) return GPUDS_OK;
  if( n>kMaxBatchOps ) return setMsg(p, GPUDS_ERROR, "gfsl: batch of %zu lookups is too large", n);
  KP P = kp(p);
  int rc;
  bool sorted = p->lookupVariant==3 || (p->lookupVariant==0 && n>=SORTED_LOOKUP_MIN);
  if( sorted ){
    if( !haveStats ){            /* the key span (batchDev has it already) */
      kInitBatch<<<1, 32, 0, p->st>>>(p->ds);
      GPUDS_CK_LAUNCH(p, "kInitBatch");
      kStats<<<gridFor(p, n), kBlock, 0, p->st>>>(n, nullptr, dKey, p->ds);
      GPUDS_CK_LAUNCH(p, "kStats");
      if( (rc = readState(p)) ) return rc;
    }
    const i64 kBase = p->hs.bc.kMin;
    const u64 span = (u64)p->hs.bc.kMax - (u64)kBase;
    const int bits = span ? 64 - __builtin_clzll(span) : 1;
    bool fallback = false;
    rc = bits<=32 ? lookupSortedDev<uint32_t>(p, P, n, dKey, kBase, bits, dFound, dVal, &fallback)
                  : lookupSortedDev<u64>(p, P, n, dKey, kBase, bits, dFound, dVal, &fallback);
    if( rc ) return rc;
    sorted = !fallback;
  }
  if( !sorted && (rc = launchLookup(p, P, n, dKey, dFound, dVal)) ) return rc;
  if( (rc = readState(p)) ) return rc;
  return deviceErr(p);
}

/* xLookup of n > p->chunk host keys through the pipeline of hostpipe.cuh.
** Each chunk is looked up on its own: under variant 3 by the sorted path,
** otherwise (the default, 0, included) by the unsorted kernel of the variant
** (kLookup for 1, else kLookup1).  Why the default does not sort chunks
** (bench/results/bench_gfsl-*-host.log): the pipeline is bound by the
** host's copies, several times longer than a chunk's GPU work, sorted or
** not, and the sort needs the chunk's key span, which the host takes while
** it copies the keys: that pass costs more than the sort saves.
** Each slot has its own device buffers (p->pl), kept between calls.
** *pDone is false (and nothing done) when the pipe cannot be had (no pinned
** memory): the caller then takes the single-shot path. */
int lookupPipelined(GfslStore *p, size_t n, const int64_t *aKey, uint8_t *aFound, uint64_t *aVal,
                    bool *pDone){
  enum { PK = 0, PF, PV, SA, SB, IA, IB, TMP };
  int rc;
  *pDone = false;
  if( !gpuds_pipe::prepare(p->pipe, p->chunk) ) return GPUDS_OK;
  *pDone = true;
  const size_t C = p->pipe.chunk;
  const int variant = p->lookupVariant;
  for( int s=0; s<2; s++ ){
    if( (rc = ensureBuf(p, p->pl[s][PK], C*8)) || (rc = ensureBuf(p, p->pl[s][PF], C))
     || (rc = ensureBuf(p, p->pl[s][PV], C*8)) ) return rc;
  }
  /* the sort's buffers are optional, as in lookupDev: without them every
  ** chunk takes the unsorted kernel */
  bool sortable = variant==3;
  if( sortable ){
    size_t t32 = 0, t64 = 0;
    {
      cub::DoubleBuffer<uint32_t> dk(nullptr, nullptr), dv(nullptr, nullptr);
      GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, t32, dk, dv, (int64_t)C, 0, 32, p->st));
    }
    {
      cub::DoubleBuffer<u64> dk(nullptr, nullptr);
      cub::DoubleBuffer<uint32_t> dv(nullptr, nullptr);
      GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, t64, dk, dv, (int64_t)C, 0, 64, p->st));
    }
    for( int s=0; s<2 && sortable; s++ ){
      DBuf *B = p->pl[s];
      if( (rc = ensureBuf(p, B[SA], C*8)) || (rc = ensureBuf(p, B[SB], C*8))
       || (rc = ensureBuf(p, B[IA], C*4)) || (rc = ensureBuf(p, B[IB], C*4))
       || (rc = ensureBuf(p, B[TMP], std::max<size_t>(std::max(t32, t64), 1))) ){
        if( rc!=GPUDS_NOMEM ) return rc;
        p->zErr[0] = 0;
        sortable = false;
      }
    }
  }
  KP P = kp(p);
  int64_t *dK[2]; uint8_t *dF[2]; uint64_t *dV[2];
  for( int s=0; s<2; s++ ){
    dK[s] = ptr<int64_t>(p->pl[s][PK]); dF[s] = ptr<uint8_t>(p->pl[s][PF]); dV[s] = ptr<uint64_t>(p->pl[s][PV]);
  }
  rc = gpuds_pipe::runLookups(p, p->pipe, p->st, n, aKey, aFound, aVal, sortable, dK, dF, dV,
    [&](int s, cudaStream_t st, size_t m, const int64_t *k, uint8_t *f, uint64_t *v,
        int64_t kMin, int64_t kMax) -> int {
      const i64 *dk = reinterpret_cast<const i64*>(k);
      u64 *dv = reinterpret_cast<u64*>(v);
      if( sortable ){
        const u64 span = (u64)kMax - (u64)kMin;
        const int bits = span ? 64 - __builtin_clzll(span) : 1;
        DBuf *B = p->pl[s];
        size_t need = 0;
        cub::DoubleBuffer<uint32_t> iv(nullptr, nullptr);
        if( bits<=32 ){
          cub::DoubleBuffer<uint32_t> kv(nullptr, nullptr);
          GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, need, kv, iv, (int64_t)m, 0, bits, st));
          if( need<=B[TMP].cap ){
            return enqueueSorted<uint32_t>(p, P, st, m, dk, kMin, bits, ptr<uint32_t>(B[SA]),
                ptr<uint32_t>(B[SB]), ptr<uint32_t>(B[IA]), ptr<uint32_t>(B[IB]), B[TMP].p,
                B[TMP].cap, f, dv);
          }
        }else{
          cub::DoubleBuffer<u64> kv(nullptr, nullptr);
          GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, need, kv, iv, (int64_t)m, 0, bits, st));
          if( need<=B[TMP].cap ){
            return enqueueSorted<u64>(p, P, st, m, dk, kMin, bits, ptr<u64>(B[SA]),
                ptr<u64>(B[SB]), ptr<uint32_t>(B[IA]), ptr<uint32_t>(B[IB]), B[TMP].p,
                B[TMP].cap, f, dv);
          }
        }
      }
      return launchLookup(p, P, m, dk, f, dv, st);
    });
  if( rc ) return rc;
  if( (rc = readState(p)) ) return rc;
  return deviceErr(p);
}

/* The whole batch on device arrays (see the top of this file). */
int batchDev(GfslStore *p, size_t n, const uint8_t *dOp, const i64 *dKey, const u64 *dVal,
             uint8_t *dFound, u64 *dOld){
  int rc;
  memset(&p->last, 0, sizeof(p->last));
  if( n==0 ) return GPUDS_OK;
  if( n>kMaxBatchOps ) return setMsg(p, GPUDS_ERROR, "gfsl: batch of %zu operations is too large", n);
  kInitBatch<<<1, 32, 0, p->st>>>(p->ds);
  GPUDS_CK_LAUNCH(p, "kInitBatch");
  kStats<<<gridFor(p, n), kBlock, 0, p->st>>>(n, dOp, dKey, p->ds);
  GPUDS_CK_LAUNCH(p, "kStats");
  if( (rc = readState(p)) ) return rc;
  if( p->hs.bc.opMax>GPUDS_OP_DELETE ) return setMsg(p, GPUDS_MISUSE, "gfsl: invalid operation code %u", p->hs.bc.opMax);
  if( p->hs.bc.opMax==GPUDS_OP_LOOKUP ) return lookupDev(p, n, dKey, dFound, dOld, true);
  if( (rc = ensureBatchWs(p, n)) ) return rc;

  /* 1. sort by key (only the bits that vary), keeping original indices */
  i64 kBase = p->hs.bc.kMin;
  u64 span = (u64)p->hs.bc.kMax - (u64)kBase;
  int bits = span ? 64 - __builtin_clzll(span) : 1;
  kPrepSort<<<gridFor(p, n), kBlock, 0, p->st>>>(n, dKey, kBase, ptr<u64>(p->ukA), ptr<uint32_t>(p->pA));
  GPUDS_CK_LAUNCH(p, "kPrepSort");
  cub::DoubleBuffer<u64> dk(ptr<u64>(p->ukA), ptr<u64>(p->ukB));
  cub::DoubleBuffer<uint32_t> dv(ptr<uint32_t>(p->pA), ptr<uint32_t>(p->pB));
  size_t tb = p->tmp.cap;
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(p->tmp.p, tb, dk, dv, (int64_t)n, 0, bits, p->st));

  BP B;
  memset(&B, 0, sizeof(B));
  B.n = (uint32_t)n; B.sk = dk.Current(); B.kBase = kBase; B.perm = dv.Current();
  B.op = dOp; B.val = dVal; B.found = dFound; B.old = dOld;
  B.netVal = ptr<u64>(p->netVal); B.netH = ptr<uint8_t>(p->netH);
  B.flIns = ptr<uint8_t>(p->flIns); B.flDel = ptr<uint8_t>(p->flDel);
  B.updLoc = ptr<u64>(p->updLoc); B.updVal = ptr<u64>(p->updVal);
  B.insPos = ptr<uint32_t>(p->insPos); B.delPos = ptr<uint32_t>(p->delPos);
  B.delKeys = ptr<i64>(p->delKeys);

  /* 2. resolve each operation, select inserts and deletes (stable: sorted by key) */
  KP P = kp(p);
  kResolve<<<gridWarps(p, n), kBlock, 0, p->st>>>(P, B);
  GPUDS_CK_LAUNCH(p, "kResolve");
  thrust::counting_iterator<uint32_t> cnt0(0);
  tb = p->tmp.cap;
  GPUDS_CK(p, cub::DeviceSelect::Flagged(p->tmp.p, tb, cnt0, B.flIns, B.insPos, &p->ds->bc.nIns, (int64_t)n, p->st));
  tb = p->tmp.cap;
  GPUDS_CK(p, cub::DeviceSelect::Flagged(p->tmp.p, tb, cnt0, B.flDel, B.delPos, &p->ds->bc.nDel, (int64_t)n, p->st));
  if( (rc = readState(p)) ) return rc;
  if( (rc = deviceErr(p)) ) return rc;
  if( p->hs.bc.nDup ){
    /* nothing has changed yet: refuse the batch rather than corrupt the store */
    return setMsg(p, GPUDS_MISUSE, "gfsl: key %lld (and %u more) repeated in one batch:"
                  " the keys of a batch must be distinct", (long long)p->hs.bc.dupKey,
                  p->hs.bc.nDup-1);
  }
  B.nIns = p->hs.bc.nIns; B.nDel = p->hs.bc.nDel;
  uint32_t nUpd = p->hs.bc.nUpd;
  p->last.nInsert = B.nIns; p->last.nDelete = B.nDel; p->last.nUpdate = nUpd;

  if( B.nIns==0 && B.nDel==0 ){
    if( nUpd ){
      kUpdate<<<gridFor(p, nUpd), kBlock, 0, p->st>>>(P, nUpd, B.updLoc, B.updVal);
      GPUDS_CK_LAUNCH(p, "kUpdate");
      GPUDS_CK(p, cudaStreamSynchronize(p->st));
    }
  }else{
    /* 3. choose: rebuild, or concurrent phases (and reserve for them) */
    uint64_t count = p->hs.levelKeys[0];
    bool bRebuild = p->rebuildMode==2
        || (p->rebuildMode==0 && B.nIns>0 && ((uint64_t)B.nIns*2>=count || count<kRebuildBelowKeys));
    uint64_t rlCap = 0, drCap = 0, R = 0;
    if( !bRebuild ){
      R = reservation(p, B.nIns, p->hs.bc.delAtLevel, &rlCap, &drCap);
      if( R>0x7fff0000ull ) return setMsg(p, GPUDS_NOMEM, "gfsl: batch needs too many chunks (%llu)", (unsigned long long)R);
    }
    size_t gcap = std::max<size_t>(B.nIns, rlCap) + 1;
    if( (rc = ensureBuf(p, p->gK0, gcap*8)) || (rc = ensureBuf(p, p->gV0, gcap*8)) ) return rc;
    if( !bRebuild ){
      if( (rc = ensureBuf(p, p->gK1, gcap*8)) || (rc = ensureBuf(p, p->gV1, gcap*8))
       || (rc = ensureBuf(p, p->gT, gcap*4)) || (rc = ensureBuf(p, p->gF, gcap))
       || (rc = ensureBuf(p, p->gH, gcap*4)) || (rc = ensureBuf(p, p->rl0, rlCap*sizeof(Item)))
       || (rc = ensureBuf(p, p->rl1, rlCap*sizeof(Item))) || (rc = ensureBuf(p, p->dr, drCap*sizeof(Item))) ) return rc;
      size_t t1 = 0, t2 = 0;
      GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, t1, ptr<i64>(p->gK1), ptr<i64>(p->gK0),
                                              ptr<u64>(p->gV1), ptr<u64>(p->gV0), (int64_t)gcap, 0, 64, p->st));
      GPUDS_CK(p, cub::DeviceSelect::Flagged(nullptr, t2, cnt0, ptr<uint8_t>(p->gF), ptr<uint32_t>(p->gH),
                                         &p->ds->bc.nSel, (int64_t)gcap, p->st));
      if( (rc = ensureTmp(p, std::max(t1, t2))) ) return rc;
      uint64_t dsum = 0;
      for( int l=0; l<MAXLVL; l++ ) dsum += p->hs.bc.delAtLevel[l];
      uint64_t soft = std::min<uint64_t>(dsum, kMergeSlackBase + dsum/kMergeSlackDiv);  /* for merges' splits */
      if( (rc = growPool(p, R + soft)) ) return rc;
      P = kp(p);
    }
    if( B.nIns ){
      kGatherIns<<<gridFor(p, B.nIns), kBlock, 0, p->st>>>(B, ptr<i64>(p->gK0), ptr<u64>(p->gV0));
      GPUDS_CK_LAUNCH(p, "kGatherIns");
    }
    if( B.nDel ){
      kGatherDel<<<gridFor(p, B.nDel), kBlock, 0, p->st>>>(B);
      GPUDS_CK_LAUNCH(p, "kGatherDel");
    }
    uint32_t nG0 = 0, maxG = 0;
    if( !bRebuild && B.nIns ){
      /* where the inserts land, before anything changes; a huge group (a
      ** burst of keys into one gap, e.g. sorted appends) is cheaper to
      ** rebuild than to insert one by one */
      if( (rc = locateGroups(p, P, 0, B.nIns, ptr<i64>(p->gK0), &nG0, &maxG)) ) return rc;
      if( p->rebuildMode==0 && (uint64_t)maxG>count/kGroupRebuildDiv + kGroupRebuildBase ) bRebuild = true;
    }
    if( bRebuild ){
      rc = rebuild(p, B.nIns, ptr<i64>(p->gK0), ptr<u64>(p->gV0), B.nDel, B.delKeys, nUpd, B.updLoc, B.updVal);
      if( rc ) return rc;
    }else{
      B.rl[0] = ptr<Item>(p->rl0); B.rl[1] = ptr<Item>(p->rl1); B.rlCap = (uint32_t)rlCap;
      B.dr = ptr<Item>(p->dr); B.drCap = (uint32_t)drCap;
      if( (rc = applyIncremental(p, B, nUpd, R, nG0)) ) return rc;
      p->last.nSplit = p->hs.bc.nSplit;
      p->last.nMerge = p->hs.bc.nMerge;
    }
  }
  p->dirLevel = -1;
  if( (rc = readState(p)) ) return rc;
  p->last.nLevels = p->hs.nLevels;
  p->last.nChunks = p->cap - (uint64_t)p->hs.freeTop;
  return deviceErr(p);
}

/* Bulk build from device arrays (sorted or not) of keys not in the store. */
int bulkDev(GfslStore *p, size_t n, const i64 *dKey, const u64 *dVal, int bSorted){
  int rc;
  memset(&p->last, 0, sizeof(p->last));
  if( n==0 ) return GPUDS_OK;
  if( n>kMaxBatchOps ) return setMsg(p, GPUDS_ERROR, "gfsl: bulk load of %zu keys is too large", n);
  const i64 *K = dKey;
  const u64 *V = dVal;
  if( !bSorted ){
    if( (rc = ensureBuf(p, p->insK, n*8)) || (rc = ensureBuf(p, p->insV, n*8)) ) return rc;
    size_t tb = 0;
    GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, tb, dKey, ptr<i64>(p->insK), dVal, ptr<u64>(p->insV),
                                            (int64_t)n, 0, 64, p->st));
    if( (rc = ensureTmp(p, tb)) ) return rc;
    tb = p->tmp.cap;
    GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(p->tmp.p, tb, dKey, ptr<i64>(p->insK), dVal, ptr<u64>(p->insV),
                                            (int64_t)n, 0, 64, p->st));
    K = ptr<i64>(p->insK); V = ptr<u64>(p->insV);
  }
  rc = rebuild(p, n, K, V, 0, nullptr, 0, nullptr, nullptr);
  if( rc ) return rc;
  p->last.nInsert = n;
  p->last.nLevels = p->hs.nLevels;
  p->last.nChunks = p->cap - (uint64_t)p->hs.freeTop;
  return deviceErr(p);
}

/* Reject calls on a store an earlier internal failure left unusable. */
int checkUsable(GfslStore *p){
  if( !p->broken ) return GPUDS_OK;
  if( !p->zErr[0] ) setMsg(p, GPUDS_ERROR, "gfsl: store is no longer usable after an earlier error");
  return GPUDS_ERROR;
}

}  // namespace

#include "gfsl/ops.cuh"
#include "gfsl/hooks.cuh"
