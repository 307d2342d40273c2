// hash.cu -- the GPU hash store behind gpuhash tables: gpudsCudaHashOps
// (zBackend "cuda", kind GPUDS_HASH).  Keys are int64 (full range), each with
// one 64-bit word.
//
// SCHEME: bucketed linear probing, one operation per tile of 4 threads.
//   * A bucket is 64 bytes: 4 slots of (key, value), 16 bytes each; two
//     buckets share a 128-byte cache line.  64 bytes is the unit the memory
//     system moves for a random access (two 32-byte sectors, one DRAM burst),
//     so a probe costs exactly one access and a hit finds its value in the
//     bytes already read.  (A first version with 128-byte buckets of 8 keys
//     followed by 8 values needed a second access per hit, and missed the
//     find-hit target.)
//   * A tile of 4 threads probes a bucket with one coalesced 64-byte load
//     (16 bytes per thread) and decides it with ballots: hit, or EMPTY slot
//     seen (miss), or go on to the next bucket.  Each tile applies one
//     operation at a time, so the warp stays converged and memory-level
//     parallelism comes from occupancy (thousands of tiles per GPU).
//   * A key's home bucket is mulhi(fmix64(key), nBuckets); probing goes to
//     the next bucket (wrapping) until a bucket holds the key or has an EMPTY
//     slot.
//   * Why bucketed linear probing rather than bucketed cuckoo or iceberg: SQL
//     does all of find-hit, find-miss, insert and delete.  Up to load ~0.85
//     nearly every operation ends in its home bucket: one 64-byte read for a
//     hit or a miss, plus a CAS and a store into the same sector for an
//     insert.  Cuckoo must read every candidate bucket on a miss (2-3
//     accesses) and moves keys on insert; iceberg reads a primary and two
//     secondary buckets on a miss.  Keys never move once placed, so lookups,
//     updates and deletes run concurrently with inserts of other keys without
//     locks, and a delete is a single tombstone store.
//   * Slot state lives in the key word: kEmptyKey (never used since the last
//     rehash) or kTombKey (deleted).  A user key equal to one of these two bit
//     patterns is kept in one of two side slots (in Meta), so no user key is
//     lost.  Invariant: if key k sits in bucket Y, no bucket from home(k) up
//     to Y holds an EMPTY slot.  It holds because slots only go EMPTY -> key
//     -> TOMB -> key ..., never back to EMPTY (only a rehash makes EMPTY
//     slots), and an insert takes the first free slot (EMPTY or TOMB) it can
//     claim by CAS, scanning from the home bucket.  Tombstones are reused by
//     inserts and all dropped by the next rehash.
//
// BATCHES: the backend contract (gpuds_backend.h) is that the keys of one
// batch are distinct, so operations on different keys commute and every op
// owns its key.  (A general path for repeated keys, a radix sort by hash bits
// and per-group sequential kernels, served no caller and was removed.)
// ONE KERNEL (xBatch, xBulkLoad, batchDevice, upsertDistinctDevice): all ops
// run in one kernel, kRun<M_MIXED>, in any order, one op per tile.  A lookup
// concurrent with inserts/deletes of other keys is exact: its key never
// moves, inserts only fill free slots and deletes leave tombstones, so no
// EMPTY slot appears between its home bucket and its slot.  The
// alternatives lost (bench/results/bench_hash-*-2e26.log): two ops per tile
// with both home buckets loaded first takes 52 registers, which halves the
// occupancy; lookups first (read-only, two per tile), then the mutations,
// wins only at high load.  The probe is written as separate steps
// (probeBucket/tileProbeFrom): the same algorithm written as one loop
// compiles to code with fewer registers (40 against 44) that ran the mixed
// batches and the inserts markedly slower.
//
// GROWTH: before a batch the table is resized so that used slots (keys +
// tombstones) + upserts of the batch stay <= kMaxLoad; a rehash builds a new
// table on the GPU and swaps it in only when complete, so running out of GPU
// memory leaves the store unchanged (GPUDS_NOMEM).  After a batch that leaves
// the table below kShrinkLoad it is rehashed down.  A bulk load into an
// empty table sizes it at kBulkLoad; a batch's scratch beyond a quarter of
// the table (or 32 MiB) is given back after it (trimScratch).
//
// FILES: one translation unit, in layers (each file includes nothing of a
// layer above it, and each header compiles on its own):
//   kernels/hash/layout.cuh      buckets, slots, the table, Meta
//   kernels/hash/device_ops.cuh  the tile's probe, claim, insert, key state
//   kernels/hash/kernels.cuh     the kernels (kRun, kLookup2, rehash, check, ...)
//   kernels/hash/store.cuh       GpuHashStore and the functions of this file
//                                that ops.cuh and hooks.cuh call
//   kernels/hash.cu (this file)  the host store GpuHashStore: scratch, growth,
//                                batches, host<->device transfers
//   kernels/hash/ops.cuh         gpudsCudaHashOps and its entry points
//   kernels/hash/hooks.cuh       gpuds_hash:: test and benchmark hooks (hash.cuh)
// and, shared with the GFSL store, kernels/common/: check.cuh (the CUDA error
// check), devmem.cuh (device allocations, counted; the fault hook),
// launch.cuh (grid sizes), hostpipe.cuh (every staged host<->device copy).
#include "gpuds_backend.h"
#include "hash.cuh"
#include "common/check.cuh"
#include "common/devmem.cuh"
#include "common/hostpipe.cuh"
#include "common/launch.cuh"

