/*
** flush.c -- the write path's last step: a write buffer's flush (GpudsFlush,
** its keys sorted, its rows repacked) applied to the table's copy.
**
** gpudsStoreFlush takes the copy's latch for writing, picks the path (a
** bulk load for inserts into an empty store or past its largest key, else
** one batch), has store.c apply it to the store and its mirror, keeps the
** key filter (its rules are here) and links the flush into the copy's
** history as a version (version.c); gpudsStoreUndo takes it back.  Only
** store.c calls the backends: this file decides, store.c applies.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>
#include <stdlib.h>

/* ------------------------------------------------------------ key filter
** The key filter (filter.c) holds every key of the store and, since keys
** are never removed from it, some that are gone: its rules live here,
** beside the flushes that change the store.  Only the writer reads it
** (a key it inserts is new to the newest state). */

/* The key filter is rebuilt once the keys deleted from the store since the
** last rebuild pass half of those added plus FILTER_STALE_SLACK: stale keys
** only cost false "maybe" answers, and the slack spares a small table a
** rebuild at every delete. */
#define FILTER_STALE_SLACK 1024

/* gpudsStoreEach() callback: add a page's keys to the filter. */
static int filterAddCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                       const uint64_t *aV, size_t n){
  gpudsFilterAddMany(&p->pCopy->filter, aK, (int64_t)n);
  return SQLITE_OK;
}

/* Rebuild the key filter from the store's contents (none if memory is
** short: slower, never wrong). */
static void filterRebuild(GpudsTable *p){
  GpudsFilter *pF = &p->pCopy->filter;
  int64_t n = gpudsStoreCount(p);
  if( gpudsFilterReset(pF, n*2) ) return;
  if( gpudsStoreEach(p, filterAddCb, 0) ) gpudsFilterFree(pF);
}

/* Account the keys of flush f, just applied to the store, in the filter. */
static void filterAfterFlush(GpudsTable *p, const GpudsFlush *f){
  GpudsFilter *pF = &p->pCopy->filter;
  size_t i, nNew = 0;
  int bFull = 0;
  /* Only the flush's upserts add keys: its deletes only make it staler. */
  for(i=0; i<f->n; i++) nNew += f->aNew[i]!=0;
  if( pF->nAdded + (int64_t)nNew > pF->nCap ){
    /* It would overflow: size it for the new contents in one rebuild.
    ** When the flush found none of its keys and the store now holds as
    ** many as it upserted, the store was empty and holds just those
    ** (a first bulk load): the filter is made from the flush, not from a
    ** scan of the store. */
    size_t nFound = 0;
    for(i=0; i<f->n; i++) nFound += f->aFound[i]!=0;
    if( nFound==0 && gpudsStoreCount(p)==(int64_t)nNew ){
      if( gpudsFilterReset(pF, (int64_t)nNew*2) ) return;   /* none: slower, never wrong */
      gpudsFilterAddIf(pF, f->aKey, f->aNew, (int64_t)f->n);
      return;
    }
    filterRebuild(p);
    return;
  }
  /* the upserts' keys, their blocks prefetched (a random line each) */
  if( nNew ) bFull = gpudsFilterAddIf(pF, f->aKey, f->aNew, (int64_t)f->n);
  for(i=0; i<f->n; i++){
    if( !f->aNew[i] && f->aFound[i] ) pF->nStale++;
  }
  if( bFull || pF->nStale > pF->nAdded/2 + FILTER_STALE_SLACK ){
    filterRebuild(p);
  }
}

/* True if key k may be in the store (never a false "no"). */
int gpudsStoreMaybe(GpudsTable *p, int64_t k){
  return gpudsFilterMaybe(&p->pCopy->filter, k);
}

/* ------------------------------------------------------------ flushes */

/* A flush of at least this many new keys, all past the largest key of an
** ordered store, is bulk-loaded rather than applied as a batch (see
** flushAppends; the column set's threshold for dropping itself). */
#define FLUSH_APPEND_MIN 65536

