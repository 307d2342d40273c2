/*
** host_ordered.c -- the host (CPU) ordered store: a B+tree from int64_t keys
** (the full range, no key value reserved) to uint64_t words.
**
** It is the fallback where no GPU exists and the oracle the GPU kernels are
** tested against, so it aims first at being exactly right, then at speed.
**
** Layout.  Leaves hold up to BT_LEAF_MAX entries, keys and values in two
** contiguous arrays, and are chained both ways for scans.  Inner nodes hold
** up to BT_FANOUT children and one separator key fewer: child i holds the
** keys k with aKey[i-1] <= k < aKey[i].  Every node but the root is at least
** half full; all leaves are at the same depth.
**
** The hint table (point lookups).  A lookup of a random key in a big tree
** misses the cache at each level below the top ones, each miss waiting for
** the one above.  So the store keeps, beside the tree, a table of leaf
** pointers indexed by the key's offset from the smallest key, shifted:
** slot j holds the leaf a descent would reach for the key
** iHintMin + (j << nHintShift), and a lookup reads one slot, then checks
** that leaf (or the one after it) holds the key's range, which the leaf
** chain makes sound whatever the table says; else it descends.  About two
** slots per leaf (16 bytes a leaf, a quarter byte a key), built from the
** inner nodes alone.  The table only ever points at live leaves: freeing a
** leaf (a merge, a rebuild, the store's end) drops it; splits only make it
** stale (more descents), and after nLeaf/BT_HINT_REBUILD_DIV descents since
** it was built or dropped, a lookup builds it again.
**
** Leaf slabs (huge pages).  A lookup in a big tree misses the TLB too: its
** leaves span tens of thousands of small pages, and on a virtual machine
** each TLB miss is a two-level page walk.  So the leaves of a tree with
** BT_SLAB_MIN_LEAVES leaves or more come from slabs: 2 MiB mappings aligned
** to their size and advised as one transparent huge page (MADV_HUGEPAGE),
** each cut into slots of whole cache lines placed so that a leaf's keys
** start a line (its 64 keys on 8 lines, not 9): the store's slab pool
** (backend/slab.c), which lists its slabs and unmaps a slab whose last leaf
** goes.  A leaf
** says where it came from (h.isLeaf: BT_LEAF_MALLOC or BT_LEAF_SLAB), so
** every node is freed by btFreeNode.  Smaller trees malloc() their leaves
** (they fit the TLB anyway, and tests/c/faults.c fails their allocations),
** and so does every tree under GPUDS_HUGE_PAGES=0.
**
** Appends.  Keys written in order reach the tree as sorted batches whose
** first key lies past the largest (and so past every separator).  Such a
** batch, by xBulkLoad or as an all-upsert xBatch, is appended on the right
** edge in O(batch) (btAppend): the last leaf filled, full new leaves
** chained after it, each level's rightmost node filled with the new nodes
** below and full new ones added, new roots on top; only the last two nodes
** of a level may be less than full, and both at least half.  Every node is
** taken before the tree changes (all-or-nothing).  Neither a rebuild of the
** whole tree (O(tree) a flush: quadratic over a load in order) nor key by
** key inserts (half-full leaves from right-edge splits).
**
** All-or-nothing batches.  The only failure a batch can meet half way is an
** allocation failure while splitting.  A batch therefore applies its
** operations in order WITHOUT merging underfull nodes (deletes only remove
** entries; splits only narrow the key ranges of leaves), and remembers the
** operations that left a leaf underfull.  If an allocation fails, the
** operations already applied are undone in reverse order: an undone insert
** removes a key, an undone update writes the old value back, and an undone
** delete re-inserts a key into a leaf that provably has room (its range is a
** subset of the range of the leaf the key was deleted from, and that leaf
** had room right after the delete), so the undo needs no memory.  Finally,
** whether the batch succeeded or not, the underfull nodes are repaired by
** merging and redistributing, which frees memory but never allocates.
*/
#include "gpuds_backend.h"
#include "gpuds_config.h"
#include "gpuds_slab.h"
#include <assert.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

