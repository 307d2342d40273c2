/*
** host_ordered_node.c -- the host B+tree's nodes: a leaf taken from the
** store's slabs once the tree is big (or malloc()ed), an inner node
** malloc()ed, and either given back (see host_ordered.c, "Leaf slabs");
** and the store's error message, which every file of the tree sets.
*/
#include "host_ordered_int.h"
#include "gpuds_config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Record a message for xErrmsg() and return rc. */
int btError(HostOrderedStore *p, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  vsnprintf(p->zErr, sizeof(p->zErr), zFmt, ap);
  va_end(ap);
  return rc;
}

/* A new empty leaf, or NULL when out of memory: from pSlab's slabs if
** pSlab is not NULL, else malloc()ed.  Counted in pCount->nLeaf if pCount
** is not NULL (a bulk build counts its own). */
BtLeaf *btNewLeaf(HostOrderedStore *pCount, HostOrderedStore *pSlab){
  BtLeaf *pL = pSlab ? (BtLeaf*)gpudsSlabTake(&pSlab->slabs)
                    : (BtLeaf*)malloc(sizeof(BtLeaf));
  if( pL ){
    pL->h.n = 0;
    pL->h.isLeaf = pSlab ? BT_LEAF_SLAB : BT_LEAF_MALLOC;
    pL->pPrev = pL->pNext = 0;
    if( pCount ) pCount->nLeaf++;
  }
  return pL;
}

/* True if a tree of nLeaf leaves takes them from slabs: big enough, and
** huge pages not turned off (GPUDS_HUGE_PAGES=0: every leaf malloc()ed). */
int btSlabsWanted(int64_t nLeaf){
  return nLeaf>=BT_SLAB_MIN_LEAVES && gpudsConfig()->bHugePages;
}

/* The store whose slabs a new leaf of p's tree comes from: p once the tree
** is big (see the header), else NULL (malloc()). */
HostOrderedStore *btSlabFor(HostOrderedStore *p){
  return btSlabsWanted(p->nLeaf) ? p : 0;
}

/* Free node pN of p (not counted: the caller adjusts nLeaf/nInner). */
void btFreeNode(HostOrderedStore *p, BtNode *pN){
  if( pN->isLeaf==BT_LEAF_SLAB ) gpudsSlabGive(&p->slabs, pN);
  else free(pN);
}

/* A new inner node with no children, or NULL.  Counted in p->nInner. */
BtInner *btNewInner(HostOrderedStore *p){
  BtInner *pI = (BtInner*)malloc(sizeof(BtInner));
  if( pI ){
    pI->h.n = 0;
    pI->h.isLeaf = 0;
    if( p ) p->nInner++;
  }
  return pI;
}

/* Free the subtree rooted at pN, a tree of p (the leaf chain is not
** consulted; the counts are the caller's). */
void btFreeTree(HostOrderedStore *p, BtNode *pN){
  if( pN==0 ) return;
  if( !pN->isLeaf ){
    BtInner *pI = (BtInner*)pN;
    int i;
    for(i=0; i<pI->h.n; i++) btFreeTree(p, pI->apChild[i]);
  }
  btFreeNode(p, pN);
}