/* True if the keys of flush f (ascending) all lie past the largest key of
** an ordered store, and there are enough of them for a bulk load to beat a
** batch (it drops the column set and, on the host, may rebuild the tree):
** they are all new, so found/old are all 0. */
static int flushAppends(GpudsTable *p, const GpudsFlush *f){
  gpuds_scan s;
  int64_t kMax = 0;
  uint64_t v = 0;
  size_t nOut = 0;
  if( p->eKind!=GPUDS_ORDERED || f->n<FLUSH_APPEND_MIN ) return 0;
  memset(&s, 0, sizeof(s));
  s.lo = INT64_MIN; s.hi = INT64_MAX; s.desc = 1;
  if( gpudsStoreScan(p, &s, 1, &kMax, &v, &nOut)!=SQLITE_OK ){
    sqlite3_free(p->base.zErrMsg);         /* not an error: take the batch path */
    p->base.zErrMsg = 0;
    return 0;
  }
  return nOut==1 && f->aKey[0]>kMax;
}

/* Apply flush f (f->n distinct keys ascending, f->aNew their values, 0
** deleting) of p's transaction to the store and its mirror as one batch,
** filling f->aFound and f->aOld with what they held before; account it in
** the key filter and the column set's log; link it into the copy's
** history (version.c: the other tables lay its old values over the store
** until it commits, and over it as long as their snapshots are older).
** Only inserts, into an empty store or past its largest key (keys written
** in order), take the bulk-build path: f->aOld stays NULL (every key was
** new).  All-or-nothing: on error the store is unchanged. */
int gpudsStoreFlush(GpudsTable *p, GpudsFlush *f){
  size_t n = f->n, i;
  uint8_t *aOp = malloc(n ? n : 1);
  int rc, bAllUpsert = 1;
  if( aOp==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  for(i=0; i<n; i++){
    aOp[i] = f->aNew[i] ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE;
    if( f->aNew[i]==0 ) bAllUpsert = 0;
  }
  gpudsLatchWrite(p);
  if( bAllUpsert && (gpudsStoreCount(p)==0 || flushAppends(p, f)) ){
    rc = gpudsStoreBulk(p, n, f->aKey, f->aNew);
    memset(f->aFound, 0, n);      /* no old values: aOld stays NULL */
  }else{
    f->aOld = malloc(n ? n*8 : 8);
    if( f->aOld==0 ){
      rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
    }else{
      rc = gpudsStoreBatch(p, n, aOp, f->aKey, f->aNew, f->aFound, f->aOld);
    }
  }
  if( rc==SQLITE_OK ){
    filterAfterFlush(p, f);
    gpudsVersionAdd(p, f);
  }
  gpudsLatchWriteEnd(p);
  free(aOp);
  return rc;
}

/* Take flush f, the newest version of p's copy, back: put what each key
** held before it into the store and its mirror (the inverse batch), add
** the keys that come back to the key filter (a rebuild since the flush
** may have dropped them) and unlink it from the history.  All-or-nothing:
** on error it stays, laid over the store for the other tables. */
int gpudsStoreUndo(GpudsTable *p, GpudsFlush *f){
  GpudsFilter *pF = &p->pCopy->filter;
  uint8_t *aOp = malloc(f->n ? f->n : 1);
  size_t i;
  int rc, bFull = 0;
  if( aOp==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  for(i=0; i<f->n; i++){
    aOp[i] = f->aFound[i] ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE;
  }
  gpudsLatchWrite(p);
  /* (after a bulk load aOld is NULL: every key was new, every operation
  ** a delete, and xBatch takes no values for a batch without an upsert) */
  rc = gpudsStoreBatch(p, f->n, aOp, f->aKey, f->aOld, 0, 0);
  if( rc==SQLITE_OK ){
    for(i=0; i<f->n; i++){
      if( f->aFound[i] ) bFull |= gpudsFilterAdd(pF, f->aKey[i]);
    }
    if( bFull ) filterRebuild(p);
    gpudsVersionRemove(p, f);
  }
  gpudsLatchWriteEnd(p);
  free(aOp);
  return rc;
}
