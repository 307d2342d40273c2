/*
** host_ordered_batch.c -- all-or-nothing batches of the host B+tree
** (xBatch, and the inserts of an xBulkLoad too small to rebuild): key by
** key inserts that split, removals that never merge, the undo of a batch
** that ran out of memory, and the repair of underfull nodes after it (see
** host_ordered.c, "All-or-nothing batches").
*/
#include "host_ordered_int.h"
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
** Set k to v, reporting the previous state in *pFound and *pOld.  Memory is
** allocated only when k is absent and its leaf is full; all of it is taken
** before anything changes, so GPUDS_NOMEM means the tree is untouched.
*/
static int btInsert(HostOrderedStore *p, int64_t k, uint64_t v,
                    uint8_t *pFound, uint64_t *pOld){
  BtInner *aPath[BT_MAX_HEIGHT];
  int aIdx[BT_MAX_HEIGHT];
  BtInner *apNew[BT_MAX_HEIGHT+1];   /* inner nodes taken for the split */
  int nNew = 0, nUsed = 0;
  int d = 0, lvl, i, j = 0;
  BtNode *pN = p->pRoot;
  BtLeaf *pL, *pR = 0;
  int64_t sep;
  BtNode *pUp;

  while( !pN->isLeaf ){
    BtInner *pI = (BtInner*)pN;
    i = btUpperBound(pI->aKey, pI->h.n-1, k);
    aPath[d] = pI;
    aIdx[d] = i;
    d++;
    pN = pI->apChild[i];
  }
  pL = (BtLeaf*)pN;
  i = btLowerBound(pL->aKey, pL->h.n, k);
  if( i<pL->h.n && pL->aKey[i]==k ){
    *pFound = 1;
    *pOld = pL->aVal[i];
    pL->aVal[i] = v;
    return GPUDS_OK;
  }
  *pFound = 0;
  *pOld = 0;
  if( pL->h.n<BT_LEAF_MAX ){
    int nMove = pL->h.n - i;
    memmove(&pL->aKey[i+1], &pL->aKey[i], nMove*sizeof(int64_t));
    memmove(&pL->aVal[i+1], &pL->aVal[i], nMove*sizeof(uint64_t));
    pL->aKey[i] = k;
    pL->aVal[i] = v;
    pL->h.n++;
    p->nKey++;
    return GPUDS_OK;
  }

  /* The leaf is full.  Count the full ancestors that will split too, and
  ** a new root if all of them are full; take all the memory first. */
  for(lvl=d-1; lvl>=0 && aPath[lvl]->h.n==BT_FANOUT; lvl--) nNew++;
  if( lvl<0 ) nNew++;
  if( lvl<0 && p->nHeight>=BT_MAX_HEIGHT ){
    return btError(p, GPUDS_NOMEM, "b+tree: height limit reached");
  }
  pR = btNewLeaf(p, btSlabFor(p));
  if( pR==0 ) goto no_mem;
  for(j=0; j<nNew; j++){
    apNew[j] = btNewInner(p);
    if( apNew[j]==0 ) goto no_mem;
  }

  /* Split the leaf: BT_LEAF_MAX+1 entries, the left keeps the first half. */
  {
    int64_t aK[BT_LEAF_MAX+1];
    uint64_t aV[BT_LEAF_MAX+1];
    int nLeft = (BT_LEAF_MAX+1)/2;
    memcpy(aK, pL->aKey, i*sizeof(int64_t));
    memcpy(aV, pL->aVal, i*sizeof(uint64_t));
    aK[i] = k;
    aV[i] = v;
    memcpy(&aK[i+1], &pL->aKey[i], (BT_LEAF_MAX-i)*sizeof(int64_t));
    memcpy(&aV[i+1], &pL->aVal[i], (BT_LEAF_MAX-i)*sizeof(uint64_t));
    memcpy(pL->aKey, aK, nLeft*sizeof(int64_t));
    memcpy(pL->aVal, aV, nLeft*sizeof(uint64_t));
    pL->h.n = nLeft;
    memcpy(pR->aKey, &aK[nLeft], (BT_LEAF_MAX+1-nLeft)*sizeof(int64_t));
    memcpy(pR->aVal, &aV[nLeft], (BT_LEAF_MAX+1-nLeft)*sizeof(uint64_t));
    pR->h.n = BT_LEAF_MAX+1-nLeft;
    pR->pNext = pL->pNext;
    pR->pPrev = pL;
    if( pL->pNext ) pL->pNext->pPrev = pR;
    pL->pNext = pR;
    p->nKey++;
  }
  sep = pR->aKey[0];
  pUp = &pR->h;

  /* Insert (sep, pUp) to the right of child aIdx[lvl] of each ancestor,
  ** splitting the full ones. */
  for(lvl=d-1; lvl>=0 && pUp; lvl--){
    BtInner *pI = aPath[lvl];
    int ci = aIdx[lvl];
    if( pI->h.n<BT_FANOUT ){
      int nK = pI->h.n-1;
      memmove(&pI->aKey[ci+1], &pI->aKey[ci], (nK-ci)*sizeof(int64_t));
      memmove(&pI->apChild[ci+2], &pI->apChild[ci+1],
              (pI->h.n-ci-1)*sizeof(BtNode*));
      pI->aKey[ci] = sep;
      pI->apChild[ci+1] = pUp;
      pI->h.n++;
      pUp = 0;
    }else{
      int64_t aK[BT_FANOUT];
      BtNode *aC[BT_FANOUT+1];
      int nLeft = (BT_FANOUT+1)/2;          /* children kept on the left */
      int nRight = BT_FANOUT+1-nLeft;
      BtInner *pIR = apNew[nUsed++];
      memcpy(aK, pI->aKey, ci*sizeof(int64_t));
      aK[ci] = sep;
      memcpy(&aK[ci+1], &pI->aKey[ci], (BT_FANOUT-1-ci)*sizeof(int64_t));
      memcpy(aC, pI->apChild, (ci+1)*sizeof(BtNode*));
      aC[ci+1] = pUp;
      memcpy(&aC[ci+2], &pI->apChild[ci+1], (BT_FANOUT-1-ci)*sizeof(BtNode*));
      memcpy(pI->apChild, aC, nLeft*sizeof(BtNode*));
      memcpy(pI->aKey, aK, (nLeft-1)*sizeof(int64_t));
      pI->h.n = nLeft;
      memcpy(pIR->apChild, &aC[nLeft], nRight*sizeof(BtNode*));
      memcpy(pIR->aKey, &aK[nLeft], (nRight-1)*sizeof(int64_t));
      pIR->h.n = nRight;
      sep = aK[nLeft-1];
      pUp = &pIR->h;
    }
  }
  if( pUp ){
    BtInner *pRoot = apNew[nUsed++];
    pRoot->apChild[0] = p->pRoot;
    pRoot->apChild[1] = pUp;
    pRoot->aKey[0] = sep;
    pRoot->h.n = 2;
    p->pRoot = &pRoot->h;
    p->nHeight++;
  }
  assert( nUsed==nNew );
  return GPUDS_OK;

no_mem:
  if( pR ){ btFreeNode(p, &pR->h); p->nLeaf--; }
  while( j-- > 0 ){ free(apNew[j]); p->nInner--; }
  return btError(p, GPUDS_NOMEM, "b+tree: out of memory splitting a node");
}

