// kernels/common/hostpipe.cuh -- every staged copy between the caller's
// host arrays and the GPU, shared by the GPU hash store (kernels/hash.cu) and
// the GFSL store (kernels/gfsl.cu).  The pinned buffers, streams and events
// belong to the store's HostPipe (released by release() in its xDestroy):
// nothing is allocated per call once the pipe is prepared for a chunk size.
//
// LOOKUP PIPELINE (runLookups): an xLookup of n > C keys (C = the store's
// chunk, default 2^19 keys) runs chunk by chunk on two streams, one per slot;
// chunk i uses slot i&1: its keys are copied by the host into the slot's
// pinned buffer, then on the slot's stream: H2D of the keys, the store's
// lookup kernel(s), D2H of the results into the same pinned buffer, an event.
// Before the host refills a slot for chunk i it waits for chunk i-2 (the
// slot's event) and copies that chunk's results to the caller's arrays.  So
// while the host copies keys of chunk i in and results of chunk i-2 out, the
// GPU runs chunk i-1 (its copy engines and SMs), and consecutive chunks
// overlap on the GPU too (H2D of one chunk during the kernel of the other).
// The GPU side of a chunk (17 bytes a key over PCIe, the kernel) is far
// shorter than the host's memcpy of it, so the GPU work hides behind the
// host copies.  Only the keys go in and only (found, value) come out.
//
// STAGED COPIES (upload, download): one array in pieces of a slot's pinned
// size on one stream, the host memcpy of piece i+1 overlapping the DMA of
// piece i; without a prepared pipe (no pinned memory to be had), one plain
// copy from pageable memory.  The stores' xBatch/xBulkLoad/xScan transfers
// and gfsl's single-shot xLookup use them.
//
// SINGLE-SHOT BUFFER (single): one pinned buffer as big as the biggest
// batch asked for, for a small batch whose arrays move packed in one copy
// each way (the hash store's batches of at most one chunk).
//
// Errors: every int function returns GPUDS_OK or the store's code, the CUDA
// failure recorded through GPUDS_CK (common/check.cuh) on the store p, and
// returns with no work of the call in flight.  Getting pinned memory is
// never an error: prepare() and single() say "not available" and the store
// takes the path that needs none.
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include "gpuds_backend.h"
#include "gpuds_config.h"
#include "common/check.cuh"
#include "common/devmem.cuh"