#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hash/layout.cuh"
#include "hash/device_ops.cuh"
#include "hash/kernels.cuh"
#include "hash/store.cuh"

// ------------------------------------------------------------------ host --

// Record a failed CUDA call on store p (see common/check.cuh).
int gpudsCudaFail(GpuHashStore *p, cudaError_t e, const char *zWhat, const char *zFile, int iLine){
  (void)cudaGetLastError();     // a recovered error must not resurface later
  gpudsCudaMessage(p->zErr, sizeof(p->zErr), "gpuhash", e, zWhat, zFile, iLine);
  return gpudsCudaCode(e);
}

namespace {

// Free device memory of the store (NULL is a no-op).
void devFree(GpuHashStore *p, void *ptr, size_t n){ gpuds_mem::release(p->mem, ptr, n); }

int setErr(GpuHashStore *p, int rc, const char *zMsg){
  snprintf(p->zErr, sizeof(p->zErr), "gpuhash: %s", zMsg);
  return rc;
}

// Buckets needed to hold nKeys at load factor `load` (at least kMinBuckets).
ull bucketsFor(ull nKeys, double load){
  double nb = (double)nKeys/load/TS;
  ull r = (ull)nb;
  if( (double)r<nb ) r++;
  return r<kMinBuckets ? kMinBuckets : r;
}

ull sidesPresent(const GpuHashStore *p){
  return (p->h.sidePresent[0]?1:0) + (p->h.sidePresent[1]?1:0);
}

// Make the scratch buffer at least n bytes (contents not kept).  On failure
// the store is unchanged apart from having no scratch.
int ensureScratch(GpuHashStore *p, size_t n){
  GPUDS_CK(p, gpuds_mem::ensure(p->mem, p->scratch, n, p->st));
  return GPUDS_OK;
}

// Give the scratch back when it holds more than a store keeps
// (gpuds_mem::workspaceOverKeep, against the table's bytes).
void trimScratch(GpuHashStore *p){
  if( !gpuds_mem::workspaceOverKeep(p->scratch.cap, (uint64_t)p->T.nb*sizeof(Bucket)) ) return;
  cudaStreamSynchronize(p->st);
  gpuds_mem::releaseBuf(p->mem, p->scratch);
}

// Copy *dMeta to the host mirror (synchronises the stream).  Promises
// GPUDS_ERROR if a kernel reported it could not place a key.
int readMeta(GpuHashStore *p){
  GPUDS_CK(p, cudaMemcpyAsync(&p->h, p->dMeta, sizeof(Meta), cudaMemcpyDeviceToHost, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  if( p->h.err ) return setErr(p, GPUDS_ERROR, "internal error: a key found no free slot");
  return GPUDS_OK;
}

// The part of rehash that can fail: allocate a table of newNb buckets into
// *pNt (also on failure: what was allocated), move every key of the table
// into it and set the used counter.  The store still uses its old table.
int rehashInto(GpuHashStore *p, ull newNb, Table *pNt){
  const size_t bytes = (size_t)newNb*sizeof(Bucket);
  const ull used = p->h.count - sidesPresent(p);
  GPUDS_CK(p, gpuds_mem::alloc(p->mem, (void**)&pNt->b, bytes));
  pNt->nb = newNb;
  GPUDS_CK(p, cudaMemsetAsync(pNt->b, 0xFE, bytes, p->st));
  if( p->h.used>0 ){
    kRehash<<<gridFor(p, (size_t)p->T.nb*TS*TS, (const void*)kRehash), kBlock, 0, p->st>>>(
        p->T.b, p->T.nb, *pNt, p->dMeta);
    GPUDS_CK_LAUNCH(p, "kRehash");
  }
  GPUDS_CK(p, cudaMemcpyAsync(&p->dMeta->used, &used, sizeof(ull), cudaMemcpyHostToDevice, p->st));
  return readMeta(p);
}

// Rebuild the table with newNb buckets (drops tombstones).  Promises: on
// success the table holds the same keys; on failure (GPUDS_NOMEM when the new
// table does not fit) the old table is untouched and still in use.
int rehash(GpuHashStore *p, ull newNb){
  Table NT;
  NT.b = nullptr; NT.nb = newNb;
  const int rc = rehashInto(p, newNb, &NT);
  if( rc ){
    cudaStreamSynchronize(p->st);
    (void)cudaGetLastError();
    devFree(p, NT.b, (size_t)newNb*sizeof(Bucket));
    return rc;
  }
  devFree(p, p->T.b, (size_t)p->T.nb*sizeof(Bucket));
  p->T = NT;
  p->nRehash++;
  return GPUDS_OK;
}

// Make room for `extra` more keys before a batch (see kMaxLoad).  Promises:
// afterwards used + extra <= kMaxLoad * slots, or an error with the table
// unchanged.
int ensureRoom(GpuHashStore *p, ull extra){
  const ull slots = p->T.nb*TS;
  if( (double)(p->h.used+extra) <= kMaxLoad*(double)slots ) return GPUDS_OK;
  const ull need = p->h.count - sidesPresent(p) + extra;
  ull nb = bucketsFor(need, kGrowLoad);
  if( nb<p->T.nb && (double)need>=kShrinkLoad*(double)slots ) nb = p->T.nb;
  return rehash(p, nb);
}

// After a batch with deletes: shrink when the table is nearly empty.  A
// failure is ignored (the table is just bigger than needed).
void maybeShrink(GpuHashStore *p){
  const ull keys = p->h.count - sidesPresent(p);
  if( p->T.nb<=kMinBuckets || (double)keys>=kShrinkLoad*(double)(p->T.nb*TS) ) return;
  const ull nb = bucketsFor(keys, kGrowLoad);
  if( nb>=p->T.nb ) return;
  char zSave[sizeof(p->zErr)];
  memcpy(zSave, p->zErr, sizeof(zSave));
  if( rehash(p, nb)!=GPUDS_OK ) memcpy(p->zErr, zSave, sizeof(zSave));
}

// Scratch layout of a batch of n ops: device copies of the inputs and
// outputs (host calls).
struct Layout {
  size_t oKey, oVal, oOp, oOld, oFound;
  size_t total;
};

// Compute the layout; `io`: include I/O arrays (else only the minimum).
void layoutBatch(size_t n, bool io, Layout *L){
  size_t o = 0;
  memset(L, 0, sizeof(*L));
  if( io ){
    L->oKey = o;   o = alignUp(o+8*n);
    L->oVal = o;   o = alignUp(o+8*n);
    L->oOp = o;    o = alignUp(o+n);
    L->oOld = o;   o = alignUp(o+8*n);
    L->oFound = o; o = alignUp(o+n);
  }
  L->total = o<256 ? 256 : o;
}

// Apply a batch of distinct keys whose arrays are on the device.  nUps/nDel:
// number of upserts/deletes.  Promises the xBatch semantics; on error before
// any kernel ran the store is unchanged.
int applyBatch(GpuHashStore *p, size_t n, const uint8_t *dOp, int defOp,
               const ull *dKey, const ull *dVal, uint8_t *dFound, ull *dOld,
               ull nUps, ull nDel){
  int rc = GPUDS_OK;
  const bool pure = nUps==0 && nDel==0;
  Table T;
  if( !pure ){
    rc = ensureRoom(p, nUps);
    if( rc ) return rc;
  }
  T = p->T;
  if( pure ){
    if( gLookupIlp==2 ){
      kLookup2<<<gridFor(p, (n+1)/2*TS, (const void*)kLookup2), kBlock, 0, p->st>>>(
          T, p->dMeta, n, dKey, dFound, dOld);
      GPUDS_CK_LAUNCH(p, "kLookup2");
    }else{
      kRun<M_LOOKUP><<<gridFor(p, n*TS, (const void*)kRun<M_LOOKUP>), kBlock, 0, p->st>>>(
          T, p->dMeta, n, nullptr, nullptr, GPUDS_OP_LOOKUP, dKey, nullptr, nullptr, dFound, dOld);
      GPUDS_CK_LAUNCH(p, "kRun<lookup>");
    }
  }else{
    kRun<M_MIXED><<<gridFor(p, n*TS, (const void*)kRun<M_MIXED>), kBlock, 0, p->st>>>(
        T, p->dMeta, n, nullptr, dOp, defOp, dKey, dVal, nullptr, dFound, dOld);
    GPUDS_CK_LAUNCH(p, "kRun<mixed>");
  }
  rc = readMeta(p);
  if( rc ) return rc;
  if( nDel ) maybeShrink(p);
  return GPUDS_OK;
}

// Count op codes on the host.  Promises GPUDS_MISUSE for an invalid code.
int countOps(GpuHashStore *p, size_t n, const uint8_t *aOp, ull *pUps, ull *pDel){
  ull u = 0, d = 0;
  for( size_t i=0; i<n; i++ ){
    const uint8_t o = aOp[i];
    if( o>GPUDS_OP_DELETE ){
      char z[96];
      snprintf(z, sizeof(z), "invalid operation code %d at index %zu", (int)o, i);
      return setErr(p, GPUDS_MISUSE, z);
    }
    u += o==GPUDS_OP_UPSERT;
    d += o==GPUDS_OP_DELETE;
  }
  *pUps = u; *pDel = d;
  return GPUDS_OK;
}

// Make the store's pipe ready for its chunk size.  False when it cannot be
// had, e.g. no pinned memory: the caller then takes the single-shot path,
// which needs none.
bool pipeReady(GpuHashStore *p){
  return p->chunk!=0 && gpuds_pipe::prepare(p->pipe, p->chunk);
}

// The transfers and the batch of hostBatch (which validated the batch,
// counted its ops and sized the scratch for layout L); the caller makes sure
// nothing stays in flight on error.
int hostBatchBody(GpuHashStore *p, size_t n, const uint8_t *aOp, int defOp,
                  const int64_t *aKey, const uint64_t *aVal, uint8_t *aFound,
                  uint64_t *aOld, ull nUps, ull nDel, const Layout &L){
  int rc;
  char *S = (char*)p->scratch.p, *H = nullptr;
  const bool staged = n>p->chunk && pipeReady(p);
  if( staged ){
    if( (rc = gpuds_pipe::upload(p, p->pipe, p->st, S+L.oKey, aKey, 8*n)) ) return rc;
    if( aVal ){
      if( (rc = gpuds_pipe::upload(p, p->pipe, p->st, S+L.oVal, aVal, 8*n)) ) return rc;
    }else GPUDS_CK(p, cudaMemsetAsync(S+L.oVal, 0, 8*n, p->st));
    if( aOp ){
      if( (rc = gpuds_pipe::upload(p, p->pipe, p->st, S+L.oOp, aOp, n)) ) return rc;
    }else GPUDS_CK(p, cudaMemsetAsync(S+L.oOp, defOp, n, p->st));
  }else{
    H = (char*)gpuds_pipe::single(p->pipe, L.oFound+n);   // inputs and outputs packed as in scratch
    if( H ){
      memcpy(H+L.oKey, aKey, 8*n);
      if( aVal ) memcpy(H+L.oVal, aVal, 8*n); else memset(H+L.oVal, 0, 8*n);
      if( aOp ) memcpy(H+L.oOp, aOp, n); else memset(H+L.oOp, defOp, n);
      GPUDS_CK(p, cudaMemcpyAsync(S, H, L.oOld, cudaMemcpyHostToDevice, p->st));
    }else{
      GPUDS_CK(p, cudaMemcpyAsync(S+L.oKey, aKey, 8*n, cudaMemcpyHostToDevice, p->st));
      if( aVal ) GPUDS_CK(p, cudaMemcpyAsync(S+L.oVal, aVal, 8*n, cudaMemcpyHostToDevice, p->st));
      else GPUDS_CK(p, cudaMemsetAsync(S+L.oVal, 0, 8*n, p->st));
      if( aOp ) GPUDS_CK(p, cudaMemcpyAsync(S+L.oOp, aOp, n, cudaMemcpyHostToDevice, p->st));
      else GPUDS_CK(p, cudaMemsetAsync(S+L.oOp, defOp, n, p->st));
    }
  }
  rc = applyBatch(p, n, (const uint8_t*)(S+L.oOp), defOp, (const ull*)(S+L.oKey),
                  (const ull*)(S+L.oVal), (uint8_t*)(S+L.oFound), (ull*)(S+L.oOld),
                  nUps, nDel);
  if( rc ) return rc;
  if( !aFound && !aOld ) return GPUDS_OK;
  if( staged ){
    if( aOld && (rc = gpuds_pipe::download(p, p->pipe, p->st, aOld, S+L.oOld, 8*n)) ) return rc;
    if( aFound && (rc = gpuds_pipe::download(p, p->pipe, p->st, aFound, S+L.oFound, n)) ) return rc;
  }else if( H ){
    GPUDS_CK(p, cudaMemcpyAsync(H+L.oOld, S+L.oOld, L.oFound+n-L.oOld, cudaMemcpyDeviceToHost, p->st));
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
    if( aOld ) memcpy(aOld, H+L.oOld, 8*n);
    if( aFound ) memcpy(aFound, H+L.oFound, n);
  }else{
    if( aOld ) GPUDS_CK(p, cudaMemcpyAsync(aOld, S+L.oOld, 8*n, cudaMemcpyDeviceToHost, p->st));
    if( aFound ) GPUDS_CK(p, cudaMemcpyAsync(aFound, S+L.oFound, n, cudaMemcpyDeviceToHost, p->st));
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
  }
  return GPUDS_OK;
}

// Host-array batch: stage inputs, apply, copy results back.  aOp NULL means
// every op is defOp (lookups for xLookup, upserts for xBulkLoad).
//
// Batches of more than p->chunk ops move their arrays in pieces through the
// store's two pinned chunk buffers, the host memcpy of one piece overlapping
// the DMA of the other (gpuds_pipe::upload/download); smaller ones (and
// chunk 0) go single-shot: all inputs memcpy'd into one pinned buffer of the
// batch's size (gpuds_pipe::single), one copy in, one copy out.  Unlike xLookup, these batches
// cannot overlap their kernels with the transfers: all-or-nothing needs the
// whole batch on the device before ensureRoom, and the results exist
// only once the whole batch is applied.  The staged path also keeps the pinned
// memory at two chunk buffers instead of one buffer as big as the biggest
// batch.  (The staged path's gain: bench_hash's host-upsert rows, xBatch of
// fresh upserts from host arrays with transfers included, in
// bench/results/bench_hash-*-host.log.)
int hostBatch(GpuHashStore *p, size_t n, const uint8_t *aOp, int defOp,
              const int64_t *aKey, const uint64_t *aVal, uint8_t *aFound,
              uint64_t *aOld){
  int rc = GPUDS_OK;
  ull nUps = 0, nDel = 0;
  Layout L;
  if( !p ) return GPUDS_MISUSE;
  if( n==0 ) return GPUDS_OK;
  if( !aKey ) return setErr(p, GPUDS_MISUSE, "NULL key array");
  if( n>kMaxBatch ) return setErr(p, GPUDS_MISUSE, "batch too large (more than 2^31-1 ops)");
  if( aOp ){
    rc = countOps(p, n, aOp, &nUps, &nDel);
    if( rc ) return rc;
  }else{
    nUps = defOp==GPUDS_OP_UPSERT ? n : 0;
    nDel = defOp==GPUDS_OP_DELETE ? n : 0;
  }
  layoutBatch(n, true, &L);
  rc = ensureScratch(p, L.total);
  if( rc ) return rc;
  rc = hostBatchBody(p, n, aOp, defOp, aKey, aVal, aFound, aOld, nUps, nDel, L);
  if( rc ){
    // nothing may stay in flight (copies may still read pinned buffers the
    // next call reuses); the error is already recorded
    cudaStreamSynchronize(p->st);
    (void)cudaGetLastError();
  }
  trimScratch(p);
  return rc;
}

// Lookup kernel for m keys on stream st (one of the pipe's).
int enqueueLookup(GpuHashStore *p, cudaStream_t st, size_t m, const ull *dKey,
                  uint8_t *dFound, ull *dVal){
  if( gLookupIlp==2 ){
    kLookup2<<<gridFor(p, (m+1)/2*TS, (const void*)kLookup2), kBlock, 0, st>>>(
        p->T, p->dMeta, m, dKey, dFound, dVal);
    GPUDS_CK_LAUNCH(p, "kLookup2 (pipelined)");
  }else{
    kRun<M_LOOKUP><<<gridFor(p, m*TS, (const void*)kRun<M_LOOKUP>), kBlock, 0, st>>>(
        p->T, p->dMeta, m, nullptr, nullptr, GPUDS_OP_LOOKUP, dKey, nullptr, nullptr, dFound, dVal);
    GPUDS_CK_LAUNCH(p, "kRun<lookup> (pipelined)");
  }
  return GPUDS_OK;
}

// xLookup.  Up to p->chunk keys (or chunk 0): the single-shot hostBatch.
// More: the chunked, double-buffered pipeline of hostpipe.cuh (lookups change
// nothing, so chunks are independent and may overlap): per slot a device area
// of keys | values | found flags in the scratch.
int hostLookup(GpuHashStore *p, size_t n, const int64_t *aKey, uint8_t *aFound,
               uint64_t *aVal){
  int rc = GPUDS_OK;
  if( !p ) return GPUDS_MISUSE;
  if( n<=p->chunk || p->chunk==0 || !aKey || n>kMaxBatch || !pipeReady(p) ){
    return hostBatch(p, n, nullptr, GPUDS_OP_LOOKUP, aKey, nullptr, aFound, aVal);
  }
  const size_t C = p->pipe.chunk;
  const size_t oVal = alignUp(8*C), oFound = oVal + alignUp(8*C), slot = alignUp(oFound + C);
  rc = ensureScratch(p, 2*slot);
  if( rc ) return rc;
  char *S = (char*)p->scratch.p;
  int64_t *dKey[2] = { (int64_t*)S, (int64_t*)(S+slot) };
  uint64_t *dVal[2] = { (uint64_t*)(S+oVal), (uint64_t*)(S+slot+oVal) };
  uint8_t *dFound[2] = { (uint8_t*)(S+oFound), (uint8_t*)(S+slot+oFound) };
  return gpuds_pipe::runLookups(p, p->pipe, p->st, n, aKey, aFound, aVal, false, dKey, dFound, dVal,
      [p](int, cudaStream_t st, size_t m, const int64_t *k, uint8_t *f, uint64_t *v,
          int64_t, int64_t) -> int {
        return enqueueLookup(p, st, m, (const ull*)k, f, (ull*)v);
      });
}

// Device-array variant of the batch entry points (see hash.cuh).
int deviceBatch(GpuHashStore *p, size_t n, const uint8_t *dOp, int defOp,
                const ull *dKey, const ull *dVal, uint8_t *dFound, ull *dOld){
  int rc = GPUDS_OK;
  ull cnt[3] = {0, 0, 0};
  if( !p ) return GPUDS_MISUSE;
  if( n==0 ) return GPUDS_OK;
  if( n>kMaxBatch ) return setErr(p, GPUDS_MISUSE, "batch too large (more than 2^31-1 ops)");
  if( dOp ){
    rc = ensureScratch(p, 256);
    if( rc ) return rc;
    GPUDS_CK(p, cudaMemsetAsync(p->scratch.p, 0, sizeof(cnt), p->st));
    kCountOps<<<gridFor(p, n), kBlock, 0, p->st>>>(n, dOp, (ull*)p->scratch.p);
    GPUDS_CK_LAUNCH(p, "kCountOps");
    GPUDS_CK(p, cudaMemcpyAsync(cnt, p->scratch.p, sizeof(cnt), cudaMemcpyDeviceToHost, p->st));
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
    if( cnt[2] ) return setErr(p, GPUDS_MISUSE, "invalid operation code in batch");
  }else{
    cnt[0] = defOp==GPUDS_OP_UPSERT ? n : 0;
    cnt[1] = defOp==GPUDS_OP_DELETE ? n : 0;
  }
  return applyBatch(p, n, dOp, defOp, dKey, dVal, dFound, dOld, cnt[0], cnt[1]);
}

}  // namespace

#include "hash/ops.cuh"
#include "hash/hooks.cuh"
