/*
** select.c -- choose the store implementation for a table: the CUDA one when
** a usable device is present, the host one otherwise.
*/
#include "gpuds_backend.h"
#include "gpuds_config.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#ifndef GPUDS_HAVE_CUDA
/* Host-only build: report why there is no device. */
int gpudsCudaDevice(char *zName, size_t nName, uint64_t *pnFree,
                    uint64_t *pnTotal){
  if( nName ) snprintf(zName, nName, "built without CUDA");
  if( pnFree ) *pnFree = 0;
  if( pnTotal ) *pnTotal = 0;
  return 0;
}

/* Host-only build: no device memory is ever held. */
void gpudsGpuMemory(gpuds_gpumem *p){
  memset(p, 0, sizeof(*p));
}
#endif

/* True when GPUDS_BACKEND=host asks for the host backend. */
static int forceHost(void){
  return gpudsConfig()->bForceHost;
}

/* The ops for a store of kind GPUDS_ORDERED or GPUDS_HASH; never NULL for a
** valid kind. */
const gpuds_store_ops *gpudsStoreOps(int kind){
  char zDev[128];
  int bGpu = !forceHost() && gpudsCudaDevice(zDev, sizeof(zDev), 0, 0);
  if( kind==GPUDS_ORDERED ){
#ifdef GPUDS_HAVE_CUDA_ORDERED
    if( bGpu ) return &gpudsCudaOrderedOps;
#endif
    return &gpudsHostOrderedOps;
  }
  if( kind==GPUDS_HASH ){
#ifdef GPUDS_HAVE_CUDA_HASH
    if( bGpu ) return &gpudsCudaHashOps;
#endif
    return &gpudsHostHashOps;
  }
  (void)bGpu;
  return 0;
}

/* The column-set ops for tables whose store runs on pOps: the CUDA column
** set beside a CUDA store (when built), the host one otherwise. */
const gpuds_cols_ops *gpudsColsOps(const gpuds_store_ops *pOps){
#ifdef GPUDS_HAVE_CUDA_COLS
  if( pOps && strcmp(pOps->zBackend, "cuda")==0 ) return &gpudsCudaColsOps;
#endif
  (void)pOps;
  return &gpudsHostColsOps;
}