/*
** Remove k if present, reporting the previous state in *pFound and *pOld.
** Never merges: *pUnder is set to 1 if this removal left a non-root leaf
** with fewer than BT_LEAF_MIN entries (it had BT_LEAF_MIN), for btFixup()
** to repair later.  Only that first removal is flagged: a leaf is never
** underfull at rest, no split leaves one underfull, and a leaf's key range
** only narrows by a split (of a full leaf), so every underfull leaf keeps a
** flagged key in its range, and one btFixup() per leaf is enough (a range
** delete then repairs each leaf once, not at each of its removals).
*/
static void btRemoveNear(HostOrderedStore *p, BtLeaf **ppHint, int64_t k,
                         uint8_t *pFound, uint64_t *pOld, uint8_t *pUnder);
static void btRemove(HostOrderedStore *p, int64_t k, uint8_t *pFound,
                     uint64_t *pOld, uint8_t *pUnder){
  btRemoveNear(p, 0, k, pFound, pOld, pUnder);
}

/* btRemove(), the leaf found from *ppHint (see btFindLeafNear) when
** ppHint is not NULL, and *ppHint set to that leaf. */
static void btRemoveNear(HostOrderedStore *p, BtLeaf **ppHint, int64_t k,
                         uint8_t *pFound, uint64_t *pOld, uint8_t *pUnder){
  BtLeaf *pL = ppHint ? btFindLeafNear(p, *ppHint, k) : btFindLeaf(p, k);
  int i = btLowerBound(pL->aKey, pL->h.n, k);
  if( ppHint ) *ppHint = pL;
  *pUnder = 0;
  if( i<pL->h.n && pL->aKey[i]==k ){
    int nMove = pL->h.n - i - 1;
    *pFound = 1;
    *pOld = pL->aVal[i];
    memmove(&pL->aKey[i], &pL->aKey[i+1], nMove*sizeof(int64_t));
    memmove(&pL->aVal[i], &pL->aVal[i+1], nMove*sizeof(uint64_t));
    pL->h.n--;
    p->nKey--;
    if( pL->h.n==BT_LEAF_MIN-1 && &pL->h!=p->pRoot ) *pUnder = 1;
  }else{
    *pFound = 0;
    *pOld = 0;
  }
}

