/*
** store.c -- the table's store as the rest of ext/ sees it: the backend
** store, and, when that store lives on the GPU, a host mirror of it.
**
** Why a mirror: SQLite asks for one row at a time (a point SELECT, each
** outer row of a join, each duplicate check of a plain INSERT, the first
** rows of a short range), and a GPU round trip costs several times an
** ordinary table's whole lookup.  The mirror (key -> row handle) answers
** those exactly; the GPU answers batches: flushed writes, bulk loads, IN
** lists and long scans of an ordered store.
**
** The mirror is always the host's ordered store (a B+tree), whatever the
** GPU store's kind.  A GPU hash store has no key order, and a mirror of
** the same kind made every key range and ORDER BY k on gpuhash snapshot
** the keys in range, sort them and read the rows back through random
** probes (slower than an ordinary table); an ordered mirror answers them
** as gfsl's does, by walking leaves in key order, and takes fewer bytes
** per row than a host hash at 70% load.  So every scan of a hash store
** with a mirror is a scan of the mirror (gpudsStoreScan), and
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
** The store, mirror, key filter and column set are a copy's (copy.c),
** which the connections of the process share: every call here takes the
** copy's latch (version.c), for reading around a read, for writing around
** a batch, and a read gives the table's snapshot: the store's answer with
** the versions newer than the snapshot laid over it (version.c).  Calls on
** a backend that takes no concurrent reads (its ops' bConcurrentReads is
** 0) are also serialised by the copy's muCall.
**
** No statement fails because the GPU is full.  A GPU store that runs out of
** memory (the GPU's, or the GPUDS_GPU_MEMORY cap's) moves the copy's store
** to the host, for every table that reads the copy, and the call is made
** there (storeToHost, under the latch held for writing: mainFailed): the
** mirror becomes the store, at no cost, since between calls it holds
** exactly the store's entries; without one (GPUDS_MIRROR=0) the store is
** copied by a scan (hostOpsFor says into what).  A store the GPU cannot
** hold at all is made on the host (gpudsStoreCreate, gpudsStoreBuild).
** The copy's zStoreWhy says why (gpuds_info()); a new copy (a load) tries
** the GPU again.  A column set moves the same way (colsToHost, cs.zWhy).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "gpuds_sort.h"
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

/* Serialise a call on a store of pOps where its backend takes no
** concurrent reads (bConcurrentReads). */
static void callBegin(GpudsCopy *c, const gpuds_store_ops *pOps){
  if( !pOps->bConcurrentReads ) pthread_mutex_lock(&c->muCall);
}
static void callEnd(GpudsCopy *c, const gpuds_store_ops *pOps){
  if( !pOps->bConcurrentReads ) pthread_mutex_unlock(&c->muCall);
}
/* ... and on a column set of pOps. */
static void colsCallBegin(GpudsCopy *c, const gpuds_cols_ops *pOps){
  if( !pOps->bConcurrentReads ) pthread_mutex_lock(&c->muCall);
}
static void colsCallEnd(GpudsCopy *c, const gpuds_cols_ops *pOps){
  if( !pOps->bConcurrentReads ) pthread_mutex_unlock(&c->muCall);
}

/* Drop copy c's column set and its log of changed keys (nobody reads it:
** the latch is held for writing, or the copy is nobody else's). */
void gpudsStoreColsDrop(GpudsCopy *c){
  GpudsColState *cs = &c->cs;
  if( cs->pCols ) cs->pOps->xFree(cs->pCols);
  __atomic_store_n(&cs->pCols, (gpuds_cols*)0, __ATOMIC_RELEASE);
  cs->nRows = 0;
  free(cs->aDirty);
  cs->aDirty = 0;
  cs->nDirty = cs->nDirtyAlloc = 0;
  free(cs->aBytes);
  cs->aBytes = 0;
  if( cs->aText ){
    int i;
    for(i=0; i<c->nCol-1; i++) free(cs->aText[i].aAmbig);
    free(cs->aText);
    cs->aText = 0;
  }
}

/* Log the keys that batch aOp/aKey changed for the column set, or drop the
** set when the log is too long to be worth keeping (or memory runs out). */
static void colsLog(GpudsCopy *c, size_t n, const uint8_t *aOp, const int64_t *aKey){
  GpudsColState *cs = &c->cs;
  int64_t nMax = cs->nRows/COLS_DIRTY_DIV;
  size_t i;
  if( cs->pCols==0 ) return;
  if( nMax<COLS_DIRTY_MIN ) nMax = COLS_DIRTY_MIN;
  if( cs->nDirty + (int64_t)n > nMax ){ gpudsStoreColsDrop(c); return; }
  if( cs->nDirty + (int64_t)n > cs->nDirtyAlloc ){
    int64_t nNew = (cs->nDirty + (int64_t)n)*2;
    int64_t *a = realloc(cs->aDirty, (size_t)nNew*8);
    if( a==0 ){ gpudsStoreColsDrop(c); return; }
    cs->aDirty = a;
    cs->nDirtyAlloc = nNew;
  }
  for(i=0; i<n; i++){
    if( aOp[i]!=GPUDS_OP_LOOKUP ) cs->aDirty[cs->nDirty++] = aKey[i];
  }
}

