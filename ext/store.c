/*
** store.c -- the table's store as the rest of ext/ sees it: the backend
** store, and, when that store lives on the GPU, a host mirror of it.
**
** Why a mirror: SQLite asks for one row at a time (a point SELECT, each
** outer row of a join, each duplicate check of a plain INSERT, the first
** rows of a short range), and a GPU round trip costs several times an
** ordinary table's whole lookup.  The mirror (key -> row
** handle) answers those exactly; the GPU answers batches: flushed writes,
** bulk loads, IN lists and long scans of an ordered store.
**
** The mirror is always the host's ordered store (a B+tree), whatever the
** GPU store's kind.  A GPU hash store has no key order, and
** a mirror of the same kind made every key range and ORDER BY k on gpuhash
** snapshot the keys in range, sort them and read the rows back through
** random probes (slower than an ordinary table); an ordered mirror
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
**
** No statement fails because the GPU is full.  A GPU store that runs out of
** memory (the GPU's, or the GPUDS_GPU_MEMORY cap's: kernels/common/
** devmem.cuh) moves the table's store to the host and the call is made
** there (storeToHost): the mirror becomes the store, which costs nothing,
** since between calls it holds exactly the store's entries, and a failed
** call (all-or-nothing) left it as it was; a GPU store without a mirror
** (GPUDS_MIRROR=0) is copied into a host store by a scan.  A gpuhash
** table's store becomes a B+tree there, as its mirror is, so the table
** still reads in key order.  A store the GPU cannot hold at all is made on
** the host (gpudsStoreCreate, gpudsStoreBuild).  GpudsTable.zStoreWhy says
** why (gpuds_info()).  The store stays on the host until the table is
** loaded again (another connection's commit, reopening): a load makes a
** new store where the table's backend puts it.
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

/* Copy the last error of store pS into the table's error message. */
static int storeErr(GpudsTable *p, const gpuds_store_ops *pOps, gpuds_store *pS,
                    int rc, const char *zWhat){
  return gpudsVtabError(p, rc, "%s: %s", zWhat, pOps->xErrmsg(pS));
}

/* ------------------------------------------------------------ test hook
** Without a GPU, the moves to the host are tested by failing calls to a
** table's main store (never its mirror's) as a full GPU fails them:
** gpuds_test_store_nomem(n), exported for tests to find with dlsym(),
** counts those calls from now and makes the n-th fail with GPUDS_NOMEM
** (n = 0: count only; n < 0: off, the default).  It returns the calls
** counted since the last call.  Such a failure moves a host store too.
** gpuds itself never calls it. */
#define HOOK_WHY "a test failed this call to the store as a full GPU would"
static int gHookOn = 0;                 /* atomics: any thread may call */
static uint64_t gHookN = 0, gHookAt = 0;
static _Thread_local int tHooked = 0;   /* while on: the thread's last main
                                        ** call was failed by it */

__attribute__((visibility("default")))
uint64_t gpuds_test_store_nomem(int64_t n){
  uint64_t k = __atomic_exchange_n(&gHookN, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&gHookAt, n>0 ? (uint64_t)n : 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&gHookOn, n>=0, __ATOMIC_SEQ_CST);
  return k;
}

/* Count a call to a main store: true if the hook fails it.  Off, it costs
** one load. */
static int hookFires(void){
  uint64_t k;
  if( !__atomic_load_n(&gHookOn, __ATOMIC_RELAXED) ) return 0;
  k = __atomic_add_fetch(&gHookN, 1, __ATOMIC_SEQ_CST);
  tHooked = k==__atomic_load_n(&gHookAt, __ATOMIC_SEQ_CST);
  return tHooked;
}

/* True if the calling thread's last call to a main store was failed by
** the hook. */
static int hooked(void){
  return __atomic_load_n(&gHookOn, __ATOMIC_RELAXED) && tHooked;
}
/* A call to a table's main store, under the hook. */
#define MAIN(call) (hookFires() ? GPUDS_NOMEM : (call))

/* Why the calling thread's last call to store pS (ops pOps) failed. */
static const char *whyFailed(const gpuds_store_ops *pOps, gpuds_store *pS){
  return hooked() ? HOOK_WHY : pOps->xErrmsg(pS);
}

/* ------------------------------------------------------------ placement */

/* True if pOps runs on the GPU. */
static int opsGpu(const gpuds_store_ops *pOps){
  return strcmp(pOps->zBackend, "host")!=0;
}

