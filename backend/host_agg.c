/*
** host_agg.c -- xAgg of the host column set (gpuds_backend.h: GROUP BY and
** aggregates over the rows that match a filter).  The reference the CUDA
** aggregation (kernels/) is checked against, and what a table without a
** GPU runs.
**
** The rows in range are split into one contiguous share per CPU; each
** thread filters its share, sorts each row into a group of its own hash
** table (the group's key tuple of canonical values) or onto its list of
** leftover rows, and keeps per group the state of every aggregate
** (counts, saturated integer sums, compensated REAL sums, extremes with
** the row that holds them, the distinct values of COUNTD in a hash set).
** The threads' tables then merge into the first one, and the groups are
** put in the order of their key tuples: per key, the distinct values are
** ranked (a radix sort by a key that never contradicts the exact order,
** runs of equal sort keys ordered exactly), then the groups are sorted by
** their ranks, last key first (stable radix sorts).
**
** Rows are told apart by their index in the set's arrays; "first" and
** "last" compare their keys, so the result does not depend on how the
** rows were shared out, nor on whether the set is in key order.
*/
#include "gpuds_backend.h"
#include "gpuds_aggrules.h"
#include "gpuds_colval.h"
#include "gpuds_sort.h"
#include "gpuds_mix.h"
#include "host_cols.h"
#include "host_filter.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

/* A group's state: fixed slots, then each aggregate's. */
typedef union Slot { int64_t i; uint64_t u; double d; } Slot;
#define SLOT_ROWS  0          /* rows counted */
#define SLOT_FIRST 1          /* index of the row with the least key */
#define SLOT_LAST  2          /* ... and with the greatest */
#define SLOT_FIXED 3
/* SUM: n, REAL values, positive and negative integer sums, KBN sum */
#define SUM_N 0
#define SUM_NREAL 1
#define SUM_POS 2
#define SUM_NEG 3
#define SUM_S 4
#define SUM_C 5
#define SUM_SLOTS 6
/* MIN, MAX: n, the extreme (tag, 8 bytes), its row's index, and the
** opposite extreme among the values of the extreme's prefix (text, blob:
** other 8 bytes there mean the exact extreme is undecided) */
#define MM_N 0
#define MM_TAG 1
#define MM_VAL 2
#define MM_IDX 3
#define MM_LO 4
#define MM_SLOTS 5

/* The request, checked, and where each aggregate keeps its state. */
typedef struct AggPlan {
  const HostCols *p;
  const gpuds_agg *a;
  int64_t i0, i1;             /* rows to read: [i0, i1) */
  int nKey, nFn;
  int nSlot;                  /* slots per group */
  int aOff[GPUDS_AGG_FN_MAX]; /* first slot of each aggregate's state */
  int aDist[GPUDS_AGG_FN_MAX];/* COUNTD: its distinct set's number */
  int nDist;
} AggPlan;

/* Groups: key tuples, states, and a hash index over the tuples. */
typedef struct GroupTab {
  int nKey, nSlot;
  int64_t nGroup, nAlloc;
  uint8_t *aKT;               /* nAlloc*nKey canonical key values */
  uint64_t *aKV;
  Slot *aS;                   /* nAlloc*nSlot */
  uint32_t *aHash;            /* group+1 per slot, 0 empty */
  uint64_t nHash;             /* slots (a power of two) */
} GroupTab;

/* A set of (group, canonical value) pairs: COUNTD's distinct values.  An
** entry is 16 bytes: the value's 8 bytes, and its group and tag packed as
** g<<4 | tag<<1 | 1 (0: an empty slot). */
typedef struct DEntry { uint64_t val; uint64_t gt; } DEntry;
typedef struct DSet { DEntry *a; uint64_t nSlot; int64_t n; } DSet;
#define DENTRY_G(e)   ((int64_t)((e)->gt>>4))
#define DENTRY_TAG(e) ((uint8_t)(((e)->gt>>1) & 7))

/* One thread's share of the rows and what it found. */
typedef struct AggPart {
  const AggPlan *P;
  int64_t r0, r1;
  GroupTab g;
  DSet *aD;                   /* P->nDist sets */
  int64_t *aLeft, nLeft, nLeftAlloc;   /* leftover rows' indices */
  int64_t nRead;
  int rc;
} AggPart;

/* ------------------------------------------------------------ helpers */

/* Column iCol (-1: the key) of row i. */
static inline void colOf(const HostCols *p, int iCol, int64_t i, uint8_t *pT, uint64_t *pV){
  if( iCol<0 ){ *pT = GPUDS_TAG_INT; *pV = (uint64_t)p->aKey[i]; return; }
  *pT = p->aTag[(size_t)iCol*(size_t)p->n + (size_t)i];
  *pV = p->aVal[(size_t)iCol*(size_t)p->n + (size_t)i];
}


/* ------------------------------------------------------------- groups */

static void groupFree(GroupTab *g){
  free(g->aKT); free(g->aKV); free(g->aS); free(g->aHash);
  memset(g, 0, sizeof(*g));
}

