/*
** host_hash.c -- the host (CPU) hash store: open addressing with linear
** probing and backward-shift deletion, from int64_t keys (the full range,
** no key value reserved) to uint64_t words.
**
** It is the fallback where no GPU exists and the oracle the GPU kernels are
** tested against, so it aims first at being exactly right, then at speed.
**
** Slots are (key, value) pairs in one array of a power-of-two size; which
** slots are occupied is kept in a separate bitmap, so that no key value has
** to serve as an "empty" marker.  The home slot of a key is given by the
** low bits of the splitmix64 finalizer of the key.  Invariant (linear
** probing): every slot between a key's home slot and the slot holding it is
** occupied.  Deletion shifts the following entries of the cluster back, so
** there are no tombstones.
**
** Load.  A batch first makes sure the table can take every key the batch
** might add while staying at or below 70% full, growing before anything
** changes; so a batch never allocates half way and is all-or-nothing.  After
** a batch that deleted, a table below 15% full shrinks (to about 40%); a
** failure to shrink is harmless and ignored.
*/
#include "gpuds_backend.h"
#include "gpuds_mix.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HT_MIN_SLOTS   64          /* smallest table; one bitmap word */
#define HT_MAX_SLOTS   (((uint64_t)1)<<56)
#define HT_GROW_NUM    7           /* keep nKey <= 7/10 of the slots */
#define HT_GROW_DEN    10
#define HT_SHRINK_NUM  15          /* shrink below 15/100 full ... */
#define HT_SHRINK_DEN  100
#define HT_TARGET_NUM  4           /* ... to at most 4/10 full */
#define HT_TARGET_DEN  10

typedef struct HtSlot HtSlot;
struct HtSlot {
  int64_t key;
  uint64_t val;
};

typedef struct HostHashStore HostHashStore;
struct HostHashStore {
  HtSlot *aSlot;        /* nSlot slots */
  uint64_t *aUsed;      /* nSlot/64 words: bit i set if slot i is occupied */
  uint64_t nSlot;       /* a power of two, >= HT_MIN_SLOTS */
  int64_t nKey;         /* occupied slots */
  char zErr[200];       /* message of the last failed call */
};

/* Record a message for xErrmsg() and return rc. */
static int htError(HostHashStore *p, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  vsnprintf(p->zErr, sizeof(p->zErr), zFmt, ap);
  va_end(ap);
  return rc;
}

/* The hash of key k: splitmix64's step (add the golden gamma, so key 0 does
** not hash to 0) and its finalizer. */
static uint64_t htMix(int64_t k){
  return gpudsMix64((uint64_t)k + 0x9e3779b97f4a7c15ULL);
}

/* True if slot i of the arrays is occupied. */
static int htUsed(const uint64_t *aUsed, uint64_t i){
  return (int)((aUsed[i>>6]>>(i&63)) & 1);
}

/*
** The slot holding k, or, if k is absent, the empty slot ending its probe
** sequence; *pFound says which.  The table must have an empty slot.
*/
static uint64_t htProbe(const HostHashStore *p, int64_t k, int *pFound){
  uint64_t mask = p->nSlot - 1;
  uint64_t i = htMix(k) & mask;
  while( htUsed(p->aUsed, i) ){
    if( p->aSlot[i].key==k ){ *pFound = 1; return i; }
    i = (i+1) & mask;
  }
  *pFound = 0;
  return i;
}

/* Batches and lookups prefetch the home slot of the key this many ahead:
** a big table misses the cache on nearly every key, and the misses of
** distinct keys overlap.  A hint only: the result does not depend on it. */
#define HT_AHEAD 8

/* Prefetch the home slot (and its bitmap word) of key aKey[i] if i < n.
** A macro: GCC deems a function that only prefetches free of effects and
** drops the calls to it. */
#define htPrefetch(p, aKey, i, n) do{                                   \
  if( (i)<(n) ){                                                        \
    uint64_t h_ = htMix((aKey)[i]) & ((p)->nSlot - 1);                  \
    __builtin_prefetch(&(p)->aSlot[h_]);                                \
    __builtin_prefetch(&(p)->aUsed[h_>>6]);                             \
  }                                                                     \
}while(0)

