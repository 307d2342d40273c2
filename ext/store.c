/*
** store.c -- the table's store as the rest of ext/ sees it: the backend
** store, and, when that store lives on the GPU, a host mirror of it.
**
** Why a mirror: SQLite asks for one row at a time (a point SELECT, each
** outer row of a join, each duplicate check of a plain INSERT, the first
** rows of a short range), and a GPU round trip costs tens of microseconds,
** several times an ordinary table's whole lookup.  The mirror (key -> row
** handle) answers those exactly; the GPU answers batches: flushed writes,
** bulk loads, IN lists and long scans of an ordered store.
**
** The mirror is always the host's ordered store (a B+tree), whatever the
** GPU store's kind (issues #12/#13).  A GPU hash store has no key order, and
** a mirror of the same kind made every key range and ORDER BY k on gpuhash
** snapshot the keys in range, sort them and read the rows back through
** random probes (0.5-0.7x an ordinary table on an H100); an ordered mirror
** answers them as gfsl's does, by walking leaves in key order, and takes
** fewer bytes per row than a host hash at 70% load.  So every scan of a
** hash store with a mirror is a scan of the mirror (gpudsStoreScan), and
** gpudsStoreOrdered() tells read.c and plan.c that the table reads in key
** order.
**
** Both hold the same keys at every moment between calls: a batch goes to
** the GPU, then to the mirror, and if the mirror fails the GPU batch is
** undone with its inverse, so a failure leaves both as they were.  Batches
** passed here have distinct keys (the write buffer guarantees it), which is
** what makes the inverse exact.  GPUDS_MIRROR=0 turns the mirror off (to
** measure the GPU paths alone); GPUDS_MIRROR=1 adds one to a host store
** (for tests).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>
#include <stdlib.h>
#include <pthread.h>

/* Lookups of at most this many keys, and scan pages of at most this many
** entries, are answered by the mirror. */
#define MIRROR_MAX_LOOKUP 1024
#define MIRROR_MAX_PAGE   4096

/* While a column set exists, the keys of store batches are logged for it
** (the set answers for the other keys); past this many, or a fraction
** 1/COLS_DIRTY_DIV of its rows if that is more, rebuilding the set (one pass
** over the rows) costs less than answering for the logged keys on the host
** at every query, and the set is dropped. */
#define COLS_DIRTY_MIN 65536
#define COLS_DIRTY_DIV 8

/* Drop the table's column set and its log of changed keys. */
void gpudsStoreColsDrop(GpudsTable *p){
  if( p->cs.pCols ) p->cs.pOps->xFree(p->cs.pCols);
  p->cs.pCols = 0;
  p->cs.nRows = 0;
  free(p->cs.aDirty);
  p->cs.aDirty = 0;
  p->cs.nDirty = p->cs.nDirtyAlloc = 0;
  free(p->cs.aBytes);
  p->cs.aBytes = 0;
  if( p->cs.aText ){
    int i;
    for(i=0; i<p->nCol-1; i++) free(p->cs.aText[i].aAmbig);
    free(p->cs.aText);
    p->cs.aText = 0;
  }
}

/* Log the keys that batch aOp/aKey changed for the column set, or drop the
** set when the log is too long to be worth keeping (or memory runs out). */
static void colsLog(GpudsTable *p, size_t n, const uint8_t *aOp, const int64_t *aKey){
  GpudsColState *cs = &p->cs;
  int64_t nMax = cs->nRows/COLS_DIRTY_DIV;
  size_t i;
  if( cs->pCols==0 ) return;
  if( nMax<COLS_DIRTY_MIN ) nMax = COLS_DIRTY_MIN;
  if( cs->nDirty + (int64_t)n > nMax ){ gpudsStoreColsDrop(p); return; }
  if( cs->nDirty + (int64_t)n > cs->nDirtyAlloc ){
    int64_t nNew = (cs->nDirty + (int64_t)n)*2;
    int64_t *a = realloc(cs->aDirty, (size_t)nNew*8);
    if( a==0 ){ gpudsStoreColsDrop(p); return; }
    cs->aDirty = a;
    cs->nDirtyAlloc = nNew;
  }
  for(i=0; i<n; i++){
    if( aOp[i]!=GPUDS_OP_LOOKUP ) cs->aDirty[cs->nDirty++] = aKey[i];
  }
}

