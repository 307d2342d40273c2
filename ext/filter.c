/*
** filter.c -- a Bloom filter over the keys held by a table's store, so that
** a plain INSERT learns "this key is certainly new" without asking the GPU.
** Keys are never removed: deletes only make the filter staler, and the table
** rebuilds it from the store when it is full or too stale.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "gpuds_mix.h"
#include <string.h>
#include <stdlib.h>

#define filterMix gpudsMix64

/* Blocked Bloom filter: a key's FILTER_K bits all lie in one 512-bit block
** (a cache line), chosen by the low 32 bits of the key's hash (scaled to
** the number of blocks, which need not be a power of two), the bits by its
** top 27 bits; adding or testing a key touches one cache line.  Full (16
** bits a key) it answers "maybe" for about 0.5% of absent keys; a load's
** filter, sized with a quarter to spare (20 bits a key), for about 0.3%
** (tests/test_filter.c prints the rates). */
#define FILTER_K 3          /* bits per key */
#define FILTER_BLOCK_BITS 512
#define FILTER_BLOCK_WORDS (FILTER_BLOCK_BITS/64)

/* Sizing: FILTER_BITS_PER_KEY bits per key the filter is made for, in whole
** blocks, at least FILTER_MIN_KEYS keys' worth (2 KiB: a tiny table
** rebuilds rarely), at most FILTER_MAX_BLOCKS blocks (the block choice
** scales 32 bits of the hash). */
#define FILTER_BITS_PER_KEY 16
#define FILTER_MIN_KEYS     1024
#define FILTER_MAX_BLOCKS   0xffffffffULL

/* The first word of the block of hash h. */
static uint64_t *filterBlock(const GpudsFilter *p, uint64_t h){
  uint64_t iBlock = ((h & 0xffffffffULL) * p->nBlock) >> 32;
  return &p->aBit[iBlock * FILTER_BLOCK_WORDS];
}

/* Bit i (0..FILTER_K-1) of a block, from the top bits of hash h. */
#define FILTER_BIT(h, i) (((h) >> (64-9*((i)+1))) & 511)

/* True if k might have been added; false means it certainly was not. */
int gpudsFilterMaybe(const GpudsFilter *p, int64_t k){
  uint64_t h, *a;
  int i;
  if( p->aBit==0 ) return 1;      /* no filter: every key might exist */
  h = filterMix((uint64_t)k);
  a = filterBlock(p, h);
  for(i=0; i<FILTER_K; i++){
    uint64_t b = FILTER_BIT(h, i);
    if( (a[b>>6] & (1ULL<<(b&63)))==0 ) return 0;
  }
  return 1;
}

/* Add k.  Returns 1 when the filter now holds more keys than it was sized
** for (the caller should rebuild it larger), else 0. */
int gpudsFilterAdd(GpudsFilter *p, int64_t k){
  uint64_t h, *a;
  int i;
  if( p->aBit==0 ) return 1;
  h = filterMix((uint64_t)k);
  a = filterBlock(p, h);
  for(i=0; i<FILTER_K; i++){
    uint64_t b = FILTER_BIT(h, i);
    a[b>>6] |= 1ULL<<(b&63);
  }
  p->nAdded++;
  return p->nAdded > p->nCap;
}

/* Size the filter for nCap keys, its bits left uncleared (gpudsFilterFill
** clears them).  SQLITE_NOMEM on failure, in which case the filter holds no
** bits and answers "might exist" for every key: slower, never wrong. */
int gpudsFilterAlloc(GpudsFilter *p, int64_t nCap){
  uint64_t nBlock;
  if( nCap<FILTER_MIN_KEYS ) nCap = FILTER_MIN_KEYS;
  nBlock = ((uint64_t)nCap*FILTER_BITS_PER_KEY + FILTER_BLOCK_BITS - 1) / FILTER_BLOCK_BITS;
  if( nBlock>FILTER_MAX_BLOCKS ) nBlock = FILTER_MAX_BLOCKS;
  gpudsFilterFree(p);
  {
    void *pNew = 0;                 /* blocks aligned to cache lines */
    if( posix_memalign(&pNew, 64, nBlock*(FILTER_BLOCK_BITS/8)) ) return SQLITE_NOMEM;
    p->aBit = (uint64_t*)pNew;
  }
  p->nBlock = nBlock;
  p->nCap = (int64_t)(nBlock*FILTER_BLOCK_BITS/FILTER_BITS_PER_KEY);
  p->nAdded = 0;
  p->nStale = 0;
  return SQLITE_OK;
}

/* Empty the filter and size it for nCap keys (see gpudsFilterAlloc). */
int gpudsFilterReset(GpudsFilter *p, int64_t nCap){
  int rc = gpudsFilterAlloc(p, nCap);
  if( rc==SQLITE_OK ) memset(p->aBit, 0, (size_t)p->nBlock*(FILTER_BLOCK_BITS/8));
  return rc;
}

/* Clear a filter sized by gpudsFilterAlloc and add the n keys aKey[].  Calls
** no SQLite routine, so it may run on a thread of its own.  Each key's
** block is prefetched a few keys ahead: a big filter misses the cache on
** nearly every key. */
void gpudsFilterFill(GpudsFilter *p, const int64_t *aKey, int64_t n){
  if( p->aBit==0 ) return;
  memset(p->aBit, 0, (size_t)p->nBlock*(FILTER_BLOCK_BITS/8));
  p->nAdded = 0;
  gpudsFilterAddMany(p, aKey, n);
}

/* Add the n keys aKey[], each key's block prefetched a few keys ahead.
** Returns 1 when the filter now holds more keys than it was sized for,
** else 0. */
int gpudsFilterAddMany(GpudsFilter *p, const int64_t *aKey, int64_t n){
  return gpudsFilterAddIf(p, aKey, 0, n);
}

/* As gpudsFilterAddMany, for the keys aKey[i] whose aSel[i] is non-zero
** (every key if aSel is NULL): a batch's upserts, aSel its new values.
** Selected keys pass through a ring of AHEAD: hashed and their block
** prefetched when they enter, their bits set (as gpudsFilterAdd) when they
** leave. */
int gpudsFilterAddIf(GpudsFilter *p, const int64_t *aKey, const uint64_t *aSel,
                     int64_t n){
  enum { AHEAD = 16 };
  uint64_t aH[AHEAD], *aBlk[AHEAD];
  int64_t i = 0, nIn = 0, nOut = 0;     /* keys entered / left the ring */
  if( p->aBit==0 ) return 1;
  while( i<n || nOut<nIn ){
    if( i<n && nIn-nOut<AHEAD ){
      if( aSel==0 || aSel[i] ){
        int j = (int)(nIn % AHEAD);
        aH[j] = filterMix((uint64_t)aKey[i]);
        aBlk[j] = filterBlock(p, aH[j]);
        __builtin_prefetch(aBlk[j], 1);
        nIn++;
      }
      i++;
    }else{
      int j = (int)(nOut % AHEAD), k;
      for(k=0; k<FILTER_K; k++){
        uint64_t b = FILTER_BIT(aH[j], k);
        aBlk[j][b>>6] |= 1ULL<<(b&63);
      }
      nOut++;
    }
  }
  p->nAdded += nOut;
  return p->nAdded > p->nCap;
}

/* Release the filter's memory. */
void gpudsFilterFree(GpudsFilter *p){
  free(p->aBit);
  memset(p, 0, sizeof(*p));
}