static uint64_t tupleHash(const uint8_t *kt, const uint64_t *kv, int n){
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  int k;
  for(k=0; k<n; k++) h = gpudsMix64(h ^ kv[k] ^ ((uint64_t)kt[k]<<56)) + (uint64_t)k;
  return h;
}

/* Rebuild the hash index at nHash slots.  GPUDS_OK or GPUDS_NOMEM. */
static int groupRehash(GroupTab *g, uint64_t nHash){
  uint32_t *aH = calloc(nHash, sizeof(uint32_t));
  int64_t i;
  if( aH==0 ) return GPUDS_NOMEM;
  for(i=0; i<g->nGroup; i++){
    uint64_t h = tupleHash(&g->aKT[i*g->nKey], &g->aKV[i*g->nKey], g->nKey) & (nHash-1);
    while( aH[h] ) h = (h+1) & (nHash-1);
    aH[h] = (uint32_t)(i+1);
  }
  free(g->aHash);
  g->aHash = aH; g->nHash = nHash;
  return GPUDS_OK;
}

/* Room for one more group.  GPUDS_OK or GPUDS_NOMEM. */
static int groupGrow(GroupTab *g){
  if( g->nGroup==g->nAlloc ){
    int64_t n = g->nAlloc ? g->nAlloc*2 : 64;
    size_t nk = g->nKey>0 ? (size_t)g->nKey : 1;
    uint8_t *aKT;
    uint64_t *aKV;
    Slot *aS;
    if( n>=0xffffffffLL ) return GPUDS_NOMEM;     /* aHash holds 32 bits */
    aKT = realloc(g->aKT, (size_t)n*nk);
    if( aKT ) g->aKT = aKT;
    aKV = aKT ? realloc(g->aKV, (size_t)n*nk*8) : 0;
    if( aKV ) g->aKV = aKV;
    aS = aKV ? realloc(g->aS, (size_t)n*(size_t)g->nSlot*sizeof(Slot)) : 0;
    if( aS==0 ) return GPUDS_NOMEM;
    g->aS = aS;
    g->nAlloc = n;
  }
  if( (uint64_t)(g->nGroup+1)*2 > g->nHash ){
    return groupRehash(g, g->nHash ? g->nHash*2 : 128);
  }
  return GPUDS_OK;
}

/* The group of key tuple (kt, kv), made (its state zero) if new: its
** number, or -1 out of memory. */
static int64_t groupFind(GroupTab *g, const uint8_t *kt, const uint64_t *kv){
  uint64_t h;
  int64_t i;
  int k;
  if( g->nHash ){
    h = tupleHash(kt, kv, g->nKey) & (g->nHash-1);
    while( g->aHash[h] ){
      i = (int64_t)g->aHash[h] - 1;
      for(k=0; k<g->nKey; k++){
        if( g->aKT[i*g->nKey+k]!=kt[k] || g->aKV[i*g->nKey+k]!=kv[k] ) break;
      }
      if( k==g->nKey ) return i;
      h = (h+1) & (g->nHash-1);
    }
  }
  if( groupGrow(g) ) return -1;
  i = g->nGroup++;
  if( g->nKey ){
    memcpy(&g->aKT[i*g->nKey], kt, (size_t)g->nKey);
    memcpy(&g->aKV[i*g->nKey], kv, (size_t)g->nKey*8);
  }
  memset(&g->aS[i*g->nSlot], 0, (size_t)g->nSlot*sizeof(Slot));
  h = tupleHash(kt, kv, g->nKey) & (g->nHash-1);
  while( g->aHash[h] ) h = (h+1) & (g->nHash-1);
  g->aHash[h] = (uint32_t)(i+1);
  return i;
}

/* ------------------------------------------------------- distinct sets */

static uint64_t dHash(uint64_t gt, uint64_t val){
  return gpudsMix64(val ^ (gt * 0x9e3779b97f4a7c15ULL));
}

/* Add (g, tag, val) to set d if absent.  GPUDS_OK or GPUDS_NOMEM. */
static int dAdd(DSet *d, int64_t g, uint8_t tag, uint64_t val){
  uint64_t h, gt = ((uint64_t)g<<4) | ((uint64_t)tag<<1) | 1;
  if( (uint64_t)(d->n+1)*2 > d->nSlot ){
    uint64_t nNew = d->nSlot ? d->nSlot*2 : 256, i;
    DEntry *a = calloc(nNew, sizeof(DEntry));
    if( a==0 ) return GPUDS_NOMEM;
    for(i=0; i<d->nSlot; i++){
      if( !d->a[i].gt ) continue;
      h = dHash(d->a[i].gt, d->a[i].val) & (nNew-1);
      while( a[h].gt ) h = (h+1) & (nNew-1);
      a[h] = d->a[i];
    }
    free(d->a);
    d->a = a; d->nSlot = nNew;
  }
  h = dHash(gt, val) & (d->nSlot-1);
  while( d->a[h].gt ){
    if( d->a[h].gt==gt && d->a[h].val==val ) return GPUDS_OK;
    h = (h+1) & (d->nSlot-1);
  }
  d->a[h].gt = gt; d->a[h].val = val;
  d->n++;
  return GPUDS_OK;
}