/* ------------------------------------------------------------ what it is
** Only this file calls the backends' ops tables (the store's, the
** mirror's, the column set's): the rest of ext/ asks through these. */

/* Keys the store holds (with the open transaction's flushed batches). */
int64_t gpudsStoreCount(const GpudsTable *p){
  return p->pOps->xCount(p->pStore);
}

/* The backend a new table of kind eKind (GPUDS_ORDERED or GPUDS_HASH)
** gets: "cuda" or "host". */
const char *gpudsStoreKindBackend(int eKind){
  return gpudsStoreOps(eKind)->zBackend;
}

/* The backend of the table's store: "cuda" or "host". */
const char *gpudsStoreBackend(const GpudsTable *p){
  return p->pOps->zBackend;
}

/* True if the table's store has a host mirror. */
int gpudsStoreHasMirror(const GpudsTable *p){
  return p->pMirror!=0;
}

/* The JSON object the store (bMirror: its host mirror) describes itself
** with, into zBuf (at most nBuf bytes); 0 and zBuf empty if there is no
** such store. */
int gpudsStoreInfo(GpudsTable *p, int bMirror, char *zBuf, size_t nBuf){
  zBuf[0] = 0;
  if( bMirror ){
    if( p->pMirror==0 ) return 0;
    p->pMirOps->xInfo(p->pMirror, zBuf, nBuf);
  }else{
    p->pOps->xInfo(p->pStore, zBuf, nBuf);
  }
  return 1;
}

/* True if the table has a column set. */
int gpudsColsBuilt(const GpudsTable *p){
  return p->cs.pCols!=0;
}

/* The backend of the table's column set ("cuda" or "host"), or of the one
** a build would try first. */
const char *gpudsColsBackend(const GpudsTable *p){
  return (p->cs.pCols ? p->cs.pOps : gpudsColsOps(p->pOps))->zBackend;
}

/* Make the table's column set from the arrays of a build (colbuild.c:
** n rows, nCol columns, see gpuds_cols_ops.xLoad), on the backend beside
** the store, or on the host's where the GPU is full.  On error the table
** has none and its message says why. */
int gpudsStoreColsLoad(GpudsTable *p, int nCol, int64_t n, const int64_t *aKey,
                       const uint64_t *aRow, const uint8_t *aTag, const uint64_t *aVal){
  GpudsColState *cs = &p->cs;
  char *zErr = 0;
  int rc;
  for(cs->pOps = gpudsColsOps(p->pOps); ; cs->pOps = &gpudsHostColsOps){
    rc = cs->pOps->xLoad(&cs->pCols, nCol, n, gpudsStoreOrdered(p),
                         aKey, aRow, aTag, aVal, &zErr);
    if( rc!=GPUDS_NOMEM || cs->pOps==&gpudsHostColsOps ) break;
    /* The GPU is full: the host column set answers the same plans. */
    free(zErr);
    zErr = 0;
  }
  if( rc ){
    cs->pCols = 0;
    gpudsVtabError(p, rc, "cannot build the %s column set: %s", cs->pOps->zBackend,
                   zErr ? zErr : "error");
    free(zErr);
    return rc;
  }
  cs->nRows = n;
  cs->nBuild++;
  return SQLITE_OK;
}

/* Query the table's column set (built: gpudsColsBuilt): xQuery, its error
** in the table's message. */
int gpudsStoreColsQuery(GpudsTable *p, const gpuds_query *q, int64_t *pn,
                        int64_t **paKey, uint64_t **paRow, uint64_t **paSort){
  GpudsColState *cs = &p->cs;
  int rc = cs->pOps->xQuery(cs->pCols, q, pn, paKey, paRow, paSort);
  if( rc ){
    return gpudsVtabError(p, rc, "%s column set: %s", cs->pOps->zBackend,
                          cs->pOps->xErrmsg(cs->pCols));
  }
  return SQLITE_OK;
}

/* Aggregate on the table's column set (built): xAgg.  GPUDS_MISUSE, with
** no message, where the backend has no aggregation; another error with
** its message. */
int gpudsStoreColsAgg(GpudsTable *p, const gpuds_agg *pAgg, gpuds_aggres *pRes){
  GpudsColState *cs = &p->cs;
  int rc = cs->pOps->xAgg(cs->pCols, pAgg, pRes);
  if( rc && rc!=GPUDS_MISUSE ){
    return gpudsVtabError(p, rc, "%s column set: %s", cs->pOps->zBackend,
                          cs->pOps->xErrmsg(cs->pCols));
  }
  return rc;
}