namespace gpuds_pipe {

// Keys per chunk: a bigger chunk leaves more GPU work uncovered at the end,
// a smaller one pays more calls per key; the default is the best of the
// sizes tried (bench/results/bench_{hash,gfsl}-*-host.log, xLookup of 10^7
// host keys).
constexpr size_t kDefaultChunk = GPUDS_DEFAULT_HOST_CHUNK;
constexpr size_t kMaxChunk = GPUDS_MAX_HOST_CHUNK;

// Pinned bytes of one slot for chunks of C keys: keys (8C) | values (8C) |
// found flags (C).
inline size_t slotBytes(size_t C){ return 17*C; }

// The chunk a new store starts with: GPUDS_HOST_CHUNK from the environment
// (keys; 0 = no chunking: every batch single-shot), else kDefaultChunk.
inline size_t defaultChunk(){ return gpudsConfig()->nHostChunk; }

struct HostPipe {
  cudaStream_t st[2] = {nullptr, nullptr};   // one per slot
  cudaEvent_t done[2] = {nullptr, nullptr};  // the slot's last use finished
  cudaEvent_t start = nullptr;               // the store's stream reached the call
  void *h[2] = {nullptr, nullptr};           // pinned, slotBytes(chunk) each
  size_t chunk = 0;                          // keys a slot holds (0: not prepared)
  void *one = nullptr;                       // pinned single-shot buffer
  size_t nOne = 0;                           // its bytes
};

// Free everything the pipe holds (after waiting for its streams and its
// slots' copies); the pipe is empty afterwards.  Safe on an empty or
// half-prepared pipe.
inline void release(HostPipe &P){
  for( int s=0; s<2; s++ ){
    if( P.st[s] ) cudaStreamSynchronize(P.st[s]);
    if( P.done[s] ) cudaEventSynchronize(P.done[s]);
  }
  for( int s=0; s<2; s++ ){
    if( P.h[s] ) cudaFreeHost(P.h[s]);
    if( P.done[s] ) cudaEventDestroy(P.done[s]);
    if( P.st[s] ) cudaStreamDestroy(P.st[s]);
    P.h[s] = nullptr; P.done[s] = nullptr; P.st[s] = nullptr;
  }
  if( P.start ) cudaEventDestroy(P.start);
  if( P.one ) cudaFreeHost(P.one);
  P.start = nullptr;
  P.one = nullptr; P.nOne = 0;
  P.chunk = 0;
  (void)cudaGetLastError();
}

// Make the pipe ready for chunks of C (>= 1) keys: streams, events, pinned
// buffers (reallocated when C changes).  False when that cannot be had (no
// pinned memory, ...): the runtime's error is cleared, the pipe holds what
// was made so far (chunk 0: not usable; release() frees it) and the caller
// takes a path that needs no pipe.
inline bool prepare(HostPipe &P, size_t C){
  bool ok = true;
  for( int s=0; s<2 && ok; s++ ){
    if( !P.st[s] && cudaStreamCreateWithFlags(&P.st[s], cudaStreamNonBlocking)!=cudaSuccess ){
      P.st[s] = nullptr; ok = false;
    }
    if( ok && !P.done[s] && cudaEventCreateWithFlags(&P.done[s], cudaEventDisableTiming)!=cudaSuccess ){
      P.done[s] = nullptr; ok = false;
    }
  }
  if( ok && !P.start && cudaEventCreateWithFlags(&P.start, cudaEventDisableTiming)!=cudaSuccess ){
    P.start = nullptr; ok = false;
  }
  if( ok && P.chunk==C && P.h[0] && P.h[1] ) return true;
  for( int s=0; s<2 && ok; s++ ){
    // a slot may still be read by a copy of an earlier call only if that
    // call failed to wait; never free it under a copy
    if( cudaEventSynchronize(P.done[s])!=cudaSuccess ){ ok = false; break; }
    if( P.h[s] ){ cudaFreeHost(P.h[s]); P.h[s] = nullptr; }
  }
  if( ok ) P.chunk = 0;
  for( int s=0; s<2 && ok; s++ ){
    if( gpuds_mem::allocPinned(&P.h[s], slotBytes(C))!=cudaSuccess ){
      P.h[s] = nullptr; ok = false;
    }
  }
  if( ok ) P.chunk = C;
  else (void)cudaGetLastError();
  return ok;
}

// A pinned buffer of at least n bytes for a single-shot copy (kept, grown
// when a bigger one is asked for), or NULL when none can be had (the error
// is cleared; the caller copies from pageable memory).  Its last user must
// have waited for its copies.
inline void *single(HostPipe &P, size_t n){
  if( P.nOne>=n ) return P.one;
  if( P.one ){ cudaFreeHost(P.one); P.one = nullptr; P.nOne = 0; }
  if( gpuds_mem::allocPinned(&P.one, n)!=cudaSuccess ){
    (void)cudaGetLastError();
    P.one = nullptr;
    return nullptr;
  }
  P.nOne = n;
  return P.one;
}

// dst[0..m) = src[0..m), and the smallest and largest key (m >= 1).
inline void copyKeysRange(int64_t *dst, const int64_t *src, size_t m,
                          int64_t *pMin, int64_t *pMax){
  int64_t mn0 = src[0], mx0 = src[0], mn1 = src[0], mx1 = src[0];
  size_t i = 0;
  for( ; i+2<=m; i+=2 ){
    const int64_t a = src[i], b = src[i+1];
    dst[i] = a; dst[i+1] = b;
    mn0 = a<mn0 ? a : mn0; mx0 = a>mx0 ? a : mx0;
    mn1 = b<mn1 ? b : mn1; mx1 = b>mx1 ? b : mx1;
  }
  for( ; i<m; i++ ){
    const int64_t a = src[i];
    dst[i] = a;
    mn0 = a<mn0 ? a : mn0; mx0 = a>mx0 ? a : mx0;
  }
  *pMin = mn0<mn1 ? mn0 : mn1;
  *pMax = mx0>mx1 ? mx0 : mx1;
}

// The body of runLookups (which cleans up after it on error).
template<class Store, class Enqueue>
int runLookupsBody(Store *p, HostPipe &P, cudaStream_t after, size_t n, const int64_t *aKey,
                   uint8_t *aFound, uint64_t *aVal, bool wantRange,
                   int64_t *const dKey[2], uint8_t *const dFound[2],
                   uint64_t *const dVal[2], Enqueue &enqueue){
  const size_t C = P.chunk;
  const size_t nChunk = (n + C - 1)/C;
  int rc;
  GPUDS_CK(p, cudaEventSynchronize(P.done[0]));
  GPUDS_CK(p, cudaEventSynchronize(P.done[1]));
  GPUDS_CK(p, cudaEventRecord(P.start, after));
  GPUDS_CK(p, cudaStreamWaitEvent(P.st[0], P.start, 0));
  GPUDS_CK(p, cudaStreamWaitEvent(P.st[1], P.start, 0));
  for( size_t i=0; i<nChunk+2; i++ ){
    const int s = (int)(i&1);
    char *H = (char*)P.h[s];
    if( i>=2 ){
      // chunk i-2 (this slot's last) is done: hand its results over
      const size_t o = (i-2)*C, m = n-o<C ? n-o : C;
      GPUDS_CK(p, cudaEventSynchronize(P.done[s]));
      if( aVal ) memcpy(aVal+o, H+8*C, 8*m);
      if( aFound ) memcpy(aFound+o, H+16*C, m);
    }
    if( i>=nChunk ) continue;
    const size_t o = i*C, m = n-o<C ? n-o : C;
    int64_t kMin = INT64_MIN, kMax = INT64_MAX;
    if( wantRange ) copyKeysRange((int64_t*)H, aKey+o, m, &kMin, &kMax);
    else memcpy(H, aKey+o, 8*m);
    GPUDS_CK(p, cudaMemcpyAsync(dKey[s], H, 8*m, cudaMemcpyHostToDevice, P.st[s]));
    rc = enqueue(s, P.st[s], m, (const int64_t*)dKey[s], dFound[s], dVal[s], kMin, kMax);
    if( rc!=GPUDS_OK ) return rc;
    if( aVal ) GPUDS_CK(p, cudaMemcpyAsync(H+8*C, dVal[s], 8*m, cudaMemcpyDeviceToHost, P.st[s]));
    if( aFound ) GPUDS_CK(p, cudaMemcpyAsync(H+16*C, dFound[s], m, cudaMemcpyDeviceToHost, P.st[s]));
    GPUDS_CK(p, cudaEventRecord(P.done[s], P.st[s]));
  }
  return GPUDS_OK;
}

// Look up n > P.chunk keys from host arrays through the pipe (prepared) for
// store p.  dKey/dFound/dVal: per slot, device buffers of P.chunk entries.
//   enqueue(slot, stream, m, dKey, dFound, dVal, kMin, kMax) -> int: enqueue
//     on `stream` the lookup of the m keys at dKey (kMin/kMax: their smallest
//     and largest when wantRange, else INT64_MIN/INT64_MAX), writing every
//     dFound[i] and dVal[i]; only device memory of that slot may be written.
//     Returns GPUDS_OK or the store's error code (message recorded).
// `after`: the store's stream; the pipe's work starts after what it holds.
// Returns GPUDS_OK with aFound/aVal (either may be NULL) filled, or an error
// (their contents then undefined).  Either way nothing is left in flight.
template<class Store, class Enqueue>
int runLookups(Store *p, HostPipe &P, cudaStream_t after, size_t n, const int64_t *aKey,
               uint8_t *aFound, uint64_t *aVal, bool wantRange,
               int64_t *const dKey[2], uint8_t *const dFound[2],
               uint64_t *const dVal[2], Enqueue &&enqueue){
  const int rc = runLookupsBody(p, P, after, n, aKey, aFound, aVal, wantRange,
                                dKey, dFound, dVal, enqueue);
  if( rc!=GPUDS_OK ){
    cudaStreamSynchronize(P.st[0]);
    cudaStreamSynchronize(P.st[1]);
    (void)cudaGetLastError();
  }
  return rc;
}

// The body of upload for a prepared pipe (the caller cleans up on error).
template<class Store>
int uploadStaged(Store *p, HostPipe &P, cudaStream_t st, void *dst, const void *src, size_t n){
  const size_t B = slotBytes(P.chunk);
  int s = 0;
  for( size_t off=0; off<n; off+=B, s^=1 ){
    const size_t len = n-off<B ? n-off : B;
    GPUDS_CK(p, cudaEventSynchronize(P.done[s]));                 // buffer s free
    memcpy(P.h[s], (const char*)src+off, len);
    GPUDS_CK(p, cudaMemcpyAsync((char*)dst+off, P.h[s], len, cudaMemcpyHostToDevice, st));
    GPUDS_CK(p, cudaEventRecord(P.done[s], st));
  }
  return GPUDS_OK;
}

// Copy n bytes from host src to device dst on stream st for store p: through
// the pipe's two pinned buffers when it is prepared (pieces of
// slotBytes(P.chunk), the memcpy into one buffer overlapping the DMA out of
// the other), else one copy from pageable memory.  Returns once every piece
// is enqueued (the last DMAs may still run on st: a later call that reuses a
// buffer waits for its event first); on error st is synchronized first.
template<class Store>
int upload(Store *p, HostPipe &P, cudaStream_t st, void *dst, const void *src, size_t n){
  if( n==0 ) return GPUDS_OK;
  if( P.chunk==0 ){
    GPUDS_CK(p, cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, st));
    return GPUDS_OK;
  }
  const int rc = uploadStaged(p, P, st, dst, src, n);
  if( rc!=GPUDS_OK ){ cudaStreamSynchronize(st); (void)cudaGetLastError(); }
  return rc;
}

