// kernels/common/devmem.cuh -- device memory of the CUDA stores, counted in
// one place.
//
// Every cudaMalloc/cudaFree of a store goes through its DevMem accountant:
// alloc() and release() keep `bytes` (the device memory the store holds:
// what xInfo reports as device_bytes), so no store walks its buffers to
// count them.  Two test hooks sit here, below every allocation a store makes:
//   limit    allocations that would bring `bytes` above it fail (0: none);
//   failAt   allocation number failAt (counted in nAlloc) fails (0: none);
//            set by failAfter(), it fires once.
// and one for the whole process (faultPoint(), driven by the exported
// gpuds_test_device_faults() in device.cu): the N-th allocation of device
// or pinned host memory by any store of the process fails, so a test at the
// SQL level can fail each allocation of a workload in turn.
// All fail as cudaMalloc fails when the GPU is full
// (cudaErrorMemoryAllocation), so they take the store's real error paths.
//
// DBuf is a workspace buffer: it grows (ensure), never shrinks, and its
// contents are lost when it grows.
#pragma once

#include <cuda_runtime.h>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpuds_mem {

// The process-wide test hook: n counts the device and pinned allocations of
// every store; allocation number failAt fails (0: none), once.
struct FaultPoint {
  std::atomic<uint64_t> n{0};
  std::atomic<uint64_t> failAt{0};
};
inline FaultPoint &faultPoint(){ static FaultPoint f; return f; }

// Count one allocation; true if it is the one that must fail.
inline bool faultHere(){
  FaultPoint &f = faultPoint();
  uint64_t k = ++f.n, at = f.failAt.load();
  return at!=0 && k==at && f.failAt.compare_exchange_strong(at, 0);
}

struct DevMem {
  uint64_t bytes = 0;    // device bytes held
  uint64_t limit = 0;    // test hook: most bytes allocations may reach (0: none)
  uint64_t nAlloc = 0;   // allocations asked for so far
  uint64_t failAt = 0;   // test hook: the allocation (nAlloc) that fails (0: none)
};

// Allocate n bytes of device memory into *pp, counted in M.bytes.  Fails
// (cudaErrorMemoryAllocation, *pp NULL, nothing held) past M.limit, at the
// allocation M.failAt, or when cudaMalloc fails.
inline cudaError_t alloc(DevMem &M, void **pp, size_t n){
  *pp = nullptr;
  M.nAlloc++;
  if( M.failAt && M.nAlloc==M.failAt ){ M.failAt = 0; return cudaErrorMemoryAllocation; }
  if( faultHere() ) return cudaErrorMemoryAllocation;
  if( M.limit && M.bytes + n > M.limit ) return cudaErrorMemoryAllocation;
  cudaError_t e = cudaMalloc(pp, n);
  if( e!=cudaSuccess ){ *pp = nullptr; return e; }
  M.bytes += n;
  return cudaSuccess;
}

// Allocate n bytes of pinned host memory into *pp (cudaMallocHost), under
// the process-wide hook.  On failure *pp is NULL.
inline cudaError_t allocPinned(void **pp, size_t n){
  *pp = nullptr;
  if( faultHere() ) return cudaErrorMemoryAllocation;
  cudaError_t e = cudaMallocHost(pp, n);
  if( e!=cudaSuccess ) *pp = nullptr;
  return e;
}
template<class T> cudaError_t allocPinnedT(T **pp, size_t n){
  return allocPinned(reinterpret_cast<void**>(pp), n);
}

// Typed shorthand for alloc().
template<class T> cudaError_t allocT(DevMem &M, T **pp, size_t n){
  return alloc(M, reinterpret_cast<void**>(pp), n);
}

// Free n bytes from alloc() (NULL is a no-op).
inline void release(DevMem &M, void *p, size_t n){
  if( p ){ cudaFree(p); M.bytes -= n; }
}

// Test hook: the k-th allocation from now fails (k >= 1; 0: none).
inline void failAfter(DevMem &M, uint64_t k){ M.failAt = k ? M.nAlloc + k : 0; }

// A workspace buffer; grows, never shrinks.
struct DBuf { void *p = nullptr; size_t cap = 0; };

template<class T> T *ptr(DBuf &b){ return static_cast<T*>(b.p); }

// Make b hold at least nByte bytes (its contents are lost): it grows to
// nByte + nByte/8 rounded up to 4 KiB (the slack spares a reallocation to
// batches that grow slowly).  The old buffer is freed after st is idle (it
// may be read by work in flight).  On failure b is empty.
inline cudaError_t ensure(DevMem &M, DBuf &b, size_t nByte, cudaStream_t st){
  if( nByte<=b.cap ) return cudaSuccess;
  const size_t want = (nByte + nByte/8 + 4095) & ~(size_t)4095;
  if( b.p ){
    cudaStreamSynchronize(st);
    release(M, b.p, b.cap);
    b.p = nullptr; b.cap = 0;
  }
  cudaError_t e = alloc(M, &b.p, want);
  if( e!=cudaSuccess ) return e;
  b.cap = want;
  return cudaSuccess;
}

// The workspace a store keeps after a call: at most the larger of 32 MiB
// and a quarter of its structure's bytes.  True if wsBytes is more (the
// store then gives it all back: the device memory a store keeps is what it
// holds, not its largest batch's workspace; a batch of 10^7 ops grew it to
// 26-40 B an op, for good).
constexpr uint64_t kWorkspaceKeepMin = (uint64_t)32<<20;
inline bool workspaceOverKeep(uint64_t wsBytes, uint64_t structBytes){
  const uint64_t keep = structBytes/4>kWorkspaceKeepMin ? structBytes/4 : kWorkspaceKeepMin;
  return wsBytes>keep;
}

// Free b (empty afterwards).
inline void releaseBuf(DevMem &M, DBuf &b){
  release(M, b.p, b.cap);
  b.p = nullptr; b.cap = 0;
}

}  // namespace gpuds_mem