/* Bytes the table's column set holds (0 if none). */
int64_t gpudsColsBytes(GpudsTable *p){
  return p->cs.pCols ? p->cs.pOps->xBytes(p->cs.pCols) : 0;
}

/* ------------------------------------------------------------ the store */

/* Copy the last error of store pS into the table's error message. */
static int storeErr(GpudsTable *p, const gpuds_store_ops *pOps, gpuds_store *pS,
                    int rc, const char *zWhat){
  return gpudsVtabError(p, rc, "%s: %s", zWhat, pOps->xErrmsg(pS));
}

/* Create an empty store (and its mirror, for a GPU store) for table p, on
** the backend chosen for its kind (at its first store, once).  On failure
** *ppMain and *ppMir are NULL and the table's error is set. */
int gpudsStoreCreate(GpudsTable *p, gpuds_store **ppMain, gpuds_store **ppMir){
  char *zErr = 0;
  int eMirror = gpudsConfig()->eMirror;
  int rc;
  *ppMain = 0; *ppMir = 0;
  if( p->pOps==0 ) p->pOps = gpudsStoreOps(p->eKind);
  rc = p->pOps->xCreate(ppMain, &zErr);
  if( rc ){
    gpudsVtabError(p, rc, "cannot create the %s store: %s", p->pOps->zBackend, zErr ? zErr : "error");
    free(zErr);
    return rc;
  }
  p->pMirOps = 0;
  /* GPUDS_MIRROR=1 mirrors a host store too: tests use it to run the
  ** mirror's routing on machines with no GPU. */
  if( (strcmp(p->pOps->zBackend, "host")!=0 && eMirror!=GPUDS_MIRROR_NEVER)
   || eMirror==GPUDS_MIRROR_ALWAYS ){
    p->pMirOps = &gpudsHostOrderedOps;
    rc = p->pMirOps->xCreate(ppMir, &zErr);
    if( rc ){
      gpudsVtabError(p, rc, "cannot create the host mirror: %s", zErr ? zErr : "error");
      free(zErr);
      p->pOps->xDestroy(*ppMain);
      *ppMain = 0;
      return rc;
    }
  }
  return SQLITE_OK;
}

/* Free a store and its mirror (either may be NULL). */
void gpudsStoreFree(GpudsTable *p, gpuds_store *pMain, gpuds_store *pMir){
  if( pMain && p->pOps ) p->pOps->xDestroy(pMain);
  if( pMir && p->pMirOps ) p->pMirOps->xDestroy(pMir);
}

/* True if every op of the batch is an upsert and the keys strictly
** ascend: the batch is then an xBulkLoad (backend contract). */
static int allUpsertsAscending(size_t n, const uint8_t *aOp, const int64_t *aKey){
  size_t i;
  for(i=0; i<n; i++){
    if( aOp[i]!=GPUDS_OP_UPSERT || (i>0 && aKey[i]<=aKey[i-1]) ) return 0;
  }
  return n>0;
}

/* Apply a batch of distinct keys to the store and its mirror: both or
** neither.  aFound/aOld may be NULL, and aVal where the batch holds no
** upsert (as for xBatch). */
static int storeBatch(GpudsTable *p, size_t n, const uint8_t *aOp,
                    const int64_t *aKey, const uint64_t *aVal,
                    uint8_t *aFound, uint64_t *aOld){
  uint8_t *aF = aFound, *aInv = 0;
  uint64_t *aO = aOld;
  int rc;
  if( p->pMirror==0 ){
    rc = p->pOps->xBatch(p->pStore, n, aOp, aKey, aVal, aFound, aOld);
    if( rc ) return storeErr(p, p->pOps, p->pStore, rc, "applying a batch");
    colsLog(p, n, aOp, aKey);
    return SQLITE_OK;
  }
  if( aF==0 ) aF = malloc(n ? n : 1);
  if( aO==0 ) aO = malloc(n ? n*8 : 8);
  aInv = malloc(n ? n : 1);
  if( !aF || !aO || !aInv ){ rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto batch_out; }
  rc = p->pOps->xBatch(p->pStore, n, aOp, aKey, aVal, aF, aO);
  if( rc ){ storeErr(p, p->pOps, p->pStore, rc, "applying a batch"); goto batch_out; }
  if( allUpsertsAscending(n, aOp, aKey) ){
    /* a flush of inserts (keys sorted by the write buffer): the same
    ** result as the batch, and the mirror may merge them in one pass
    ** instead of descending the tree once a key */
    rc = p->pMirOps->xBulkLoad(p->pMirror, n, aKey, aVal);
  }else{
    rc = p->pMirOps->xBatch(p->pMirror, n, aOp, aKey, aVal, 0, 0);
  }
  if( rc ){
    /* Undo the GPU batch: put back what each key held before. */
    size_t i;
    storeErr(p, p->pMirOps, p->pMirror, rc, "applying a batch to the host mirror");
    for(i=0; i<n; i++){
      aInv[i] = aOp[i]==GPUDS_OP_LOOKUP ? GPUDS_OP_LOOKUP
              : (aF[i] ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE);
    }
    p->pOps->xBatch(p->pStore, n, aInv, aKey, aO, 0, 0);
  }else{
    colsLog(p, n, aOp, aKey);
  }
batch_out:
  if( aF!=aFound ) free(aF);
  if( aO!=aOld ) free(aO);
  free(aInv);
  return rc;
}