/* Look k up: *pFound 1 and *pVal its value if present, else 0 and 0. */
static void htGet(HostHashStore *p, int64_t k, uint8_t *pFound, uint64_t *pVal){
  int f;
  uint64_t i = htProbe(p, k, &f);
  *pFound = (uint8_t)f;
  *pVal = f ? p->aSlot[i].val : 0;
}

/* Set k to v; reports the previous state.  The table must have room for
** one more key (guaranteed by htReserve). */
static void htPut(HostHashStore *p, int64_t k, uint64_t v, uint8_t *pFound,
                  uint64_t *pOld){
  int f;
  uint64_t i = htProbe(p, k, &f);
  if( f ){
    *pFound = 1;
    *pOld = p->aSlot[i].val;
  }else{
    *pFound = 0;
    *pOld = 0;
    p->aSlot[i].key = k;
    p->aUsed[i>>6] |= ((uint64_t)1)<<(i&63);
    p->nKey++;
  }
  p->aSlot[i].val = v;
}

/* Remove k if present, reporting the previous state; the entries after it
** in its cluster shift back so that the probe invariant holds. */
static void htDel(HostHashStore *p, int64_t k, uint8_t *pFound, uint64_t *pOld){
  int f;
  uint64_t mask = p->nSlot - 1;
  uint64_t i = htProbe(p, k, &f), j;
  if( !f ){
    *pFound = 0;
    *pOld = 0;
    return;
  }
  *pFound = 1;
  *pOld = p->aSlot[i].val;
  for(j=(i+1)&mask; htUsed(p->aUsed, j); j=(j+1)&mask){
    uint64_t h = htMix(p->aSlot[j].key) & mask;
    /* The entry at j may move to the hole at i unless its home lies in the
    ** cyclic range (i, j]. */
    if( ((j-h)&mask) >= ((j-i)&mask) ){
      p->aSlot[i] = p->aSlot[j];
      i = j;
    }
  }
  p->aUsed[i>>6] &= ~(((uint64_t)1)<<(i&63));
  p->nKey--;
}

/*
** Rebuild the table with nNew slots (a power of two >= HT_MIN_SLOTS that
** can hold every key).  On GPUDS_NOMEM the table is unchanged.
*/
static int htResize(HostHashStore *p, uint64_t nNew){
  HtSlot *aSlot = (HtSlot*)malloc(nNew*sizeof(HtSlot));
  uint64_t *aUsed = (uint64_t*)calloc(nNew/64, sizeof(uint64_t));
  uint64_t mask = nNew - 1, w;
  if( aSlot==0 || aUsed==0 ){
    free(aSlot);
    free(aUsed);
    return htError(p, GPUDS_NOMEM,
                   "hash: out of memory resizing to %llu slots",
                   (unsigned long long)nNew);
  }
  for(w=0; w<p->nSlot/64; w++){
    uint64_t bits = p->aUsed[w];
    while( bits ){
      uint64_t i = w*64 + (uint64_t)__builtin_ctzll(bits);
      uint64_t h = htMix(p->aSlot[i].key) & mask;
      bits &= bits-1;
      while( (aUsed[h>>6]>>(h&63)) & 1 ) h = (h+1) & mask;
      aSlot[h] = p->aSlot[i];
      aUsed[h>>6] |= ((uint64_t)1)<<(h&63);
    }
  }
  free(p->aSlot);
  free(p->aUsed);
  p->aSlot = aSlot;
  p->aUsed = aUsed;
  p->nSlot = nNew;
  return GPUDS_OK;
}