/* True if a store of pOps gets a host mirror (GPUDS_MIRROR=1 mirrors a
** host store too: tests use it to run the mirror's routing on machines
** with no GPU). */
static int mirrorWanted(const gpuds_store_ops *pOps){
  int eMirror = gpudsConfig()->eMirror;
  return (opsGpu(pOps) && eMirror!=GPUDS_MIRROR_NEVER) || eMirror==GPUDS_MIRROR_ALWAYS;
}

/* The host store table p's store becomes where the GPU cannot hold it: a
** B+tree where its store would have a mirror (which is one: the table
** reads in key order either way), else the host store of its kind. */
static const gpuds_store_ops *hostOpsFor(const GpudsTable *p){
  if( p->eKind==GPUDS_ORDERED || mirrorWanted(gpudsStoreOps(p->eKind)) ){
    return &gpudsHostOrderedOps;
  }
  return &gpudsHostHashOps;
}

/* True if failure rc of a call to a main store of ops pOps (with a mirror
** if bMirror) moves that store to the host: out of memory on the GPU, or
** with a mirror to take over (GPUDS_MIRROR=1 on the host), or the hook. */
static int movesOn(const gpuds_store_ops *pOps, int bMirror, int rc){
  return rc==GPUDS_NOMEM && (opsGpu(pOps) || bMirror || hooked());
}

/* The ops of table p's column set, or, where it has none, those its next
** build starts with: the host's where a build found that the GPU could not
** hold it (cs.zWhy), else those beside the store its backend makes
** (gpudsColsOps), wherever the store itself went. */
const gpuds_cols_ops *gpudsStoreColsOps(const GpudsTable *p){
  if( p->cs.pCols ) return p->cs.pOps;
  if( p->cs.zWhy[0] ) return &gpudsHostColsOps;
  return gpudsColsOps(gpudsStoreOps(p->eKind));
}

/* Fill *ppNew, a new store of pTo, with every entry of table p's store
** (copied through its scan).  On error the table's message says why and
** *ppNew is NULL. */
static int storeCopy(GpudsTable *p, const gpuds_store_ops *pTo, gpuds_store **ppNew){
  size_t nPage = 65536, nOut = 0;
  int64_t *aK = malloc(nPage*8);
  uint64_t *aV = malloc(nPage*8);
  uint8_t *aOp = malloc(nPage);
  char *zErr = 0;
  gpuds_scan sc;
  int rc = (aK && aV && aOp) ? SQLITE_OK : SQLITE_NOMEM;
  *ppNew = 0;
  if( rc ){
    gpudsVtabError(p, rc, "out of memory");
  }else if( (rc = pTo->xCreate(ppNew, &zErr))!=SQLITE_OK ){
    gpudsVtabError(p, rc, "cannot create a host store: %s", zErr ? zErr : "error");
    free(zErr);
  }
  if( aOp ) memset(aOp, GPUDS_OP_UPSERT, nPage);
  memset(&sc, 0, sizeof(sc));
  sc.lo = INT64_MIN; sc.hi = INT64_MAX;
  while( rc==SQLITE_OK && !sc.done ){
    rc = p->pOps->xScan(p->pStore, &sc, nPage, aK, aV, &nOut);
    if( rc ){ storeErr(p, p->pOps, p->pStore, rc, "scan"); break; }
    rc = pTo->xBatch(*ppNew, nOut, aOp, aK, aV, 0, 0);
    if( rc ) storeErr(p, pTo, *ppNew, rc, "copying the store to the host");
  }
  if( rc && *ppNew ){ pTo->xDestroy(*ppNew); *ppNew = 0; }
  free(aK); free(aV); free(aOp);
  return rc;
}

