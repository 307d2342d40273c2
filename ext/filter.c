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
** (a cache line), chosen by the low bits of the key's hash, the bits by its
** top 27 bits (the filter has at most 2^40 bits: 2^31 blocks, so the two
** never overlap); adding or testing a key touches one cache line.  Sized at
** 16..32 bits per key, it answers "maybe" for about 0.1-0.6% of absent keys. */
#define FILTER_K 3          /* bits per key */
#define FILTER_BLOCK_LOG2 9 /* bits per block: 512 = 8 words = 64 bytes */

/* Sizing: at least FILTER_BITS_PER_KEY bits per key the filter is made for
** (the low end of the 16..32 above), rounded up to a power of two, and at
** least FILTER_MIN_KEYS keys' worth (2 KiB: a tiny table rebuilds rarely);
** at most 2^FILTER_MAX_LOG2 bits (see the block choice above). */
#define FILTER_BITS_PER_KEY 16
#define FILTER_MIN_KEYS     1024
#define FILTER_MIN_LOG2     14
#define FILTER_MAX_LOG2     40

/* The first word of the block of hash h (the filter has 2^nLog2 bits,
** 14 <= nLog2 <= 40). */
static uint64_t *filterBlock(const GpudsFilter *p, uint64_t h){
  uint64_t nBlockMask = (1ULL<<(p->nLog2-FILTER_BLOCK_LOG2)) - 1;
  return &p->aBit[(h & nBlockMask) << (FILTER_BLOCK_LOG2-6)];
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
  int nLog2 = FILTER_MIN_LOG2;
  uint64_t nWord;
  if( nCap<FILTER_MIN_KEYS ) nCap = FILTER_MIN_KEYS;
  while( nLog2<FILTER_MAX_LOG2 && (1LL<<nLog2) < nCap*FILTER_BITS_PER_KEY ) nLog2++;
  nWord = (1ULL<<nLog2)/64;
  gpudsFilterFree(p);
  {
    void *pNew = 0;                 /* blocks aligned to cache lines */
    if( posix_memalign(&pNew, 64, nWord*8) ) return SQLITE_NOMEM;
    p->aBit = (uint64_t*)pNew;
  }
  p->nLog2 = nLog2;
  p->nCap = (1LL<<nLog2)/16;
  if( p->nCap < nCap/2 ) p->nCap = nCap/2;
  p->nAdded = 0;
  p->nStale = 0;
  return SQLITE_OK;
}

/* Empty the filter and size it for nCap keys (see gpudsFilterAlloc). */
int gpudsFilterReset(GpudsFilter *p, int64_t nCap){
  int rc = gpudsFilterAlloc(p, nCap);
  if( rc==SQLITE_OK ) memset(p->aBit, 0, ((size_t)1<<p->nLog2)/8);
  return rc;
}

/* Clear a filter sized by gpudsFilterAlloc and add the n keys aKey[].  Calls
** no SQLite routine, so it may run on a thread of its own.  Each key's
** block is prefetched a few keys ahead: a big filter misses the cache on
** nearly every key. */
void gpudsFilterFill(GpudsFilter *p, const int64_t *aKey, int64_t n){
  if( p->aBit==0 ) return;
  memset(p->aBit, 0, ((size_t)1<<p->nLog2)/8);
  p->nAdded = 0;
  gpudsFilterAddMany(p, aKey, n);
}

/* Add the n keys aKey[] (as gpudsFilterAdd each, keeping the bits already
** set), each key's block prefetched a few keys ahead.  Returns 1 when the
** filter now holds more keys than it was sized for, else 0. */
int gpudsFilterAddMany(GpudsFilter *p, const int64_t *aKey, int64_t n){
  enum { AHEAD = 16 };
  uint64_t aH[AHEAD], *aBlk[AHEAD];
  int64_t i;
  if( p->aBit==0 ) return 1;
  for(i=0; i<n+AHEAD; i++){
    int j = (int)(i % AHEAD), k;
    if( i>=AHEAD ){                       /* add key i-AHEAD */
      for(k=0; k<FILTER_K; k++){
        uint64_t b = FILTER_BIT(aH[j], k);
        aBlk[j][b>>6] |= 1ULL<<(b&63);
      }
    }
    if( i<n ){                            /* hash key i, prefetch its block */
      aH[j] = filterMix((uint64_t)aKey[i]);
      aBlk[j] = filterBlock(p, aH[j]);
      __builtin_prefetch(aBlk[j], 1);
    }
  }
  p->nAdded += n;
  return p->nAdded > p->nCap;
}

/* Release the filter's memory. */
void gpudsFilterFree(GpudsFilter *p){
  free(p->aBit);
  memset(p, 0, sizeof(*p));
}
