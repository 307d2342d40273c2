// kernels/hash/hooks.cuh -- the gpuds_hash:: test and benchmark hooks
// declared in kernels/hash.cuh (device-array entry points, presizing, limits).
//
// Part of the GPU hash store's one translation unit: included by
// kernels/hash.cu only, after the host store it calls.
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include "gpuds_backend.h"
#include "hash.cuh"
#include "common/devmem.cuh"
#include "hash/layout.cuh"
#include "hash/store.cuh"

namespace gpuds_hash {

int batchDevice(gpuds_store *pStore, size_t n, const uint8_t *dOp, const int64_t *dKey,
                const uint64_t *dVal, uint8_t *dFound, uint64_t *dOld){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( p && n && (!dOp || !dKey) ) return setErr(p, GPUDS_MISUSE, "NULL array");
  return deviceBatch(p, n, dOp, GPUDS_OP_LOOKUP, (const ull*)dKey, (const ull*)dVal,
                     dFound, (ull*)dOld);
}

int lookupDevice(gpuds_store *pStore, size_t n, const int64_t *dKey, uint8_t *dFound,
                 uint64_t *dVal){
  GpuHashStore *p = (GpuHashStore*)pStore;
  return deviceBatch(p, n, nullptr, GPUDS_OP_LOOKUP, (const ull*)dKey, nullptr,
                     dFound, (ull*)dVal);
}

int upsertDistinctDevice(gpuds_store *pStore, size_t n, const int64_t *dKey,
                         const uint64_t *dVal, uint8_t *dFound, uint64_t *dOld){
  GpuHashStore *p = (GpuHashStore*)pStore;
  return deviceBatch(p, n, nullptr, GPUDS_OP_UPSERT, (const ull*)dKey,
                     (const ull*)dVal, dFound, (ull*)dOld);
}

int reserve(gpuds_store *pStore, uint64_t nKeys, double load){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( !p ) return GPUDS_MISUSE;
  if( !(load>0.0 && load<=kMaxLoad) ) return setErr(p, GPUDS_MISUSE, "reserve: load out of (0, kMaxLoad]");
  const ull nb = bucketsFor(nKeys, load);
  if( nb<=p->T.nb ) return GPUDS_OK;
  return rehash(p, nb);
}

uint64_t buckets(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->T.nb : 0; }
void setLookupIlp(int nOps){ gLookupIlp = nOps==1 ? 1 : 2; }
uint64_t rehashCount(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->nRehash : 0; }
void setDeviceLimit(gpuds_store *pStore, uint64_t bytes){ GpuHashStore *p = (GpuHashStore*)pStore; if( p ) p->mem.limit = bytes; }
void failAlloc(gpuds_store *pStore, uint64_t k){ GpuHashStore *p = (GpuHashStore*)pStore; if( p ) gpuds_mem::failAfter(p->mem, k); }
uint64_t allocCount(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->mem.nAlloc.load() : 0; }
cudaStream_t stream(gpuds_store *pStore){ GpuHashStore *p = (GpuHashStore*)pStore; return p ? p->st : nullptr; }
void setHostChunk(gpuds_store *pStore, size_t nKeys){
  GpuHashStore *p = (GpuHashStore*)pStore;
  if( p ) p->chunk = nKeys>gpuds_pipe::kMaxChunk ? gpuds_pipe::kMaxChunk : nKeys;
}

}  // namespace gpuds_hash