/* Copy the last error of store pS into the table's error message (p may
** be NULL: no message). */
static int storeErr(GpudsTable *p, const gpuds_store_ops *pOps, gpuds_store *pS,
                    int rc, const char *zWhat){
  if( p==0 ) return rc;
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
/* A call to a copy's main store, under the hook. */
#define MAIN(call) (hookFires() ? GPUDS_NOMEM : (call))

/* Why the calling thread's last call to store pS (ops pOps) failed. */
static const char *whyFailed(const gpuds_store_ops *pOps, gpuds_store *pS){
  return hooked() ? HOOK_WHY : pOps->xErrmsg(pS);
}

/* ------------------------------------------------------------ placement */

/* True if the backend named zBackend (a store's or a column set's ops)
** runs on the GPU: what runs out of memory there moves to the host. */
static int onGpu(const char *zBackend){
  return strcmp(zBackend, "host")!=0;
}

/* True if a store of pOps gets a host mirror (GPUDS_MIRROR=1 mirrors a
** host store too: tests use it to run the mirror's routing on machines
** with no GPU). */
static int mirrorWanted(const gpuds_store_ops *pOps){
  int eMirror = gpudsConfig()->eMirror;
  return (onGpu(pOps->zBackend) && eMirror!=GPUDS_MIRROR_NEVER) || eMirror==GPUDS_MIRROR_ALWAYS;
}

/* The host store copy c's store becomes where the GPU cannot hold it: a
** B+tree where its store would have a mirror (which is one: the table
** reads in key order either way), else the host store of its kind. */
static const gpuds_store_ops *hostOpsFor(const GpudsCopy *c){
  if( c->eKind==GPUDS_ORDERED || mirrorWanted(gpudsStoreOps(c->eKind)) ){
    return &gpudsHostOrderedOps;
  }
  return &gpudsHostHashOps;
}

/* True if failure rc of a call to a main store of ops pOps (with a mirror
** if bMirror) moves that store to the host: out of memory on the GPU, or
** with a mirror to take over (GPUDS_MIRROR=1 on the host), or the hook. */
static int movesOn(const gpuds_store_ops *pOps, int bMirror, int rc){
  return rc==GPUDS_NOMEM && (onGpu(pOps->zBackend) || bMirror || hooked());
}

/* The ops copy c's next column set is built with: the host's where a build
** or a query found that the GPU could not hold it (cs.zWhy), else those
** beside the store its kind's backend makes, wherever the store itself
** went. */
static const gpuds_cols_ops *colsOpsFor(const GpudsCopy *c){
  if( c->cs.zWhy[0] ) return &gpudsHostColsOps;
  return gpudsColsOps(gpudsStoreOps(c->eKind));
}

/* ------------------------------------------------------------ what it is
** Only this file calls the backends' ops tables (the store's, the
** mirror's, the column set's): the rest of ext/ asks through these. */

/* Keys the store holds: the newest state, with the writer's flushed
** batches. */
int64_t gpudsStoreCount(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int64_t n;
  gpudsLatchRead(p);
  callBegin(c, c->pOps);
  n = c->pOps->xCount(c->pStore);
  callEnd(c, c->pOps);
  gpudsLatchReadEnd(p);
  return n;
}

/* Rows of the table at p's snapshot (without its write buffer). */
int64_t gpudsStoreRows(GpudsTable *p){
  int64_t n;
  gpudsLatchRead(p);
  n = gpudsStoreCount(p) - gpudsVersionDelta(p);
  gpudsLatchReadEnd(p);
  return n;
}

/* The backend a new table of kind eKind (GPUDS_ORDERED or GPUDS_HASH)
** gets: "cuda" or "host". */
const char *gpudsStoreKindBackend(int eKind){
  return gpudsStoreOps(eKind)->zBackend;
}

/* The backend of the table's store: "cuda" or "host". */
const char *gpudsStoreBackend(const GpudsTable *p){
  return p->pCopy->pOps->zBackend;
}

/* The kind of the table's store (GPUDS_ORDERED or GPUDS_HASH): a gpuhash
** table's store moved to the host is a B+tree. */
int gpudsStoreKind(const GpudsTable *p){
  return p->pCopy->pOps->kind;
}

/* "", or why the table's store is on the host though its backend is the
** GPU's (it ran out of GPU memory, or GPUDS_GPU_MEMORY would be passed). */
const char *gpudsStoreWhy(const GpudsTable *p){
  return p->pCopy->zStoreWhy;
}

/* "", or why the table's column set is on the host though it would be
** beside a GPU store. */
const char *gpudsColsWhy(const GpudsTable *p){
  return p->pCopy->cs.zWhy;
}

/* True if the table's store has a host mirror. */
int gpudsStoreHasMirror(const GpudsTable *p){
  return p->pCopy->pMirror!=0;
}

/* The JSON object the store (bMirror: its host mirror) describes itself
** with, into zBuf (at most nBuf bytes); 0 and zBuf empty if there is no
** such store. */
int gpudsStoreInfo(GpudsTable *p, int bMirror, char *zBuf, size_t nBuf){
  GpudsCopy *c = p->pCopy;
  int bAny = 1;
  zBuf[0] = 0;
  gpudsLatchRead(p);
  if( bMirror ){
    if( c->pMirror==0 ){
      bAny = 0;
    }else{
      callBegin(c, c->pMirOps);
      c->pMirOps->xInfo(c->pMirror, zBuf, nBuf);
      callEnd(c, c->pMirOps);
    }
  }else{
    callBegin(c, c->pOps);
    c->pOps->xInfo(c->pStore, zBuf, nBuf);
    callEnd(c, c->pOps);
  }
  gpudsLatchReadEnd(p);
  return bAny;
}

/* True if the table has a column set. */
int gpudsColsBuilt(const GpudsTable *p){
  return __atomic_load_n(&p->pCopy->cs.pCols, __ATOMIC_ACQUIRE)!=0;
}

/* The backend of the table's column set ("cuda" or "host"), or of the one
** a build would try first. */
const char *gpudsColsBackend(const GpudsTable *p){
  const GpudsCopy *c = p->pCopy;
  return (gpudsColsBuilt(p) ? c->cs.pOps : colsOpsFor(c))->zBackend;
}

/* Make the table's column set from the arrays of a build (colbuild.c:
** n rows, nCol columns, see gpuds_cols_ops.xLoad), on the backend beside
** the store, or on the host's where the GPU cannot hold it (full, or
** GPUDS_GPU_MEMORY): the host set answers the same plans, and takes every
** build of the copy from then on (cs.zWhy).  The caller holds the latch
** for reading and the copy's muCols.  On error the table has none and its
** message says why. */
int gpudsStoreColsLoad(GpudsTable *p, int nCol, int64_t n, const int64_t *aKey,
                       const uint64_t *aRow, const uint8_t *aTag, const uint64_t *aVal){
  GpudsColState *cs = &p->pCopy->cs;
  gpuds_cols *pCols = 0;
  char *zErr = 0;
  int rc;
  for(cs->pOps = colsOpsFor(p->pCopy); ; cs->pOps = &gpudsHostColsOps){
    rc = cs->pOps->xLoad(&pCols, nCol, n, gpudsStoreOrdered(p),
                         aKey, aRow, aTag, aVal, &zErr);
    if( rc!=GPUDS_NOMEM || !onGpu(cs->pOps->zBackend) ) break;
    sqlite3_snprintf((int)sizeof(cs->zWhy), cs->zWhy, "%s", zErr ? zErr : "out of memory");
    free(zErr);
    zErr = 0;
  }
  if( rc ){
    gpudsVtabError(p, rc, "cannot build the %s column set: %s", cs->pOps->zBackend,
                   zErr ? zErr : "error");
    free(zErr);
    return rc;
  }
  cs->nRows = n;
  cs->nBuild++;
  {
    static int64_t iBuildLast = 0;
    cs->iBuildId = __atomic_add_fetch(&iBuildLast, 1, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&cs->pCols, pCols, __ATOMIC_RELEASE);
  return SQLITE_OK;
}

/* Copy c's column set pFailed (of ops pOps), which p's call found the GPU
** has no room for (zWhy), moves to the host: it is dropped, unless another
** table dropped it meanwhile, and the copy's next build goes to the host
** (cs.zWhy).  Dropping it takes the latch for writing (p's hold for reading
** let go meanwhile: gpudsLatchUpgrade), so the caller builds the set again
** and learns the skipped keys again. */
static void colsToHost(GpudsTable *p, const gpuds_cols *pFailed, const char *zWhy){
  GpudsCopy *c = p->pCopy;
  char z[GPUDS_WHY_MAX];
  int bUp = !p->bLatchWrite;
  sqlite3_snprintf((int)sizeof(z), z, "%s", zWhy);     /* zWhy may be the set's */
  if( bUp ) gpudsLatchUpgrade(p);
  if( c->cs.pCols==pFailed ){
    gpudsStoreColsDrop(c);
    memcpy(c->cs.zWhy, z, sizeof(z));
  }
  if( bUp ) gpudsLatchWriteEnd(p);
}

/* One read call on a column set: xQuery's arguments, or xAgg's (pAgg). */
typedef struct ColsCall {
  const gpuds_query *q; int64_t *pn, **paKey; uint64_t **paRow, **paSort;
  const gpuds_agg *pAgg; gpuds_aggres *pRes;
} ColsCall;

/* Make call a on the table's column set (the caller holds the latch for
** reading since it learnt the skipped keys).  *pbGone where the set is
** gone (the GPU had no room for the call: colsToHost; or another table
** dropped it while p waited): the caller builds it again, learns the
** skipped keys again and asks again.  Else the backend's code, with its
** message in the table's (none for xAgg's GPUDS_MISUSE). */
static int colsCall(GpudsTable *p, const ColsCall *a, int *pbGone){
  GpudsCopy *c = p->pCopy;
  const gpuds_cols_ops *pOps = c->cs.pOps;
  gpuds_cols *pCols = c->cs.pCols;
  char zMsg[GPUDS_WHY_MAX];
  int rc;
  *pbGone = 0;
  if( pCols==0 ){ *pbGone = 1; return SQLITE_OK; }
  colsCallBegin(c, pOps);
  rc = a->pAgg ? pOps->xAgg(pCols, a->pAgg, a->pRes)
               : pOps->xQuery(pCols, a->q, a->pn, a->paKey, a->paRow, a->paSort);
  /* now, on this thread: with concurrent reads the message is its own */
  if( rc ) sqlite3_snprintf((int)sizeof(zMsg), zMsg, "%s", pOps->xErrmsg(pCols));
  colsCallEnd(c, pOps);
  if( rc==GPUDS_NOMEM && onGpu(pOps->zBackend) ){
    colsToHost(p, pCols, zMsg);
    *pbGone = 1;
    return SQLITE_OK;
  }
  if( rc && !(a->pAgg && rc==GPUDS_MISUSE) ){
    rc = gpudsVtabError(p, rc, "%s column set: %s", pOps->zBackend, zMsg);
  }
  return rc;
}

/* Query the table's column set (built: gpudsColsBuilt): xQuery through
** colsCall; *pbAgain where the set is gone. */
int gpudsStoreColsQuery(GpudsTable *p, const gpuds_query *q, int64_t *pn,
                        int64_t **paKey, uint64_t **paRow, uint64_t **paSort,
                        int *pbAgain){
  ColsCall a = { q, pn, paKey, paRow, paSort, 0, 0 };
  return colsCall(p, &a, pbAgain);
}

/* Aggregate on the table's column set (as gpudsStoreColsQuery): xAgg.
** GPUDS_MISUSE, with no message, where the set does not aggregate this
** time: its backend has none, or the set is gone (colsCall's *pbGone);
** another error with its message. */
int gpudsStoreColsAgg(GpudsTable *p, const gpuds_agg *pAgg, gpuds_aggres *pRes){
  ColsCall a = { 0, 0, 0, 0, 0, pAgg, pRes };
  int bGone = 0, rc = colsCall(p, &a, &bGone);
  return bGone ? GPUDS_MISUSE : rc;
}

/* Bytes the table's column set holds (0 if none). */
int64_t gpudsColsBytes(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int64_t n = 0;
  gpudsLatchRead(p);
  if( c->cs.pCols ){
    colsCallBegin(c, c->cs.pOps);
    n = c->cs.pOps->xBytes(c->cs.pCols);
    colsCallEnd(c, c->cs.pOps);
  }
  gpudsLatchReadEnd(p);
  return n;
}

/* The keys whose rows the column set must not give the table (the caller
** holds the latch for reading): those changed in the store since the set
** was built, and those of the versions newer than p's snapshot, appended
** to *pa (malloc()'d, grown; *pn so far; in no order, repeats possible). */
int gpudsStoreColsSkip(GpudsTable *p, int64_t **pa, int64_t *pn){
  GpudsColState *cs = &p->pCopy->cs;
  if( cs->nDirty ){
    int64_t *a = realloc(*pa, (size_t)(*pn + cs->nDirty)*8);
    if( a==0 ) return SQLITE_NOMEM;
    memcpy(&a[*pn], cs->aDirty, (size_t)cs->nDirty*8);
    *pa = a;
    *pn += cs->nDirty;
  }
  return gpudsVersionKeys(p, pa, pn);
}

/* ------------------------------------------------------------ the store */

/* Create the empty stores of copy c for table p, and the mirror beside a
** store that gets one: where the table's backend puts it, or on the host
** where the GPU cannot hold even an empty one (c->zStoreWhy says why).  On
** failure c has none and the table's error is set. */
int gpudsStoreCreate(GpudsTable *p, GpudsCopy *c){
  char *zErr = 0;
  int rc;
  c->pStore = c->pMirror = 0;
  c->pOps = gpudsStoreOps(p->eKind);
  c->pMirOps = 0;
  c->zStoreWhy[0] = 0;
  rc = MAIN(c->pOps->xCreate(&c->pStore, &zErr));
  if( movesOn(c->pOps, 0, rc) ){
    sqlite3_snprintf((int)sizeof(c->zStoreWhy), c->zStoreWhy, "%s",
                     hooked() ? HOOK_WHY : zErr ? zErr : "out of memory");
    free(zErr);
    zErr = 0;
    c->pOps = hostOpsFor(c);
    rc = c->pOps->xCreate(&c->pStore, &zErr);
  }
  if( rc ){
    gpudsVtabError(p, rc, "cannot create the %s store: %s", c->pOps->zBackend, zErr ? zErr : "error");
    free(zErr);
    c->pStore = 0;
    return rc;
  }
  if( mirrorWanted(c->pOps) ){
    c->pMirOps = &gpudsHostOrderedOps;
    rc = c->pMirOps->xCreate(&c->pMirror, &zErr);
    if( rc ){
      gpudsVtabError(p, rc, "cannot create the host mirror: %s", zErr ? zErr : "error");
      free(zErr);
      c->pOps->xDestroy(c->pStore);
      c->pStore = c->pMirror = 0;
      return rc;
    }
  }
  return SQLITE_OK;
}

/* Free copy c's stores (not their rows: gpudsStoreFreeRows). */
void gpudsStoreFree(GpudsCopy *c){
  if( c->pStore && c->pOps ) c->pOps->xDestroy(c->pStore);
  if( c->pMirror && c->pMirOps ) c->pMirOps->xDestroy(c->pMirror);
  c->pStore = c->pMirror = 0;
}

/* ------------------------------------------------------------ moves to the host */

/* Fill *ppNew, a new store of pTo, with every entry of copy c's store
** (copied through its scan; nobody else reads c).  On error table p's
** message says why and *ppNew is NULL. */
static int storeCopy(GpudsTable *p, GpudsCopy *c, const gpuds_store_ops *pTo,
                     gpuds_store **ppNew){
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
    rc = c->pOps->xScan(c->pStore, &sc, nPage, aK, aV, &nOut);
    if( rc ){ storeErr(p, c->pOps, c->pStore, rc, "scan"); break; }
    rc = pTo->xBatch(*ppNew, nOut, aOp, aK, aV, 0, 0);
    if( rc ) storeErr(p, pTo, *ppNew, rc, "copying the store to the host");
  }
  if( rc && *ppNew ){ pTo->xDestroy(*ppNew); *ppNew = 0; }
  free(aK); free(aV); free(aOp);
  return rc;
}

/* Move copy c's store to the host, because a call to it failed for lack
** of memory (zWhy: why, zWhat: the call; the latch held for writing): its
** mirror becomes the store, or, without one, a copy of it.  SQLITE_OK,
** the caller then makes the call again; else c is unchanged and table p's
** message says why. */
static int storeToHost(GpudsTable *p, GpudsCopy *c, const char *zWhat, const char *zWhy){
  char zCopy[GPUDS_WHY_MAX];
  sqlite3_snprintf((int)sizeof(zCopy), zCopy, "%s", zWhy);    /* zWhy may be the store's */
  if( c->pMirror ){
    c->pOps->xDestroy(c->pStore);
    c->pOps = c->pMirOps;
    c->pStore = c->pMirror;
    c->pMirOps = 0;
    c->pMirror = 0;
  }else{
    const gpuds_store_ops *pTo = hostOpsFor(c);
    gpuds_store *pNew = 0;
    int rc = storeCopy(p, c, pTo, &pNew);
    if( rc ){
      char zCopyErr[GPUDS_WHY_MAX];
      sqlite3_snprintf((int)sizeof(zCopyErr), zCopyErr, "%s", p->base.zErrMsg ? p->base.zErrMsg : "error");
      return gpudsVtabError(p, SQLITE_NOMEM, "%s: %s (and the store could not be "
                            "moved to the host: %s)", zWhat, zCopy, zCopyErr);
    }
    c->pOps->xDestroy(c->pStore);
    c->pOps = pTo;
    c->pStore = pNew;
  }
  memcpy(c->zStoreWhy, zCopy, sizeof(zCopy));
  return SQLITE_OK;
}

/* A call zWhat of table p to its copy's main store pFailed failed with rc
** (the call's hold on the backend let go): SQLITE_OK if the store moved
** to the host for it (the caller makes the call again), else the error,
** with the table's message set.  A reader takes the latch for writing for
** the move (gpudsLatchUpgrade), letting its hold for reading go meanwhile;
** another table may have moved the store then.  bSpan: the caller's hold
** spans calls that must see one state of the store (a walk): where a
** writer came in meanwhile, the statement fails, saying to run it again. */
static int mainFailed(GpudsTable *p, gpuds_store *pFailed, int rc, const char *zWhat,
                      int bSpan){
  GpudsCopy *c = p->pCopy;
  char zWhy[GPUDS_WHY_MAX];
  int bOther;
  int bUp = !p->bLatchWrite;
  if( !movesOn(c->pOps, c->pMirror!=0, rc) ){
    return storeErr(p, c->pOps, c->pStore, rc, zWhat);
  }
  sqlite3_snprintf((int)sizeof(zWhy), zWhy, "%s", whyFailed(c->pOps, c->pStore));
  if( !bUp ) return storeToHost(p, c, zWhat, zWhy);
  bOther = gpudsLatchUpgrade(p);
  rc = c->pStore==pFailed ? storeToHost(p, c, zWhat, zWhy) : SQLITE_OK;
  if( rc==SQLITE_OK && bSpan && bOther ){
    rc = gpudsVtabError(p, SQLITE_ERROR, "%s: the store moved to the host (%s) "
                        "while the statement read it; run the statement again",
                        zWhat, c->zStoreWhy);
  }
  gpudsLatchWriteEnd(p);
  return rc;
}

/* Undoing a batch on copy c's store, which its mirror refused, failed
** (zWhy): the mirror, which the refused batch left as it was, takes over
** as the store, so that the two never disagree. */
static void storeUndoFailed(GpudsTable *p, GpudsCopy *c, const char *zWhy){
  char z[GPUDS_WHY_MAX];
  sqlite3_snprintf((int)sizeof(z), z, "the store could not undo a batch its host mirror "
           "refused: %s", zWhy);
  storeToHost(p, c, "undo", z);     /* cannot fail: there is a mirror */
}

/* ------------------------------------------------------------ batches */

/* True if every op of the batch is an upsert and the keys strictly
** ascend: the batch is then an xBulkLoad (backend contract). */
static int allUpsertsAscending(size_t n, const uint8_t *aOp, const int64_t *aKey){
  size_t i;
  for(i=0; i<n; i++){
    if( aOp[i]!=GPUDS_OP_UPSERT || (i>0 && aKey[i]<=aKey[i-1]) ) return 0;
  }
  return n>0;
}

/* Apply a batch of distinct keys to the store and its mirror (the latch
** held for writing): both or neither.  aFound/aOld may be NULL, and aVal
** where the batch holds no upsert (as for xBatch).  A store that runs out
** of GPU memory moves to the host, where the batch is applied. */
int gpudsStoreBatch(GpudsTable *p, size_t n, const uint8_t *aOp,
                    const int64_t *aKey, const uint64_t *aVal,
                    uint8_t *aFound, uint64_t *aOld){
  GpudsCopy *c = p->pCopy;
  uint8_t *aF = aFound, *aInv = 0;
  uint64_t *aO = aOld;
  int rc;
  if( c->pMirror==0 ){
    rc = MAIN(c->pOps->xBatch(c->pStore, n, aOp, aKey, aVal, aFound, aOld));
    if( rc ){
      rc = mainFailed(p, c->pStore, rc, "applying a batch", 0);
      return rc ? rc : gpudsStoreBatch(p, n, aOp, aKey, aVal, aFound, aOld);
    }
    colsLog(c, n, aOp, aKey);
    return SQLITE_OK;
  }
  if( aF==0 ) aF = malloc(n ? n : 1);
  if( aO==0 ) aO = malloc(n ? n*8 : 8);
  aInv = malloc(n ? n : 1);
  if( !aF || !aO || !aInv ){ rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto batch_out; }
  rc = MAIN(c->pOps->xBatch(c->pStore, n, aOp, aKey, aVal, aF, aO));
  if( rc ){
    rc = mainFailed(p, c->pStore, rc, "applying a batch", 0);
    if( rc==SQLITE_OK ) rc = gpudsStoreBatch(p, n, aOp, aKey, aVal, aFound, aOld);
    goto batch_out;
  }
  if( allUpsertsAscending(n, aOp, aKey) ){
    /* a flush of inserts (keys sorted by the write buffer): the same
    ** result as the batch, and the mirror may merge them in one pass
    ** instead of descending the tree once a key */
    rc = c->pMirOps->xBulkLoad(c->pMirror, n, aKey, aVal);
  }else{
    rc = c->pMirOps->xBatch(c->pMirror, n, aOp, aKey, aVal, 0, 0);
  }
  if( rc ){
    /* Undo the GPU batch: put back what each key held before.  If that
    ** fails, the mirror, which the failed batch left as it was, takes
    ** over as the store. */
    size_t i;
    storeErr(p, c->pMirOps, c->pMirror, rc, "applying a batch to the host mirror");
    for(i=0; i<n; i++){
      aInv[i] = aOp[i]==GPUDS_OP_LOOKUP ? GPUDS_OP_LOOKUP
              : (aF[i] ? GPUDS_OP_UPSERT : GPUDS_OP_DELETE);
    }
    if( MAIN(c->pOps->xBatch(c->pStore, n, aInv, aKey, aO, 0, 0)) ){
      storeUndoFailed(p, c, whyFailed(c->pOps, c->pStore));
    }
  }else{
    colsLog(c, n, aOp, aKey);
  }
batch_out:
  if( aF!=aFound ) free(aF);
  if( aO!=aOld ) free(aO);
  free(aInv);
  return rc;
}

/* Bulk-load sorted distinct new keys into the table's store and its
** mirror (the latch held for writing): both or neither.  A store that
** runs out of GPU memory moves to the host, where the keys are loaded. */
int gpudsStoreBulk(GpudsTable *p, size_t n, const int64_t *aKey, const uint64_t *aVal){
  GpudsCopy *c = p->pCopy;
  int rc;
  gpudsStoreColsDrop(c);
  rc = MAIN(c->pOps->xBulkLoad(c->pStore, n, aKey, aVal));
  if( rc ){
    rc = mainFailed(p, c->pStore, rc, "bulk load", 0);
    return rc ? rc : gpudsStoreBulk(p, n, aKey, aVal);
  }
  if( c->pMirror ){
    rc = c->pMirOps->xBulkLoad(c->pMirror, n, aKey, aVal);
    if( rc ){
      /* Take the keys out of the store again; if that fails, the mirror,
      ** left as it was, takes over as the store. */
      uint8_t *aOp = malloc(n ? n : 1);
      storeErr(p, c->pMirOps, c->pMirror, rc, "bulk load into the host mirror");
      if( aOp ) memset(aOp, GPUDS_OP_DELETE, n);
      if( aOp==0 ){
        storeUndoFailed(p, c, "out of memory");
      }else if( MAIN(c->pOps->xBatch(c->pStore, n, aOp, aKey, 0, 0, 0)) ){
        storeUndoFailed(p, c, whyFailed(c->pOps, c->pStore));
      }
      free(aOp);
    }
  }
  return rc;
}

/* ------------------------------------------------------------ builds */

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

/* The main store of a build of copy c failed (job j) for lack of GPU
** memory: put the keys on the host instead, into the mirror, which becomes
** the store, or, without one, into a new host store.  SQLITE_OK, or an
** error with table p's message set. */
static int buildToHost(GpudsTable *p, GpudsCopy *c, BuildJob *j){
  gpuds_store *pHost = 0;
  char *zErr = 0;
  int rc = SQLITE_OK;
  if( c->pMirror ){
    pHost = c->pMirror;
    c->pOps->xDestroy(c->pStore);
    c->pOps = c->pMirOps;
    c->pMirOps = 0;
    c->pMirror = 0;
  }else{
    const gpuds_store_ops *pTo = hostOpsFor(c);
    rc = pTo->xCreate(&pHost, &zErr);
    if( rc ){
      gpudsVtabError(p, rc, "cannot create a host store: %s", zErr ? zErr : "error");
      free(zErr);
      return rc;
    }
    rc = j->n ? pTo->xBulkLoad(pHost, j->n, j->aKey, j->aVal) : SQLITE_OK;
    if( rc ){
      storeErr(p, pTo, pHost, rc, "bulk load into a host store");
      pTo->xDestroy(pHost);
      return rc;
    }
    c->pOps->xDestroy(c->pStore);
    c->pOps = pTo;
  }
  c->pStore = pHost;
  memcpy(c->zStoreWhy, j->zWhy, sizeof(c->zStoreWhy));
  return SQLITE_OK;
}

/* Build a load's fresh copy c (nobody else's yet, its stores empty) from
** sorted distinct keys: bulk-load its store and mirror and fill its key
** filter (sized by gpudsFilterAlloc, or holding no bits), all three at
** once when there are many keys: distinct stores may be used from distinct
** threads, and the filter is nobody else's yet.  The calling thread loads
** the mirror if there is one (it takes the most host memory, and memory
** the process freed is reused fastest by the thread that freed it: other
** threads get fresh pages from their own malloc arenas), else the main
** store; the other store and the filter get threads of their own.  Every
** thread is joined before returning.  A store the GPU cannot hold is
** built on the host (c->zStoreWhy says why).  On error table p's message
** says why, and the caller frees c. */
int gpudsStoreBuild(GpudsTable *p, GpudsCopy *c, size_t n, const int64_t *aKey,
                    const uint64_t *aVal){
  BuildJob aJob[3];                /* [0] main store, [1] mirror, [2] filter */
  gpuds_store *pMir = c->pMirror;
  GpudsFilter *pFilter = &c->filter;
  int i, iHere = pMir ? 1 : 0;
  memset(aJob, 0, sizeof(aJob));
  aJob[0].pOps = c->pOps;
  aJob[0].pS = c->pStore;
  aJob[0].bMain = 1;
  aJob[1].pOps = c->pMirOps;
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
    return storeErr(p, c->pMirOps, pMir, aJob[1].rc, "bulk load into the host mirror");
  }
  if( aJob[0].rc ){
    tHooked = aJob[0].bHooked;
    if( movesOn(c->pOps, pMir!=0, aJob[0].rc) ) return buildToHost(p, c, &aJob[0]);
    return storeErr(p, c->pOps, c->pStore, aJob[0].rc, "bulk load");
  }
  return SQLITE_OK;
}