/* The smallest table size >= nMin holding nKey keys at most num/den full;
** 0 if there is none. */
static uint64_t htSizeFor(uint64_t nKey, uint64_t nMin, uint64_t num,
                          uint64_t den){
  uint64_t n = HT_MIN_SLOTS;
  while( n<nMin ) n *= 2;
  while( nKey > n/den*num + (n%den)*num/den ){
    if( n>=HT_MAX_SLOTS ) return 0;
    n *= 2;
  }
  return n;
}

/* True if nKey keys would make a table of nSlot slots more than 70% full. */
static int htTooFull(uint64_t nKey, uint64_t nSlot){
  return nKey > nSlot/HT_GROW_DEN*HT_GROW_NUM
                + (nSlot%HT_GROW_DEN)*HT_GROW_NUM/HT_GROW_DEN;
}

/*
** Make sure the table can take the keys the upserts in aOp/aKey (aOp NULL:
** all upserts) may add and stay at most 70% full.  A cheap bound (every
** upsert adds a key) is tried first; only if it does not fit are the
** upserts of keys already present discounted.  Grows at least twofold.
*/
static int htReserve(HostHashStore *p, size_t n, const uint8_t *aOp,
                     const int64_t *aKey){
  uint64_t nAdd = 0, nNew;
  size_t i;
  for(i=0; i<n; i++){
    if( aOp==0 || aOp[i]==GPUDS_OP_UPSERT ) nAdd++;
  }
  if( !htTooFull((uint64_t)p->nKey + nAdd, p->nSlot) ) return GPUDS_OK;
  nAdd = 0;
  for(i=0; i<n; i++){
    if( aOp==0 || aOp[i]==GPUDS_OP_UPSERT ){
      int f;
      htProbe(p, aKey[i], &f);
      if( !f ) nAdd++;
    }
  }
  if( !htTooFull((uint64_t)p->nKey + nAdd, p->nSlot) ) return GPUDS_OK;
  nNew = htSizeFor((uint64_t)p->nKey + nAdd, p->nSlot*2,
                   HT_GROW_NUM, HT_GROW_DEN);
  if( nNew==0 ){
    return htError(p, GPUDS_NOMEM, "hash: table size limit reached");
  }
  return htResize(p, nNew);
}

/* After deletes: shrink a table that is less than 15% full.  A failure
** leaves the (correct, merely large) table as it is. */
static void htMaybeShrink(HostHashStore *p){
  uint64_t nNew;
  if( p->nSlot<=HT_MIN_SLOTS ) return;
  /* nSlot <= 2^56 and nKey < nSlot: these products cannot overflow. */
  if( (uint64_t)p->nKey*HT_SHRINK_DEN >= p->nSlot*HT_SHRINK_NUM ) return;
  nNew = htSizeFor((uint64_t)p->nKey, HT_MIN_SLOTS, HT_TARGET_NUM,
                   HT_TARGET_DEN);
  if( nNew && nNew<p->nSlot ){
    char zSave[sizeof(p->zErr)];
    memcpy(zSave, p->zErr, sizeof(zSave));
    htResize(p, nNew);
    memcpy(p->zErr, zSave, sizeof(zSave));   /* not a failure of the call */
  }
}