/* Bulk-load sorted distinct new keys into the table's store and its
** mirror: both or neither. */
static int storeBulk(GpudsTable *p, size_t n, const int64_t *aKey, const uint64_t *aVal){
  gpuds_store *pMain = p->pStore, *pMir = p->pMirror;
  int rc;
  gpudsStoreColsDrop(p);
  rc = p->pOps->xBulkLoad(pMain, n, aKey, aVal);
  if( rc ) return storeErr(p, p->pOps, pMain, rc, "bulk load");
  if( pMir ){
    rc = p->pMirOps->xBulkLoad(pMir, n, aKey, aVal);
    if( rc ){
      uint8_t *aOp = malloc(n ? n : 1);
      storeErr(p, p->pMirOps, pMir, rc, "bulk load into the host mirror");
      if( aOp ){
        memset(aOp, GPUDS_OP_DELETE, n);
        p->pOps->xBatch(pMain, n, aOp, aKey, 0, 0, 0);
        free(aOp);
      }
    }
  }
  return rc;
}

/* ------------------------------------------------------------ key filter
** The key filter (filter.c) holds every key of the store and, since keys
** are never removed from it, some that are gone: its rules live here,
** beside the batches that change the store. */

/* The key filter is rebuilt once the keys deleted from the store since the
** last rebuild pass half of those added plus FILTER_STALE_SLACK: stale keys
** only cost false "maybe" answers, and the slack spares a small table a
** rebuild at every delete. */
#define FILTER_STALE_SLACK 1024

/* gpudsStoreEach() callback: add a page's keys to the filter. */
static int filterAddCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                       const uint64_t *aV, size_t n){
  gpudsFilterAddMany(&p->filter, aK, (int64_t)n);
  return SQLITE_OK;
}

/* Rebuild the key filter from the store's contents (none if memory is
** short: slower, never wrong). */
static void filterRebuild(GpudsTable *p){
  int64_t n = p->pOps->xCount(p->pStore);
  if( gpudsFilterReset(&p->filter, n*2) ) return;
  if( gpudsStoreEach(p, filterAddCb, 0) ) gpudsFilterFree(&p->filter);
}