/* ------------------------------------------------------------ reads */

/* Look n keys up in the main store (not its mirror) of p's copy as it is
** (the latch held).  One that runs out of GPU memory moves to the host,
** where the keys are looked up. */
static int mainLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                      uint8_t *aFound, uint64_t *aVal){
  GpudsCopy *c = p->pCopy;
  const gpuds_store_ops *pOps = c->pOps;
  gpuds_store *pS = c->pStore;
  int rc;
  callBegin(c, pOps);
  rc = MAIN(pOps->xLookup(pS, n, aKey, aFound, aVal));
  callEnd(c, pOps);
  if( rc ){
    rc = mainFailed(p, pS, rc, "lookup", 0);
    return rc ? rc : mainLookup(p, n, aKey, aFound, aVal);
  }
  return SQLITE_OK;
}

/* Look n keys up, as p's snapshot sees them: a few on the host mirror,
** many on the GPU. */
int gpudsStoreLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                     uint8_t *aFound, uint64_t *aVal){
  GpudsCopy *c = p->pCopy;
  int rc;
  gpudsLatchRead(p);
  if( c->pMirror && n<=MIRROR_MAX_LOOKUP ){
    callBegin(c, c->pMirOps);
    rc = c->pMirOps->xLookup(c->pMirror, n, aKey, aFound, aVal);
    callEnd(c, c->pMirOps);
    if( rc ) rc = storeErr(p, c->pMirOps, c->pMirror, rc, "lookup");
  }else{
    rc = mainLookup(p, n, aKey, aFound, aVal);
  }
  if( rc==SQLITE_OK && gpudsVersionNewer(p) ) gpudsVersionLookup(p, n, aKey, aFound, aVal);
  gpudsLatchReadEnd(p);
  return rc;
}