/* The batch engine behind xBatch and xBulkLoad; aOp NULL means every
** operation is an upsert.  All-or-nothing: the only allocation happens in
** htReserve, before anything changes. */
static int htApply(HostHashStore *p, size_t n, const uint8_t *aOp,
                   const int64_t *aKey, const uint64_t *aVal,
                   uint8_t *aFound, uint64_t *aOld){
  size_t i;
  int bDel = 0, rc;
  if( aOp ){
    for(i=0; i<n; i++){
      if( aOp[i]>GPUDS_OP_DELETE ){
        return htError(p, GPUDS_MISUSE,
                       "invalid operation code %d at batch index %zu",
                       (int)aOp[i], i);
      }
    }
  }
  rc = htReserve(p, n, aOp, aKey);
  if( rc ) return rc;
  for(i=0; i<n && i<HT_AHEAD; i++) htPrefetch(p, aKey, i, n);
  for(i=0; i<n; i++){
    int op = aOp ? aOp[i] : GPUDS_OP_UPSERT;
    uint8_t f;
    uint64_t v;
    htPrefetch(p, aKey, i+HT_AHEAD, n);
    switch( op ){
      case GPUDS_OP_UPSERT:  htPut(p, aKey[i], aVal[i], &f, &v);  break;
      case GPUDS_OP_DELETE:  htDel(p, aKey[i], &f, &v); bDel = 1;  break;
      default:               htGet(p, aKey[i], &f, &v);  break;
    }
    if( aFound ) aFound[i] = f;
    if( aOld ) aOld[i] = v;
  }
  if( bDel ) htMaybeShrink(p);
  return GPUDS_OK;
}

/* ---------------------------------------------------------------------- */
/* The gpuds_store_ops methods.                                            */

/* An empty table of HT_MIN_SLOTS slots. */
static int htCreate(gpuds_store **ppStore, char **pzErr){
  HostHashStore *p = (HostHashStore*)malloc(sizeof(HostHashStore));
  *ppStore = 0;
  if( pzErr ) *pzErr = 0;
  if( p ){
    memset(p, 0, sizeof(*p));
    p->nSlot = HT_MIN_SLOTS;
    p->aSlot = (HtSlot*)malloc(HT_MIN_SLOTS*sizeof(HtSlot));
    p->aUsed = (uint64_t*)calloc(HT_MIN_SLOTS/64, sizeof(uint64_t));
    if( p->aSlot==0 || p->aUsed==0 ){
      free(p->aSlot);
      free(p->aUsed);
      free(p);
      p = 0;
    }
  }
  if( p==0 ){
    if( pzErr ){
      static const char zMsg[] = "hash: out of memory creating a store";
      *pzErr = (char*)malloc(sizeof(zMsg));
      if( *pzErr ) memcpy(*pzErr, zMsg, sizeof(zMsg));
    }
    return GPUDS_NOMEM;
  }
  *ppStore = (gpuds_store*)p;
  return GPUDS_OK;
}

/* Free the table and the store.  NULL is a no-op. */
static void htDestroy(gpuds_store *pStore){
  HostHashStore *p = (HostHashStore*)pStore;
  if( p==0 ) return;
  free(p->aSlot);
  free(p->aUsed);
  free(p);
}

/* A mixed batch, all-or-nothing (htApply). */
static int htBatch(gpuds_store *pStore, size_t n, const uint8_t *aOp,
                   const int64_t *aKey, const uint64_t *aVal,
                   uint8_t *aFound, uint64_t *aOld){
  HostHashStore *p = (HostHashStore*)pStore;
  if( n>0 && aOp==0 ){
    return htError(p, GPUDS_MISUSE, "xBatch: aOp is NULL");
  }
  return htApply(p, n, aOp, aKey, aVal, aFound, aOld);
}

/* Point lookups; never fails.  aFound or aVal may be NULL. */
static int htLookup(gpuds_store *pStore, size_t n, const int64_t *aKey,
                    uint8_t *aFound, uint64_t *aVal){
  HostHashStore *p = (HostHashStore*)pStore;
  size_t i;
  if( n>1 ) for(i=0; i<n && i<HT_AHEAD; i++) htPrefetch(p, aKey, i, n);
  for(i=0; i<n; i++){
    uint8_t f;
    uint64_t v;
    if( n>1 ) htPrefetch(p, aKey, i+HT_AHEAD, n);
    htGet(p, aKey[i], &f, &v);
    if( aFound ) aFound[i] = f;
    if( aVal ) aVal[i] = v;
  }
  return GPUDS_OK;
}