/* Account the keys of flush f, just applied to the store, in the filter. */
static void filterAfterFlush(GpudsTable *p, const GpudsFlush *f){
  size_t i, nNew = 0;
  int bFull = 0;
  /* Only the flush's upserts add keys: its deletes only make it staler. */
  for(i=0; i<f->n; i++) nNew += f->aNew[i]!=0;
  if( p->filter.nAdded + (int64_t)nNew > p->filter.nCap ){
    /* It would overflow: size it for the new contents in one rebuild.
    ** When the flush found none of its keys and the store now holds as
    ** many as it upserted, the store was empty and holds just those
    ** (a first bulk load): the filter is made from the flush, not from a
    ** scan of the store. */
    size_t nFound = 0;
    for(i=0; i<f->n; i++) nFound += f->aFound[i]!=0;
    if( nFound==0 && p->pOps->xCount(p->pStore)==(int64_t)nNew ){
      if( gpudsFilterReset(&p->filter, (int64_t)nNew*2) ) return;   /* none: slower, never wrong */
      gpudsFilterAddIf(&p->filter, f->aKey, f->aNew, (int64_t)f->n);
      return;
    }
    filterRebuild(p);
    return;
  }
  /* the upserts' keys, their blocks prefetched (a random line each) */
  if( nNew ) bFull = gpudsFilterAddIf(&p->filter, f->aKey, f->aNew, (int64_t)f->n);
  for(i=0; i<f->n; i++){
    if( !f->aNew[i] && f->aFound[i] ) p->filter.nStale++;
  }
  if( bFull || p->filter.nStale > p->filter.nAdded/2 + FILTER_STALE_SLACK ){
    filterRebuild(p);
  }
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
** deleting) to the store and its mirror as one batch, filling f->aFound
** and f->aOld with what they held before, and account it in the key
** filter and the column set's log.  Only inserts, into an empty store or
** past its largest key (keys written in order), take the bulk-build path:
** f->aOld stays NULL (every key was new).  All-or-nothing: on error the
** store is unchanged. */
int gpudsStoreFlush(GpudsTable *p, GpudsFlush *f){
  size_t n = f->n, i;
  uint8_t *aOp = malloc(n ? n : 1);
  int rc, bAllUpsert = 1;
  if( aOp==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  for(i=0; i<n; i++){
    aOp[i] = f->aNew[i] ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE;
    if( f->aNew[i]==0 ) bAllUpsert = 0;
  }
  if( bAllUpsert && (p->pOps->xCount(p->pStore)==0 || flushAppends(p, f)) ){
    rc = storeBulk(p, n, f->aKey, f->aNew);
    memset(f->aFound, 0, n);      /* no old values: aOld stays NULL */
  }else{
    f->aOld = malloc(n ? n*8 : 8);
    if( f->aOld==0 ){
      free(aOp);
      return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
    }
    rc = storeBatch(p, n, aOp, f->aKey, f->aNew, f->aFound, f->aOld);
  }
  free(aOp);
  if( rc==SQLITE_OK ) filterAfterFlush(p, f);
  return rc;
}

/* Take flush f back: put what each key held before it into the store and
** its mirror (the inverse batch) and add the keys that come back to the
** key filter (a rebuild since the flush may have dropped them).
** All-or-nothing. */
int gpudsStoreUndo(GpudsTable *p, const GpudsFlush *f){
  uint8_t *aOp = malloc(f->n ? f->n : 1);
  size_t i;
  int rc, bFull = 0;
  if( aOp==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  for(i=0; i<f->n; i++){
    aOp[i] = f->aFound[i] ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE;
  }
  /* (after a bulk load aOld is NULL: every key was new, every operation
  ** a delete, and xBatch takes no values for a batch without an upsert) */
  rc = storeBatch(p, f->n, aOp, f->aKey, f->aOld, 0, 0);
  free(aOp);
  if( rc ) return rc;
  for(i=0; i<f->n; i++){
    if( f->aFound[i] ) bFull |= gpudsFilterAdd(&p->filter, f->aKey[i]);
  }
  if( bFull ) filterRebuild(p);
  return SQLITE_OK;
}

/* One part of gpudsStoreBuild: a bulk load into a store, or the filling
** of a key filter; run on a thread of its own or inline. */
typedef struct BuildJob {
  const gpuds_store_ops *pOps;   /* bulk load into pS ... */
  gpuds_store *pS;
  GpudsFilter *pFilter;          /* ... or fill pFilter */
  size_t n;
  const int64_t *aKey;
  const uint64_t *aVal;
  int rc;
  int bThread;                   /* runs on thread tid */
  pthread_t tid;
} BuildJob;

static void *buildJobRun(void *pArg){
  BuildJob *j = (BuildJob*)pArg;
  if( j->pS ){
    j->rc = j->pOps->xBulkLoad(j->pS, j->n, j->aKey, j->aVal);
  }else{
    gpudsFilterFill(j->pFilter, j->aKey, (int64_t)j->n);
  }
  return 0;
}

/* Below this many keys the parts of gpudsStoreBuild run one after another:
** a thread costs more than it saves. */
#define BUILD_THREAD_MIN 16384

/* Build a reload's fresh, unpublished stores from sorted distinct keys:
** bulk-load pMain and its mirror pMir (may be NULL) and fill the key filter
** pFilter (sized by gpudsFilterAlloc, or holding no bits), all three at
** once when there are many keys: distinct stores may be used from distinct
** threads, and the filter is nobody else's yet.  The calling thread loads
** the mirror if there is one (it takes the most host memory, and memory
** the process freed is reused fastest by the thread that freed it: other
** threads get fresh pages from their own malloc arenas), else the main
** store; the other store and the filter get threads of their own.  Every
** thread is joined before returning.  On error the table's message says
** why, and the caller frees both stores. */
int gpudsStoreBuild(GpudsTable *p, gpuds_store *pMain, gpuds_store *pMir,
                    size_t n, const int64_t *aKey, const uint64_t *aVal,
                    GpudsFilter *pFilter){
  BuildJob aJob[3];                /* [0] main store, [1] mirror, [2] filter */
  int i, iHere = pMir ? 1 : 0;
  memset(aJob, 0, sizeof(aJob));
  aJob[0].pOps = p->pOps;
  aJob[0].pS = pMain;
  aJob[1].pOps = p->pMirOps;
  aJob[1].pS = pMir;
  aJob[2].pFilter = pFilter;
  for(i=0; i<3; i++){
    aJob[i].n = n; aJob[i].aKey = aKey; aJob[i].aVal = aVal;
    if( i==iHere || (i==1 && !pMir) || (i==2 && !pFilter->aBit) ) continue;
    if( n>=BUILD_THREAD_MIN ){
      aJob[i].bThread = pthread_create(&aJob[i].tid, 0, buildJobRun, &aJob[i])==0;
    }
  }
  if( n ) buildJobRun(&aJob[iHere]);
  for(i=0; i<3; i++){
    if( i==iHere || (i==1 && !pMir) || (i==2 && !pFilter->aBit) ) continue;
    if( aJob[i].bThread ) pthread_join(aJob[i].tid, 0);
    else if( i==2 || (n && aJob[0].rc==GPUDS_OK && aJob[1].rc==GPUDS_OK) ) buildJobRun(&aJob[i]);
  }
  if( aJob[0].rc ) return storeErr(p, p->pOps, pMain, aJob[0].rc, "bulk load");
  if( aJob[1].rc ){
    return storeErr(p, p->pMirOps, pMir, aJob[1].rc, "bulk load into the host mirror");
  }
  return SQLITE_OK;
}

/* Look n keys up: a few on the host mirror, many on the GPU. */
int gpudsStoreLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                     uint8_t *aFound, uint64_t *aVal){
  int rc;
  if( p->pMirror && n<=MIRROR_MAX_LOOKUP ){
    rc = p->pMirOps->xLookup(p->pMirror, n, aKey, aFound, aVal);
    return rc ? storeErr(p, p->pMirOps, p->pMirror, rc, "lookup") : SQLITE_OK;
  }
  rc = p->pOps->xLookup(p->pStore, n, aKey, aFound, aVal);
  return rc ? storeErr(p, p->pOps, p->pStore, rc, "lookup") : SQLITE_OK;
}

/* True if the table's scans (gpudsStoreScan, gpudsStoreEach) return keys
** in key order, honouring gpuds_scan's desc: an ordered store, or a hash
** store with its (ordered) host mirror.  Fixed for the table's life: the
** mirror exists iff gpudsStoreCreate made one, which depends only on the
** backend and GPUDS_MIRROR, both read once. */
int gpudsStoreOrdered(const GpudsTable *p){
  return p->eKind==GPUDS_ORDERED
      || (p->pMirOps!=0 && p->pMirOps->kind==GPUDS_ORDERED);
}

/* The next page of a scan.  Ordered scans continue from the last key
** returned, so for an ordered store small pages (the first ones) come from
** the mirror and large ones from the GPU, seamlessly.  A hash store's scans
** all come from its mirror: the GPU hash has no key order. */
int gpudsStoreScan(GpudsTable *p, gpuds_scan *pScan, size_t nMax,
                   int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  int rc;
  if( p->pMirror && (nMax<=MIRROR_MAX_PAGE || p->eKind!=GPUDS_ORDERED) ){
    rc = p->pMirOps->xScan(p->pMirror, pScan, nMax, aKey, aVal, pnOut);
    return rc ? storeErr(p, p->pMirOps, p->pMirror, rc, "scan") : SQLITE_OK;
  }
  rc = p->pOps->xScan(p->pStore, pScan, nMax, aKey, aVal, pnOut);
  return rc ? storeErr(p, p->pOps, p->pStore, rc, "scan") : SQLITE_OK;
}

/* Call xEach on every entry of the table's store, in pages of 64K entries
** (key order where gpudsStoreOrdered()), until it returns non-zero, which is
** returned.  The host mirror is walked where there is one: it holds the
** same entries, and a walk of the GPU store would copy them back from the
** device page by page.  The store must not change meanwhile. */
int gpudsStoreEach(GpudsTable *p, int (*xEach)(GpudsTable*, void*, const int64_t*,
                   const uint64_t*, size_t), void *pCtx){
  size_t nPage = 65536, nOut;
  int64_t *aK = sqlite3_malloc64(nPage*8);
  uint64_t *aV = sqlite3_malloc64(nPage*8);
  gpuds_scan s;
  int rc = (aK && aV) ? SQLITE_OK : SQLITE_NOMEM;
  memset(&s, 0, sizeof(s));
  s.lo = INT64_MIN; s.hi = INT64_MAX;
  while( rc==SQLITE_OK && !s.done ){
    if( p->pMirror ){
      rc = p->pMirOps->xScan(p->pMirror, &s, nPage, aK, aV, &nOut);
      if( rc ){ rc = storeErr(p, p->pMirOps, p->pMirror, rc, "scan"); break; }
    }else{
      rc = gpudsStoreScan(p, &s, nPage, aK, aV, &nOut);
    }
    if( rc==SQLITE_OK && nOut ) rc = xEach(p, pCtx, aK, aV, nOut);
  }
  sqlite3_free(aK); sqlite3_free(aV);
  return rc;
}

/* gpudsStoreEach() callback: free the rows of the entries. */
static int freeRowsCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                      const uint64_t *aV, size_t n){
  size_t i;
  for(i=0; i<n; i++) gpudsRowFreeHandle(aV[i]);
  return SQLITE_OK;
}