/* True if the table's scans (gpudsStoreScan, gpudsStoreEach) return keys
** in key order, honouring gpuds_scan's desc: an ordered store, or a hash
** store with its (ordered) host mirror, or the B+tree that took over from
** one (storeToHost).  Fixed for the copy's life: the mirror exists iff
** gpudsStoreCreate made one, which depends only on the backend and
** GPUDS_MIRROR, both read once, and a store moved to the host is ordered
** iff it had a mirror (hostOpsFor). */
int gpudsStoreOrdered(const GpudsTable *p){
  const GpudsCopy *c = p->pCopy;
  return p->eKind==GPUDS_ORDERED || c->pOps->kind==GPUDS_ORDERED
      || (c->pMirOps!=0 && c->pMirOps->kind==GPUDS_ORDERED);
}

/* The next page of a scan of the store as it is (the latch held; bSpan:
** as one of a walk, see mainFailed).  Ordered scans continue from the last
** key returned, so for an ordered store small pages (the first ones) come
** from the mirror and large ones from the GPU, seamlessly, and a store
** moved to the host meanwhile goes on where the GPU's stopped.  A hash
** store's scans all come from its mirror where it has one: the GPU hash
** has no key order.  One without a mirror (GPUDS_MIRROR=0) that moves to
** the host past its first page cannot go on: its position is a slot of
** the GPU's table.  p may be NULL only where nothing moves (the copy is
** being freed). */
static int storePage(GpudsTable *p, GpudsCopy *c, gpuds_scan *pScan, size_t nMax,
                     int64_t *aKey, uint64_t *aVal, size_t *pnOut, int bSpan){
  const gpuds_store_ops *pOps = c->pOps;
  gpuds_store *pS = c->pStore;
  int rc;
  if( c->pMirror && (nMax<=MIRROR_MAX_PAGE || c->eKind!=GPUDS_ORDERED) ){
    callBegin(c, c->pMirOps);
    rc = c->pMirOps->xScan(c->pMirror, pScan, nMax, aKey, aVal, pnOut);
    callEnd(c, c->pMirOps);
    return rc ? storeErr(p, c->pMirOps, c->pMirror, rc, "scan") : SQLITE_OK;
  }
  callBegin(c, pOps);
  rc = p ? MAIN(pOps->xScan(pS, pScan, nMax, aKey, aVal, pnOut))
         : pOps->xScan(pS, pScan, nMax, aKey, aVal, pnOut);
  callEnd(c, pOps);
  if( rc==SQLITE_OK || p==0 ) return rc;
  rc = mainFailed(p, pS, rc, "scan", bSpan);
  if( rc ) return rc;
  if( pOps->kind!=GPUDS_ORDERED && pScan->pos!=0 ){
    return gpudsVtabError(p, SQLITE_ERROR, "scan: the store moved to the host "
                          "(%s) in the middle of a scan of it; run the statement "
                          "again", c->zStoreWhy);
  }
  return storePage(p, c, pScan, nMax, aKey, aVal, pnOut, bSpan);
}