// The body of download for a prepared pipe (the caller cleans up on error).
template<class Store>
int downloadStaged(Store *p, HostPipe &P, cudaStream_t st, void *dst, const void *src, size_t n){
  const size_t B = slotBytes(P.chunk);
  size_t prevOff = 0, prevLen = 0;
  int s = 0;
  for( size_t off=0; off<n; off+=B, s^=1 ){
    const size_t len = n-off<B ? n-off : B;
    GPUDS_CK(p, cudaEventSynchronize(P.done[s]));                 // buffer s free
    GPUDS_CK(p, cudaMemcpyAsync(P.h[s], (const char*)src+off, len, cudaMemcpyDeviceToHost, st));
    GPUDS_CK(p, cudaEventRecord(P.done[s], st));
    if( prevLen ){
      GPUDS_CK(p, cudaEventSynchronize(P.done[s^1]));
      memcpy((char*)dst+prevOff, P.h[s^1], prevLen);
    }
    prevOff = off; prevLen = len;
  }
  if( prevLen ){
    GPUDS_CK(p, cudaEventSynchronize(P.done[s^1]));
    memcpy((char*)dst+prevOff, P.h[s^1], prevLen);
  }
  return GPUDS_OK;
}

// Copy n bytes from device src to host dst on stream st for store p: through
// the pipe's pinned buffers when it is prepared (the DMA into one buffer
// overlapping the memcpy out of the other), else one copy into pageable
// memory.  Synchronous: returns when dst holds the data, or on error with st
// synchronized.
template<class Store>
int download(Store *p, HostPipe &P, cudaStream_t st, void *dst, const void *src, size_t n){
  if( n==0 ) return GPUDS_OK;
  if( P.chunk==0 ){
    GPUDS_CK(p, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, st));
    GPUDS_CK(p, cudaStreamSynchronize(st));
    return GPUDS_OK;
  }
  const int rc = downloadStaged(p, P, st, dst, src, n);
  if( rc!=GPUDS_OK ){ cudaStreamSynchronize(st); (void)cudaGetLastError(); }
  return rc;
}

}  // namespace gpuds_pipe