/* Move table p's store to the host, because a call to it failed for lack
** of memory (zWhy: why, zWhat: the call): its mirror becomes the store, or,
** without one, a copy of it.  SQLITE_OK, the caller then makes the call
** again; else the table is unchanged and its message says why. */
static int storeToHost(GpudsTable *p, const char *zWhat, const char *zWhy){
  char zCopy[GPUDS_WHY_MAX];
  sqlite3_snprintf((int)sizeof(zCopy), zCopy, "%s", zWhy);    /* zWhy may be the store's */
  if( p->pMirror ){
    p->pOps->xDestroy(p->pStore);
    p->pOps = p->pMirOps;
    p->pStore = p->pMirror;
    p->pMirOps = 0;
    p->pMirror = 0;
  }else{
    const gpuds_store_ops *pTo = hostOpsFor(p);
    gpuds_store *pNew = 0;
    int rc = storeCopy(p, pTo, &pNew);
    if( rc ){
      char zCopyErr[GPUDS_WHY_MAX];
      sqlite3_snprintf((int)sizeof(zCopyErr), zCopyErr, "%s", p->base.zErrMsg ? p->base.zErrMsg : "error");
      return gpudsVtabError(p, SQLITE_NOMEM, "%s: %s (and the store could not be "
                            "moved to the host: %s)", zWhat, zCopy, zCopyErr);
    }
    p->pOps->xDestroy(p->pStore);
    p->pOps = pTo;
    p->pStore = pNew;
  }
  memcpy(p->zStoreWhy, zCopy, sizeof(zCopy));
  return SQLITE_OK;
}

/* A call zWhat to table p's main store failed with rc: SQLITE_OK if the
** store moved to the host for it (the caller makes the call again), else
** the error, with the table's message set. */
static int mainFailed(GpudsTable *p, int rc, const char *zWhat){
  if( movesOn(p->pOps, p->pMirror!=0, rc) ){
    return storeToHost(p, zWhat, whyFailed(p->pOps, p->pStore));
  }
  return storeErr(p, p->pOps, p->pStore, rc, zWhat);
}

/* Create an empty store for table p, and its mirror where it gets one,
** into *pNew: where the table's backend puts it, or on the host where the
** GPU cannot hold even an empty one (pNew->zWhy says why).  On failure
** *pNew holds nothing and the table's error is set. */
int gpudsStoreCreate(GpudsTable *p, GpudsStores *pNew){
  char *zErr = 0;
  int rc;
  memset(pNew, 0, sizeof(*pNew));
  pNew->pOps = gpudsStoreOps(p->eKind);
  rc = MAIN(pNew->pOps->xCreate(&pNew->pStore, &zErr));
  if( movesOn(pNew->pOps, 0, rc) ){
    sqlite3_snprintf((int)sizeof(pNew->zWhy), pNew->zWhy, "%s", hooked() ? HOOK_WHY : zErr ? zErr : "out of memory");
    free(zErr);
    zErr = 0;
    pNew->pOps = hostOpsFor(p);
    rc = pNew->pOps->xCreate(&pNew->pStore, &zErr);
  }
  if( rc ){
    gpudsVtabError(p, rc, "cannot create the %s store: %s", pNew->pOps->zBackend, zErr ? zErr : "error");
    free(zErr);
    memset(pNew, 0, sizeof(*pNew));
    return rc;
  }
  if( mirrorWanted(pNew->pOps) ){
    pNew->pMirOps = &gpudsHostOrderedOps;
    rc = pNew->pMirOps->xCreate(&pNew->pMirror, &zErr);
    if( rc ){
      gpudsVtabError(p, rc, "cannot create the host mirror: %s", zErr ? zErr : "error");
      free(zErr);
      gpudsStoresFree(pNew);
      return rc;
    }
  }
  return SQLITE_OK;
}

/* Free the stores of *pS (not their rows); it holds none afterwards. */
void gpudsStoresFree(GpudsStores *pS){
  if( pS->pStore ) pS->pOps->xDestroy(pS->pStore);
  if( pS->pMirror ) pS->pMirOps->xDestroy(pS->pMirror);
  memset(pS, 0, sizeof(*pS));
}

/* Free table p's store and mirror (not their rows: gpudsStoreFreeRows). */
void gpudsStoreFree(GpudsTable *p){
  if( p->pStore ) p->pOps->xDestroy(p->pStore);
  if( p->pMirror ) p->pMirOps->xDestroy(p->pMirror);
  p->pStore = 0;
  p->pMirror = 0;
}

/* Make *pNew table p's store, its old one freed (its rows freed already,
** or become pNew's), and with it where the table's column set goes: a
** table loaded again tries the GPU again.  *pNew holds nothing afterwards. */
void gpudsStoreInstall(GpudsTable *p, GpudsStores *pNew){
  gpudsStoreFree(p);
  p->pOps = pNew->pOps;
  p->pStore = pNew->pStore;
  p->pMirOps = pNew->pMirOps;
  p->pMirror = pNew->pMirror;
  memcpy(p->zStoreWhy, pNew->zWhy, sizeof(p->zStoreWhy));
  if( p->cs.pCols==0 ) p->cs.zWhy[0] = 0;
  memset(pNew, 0, sizeof(*pNew));
}