/* The page (aKey, aVal)[0..*pn) the store gave for the scan that stood at
** s0 (now at *pScan), as p's snapshot sees it: the keys the newer versions
** hold, within the key range the page covers, take their old values,
** absent ones dropped, those the store lost put back in order.  A page
** that grows past nMax ends at its nMax-th key, the scan going on after
** it.  The latch held for reading; an ordered scan. */
static int scanOverlay(GpudsTable *p, const gpuds_scan *s0, gpuds_scan *pScan,
                       size_t nMax, int64_t *aKey, uint64_t *aVal, size_t *pn){
  GpudsVerEnt *aE = 0;
  size_t nE = 0, n = *pn, i, j, nOut = 0, iE;
  int64_t lo, hi, *aK2;
  uint64_t *aV2;
  int rc;
  if( n==0 && !pScan->done ) return SQLITE_OK;
  if( !s0->desc ){
    lo = s0->lo;
    hi = pScan->done ? s0->hi : aKey[n-1];
  }else{
    hi = s0->hi;
    lo = pScan->done ? s0->lo : aKey[n-1];
  }
  rc = gpudsVersionRange(p, lo, hi, &aE, &nE);
  if( rc ) return gpudsVtabError(p, rc, "out of memory");
  if( nE==0 ) return SQLITE_OK;
  aK2 = malloc((n+nE)*8);
  aV2 = malloc((n+nE)*8);
  if( !aK2 || !aV2 ){
    free(aK2); free(aV2); free(aE);
    return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  }
  /* merge the page (in scan order) with aE (ascending: walked from its end
  ** for a descending scan) */
  for(i=0, j=0; i<n || j<nE; ){
    int64_t kS = 0, kE = 0;
    int bS = i<n, bE = j<nE, bTakeE;
    iE = s0->desc ? nE-1-j : j;
    if( bS ) kS = aKey[i];
    if( bE ) kE = aE[iE].k;
    if( bS && bE ){
      if( kS==kE ){ i++; bTakeE = 1; }
      else bTakeE = s0->desc ? kE>kS : kE<kS;
    }else{
      bTakeE = bE;
    }
    if( bTakeE ){
      j++;
      if( !aE[iE].bFound ) continue;
      aK2[nOut] = kE;
      aV2[nOut++] = aE[iE].v;
    }else{
      aK2[nOut] = kS;
      aV2[nOut++] = aVal[i++];
    }
  }
  if( nOut>nMax ){
    nOut = nMax;
    pScan->done = 0;
    if( !s0->desc ) pScan->lo = aK2[nOut-1] + 1;
    else pScan->hi = aK2[nOut-1] - 1;
  }
  memcpy(aKey, aK2, nOut*8);
  memcpy(aVal, aV2, nOut*8);
  *pn = nOut;
  free(aK2); free(aV2); free(aE);
  return SQLITE_OK;
}