/*
** Remove the keys of the delete operations i, i+1, ... of a batch that fall
** into one leaf, in one pass over it: the run is operation i and every
** following delete whose key ascends and is at most the leaf's last key
** (so it lies in the leaf's key range).  Reports each operation's previous
** state in aFound/aOld and flags at most one of them in aFlag, as
** btRemoveNear() would have flagged the removal that left the leaf
** underfull.  *ppHint as for btRemoveNear(); returns the number of
** operations done (at least 1).  A range DELETE removes whole leaves'
** worth of keys: one compaction per leaf instead of a memmove per key.
*/
static size_t btRemoveRun(HostOrderedStore *p, BtLeaf **ppHint, size_t i,
                          size_t n, const uint8_t *aOp, const int64_t *aKey,
                          uint8_t *aFound, uint64_t *aOld, uint8_t *aFlag){
  BtLeaf *pL = btFindLeafNear(p, *ppHint, aKey[i]);
  int nBefore = pL->h.n, r, w;
  size_t b, iEnd = i+1, iFirstFound = n;
  *ppHint = pL;
  if( nBefore>0 ){
    int64_t kLast = pL->aKey[nBefore-1];
    while( iEnd<n && aOp[iEnd]==GPUDS_OP_DELETE && aKey[iEnd]>aKey[iEnd-1]
        && aKey[iEnd]<=kLast ){
      iEnd++;
    }
  }
  r = w = btLowerBound(pL->aKey, nBefore, aKey[i]);
  for(b=i; b<iEnd; b++){
    int64_t k = aKey[b];
    int r0 = r;
    while( r<nBefore && pL->aKey[r]<k ) r++;
    if( r>r0 && w<r0 ){
      memmove(&pL->aKey[w], &pL->aKey[r0], (r-r0)*sizeof(int64_t));
      memmove(&pL->aVal[w], &pL->aVal[r0], (r-r0)*sizeof(uint64_t));
    }
    w += r-r0;
    aFlag[b] = 0;
    if( r<nBefore && pL->aKey[r]==k ){
      aFound[b] = 1;
      aOld[b] = pL->aVal[r];
      if( iFirstFound==n ) iFirstFound = b;
      r++;
    }else{
      aFound[b] = 0;
      aOld[b] = 0;
    }
  }
  if( w<r ){
    memmove(&pL->aKey[w], &pL->aKey[r], (nBefore-r)*sizeof(int64_t));
    memmove(&pL->aVal[w], &pL->aVal[r], (nBefore-r)*sizeof(uint64_t));
  }
  pL->h.n = w + (nBefore-r);
  p->nKey -= nBefore - pL->h.n;
  if( nBefore>=BT_LEAF_MIN && pL->h.n<BT_LEAF_MIN && &pL->h!=p->pRoot ){
    aFlag[iFirstFound] = 1;
  }
  return iEnd - i;
}