/* ------------------------------------------------------ group states */

/* Do a and b (TEXT or BLOB) share their class and first 4 bytes? */
static int samePrefix(uint8_t ta, uint64_t a, uint8_t tb, uint64_t b){
  return gpudsColClass(ta)>=2 && ta==tb && (a>>32)==(b>>32);
}

/* Merge the MIN/MAX state B (n, tag, val, idx, lo) into A's. */
static void mmMerge(const HostCols *p, Slot *A, const Slot *B, int bMax){
  int o, bSame;
  uint64_t lo;
  if( B[MM_N].i==0 ) return;
  if( A[MM_N].i==0 ){ memcpy(A, B, MM_SLOTS*sizeof(Slot)); return; }
  A[MM_N].i += B[MM_N].i;
  bSame = samePrefix((uint8_t)A[MM_TAG].u, A[MM_VAL].u, (uint8_t)B[MM_TAG].u, B[MM_VAL].u);
  lo = !bSame ? A[MM_LO].u
     : bMax ? (A[MM_LO].u<B[MM_LO].u ? A[MM_LO].u : B[MM_LO].u)
            : (A[MM_LO].u>B[MM_LO].u ? A[MM_LO].u : B[MM_LO].u);
  o = gpudsColInCompare((uint8_t)B[MM_TAG].u, B[MM_VAL].u, (uint8_t)A[MM_TAG].u, A[MM_VAL].u);
  if( bMax ? o>0 : o<0 ){
    if( !bSame ) lo = B[MM_LO].u;
    A[MM_TAG] = B[MM_TAG]; A[MM_VAL] = B[MM_VAL]; A[MM_IDX] = B[MM_IDX];
  }else if( o==GPUDS_ORD_EQ && p->aKey[B[MM_IDX].i]<p->aKey[A[MM_IDX].i] ){
    A[MM_TAG] = B[MM_TAG]; A[MM_VAL] = B[MM_VAL]; A[MM_IDX] = B[MM_IDX];
  }
  A[MM_LO].u = lo;
}

/* Merge the state of one group (S2) into another's (S). */
static void stateMerge(const AggPlan *P, Slot *S, const Slot *S2){
  const HostCols *p = P->p;
  int f;
  if( S2[SLOT_ROWS].i==0 ) return;
  if( S[SLOT_ROWS].i==0 ){
    S[SLOT_FIRST] = S2[SLOT_FIRST]; S[SLOT_LAST] = S2[SLOT_LAST];
  }else{
    if( p->aKey[S2[SLOT_FIRST].i]<p->aKey[S[SLOT_FIRST].i] ) S[SLOT_FIRST] = S2[SLOT_FIRST];
    if( p->aKey[S2[SLOT_LAST].i]>p->aKey[S[SLOT_LAST].i] ) S[SLOT_LAST] = S2[SLOT_LAST];
  }
  S[SLOT_ROWS].i += S2[SLOT_ROWS].i;
  for(f=0; f<P->nFn; f++){
    Slot *A = &S[P->aOff[f]];
    const Slot *B = &S2[P->aOff[f]];
    switch( P->a->aFn[f].fn ){
      case GPUDS_AGG_COUNT:
        A[0].i += B[0].i;
        break;
      case GPUDS_AGG_SUM:
        A[SUM_N].i += B[SUM_N].i;
        A[SUM_NREAL].i += B[SUM_NREAL].i;
        A[SUM_POS].i = aggSatAdd(A[SUM_POS].i, B[SUM_POS].i);
        A[SUM_NEG].i = aggSatAdd(A[SUM_NEG].i, B[SUM_NEG].i);
        gpudsColKbnMerge(&A[SUM_S].d, &A[SUM_C].d, B[SUM_S].d, B[SUM_C].d);
        break;
      case GPUDS_AGG_MIN: case GPUDS_AGG_MAX:
        mmMerge(p, A, B, P->a->aFn[f].fn==GPUDS_AGG_MAX);
        break;
    }
  }
}