/* The next page of an ordered scan (gpudsStoreOrdered) as p's snapshot
** sees the store: at most nMax entries, possibly none before the end
** (test pScan->done). */
int gpudsStoreScan(GpudsTable *p, gpuds_scan *pScan, size_t nMax,
                   int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  gpuds_scan s0 = *pScan;
  int rc;
  gpudsLatchRead(p);
  rc = storePage(p, p->pCopy, pScan, nMax, aKey, aVal, pnOut, 0);
  if( rc==SQLITE_OK && gpudsVersionNewer(p) && !s0.done ){
    rc = scanOverlay(p, &s0, pScan, nMax, aKey, aVal, pnOut);
  }
  gpudsLatchReadEnd(p);
  return rc;
}

/* Call xEach on every entry of copy c's store as it is, in pages of 64K
** entries (key order where gpudsStoreOrdered()), until it returns
** non-zero, which is returned; the latch is held (for reading) by the
** caller or nobody else has c.  The host mirror is walked where there is
** one: it holds the same entries, and a walk of the GPU store would copy
** them back from the device page by page.  p (may be NULL) is passed to
** xEach and takes the error messages. */
static int storeWalk(GpudsTable *p, GpudsCopy *c, int (*xEach)(GpudsTable*, void*,
                     const int64_t*, const uint64_t*, size_t), void *pCtx){
  size_t nPage = 65536, nOut;
  int64_t *aK = sqlite3_malloc64(nPage*8);
  uint64_t *aV = sqlite3_malloc64(nPage*8);
  gpuds_scan s;
  int rc = (aK && aV) ? SQLITE_OK : SQLITE_NOMEM;
  memset(&s, 0, sizeof(s));
  s.lo = INT64_MIN; s.hi = INT64_MAX;
  while( rc==SQLITE_OK && !s.done ){
    if( c->pMirror ){
      callBegin(c, c->pMirOps);
      rc = c->pMirOps->xScan(c->pMirror, &s, nPage, aK, aV, &nOut);
      callEnd(c, c->pMirOps);
      if( rc ){ rc = storeErr(p, c->pMirOps, c->pMirror, rc, "scan"); break; }
    }else{
      rc = storePage(p, c, &s, nPage, aK, aV, &nOut, 1);
    }
    if( rc==SQLITE_OK && nOut ) rc = xEach(p, pCtx, aK, aV, nOut);
  }
  sqlite3_free(aK); sqlite3_free(aV);
  return rc;
}

