/*
** arena.c -- row handles and the memory behind them.
**
** A row handle (the 64-bit word a store keeps for a key) is the record's
** address; bit 0 set means the record lives in a load arena: a 2 MiB block,
** aligned to its size, holding the rows of one reload back to back with a
** count of live rows in its first bytes, freed when the count drops to 0.
** Reloading a big table then costs a bump of a pointer per row instead of a
** malloc(), and closing it a decrement instead of a free().  Records in an
** arena are 2-byte aligned.
**
** A load hands lists of spare blocks (GpudsBlocks) between its threads, so
** that a worker fills blocks its reader mapped.  A big flush's rows are
** repacked into arenas in key order (gpudsRowsRepack).  This file knows
** nothing of what a record holds (row.c).
*/
#include "gpuds_int.h"
#include "gpuds_hugemap.h"
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <pthread.h>
#include <unistd.h>
#ifdef __GLIBC__
# include <malloc.h>              /* malloc_trim */
#endif

#define ARENA_SIZE  ((size_t)2<<20)
#define ARENA_HDR   16              /* int64 live count, padded to 16 */

/* gpudsRowOf (gpuds_int.h): a handle's bit 0 marks a record in an arena. */

/* A fresh arena block (ARENA_SIZE bytes aligned to their size), or NULL.
** Blocks are mapped from the system directly, not taken from malloc(): an
** aligned malloc() leaves the alignment's slack in the heap as free
** fragments, and a block freed in the heap's middle stays resident until a
** trim; a mapping costs the pages the rows touch and goes back to the
** system the moment its last row is freed.  bHuge asks for one transparent
** huge page (MADV_HUGEPAGE, before anything touches it), for blocks a big
** load or transaction will fill: reading a random row of a big table then
** misses the TLB far less often (the rows of 10^7 keys span 100,000 small
** pages); a block that may stay nearly empty (a small table's) keeps small
** pages, which cost only what is touched (and so does every block under
** GPUDS_HUGE_PAGES=0). */
static void *blockAlloc(int bHuge){
  return gpudsMapAligned(ARENA_SIZE, bHuge);
}

/* Give block pBlock (from blockAlloc) back to the system. */
static void blockFree(void *pBlock){
  munmap(pBlock, ARENA_SIZE);
}

/* Drop one reference to arena block pBlock; free it at the last. */
static void arenaRelease(char *pBlock){
  int64_t *pnLive = (int64_t*)pBlock;
  if( --*pnLive==0 ) blockFree(pBlock);
}

/* ------------------------------------------------ lists of spare blocks */

/* Push block pBlock onto list pList (its first word links the list). */
static void blocksPush(GpudsBlocks *pList, void *pBlock){
  *(void**)pBlock = pList->pHead;
  pList->pHead = pBlock;
  pList->n++;
}

/* Pop a block off list pList, or NULL if it is empty. */
static void *blocksPop(GpudsBlocks *pList){
  void *pBlock = pList->pHead;
  if( pBlock ){
    pList->pHead = *(void**)pBlock;
    pList->n--;
  }
  return pBlock;
}

/* Add one fresh arena block to list pList: 1, or 0 if out of memory.
** bHuge: rows will fill it (blockAlloc). */
int gpudsBlocksAdd(GpudsBlocks *pList, int bHuge){
  void *pNew = blockAlloc(bHuge);
  if( pNew==0 ) return 0;
  blocksPush(pList, pNew);
  return 1;
}

/* Free every block of list pList, which is left empty. */
void gpudsBlocksFree(GpudsBlocks *pList){
  void *pBlock;
  while( (pBlock = blocksPop(pList))!=0 ) blockFree(pBlock);
}

/* ------------------------------------------------------------ loaders */

/* Start a load arena. */
void gpudsLoaderInit(GpudsLoader *L){
  memset(L, 0, sizeof(*L));
}

/* Start a load arena that holds a reference to its current block, so that
** rows of the load may be freed while it goes on (a reload frees the rows
** that newer runs override); gpudsLoaderEnd() drops the reference. */
void gpudsLoaderBegin(GpudsLoader *L){
  memset(L, 0, sizeof(*L));
  L->bHold = 1;
}

/* Finish a loader started by gpudsLoaderBegin() (or gpudsLoaderInit()). */
void gpudsLoaderEnd(GpudsLoader *L){
  if( L->bHold && L->pBlock ) arenaRelease(L->pBlock);
  gpudsBlocksFree(&L->spare);
  memset(L, 0, sizeof(*L));
}

/* Give loader L (started by gpudsLoaderBegin) the blocks of pList (left
** empty) to use before it allocates any, so that a thread can use memory
** that another thread took (a thread's malloc() gets fresh pages from its
** own arena, while the thread that freed memory reuses it);
** gpudsLoaderEnd() frees those not used. */
void gpudsLoaderGive(GpudsLoader *L, GpudsBlocks *pList){
  void *pBlock;
  while( (pBlock = blocksPop(pList))!=0 ) blocksPush(&L->spare, pBlock);
}