/* Count row i into group g of part w.  GPUDS_OK or GPUDS_NOMEM. */
static int rowAdd(AggPart *w, int64_t g, int64_t i){
  const AggPlan *P = w->P;
  const HostCols *p = P->p;
  Slot *S = &w->g.aS[g*P->nSlot];
  int f, rc;
  if( S[SLOT_ROWS].i++==0 ){
    S[SLOT_FIRST].i = S[SLOT_LAST].i = i;
  }else{
    if( p->aKey[i]<p->aKey[S[SLOT_FIRST].i] ) S[SLOT_FIRST].i = i;
    if( p->aKey[i]>p->aKey[S[SLOT_LAST].i] ) S[SLOT_LAST].i = i;
  }
  for(f=0; f<P->nFn; f++){
    const gpuds_aggfn *pF = &P->a->aFn[f];
    Slot *A = &S[P->aOff[f]];
    uint8_t tag;
    uint64_t val;
    if( pF->fn==GPUDS_AGG_COUNTSTAR ) continue;
    colOf(p, pF->iCol, i, &tag, &val);
    if( tag==GPUDS_TAG_NULL ) continue;
    switch( pF->fn ){
      case GPUDS_AGG_COUNT:
        A[0].i++;
        break;
      case GPUDS_AGG_SUM:
        A[SUM_N].i++;
        if( tag==GPUDS_TAG_INT ){
          int64_t v = (int64_t)val;
          if( v>0 ) A[SUM_POS].i = aggSatAdd(A[SUM_POS].i, v);
          else if( v<0 ) A[SUM_NEG].i = aggSatAdd(A[SUM_NEG].i, v);
        }else{
          A[SUM_NREAL].i++;
          gpudsColKbnAdd(&A[SUM_S].d, &A[SUM_C].d, gpudsColDouble(val));
        }
        break;
      case GPUDS_AGG_MIN: case GPUDS_AGG_MAX: {
        Slot B[MM_SLOTS];
        B[MM_N].i = 1; B[MM_TAG].u = tag; B[MM_VAL].u = val; B[MM_IDX].i = i; B[MM_LO].u = val;
        mmMerge(p, A, B, pF->fn==GPUDS_AGG_MAX);
        break;
      }
      case GPUDS_AGG_COUNTD: {
        uint8_t ct;
        uint64_t cv;
        gpudsColCanon(tag, val, &ct, &cv);
        rc = dAdd(&w->aD[P->aDist[f]], g, ct, cv);
        if( rc ) return rc;
        break;
      }
    }
  }
  return GPUDS_OK;
}

/* ----------------------------------------------------------- the scan */

/* Is row i of the set one this request leaves to the caller (it passed
** the filter with no "maybe" to make it so)?  Fills the row's canonical
** key tuple otherwise. */
static int rowUndecided(const AggPlan *P, int64_t i, uint8_t *kt, uint64_t *kv){
  const gpuds_agg *a = P->a;
  const HostCols *p = P->p;
  int k, f;
  for(k=0; k<P->nKey; k++){
    const gpuds_aggkey *pK = &a->aKey[k];
    uint8_t tag, t2;
    uint64_t val, v2;
    colOf(p, pK->iCol, i, &tag, &val);
    if( pK->op==GPUDS_AGGKEY_COL ){
      if( aggAmbiguous(tag, val, pK->aAmbig, pK->nAmbig) ) return 1;
      gpudsColCanon(tag, val, &kt[k], &kv[k]);
    }else{
      if( !gpudsColDivMod(pK->op, pK->n, tag, val, &t2, &v2) ) return 1;
      gpudsColCanon(t2, v2, &kt[k], &kv[k]);
    }
  }
  for(f=0; f<P->nFn; f++){
    const gpuds_aggfn *pF = &a->aFn[f];
    uint8_t tag;
    uint64_t val;
    if( pF->fn==GPUDS_AGG_COUNTSTAR || pF->fn==GPUDS_AGG_COUNT ) continue;
    colOf(p, pF->iCol, i, &tag, &val);
    if( gpudsColClass(tag)<2 ) continue;
    if( pF->fn==GPUDS_AGG_SUM ) return 1;
    if( aggAmbiguous(tag, val, pF->aAmbig, pF->nAmbig) ) return 1;
  }
  return 0;
}

/* Append row i to the part's leftover rows.  GPUDS_OK or GPUDS_NOMEM. */
static int leftAdd(AggPart *w, int64_t i){
  if( w->nLeft==w->nLeftAlloc ){
    int64_t n = w->nLeftAlloc ? w->nLeftAlloc*2 : 256;
    int64_t *a = realloc(w->aLeft, (size_t)n*8);
    if( a==0 ) return GPUDS_NOMEM;
    w->aLeft = a; w->nLeftAlloc = n;
  }
  w->aLeft[w->nLeft++] = i;
  return GPUDS_OK;
}

/* A thread: the rows [r0, r1) of part w. */
static void *partRun(void *pArg){
  AggPart *w = (AggPart*)pArg;
  const AggPlan *P = w->P;
  const HostCols *p = P->p;
  const gpuds_query *q = &P->a->q;
  uint8_t kt[GPUDS_AGG_KEY_MAX];
  uint64_t kv[GPUDS_AGG_KEY_MAX];
  int64_t aSel[HOST_BLOCK];
  uint8_t aMaybe[HOST_BLOCK];
  int64_t b0, i, j, n, iSkip = -1, g = 0;
  int t;
  for(b0=w->r0; b0<w->r1 && w->rc==GPUDS_OK; b0+=HOST_BLOCK){
    int64_t b1 = b0+HOST_BLOCK<w->r1 ? b0+HOST_BLOCK : w->r1;
    n = gpudsHostBlock(p, q, b0, b1, &iSkip, aSel, aMaybe);
    w->nRead += n;
    for(t=0; t<q->nTerm && n>0; t++){
      n = gpudsHostTermPass(p, q, t, P->a->aTermExact ? P->a->aTermExact[t] : 0, aSel, aMaybe, n);
    }
    for(j=0; j<n && w->rc==GPUDS_OK; j++){
      i = aSel[j];
      if( aMaybe[j] || rowUndecided(P, i, kt, kv) ){
        w->rc = leftAdd(w, i);
        continue;
      }
      if( P->nKey ){
        g = groupFind(&w->g, kt, kv);
        if( g<0 ){ w->rc = GPUDS_NOMEM; break; }
      }
      w->rc = rowAdd(w, g, i);
    }
  }
  return 0;
}