/* Call xEach on every entry of the table's store as it is (the newest
** state), holding the copy's latch for reading throughout: the store must
** not change meanwhile (a hash store's pages are slot positions).  See
** storeWalk. */
int gpudsStoreEach(GpudsTable *p, int (*xEach)(GpudsTable*, void*, const int64_t*,
                   const uint64_t*, size_t), void *pCtx){
  int rc;
  gpudsLatchRead(p);
  rc = storeWalk(p, p->pCopy, xEach, pCtx);
  gpudsLatchReadEnd(p);
  return rc;
}

/* Keys of [lo, hi] collected by gpudsStoreKeys. */
typedef struct KeysCtx { int64_t lo, hi; int64_t *a; int64_t n, nAlloc; } KeysCtx;
static int keysCb(GpudsTable *p, void *pCtx, const int64_t *aK, const uint64_t *aV,
                  size_t n){
  KeysCtx *x = (KeysCtx*)pCtx;
  size_t i;
  for(i=0; i<n; i++){
    if( aK[i]<x->lo || aK[i]>x->hi ) continue;
    if( x->n==x->nAlloc ){
      int64_t nNew = x->nAlloc ? x->nAlloc*2 : 1024;
      int64_t *a = realloc(x->a, (size_t)nNew*8);
      if( a==0 ) return SQLITE_NOMEM;
      x->a = a; x->nAlloc = nNew;
    }
    x->a[x->n++] = aK[i];
  }
  (void)p; (void)aV;
  return SQLITE_OK;
}