/* True if pN, not the root, has fewer entries or children than allowed. */
static int btUnderfull(const BtNode *pN){
  return pN->n < (pN->isLeaf ? BT_LEAF_MIN : BT_INNER_MIN);
}

/*
** Children li and li+1 of pP are leaves together holding at least
** 2*BT_LEAF_MIN entries: share them out evenly and fix the separator.
*/
static void btLeafShare(BtInner *pP, int li){
  BtLeaf *pA = (BtLeaf*)pP->apChild[li];
  BtLeaf *pB = (BtLeaf*)pP->apChild[li+1];
  int nTotal = pA->h.n + pB->h.n;
  int nA = nTotal/2;
  if( pA->h.n>nA ){                         /* move A's tail to B's head */
    int m = pA->h.n - nA;
    memmove(&pB->aKey[m], pB->aKey, pB->h.n*sizeof(int64_t));
    memmove(&pB->aVal[m], pB->aVal, pB->h.n*sizeof(uint64_t));
    memcpy(pB->aKey, &pA->aKey[nA], m*sizeof(int64_t));
    memcpy(pB->aVal, &pA->aVal[nA], m*sizeof(uint64_t));
  }else if( pA->h.n<nA ){                   /* move B's head to A's tail */
    int m = nA - pA->h.n;
    memcpy(&pA->aKey[pA->h.n], pB->aKey, m*sizeof(int64_t));
    memcpy(&pA->aVal[pA->h.n], pB->aVal, m*sizeof(uint64_t));
    memmove(pB->aKey, &pB->aKey[m], (pB->h.n-m)*sizeof(int64_t));
    memmove(pB->aVal, &pB->aVal[m], (pB->h.n-m)*sizeof(uint64_t));
  }
  pA->h.n = nA;
  pB->h.n = nTotal - nA;
  pP->aKey[li] = pB->aKey[0];
}

/*
** Children li and li+1 of pP are inner nodes together holding at least
** 2*BT_INNER_MIN children: share them out evenly, rotating through the
** separator in pP.
*/
static void btInnerShare(BtInner *pP, int li){
  BtInner *pA = (BtInner*)pP->apChild[li];
  BtInner *pB = (BtInner*)pP->apChild[li+1];
  int64_t aK[2*BT_FANOUT];
  BtNode *aC[2*BT_FANOUT];
  int nTotal = pA->h.n + pB->h.n;
  int nA = nTotal/2;
  int nB = nTotal - nA;
  memcpy(aK, pA->aKey, (pA->h.n-1)*sizeof(int64_t));
  aK[pA->h.n-1] = pP->aKey[li];
  memcpy(&aK[pA->h.n], pB->aKey, (pB->h.n-1)*sizeof(int64_t));
  memcpy(aC, pA->apChild, pA->h.n*sizeof(BtNode*));
  memcpy(&aC[pA->h.n], pB->apChild, pB->h.n*sizeof(BtNode*));
  memcpy(pA->aKey, aK, (nA-1)*sizeof(int64_t));
  memcpy(pA->apChild, aC, nA*sizeof(BtNode*));
  pP->aKey[li] = aK[nA-1];
  memcpy(pB->aKey, &aK[nA], (nB-1)*sizeof(int64_t));
  memcpy(pB->apChild, &aC[nA], nB*sizeof(BtNode*));
  pA->h.n = nA;
  pB->h.n = nB;
}

