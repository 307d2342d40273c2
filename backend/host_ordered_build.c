/*
** host_ordered_build.c -- the host B+tree built whole: a tree built in one
** pass from sorted entries (a new tree, or the merge of a big load with the
** old one), and the append of keys past the largest on the right edge in
** O(batch) (see host_ordered.c, "Appends").
*/
#include "host_ordered_int.h"
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The node counts of a tree of nEntry entries built densely by btBuild():
** aCount[0] leaves, aCount[1] nodes one level up, ...; returns the height. */
static int btBuildShape(int64_t nEntry, int64_t *aCount){
  int h = 0;
  int64_t m = (nEntry + BT_LEAF_MAX - 1)/BT_LEAF_MAX;
  aCount[h++] = m;
  while( m>1 ){
    m = (m + BT_FANOUT - 1)/BT_FANOUT;
    aCount[h++] = m;
  }
  return h;
}

/*
** A source of entries in strictly ascending key order for btBuild(): the
** merge of an existing tree's leaf chain (pL, may be NULL) with the arrays
** aKey/aVal; on equal keys the array's value wins (an upsert).
*/
typedef struct BtSource BtSource;
struct BtSource {
  BtLeaf *pL;  int iL;                         /* next entry of the tree */
  const int64_t *aKey; const uint64_t *aVal;   /* the arrays */
  size_t i, n;                                 /* next array entry, count */
};

/* Skip empty leaves so that pSrc->pL is NULL or has an entry at iL. */
static void btSourceSettle(BtSource *pSrc){
  while( pSrc->pL && pSrc->iL>=pSrc->pL->h.n ){
    pSrc->pL = pSrc->pL->pNext;
    pSrc->iL = 0;
  }
}

/* The next entry of the merge into *pK and *pV; 0 once it is exhausted. */
static int btSourceNext(BtSource *pSrc, int64_t *pK, uint64_t *pV){
  int bTree = pSrc->pL!=0;
  int bArr = pSrc->i<pSrc->n;
  if( bTree && bArr ){
    int64_t kT = pSrc->pL->aKey[pSrc->iL];
    int64_t kA = pSrc->aKey[pSrc->i];
    if( kT<kA ){
      bArr = 0;
    }else{
      if( kT==kA ){ pSrc->iL++; btSourceSettle(pSrc); }
      bTree = 0;
    }
  }
  if( bTree ){
    *pK = pSrc->pL->aKey[pSrc->iL];
    *pV = pSrc->pL->aVal[pSrc->iL];
    pSrc->iL++;
    btSourceSettle(pSrc);
    return 1;
  }
  if( bArr ){
    *pK = pSrc->aKey[pSrc->i];
    *pV = pSrc->aVal[pSrc->i];
    pSrc->i++;
    return 1;
  }
  return 0;
}