/* The keys in [lo, hi] the store holds at p's snapshot: *paKey (malloc()'d,
** NULL if none), *pn of them, in no order (ascending where versions were
** laid over).  One pass under the latch: what a hash store without its
** mirror scans. */
int gpudsStoreKeys(GpudsTable *p, int64_t lo, int64_t hi, int64_t **paKey, int64_t *pn){
  KeysCtx x;
  GpudsVerEnt *aE = 0;
  size_t nE = 0;
  int rc;
  memset(&x, 0, sizeof(x));
  x.lo = lo; x.hi = hi;
  *paKey = 0; *pn = 0;
  gpudsLatchRead(p);
  rc = storeWalk(p, p->pCopy, keysCb, &x);
  if( rc==SQLITE_OK && gpudsVersionNewer(p) ){
    rc = gpudsVersionRange(p, lo, hi, &aE, &nE);
    if( rc==SQLITE_OK && nE ) rc = gpudsSortKeys(x.a, 0, (size_t)x.n);
    if( rc==SQLITE_OK && nE ){
      /* the store's keys less those the versions hold, and those of them
      ** present at the snapshot */
      int64_t *a = malloc((size_t)(x.n + (int64_t)nE)*8), i = 0, n = 0;
      size_t j = 0;
      if( a==0 ) rc = SQLITE_NOMEM;
      while( a && (i<x.n || j<nE) ){
        if( j>=nE || (i<x.n && x.a[i]<aE[j].k) ){ a[n++] = x.a[i++]; continue; }
        if( i<x.n && x.a[i]==aE[j].k ) i++;
        if( aE[j].bFound ) a[n++] = aE[j].k;
        j++;
      }
      if( a ){ free(x.a); x.a = a; x.n = n; }
    }
  }
  gpudsLatchReadEnd(p);
  free(aE);
  if( rc ){
    free(x.a);
    if( p->base.zErrMsg==0 ) gpudsVtabError(p, rc, "out of memory");
    return rc;
  }
  *paKey = x.a; *pn = x.n;
  return SQLITE_OK;
}

/* storeWalk() callback: free the rows of the entries. */
static int freeRowsCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                      const uint64_t *aV, size_t n){
  size_t i;
  for(i=0; i<n; i++) gpudsRowFreeHandle(aV[i]);
  return SQLITE_OK;
}

/* Free the rows of copy c's store (its entries' handles), which nobody
** reads any more, and its column set; the stores are left to
** gpudsStoreFree(). */
void gpudsStoreFreeRows(GpudsCopy *c){
  gpudsStoreColsDrop(c);
  if( c->pStore ) storeWalk(0, c, freeRowsCb, 0);
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

/* Check the store's invariants, and that the mirror agrees with it in
** size and passes its own.  SQLITE_OK, or an error with the message set. */
int gpudsStoreCheck(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  const gpuds_store_ops *pOps;
  gpuds_store *pS;
  int rc;
  gpudsLatchRead(p);
  for(;;){
    pOps = c->pOps;
    pS = c->pStore;
    callBegin(c, pOps);
    rc = MAIN(pOps->xCheck(pS));
    if( rc && !movesOn(pOps, c->pMirror!=0, rc) ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "structure invariant failed: %s",
                          pOps->xErrmsg(pS));
    }
    callEnd(c, pOps);
    if( rc==SQLITE_OK || !movesOn(pOps, c->pMirror!=0, rc) ) break;
    rc = mainFailed(p, pS, rc, "check", 0);     /* moved: check it there */
    if( rc ) break;
  }
  if( rc==SQLITE_OK && c->pMirror ){
    int64_t nMir, nMain;
    callBegin(c, c->pMirOps);
    if( c->pMirOps->xCheck(c->pMirror)!=GPUDS_OK ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "host mirror invariant failed: %s",
                          c->pMirOps->xErrmsg(c->pMirror));
    }
    nMir = c->pMirOps->xCount(c->pMirror);
    callEnd(c, c->pMirOps);
    nMain = gpudsStoreCount(p);
    if( rc==SQLITE_OK && nMir!=nMain ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "host mirror holds %lld keys, the GPU store %lld",
                          (long long)nMir, (long long)nMain);
    }
    /* every key of the mirror is in the GPU store with the same value */
    if( rc==SQLITE_OK ) rc = gpudsStoreEach(p, mirrorCompareCb, 0);
  }
  gpudsLatchReadEnd(p);
  return rc;
}