/* -------------------------------------------------------- group order */

/* A 64-bit key whose order never contradicts gpudsColGroupCmp's (equal
** keys: compare exactly). */
static uint64_t groupSortKey(uint8_t tag, uint64_t val){
  int c = gpudsColClass(tag);
  if( c==1 ) return gpudsColSortKey(tag, val);
  if( c==0 ) return 0;
  return ((uint64_t)c<<62) | (val>>2);
}

/* Insertion sort of the group numbers aIdx[0..n) by key k exactly. */
static void sortRunExact(const GroupTab *g, int k, uint64_t *aIdx, int64_t n){
  int64_t i, j;
  for(i=1; i<n; i++){
    uint64_t x = aIdx[i];
    for(j=i; j>0 && gpudsColGroupCmp(g->aKT[aIdx[j-1]*g->nKey+k], g->aKV[aIdx[j-1]*g->nKey+k],
                                     g->aKT[x*g->nKey+k], g->aKV[x*g->nKey+k])>0; j--){
      aIdx[j] = aIdx[j-1];
    }
    aIdx[j] = x;
  }
}

/* The groups of g in the order of their key tuples: *paOrder, malloc()ed
** (group numbers).  GPUDS_OK or GPUDS_NOMEM. */
static int groupOrder(const GroupTab *g, uint64_t **paOrder){
  int64_t n = g->nGroup, i, j;
  uint64_t *aOrd = malloc((size_t)(n ? n : 1)*8);
  uint64_t *aIdx = malloc((size_t)(n ? n : 1)*8);
  uint64_t *aS = malloc((size_t)(n ? n : 1)*8);
  uint64_t *aRank = malloc((size_t)(n ? n : 1)*8);
  int k, rc = GPUDS_OK;
  *paOrder = 0;
  if( !aOrd || !aIdx || !aS || !aRank ){ rc = GPUDS_NOMEM; goto order_out; }
  for(i=0; i<n; i++) aOrd[i] = (uint64_t)i;
  for(k=g->nKey-1; k>=0; k--){
    /* rank the groups by key k: sort by a sort key, runs of equal sort
    ** keys exactly, then number the distinct values */
    for(i=0; i<n; i++){
      aIdx[i] = (uint64_t)i;
      aS[i] = groupSortKey(g->aKT[i*g->nKey+k], g->aKV[i*g->nKey+k]);
    }
    if( gpudsSortU64(aS, aIdx, (size_t)n) ){ rc = GPUDS_NOMEM; goto order_out; }
    for(i=0; i<n; i=j){
      for(j=i+1; j<n && aS[j]==aS[i]; j++){}
      if( j-i>1 ) sortRunExact(g, k, &aIdx[i], j-i);
    }
    for(i=0; i<n; i++){
      uint64_t r = 0;
      if( i>0 ){
        uint64_t a = aIdx[i-1], b = aIdx[i];
        r = aRank[a] + (gpudsColGroupCmp(g->aKT[a*g->nKey+k], g->aKV[a*g->nKey+k],
                                         g->aKT[b*g->nKey+k], g->aKV[b*g->nKey+k])!=0);
      }
      aRank[aIdx[i]] = r;
    }
    /* then the order so far, stably, by that rank */
    for(i=0; i<n; i++) aS[i] = aRank[aOrd[i]];
    if( gpudsSortU64(aS, aOrd, (size_t)n) ){ rc = GPUDS_NOMEM; goto order_out; }
  }
  *paOrder = aOrd;
  aOrd = 0;
order_out:
  free(aOrd); free(aIdx); free(aS); free(aRank);
  return rc;
}

/* ------------------------------------------------------------- result */

