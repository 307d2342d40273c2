/*
** host_ordered_lookup.c -- point lookups of the host B+tree (xLookup) and
** the hint table of leaf pointers that spares most of them a descent (see
** host_ordered.c, "The hint table").
*/
#include "host_ordered_int.h"
#include <stdint.h>
#include <sys/mman.h>

/* Forget the hint table (a leaf it may point at is about to be freed, or
** the tree replaced); lookups descend until it is built again. */
void btHintDrop(HostOrderedStore *p){
  if( p->aHint ) munmap(p->aHint, (size_t)p->nHint*sizeof(BtLeaf*));
  p->aHint = 0;
  p->nHint = 0;
  p->nDescent = 0;
}

/* State of btHintBuild's walk: the next slot to fill, the key it stands
** for, and the leaf that holds keys from the last separator passed. */
typedef struct BtHintFill BtHintFill;
struct BtHintFill {
  HostOrderedStore *p;
  int64_t j;
  BtLeaf *pCur;
};

/* Fill the slots whose keys are below lb with the current leaf. */
static void btHintUpTo(BtHintFill *f, int64_t lb){
  HostOrderedStore *p = f->p;
  while( f->j<p->nHint
      && (int64_t)((uint64_t)p->iHintMin + ((uint64_t)f->j << p->nHintShift))<lb ){
    p->aHint[f->j++] = f->pCur;
  }
}

/* Walk inner node pI at depth d in key order: each child's lower bound is
** the separator before it, so the slots below it belong to the leaf
** before; a child at depth nHeight-1 is a leaf (not read). */
static void btHintWalk(BtHintFill *f, BtInner *pI, int d){
  int i;
  for(i=0; i<pI->h.n; i++){
    if( i>0 ) btHintUpTo(f, pI->aKey[i-1]);
    if( d+2==f->p->nHeight ) f->pCur = (BtLeaf*)pI->apChild[i];
    else btHintWalk(f, (BtInner*)pI->apChild[i], d+1);
  }
}

/* Build the hint table (about 2 slots a leaf) from the inner nodes; none
** for a tree of one leaf, or when memory is short (lookups descend). */
static void btHintBuild(HostOrderedStore *p){
  BtLeaf *pFirst, *pLast;
  uint64_t span;
  int64_t nTarget = 2*p->nLeaf;
  int s = 0;
  BtHintFill f;
  btHintDrop(p);
  if( p->nHeight<2 || p->nKey==0 ) return;
  pFirst = btFindLeaf(p, INT64_MIN);
  pLast = btFindLeaf(p, INT64_MAX);
  if( pFirst->h.n==0 || pLast->h.n==0 ) return;
  p->iHintMin = pFirst->aKey[0];
  p->iHintMax = pLast->aKey[pLast->h.n-1];
  span = (uint64_t)p->iHintMax - (uint64_t)p->iHintMin;
  while( s<63 && (span>>s)>=(uint64_t)nTarget ) s++;
  p->nHintShift = s;
  /* Mapped, not malloc()ed: the table is optional (without it lookups
  ** descend), and when a lookup builds it depends on how many lookups
  ** descended, which differs between otherwise equal runs of tests/c/faults.c
  ** (its first run counts the allocations the others fail one by one). */
  p->aHint = (BtLeaf**)mmap(0, ((span>>s)+1)*sizeof(BtLeaf*),
                            PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  if( p->aHint==(BtLeaf**)MAP_FAILED ){ p->aHint = 0; return; }
  p->nHint = (int64_t)(span>>s)+1;
#ifdef MADV_HUGEPAGE
  /* A big tree's table is megabytes read at random: huge pages, as its
  ** leaves' slabs (advice only; the aligned 2 MiB inside it take them). */
  if( btSlabsWanted(p->nLeaf) ){
    madvise(p->aHint, (size_t)p->nHint*sizeof(BtLeaf*), MADV_HUGEPAGE);
  }
#endif
  f.p = p;
  f.j = 0;
  f.pCur = 0;
  btHintWalk(&f, (BtInner*)p->pRoot, 0);
  btHintUpTo(&f, INT64_MAX);
  while( f.j<p->nHint ) p->aHint[f.j++] = f.pCur;   /* INT64_MAX's slot */
}

/* The leaf that holds k if any leaf does, for a lookup: from pNear (the
** previous key's leaf of an ascending batch, may be NULL) or else the hint
** table's slot, when k lies within that leaf's keys or between them and
** the next leaf's, or within the next leaf's; else by a descent (counted:
** enough of them rebuild the table).  Sound at any moment, as
** btFindLeafNear.  The leaf's keys are being prefetched. */
static BtLeaf *btLookupLeaf(HostOrderedStore *p, BtLeaf *pNear, int64_t k){
  BtLeaf *pL = pNear, *pN;
  if( pL==0 && p->nHint>0 && k>=p->iHintMin && k<=p->iHintMax ){
    pL = p->aHint[((uint64_t)k - (uint64_t)p->iHintMin) >> p->nHintShift];
    BT_PREFETCH_KEYS(pL->aKey, BT_LEAF_MAX);
  }
  if( pL && pL->h.n>0 && k>=pL->aKey[0] ){
    if( k<=pL->aKey[pL->h.n-1] ) return pL;
    pN = pL->pNext;
    if( pN==0 ) return pL;                  /* past every key: absent */
    if( pN->h.n>0 ){
      if( k<pN->aKey[0] ) return pL;        /* between two leaves: absent */
      if( k<=pN->aKey[pN->h.n-1] ){
        BT_PREFETCH_KEYS(pN->aKey, pN->h.n);
        return pN;
      }
    }
  }
  if( ++p->nDescent >= p->nLeaf/BT_HINT_REBUILD_DIV + BT_HINT_MIN_DESCENTS ){
    btHintBuild(p);
  }
  return btFindLeaf(p, k);
}

/* Point lookups; never fails.  aFound or aVal may be NULL. */
int btLookup(gpuds_store *pStore, size_t n, const int64_t *aKey,
                    uint8_t *aFound, uint64_t *aVal){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  BtLeaf *pHint = 0;
  size_t i;
  for(i=0; i<n; i++){
    uint8_t f;
    uint64_t v;
    pHint = btLookupLeaf(p, (i>0 && aKey[i]>aKey[i-1]) ? pHint : 0, aKey[i]);
    btGetIn(pHint, aKey[i], &f, &v);
    if( aFound ) aFound[i] = f;
    if( aVal ) aVal[i] = v;
  }
  return GPUDS_OK;
}