/*
** The next page of a scan in slot order: entries with lo <= key <= hi from
** slot pScan->pos on.  After a full page pos is moved to the next matching
** slot (looking ahead), so done is set as soon as nothing is left.
*/
static int htScan(gpuds_store *pStore, gpuds_scan *pScan, size_t nMax,
                  int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  HostHashStore *p = (HostHashStore*)pStore;
  size_t nOut = 0;
  uint64_t pos = pScan->pos;
  int64_t lo = pScan->lo, hi = pScan->hi;
  *pnOut = 0;
  if( pScan->done ) return GPUDS_OK;
  if( lo>hi ){
    pScan->done = 1;
    return GPUDS_OK;
  }
  if( nMax==0 ) return GPUDS_OK;
  while( pos<p->nSlot ){
    uint64_t bits = p->aUsed[pos>>6] & (~(uint64_t)0 << (pos&63));
    if( bits==0 ){
      pos = (pos|63) + 1;
      continue;
    }
    pos = (pos & ~(uint64_t)63) + (uint64_t)__builtin_ctzll(bits);
    if( p->aSlot[pos].key>=lo && p->aSlot[pos].key<=hi ){
      if( nOut==nMax ) break;
      aKey[nOut] = p->aSlot[pos].key;
      if( aVal ) aVal[nOut] = p->aSlot[pos].val;
      nOut++;
    }
    pos++;
  }
  pScan->pos = pos;
  if( pos>=p->nSlot ) pScan->done = 1;
  *pnOut = nOut;
  return GPUDS_OK;
}

/* Bulk loads of at least this many keys are grouped by home slot first;
** from HT_PAR_MIN keys on, on several threads (at most HT_PAR_MAX). */
#define HT_GROUP_MIN   32768
#define HT_GROUP_LOG2  12          /* slots per group: 2^12 (64 KiB of slots) */
#define HT_GROUP_MAX   4096        /* groups at most */
#define HT_PAR_MIN     262144
#define HT_PAR_MAX     8

/* A grouped bulk load (htInsertGrouped), shared by its threads. */
typedef struct HtGrouped {
  HostHashStore *p;
  const int64_t *aKey;
  const uint64_t *aVal;
  size_t n;
  HtSlot *aTmp;                 /* the entries, grouped */
  int nShift;                   /* group of slot s: s >> nShift */
  size_t nGroup;
  int nPart;                    /* threads */
  size_t *aCnt;                 /* [nPart][nGroup]: part t's entries of group g,
                                ** then where part t puts them in aTmp */
  size_t *aStart;               /* [nGroup+1]: first entry of each group in aTmp */
  size_t aDefer[HT_PAR_MAX];    /* part t: entries left for the serial pass, at
                                ** aTmp[aStart[first group of t]] on */
  int64_t aAdded[HT_PAR_MAX];   /* part t: keys added */
} HtGrouped;

/* Entries [*pi0, *pi1) of the n are part t's of nPart. */
static void htSlice(size_t n, int nPart, int t, size_t *pi0, size_t *pi1){
  *pi0 = n/nPart*t + (n%nPart < (size_t)t ? n%nPart : (size_t)t);
  *pi1 = *pi0 + n/nPart + ((size_t)t < n%nPart);
}

/* Phase 1 of part t: count its slice's entries per group. */
static void htGroupCount(HtGrouped *G, int t){
  uint64_t mask = G->p->nSlot - 1;
  size_t i, i0, i1, *aCnt = &G->aCnt[(size_t)t*G->nGroup];
  htSlice(G->n, G->nPart, t, &i0, &i1);
  for(i=i0; i<i1; i++) aCnt[(htMix(G->aKey[i]) & mask) >> G->nShift]++;
}

/* Phase 2 of part t: copy its slice's entries to their groups in aTmp. */
static void htGroupScatter(HtGrouped *G, int t){
  uint64_t mask = G->p->nSlot - 1;
  size_t i, i0, i1, *aPos = &G->aCnt[(size_t)t*G->nGroup];
  htSlice(G->n, G->nPart, t, &i0, &i1);
  for(i=i0; i<i1; i++){
    size_t g = (htMix(G->aKey[i]) & mask) >> G->nShift;
    G->aTmp[aPos[g]].key = G->aKey[i];
    G->aTmp[aPos[g]++].val = G->aVal[i];
  }
}