/* Fill *pR from the merged groups of part 0 (in order aOrd) and the
** distinct counts aDistN (nDist*nGroup, by group number).  GPUDS_OK or
** GPUDS_NOMEM (*pR's arrays then freed by the caller). */
static int resultFill(const AggPlan *P, const GroupTab *g, const uint64_t *aOrd,
                      const int64_t *aDistN, gpuds_aggres *pR){
  const HostCols *p = P->p;
  const gpuds_agg *a = P->a;
  int64_t n = g->nGroup, j;
  size_t nk = (size_t)P->nKey*(size_t)n, nf = (size_t)P->nFn*(size_t)n;
  int f, k, bSum = 0, bMM = 0;
  for(f=0; f<P->nFn; f++){
    if( a->aFn[f].fn==GPUDS_AGG_SUM ) bSum = 1;
    if( a->aFn[f].fn==GPUDS_AGG_MIN || a->aFn[f].fn==GPUDS_AGG_MAX ) bMM = 1;
  }
  pR->nGroup = n;
  if( n==0 ) return GPUDS_OK;
  if( nk ){
    pR->aKeyTag = malloc(nk); pR->aKeyVal = malloc(nk*8);
    pR->aRepTag = malloc(nk); pR->aRepVal = malloc(nk*8);
    if( !pR->aKeyTag || !pR->aKeyVal || !pR->aRepTag || !pR->aRepVal ) return GPUDS_NOMEM;
  }
  pR->aRepKey = malloc((size_t)n*8); pR->aRepRow = malloc((size_t)n*8);
  pR->aRows = malloc((size_t)n*8);
  if( !pR->aRepKey || !pR->aRepRow || !pR->aRows ) return GPUDS_NOMEM;
  if( nf ){
    pR->aN = calloc(nf, 8);
    if( !pR->aN ) return GPUDS_NOMEM;
  }
  if( nf && bSum ){
    pR->aNReal = calloc(nf, 8); pR->aPos = calloc(nf, 8); pR->aNeg = calloc(nf, 8);
    pR->aSum = calloc(nf, 8); pR->aErr = calloc(nf, 8);
    if( !pR->aNReal || !pR->aPos || !pR->aNeg || !pR->aSum || !pR->aErr ) return GPUDS_NOMEM;
  }
  if( nf && bMM ){
    pR->aTag = calloc(nf, 1); pR->aVal = calloc(nf, 8);
    pR->aKey = calloc(nf, 8); pR->aRow = calloc(nf, 8); pR->aFlags = calloc(nf, 1);
    if( !pR->aTag || !pR->aVal || !pR->aKey || !pR->aRow || !pR->aFlags ) return GPUDS_NOMEM;
  }
  for(j=0; j<n; j++){
    int64_t gi = (int64_t)aOrd[j];
    const Slot *S = &g->aS[gi*P->nSlot];
    int64_t iRep = -1;
    for(k=0; k<P->nKey; k++){
      pR->aKeyTag[(size_t)k*n+j] = g->aKT[gi*P->nKey+k];
      pR->aKeyVal[(size_t)k*n+j] = g->aKV[gi*P->nKey+k];
    }
    if( S[SLOT_ROWS].i>0 ){
      if( a->iRepFn<0 ) iRep = S[SLOT_FIRST].i;
      else{
        const Slot *A = &S[P->aOff[a->iRepFn]];
        iRep = A[MM_N].i>0 ? A[MM_IDX].i : S[SLOT_LAST].i;
      }
    }
    pR->aRows[j] = S[SLOT_ROWS].i;
    pR->aRepKey[j] = iRep>=0 ? p->aKey[iRep] : 0;
    pR->aRepRow[j] = iRep>=0 ? p->aRow[iRep] : 0;
    for(k=0; k<P->nKey; k++){
      uint8_t tag = GPUDS_TAG_NULL;
      uint64_t val = 0;
      if( iRep>=0 ) colOf(p, a->aKey[k].iCol, iRep, &tag, &val);
      pR->aRepTag[(size_t)k*n+j] = tag;
      pR->aRepVal[(size_t)k*n+j] = tag==GPUDS_TAG_NULL ? 0 : val;
    }
    for(f=0; f<P->nFn; f++){
      const Slot *A = &S[P->aOff[f]];
      size_t o = (size_t)f*n+j;
      switch( a->aFn[f].fn ){
        case GPUDS_AGG_COUNTSTAR: pR->aN[o] = S[SLOT_ROWS].i; break;
        case GPUDS_AGG_COUNT:     pR->aN[o] = A[0].i; break;
        case GPUDS_AGG_COUNTD:    pR->aN[o] = aDistN[(size_t)P->aDist[f]*n+gi]; break;
        case GPUDS_AGG_SUM:
          pR->aN[o] = A[SUM_N].i;
          pR->aNReal[o] = A[SUM_NREAL].i;
          pR->aPos[o] = A[SUM_POS].i;
          pR->aNeg[o] = A[SUM_NEG].i;
          pR->aSum[o] = A[SUM_S].d;
          pR->aErr[o] = A[SUM_C].d;
          break;
        case GPUDS_AGG_MIN: case GPUDS_AGG_MAX:
          pR->aN[o] = A[MM_N].i;
          if( A[MM_N].i>0 ){
            pR->aTag[o] = (uint8_t)A[MM_TAG].u;
            pR->aVal[o] = A[MM_VAL].u;
            pR->aKey[o] = p->aKey[A[MM_IDX].i];
            pR->aRow[o] = p->aRow[A[MM_IDX].i];
            if( gpudsColClass((uint8_t)A[MM_TAG].u)>=2 && A[MM_LO].u!=A[MM_VAL].u ){
              pR->aFlags[o] = GPUDS_AGGF_TIE;
            }
          }
          break;
      }
    }
  }
  return GPUDS_OK;
}