/*
** Children li and li+1 of pP (both leaves or both inner) fit in one node:
** move everything into child li, free child li+1 and drop it from pP.
*/
static void btMerge(HostOrderedStore *p, BtInner *pP, int li){
  BtNode *pA = pP->apChild[li];
  BtNode *pB = pP->apChild[li+1];
  if( pA->isLeaf ){
    BtLeaf *pLA = (BtLeaf*)pA, *pLB = (BtLeaf*)pB;
    assert( pLA->h.n + pLB->h.n <= BT_LEAF_MAX );
    memcpy(&pLA->aKey[pLA->h.n], pLB->aKey, pLB->h.n*sizeof(int64_t));
    memcpy(&pLA->aVal[pLA->h.n], pLB->aVal, pLB->h.n*sizeof(uint64_t));
    pLA->h.n += pLB->h.n;
    pLA->pNext = pLB->pNext;
    if( pLB->pNext ) pLB->pNext->pPrev = pLA;
    p->nLeaf--;
    btHintDrop(p);                       /* it may point at pLB */
  }else{
    BtInner *pIA = (BtInner*)pA, *pIB = (BtInner*)pB;
    assert( pIA->h.n + pIB->h.n <= BT_FANOUT );
    pIA->aKey[pIA->h.n-1] = pP->aKey[li];
    memcpy(&pIA->aKey[pIA->h.n], pIB->aKey, (pIB->h.n-1)*sizeof(int64_t));
    memcpy(&pIA->apChild[pIA->h.n], pIB->apChild, pIB->h.n*sizeof(BtNode*));
    pIA->h.n += pIB->h.n;
    p->nInner--;
  }
  btFreeNode(p, pB);
  memmove(&pP->aKey[li], &pP->aKey[li+1], (pP->h.n-2-li)*sizeof(int64_t));
  memmove(&pP->apChild[li+1], &pP->apChild[li+2],
          (pP->h.n-2-li)*sizeof(BtNode*));
  pP->h.n--;
}

/*
** Restore the fill bounds on the path from the root to the leaf of key k:
** every underfull node on it borrows from or merges with a sibling, and a
** root with a single child is dropped.  Frees memory, never allocates.
** Underfull nodes off the path are left for their own fixup.
*/
static void btFixup(HostOrderedStore *p, int64_t k){
  for(;;){
    BtInner *aPath[BT_MAX_HEIGHT];
    int aIdx[BT_MAX_HEIGHT];
    BtNode *aNode[BT_MAX_HEIGHT+1];
    int d = 0, lvl;
    int bAgain = 0;
    BtNode *pN = p->pRoot;

    aNode[0] = pN;
    while( !pN->isLeaf ){
      BtInner *pI = (BtInner*)pN;
      int i = btUpperBound(pI->aKey, pI->h.n-1, k);
      aPath[d] = pI;
      aIdx[d] = i;
      pN = pI->apChild[i];
      aNode[++d] = pN;
    }
    for(lvl=d; lvl>=1; lvl--){
      BtInner *pP = aPath[lvl-1];
      int ci = aIdx[lvl-1];
      int li;
      BtNode *pA, *pB;
      if( !btUnderfull(aNode[lvl]) ) continue;
      if( pP->h.n<2 ){
        /* No sibling: the parent is underfull too; once it is repaired,
        ** come back for this node. */
        bAgain = 1;
        continue;
      }
      li = ci>0 ? ci-1 : 0;
      pA = pP->apChild[li];
      pB = pP->apChild[li+1];
      if( pA->n + pB->n >= 2*(pA->isLeaf ? BT_LEAF_MIN : BT_INNER_MIN) ){
        if( pA->isLeaf ) btLeafShare(pP, li); else btInnerShare(pP, li);
      }else{
        btMerge(p, pP, li);
        bAgain = 1;   /* the merged node may still be underfull */
      }
    }
    while( !p->pRoot->isLeaf && p->pRoot->n==1 ){
      BtInner *pOld = (BtInner*)p->pRoot;
      p->pRoot = pOld->apChild[0];
      free(pOld);
      p->nInner--;
      p->nHeight--;
    }
    if( !bAgain ) break;
  }
}