/* Phase 3 of part t: insert the entries of its groups, whose home slots
** all lie in its region of the table, probing only within the region
** (no other part reads or writes a slot or a bitmap word of it: regions
** are multiples of 64 slots).  An entry whose probe reaches the end of the
** region is left, moved to the front of the part's entries, for the serial
** pass.  As htPut, a key already present takes the new value. */
static void htGroupInsert(HtGrouped *G, int t){
  HostHashStore *p = G->p;
  uint64_t mask = p->nSlot - 1, iEnd;
  size_t g0, g1, i, d;
  int64_t nAdd = 0;
  htSlice(G->nGroup, G->nPart, t, &g0, &g1);
  iEnd = (uint64_t)g1 << G->nShift;
  d = G->aStart[g0];
  for(i=G->aStart[g0]; i<G->aStart[g1]; i++){
    int64_t k = G->aTmp[i].key;
    uint64_t s = htMix(k) & mask;
    while( s<iEnd && htUsed(p->aUsed, s) && p->aSlot[s].key!=k ) s++;
    if( s>=iEnd ){
      G->aTmp[d++] = G->aTmp[i];          /* d <= i */
    }else{
      if( !htUsed(p->aUsed, s) ){
        p->aSlot[s].key = k;
        p->aUsed[s>>6] |= ((uint64_t)1)<<(s&63);
        nAdd++;
      }
      p->aSlot[s].val = G->aTmp[i].val;
    }
  }
  G->aDefer[t] = d - G->aStart[g0];
  G->aAdded[t] = nAdd;
}

/* Run phase xPhase for parts 0..G->nPart-1, each on a thread of its own
** (part 0 on the calling thread); a part whose thread cannot be started
** runs on the calling thread after the others. */
typedef struct HtThread { HtGrouped *G; int t; void (*xPhase)(HtGrouped*, int); pthread_t tid; int bRun; } HtThread;
static void *htThreadMain(void *pArg){
  HtThread *pT = (HtThread*)pArg;
  pT->xPhase(pT->G, pT->t);
  return 0;
}
static void htParallel(HtGrouped *G, void (*xPhase)(HtGrouped*, int)){
  HtThread aT[HT_PAR_MAX];
  int t;
  for(t=1; t<G->nPart; t++){
    aT[t].G = G; aT[t].t = t; aT[t].xPhase = xPhase;
    aT[t].bRun = pthread_create(&aT[t].tid, 0, htThreadMain, &aT[t])==0;
  }
  xPhase(G, 0);
  for(t=1; t<G->nPart; t++){
    if( aT[t].bRun ) pthread_join(aT[t].tid, 0);
    else xPhase(G, t);
  }
}

