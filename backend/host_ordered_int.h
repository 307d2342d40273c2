/*
** host_ordered_int.h -- what the files of the host B+tree (host_ordered*.c)
** share: the node layout, the store, the search (inline: every lookup and
** batch runs it), and each file's entry points.  The design is described
** at the top of host_ordered.c.
*/
#ifndef GPUDS_HOST_ORDERED_INT_H
#define GPUDS_HOST_ORDERED_INT_H

#include "gpuds_backend.h"
#include "gpuds_slab.h"
#include <stddef.h>
#include <stdint.h>

#define BT_LEAF_MAX   64                 /* entries in a leaf, at most */
#define BT_LEAF_MIN   (BT_LEAF_MAX/2)    /* entries in a non-root leaf, at least */
#define BT_FANOUT     64                 /* children of an inner node, at most */
#define BT_INNER_MIN  (BT_FANOUT/2)      /* children of a non-root inner node */
#define BT_MAX_HEIGHT 40                 /* far beyond 2^64 keys at min fill */
/* A bulk load of at least 1/BT_REBUILD_DIV of the tree's entries rebuilds
** the tree from the merge (O(old+new), full leaves); a smaller one inserts
** key by key (O(new log old)), cheaper while new is small against old. */
#define BT_REBUILD_DIV 16
/* The hint table is (re)built after nLeaf/BT_HINT_REBUILD_DIV descents (and
** at least BT_HINT_MIN_DESCENTS) of lookups: its build reads the inner
** nodes only, a few ns a leaf, so the descents pay for it many times over. */
#define BT_HINT_REBUILD_DIV  4
#define BT_HINT_MIN_DESCENTS 64
/* Leaf slabs (see the header). */
#ifndef BT_SLAB_MIN_LEAVES                  /* (tests build with a small one) */
# define BT_SLAB_MIN_LEAVES 2048             /* smaller trees malloc() leaves */
#endif
#define BT_LEAF_MALLOC     1                 /* h.isLeaf of a malloc()ed leaf */
#define BT_LEAF_SLAB       2                 /* h.isLeaf of a slab's leaf */

typedef struct BtNode BtNode;
typedef struct BtLeaf BtLeaf;
typedef struct BtInner BtInner;

/* The header common to both kinds of node. */
struct BtNode {
  int n;         /* leaf: number of entries; inner: number of children */
  int isLeaf;    /* 0: inner; BT_LEAF_MALLOC or BT_LEAF_SLAB: a leaf */
};

struct BtLeaf {
  BtNode h;
  BtLeaf *pPrev, *pNext;          /* neighbours in key order, or NULL */
  int64_t aKey[BT_LEAF_MAX];      /* strictly ascending */
  uint64_t aVal[BT_LEAF_MAX];
};

struct BtInner {
  BtNode h;
  int64_t aKey[BT_FANOUT-1];      /* h.n-1 separators, strictly ascending */
  BtNode *apChild[BT_FANOUT];     /* h.n children */
};

/* The hint table (host_ordered_lookup.c): slot j holds the leaf a descent
** reaches for the key iMin + (j << nShift).  One mapping, replaced whole
** when a lookup builds it again, so that lookups on other threads read
** either the old table or the new one. */
typedef struct BtHint BtHint;
struct BtHint {
  size_t nMap;          /* bytes mapped */
  int64_t nHint;        /* slots */
  int64_t iMin;         /* the key of slot 0 */
  int64_t iMax;         /* keys above this have no slot */
  int nShift;
  BtLeaf *a[1];         /* nHint slots */
};

typedef struct HostOrderedStore HostOrderedStore;
struct HostOrderedStore {
  BtNode *pRoot;        /* never NULL: an empty tree is one empty leaf */
  int nHeight;          /* levels: 1 when the root is a leaf */
  int64_t nKey;         /* entries held */
  int64_t nLeaf;        /* leaves allocated */
  int64_t nInner;       /* inner nodes allocated */
  BtHint *pHint;        /* the hint table (see the header), or NULL; read
                        ** and replaced atomically (lookups may run on
                        ** several threads at once) */
  BtHint *pRetired;     /* a table a lookup replaced: lookups on other
                        ** threads may still read it, so it is unmapped by
                        ** the next call that changes the tree */
  int64_t nDescent;     /* lookups' descents since the table was built or
                        ** dropped (atomic) */
  int bHintBusy;        /* a lookup is building the table (atomic flag) */
  GpudsSlabPool slabs;  /* its leaf slabs (see the header); nLive counts
                        ** the leaves of any tree of the store (a bulk
                        ** build takes them before the old tree goes) */
  char zErr[200];       /* message of the last failed call */
};

/* ---------------------------------------------------------------------- */
/* The search (inline).                                                    */

/* Index of the first of the n keys of a[] that is >= k; n if none is. */
static inline int btLowerBound(const int64_t *a, int n, int64_t k){
  const int64_t *base = a;
  if( n<=0 ) return 0;
  while( n>1 ){
    int half = n/2;
    base = (base[half]<k) ? base+half : base;
    n -= half;
  }
  return (int)(base - a) + (*base<k);
}

