/*
** slab.c -- pools of fixed-size slots in 2 MiB slabs advised as
** transparent huge pages (gpuds_slab.h).
**
** A slab is GPUDS_SLAB_SIZE bytes aligned to its size (gpudsMapAligned), so
** a slot finds its slab by masking its address.  Its header links it into
** its pool's list, counts its live slots and links its freed ones through
** their first word; slots never handed out lie above nBump.  Slabs with a
** free slot come first in the list, full ones last, so a take looks at the
** first slab only.
*/
#include "gpuds_slab.h"
#include "gpuds_hugemap.h"
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct GpudsSlab {
  GpudsSlabPool *pOwner;       /* the pool it belongs to */
  GpudsSlab *pPrev, *pNext;    /* the pool's list */
  void *pFree;                 /* freed slots, linked through their first word */
  int nLive;                   /* slots taken and not given back; > 0 */
  int nBump;                   /* slots handed out from the top so far */
  int nSeen;                   /* the checks' count of its slots seen */
};

/* The slab holding slot pSlot. */
static GpudsSlab *slabOf(const void *pSlot){
  return (GpudsSlab*)((uintptr_t)pSlot & ~(uintptr_t)(GPUDS_SLAB_SIZE-1));
}

/* True if slab s has no free slot. */
static int slabFull(const GpudsSlabPool *pool, const GpudsSlab *s){
  return s->pFree==0 && s->nBump==pool->nSlot;
}

/* True if z is the start of a slot of slab s handed out from the top. */
static int slabIsSlot(const GpudsSlabPool *pool, const GpudsSlab *s, const void *z){
  size_t off = (size_t)((const char*)z - (const char*)s);
  return (const char*)z>=(const char*)s && off>=pool->iFirst
      && (off-pool->iFirst)%pool->szStride==0
      && (off-pool->iFirst)/pool->szStride < (size_t)s->nBump;
}

/* Put slab s first in the pool's list, or, bLast, last. */
static void slabLink(GpudsSlabPool *pool, GpudsSlab *s, int bLast){
  if( !bLast || pool->pFirst==0 ){
    s->pPrev = 0;
    s->pNext = pool->pFirst;
    if( pool->pFirst ) pool->pFirst->pPrev = s; else pool->pLast = s;
    pool->pFirst = s;
  }else{
    s->pPrev = pool->pLast;
    s->pNext = 0;
    pool->pLast->pNext = s;
    pool->pLast = s;
  }
}

/* Take slab s out of the pool's list. */
static void slabUnlink(GpudsSlabPool *pool, GpudsSlab *s){
  if( s->pPrev ) s->pPrev->pNext = s->pNext; else pool->pFirst = s->pNext;
  if( s->pNext ) s->pNext->pPrev = s->pPrev; else pool->pLast = s->pPrev;
  s->pPrev = s->pNext = 0;
}

void gpudsSlabPoolInit(GpudsSlabPool *pool, size_t szSlot, size_t iLine){
  memset(pool, 0, sizeof(*pool));
  pool->szStride = (szSlot+63) & ~(size_t)63;
  pool->iFirst = ((sizeof(GpudsSlab)+iLine+63) & ~(size_t)63) - iLine;
  pool->nSlot = (int)((GPUDS_SLAB_SIZE-pool->iFirst)/pool->szStride);
}

void *gpudsSlabTake(GpudsSlabPool *pool){
  GpudsSlab *s = pool->pFirst;
  char *z;
  if( s==0 || slabFull(pool, s) ){
    s = (GpudsSlab*)gpudsMapAligned(GPUDS_SLAB_SIZE, 1);
    if( s==0 ) return 0;
    memset(s, 0, sizeof(*s));
    s->pOwner = pool;
    slabLink(pool, s, 0);
    pool->nSlab++;
  }
  if( s->pFree ){
    z = (char*)s->pFree;
    s->pFree = *(void**)z;
  }else{
    z = (char*)s + pool->iFirst + (size_t)s->nBump*pool->szStride;
    s->nBump++;
  }
  s->nLive++;
  pool->nLive++;
  if( slabFull(pool, s) && s->pNext ){       /* full slabs go last */
    slabUnlink(pool, s);
    slabLink(pool, s, 1);
  }
  return z;
}

void gpudsSlabGive(GpudsSlabPool *pool, void *pSlot){
  GpudsSlab *s = slabOf(pSlot);
  int bWasFull = slabFull(pool, s);
  assert( s->pOwner==pool && s->nLive>0 );
  *(void**)pSlot = s->pFree;
  s->pFree = pSlot;
  s->nLive--;
  pool->nLive--;
  if( s->nLive==0 ){
    slabUnlink(pool, s);
    munmap(s, GPUDS_SLAB_SIZE);
    pool->nSlab--;
  }else if( bWasFull && s!=pool->pFirst ){   /* it has a free slot: first */
    slabUnlink(pool, s);
    slabLink(pool, s, 0);
  }
}

int gpudsSlabCheckList(GpudsSlabPool *pool, char *zErr, size_t nErr){
  GpudsSlab *s, *pPrev = 0;
  int64_t n = 0, nLive = 0;
  int bFull = 0;
  for(s=pool->pFirst; s; pPrev=s, s=s->pNext){
    void *z;
    int nFree = 0;
    if( ++n > pool->nSlab || s->pOwner!=pool || s->pPrev!=pPrev
     || s->nLive<=0 || s->nBump<0 || s->nBump>pool->nSlot ){
      snprintf(zErr, nErr, "slab list damaged");
      return 0;
    }
    for(z=s->pFree; z; z=*(void**)z){
      if( ++nFree > s->nBump || !slabIsSlot(pool, s, z) ){
        snprintf(zErr, nErr, "slab free list damaged");
        return 0;
      }
    }
    if( nFree + s->nLive != s->nBump ){
      snprintf(zErr, nErr, "slab: %d live and %d free of %d slots handed out",
               s->nLive, nFree, s->nBump);
      return 0;
    }
    if( bFull && !slabFull(pool, s) ){
      snprintf(zErr, nErr, "slab with a free slot after a full one");
      return 0;
    }
    bFull = slabFull(pool, s);
    nLive += s->nLive;
    s->nSeen = 0;
  }
  if( pPrev!=pool->pLast ){
    snprintf(zErr, nErr, "slab list's last is not its end");
    return 0;
  }
  if( n!=pool->nSlab || nLive!=pool->nLive ){
    snprintf(zErr, nErr, "slabs: %lld with %lld slots recorded, %lld with %lld found",
             (long long)pool->nSlab, (long long)pool->nLive, (long long)n,
             (long long)nLive);
    return 0;
  }
  return 1;
}

int gpudsSlabSee(GpudsSlabPool *pool, void *pSlot){
  GpudsSlab *s = slabOf(pSlot);
  if( s->pOwner!=pool || !slabIsSlot(pool, s, pSlot) ) return 0;
  s->nSeen++;
  return 1;
}

int gpudsSlabCheckSeen(const GpudsSlabPool *pool, char *zErr, size_t nErr){
  const GpudsSlab *s;
  for(s=pool->pFirst; s; s=s->pNext){
    if( s->nSeen!=s->nLive ){
      snprintf(zErr, nErr, "slab: %d live slots recorded, %d seen",
               s->nLive, s->nSeen);
      return 0;
    }
  }
  return 1;
}