/*
** Insert n distinct keys (a bulk load), after htReserve made room for them
** all.  Inserting them in key order would probe the table at random, a
** cache (and TLB) miss per key once the table outgrows the caches; instead
** they are first grouped by the part of the table that holds their home
** slot (a counting sort into nGroup equal parts), then inserted group by
** group, so that each group's probes stay within a few cache-resident
** pages.  Big loads do each step on several threads, each thread in its
** own region of the table; the few keys whose probe leaves their region
** are inserted afterwards, one by one.  Whatever the order, the result is
** a valid table holding the keys (the probe invariant holds for every key
** placed).  If the grouping buffers cannot be had, the keys are inserted
** in key order: slower, never a failure.
*/
static void htInsertGrouped(HostHashStore *p, size_t n, const int64_t *aKey,
                            const uint64_t *aVal){
  HtGrouped G;
  int nLog2 = __builtin_ctzll(p->nSlot), t;
  size_t i, g;
  memset(&G, 0, sizeof(G));
  G.p = p; G.aKey = aKey; G.aVal = aVal; G.n = n;
  G.nShift = nLog2 > HT_GROUP_LOG2 ? HT_GROUP_LOG2 : nLog2;
  G.nGroup = (size_t)1 << (nLog2 - G.nShift);
  while( G.nGroup>HT_GROUP_MAX ){ G.nGroup /= 2; G.nShift++; }
  G.nPart = 1;
  if( n>=HT_PAR_MIN ){
    long nCpu = sysconf(_SC_NPROCESSORS_ONLN);
    G.nPart = nCpu<1 ? 1 : nCpu>HT_PAR_MAX ? HT_PAR_MAX : (int)nCpu;
    if( (size_t)G.nPart > G.nGroup ) G.nPart = (int)G.nGroup;
  }
  if( n>=HT_GROUP_MIN ){
    G.aCnt = (size_t*)calloc((size_t)G.nPart*G.nGroup, sizeof(size_t));
    G.aStart = (size_t*)malloc((G.nGroup+1)*sizeof(size_t));
    G.aTmp = (HtSlot*)malloc(n*sizeof(HtSlot));
  }
  if( G.aCnt==0 || G.aStart==0 || G.aTmp==0 ){
    for(i=0; i<n; i++){
      uint8_t f;
      uint64_t v;
      htPut(p, aKey[i], aVal[i], &f, &v);
    }
  }else{
    size_t iAt = 0;
    htParallel(&G, htGroupCount);
    for(g=0; g<G.nGroup; g++){             /* where each part's entries go */
      G.aStart[g] = iAt;
      for(t=0; t<G.nPart; t++){
        size_t c = G.aCnt[(size_t)t*G.nGroup + g];
        G.aCnt[(size_t)t*G.nGroup + g] = iAt;
        iAt += c;
      }
    }
    G.aStart[G.nGroup] = iAt;
    htParallel(&G, htGroupScatter);
    htParallel(&G, htGroupInsert);
    for(t=0; t<G.nPart; t++){
      size_t g0, g1;
      htSlice(G.nGroup, G.nPart, t, &g0, &g1);
      p->nKey += G.aAdded[t];
      for(i=G.aStart[g0]; i<G.aStart[g0]+G.aDefer[t]; i++){
        uint8_t f;
        uint64_t v;
        htPut(p, G.aTmp[i].key, G.aTmp[i].val, &f, &v);
      }
    }
  }
  free(G.aCnt);
  free(G.aStart);
  free(G.aTmp);
}

/*
** Insert n entries with strictly ascending keys: upserts, after checking
** the order (so that the host store rejects what the ordered stores would).
** The keys being distinct, an empty table is sized for exactly n keys
** without probing it first.  All-or-nothing: the only allocation that can
** fail is the table's growth, before anything changes.
*/
static int htBulkLoad(gpuds_store *pStore, size_t n, const int64_t *aKey,
                      const uint64_t *aVal){
  HostHashStore *p = (HostHashStore*)pStore;
  size_t i;
  int rc;
  for(i=1; i<n; i++){
    if( aKey[i]<=aKey[i-1] ){
      return htError(p, GPUDS_MISUSE,
                     "xBulkLoad: keys not strictly ascending at index %zu", i);
    }
  }
  if( n<HT_GROUP_MIN ) return htApply(p, n, 0, aKey, aVal, 0, 0);
  if( p->nKey==0 && htTooFull((uint64_t)n, p->nSlot) ){
    uint64_t nNew = htSizeFor((uint64_t)n, p->nSlot*2, HT_GROW_NUM, HT_GROW_DEN);
    if( nNew==0 ) return htError(p, GPUDS_NOMEM, "hash: table size limit reached");
    rc = htResize(p, nNew);
  }else{
    rc = htReserve(p, n, 0, aKey);
  }
  if( rc ) return rc;
  htInsertGrouped(p, n, aKey, aVal);
  return GPUDS_OK;
}

