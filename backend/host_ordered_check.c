/*
** host_ordered_check.c -- the host B+tree described (xInfo) and checked
** (xCheck: every invariant of the tree, its leaf slabs and its hint table).
*/
#include "host_ordered_int.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A JSON description; "{}" if it does not fit in nBuf bytes. */
void btInfo(gpuds_store *pStore, char *zBuf, size_t nBuf){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  int64_t nByte = (int64_t)sizeof(HostOrderedStore)
                + (p->nLeaf-p->slabs.nLive)*(int64_t)sizeof(BtLeaf)
                + p->slabs.nSlab*(int64_t)GPUDS_SLAB_SIZE
                + p->nInner*(int64_t)sizeof(BtInner)
                + btHintSlots(p)*(int64_t)sizeof(BtLeaf*);
  int nw;
  if( nBuf==0 ) return;
  nw = snprintf(zBuf, nBuf,
      "{\"structure\":\"b+tree\",\"keys\":%lld,\"height\":%d,\"nodes\":%lld,"
      "\"leaves\":%lld,\"leaf_capacity\":%d,\"fanout\":%d,\"hint_slots\":%lld,"
      "\"bytes\":%lld}",
      (long long)p->nKey, p->nHeight, (long long)(p->nLeaf+p->nInner),
      (long long)p->nLeaf, BT_LEAF_MAX, BT_FANOUT, (long long)btHintSlots(p),
      (long long)nByte);
  if( nw<0 || (size_t)nw>=nBuf ){
    if( nBuf>=3 ) memcpy(zBuf, "{}", 3); else zBuf[0] = 0;
  }
}

/* State of an xCheck walk. */
typedef struct BtCheck BtCheck;
struct BtCheck {
  HostOrderedStore *p;
  int leafDepth;        /* depth of the first leaf reached, -1 before */
  int64_t nKey, nLeaf, nInner;
  int64_t nSlabLeaf;    /* leaves of the tree in slabs */
  BtLeaf *pLast;        /* the previous leaf in key order */
};

/* Check leaf pL's origin: a malloc()ed leaf, or a slot handed out by a slab
** of the store's pool (gpudsSlabCheckList has checked the pool and zeroed
** its counts of slots seen). */
static int btCheckLeafOrigin(BtCheck *pC, BtLeaf *pL){
  HostOrderedStore *p = pC->p;
  if( pL->h.isLeaf==BT_LEAF_SLAB ){
    if( !gpudsSlabSee(&p->slabs, pL) ){
      return btError(p, GPUDS_ERROR,
          "b+tree invariant: slab leaf is not a slot of one of the store's slabs");
    }
    pC->nSlabLeaf++;
  }else if( pL->h.isLeaf!=BT_LEAF_MALLOC ){
    return btError(p, GPUDS_ERROR, "b+tree invariant: leaf kind %d unknown",
                   pL->h.isLeaf);
  }
  return GPUDS_OK;
}

/*
** Check the subtree pN at depth d whose keys must lie in [lo,hi) (bounded
** below only if bLo, above only if bHi).  Returns GPUDS_OK or an error with
** the failed invariant recorded.
*/
static int btCheckNode(BtCheck *pC, BtNode *pN, int d, int bLo, int64_t lo,
                       int bHi, int64_t hi){
  HostOrderedStore *p = pC->p;
  int isRoot = pN==p->pRoot;
  int i, rc;
  if( d>=BT_MAX_HEIGHT ){
    return btError(p, GPUDS_ERROR, "b+tree invariant: depth beyond %d", d);
  }
  if( pN->isLeaf ){
    BtLeaf *pL = (BtLeaf*)pN;
    pC->nLeaf++;
    rc = btCheckLeafOrigin(pC, pL);
    if( rc ) return rc;
    if( pL->h.n<0 || pL->h.n>BT_LEAF_MAX ){
      return btError(p, GPUDS_ERROR,
                     "b+tree invariant: leaf entry count %d out of range",
                     pL->h.n);
    }
    if( !isRoot && pL->h.n<BT_LEAF_MIN ){
      return btError(p, GPUDS_ERROR,
          "b+tree invariant: fill bound: leaf with %d entries (min %d)",
          pL->h.n, BT_LEAF_MIN);
    }
    if( pC->leafDepth<0 ) pC->leafDepth = d;
    if( d!=pC->leafDepth ){
      return btError(p, GPUDS_ERROR,
          "b+tree invariant: leaves at depths %d and %d", pC->leafDepth, d);
    }
    for(i=0; i<pL->h.n; i++){
      int64_t k = pL->aKey[i];
      if( i>0 && k<=pL->aKey[i-1] ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: keys not strictly ascending within a leaf");
      }
      if( (bLo && k<lo) || (bHi && k>=hi) ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: separator keys: leaf key %lld outside its "
            "parent's range", (long long)k);
      }
    }
    if( pL->pPrev!=pC->pLast ){
      return btError(p, GPUDS_ERROR,
          "b+tree invariant: leaf chain: pPrev is not the previous leaf");
    }
    if( pC->pLast ){
      if( pC->pLast->pNext!=pL ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: leaf chain: pNext is not the next leaf");
      }
      if( pL->h.n>0 && pC->pLast->h.n>0
       && pC->pLast->aKey[pC->pLast->h.n-1]>=pL->aKey[0] ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: keys not ascending across leaves");
      }
    }
    pC->pLast = pL;
    pC->nKey += pL->h.n;
    return GPUDS_OK;
  }else{
    BtInner *pI = (BtInner*)pN;
    pC->nInner++;
    if( pI->h.n<(isRoot ? 2 : BT_INNER_MIN) || pI->h.n>BT_FANOUT ){
      return btError(p, GPUDS_ERROR,
          "b+tree invariant: fill bound: %s inner node with %d children",
          isRoot ? "root" : "non-root", pI->h.n);
    }
    for(i=0; i<pI->h.n-1; i++){
      int64_t k = pI->aKey[i];
      if( i>0 && k<=pI->aKey[i-1] ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: separator keys not strictly ascending");
      }
      if( (bLo && k<=lo) || (bHi && k>=hi) ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: separator key %lld outside its parent's range",
            (long long)k);
      }
    }
    for(i=0; i<pI->h.n; i++){
      int bL = i>0 ? 1 : bLo, bH = i<pI->h.n-1 ? 1 : bHi;
      int64_t l = i>0 ? pI->aKey[i-1] : lo;
      int64_t h = i<pI->h.n-1 ? pI->aKey[i] : hi;
      if( pI->apChild[i]==0 ){
        return btError(p, GPUDS_ERROR, "b+tree invariant: NULL child");
      }
      rc = btCheckNode(pC, pI->apChild[i], d+1, bL, l, bH, h);
      if( rc ) return rc;
    }
    return GPUDS_OK;
  }
}