/* Free the rows of the table's store (its entries' handles); the store
** itself is left to gpudsStoreFree(). */
void gpudsStoreFreeRows(GpudsTable *p){
  gpudsStoreColsDrop(p);
  if( p->pStore ) gpudsStoreEach(p, freeRowsCb, 0);
}

/* gpudsStoreEach() callback over the host mirror: every entry of the page
** is in the GPU store with the same value. */
static int mirrorCompareCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                           const uint64_t *aV, size_t n){
  uint64_t *aG = sqlite3_malloc64(n*8);
  uint8_t *aF = sqlite3_malloc64(n);
  size_t i;
  int rc = (aG && aF) ? SQLITE_OK : SQLITE_NOMEM;
  if( rc==SQLITE_OK ){
    rc = p->pOps->xLookup(p->pStore, n, aK, aF, aG);
    if( rc ) storeErr(p, p->pOps, p->pStore, rc, "lookup");
  }
  for(i=0; rc==SQLITE_OK && i<n; i++){
    if( !aF[i] || aG[i]!=aV[i] ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "key %lld: %s", (long long)aK[i],
                          aF[i] ? "the GPU store and the host mirror hold different rows"
                                : "in the host mirror, missing from the GPU store");
    }
  }
  sqlite3_free(aG); sqlite3_free(aF);
  return rc;
}

/* Every key of the mirror is in the GPU store with the same value (with
** equal counts: the two hold the same entries).  gpudsStoreEach() walks the
** mirror when there is one. */
static int mirrorCompare(GpudsTable *p){
  return gpudsStoreEach(p, mirrorCompareCb, 0);
}

/* Check the store's invariants, and that the mirror agrees with it in
** size and passes its own.  SQLITE_OK, or an error with the message set. */
int gpudsStoreCheck(GpudsTable *p){
  if( p->pOps->xCheck(p->pStore)!=GPUDS_OK ){
    return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "structure invariant failed: %s",
                          p->pOps->xErrmsg(p->pStore));
  }
  if( p->pMirror ){
    if( p->pMirOps->xCheck(p->pMirror)!=GPUDS_OK ){
      return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "host mirror invariant failed: %s",
                            p->pMirOps->xErrmsg(p->pMirror));
    }
    if( p->pMirOps->xCount(p->pMirror)!=p->pOps->xCount(p->pStore) ){
      return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "host mirror holds %lld keys, the GPU store %lld",
                            (long long)p->pMirOps->xCount(p->pMirror),
                            (long long)p->pOps->xCount(p->pStore));
    }
    return mirrorCompare(p);
  }
  return SQLITE_OK;
}
