/*
** hugemap.c -- aligned anonymous mappings, advised as transparent huge
** pages where asked (gpuds_hugemap.h).
*/
#include "gpuds_hugemap.h"
#include "gpuds_config.h"
#include <stdint.h>
#include <sys/mman.h>

/* Map twice the size and trim to the aligned n bytes inside; the advice
** comes before the first touch, which is when the kernel picks the page
** size (advice only: without it, small pages). */
void *gpudsMapAligned(size_t n, int bHuge){
  char *pMap = (char*)mmap(0, 2*n, PROT_READ|PROT_WRITE,
                           MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  char *pBlock;
  size_t nHead;
  if( pMap==(char*)MAP_FAILED ) return 0;
  pBlock = (char*)(((uintptr_t)pMap + n - 1) & ~(uintptr_t)(n-1));
  nHead = (size_t)(pBlock - pMap);
  if( nHead ) munmap(pMap, nHead);
  if( n - nHead ) munmap(pBlock + n, n - nHead);
#ifdef MADV_HUGEPAGE
  if( bHuge && gpudsConfig()->bHugePages ) madvise(pBlock, n, MADV_HUGEPAGE);
#else
  (void)bHuge;
#endif
  return pBlock;
}
