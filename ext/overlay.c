/*
** overlay.c -- the write buffer's map key -> value for one transaction.
**
** Built for the access pattern of xUpdate: one point read and one write per
** row, many rows, and an ordered read of everything at flush time.
**   - entries live in an append-only array (key, value);
**   - an open-addressing hash table (linear probing, backward-shift delete)
**     maps a key to its entry: get, put and delete are O(1).  It is built
**     only once keys stop arriving in ascending order (or one is deleted):
**     until then the entry array is itself sorted, a get is a binary search
**     (or no search at all for a key above the largest), and a put is an
**     append, so a bulk insert in key order never touches a hash slot;
**   - with the hash table comes a Bloom filter over the live keys (one
**     64-bit word a key touches, in cache where the slots are not): a get
**     of a key it has never seen (a bulk insert's "is the key new?") reads
**     no slot, and a put of such a key is appended to a short tail of
**     entries not yet in the hash table, which is indexed as one batch
**     (slots prefetched) when it is full or a key the filter may hold comes
**     (a get scans it instead);
**   - the ordered view (for merged scans and flushes) is an array of entry
**     numbers sorted by key, rebuilt lazily after the key set changed: not
**     at all while keys arrive in ascending order, else by sort.c's radix
**     sort.
** Deleted entries (only undo deletes) are marked dead and dropped when the
** array is compacted.  No SQLite dependency: tests/test_overlay.c links it
** with sort.c alone.  Returns GPUDS_OK or GPUDS_NOMEM (equal to the SQLite codes).
*/
#include "gpuds_backend.h"
#include "overlay.h"
#include "gpuds_sort.h"
#include "gpuds_mix.h"
#include <string.h>
#include <stdlib.h>

#define OV_EMPTY 0xffffffffu          /* empty hash slot */

/* The entry array starts with room for OV_INITIAL entries and doubles; a
** clear frees arrays grown past OV_KEEP_MAX entries (a big transaction
** should not pin its overlay), keeping smaller ones for the next. */
#define OV_INITIAL  1024
#define OV_KEEP_MAX 65536
/* The hash table, once built, starts with at least this many slots. */
#define OV_MIN_SLOTS 2048

/* The Bloom filter: OV_BLOOM_BITS bits of one 64-bit word per key, about
** OV_BLOOM_KEY_BITS bits a key (a power of two words; about 1% false
** "maybe" when full), sized for at least OV_BLOOM_MIN_KEYS keys and
** rebuilt four times larger when full.  The tail of unindexed entries
** holds at most OV_TAIL_MAX (a get scans it linearly). */
#define OV_BLOOM_BITS     4
#define OV_BLOOM_KEY_BITS 16
#define OV_BLOOM_MIN_KEYS 8192
#define OV_TAIL_MAX       512

typedef struct OvEntry {
  int64_t k;
  uint64_t v;
} OvEntry;

struct GpudsOverlay {
  OvEntry *aE;           /* entries, in insertion order */
  uint8_t *aDead;        /* aDead[i]: entry i was deleted */
  uint32_t nE, nEAlloc;  /* entries used / allocated */
  uint32_t nLive;        /* entries not dead */
  uint32_t *aSlot;       /* hash slots: entry number or OV_EMPTY */
  uint32_t nSlot;        /* power of two */
  uint32_t *aSort;       /* live entry numbers in key order */
  int bSorted;           /* aSort is up to date */
  int bAppendSorted;     /* every key appended so far ascended */
  int bHashed;           /* aSlot indexes the entries (else: see above) */
  uint32_t nHashed;      /* bHashed: entries [0,nHashed) are in aSlot; the
                         ** rest (the tail) are not: all live and all in
                         ** aBloom */
  uint64_t *aBloom;      /* bHashed: Bloom filter over the live keys, or 0
                         ** (then the tail is empty) */
  uint32_t nBloom;       /* words in aBloom, a power of two */
  uint32_t nBloomCap;    /* keys it is sized for ... */
  uint32_t nBloomAdd;    /* ... and keys added since it was built */
};