/* Index of the first of the n keys of a[] that is > k; n if none is.  For
** the separators of an inner node, this is the child that may hold k. */
static inline int btUpperBound(const int64_t *a, int n, int64_t k){
  const int64_t *base = a;
  if( n<=0 ) return 0;
  while( n>1 ){
    int half = n/2;
    base = (base[half]<=k) ? base+half : base;
    n -= half;
  }
  return (int)(base - a) + (*base<=k);
}

/* Prefetch the n keys of a[] (a node's, n >= 1) before a binary search of
** them: the search's dependent reads then hit lines already on their way
** instead of missing the cache one after another (a macro: see host_hash.c
** on prefetch-only functions). */
#define BT_PREFETCH_KEYS(a, n) do{                                        \
  const char *z_ = (const char*)(a), *zEnd_ = (const char*)((a)+(n));     \
  for(; z_<zEnd_; z_+=64) __builtin_prefetch(z_);                         \
  __builtin_prefetch(zEnd_-1);                                            \
}while(0)

/* The leaf whose key range holds k; its keys are being prefetched. */
static inline BtLeaf *btFindLeaf(HostOrderedStore *p, int64_t k){
  BtNode *pN = p->pRoot;
  while( !pN->isLeaf ){
    BtInner *pI = (BtInner*)pN;
    if( pI->h.n>1 ) BT_PREFETCH_KEYS(pI->aKey, pI->h.n-1);
    pN = pI->apChild[btUpperBound(pI->aKey, pI->h.n-1, k)];
  }
  if( pN->n>0 ) BT_PREFETCH_KEYS(((BtLeaf*)pN)->aKey, pN->n);
  return (BtLeaf*)pN;
}

/* The leaf that holds k if any leaf does, found from pHint (a leaf of the
** tree, may be NULL) without a descent from the root when k lies within the
** keys of pHint or of the leaf after it; else by btFindLeaf().  Sound at any
** moment because the leaf chain holds every key in ascending order; for
** lookups and removals only (an absent key's leaf may differ from where an
** insert must put it). */
static inline BtLeaf *btFindLeafNear(HostOrderedStore *p, BtLeaf *pHint, int64_t k){
  if( pHint && pHint->h.n>0 && k>=pHint->aKey[0] ){
    if( k<=pHint->aKey[pHint->h.n-1] ) return pHint;
    pHint = pHint->pNext;
    if( pHint && pHint->h.n>0 && k>=pHint->aKey[0] && k<=pHint->aKey[pHint->h.n-1] ){
      return pHint;
    }
  }
  return btFindLeaf(p, k);
}

/* Look k up in leaf pL (btFindLeaf or btFindLeafNear): *pFound is 1 and
** *pVal its value if present, else 0 and 0. */
static inline void btGetIn(BtLeaf *pL, int64_t k, uint8_t *pFound, uint64_t *pVal){
  int i = btLowerBound(pL->aKey, pL->h.n, k);
  if( i<pL->h.n && pL->aKey[i]==k ){
    *pFound = 1;
    *pVal = pL->aVal[i];
  }else{
    *pFound = 0;
    *pVal = 0;
  }
}

/* ---------------------------------------------------------------------- */
/* Each file's entry points.                                               */

/* host_ordered_node.c: nodes taken and given back; the error message */
int btError(HostOrderedStore *p, int rc, const char *zFmt, ...)
  __attribute__((format(printf, 3, 4)));
BtLeaf *btNewLeaf(HostOrderedStore *pCount, HostOrderedStore *pSlab);
int btSlabsWanted(int64_t nLeaf);
HostOrderedStore *btSlabFor(HostOrderedStore *p);
void btFreeNode(HostOrderedStore *p, BtNode *pN);
BtInner *btNewInner(HostOrderedStore *p);
void btFreeTree(HostOrderedStore *p, BtNode *pN);

/* host_ordered_lookup.c: the hint table and point lookups */
void btHintDrop(HostOrderedStore *p);
int64_t btHintSlots(HostOrderedStore *p);
void btHintRetire(HostOrderedStore *p);
int btLookup(gpuds_store *pStore, size_t n, const int64_t *aKey,
             uint8_t *aFound, uint64_t *aVal);

/* host_ordered_batch.c: all-or-nothing batches */
int btApply(HostOrderedStore *p, size_t n, const uint8_t *aOp,
            const int64_t *aKey, const uint64_t *aVal,
            uint8_t *aFound, uint64_t *aOld);

/* host_ordered_build.c: rebuilds and appends */
int btRebuild(HostOrderedStore *p, size_t n, const int64_t *aKey,
              const uint64_t *aVal);
int btAppendable(HostOrderedStore *p, int64_t k);
int btAppend(HostOrderedStore *p, size_t n, const int64_t *aKey,
             const uint64_t *aVal);

/* host_ordered_check.c: xInfo and xCheck */
void btInfo(gpuds_store *pStore, char *zBuf, size_t nBuf);
int btCheckTree(gpuds_store *pStore);

#endif /* GPUDS_HOST_ORDERED_INT_H */