/* ------------------------------------------------------------ the call */

/* Check request a against set p and lay out the group state: GPUDS_OK or
** GPUDS_MISUSE. */
static int planMake(const HostCols *p, const gpuds_agg *a, AggPlan *P){
  const gpuds_query *q = &a->q;
  int t, f, k;
  memset(P, 0, sizeof(*P));
  P->p = p; P->a = a;
  if( a->nKey<0 || a->nKey>GPUDS_AGG_KEY_MAX || a->nFn<0 || a->nFn>GPUDS_AGG_FN_MAX ) return GPUDS_MISUSE;
  if( (a->nKey && !a->aKey) || (a->nFn && !a->aFn) || (q->nTerm && !q->aTerm) ) return GPUDS_MISUSE;
  for(t=0; t<q->nTerm; t++){
    const gpuds_term *pT = &q->aTerm[t];
    if( pT->iCol<-1 || pT->iCol>=p->nCol ) return GPUDS_MISUSE;
    if( pT->op==GPUDS_CMP_IN
     && (pT->val>>32) + (uint32_t)pT->val > (uint64_t)(q->nIn>0 ? q->nIn : 0) ) return GPUDS_MISUSE;
  }
  for(k=0; k<a->nKey; k++){
    const gpuds_aggkey *pK = &a->aKey[k];
    if( pK->iCol<-1 || pK->iCol>=p->nCol ) return GPUDS_MISUSE;
    if( pK->op<GPUDS_AGGKEY_COL || pK->op>GPUDS_AGGKEY_MOD ) return GPUDS_MISUSE;
  }
  P->nKey = a->nKey; P->nFn = a->nFn;
  P->nSlot = SLOT_FIXED;
  for(f=0; f<a->nFn; f++){
    const gpuds_aggfn *pF = &a->aFn[f];
    if( pF->fn!=GPUDS_AGG_COUNTSTAR && (pF->iCol<-1 || pF->iCol>=p->nCol) ) return GPUDS_MISUSE;
    P->aOff[f] = P->nSlot;
    switch( pF->fn ){
      case GPUDS_AGG_COUNTSTAR: break;
      case GPUDS_AGG_COUNT: P->nSlot += 1; break;
      case GPUDS_AGG_SUM: P->nSlot += SUM_SLOTS; break;
      case GPUDS_AGG_MIN: case GPUDS_AGG_MAX: P->nSlot += MM_SLOTS; break;
      case GPUDS_AGG_COUNTD: P->aDist[f] = P->nDist++; break;
      default: return GPUDS_MISUSE;
    }
  }
  if( a->iRepFn<-1 || a->iRepFn>=a->nFn ) return GPUDS_MISUSE;
  if( a->iRepFn>=0 && a->aFn[a->iRepFn].fn!=GPUDS_AGG_MIN
   && a->aFn[a->iRepFn].fn!=GPUDS_AGG_MAX ) return GPUDS_MISUSE;
  P->i0 = 0; P->i1 = p->n;
  if( p->bSorted ){
    P->i0 = gpudsLowerBound(p->aKey, p->n, q->lo);
    P->i1 = q->hi==INT64_MAX ? p->n : gpudsLowerBound(p->aKey, p->n, q->hi+1);
    if( P->i1<P->i0 ) P->i1 = P->i0;
  }
  return GPUDS_OK;
}

static void partFree(AggPart *w, int nDist){
  int d;
  groupFree(&w->g);
  for(d=0; w->aD && d<nDist; d++) free(w->aD[d].a);
  free(w->aD);
  free(w->aLeft);
}