/* Hash of a key. */
static uint32_t ovHash(int64_t k, uint32_t mask){
  return (uint32_t)gpudsMix64((uint64_t)k) & mask;
}

/* The filter word of hash h (its top bits; the slot takes the low ones)
** and the key's bits in it (from the bits below). */
#define OV_BLOOM_WORD(p, h) ((p)->aBloom[((h)>>32) & ((p)->nBloom-1)])
static uint64_t ovBloomMask(uint64_t h){
  uint64_t m = 0;
  int i;
  for(i=0; i<OV_BLOOM_BITS; i++) m |= 1ULL << ((h >> (6*i+8)) & 63);
  return m;
}

/* False if no live key has hash h (certainly), true if one may. */
static int ovBloomMaybe(const GpudsOverlay *p, uint64_t h){
  uint64_t m = ovBloomMask(h);
  return (OV_BLOOM_WORD(p, h) & m)==m;
}

/* Add the key of hash h to the filter. */
static void ovBloomAdd(GpudsOverlay *p, uint64_t h){
  OV_BLOOM_WORD(p, h) |= ovBloomMask(h);
  p->nBloomAdd++;
}

/* (Re)build the filter over the live entries, sized for nKey keys.  If
** there is no memory for it, an existing filter is kept (overfull: more
** false "maybe", never wrong; it covers the tail) and without one the
** overlay runs without (only at ovHashBuild, when there is no tail). */
static void ovBloomBuild(GpudsOverlay *p, uint64_t nKey){
  uint64_t nWord = 64, *a;
  uint32_t i;
  if( nKey<OV_BLOOM_MIN_KEYS ) nKey = OV_BLOOM_MIN_KEYS;
  while( nWord*64 < nKey*OV_BLOOM_KEY_BITS && nWord<((uint64_t)1<<31) ) nWord *= 2;
  if( nWord==p->nBloom ){
    a = p->aBloom;
  }else{
    a = malloc(nWord*8);
    if( a==0 ){
      if( p->aBloom ) p->nBloomCap = 0xffffffffu;   /* stop growing it */
      return;
    }
    free(p->aBloom);
    p->aBloom = a;
    p->nBloom = (uint32_t)nWord;
  }
  memset(a, 0, nWord*8);
  p->nBloomCap = (uint32_t)(nWord*64/OV_BLOOM_KEY_BITS);
  p->nBloomAdd = 0;
  for(i=0; i<p->nE; i++){
    if( !p->aDead[i] ) ovBloomAdd(p, gpudsMix64((uint64_t)p->aE[i].k));
  }
}

/* A new empty overlay, or NULL. */
GpudsOverlay *gpudsOvNew(void){
  GpudsOverlay *p = malloc(sizeof(*p));
  if( p==0 ) return 0;
  memset(p, 0, sizeof(*p));
  p->bAppendSorted = 1;
  return p;
}

/* Free the overlay (NULL is a no-op). */
void gpudsOvFree(GpudsOverlay *p){
  if( p ){
    free(p->aE); free(p->aDead); free(p->aSlot); free(p->aSort);
    free(p->aBloom);
    free(p);
  }
}

/* Empty the overlay, keeping its memory if it is small. */
void gpudsOvClear(GpudsOverlay *p){
  if( p->nEAlloc > OV_KEEP_MAX ){
    free(p->aE); free(p->aDead); free(p->aSlot); free(p->aSort);
    p->aE = 0; p->aDead = 0; p->aSlot = 0; p->aSort = 0;
    p->nEAlloc = 0; p->nSlot = 0;
  }
  if( (uint64_t)p->nBloom*64/OV_BLOOM_KEY_BITS > OV_KEEP_MAX ){
    free(p->aBloom);
    p->aBloom = 0;
    p->nBloom = 0;
  }
  p->nBloomCap = p->nBloomAdd = 0;
  p->nE = p->nLive = p->nHashed = 0;
  p->bSorted = 0;
  p->bAppendSorted = 1;
  p->bHashed = 0;
}

/* Keys held. */
int64_t gpudsOvCount(const GpudsOverlay *p){
  return p->nLive;
}