/*
** The batch engine behind xBatch and the insert path of xBulkLoad.  aOp
** NULL means every operation is an upsert.  See the comment at the top of
** the file for how it stays all-or-nothing.
*/
int btApply(HostOrderedStore *p, size_t n, const uint8_t *aOp,
                   const int64_t *aKey, const uint64_t *aVal,
                   uint8_t *aFound, uint64_t *aOld){
  size_t i, j;
  int bMut = 0;
  int rc = GPUDS_OK;
  unsigned char *pWork;
  uint8_t *aFlag;
  size_t nWork;
  BtLeaf *pHint = 0;     /* leaf of the last lookup or removal */
  size_t nUp = 0;        /* upserts among the operations */

  if( aOp ){
    for(i=0; i<n; i++){
      if( aOp[i]>GPUDS_OP_DELETE ){
        return btError(p, GPUDS_MISUSE,
                       "invalid operation code %d at batch index %zu",
                       (int)aOp[i], i);
      }
      if( aOp[i]!=GPUDS_OP_LOOKUP ) bMut = 1;
      if( aOp[i]==GPUDS_OP_UPSERT ) nUp++;
    }
  }else{
    bMut = n>0;
    nUp = n;
  }
  if( nUp==n && n>0 && btAppendable(p, aKey[0]) ){
    /* Only upserts of ascending keys past the largest (a flush of rows
    ** written in order): appended on the right edge, every key new. */
    for(i=1; i<n && aKey[i]>aKey[i-1]; i++){}
    if( i==n ){
      rc = btAppend(p, n, aKey, aVal);
      if( rc==GPUDS_OK ){
        if( aFound ) memset(aFound, 0, n);
        if( aOld ) memset(aOld, 0, n*sizeof(uint64_t));
      }
      return rc;
    }
  }
  if( !bMut ){
    uint8_t f;
    uint64_t v;
    for(i=0; i<n; i++){
      pHint = btFindLeafNear(p, (i>0 && aKey[i]>aKey[i-1]) ? pHint : 0, aKey[i]);
      btGetIn(pHint, aKey[i], &f, &v);
      if( aFound ) aFound[i] = f;
      if( aOld ) aOld[i] = v;
    }
    return GPUDS_OK;
  }

  /* Work space: the previous states (needed to undo) when the caller does
  ** not want them, and one flag per operation that left a leaf underfull. */
  if( n > ((size_t)-1)/(sizeof(uint64_t)+2) ){
    return btError(p, GPUDS_NOMEM, "b+tree: batch too large");
  }
  nWork = n + (aOld ? 0 : n*sizeof(uint64_t)) + (aFound ? 0 : n);
  pWork = (unsigned char*)malloc(nWork);
  if( pWork==0 ){
    return btError(p, GPUDS_NOMEM, "b+tree: out of memory for a batch of %zu",
                   n);
  }
  aFlag = pWork;
  if( aOld==0 ){
    aOld = (uint64_t*)pWork;              /* malloc()'s alignment suits it */
    aFlag = pWork + n*sizeof(uint64_t);
  }
  if( aFound==0 ) aFound = aFlag + n;
  memset(aFlag, 0, n);

  for(i=0; i<n; i++){
    int op = aOp ? aOp[i] : GPUDS_OP_UPSERT;
    /* Ascending keys (a flushed write buffer) are mostly in the leaf of the
    ** previous one, or the next: removals and lookups start there. */
    BtLeaf *pNear = (i>0 && aKey[i]>aKey[i-1]) ? pHint : 0;
    if( op==GPUDS_OP_UPSERT ){
      rc = btInsert(p, aKey[i], aVal[i], &aFound[i], &aOld[i]);
      if( rc ) break;
      pHint = 0;
    }else if( op==GPUDS_OP_DELETE ){
      pHint = pNear;
      i += btRemoveRun(p, &pHint, i, n, aOp, aKey, aFound, aOld, aFlag) - 1;
    }else{
      pHint = btFindLeafNear(p, pNear, aKey[i]);
      btGetIn(pHint, aKey[i], &aFound[i], &aOld[i]);
    }
  }
  if( rc ){
    /* Undo operations i-1 down to 0.  None of this allocates. */
    for(j=i; j-- > 0; ){
      int op = aOp ? aOp[j] : GPUDS_OP_UPSERT;
      uint8_t f;
      uint64_t v;
      if( op==GPUDS_OP_UPSERT ){
        if( aFound[j] ){
          int rc2 = btInsert(p, aKey[j], aOld[j], &f, &v);
          assert( rc2==GPUDS_OK && f );
          (void)rc2;
        }else{
          btRemove(p, aKey[j], &f, &v, &aFlag[j]);
          assert( f );
        }
      }else if( op==GPUDS_OP_DELETE && aFound[j] ){
        int rc2 = btInsert(p, aKey[j], aOld[j], &f, &v);
        assert( rc2==GPUDS_OK && !f );
        (void)rc2;
      }
    }
  }
  for(j=0; j<n; j++){
    if( aFlag[j] ) btFixup(p, aKey[j]);
  }
  free(pWork);
  return rc;
}