/* Verify every invariant of the tree; see btCheckNode. */
int btCheckTree(gpuds_store *pStore){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  BtCheck c;
  char zSlab[120];
  int rc;
  memset(&c, 0, sizeof(c));
  c.p = p;
  c.leafDepth = -1;
  if( p->pRoot==0 ){
    return btError(p, GPUDS_ERROR, "b+tree invariant: no root");
  }
  if( !gpudsSlabCheckList(&p->slabs, zSlab, sizeof(zSlab)) ){
    return btError(p, GPUDS_ERROR, "b+tree invariant: %s", zSlab);
  }
  rc = btCheckNode(&c, p->pRoot, 0, 0, 0, 0, 0);
  if( rc ) return rc;
  {
    /* Every slab leaf is in the tree: each slab's live count is its leaves
    ** the walk met (which also puts every slab leaf met on the list). */
    if( !gpudsSlabCheckSeen(&p->slabs, zSlab, sizeof(zSlab)) ){
      return btError(p, GPUDS_ERROR, "b+tree invariant: %s", zSlab);
    }
    if( c.nSlabLeaf!=p->slabs.nLive ){
      return btError(p, GPUDS_ERROR,
          "b+tree invariant: %lld slab leaves recorded, %lld in the tree",
          (long long)p->slabs.nLive, (long long)c.nSlabLeaf);
    }
  }
  if( c.pLast && c.pLast->pNext!=0 ){
    return btError(p, GPUDS_ERROR,
                   "b+tree invariant: leaf chain: last leaf has a successor");
  }
  if( c.leafDepth+1!=p->nHeight ){
    return btError(p, GPUDS_ERROR,
        "b+tree invariant: height %d recorded, %d found", p->nHeight,
        c.leafDepth+1);
  }
  if( c.nKey!=p->nKey ){
    return btError(p, GPUDS_ERROR,
        "b+tree invariant: count: %lld recorded, %lld found",
        (long long)p->nKey, (long long)c.nKey);
  }
  if( c.nLeaf!=p->nLeaf || c.nInner!=p->nInner ){
    return btError(p, GPUDS_ERROR,
        "b+tree invariant: node count: %lld+%lld recorded, %lld+%lld found",
        (long long)p->nLeaf, (long long)p->nInner,
        (long long)c.nLeaf, (long long)c.nInner);
  }
  {
    /* Every slot of the hint table is a leaf of the tree (a descent to its
    ** first key reaches it): a freed leaf would have dropped the table. */
    BtHint *pH = p->pHint;
    int64_t j;
    for(j=0; pH && j<pH->nHint; j++){
      BtLeaf *pL = pH->a[j];
      if( pL==0 || (pL->h.n>0 ? btFindLeaf(p, pL->aKey[0])!=pL : &pL->h!=p->pRoot) ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: hint slot %lld is not a leaf of the tree",
            (long long)j);
      }
    }
  }
  return GPUDS_OK;
}