/* Slot of key k, or of the empty slot where it would go. */
static uint32_t ovFind(const GpudsOverlay *p, int64_t k){
  uint32_t mask = p->nSlot-1, i = ovHash(k, mask);
  while( p->aSlot[i]!=OV_EMPTY && p->aE[p->aSlot[i]].k!=k ) i = (i+1) & mask;
  return i;
}

/* The empty slot where key k goes, k being in no slot (its probe sequence
** needs no key compared: no entry's key is read). */
static uint32_t ovFindEmpty(const GpudsOverlay *p, int64_t k){
  uint32_t mask = p->nSlot-1, i = ovHash(k, mask);
  while( p->aSlot[i]!=OV_EMPTY ) i = (i+1) & mask;
  return i;
}

/* Rebuild the hash table with nSlot slots, dropping dead entries. */
static int ovRehash(GpudsOverlay *p, uint32_t nSlot){
  uint32_t *aSlot = malloc((size_t)nSlot*4);
  uint32_t i, j;
  if( aSlot==0 ) return GPUDS_NOMEM;
  memset(aSlot, 0xff, (size_t)nSlot*4);
  /* compact the entry array */
  for(i=j=0; i<p->nE; i++){
    if( p->aDead[i] ) continue;
    if( i!=j ){ p->aE[j] = p->aE[i]; p->bSorted = 0; }
    p->aDead[j] = 0;
    j++;
  }
  p->nE = j;
  free(p->aSlot);
  p->aSlot = aSlot;
  p->nSlot = nSlot;
  for(i=0; i<p->nE; i++){
    p->aSlot[ovFindEmpty(p, p->aE[i].k)] = i;     /* keys are distinct */
  }
  p->nHashed = p->nE;
  return GPUDS_OK;
}

/* Hash slots for the live entries and one more, at most a quarter full:
** nSlot doubled as often as needed. */
static uint32_t ovSlotsFor(const GpudsOverlay *p, uint32_t nSlot){
  while( (uint64_t)(p->nLive+1)*2 > nSlot/2 ) nSlot *= 2;
  return nSlot;
}

/* Make room for one more entry in the entry array (and, with bSlot, in
** the hash table, which then indexes every entry). */
static int ovReserve(GpudsOverlay *p, int bSlot){
  if( p->nE==p->nEAlloc ){
    uint32_t nNew = p->nEAlloc ? p->nEAlloc*2 : OV_INITIAL;
    OvEntry *aE;
    uint8_t *aDead;
    if( nNew>0x7fffffff ) return GPUDS_NOMEM;
    aE = realloc(p->aE, (size_t)nNew*sizeof(OvEntry));
    if( aE==0 ) return GPUDS_NOMEM;
    p->aE = aE;
    aDead = realloc(p->aDead, nNew);
    if( aDead==0 ) return GPUDS_NOMEM;
    p->aDead = aDead;
    p->nEAlloc = nNew;
  }
  if( bSlot && (uint64_t)(p->nE+1)*2 > p->nSlot ){
    return ovRehash(p, ovSlotsFor(p, p->nSlot ? p->nSlot : OV_MIN_SLOTS));
  }
  return GPUDS_OK;
}

/* Build the hash table over the entries (leaving append-only mode), and
** the filter with it. */
static int ovHashBuild(GpudsOverlay *p){
  int rc;
  if( p->bHashed ) return GPUDS_OK;
  rc = ovRehash(p, ovSlotsFor(p, OV_MIN_SLOTS));
  if( rc==GPUDS_OK ){
    p->bHashed = 1;
    ovBloomBuild(p, (uint64_t)p->nLive*2);
  }
  return rc;
}