/*
** Build a new tree of exactly nEntry (>0) entries read from pSrc, leaves
** and inner nodes filled as evenly as possible (all at least half full),
** into *ppRoot, *pnHeight, *pnLeaf and *pnInner.  All memory is taken
** before any entry is read; on GPUDS_NOMEM nothing is left allocated.
*/
static int btBuild(HostOrderedStore *p, int64_t nEntry, BtSource *pSrc,
                   BtNode **ppRoot, int *pnHeight, int64_t *pnLeaf,
                   int64_t *pnInner){
  int64_t aCount[BT_MAX_HEIGHT];
  int nHeight = btBuildShape(nEntry, aCount);
  int64_t nNode = 0, nDone = 0, j, lvl;
  BtNode **apNode;          /* every node, leaves first, level by level */
  int64_t *aMin;            /* smallest key under each node of a level */
  BtLeaf *pPrev = 0;

  for(lvl=0; lvl<nHeight; lvl++) nNode += aCount[lvl];
  if( (uint64_t)nNode > ((size_t)-1)/(sizeof(BtNode*)+sizeof(int64_t)) ){
    return GPUDS_NOMEM;
  }
  apNode = (BtNode**)malloc(nNode*sizeof(BtNode*));
  aMin = (int64_t*)malloc(aCount[0]*sizeof(int64_t));
  if( apNode==0 || aMin==0 ) goto no_mem;
  for(nDone=0; nDone<nNode; nDone++){
    apNode[nDone] = nDone<aCount[0]
        ? (BtNode*)btNewLeaf(0, btSlabsWanted(aCount[0]) ? p : 0)
        : (BtNode*)btNewInner(0);
    if( apNode[nDone]==0 ) goto no_mem;
  }

  /* Leaves. */
  {
    int64_t m = aCount[0];
    int64_t nBase = nEntry/m, nExtra = nEntry%m;
    for(j=0; j<m; j++){
      BtLeaf *pL = (BtLeaf*)apNode[j];
      int c = (int)(nBase + (j<nExtra)), e;
      if( pSrc->pL==0 ){                  /* only the arrays left: copy */
        assert( pSrc->i + (size_t)c <= pSrc->n );
        memcpy(pL->aKey, &pSrc->aKey[pSrc->i], (size_t)c*sizeof(int64_t));
        memcpy(pL->aVal, &pSrc->aVal[pSrc->i], (size_t)c*sizeof(uint64_t));
        pSrc->i += (size_t)c;
      }else{
        for(e=0; e<c; e++){
          int ok = btSourceNext(pSrc, &pL->aKey[e], &pL->aVal[e]);
          assert( ok );
          (void)ok;
        }
      }
      pL->h.n = c;
      pL->pPrev = pPrev;
      if( pPrev ) pPrev->pNext = pL;
      pPrev = pL;
      aMin[j] = pL->aKey[0];
    }
  }

  /* Inner levels.  aMin is rewritten in place: group g reads entries at
  ** positions >= g before writing position g. */
  {
    BtNode **apBelow = apNode;
    for(lvl=1; lvl<nHeight; lvl++){
      int64_t m = aCount[lvl-1], g = aCount[lvl];
      int64_t nBase = m/g, nExtra = m%g, iChild = 0;
      BtNode **apHere = apBelow + m;
      for(j=0; j<g; j++){
        BtInner *pI = (BtInner*)apHere[j];
        int c = (int)(nBase + (j<nExtra)), e;
        int64_t iMin = aMin[iChild];
        for(e=0; e<c; e++){
          pI->apChild[e] = apBelow[iChild];
          if( e>0 ) pI->aKey[e-1] = aMin[iChild];
          iChild++;
        }
        pI->h.n = c;
        aMin[j] = iMin;
      }
      apBelow = apHere;
    }
    *ppRoot = apBelow[0];
  }
  *pnHeight = nHeight;
  *pnLeaf = aCount[0];
  *pnInner = nNode - aCount[0];
  free(apNode);
  free(aMin);
  return GPUDS_OK;

no_mem:
  if( apNode ){
    for(j=0; j<nDone; j++) btFreeNode(p, apNode[j]);
  }
  free(apNode);
  free(aMin);
  return GPUDS_NOMEM;
}

/* Replace the tree of p by a freshly built one (see btBuild). */
static void btInstall(HostOrderedStore *p, BtNode *pRoot, int nHeight,
                      int64_t nEntry, int64_t nLeaf, int64_t nInner){
  btHintDrop(p);
  btFreeTree(p, p->pRoot);
  p->pRoot = pRoot;
  p->nHeight = nHeight;
  p->nKey = nEntry;
  p->nLeaf = nLeaf;
  p->nInner = nInner;
}

/* ---------------------------------------------------------------------- */
/* Appending on the right edge.                                            */

/* The node count for T items (entries or children) at capacity C on the
** right edge, where the first node already holds some of them: ceil(T/C),
** at least 1. */
static int64_t btEdgeNodes(int64_t T, int C){
  return T<=C ? 1 : (T + C - 1)/C;
}

/* Items of node j of the k nodes (btEdgeNodes) holding T items at capacity
** C: C each, except that when the last would hold fewer than C/2 (k >= 2),
** the last two share their C+r items evenly, both then at least C/2. */
static int btEdgeFill(int64_t j, int64_t k, int64_t T, int C){
  int64_t r = T - (k-1)*(int64_t)C;       /* the last node's share, 1..C */
  if( k==1 ) return (int)T;
  if( r>=C/2 || j<k-2 ) return j==k-1 ? (int)r : C;
  return j==k-2 ? (int)((C + r + 1)/2) : (int)((C + r)/2);
}

/* True if a batch of ascending keys starting at k may be appended by
** btAppend: the tree holds a key, and k is past its largest key and past
** every separator (the right edge's last separators bound all others). */
int btAppendable(HostOrderedStore *p, int64_t k){
  BtNode *pN = p->pRoot;
  BtLeaf *pL;
  if( p->nKey==0 ) return 0;
  while( !pN->isLeaf ){
    BtInner *pI = (BtInner*)pN;
    if( pI->h.n>1 && pI->aKey[pI->h.n-2]>=k ) return 0;
    pN = pI->apChild[pI->h.n-1];
  }
  pL = (BtLeaf*)pN;
  return pL->h.n>0 && pL->aKey[pL->h.n-1]<k;
}