typedef struct HostOrderedStore HostOrderedStore;
struct HostOrderedStore {
  BtNode *pRoot;        /* never NULL: an empty tree is one empty leaf */
  int nHeight;          /* levels: 1 when the root is a leaf */
  int64_t nKey;         /* entries held */
  int64_t nLeaf;        /* leaves allocated */
  int64_t nInner;       /* inner nodes allocated */
  BtLeaf **aHint;       /* the hint table (see the header), or NULL */
  int64_t nHint;        /* its slots; 0 when there is none */
  int64_t iHintMin;     /* the key of slot 0 */
  int64_t iHintMax;     /* keys above this have no slot */
  int nHintShift;       /* slot j: key iHintMin + (j << nHintShift) */
  int64_t nDescent;     /* lookups' descents since the table was built or dropped */
  GpudsSlabPool slabs;  /* its leaf slabs (see the header); nLive counts
                        ** the leaves of any tree of the store (a bulk
                        ** build takes them before the old tree goes) */
  char zErr[200];       /* message of the last failed call */
};

/* Record a message for xErrmsg() and return rc. */
static int btError(HostOrderedStore *p, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  vsnprintf(p->zErr, sizeof(p->zErr), zFmt, ap);
  va_end(ap);
  return rc;
}

/* Index of the first of the n keys of a[] that is >= k; n if none is. */
static int btLowerBound(const int64_t *a, int n, int64_t k){
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
static int btUpperBound(const int64_t *a, int n, int64_t k){
  const int64_t *base = a;
  if( n<=0 ) return 0;
  while( n>1 ){
    int half = n/2;
    base = (base[half]<=k) ? base+half : base;
    n -= half;
  }
  return (int)(base - a) + (*base<=k);
}

/* A new empty leaf, or NULL when out of memory: from pSlab's slabs if
** pSlab is not NULL, else malloc()ed.  Counted in pCount->nLeaf if pCount
** is not NULL (a bulk build counts its own). */
static BtLeaf *btNewLeaf(HostOrderedStore *pCount, HostOrderedStore *pSlab){
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
static int btSlabsWanted(int64_t nLeaf){
  return nLeaf>=BT_SLAB_MIN_LEAVES && gpudsConfig()->bHugePages;
}

/* The store whose slabs a new leaf of p's tree comes from: p once the tree
** is big (see the header), else NULL (malloc()). */
static HostOrderedStore *btSlabFor(HostOrderedStore *p){
  return btSlabsWanted(p->nLeaf) ? p : 0;
}

/* Free node pN of p (not counted: the caller adjusts nLeaf/nInner). */
static void btFreeNode(HostOrderedStore *p, BtNode *pN){
  if( pN->isLeaf==BT_LEAF_SLAB ) gpudsSlabGive(&p->slabs, pN);
  else free(pN);
}

/* A new inner node with no children, or NULL.  Counted in p->nInner. */
static BtInner *btNewInner(HostOrderedStore *p){
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
static void btFreeTree(HostOrderedStore *p, BtNode *pN){
  if( pN==0 ) return;
  if( !pN->isLeaf ){
    BtInner *pI = (BtInner*)pN;
    int i;
    for(i=0; i<pI->h.n; i++) btFreeTree(p, pI->apChild[i]);
  }
  btFreeNode(p, pN);
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
static BtLeaf *btFindLeaf(HostOrderedStore *p, int64_t k){
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
static BtLeaf *btFindLeafNear(HostOrderedStore *p, BtLeaf *pHint, int64_t k){
  if( pHint && pHint->h.n>0 && k>=pHint->aKey[0] ){
    if( k<=pHint->aKey[pHint->h.n-1] ) return pHint;
    pHint = pHint->pNext;
    if( pHint && pHint->h.n>0 && k>=pHint->aKey[0] && k<=pHint->aKey[pHint->h.n-1] ){
      return pHint;
    }
  }
  return btFindLeaf(p, k);
}

/* Forget the hint table (a leaf it may point at is about to be freed, or
** the tree replaced); lookups descend until it is built again. */
static void btHintDrop(HostOrderedStore *p){
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

/* Look k up in leaf pL (btFindLeaf or btFindLeafNear): *pFound is 1 and
** *pVal its value if present, else 0 and 0. */
static void btGetIn(BtLeaf *pL, int64_t k, uint8_t *pFound, uint64_t *pVal){
  int i = btLowerBound(pL->aKey, pL->h.n, k);
  if( i<pL->h.n && pL->aKey[i]==k ){
    *pFound = 1;
    *pVal = pL->aVal[i];
  }else{
    *pFound = 0;
    *pVal = 0;
  }
}

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

static int btAppendable(HostOrderedStore *p, int64_t k);
static int btAppend(HostOrderedStore *p, size_t n, const int64_t *aKey,
                    const uint64_t *aVal);

/*
** The batch engine behind xBatch and the insert path of xBulkLoad.  aOp
** NULL means every operation is an upsert.  See the comment at the top of
** the file for how it stays all-or-nothing.
*/
static int btApply(HostOrderedStore *p, size_t n, const uint8_t *aOp,
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
static int btAppendable(HostOrderedStore *p, int64_t k){
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
static int btAppend(HostOrderedStore *p, size_t n, const int64_t *aKey,
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
/* The gpuds_store_ops methods.                                            */

/* An empty tree: one empty leaf as the root. */
static int btCreate(gpuds_store **ppStore, char **pzErr){
  HostOrderedStore *p = (HostOrderedStore*)malloc(sizeof(HostOrderedStore));
  *ppStore = 0;
  if( pzErr ) *pzErr = 0;
  if( p ){
    memset(p, 0, sizeof(*p));
    gpudsSlabPoolInit(&p->slabs, sizeof(BtLeaf), offsetof(BtLeaf, aKey));
    p->pRoot = (BtNode*)btNewLeaf(p, 0);
    if( p->pRoot==0 ){ free(p); p = 0; }
  }
  if( p==0 ){
    if( pzErr ){
      static const char zMsg[] = "b+tree: out of memory creating a store";
      *pzErr = (char*)malloc(sizeof(zMsg));
      if( *pzErr ) memcpy(*pzErr, zMsg, sizeof(zMsg));
    }
    return GPUDS_NOMEM;
  }
  p->nHeight = 1;
  *ppStore = (gpuds_store*)p;
  return GPUDS_OK;
}

/* Free the tree and the store.  NULL is a no-op. */
static void btDestroy(gpuds_store *pStore){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  if( p==0 ) return;
  btHintDrop(p);
  btFreeTree(p, p->pRoot);
  assert( p->slabs.nSlab==0 && p->slabs.nLive==0 );
  free(p);
}

/* A mixed batch, all-or-nothing (btApply). */
static int btBatch(gpuds_store *pStore, size_t n, const uint8_t *aOp,
                   const int64_t *aKey, const uint64_t *aVal,
                   uint8_t *aFound, uint64_t *aOld){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  if( n>0 && aOp==0 ){
    return btError(p, GPUDS_MISUSE, "xBatch: aOp is NULL");
  }
  return btApply(p, n, aOp, aKey, aVal, aFound, aOld);
}

/* Point lookups; never fails.  aFound or aVal may be NULL. */
static int btLookup(gpuds_store *pStore, size_t n, const int64_t *aKey,
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

/*
** The next page of an ordered scan.  Sets done when no entry in range is
** left after the page (it looks one entry ahead), else narrows lo (or hi)
** to just past the last key returned; a last key equal to the bound being
** narrowed ends the scan, so INT64_MAX/INT64_MIN never overflow.
*/
static int btScan(gpuds_store *pStore, gpuds_scan *pScan, size_t nMax,
                  int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  size_t nOut = 0;
  int64_t lo = pScan->lo, hi = pScan->hi;
  *pnOut = 0;
  if( pScan->done ) return GPUDS_OK;
  if( lo>hi ){
    pScan->done = 1;
    return GPUDS_OK;
  }
  if( nMax==0 ) return GPUDS_OK;
  if( !pScan->desc ){
    BtLeaf *pL = btFindLeaf(p, lo);
    int i = btLowerBound(pL->aKey, pL->h.n, lo);
    int bEnd = 1;
    while( pL ){
      for(; i<pL->h.n; i++){
        int64_t k = pL->aKey[i];
        if( k>hi ) goto asc_done;
        if( nOut==nMax ){ bEnd = 0; goto asc_done; }
        aKey[nOut] = k;
        if( aVal ) aVal[nOut] = pL->aVal[i];
        nOut++;
      }
      pL = pL->pNext;
      i = 0;
    }
  asc_done:
    if( nOut>0 ){
      int64_t kLast = aKey[nOut-1];
      if( kLast>=hi ) bEnd = 1; else pScan->lo = kLast+1;
    }
    pScan->done = bEnd;
  }else{
    BtLeaf *pL = btFindLeaf(p, hi);
    int i = btUpperBound(pL->aKey, pL->h.n, hi) - 1;
    int bEnd = 1;
    while( pL ){
      for(; i>=0; i--){
        int64_t k = pL->aKey[i];
        if( k<lo ) goto desc_done;
        if( nOut==nMax ){ bEnd = 0; goto desc_done; }
        aKey[nOut] = k;
        if( aVal ) aVal[nOut] = pL->aVal[i];
        nOut++;
      }
      pL = pL->pPrev;
      if( pL ) i = pL->h.n-1;
    }
  desc_done:
    if( nOut>0 ){
      int64_t kLast = aKey[nOut-1];
      if( kLast<=lo ) bEnd = 1; else pScan->hi = kLast-1;
    }
    pScan->done = bEnd;
  }
  *pnOut = nOut;
  return GPUDS_OK;
}

/* True unless aKey[0..n-1] is strictly ascending; sets *pi to the index of
** the first key out of order. */
static int btNotAscending(size_t n, const int64_t *aKey, size_t *pi){
  size_t i;
  for(i=1; i<n; i++){
    if( aKey[i]<=aKey[i-1] ){ *pi = i; return 1; }
  }
  return 0;
}

/*
** Insert n entries with strictly ascending keys.  An empty tree is built
** directly from the arrays; keys all past the tree's largest are appended
** on its right edge (btAppend, O(n)); otherwise a big load into a
** non-empty tree rebuilds it from the merge of the old entries and the new
** ones, and a small one inserts.
** A key already present is updated, as by an upsert.  All-or-nothing.
*/
static int btBulkLoad(gpuds_store *pStore, size_t n, const int64_t *aKey,
                      const uint64_t *aVal){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  size_t iBad;
  if( n==0 ) return GPUDS_OK;
  if( btNotAscending(n, aKey, &iBad) ){
    return btError(p, GPUDS_MISUSE,
                   "xBulkLoad: keys not strictly ascending at index %zu", iBad);
  }
  if( (uint64_t)n >= (uint64_t)INT64_MAX/2 ){
    return btError(p, GPUDS_NOMEM, "xBulkLoad: too many entries");
  }
  if( btAppendable(p, aKey[0]) ){
    /* keys written in order: O(n) on the right edge, whatever the sizes */
    return btAppend(p, n, aKey, aVal);
  }
  if( p->nKey==0 || (int64_t)n >= p->nKey/BT_REBUILD_DIV ){
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
    if( rc==GPUDS_OK ){
      btInstall(p, pRoot, nHeight, nEntry, nLeaf, nInner);
      return GPUDS_OK;
    }
    if( p->nKey==0 ){
      return btError(p, rc, "b+tree: out of memory bulk loading %zu entries",
                     n);
    }
    /* Not enough memory for a second tree: try inserting instead. */
  }
  return btApply(p, n, 0, aKey, aVal, 0, 0);
}

/* Number of keys held. */
static int64_t btCount(gpuds_store *pStore){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  return p->nKey;
}

/* A JSON description; "{}" if it does not fit in nBuf bytes. */
static void btInfo(gpuds_store *pStore, char *zBuf, size_t nBuf){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  int64_t nByte = (int64_t)sizeof(HostOrderedStore)
                + (p->nLeaf-p->slabs.nLive)*(int64_t)sizeof(BtLeaf)
                + p->slabs.nSlab*(int64_t)GPUDS_SLAB_SIZE
                + p->nInner*(int64_t)sizeof(BtInner)
                + p->nHint*(int64_t)sizeof(BtLeaf*);
  int nw;
  if( nBuf==0 ) return;
  nw = snprintf(zBuf, nBuf,
      "{\"structure\":\"b+tree\",\"keys\":%lld,\"height\":%d,\"nodes\":%lld,"
      "\"leaves\":%lld,\"leaf_capacity\":%d,\"fanout\":%d,\"hint_slots\":%lld,"
      "\"bytes\":%lld}",
      (long long)p->nKey, p->nHeight, (long long)(p->nLeaf+p->nInner),
      (long long)p->nLeaf, BT_LEAF_MAX, BT_FANOUT, (long long)p->nHint,
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
static int btCheckTree(gpuds_store *pStore){
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
    int64_t j;
    for(j=0; j<p->nHint; j++){
      BtLeaf *pL = p->aHint[j];
      if( pL==0 || (pL->h.n>0 ? btFindLeaf(p, pL->aKey[0])!=pL : &pL->h!=p->pRoot) ){
        return btError(p, GPUDS_ERROR,
            "b+tree invariant: hint slot %lld is not a leaf of the tree",
            (long long)j);
      }
    }
  }
  return GPUDS_OK;
}

/* Message of the last failed call, "" if none. */
static const char *btErrmsg(gpuds_store *pStore){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  return p ? p->zErr : "";
}

const gpuds_store_ops gpudsHostOrderedOps = {
  "host",
  GPUDS_ORDERED,
  btCreate,
  btDestroy,
  btBatch,
  btLookup,
  btScan,
  btBulkLoad,
  btCount,
  btInfo,
  btCheckTree,
  btErrmsg,
};