/* Put the tail's entries into the hash table (one batch, each key's slot
** prefetched a few keys ahead), growing it as needed.  On error
** (GPUDS_NOMEM) the tail stays as it was. */
static int ovIndexTail(GpudsOverlay *p){
  enum { AHEAD = 8 };
  uint32_t i, mask;
  if( p->nHashed==p->nE ) return GPUDS_OK;
  if( (uint64_t)p->nE*2 > p->nSlot ){
    return ovRehash(p, ovSlotsFor(p, p->nSlot));    /* indexes them all */
  }
  mask = p->nSlot-1;
  for(i=p->nHashed; i<p->nE && i<p->nHashed+AHEAD; i++){
    __builtin_prefetch(&p->aSlot[ovHash(p->aE[i].k, mask)]);
  }
  for(i=p->nHashed; i<p->nE; i++){
    if( i+AHEAD<p->nE ){
      __builtin_prefetch(&p->aSlot[ovHash(p->aE[i+AHEAD].k, mask)]);
    }
    /* a tail key is in no slot (the filter said so when it came) */
    if( !p->aDead[i] ) p->aSlot[ovFindEmpty(p, p->aE[i].k)] = i;
  }
  p->nHashed = p->nE;
  return GPUDS_OK;
}

/* The tail entry holding k, or -1. */
static int64_t ovTailFind(const GpudsOverlay *p, int64_t k){
  uint32_t i;
  for(i=p->nHashed; i<p->nE; i++){
    if( p->aE[i].k==k && !p->aDead[i] ) return i;
  }
  return -1;
}

/* Append-only mode: the live entry holding k, or -1.  The entries are
** strictly ascending. */
static int64_t ovSearchSorted(const GpudsOverlay *p, int64_t k){
  uint32_t lo = 0, hi = p->nE;
  if( p->nE==0 || k>p->aE[p->nE-1].k ) return -1;
  while( lo<hi ){
    uint32_t mid = lo + (hi-lo)/2;
    if( p->aE[mid].k < k ) lo = mid+1; else hi = mid;
  }
  return (lo<p->nE && p->aE[lo].k==k && !p->aDead[lo]) ? (int64_t)lo : -1;
}

/* Look k up: 1 and *pv if present, else 0. */
int gpudsOvGet(const GpudsOverlay *p, int64_t k, uint64_t *pv){
  uint32_t s;
  if( p->nLive==0 ) return 0;
  if( !p->bHashed ){
    int64_t i = ovSearchSorted(p, k);
    if( i<0 ) return 0;
    *pv = p->aE[i].v;
    return 1;
  }
  if( p->aBloom && !ovBloomMaybe(p, gpudsMix64((uint64_t)k)) ) return 0;
  s = ovFind(p, k);
  if( p->aSlot[s]==OV_EMPTY ){
    int64_t i = ovTailFind(p, k);
    if( i<0 ) return 0;
    *pv = p->aE[i].v;
    return 1;
  }
  *pv = p->aE[p->aSlot[s]].v;
  return 1;
}

/* Append the entry k -> v of a key the overlay does not hold, without a
** hash slot (the caller knows it is new).  GPUDS_NOMEM: nothing changed. */
static int ovAppendNew(GpudsOverlay *p, int64_t k, uint64_t v){
  int rc = ovReserve(p, 0);
  if( rc ) return rc;
  p->aE[p->nE].k = k;
  p->aE[p->nE].v = v;
  p->aDead[p->nE] = 0;
  p->nE++;
  p->nLive++;
  p->bSorted = 0;
  return GPUDS_OK;
}

