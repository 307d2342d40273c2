/*
** gpuds_slab.h -- a pool of fixed-size slots in 2 MiB slabs advised as
** transparent huge pages (slab.c).  The host B+tree takes a big tree's
** leaves from one (backend/host_ordered.c).
*/
#ifndef GPUDS_SLAB_H
#define GPUDS_SLAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUDS_SLAB_SIZE ((size_t)2<<20)   /* one huge page, aligned to it */

typedef struct GpudsSlab GpudsSlab;       /* a slab's header (slab.c) */

/* A pool.  Its slabs are listed, those with a free slot first; a slab
** whose last slot is given back is unmapped. */
typedef struct GpudsSlabPool {
  GpudsSlab *pFirst, *pLast;  /* the slabs, or NULL */
  int64_t nSlab;              /* slabs mapped */
  int64_t nLive;              /* slots taken and not given back */
  size_t szStride;            /* a slot: whole cache lines */
  size_t iFirst;              /* the offset of slot 0 in its slab */
  int nSlot;                  /* slots a slab */
} GpudsSlabPool;

/* An empty pool of slots of szSlot bytes, placed so that byte iLine of
** every slot starts a cache line. */
void gpudsSlabPoolInit(GpudsSlabPool *pool, size_t szSlot, size_t iLine);

/* A slot (contents undefined), from the first slab or a new one, or NULL
** when no slab can be mapped.  O(1). */
void *gpudsSlabTake(GpudsSlabPool *pool);

/* Give back pSlot, a slot pool handed out; unmap its slab if it was the
** last one taken.  O(1). */
void gpudsSlabGive(GpudsSlabPool *pool, void *pSlot);

/* Checks of a user's structure against the pool (its invariant check):
** gpudsSlabCheckList checks the list (links, owner, counts, free slots,
** live and free adding up to the slots handed out, slabs with a free slot
** first) and zeroes each slab's count of slots seen; gpudsSlabSee counts
** pSlot as seen, 0 if it is not a slot handed out by a slab of the pool;
** gpudsSlabCheckSeen checks that every slab saw exactly its live slots.
** A failed check writes what it found into zErr (nErr bytes) and returns
** 0; success returns 1. */
int gpudsSlabCheckList(GpudsSlabPool *pool, char *zErr, size_t nErr);
int gpudsSlabSee(GpudsSlabPool *pool, void *pSlot);
int gpudsSlabCheckSeen(const GpudsSlabPool *pool, char *zErr, size_t nErr);

#ifdef __cplusplus
}
#endif

#endif /* GPUDS_SLAB_H */