/* Take loader L's spare blocks, those it has not used, onto list pList. */
void gpudsLoaderTakeBack(GpudsLoader *L, GpudsBlocks *pList){
  void *pBlock;
  while( (pBlock = blocksPop(&L->spare))!=0 ) blocksPush(pList, pBlock);
}

/* Move loader L to a fresh block.  0 if out of memory (L unchanged).  A
** loader that has filled a block already is a big one: its next blocks are
** asked for as huge pages. */
static int loaderNewBlock(GpudsLoader *L){
  void *pNew = blocksPop(&L->spare);
  if( pNew==0 && (pNew = blockAlloc(L->pBlock!=0))==0 ) return 0;
  if( L->bHold && L->pBlock ) arenaRelease(L->pBlock);
  L->pBlock = (char*)pNew;
  *(int64_t*)L->pBlock = L->bHold ? 1 : 0;
  L->iOff = ARENA_HDR;
  return 1;
}

/* nByte bytes for one row in loader L's arena, counted in its block, 2-byte
** aligned (bit 0 of the handle marks the arena); NULL if out of memory or
** if the row is too big for an arena (the caller then uses malloc()). */
static char *loaderAlloc(GpudsLoader *L, size_t nByte){
  size_t nAl = (nByte + 1) & ~(size_t)1;
  char *z;
  if( nAl > ARENA_SIZE/4 ) return 0;
  if( L->pBlock==0 || L->iOff + nAl > ARENA_SIZE ){
    if( !loaderNewBlock(L) ) return 0;
  }
  z = L->pBlock + L->iOff;
  L->iOff += nAl;
  (*(int64_t*)L->pBlock)++;
  return z;
}

/* The most bytes of records one arena block holds. */
size_t gpudsLoaderSpanMax(void){
  return ARENA_SIZE - ARENA_HDR;
}

/* ------------------------------------------------------------ handles */

/* nByte bytes for a record, from arena L (its handle has bit 0 set) or, if
** L is NULL or has no room, from malloc(): the handle, and the bytes in
** *pz; 0 if out of memory. */
uint64_t gpudsRowAllocHandle(GpudsLoader *L, size_t nByte, unsigned char **pz){
  unsigned char *z;
  if( L && (z = (unsigned char*)loaderAlloc(L, nByte))!=0 ){
    *pz = z;
    return (uint64_t)(uintptr_t)z | 1;
  }
  if( (z = (unsigned char*)malloc(nByte))!=0 ){
    *pz = z;
    return (uint64_t)(uintptr_t)z;
  }
  return 0;
}

/* Free the record of handle h (0 is a no-op). */
void gpudsRowFreeHandle(uint64_t h){
  if( h & 1 ){
    arenaRelease((char*)((uintptr_t)(h & ~(uint64_t)1) & ~(uintptr_t)(ARENA_SIZE-1)));
  }else if( h ){
    free((void*)(uintptr_t)h);
  }
}

/* Start loading the records of handles aRow[0..n) into the CPU's caches
** (the first two cache lines of each: the header and a short row's values),
** so that the misses of rows a cursor is about to return overlap instead of
** following one another.  Reads nothing, changes nothing. */
void gpudsRowPrefetch(const uint64_t *aRow, size_t n){
  size_t i;
  for(i=0; i<n; i++) gpudsRowPrefetchOne(aRow[i]);
}