/*
** Append n (> 0) entries with strictly ascending keys, the first greater
** than every key of the tree (which holds at least one), in O(n + height):
** the tree's last leaf is filled, then full new leaves follow it in the
** chain, and each level of the right edge takes the new nodes of the level
** below as children, filling its rightmost node and adding full new ones,
** with new roots above the old one while a level ends with more than one
** node.  On every level only the last two nodes of the edge may be less
** than full: when the last would be under half full they share evenly, so
** every node keeps btCheckTree's fill bounds (the nodes moved that way are
** the rightmost node's own, which is why it takes its items last).
**
** Separators: every separator of the tree is at most the tree's largest
** key (a child right of a separator holds a key, at rest), so the new keys
** lie past all of them; a new node's separator is the lower bound of its
** first child: that child's separator in the node it came from, or its
** first key for a new leaf.
**
** Every node the append needs is counted from n and the right edge's fill
** and taken before anything changes: GPUDS_NOMEM leaves the tree as it was.
** No leaf is freed and every old leaf keeps its first key, so the hint
** table stays sound (lookups of the new keys descend until it is rebuilt).
*/
int btAppend(HostOrderedStore *p, size_t n, const int64_t *aKey,
                    const uint64_t *aVal){
  BtNode *aSpine[BT_MAX_HEIGHT];   /* [l]: rightmost node of level l (0: leaves) */
  int64_t aNew[BT_MAX_HEIGHT];     /* [l]: nodes added right of it */
  int64_t aOff[BT_MAX_HEIGHT];     /* [l]: index of its first in apNew */
  int h = p->nHeight, hNew, l;
  int64_t nAlloc = 0, nLeafNew, j;
  BtNode **apNew = 0;              /* the nodes taken, level by level */
  int64_t *aLow = 0;               /* the lower bound of each */
  HostOrderedStore *pSlab;
  BtNode *pN = p->pRoot;

  assert( n>0 && p->nKey>0 );
  for(l=h-1; l>=0; l--){
    aSpine[l] = pN;
    if( l>0 ) pN = ((BtInner*)pN)->apChild[pN->n-1];
  }

  /* Count.  A level above the old root has a new node of one child (the
  ** level below's old rightmost node) as its rightmost node. */
  aNew[0] = btEdgeNodes((int64_t)aSpine[0]->n + (int64_t)n, BT_LEAF_MAX) - 1;
  for(l=1; l<h || aNew[l-1]>0; l++){
    if( l>=BT_MAX_HEIGHT ){
      return btError(p, GPUDS_NOMEM, "b+tree: height limit reached");
    }
    aNew[l] = aNew[l-1]==0 ? 0
            : btEdgeNodes((l<h ? aSpine[l]->n : 1) + aNew[l-1], BT_FANOUT) - 1;
  }
  hNew = l;
  for(l=0; l<hNew; l++){
    if( l>=h ) nAlloc++;                   /* the new rightmost node */
    aOff[l] = nAlloc;
    nAlloc += aNew[l];
  }
  nLeafNew = aNew[0];

  /* Take every node. */
  if( nAlloc>0 ){
    if( (uint64_t)nAlloc > ((size_t)-1)/(sizeof(BtNode*)+sizeof(int64_t)) ){
      return btError(p, GPUDS_NOMEM, "b+tree: append too large");
    }
    apNew = (BtNode**)malloc((size_t)nAlloc*sizeof(BtNode*));
    aLow = (int64_t*)malloc((size_t)nAlloc*sizeof(int64_t));
    if( apNew==0 || aLow==0 ){ j = 0; goto no_mem; }
    pSlab = btSlabsWanted(p->nLeaf + nLeafNew) ? p : 0;
    for(j=0; j<nAlloc; j++){
      apNew[j] = j<nLeafNew ? (BtNode*)btNewLeaf(0, pSlab) : (BtNode*)btNewInner(0);
      if( apNew[j]==0 ) goto no_mem;
    }
  }

  /* Leaves: the sequence is the last leaf's entries, then the array's.
  ** The new leaves first (they may take the last leaf's tail), then it. */
  {
    BtLeaf *pL = (BtLeaf*)aSpine[0];
    int64_t e = pL->h.n, T = e + (int64_t)n, k = nLeafNew + 1, s;
    int c0 = btEdgeFill(0, k, T, BT_LEAF_MAX);
    BtLeaf *pPrev = pL;
    s = c0;
    for(j=1; j<k; j++){
      BtLeaf *pX = (BtLeaf*)apNew[j-1];
      int c = btEdgeFill(j, k, T, BT_LEAF_MAX), i = 0;
      for(; i<c && s<e; i++, s++){                 /* from the last leaf */
        pX->aKey[i] = pL->aKey[s];
        pX->aVal[i] = pL->aVal[s];
      }
      memcpy(&pX->aKey[i], &aKey[s-e], (size_t)(c-i)*sizeof(int64_t));
      memcpy(&pX->aVal[i], &aVal[s-e], (size_t)(c-i)*sizeof(uint64_t));
      s += c-i;
      pX->h.n = c;
      pX->pPrev = pPrev;
      pPrev->pNext = pX;
      pPrev = pX;
      aLow[j-1] = pX->aKey[0];
    }
    pPrev->pNext = 0;
    if( c0>e ){
      memcpy(&pL->aKey[e], aKey, (size_t)(c0-e)*sizeof(int64_t));
      memcpy(&pL->aVal[e], aVal, (size_t)(c0-e)*sizeof(uint64_t));
    }
    pL->h.n = c0;
  }

  /* Inner levels: the sequence is the rightmost node's children, then the
  ** new nodes of the level below. */
  for(l=1; l<hNew && aNew[l-1]>0; l++){
    BtInner *pP;
    BtNode **apBelow = &apNew[aOff[l-1]];
    int64_t *aLowBelow = &aLow[aOff[l-1]];
    int64_t e, T, k = aNew[l] + 1, s;
    int c0, i;
    if( l<h ){
      pP = (BtInner*)aSpine[l];
    }else{
      pP = (BtInner*)apNew[aOff[l]-1];
      pP->apChild[0] = aSpine[l-1];
      pP->h.n = 1;
      aSpine[l] = &pP->h;
    }
    e = pP->h.n;
    T = e + aNew[l-1];
    c0 = btEdgeFill(0, k, T, BT_FANOUT);
    s = c0;
    for(j=1; j<k; j++){
      BtInner *pX = (BtInner*)apNew[aOff[l]+j-1];
      int c = btEdgeFill(j, k, T, BT_FANOUT);
      aLow[aOff[l]+j-1] = s<e ? pP->aKey[s-1] : aLowBelow[s-e];
      for(i=0; i<c; i++, s++){
        pX->apChild[i] = s<e ? pP->apChild[s] : apBelow[s-e];
        if( i>0 ) pX->aKey[i-1] = s<e ? pP->aKey[s-1] : aLowBelow[s-e];
      }
      pX->h.n = c;
    }
    for(s=e; s<c0; s++){
      pP->apChild[s] = apBelow[s-e];
      pP->aKey[s-1] = aLowBelow[s-e];
    }
    pP->h.n = c0;
  }
  if( hNew>h ){
    p->pRoot = aSpine[hNew-1];
    p->nHeight = hNew;
  }
  p->nKey += (int64_t)n;
  p->nLeaf += nLeafNew;
  p->nInner += nAlloc - nLeafNew;
  free(apNew);
  free(aLow);
  return GPUDS_OK;

no_mem:
  while( j-- > 0 ) btFreeNode(p, apNew[j]);
  free(apNew);
  free(aLow);
  return btError(p, GPUDS_NOMEM, "b+tree: out of memory appending %zu entries",
                 n);
}

