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

/* Empty the filter and size it for nCap keys.  SQLITE_NOMEM on failure, in
** which case the filter holds no bits and answers "might exist" for every
** key: slower, never wrong. */
int gpudsFilterReset(GpudsFilter *p, int64_t nCap){
  int nLog2 = 14;
  uint64_t nWord;
  if( nCap<1024 ) nCap = 1024;
  while( nLog2<40 && (1LL<<nLog2) < nCap*16 ) nLog2++;
  nWord = (1ULL<<nLog2)/64;
  gpudsFilterFree(p);
  p->aBit = (uint64_t*)sqlite3_malloc64(nWord*8);
  if( p->aBit==0 ) return SQLITE_NOMEM;
  memset(p->aBit, 0, nWord*8);
  p->nLog2 = nLog2;
  p->nCap = (1LL<<nLog2)/16;
  if( p->nCap < nCap/2 ) p->nCap = nCap/2;
  p->nAdded = 0;
  p->nStale = 0;
  return SQLITE_OK;
}

/* Release the filter's memory. */
void gpudsFilterFree(GpudsFilter *p){
  sqlite3_free(p->aBit);
  memset(p, 0, sizeof(*p));
}
