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
** iMin + (j << nShift), and a lookup reads one slot, then checks
** that leaf (or the one after it) holds the key's range, which the leaf
** chain makes sound whatever the table says; else it descends.  About two
** slots per leaf (16 bytes a leaf, a quarter byte a key), built from the
** inner nodes alone.  The table only ever points at live leaves: freeing a
** leaf (a merge, a rebuild, the store's end) drops it; splits only make it
** stale (more descents), and after nLeaf/BT_HINT_REBUILD_DIV descents since
** it was built or dropped, a lookup builds it again.  Lookups may run on
** several threads at once (gpuds_backend.h): the table is one mapping that
** a lookup replaces whole, the one replaced kept until the next call that
** changes the tree (host_ordered_lookup.c).
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
**
** Files, from the top (each calls only files below it):
**   host_ordered.c (this file)  the store and its ops table, xBulkLoad
**   host_ordered_batch.c        all-or-nothing batches: insert, remove, repair
**   host_ordered_build.c        a tree built whole; appends on the right edge
**   host_ordered_check.c        xInfo and the invariant check (xCheck)
**   host_ordered_lookup.c       the hint table and point lookups (xLookup)
**   host_ordered_node.c         nodes taken (malloc or slab) and freed; errors
**   host_ordered_int.h          the node layout, the store and the search
*/
#include "host_ordered_int.h"
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
  btHintRetire(p);
  if( n>0 && aOp==0 ){
    return btError(p, GPUDS_MISUSE, "xBatch: aOp is NULL");
  }
  return btApply(p, n, aOp, aKey, aVal, aFound, aOld);
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
  btHintRetire(p);
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
    int rc = btRebuild(p, n, aKey, aVal);
    if( rc==GPUDS_OK ) return GPUDS_OK;
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

/* Message of the last failed call, "" if none. */
static const char *btErrmsg(gpuds_store *pStore){
  HostOrderedStore *p = (HostOrderedStore*)pStore;
  return p ? p->zErr : "";
}

const gpuds_store_ops gpudsHostOrderedOps = {
  "host",
  GPUDS_ORDERED,
  1,              /* reads: the hint table is replaced whole
                  ** (host_ordered_lookup.c) */
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
