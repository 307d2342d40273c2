// kernels/common/devmem.cuh -- device memory of the CUDA stores, counted in
// one place.
//
// Every cudaMalloc/cudaFree of a store goes through its DevMem accountant:
// alloc() and release() keep `bytes` (the device memory the store holds:
// what xInfo reports as device_bytes), so no store walks its buffers to
// count them.  Its fields are atomics: the calls of a CUDA column set run
// on several threads at once, each allocating for its own context.  Two
// test hooks sit here, below every allocation a store makes:
//   limit    allocations that would bring `bytes` above it fail (0: none);
//   failAt   allocation number failAt (counted in nAlloc) fails (0: none);
//            set by failAfter(), it fires once.
// one for the whole process (faultPoint(), driven by the exported
// gpuds_test_device_faults() in device.cu): the N-th allocation of device
// or pinned host memory by any store of the process fails, so a test at the
// SQL level can fail each allocation of a workload in turn; and one for a
// thread (threadFails()): while on, every device allocation the calling
// thread makes fails, so a test can fail one thread's call among several
// running on one store.
// All fail as cudaMalloc fails when the GPU is full
// (cudaErrorMemoryAllocation), so they take the store's real error paths.
//
// Above the stores, one account for the whole process (account()): every
// alloc() and release() of every store and column set moves `held`, with
// atomics, since distinct tables are used from distinct threads.
// GPUDS_GPU_MEMORY caps it: an allocation that would take `held` past the
// cap fails too, before cudaMalloc, as the full GPU would refuse it.  Why
// the calling thread's last allocation failed (the cap, the GPU, pinned
// memory, a test hook) is kept for the message its error becomes
// (refusalText, called by check.cuh's gpudsCudaMessage on that thread):
// the SQLite side shows it as the reason a table part lives on the host.
//
// DBuf is a workspace buffer: it grows (ensure), never shrinks, and its
// contents are lost when it grows.
#pragma once

#include <cuda_runtime.h>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include "gpuds_config.h"

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

// The process's device memory (gpudsGpuMemory() reports it).
struct Account {
  std::atomic<uint64_t> held{0};        // bytes held by every store and set
  std::atomic<uint64_t> peak{0};        // the most held at once
  std::atomic<uint64_t> refusedCap{0};  // allocations past GPUDS_GPU_MEMORY
  std::atomic<uint64_t> refusedGpu{0};  // allocations cudaMalloc refused
};
inline Account &account(){ static Account a; return a; }

// Why an allocation failed; the calling thread's last one (lastRefusal).
enum { kWhyNone, kWhyCap, kWhyGpu, kWhyPinned, kWhyTest };
struct Refusal {
  int why = kWhyNone;
  uint64_t asked = 0;      // bytes asked for
  uint64_t held = 0;       // bytes the process held then
};
inline Refusal &lastRefusal(){ static thread_local Refusal r; return r; }

// Note in the calling thread's Refusal that an allocation of n bytes
// failed for reason why.
inline void refuse(int why, uint64_t n){
  Refusal &r = lastRefusal();
  r.why = why;
  r.asked = n;
  r.held = account().held.load();
}

// Take n bytes in the process's account: false, nothing taken, if that
// would take it past GPUDS_GPU_MEMORY.
inline bool reserve(uint64_t n){
  const gpuds_config *c = gpudsConfig();
  Account &a = account();
  uint64_t cur = a.held.load();
  do{
    if( c->bGpuMemCap && (n > c->nGpuMemCap || cur > c->nGpuMemCap - n) ) return false;
  }while( !a.held.compare_exchange_weak(cur, cur + n) );
  uint64_t pk = a.peak.load();
  while( cur + n > pk && !a.peak.compare_exchange_weak(pk, cur + n) ){}
  return true;
}

// n bytes as a person reads them: "512 B", "3.5 MiB".
inline void bytesText(char *z, size_t nz, uint64_t n){
  static const char *azUnit[] = { "KiB", "MiB", "GiB", "TiB" };
  double x = (double)n;
  int i = -1;
  while( x>=1024.0 && i<3 ){ x /= 1024.0; i++; }
  if( i<0 ) snprintf(z, nz, "%llu B", (unsigned long long)n);
  else snprintf(z, nz, "%.1f %s", x, azUnit[i]);
}