/* Give the heap memory that a load or a big transaction freed (its
** temporaries: blob buffers, key and handle arrays, the write buffer) back
** to the system.  glibc keeps freed memory of every thread's malloc arena
** resident for reuse, so without this a table's first load leaves its
** temporaries' size in the process long after (malloc_trim, glibc only;
** elsewhere a no-op).  It walks the free lists only: call it after work
** that freed much, not per statement. */
void gpudsMemTrim(void){
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/* ------------------------------------------------------------ repacking
** The rows of a big write buffer's flush lie wherever xUpdate put them (in
** the order written); a range scan of them later costs a cache miss a
** row.  A repack copies them into load arenas in key order, so that the
** scan reads them sequentially. */

/* A repack of at least this many rows copies them: below it a scan's cache
** misses cost less than the copy. */
#define REPACK_MIN_ROWS 1024

/* Rows lying more than REPACK_GAP bytes apart in memory (a page), or
** backwards, break the key order a scan would read them in; rows are
** repacked when at least one in REPACK_BREAK_DIV does so (fewer: they are
** already mostly in key order, e.g. a sorted insert). */
#define REPACK_GAP       4096
#define REPACK_BREAK_DIV 8

/* A repack uses one thread per this many rows, at most REPACK_MAX_THREADS
** (and no more than the machine's processors). */
#define REPACK_ROWS_PER_THREAD 65536
#define REPACK_MAX_THREADS     8

/* One thread's share of a repack: rows [iFirst, iLast) of aRow, copied
** into an arena of its own (so each thread's copies are in key order). */
typedef struct RepackJob {
  uint64_t *aRow;
  uint64_t (*xCopy)(GpudsLoader*, uint64_t);
  size_t iFirst, iLast;
  int bFail;              /* out of memory: some rows were not copied */
  pthread_t tid;
  int bThread;            /* tid is a running thread to join */
} RepackJob;

static void *repackJobRun(void *pArg){
  RepackJob *j = (RepackJob*)pArg;
  GpudsLoader L;
  size_t i;
  gpudsLoaderInit(&L);
  for(i=j->iFirst; i<j->iLast; i++){
    uint64_t h = j->aRow[i], hNew;
    if( h==0 ) continue;
    hNew = j->xCopy(&L, h);
    if( hNew==0 ){ j->bFail = 1; break; }
    j->aRow[i] = hNew;
  }
  return 0;
}

/* Put the originals back into aRow[0..n) and free the copies a repack made
** (*paOrig, freed and cleared; a no-op if it is NULL). */
void gpudsRowsRepackUndo(uint64_t *aRow, size_t n, uint64_t **paOrig){
  uint64_t *aOrig = *paOrig;
  size_t i;
  if( aOrig==0 ) return;
  for(i=0; i<n; i++){
    if( aRow[i]!=aOrig[i] ) gpudsRowFreeHandle(aRow[i]);
  }
  memcpy(aRow, aOrig, n*8);
  free(aOrig);
  *paOrig = 0;
}

/* Copy the rows of handles aRow[0..n) (0 entries skipped), which are in
** key order, into load arenas, so that a scan reads them sequentially
** (xCopy copies one record into a loader: row.c's gpudsLoaderCopy, which
** knows what a record holds):
** aRow gets the copies and *paOrig (malloc()'d) the originals, which the
** caller's other references still name.  Rows already in key order in
** memory (a sorted insert) and short lists are left as they are (*paOrig
** stays NULL); so is everything when memory is short (this only saves
** time).  Big lists are split among threads (the copies are independent;
** each thread's arena holds a contiguous key range), all joined before
** returning. */
void gpudsRowsRepack(uint64_t *aRow, size_t n, uint64_t (*xCopy)(GpudsLoader*, uint64_t),
                     uint64_t **paOrig){
  size_t i, nRow = 0, nBreak = 0;
  uintptr_t prev = 0;
  RepackJob aJob[REPACK_MAX_THREADS];
  int nJob, iJob, bFail = 0;
  long nCpu = 1;
  *paOrig = 0;
  for(i=0; i<n; i++){
    uint64_t h = aRow[i];
    if( h==0 ) continue;
    nRow++;
    if( (uintptr_t)h < prev || (uintptr_t)h - prev > REPACK_GAP ) nBreak++;
    prev = (uintptr_t)h;
  }
  if( nRow<REPACK_MIN_ROWS || nBreak<nRow/REPACK_BREAK_DIV ) return;
  *paOrig = malloc(n*8);
  if( *paOrig==0 ) return;
  memcpy(*paOrig, aRow, n*8);
#ifdef _SC_NPROCESSORS_ONLN
  nCpu = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  nJob = (int)(n / REPACK_ROWS_PER_THREAD);
  if( nJob>nCpu ) nJob = (int)nCpu;
  if( nJob>REPACK_MAX_THREADS ) nJob = REPACK_MAX_THREADS;
  if( nJob<1 ) nJob = 1;
  memset(aJob, 0, sizeof(aJob));
  for(iJob=0; iJob<nJob; iJob++){
    aJob[iJob].aRow = aRow;
    aJob[iJob].xCopy = xCopy;
    aJob[iJob].iFirst = n*iJob/nJob;
    aJob[iJob].iLast = n*(iJob+1)/nJob;
  }
  for(iJob=1; iJob<nJob; iJob++){
    aJob[iJob].bThread = pthread_create(&aJob[iJob].tid, 0, repackJobRun, &aJob[iJob])==0;
  }
  repackJobRun(&aJob[0]);
  for(iJob=1; iJob<nJob; iJob++){
    if( aJob[iJob].bThread ) pthread_join(aJob[iJob].tid, 0);
    else repackJobRun(&aJob[iJob]);          /* no thread: do it here */
  }
  for(iJob=0; iJob<nJob; iJob++) bFail |= aJob[iJob].bFail;
  if( bFail ) gpudsRowsRepackUndo(aRow, n, paOrig);
}
