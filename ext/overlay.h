/* overlay.h -- the write buffer's key -> value map (overlay.c). */
#ifndef GPUDS_OVERLAY_H
#define GPUDS_OVERLAY_H

#include "gpuds_backend.h"

typedef struct GpudsOverlay GpudsOverlay;

GpudsOverlay *gpudsOvNew(void);
void gpudsOvFree(GpudsOverlay *p);
void gpudsOvClear(GpudsOverlay *p);
int64_t gpudsOvCount(const GpudsOverlay *p);
int gpudsOvGet(const GpudsOverlay *p, int64_t k, uint64_t *pv);
int gpudsOvPut(GpudsOverlay *p, int64_t k, uint64_t v, int *pHad, uint64_t *pPrev);
void gpudsOvDel(GpudsOverlay *p, int64_t k);
int gpudsOvSorted(GpudsOverlay *p, int64_t *aKey, uint64_t *aVal);
int gpudsOvScan(GpudsOverlay *p, gpuds_scan *s, size_t nMax,
                int64_t *aKey, uint64_t *aVal, size_t *pnOut);

#endif