// Why the calling thread's last allocation failed, in words, into z (nz
// bytes): what a message about the out-of-memory error it gave starts with.
inline void refusalText(char *z, size_t nz){
  const Refusal &r = lastRefusal();
  char zAsk[32], zHeld[32];
  bytesText(zAsk, sizeof(zAsk), r.asked);
  bytesText(zHeld, sizeof(zHeld), r.held);
  switch( r.why ){
    case kWhyCap:
      snprintf(z, nz, "the GPU memory cap (GPUDS_GPU_MEMORY=%s) would be exceeded: "
               "gpuds holds %s of GPU memory and asked for %s more",
               gpudsConfig()->zGpuMemory, zHeld, zAsk);
      break;
    case kWhyGpu:
      snprintf(z, nz, "the GPU is out of memory: gpuds holds %s of it and asked "
               "for %s more", zHeld, zAsk);
      break;
    case kWhyPinned:
      snprintf(z, nz, "pinned host memory is exhausted: %s asked for", zAsk);
      break;
    case kWhyTest:
      snprintf(z, nz, "a test failed this allocation of %s as a full GPU would", zAsk);
      break;
    default:
      snprintf(z, nz, "out of memory");
      break;
  }
}

// The thread test hook: while true, the calling thread's device
// allocations fail.
inline bool &threadFails(){ static thread_local bool b = false; return b; }

// A store's device memory.  Atomics: allocations of one store may run on
// several threads at once (a column set's concurrent calls), and `bytes`
// stays exact (a store's allocation in flight is counted from before its
// cudaMalloc until it fails or is freed).
struct DevMem {
  std::atomic<uint64_t> bytes{0};  // device bytes held
  std::atomic<uint64_t> limit{0};  // test hook: most bytes allocations may reach (0: none)
  std::atomic<uint64_t> nAlloc{0}; // allocations asked for so far
  std::atomic<uint64_t> failAt{0}; // test hook: the allocation (nAlloc) that fails (0: none)
};

// Take n bytes in M.bytes: false, nothing taken, if that would pass
// M.limit.
inline bool reserveIn(DevMem &M, uint64_t n){
  const uint64_t lim = M.limit.load();
  uint64_t cur = M.bytes.load();
  do{
    if( lim && (n > lim || cur > lim - n) ) return false;
  }while( !M.bytes.compare_exchange_weak(cur, cur + n) );
  return true;
}

// Allocate n bytes of device memory into *pp, counted in M.bytes and in
// the process's account.  Fails (cudaErrorMemoryAllocation, *pp NULL,
// nothing held, the reason in lastRefusal()) past M.limit, at the
// allocation M.failAt, on a thread whose threadFails() is on, past
// GPUDS_GPU_MEMORY, or when cudaMalloc fails.
inline cudaError_t alloc(DevMem &M, void **pp, size_t n){
  *pp = nullptr;
  const uint64_t k = ++M.nAlloc;
  uint64_t at = M.failAt.load();
  const bool bFailAt = at!=0 && k==at && M.failAt.compare_exchange_strong(at, 0);
  if( bFailAt || faultHere() || threadFails() || !reserveIn(M, n) ){
    refuse(kWhyTest, n);
    return cudaErrorMemoryAllocation;
  }
  if( !reserve(n) ){
    M.bytes -= n;
    refuse(kWhyCap, n);
    account().refusedCap++;
    return cudaErrorMemoryAllocation;
  }
  cudaError_t e = cudaMalloc(pp, n);
  if( e!=cudaSuccess ){
    *pp = nullptr;
    M.bytes -= n;
    account().held -= n;
    refuse(e==cudaErrorMemoryAllocation ? kWhyGpu : kWhyNone, n);
    if( e==cudaErrorMemoryAllocation ) account().refusedGpu++;
    return e;
  }
  return cudaSuccess;
}

// Allocate n bytes of pinned host memory into *pp (cudaMallocHost), under
// the process-wide hook.  On failure *pp is NULL.
inline cudaError_t allocPinned(void **pp, size_t n){
  *pp = nullptr;
  if( faultHere() ){ refuse(kWhyTest, n); return cudaErrorMemoryAllocation; }
  cudaError_t e = cudaMallocHost(pp, n);
  if( e!=cudaSuccess ){
    *pp = nullptr;
    refuse(e==cudaErrorMemoryAllocation ? kWhyPinned : kWhyNone, n);
  }
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
  if( p ){ cudaFree(p); M.bytes -= n; account().held -= n; }
}

// Test hook: the k-th allocation from now fails (k >= 1; 0: none).
inline void failAfter(DevMem &M, uint64_t k){ M.failAt = k ? M.nAlloc.load() + k : 0; }

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