/* Set k -> v.  *pHad and *pPrev report the previous value.  On error
** (GPUDS_NOMEM) nothing changed. */
int gpudsOvPut(GpudsOverlay *p, int64_t k, uint64_t v, int *pHad, uint64_t *pPrev){
  uint32_t s;
  int rc;
  if( !p->bHashed ){
    if( p->nE==0 || k>p->aE[p->nE-1].k ){
      /* still ascending: append, no hash slot */
      rc = ovAppendNew(p, k, v);
      if( rc ) return rc;
      *pHad = 0; *pPrev = 0;
      return GPUDS_OK;
    }
    rc = ovHashBuild(p);
    if( rc ) return rc;
  }
  if( p->aBloom ){
    uint64_t h = gpudsMix64((uint64_t)k);
    if( !ovBloomMaybe(p, h) && p->nE-p->nHashed<OV_TAIL_MAX ){
      /* certainly a new key: append it to the tail, no slot touched */
      int bDesc = p->nE>0 && p->aE[p->nE-1].k>=k;
      if( p->nBloomAdd>=p->nBloomCap ){
        ovBloomBuild(p, (uint64_t)p->nLive*4);
      }
      rc = ovAppendNew(p, k, v);
      if( rc ) return rc;
      if( bDesc ) p->bAppendSorted = 0;
      ovBloomAdd(p, h);
      *pHad = 0; *pPrev = 0;
      return GPUDS_OK;
    }
  }
  rc = ovIndexTail(p);
  if( rc ) return rc;
  {
    s = ovFind(p, k);
    if( p->aSlot[s]!=OV_EMPTY ){
      OvEntry *e = &p->aE[p->aSlot[s]];
      *pHad = 1; *pPrev = e->v;
      e->v = v;
      return GPUDS_OK;
    }
  }
  if( p->aBloom && p->nBloomAdd>=p->nBloomCap ){
    ovBloomBuild(p, (uint64_t)p->nLive*4);
  }
  rc = ovReserve(p, 1);
  if( rc ) return rc;
  s = ovFind(p, k);
  if( p->nE>0 && p->aE[p->nE-1].k>=k ) p->bAppendSorted = 0;
  p->aE[p->nE].k = k;
  p->aE[p->nE].v = v;
  p->aDead[p->nE] = 0;
  p->aSlot[s] = p->nE++;
  p->nHashed = p->nE;
  p->nLive++;
  if( p->aBloom ) ovBloomAdd(p, gpudsMix64((uint64_t)k));
  p->bSorted = 0;       /* cheap to rebuild while bAppendSorted holds */
  *pHad = 0; *pPrev = 0;
  return GPUDS_OK;
}

/* Remove k (no-op if absent). */
void gpudsOvDel(GpudsOverlay *p, int64_t k){
  uint32_t mask, i, j;
  if( p->nLive==0 ) return;
  if( !p->bHashed ){
    int64_t e = ovSearchSorted(p, k);
    if( e<0 ) return;
    if( ovHashBuild(p) ){
      /* no memory for the hash: mark the entry dead in place; the entries
      ** stay ascending, which is all append-only mode needs */
      p->aDead[e] = 1;
      p->nLive--;
      p->bSorted = 0;
      return;
    }
  }
  if( p->nHashed<p->nE ){
    int64_t e = ovTailFind(p, k);
    if( e>=0 ){
      /* a tail entry is in no slot: mark it dead (the filter keeps its
      ** bits; indexing the tail skips it) */
      p->aDead[e] = 1;
      p->nLive--;
      p->bSorted = 0;
      return;
    }
  }
  mask = p->nSlot-1;
  i = ovFind(p, k);
  if( p->aSlot[i]==OV_EMPTY ) return;
  p->aDead[p->aSlot[i]] = 1;
  p->nLive--;
  p->bSorted = 0;
  /* backward-shift deletion keeps every probe sequence unbroken */
  j = i;
  for(;;){
    uint32_t h;
    j = (j+1) & mask;
    if( p->aSlot[j]==OV_EMPTY ) break;
    h = ovHash(p->aE[p->aSlot[j]].k, mask);
    if( ((j - h) & mask) >= ((j - i) & mask) ){
      p->aSlot[i] = p->aSlot[j];
      i = j;
    }
  }
  p->aSlot[i] = OV_EMPTY;
}

