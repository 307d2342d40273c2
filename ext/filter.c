/*
** filter.c -- a Bloom filter over the keys held by a table's store, so that
** a plain INSERT learns "this key is certainly new" without asking the GPU.
** Keys are never removed: deletes only make the filter staler, and the table
** rebuilds it from the store when it is full or too stale.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>

/* A 64-bit mixer (splitmix64 finalizer). */
static uint64_t filterMix(uint64_t x){
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

#define FILTER_K 3   /* probes per key; 16 bits per key gives ~0.3% false hits */

/* The i-th probe position of key k (double hashing). */
static uint64_t filterProbe(const GpudsFilter *p, uint64_t h1, uint64_t h2, int i){
  return (h1 + (uint64_t)i*h2) & ((1ULL<<p->nLog2) - 1);
}

/* True if k might have been added; false means it certainly was not. */
int gpudsFilterMaybe(const GpudsFilter *p, int64_t k){
  uint64_t h1, h2;
  int i;
  if( p->aBit==0 ) return 1;      /* no filter: every key might exist */
  h1 = filterMix((uint64_t)k);
  h2 = filterMix(h1) | 1;
  for(i=0; i<FILTER_K; i++){
    uint64_t b = filterProbe(p, h1, h2, i);
    if( (p->aBit[b>>6] & (1ULL<<(b&63)))==0 ) return 0;
  }
  return 1;
}

/* Add k.  Returns 1 when the filter now holds more keys than it was sized
** for (the caller should rebuild it larger), else 0. */
int gpudsFilterAdd(GpudsFilter *p, int64_t k){
  uint64_t h1, h2;
  int i;
  if( p->aBit==0 ) return 1;
  h1 = filterMix((uint64_t)k);
  h2 = filterMix(h1) | 1;
  for(i=0; i<FILTER_K; i++){
    uint64_t b = filterProbe(p, h1, h2, i);
    p->aBit[b>>6] |= 1ULL<<(b&63);
  }
  p->nAdded++;
  return p->nAdded > p->nCap;
}

/* Size the filter for nCap keys, its bits left uncleared (gpudsFilterFill
** clears them).  SQLITE_NOMEM on failure, in which case the filter holds no
** bits and answers "might exist" for every key: slower, never wrong. */
int gpudsFilterAlloc(GpudsFilter *p, int64_t nCap){
  int nLog2 = 14;
  uint64_t nWord;
  if( nCap<1024 ) nCap = 1024;
  while( nLog2<40 && (1LL<<nLog2) < nCap*16 ) nLog2++;
  nWord = (1ULL<<nLog2)/64;
  gpudsFilterFree(p);
  p->aBit = (uint64_t*)sqlite3_malloc64(nWord*8);
  if( p->aBit==0 ) return SQLITE_NOMEM;
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
** no SQLite routine, so it may run on a thread of its own.  The keys' bit
** words are prefetched a few keys ahead: a big filter misses the cache on
** nearly every probe. */
void gpudsFilterFill(GpudsFilter *p, const int64_t *aKey, int64_t n){
  enum { AHEAD = 16 };
  uint64_t aH1[AHEAD], aH2[AHEAD];
  int64_t i;
  int j;
  if( p->aBit==0 ) return;
  memset(p->aBit, 0, ((size_t)1<<p->nLog2)/8);
  for(i=0; i<n+AHEAD; i++){
    j = (int)(i % AHEAD);
    if( i>=AHEAD ){                       /* add key i-AHEAD */
      int k;
      for(k=0; k<FILTER_K; k++){
        uint64_t b = filterProbe(p, aH1[j], aH2[j], k);
        p->aBit[b>>6] |= 1ULL<<(b&63);
      }
    }
    if( i<n ){                            /* hash key i, prefetch its words */
      int k;
      aH1[j] = filterMix((uint64_t)aKey[i]);
      aH2[j] = filterMix(aH1[j]) | 1;
      for(k=0; k<FILTER_K; k++){
        __builtin_prefetch(&p->aBit[filterProbe(p, aH1[j], aH2[j], k)>>6], 1);
      }
    }
  }
  p->nAdded = n;
}

/* Release the filter's memory. */
void gpudsFilterFree(GpudsFilter *p){
  sqlite3_free(p->aBit);
  memset(p, 0, sizeof(*p));
}
