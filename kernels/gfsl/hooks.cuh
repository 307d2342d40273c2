/*
** kernels/gfsl/hooks.cuh -- the gfsl:: test and benchmark hooks declared
** in kernels/gfsl.cuh (device-array entry points, limits, variants).
**
** Part of the GFSL store's one translation unit: included by
** kernels/gfsl.cu only, after the host store it calls.
*/
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include "gpuds_backend.h"
#include "gfsl.cuh"
#include "common/devmem.cuh"
#include "common/hostpipe.cuh"
#include "gfsl/layout.cuh"
#include "gfsl/store.cuh"

namespace gfsl {

cudaStream_t stream(gpuds_store *pStore){ GfslStore *p = (GfslStore*)pStore; return p->st; }

int batchDevice(gpuds_store *pStore, size_t n, const uint8_t *dOp, const int64_t *dKey,
                const uint64_t *dVal, uint8_t *dFound, uint64_t *dOld){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return batchDev(p, n, dOp, reinterpret_cast<const i64*>(dKey), reinterpret_cast<const u64*>(dVal),
                  dFound, reinterpret_cast<u64*>(dOld));
}

int lookupDevice(gpuds_store *pStore, size_t n, const int64_t *dKey, uint8_t *dFound, uint64_t *dVal){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return lookupDev(p, n, reinterpret_cast<const i64*>(dKey), dFound, reinterpret_cast<u64*>(dVal));
}

int bulkBuildDevice(gpuds_store *pStore, size_t n, const int64_t *dKey, const uint64_t *dVal, int bSorted){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return bulkDev(p, n, reinterpret_cast<const i64*>(dKey), reinterpret_cast<const u64*>(dVal), bSorted);
}

int scanDevice(gpuds_store *pStore, gpuds_scan *s, size_t nMax, int64_t *dKey, uint64_t *dVal, size_t *pnOut){
  GfslStore *p = (GfslStore*)pStore;
  p->zErr[0] = 0;
  *pnOut = 0;
  int rc = checkUsable(p);
  if( rc ) return rc;
  if( s->done ) return GPUDS_OK;
  if( s->lo>s->hi ){ s->done = 1; return GPUDS_OK; }
  i64 last = 0;
  size_t take = 0;
  rc = scanPage(p, s, nMax, reinterpret_cast<i64*>(dKey), reinterpret_cast<u64*>(dVal), &take, &last);
  if( rc ) return rc;
  *pnOut = take;
  if( take>0 ) scanAdvance(s, take, last);
  return GPUDS_OK;
}

int prepareScan(gpuds_store *pStore){
  GfslStore *p = (GfslStore*)pStore;
  int rc = checkUsable(p);
  if( rc ) return rc;
  return buildDir(p, 0);
}

void setMemLimit(gpuds_store *pStore, uint64_t nByte){ GfslStore *p = (GfslStore*)pStore; p->mem.limit = nByte; }
void failAlloc(gpuds_store *pStore, uint64_t k){ GfslStore *p = (GfslStore*)pStore; gpuds_mem::failAfter(p->mem, k); }
uint64_t allocCount(gpuds_store *pStore){ GfslStore *p = (GfslStore*)pStore; return p->mem.nAlloc; }
void setRebuildMode(gpuds_store *pStore, int mode){ GfslStore *p = (GfslStore*)pStore; p->rebuildMode = mode; }
void setLookupVariant(gpuds_store *pStore, int v){ GfslStore *p = (GfslStore*)pStore; p->lookupVariant = v; }
void setHostChunk(gpuds_store *pStore, size_t nKeys){
  GfslStore *p = (GfslStore*)pStore;
  p->chunk = nKeys>gpuds_pipe::kMaxChunk ? gpuds_pipe::kMaxChunk : nKeys;
}
void lastBatchStats(gpuds_store *pStore, BatchStats *s){ GfslStore *p = (GfslStore*)pStore; *s = p->last; }

}  // namespace gfsl