/* Sort the live entry numbers by key into p->aSort (sort.c's radix sort,
** unless the keys were appended in ascending order). */
static int ovSort(GpudsOverlay *p){
  uint32_t n = p->nLive, i, j;
  uint32_t *aIdx;
  if( p->bSorted && p->aSort ) return GPUDS_OK;
  free(p->aSort);
  p->aSort = 0;
  aIdx = malloc((size_t)(n ? n : 1)*4);
  if( aIdx==0 ) return GPUDS_NOMEM;
  if( p->bAppendSorted || n<2 ){
    for(i=j=0; i<p->nE; i++) if( !p->aDead[i] ) aIdx[j++] = i;
  }else{
    int64_t *aK = malloc((size_t)n*sizeof(int64_t));
    uint64_t *aV = malloc((size_t)n*sizeof(uint64_t));
    int rc = (aK && aV) ? GPUDS_OK : GPUDS_NOMEM;
    for(i=j=0; rc==GPUDS_OK && i<p->nE; i++){
      if( !p->aDead[i] ){ aK[j] = p->aE[i].k; aV[j++] = i; }
    }
    if( rc==GPUDS_OK ) rc = gpudsSortKeys(aK, aV, n);
    for(i=0; rc==GPUDS_OK && i<n; i++) aIdx[i] = (uint32_t)aV[i];
    free(aK); free(aV);
    if( rc ){ free(aIdx); return rc; }
  }
  p->aSort = aIdx;
  p->bSorted = 1;
  return GPUDS_OK;
}

/* Every live entry, in key order, into aKey[] and aVal[] (room for
** gpudsOvCount() each): what a scan of everything returns, without the
** sorted view's indirection (a flush takes the whole overlay once).
** GPUDS_OK, or GPUDS_NOMEM with the overlay unchanged. */
int gpudsOvSorted(GpudsOverlay *p, int64_t *aKey, uint64_t *aVal){
  uint32_t i, j;
  if( p->bSorted && p->aSort ){
    for(i=0; i<p->nLive; i++){
      aKey[i] = p->aE[p->aSort[i]].k;
      aVal[i] = p->aE[p->aSort[i]].v;
    }
    return GPUDS_OK;
  }
  for(i=j=0; i<p->nE; i++){
    if( !p->aDead[i] ){ aKey[j] = p->aE[i].k; aVal[j++] = p->aE[i].v; }
  }
  if( p->bAppendSorted || j<2 ) return GPUDS_OK;
  return gpudsSortKeys(aKey, aVal, j);
}

/* First position in the sorted view with key >= k. */
static uint32_t ovLowerBound(const GpudsOverlay *p, int64_t k){
  uint32_t lo = 0, hi = p->nLive;
  while( lo<hi ){
    uint32_t mid = lo + (hi-lo)/2;
    if( p->aE[p->aSort[mid]].k < k ) lo = mid+1; else hi = mid;
  }
  return lo;
}

/* The next page of an ordered scan, with the semantics of an ordered
** store's xScan (gpuds_backend.h): keys in [lo,hi], ascending or descending,
** narrowing the bounds past the last key returned. */
int gpudsOvScan(GpudsOverlay *p, gpuds_scan *s, size_t nMax,
                int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  size_t n = 0;
  int rc;
  *pnOut = 0;
  if( s->done ) return GPUDS_OK;
  if( p->nLive==0 || s->lo>s->hi ){ s->done = 1; return GPUDS_OK; }
  rc = ovSort(p);
  if( rc ) return rc;
  if( !s->desc ){
    uint32_t i = ovLowerBound(p, s->lo);
    while( n<nMax && i<p->nLive && p->aE[p->aSort[i]].k<=s->hi ){
      aKey[n] = p->aE[p->aSort[i]].k;
      aVal[n++] = p->aE[p->aSort[i]].v;
      i++;
    }
    if( n==0 || i>=p->nLive || p->aE[p->aSort[i]].k>s->hi || aKey[n-1]==INT64_MAX ){
      s->done = 1;
    }else{
      s->lo = aKey[n-1]+1;
    }
  }else{
    /* last position with key <= hi */
    uint32_t i = (s->hi==INT64_MAX) ? p->nLive : ovLowerBound(p, s->hi+1);
    while( n<nMax && i>0 && p->aE[p->aSort[i-1]].k>=s->lo ){
      aKey[n] = p->aE[p->aSort[i-1]].k;
      aVal[n++] = p->aE[p->aSort[i-1]].v;
      i--;
    }
    if( n==0 || i==0 || p->aE[p->aSort[i-1]].k<s->lo || aKey[n-1]==INT64_MIN ){
      s->done = 1;
    }else{
      s->hi = aKey[n-1]-1;
    }
  }
  *pnOut = n;
  return GPUDS_OK;
}
