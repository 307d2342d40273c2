/*
** host_ordered_lookup.c -- point lookups of the host B+tree (xLookup) and
** the hint table of leaf pointers that spares most of them a descent (see
** host_ordered.c, "The hint table").
*/
#include "host_ordered_int.h"
#include <stdint.h>
#include <stddef.h>
#include <sys/mman.h>

/* Unmap hint table pH (NULL is a no-op). */
static void btHintFree(BtHint *pH){
  if( pH ) munmap(pH, pH->nMap);
}

/* Forget the hint table (a leaf it may point at is about to be freed, or
** the tree replaced) and any table a lookup replaced; lookups descend
** until it is built again.  Called by the calls that change the tree,
** which run alone (gpuds_backend.h), so no lookup is reading them. */
void btHintDrop(HostOrderedStore *p){
  btHintFree(p->pHint);
  btHintFree(p->pRetired);
  p->pHint = 0;
  p->pRetired = 0;
  p->nDescent = 0;
}

/* Unmap the table a lookup replaced, if any: called by the calls that
** change the tree, which run alone. */
void btHintRetire(HostOrderedStore *p){
  btHintFree(p->pRetired);
  p->pRetired = 0;
}

/* The hint table's slots (0 when there is none). */
int64_t btHintSlots(HostOrderedStore *p){
  BtHint *pH = __atomic_load_n(&p->pHint, __ATOMIC_ACQUIRE);
  return pH ? pH->nHint : 0;
}

/* State of btHintBuild's walk: the table being filled, the next slot to
** fill, and the leaf that holds keys from the last separator passed. */
typedef struct BtHintFill BtHintFill;
struct BtHintFill {
  HostOrderedStore *p;
  BtHint *pH;
  int64_t j;
  BtLeaf *pCur;
};

/* Fill the slots whose keys are below lb with the current leaf. */
static void btHintUpTo(BtHintFill *f, int64_t lb){
  BtHint *pH = f->pH;
  while( f->j<pH->nHint
      && (int64_t)((uint64_t)pH->iMin + ((uint64_t)f->j << pH->nShift))<lb ){
    pH->a[f->j++] = f->pCur;
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

/* A hint table (about 2 slots a leaf) built from the inner nodes; NULL for
** a tree of one leaf, or when memory is short (lookups descend).  Reads
** the tree only. */
static BtHint *btHintBuild(HostOrderedStore *p){
  BtLeaf *pFirst, *pLast;
  uint64_t span;
  int64_t nTarget = 2*p->nLeaf;
  int s = 0;
  size_t nMap;
  BtHint *pH;
  BtHintFill f;
  if( p->nHeight<2 || p->nKey==0 ) return 0;
  pFirst = btFindLeaf(p, INT64_MIN);
  pLast = btFindLeaf(p, INT64_MAX);
  if( pFirst->h.n==0 || pLast->h.n==0 ) return 0;
  span = (uint64_t)pLast->aKey[pLast->h.n-1] - (uint64_t)pFirst->aKey[0];
  while( s<63 && (span>>s)>=(uint64_t)nTarget ) s++;
  /* Mapped, not malloc()ed: the table is optional (without it lookups
  ** descend), and when a lookup builds it depends on how many lookups
  ** descended, which differs between otherwise equal runs of tests/c/faults.c
  ** (its first run counts the allocations the others fail one by one). */
  nMap = offsetof(BtHint, a) + ((span>>s)+1)*sizeof(BtLeaf*);
  pH = (BtHint*)mmap(0, nMap, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  if( pH==(BtHint*)MAP_FAILED ) return 0;
  pH->nMap = nMap;
  pH->nHint = (int64_t)(span>>s)+1;
  pH->iMin = pFirst->aKey[0];
  pH->iMax = pLast->aKey[pLast->h.n-1];
  pH->nShift = s;
#ifdef MADV_HUGEPAGE
  /* A big tree's table is megabytes read at random: huge pages, as its
  ** leaves' slabs (advice only; the aligned 2 MiB inside it take them). */
  if( btSlabsWanted(p->nLeaf) ) madvise(pH, nMap, MADV_HUGEPAGE);
#endif
  f.p = p;
  f.pH = pH;
  f.j = 0;
  f.pCur = 0;
  btHintWalk(&f, (BtInner*)p->pRoot, 0);
  btHintUpTo(&f, INT64_MAX);
  while( f.j<pH->nHint ) pH->a[f.j++] = f.pCur;   /* INT64_MAX's slot */
  return pH;
}

/* A lookup counted one descent too many: build the table again and put it
** in place.  Lookups may run on several threads at once: one builds (the
** others go on descending), and the table it replaces stays mapped for
** them until the next call that changes the tree (btHintDrop); while one
** waits there, no other is built. */
static void btHintRenew(HostOrderedStore *p){
  BtHint *pOld, *pNew;
  if( __atomic_load_n(&p->pRetired, __ATOMIC_ACQUIRE) ) return;
  if( __atomic_test_and_set(&p->bHintBusy, __ATOMIC_ACQUIRE) ) return;
  pNew = btHintBuild(p);
  pOld = __atomic_load_n(&p->pHint, __ATOMIC_ACQUIRE);
  if( pNew || pOld ){
    __atomic_store_n(&p->pRetired, pOld, __ATOMIC_RELEASE);
    __atomic_store_n(&p->pHint, pNew, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&p->nDescent, 0, __ATOMIC_RELAXED);
  __atomic_clear(&p->bHintBusy, __ATOMIC_RELEASE);
}

/* The leaf that holds k if any leaf does, for a lookup: from pNear (the
** previous key's leaf of an ascending batch, may be NULL) or else the hint
** table's slot, when k lies within that leaf's keys or between them and
** the next leaf's, or within the next leaf's; else by a descent (counted:
** enough of them rebuild the table).  Sound at any moment, as
** btFindLeafNear.  The leaf's keys are being prefetched. */
static BtLeaf *btLookupLeaf(HostOrderedStore *p, BtLeaf *pNear, int64_t k){
  BtLeaf *pL = pNear, *pN;
  if( pL==0 ){
    BtHint *pH = __atomic_load_n(&p->pHint, __ATOMIC_ACQUIRE);
    if( pH && k>=pH->iMin && k<=pH->iMax ){
      pL = pH->a[((uint64_t)k - (uint64_t)pH->iMin) >> pH->nShift];
      BT_PREFETCH_KEYS(pL->aKey, BT_LEAF_MAX);
    }
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
  if( __atomic_add_fetch(&p->nDescent, 1, __ATOMIC_RELAXED)
        >= p->nLeaf/BT_HINT_REBUILD_DIV + BT_HINT_MIN_DESCENTS ){
    btHintRenew(p);
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