/* ---------------------------------------------------------------------- */
/* A rebuild from a merge.                                                 */

/*
** Replace the tree of p by one built from the merge of its entries with
** the n entries aKey/aVal (strictly ascending; on equal keys the array's
** value wins), leaves full.  GPUDS_OK, or GPUDS_NOMEM with the tree as it
** was (the new tree is built whole before the old one goes).
*/
int btRebuild(HostOrderedStore *p, size_t n, const int64_t *aKey,
              const uint64_t *aVal){
  BtSource src;
  int64_t nEntry = 0, k;
  uint64_t v;
  BtNode *pRoot;
  int nHeight, rc;
  int64_t nLeaf, nInner;

  memset(&src, 0, sizeof(src));
  src.aKey = aKey;
  src.aVal = aVal;
  src.n = n;
  if( p->nKey==0 ){
    nEntry = (int64_t)n;
  }else{
    src.pL = btFindLeaf(p, INT64_MIN);
    btSourceSettle(&src);
    while( btSourceNext(&src, &k, &v) ) nEntry++;
    src.pL = btFindLeaf(p, INT64_MIN);
    src.iL = 0;
    src.i = 0;
    btSourceSettle(&src);
  }
  rc = btBuild(p, nEntry, &src, &pRoot, &nHeight, &nLeaf, &nInner);
  if( rc==GPUDS_OK ) btInstall(p, pRoot, nHeight, nEntry, nLeaf, nInner);
  return rc;
}