/* Make the store of pFrom (a table object nobody else sees: a background
** load's) table p's, as gpudsStoreInstall does; pFrom holds none after. */
void gpudsStoreTake(GpudsTable *p, GpudsTable *pFrom){
  GpudsStores s;
  s.pOps = pFrom->pOps;
  s.pStore = pFrom->pStore;
  s.pMirOps = pFrom->pMirOps;
  s.pMirror = pFrom->pMirror;
  memcpy(s.zWhy, pFrom->zStoreWhy, sizeof(s.zWhy));
  pFrom->pStore = 0;
  pFrom->pMirror = 0;
  gpudsStoreInstall(p, &s);
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

/* Undoing a batch on table p's store, which its mirror refused, failed
** (zWhy): the mirror, which the refused batch left as it was, takes over
** as the store, so that the two never disagree. */
static void storeUndoFailed(GpudsTable *p, const char *zWhy){
  char z[GPUDS_WHY_MAX];
  sqlite3_snprintf((int)sizeof(z), z, "the store could not undo a batch its host mirror "
           "refused: %s", zWhy);
  storeToHost(p, "undo", z);     /* cannot fail: there is a mirror */
}

/* Apply a batch of distinct keys to the store and its mirror: both or
** neither.  aFound/aOld may be NULL, and aVal where the batch holds no
** upsert (as for xBatch).  A store that runs out of GPU memory moves to
** the host, where the batch is applied. */
int gpudsStoreBatch(GpudsTable *p, size_t n, const uint8_t *aOp,
                    const int64_t *aKey, const uint64_t *aVal,
                    uint8_t *aFound, uint64_t *aOld){
  uint8_t *aF = aFound, *aInv = 0;
  uint64_t *aO = aOld;
  int rc;
  if( p->pMirror==0 ){
    rc = MAIN(p->pOps->xBatch(p->pStore, n, aOp, aKey, aVal, aFound, aOld));
    if( rc ){
      rc = mainFailed(p, rc, "applying a batch");
      return rc ? rc : gpudsStoreBatch(p, n, aOp, aKey, aVal, aFound, aOld);
    }
    colsLog(p, n, aOp, aKey);
    return SQLITE_OK;
  }
  if( aF==0 ) aF = malloc(n ? n : 1);
  if( aO==0 ) aO = malloc(n ? n*8 : 8);
  aInv = malloc(n ? n : 1);
  if( !aF || !aO || !aInv ){ rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto batch_out; }
  rc = MAIN(p->pOps->xBatch(p->pStore, n, aOp, aKey, aVal, aF, aO));
  if( rc ){
    rc = mainFailed(p, rc, "applying a batch");
    if( rc==SQLITE_OK ) rc = gpudsStoreBatch(p, n, aOp, aKey, aVal, aFound, aOld);
    goto batch_out;
  }
  if( allUpsertsAscending(n, aOp, aKey) ){
    /* a flush of inserts (keys sorted by the write buffer): the same
    ** result as the batch, and the mirror may merge them in one pass
    ** instead of descending the tree once a key */
    rc = p->pMirOps->xBulkLoad(p->pMirror, n, aKey, aVal);
  }else{
    rc = p->pMirOps->xBatch(p->pMirror, n, aOp, aKey, aVal, 0, 0);
  }
  if( rc ){
    /* Undo the GPU batch: put back what each key held before.  If that
    ** fails, the mirror, which the failed batch left as it was, takes
    ** over as the store. */
    size_t i;
    storeErr(p, p->pMirOps, p->pMirror, rc, "applying a batch to the host mirror");
    for(i=0; i<n; i++){
      aInv[i] = aOp[i]==GPUDS_OP_LOOKUP ? GPUDS_OP_LOOKUP
              : (aF[i] ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE);
    }
    if( MAIN(p->pOps->xBatch(p->pStore, n, aInv, aKey, aO, 0, 0)) ){
      storeUndoFailed(p, whyFailed(p->pOps, p->pStore));
    }
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
** mirror: both or neither.  A store that runs out of GPU memory moves to
** the host, where the keys are loaded. */
int gpudsStoreBulk(GpudsTable *p, size_t n, const int64_t *aKey, const uint64_t *aVal){
  int rc;
  gpudsStoreColsDrop(p);
  rc = MAIN(p->pOps->xBulkLoad(p->pStore, n, aKey, aVal));
  if( rc ){
    rc = mainFailed(p, rc, "bulk load");
    return rc ? rc : gpudsStoreBulk(p, n, aKey, aVal);
  }
  if( p->pMirror ){
    rc = p->pMirOps->xBulkLoad(p->pMirror, n, aKey, aVal);
    if( rc ){
      /* Take the keys out of the store again; if that fails, the mirror,
      ** left as it was, takes over as the store. */
      uint8_t *aOp = malloc(n ? n : 1);
      storeErr(p, p->pMirOps, p->pMirror, rc, "bulk load into the host mirror");
      if( aOp ) memset(aOp, GPUDS_OP_DELETE, n);
      if( aOp==0 ){
        storeUndoFailed(p, "out of memory");
      }else if( MAIN(p->pOps->xBatch(p->pStore, n, aOp, aKey, 0, 0, 0)) ){
        storeUndoFailed(p, whyFailed(p->pOps, p->pStore));
      }
      free(aOp);
    }
  }
  return rc;
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
  int bMain;                     /* pS is the main store (the hook's) */
  int bHooked;                   /* its failure was the hook's */
  char zWhy[GPUDS_WHY_MAX];      /* why it failed, if it did */
  int bThread;                   /* runs on thread tid */
  pthread_t tid;
} BuildJob;

static void *buildJobRun(void *pArg){
  BuildJob *j = (BuildJob*)pArg;
  if( j->pS ){
    j->rc = j->bMain ? MAIN(j->pOps->xBulkLoad(j->pS, j->n, j->aKey, j->aVal))
                     : j->pOps->xBulkLoad(j->pS, j->n, j->aKey, j->aVal);
    j->bHooked = j->bMain && hooked();
    if( j->rc ) sqlite3_snprintf((int)sizeof(j->zWhy), j->zWhy, "%s", whyFailed(j->pOps, j->pS));
  }else{
    gpudsFilterFill(j->pFilter, j->aKey, (int64_t)j->n);
  }
  return 0;
}

/* Below this many keys the parts of gpudsStoreBuild run one after another:
** a thread costs more than it saves. */
#define BUILD_THREAD_MIN 16384

/* The main store of a build failed (job j) for lack of GPU memory: put
** the keys on the host instead, into the mirror, which becomes the store,
** or, without one, into a new host store.  SQLITE_OK, or an error with the
** table's message set. */
static int buildToHost(GpudsTable *p, GpudsStores *pNew, BuildJob *j){
  gpuds_store *pHost = 0;
  char *zErr = 0;
  int rc = SQLITE_OK;
  if( pNew->pMirror ){
    pHost = pNew->pMirror;
    pNew->pOps->xDestroy(pNew->pStore);
    pNew->pOps = pNew->pMirOps;
    pNew->pMirOps = 0;
    pNew->pMirror = 0;
  }else{
    const gpuds_store_ops *pTo = hostOpsFor(p);
    rc = pTo->xCreate(&pHost, &zErr);
    if( rc==SQLITE_OK ){
      rc = j->n ? pTo->xBulkLoad(pHost, j->n, j->aKey, j->aVal) : SQLITE_OK;
      if( rc ){
        storeErr(p, pTo, pHost, rc, "bulk load into a host store");
        pTo->xDestroy(pHost);
        return rc;
      }
    }else{
      gpudsVtabError(p, rc, "cannot create a host store: %s", zErr ? zErr : "error");
      free(zErr);
      return rc;
    }
    pNew->pOps->xDestroy(pNew->pStore);
    pNew->pOps = pTo;
  }
  pNew->pStore = pHost;
  memcpy(pNew->zWhy, j->zWhy, sizeof(pNew->zWhy));
  return SQLITE_OK;
}

/* Build a reload's fresh, unpublished stores *pNew from sorted distinct
** keys: bulk-load its store and its mirror (if any) and fill the key
** filter pFilter (sized by gpudsFilterAlloc, or holding no bits), all
** three at once when there are many keys: distinct stores may be used from
** distinct threads, and the filter is nobody else's yet.  The calling
** thread loads the mirror if there is one (it takes the most host memory,
** and memory the process freed is reused fastest by the thread that freed
** it: other threads get fresh pages from their own malloc arenas), else
** the main store; the other store and the filter get threads of their own.
** Every thread is joined before returning.  A store the GPU cannot hold
** is built on the host (pNew->zWhy says why).  On error the table's
** message says why, and the caller frees the stores. */
int gpudsStoreBuild(GpudsTable *p, GpudsStores *pNew,
                    size_t n, const int64_t *aKey, const uint64_t *aVal,
                    GpudsFilter *pFilter){
  BuildJob aJob[3];                /* [0] main store, [1] mirror, [2] filter */
  gpuds_store *pMir = pNew->pMirror;
  int i, iHere = pMir ? 1 : 0;
  memset(aJob, 0, sizeof(aJob));
  aJob[0].pOps = pNew->pOps;
  aJob[0].pS = pNew->pStore;
  aJob[0].bMain = 1;
  aJob[1].pOps = pNew->pMirOps;
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
  if( aJob[1].rc ){
    return storeErr(p, pNew->pMirOps, pMir, aJob[1].rc, "bulk load into the host mirror");
  }
  if( aJob[0].rc ){
    tHooked = aJob[0].bHooked;
    if( movesOn(pNew->pOps, pMir!=0, aJob[0].rc) ) return buildToHost(p, pNew, &aJob[0]);
    return storeErr(p, pNew->pOps, pNew->pStore, aJob[0].rc, "bulk load");
  }
  return SQLITE_OK;
}

/* Look n keys up in the table's main store (not its mirror). */
static int mainLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                      uint8_t *aFound, uint64_t *aVal){
  int rc = MAIN(p->pOps->xLookup(p->pStore, n, aKey, aFound, aVal));
  if( rc ){
    rc = mainFailed(p, rc, "lookup");
    return rc ? rc : mainLookup(p, n, aKey, aFound, aVal);
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
  return mainLookup(p, n, aKey, aFound, aVal);
}

/* True if the table's scans (gpudsStoreScan, gpudsStoreEach) return keys
** in key order, honouring gpuds_scan's desc: an ordered store, or a hash
** store with its (ordered) host mirror, or the B+tree that took over from
** one (storeToHost).  Fixed for the table's life: the mirror exists iff
** gpudsStoreCreate made one, which depends only on the backend and
** GPUDS_MIRROR, both read once, and a store moved to the host is ordered
** iff it had a mirror (hostOpsFor). */
int gpudsStoreOrdered(const GpudsTable *p){
  return p->eKind==GPUDS_ORDERED || p->pOps->kind==GPUDS_ORDERED
      || (p->pMirOps!=0 && p->pMirOps->kind==GPUDS_ORDERED);
}

/* The next page of a scan.  Ordered scans continue from the last key
** returned, so for an ordered store small pages (the first ones) come from
** the mirror and large ones from the GPU, seamlessly, and a store moved to
** the host meanwhile goes on where the GPU's stopped.  A hash store's
** scans all come from its mirror: the GPU hash has no key order.  One
** without a mirror (GPUDS_MIRROR=0) that moves to the host past its first
** page cannot go on: its position is a slot of the GPU's table. */
int gpudsStoreScan(GpudsTable *p, gpuds_scan *pScan, size_t nMax,
                   int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  int rc, bOrdered;
  if( p->pMirror && (nMax<=MIRROR_MAX_PAGE || p->eKind!=GPUDS_ORDERED) ){
    rc = p->pMirOps->xScan(p->pMirror, pScan, nMax, aKey, aVal, pnOut);
    return rc ? storeErr(p, p->pMirOps, p->pMirror, rc, "scan") : SQLITE_OK;
  }
  rc = MAIN(p->pOps->xScan(p->pStore, pScan, nMax, aKey, aVal, pnOut));
  if( rc==SQLITE_OK ) return SQLITE_OK;
  bOrdered = p->pOps->kind==GPUDS_ORDERED;
  rc = mainFailed(p, rc, "scan");
  if( rc ) return rc;
  if( !bOrdered && pScan->pos!=0 ){
    return gpudsVtabError(p, SQLITE_ERROR, "scan: the store moved to the host "
                          "(%s) in the middle of a scan of it; run the statement "
                          "again", p->zStoreWhy);
  }
  return gpudsStoreScan(p, pScan, nMax, aKey, aVal, pnOut);
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
  if( rc==SQLITE_OK ) rc = mainLookup(p, n, aK, aF, aG);
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
  int rc = MAIN(p->pOps->xCheck(p->pStore));
  if( rc && movesOn(p->pOps, p->pMirror!=0, rc) ){
    rc = mainFailed(p, rc, "check");
    return rc ? rc : gpudsStoreCheck(p);
  }
  if( rc ){
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