/* Number of keys held. */
static int64_t htCount(gpuds_store *pStore){
  HostHashStore *p = (HostHashStore*)pStore;
  return p->nKey;
}

/* A JSON description; "{}" if it does not fit in nBuf bytes. */
static void htInfo(gpuds_store *pStore, char *zBuf, size_t nBuf){
  HostHashStore *p = (HostHashStore*)pStore;
  uint64_t nByte = sizeof(HostHashStore) + p->nSlot*sizeof(HtSlot)
                 + p->nSlot/8;
  int nw;
  if( nBuf==0 ) return;
  nw = snprintf(zBuf, nBuf,
      "{\"structure\":\"open-addressing\",\"probing\":\"linear\","
      "\"keys\":%lld,\"slots\":%llu,\"load\":%.2f,\"bytes\":%llu}",
      (long long)p->nKey, (unsigned long long)p->nSlot,
      (double)p->nKey/(double)p->nSlot, (unsigned long long)nByte);
  if( nw<0 || (size_t)nw>=nBuf ){
    if( nBuf>=3 ) memcpy(zBuf, "{}", 3); else zBuf[0] = 0;
  }
}

/*
** Verify the invariants: the size is a power of two, every key is reachable
** from its home slot (all slots between are occupied) and held once, the
** count matches the bitmap, the load is at most 70%.
*/
static int htCheck(gpuds_store *pStore){
  HostHashStore *p = (HostHashStore*)pStore;
  uint64_t mask = p->nSlot - 1, i, nUsed = 0;
  if( p->nSlot<HT_MIN_SLOTS || (p->nSlot & mask)!=0 ){
    return htError(p, GPUDS_ERROR,
                   "hash invariant: slot count %llu not a power of two >= %d",
                   (unsigned long long)p->nSlot, HT_MIN_SLOTS);
  }
  for(i=0; i<p->nSlot; i++){
    uint64_t h, j;
    int64_t k;
    if( !htUsed(p->aUsed, i) ) continue;
    nUsed++;
    k = p->aSlot[i].key;
    h = htMix(k) & mask;
    for(j=h; j!=i; j=(j+1)&mask){
      if( !htUsed(p->aUsed, j) ){
        return htError(p, GPUDS_ERROR,
            "hash invariant: key %lld in slot %llu unreachable from its home "
            "slot %llu (empty slot %llu between)", (long long)k,
            (unsigned long long)i, (unsigned long long)h,
            (unsigned long long)j);
      }
      if( p->aSlot[j].key==k ){
        return htError(p, GPUDS_ERROR,
            "hash invariant: duplicate key %lld in slots %llu and %llu",
            (long long)k, (unsigned long long)j, (unsigned long long)i);
      }
    }
  }
  if( nUsed!=(uint64_t)p->nKey ){
    return htError(p, GPUDS_ERROR,
        "hash invariant: count: %lld recorded, %llu occupied slots",
        (long long)p->nKey, (unsigned long long)nUsed);
  }
  if( htTooFull(nUsed, p->nSlot) ){
    return htError(p, GPUDS_ERROR,
        "hash invariant: load: %llu keys in %llu slots is over 70%%",
        (unsigned long long)nUsed, (unsigned long long)p->nSlot);
  }
  return GPUDS_OK;
}

/* Message of the last failed call, "" if none. */
static const char *htErrmsg(gpuds_store *pStore){
  HostHashStore *p = (HostHashStore*)pStore;
  return p ? p->zErr : "";
}

const gpuds_store_ops gpudsHostHashOps = {
  "host",
  GPUDS_HASH,
  1,              /* reads change nothing shared */
  htCreate,
  htDestroy,
  htBatch,
  htLookup,
  htScan,
  htBulkLoad,
  htCount,
  htInfo,
  htCheck,
  htErrmsg,
};