/* Merge parts 1..nPart-1 into part 0; the distinct values of every part
** counted per group of part 0 into *paDistN (nDist*nGroup, malloc()ed). */
static int partsMerge(const AggPlan *P, AggPart *aPart, int nPart, int64_t **paDistN){
  GroupTab *G = &aPart[0].g;
  int64_t *aMap = 0, *aDistN = 0, i;
  int t, d, rc = GPUDS_OK;
  *paDistN = 0;
  for(t=1; t<nPart && rc==GPUDS_OK; t++){
    AggPart *w = &aPart[t];
    free(aMap);
    aMap = malloc((size_t)(w->g.nGroup ? w->g.nGroup : 1)*8);
    if( aMap==0 ){ rc = GPUDS_NOMEM; break; }
    for(i=0; i<w->g.nGroup; i++){
      int64_t g = P->nKey ? groupFind(G, &w->g.aKT[i*P->nKey], &w->g.aKV[i*P->nKey]) : 0;
      if( g<0 ){ rc = GPUDS_NOMEM; break; }
      aMap[i] = g;
      stateMerge(P, &G->aS[g*P->nSlot], &w->g.aS[i*P->nSlot]);
    }
    for(d=0; d<P->nDist && rc==GPUDS_OK; d++){
      DSet *pD = &w->aD[d];
      uint64_t s;
      for(s=0; s<pD->nSlot && rc==GPUDS_OK; s++){
        const DEntry *e = &pD->a[s];
        if( e->gt ) rc = dAdd(&aPart[0].aD[d], aMap[DENTRY_G(e)], DENTRY_TAG(e), e->val);
      }
    }
  }
  free(aMap);
  if( rc==GPUDS_OK && P->nDist ){
    aDistN = calloc((size_t)P->nDist*(size_t)(G->nGroup ? G->nGroup : 1), 8);
    if( aDistN==0 ) return GPUDS_NOMEM;
    for(d=0; d<P->nDist; d++){
      DSet *pD = &aPart[0].aD[d];
      uint64_t s;
      for(s=0; s<pD->nSlot; s++){
        if( pD->a[s].gt ) aDistN[(size_t)d*G->nGroup + DENTRY_G(&pD->a[s])]++;
      }
    }
    *paDistN = aDistN;
  }
  return rc;
}

/* The leftover rows of every part, ascending key, into *pR. */
static int leftFill(const AggPlan *P, AggPart *aPart, int nPart, gpuds_aggres *pR){
  const HostCols *p = P->p;
  int64_t n = 0, i, j = 0;
  int t;
  for(t=0; t<nPart; t++) n += aPart[t].nLeft;
  if( n==0 ) return GPUDS_OK;
  pR->aLeftKey = malloc((size_t)n*8);
  pR->aLeftRow = malloc((size_t)n*8);
  if( !pR->aLeftKey || !pR->aLeftRow ) return GPUDS_NOMEM;
  for(t=0; t<nPart; t++){
    for(i=0; i<aPart[t].nLeft; i++){
      pR->aLeftKey[j] = p->aKey[aPart[t].aLeft[i]];
      pR->aLeftRow[j++] = p->aRow[aPart[t].aLeft[i]];
    }
  }
  pR->nLeft = n;
  if( !p->bSorted && gpudsSortKeys(pR->aLeftKey, pR->aLeftRow, (size_t)n) ) return GPUDS_NOMEM;
  return GPUDS_OK;
}

/* xAgg (gpuds_backend.h). */
int gpudsHostColsAgg(gpuds_cols *pCols, const gpuds_agg *a, gpuds_aggres *pR){
  HostCols *p = (HostCols*)pCols;
  AggPlan P;
  AggPart aPart[HOST_MAX_THREADS];
  int64_t *aDistN = 0;
  uint64_t *aOrd = 0;
  int nPart, t, rc;

  memset(pR, 0, sizeof(*pR));
  rc = planMake(p, a, &P);
  if( rc ){
    snprintf(p->zErr, sizeof(p->zErr), "aggregation request not valid for this column set");
    return rc;
  }
  nPart = gpudsHostThreads(P.i1-P.i0);
  memset(aPart, 0, sizeof(aPart));
  for(t=0; t<nPart; t++){
    AggPart *w = &aPart[t];
    w->P = &P;
    w->r0 = P.i0 + (P.i1-P.i0)*t/nPart;
    w->r1 = P.i0 + (P.i1-P.i0)*(t+1)/nPart;
    w->g.nKey = P.nKey; w->g.nSlot = P.nSlot;
    w->aD = calloc((size_t)(P.nDist ? P.nDist : 1), sizeof(DSet));
    if( w->aD==0 ) rc = GPUDS_NOMEM;
  }
  if( rc==GPUDS_OK && P.nKey==0 ){
    /* no key: one group, made before the rows (also when none counts) */
    for(t=0; t<nPart && rc==GPUDS_OK; t++){
      if( groupFind(&aPart[t].g, 0, 0)<0 ) rc = GPUDS_NOMEM;
    }
  }
  if( rc==GPUDS_OK ){
    gpudsHostRunParts(partRun, aPart, sizeof(aPart[0]), nPart);
    for(t=0; t<nPart; t++){
      if( aPart[t].rc ) rc = aPart[t].rc;
      pR->nRead += aPart[t].nRead;
    }
  }
  if( rc==GPUDS_OK ) rc = partsMerge(&P, aPart, nPart, &aDistN);
  if( rc==GPUDS_OK ) rc = groupOrder(&aPart[0].g, &aOrd);
  if( rc==GPUDS_OK ) rc = resultFill(&P, &aPart[0].g, aOrd, aDistN, pR);
  if( rc==GPUDS_OK ) rc = leftFill(&P, aPart, nPart, pR);
  for(t=0; t<nPart; t++) partFree(&aPart[t], P.nDist);
  free(aDistN); free(aOrd);
  if( rc ){
    gpudsAggResFree(pR);
    snprintf(p->zErr, sizeof(p->zErr), "out of memory");
  }
  return rc;
}
