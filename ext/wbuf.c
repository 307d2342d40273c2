/*
** wbuf.c -- the write buffer of a table: xUpdate writes go into an ordered
** host map (the overlay) and reach the store as one batch per transaction
** (in xSync), or earlier when the overlay grows past GPUDS_FLUSH_ROWS.
**
** The undo log makes every rollback exact:
**   PUT entry    one overlay write: key, previous overlay value (if any),
**                new value.  Logged when the key already had an overlay value
**                or when a savepoint is open; a first write with no savepoint
**                open needs no entry (a full rollback sweeps the overlay).
**   FLUSH entry  one batch applied to the store: keys, the values written,
**                and what the store held before (found, old value).  Undoing
**                it applies the inverse batch and puts the values back into
**                the overlay.
** Row records displaced by a write stay alive until the transaction commits
** (a rollback may bring them back) and, after that, until no cursor of the
** table is open (a cursor page may still point at them); those a flush
** displaced from the store, until the copy releases the flush (copy.c:
** other connections' snapshots may still read them).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "overlay.h"
#include <string.h>
#include <stdlib.h>

#define UNDO_PUT   1
#define UNDO_FLUSH 2

struct GpudsUndo {
  uint8_t eType;        /* UNDO_PUT or UNDO_FLUSH */
  uint8_t bHad;         /* PUT: key had an overlay value before */
  int64_t k;            /* PUT: key */
  uint64_t prev;        /* PUT: previous overlay value; FLUSH: GpudsFlush* */
  uint64_t neu;         /* PUT: value written */
};

/* The undo log starts with room for this many entries and doubles; after a
** commit a log grown past UNDO_KEEP_MAX entries is freed rather than kept
** for the next transaction (a big transaction should not pin its log). */
#define UNDO_INITIAL  1024
#define UNDO_KEEP_MAX 65536

/* A full rollback sweeps the overlay's unlogged rows in pages of this many
** keys: 64 KiB of buffers, enough to amortize a page's lookup. */
#define WBUF_SWEEP_PAGE 4096

/* Create the (empty) overlay. */
int gpudsWbufInit(GpudsTable *p){
  p->wb.pOver = gpudsOvNew();
  p->wb.nOver = 0;
  return p->wb.pOver ? SQLITE_OK : SQLITE_NOMEM;
}

/* Release everything the write buffer holds (table teardown).  Rows are
** not freed here: the caller frees the overlay's rows first if it needs to. */
void gpudsWbufClear(GpudsTable *p){
  int64_t i;
  for(i=0; i<p->wb.nUndo; i++){
    if( p->wb.aUndo[i].eType==UNDO_FLUSH ){
      gpudsFlushFree((GpudsFlush*)(uintptr_t)p->wb.aUndo[i].prev);
    }
  }
  free(p->wb.aUndo);
  sqlite3_free(p->wb.aMark);
  gpudsOvFree(p->wb.pOver);
  gpudsCollectGarbage(p);
  free(p->wb.aGarbage);
  memset(&p->wb, 0, sizeof(p->wb));
}

/* Queue row hRow to be freed once no cursor is open (0 is ignored). */
void gpudsRowGarbage(GpudsTable *p, uint64_t hRow){
  GpudsWbuf *w = &p->wb;
  if( hRow==0 ) return;
  if( p->nCursor==0 ){
    gpudsRowFreeHandle(hRow);
    return;
  }
  if( w->nGarbage==w->nGarbageAlloc ){
    int64_t nNew = w->nGarbageAlloc ? w->nGarbageAlloc*2 : 256;
    uint64_t *a = realloc(w->aGarbage, (size_t)nNew*sizeof(uint64_t));
    if( a==0 ) return;   /* leak one row rather than free it under a cursor */
    w->aGarbage = a;
    w->nGarbageAlloc = nNew;
  }
  w->aGarbage[w->nGarbage++] = hRow;
}

/* Free queued rows if no cursor can see them any more (the table holds no
** row: its copy may also let its pin go). */
void gpudsCollectGarbage(GpudsTable *p){
  int64_t i;
  if( p->nCursor>0 ) return;
  gpudsSnapIdle(p);               /* its copy may let its pin go (copy.c) */
  for(i=0; i<p->wb.nGarbage; i++) gpudsRowFreeHandle(p->wb.aGarbage[i]);
  p->wb.nGarbage = 0;
}

/* Make room for n more undo entries. */
static int undoReserve(GpudsWbuf *w, int64_t n){
  if( w->nUndo+n > w->nUndoAlloc ){
    int64_t nNew = w->nUndoAlloc ? w->nUndoAlloc*2 : UNDO_INITIAL;
    GpudsUndo *a;
    while( nNew < w->nUndo+n ) nNew *= 2;
    a = realloc(w->aUndo, (size_t)nNew*sizeof(GpudsUndo));
    if( a==0 ) return SQLITE_NOMEM;
    w->aUndo = a;
    w->nUndoAlloc = nNew;
  }
  return SQLITE_OK;
}

/* Look key k up in the overlay: *pbHit says whether the overlay holds it,
** *pVal its value (0 = deleted in this transaction). */
int gpudsWbufGet(GpudsTable *p, int64_t k, int *pbHit, uint64_t *pVal){
  *pVal = 0;
  *pbHit = gpudsOvGet(p->wb.pOver, k, pVal);
  return SQLITE_OK;
}

/* Set overlay[k] = v without logging; reports the previous value. */
static int overPut(GpudsTable *p, int64_t k, uint64_t v, uint8_t *pHad,
                   uint64_t *pPrev){
  int had = 0;
  int rc = gpudsOvPut(p->wb.pOver, k, v, &had, pPrev);
  if( rc ) return gpudsVtabError(p, rc, "write buffer: out of memory");
  *pHad = (uint8_t)had;
  if( !had ) p->wb.nOver++;
  return SQLITE_OK;
}

/* Remove k from the overlay without logging. */
static int overDel(GpudsTable *p, int64_t k){
  uint64_t v;
  if( gpudsOvGet(p->wb.pOver, k, &v) ){
    gpudsOvDel(p->wb.pOver, k);
    p->wb.nOver--;
  }
  return SQLITE_OK;
}

/* Write key k -> row handle v (0 deletes k) into the write buffer, logging
** what a rollback needs (always, if bForceLog).  On error nothing changed. */
static int wbufPut(GpudsTable *p, int64_t k, uint64_t v, int bForceLog){
  GpudsWbuf *w = &p->wb;
  uint8_t had = 0;
  uint64_t prev = 0;
  int rc = undoReserve(w, 1);
  if( rc ) return gpudsVtabError(p, rc, "out of memory");
  rc = overPut(p, k, v, &had, &prev);
  if( rc ) return rc;
  /* keep the cached largest key (for NULL-key inserts) up to date */
  if( p->bMaxValid ){
    if( v ){
      if( !p->bMaxAny || k>p->iMax ){ p->iMax = k; p->bMaxAny = 1; }
    }else if( p->bMaxAny && k==p->iMax ){
      p->bMaxValid = 0;
    }
  }
  if( had || w->nMark>0 || bForceLog ){
    GpudsUndo *u = &w->aUndo[w->nUndo++];
    u->eType = UNDO_PUT;
    u->bHad = had;
    u->k = k;
    u->prev = prev;
    u->neu = v;
  }
  return SQLITE_OK;
}

/* Write key k -> row handle v (0 deletes k); see wbufPut(). */
int gpudsWbufPut(GpudsTable *p, int64_t k, uint64_t v){
  return wbufPut(p, k, v, 0);
}

/* Write two keys as one change (an UPDATE that moves a row from k1 to k2):
** both or neither. */
int gpudsWbufPut2(GpudsTable *p, int64_t k1, uint64_t v1, int64_t k2, uint64_t v2){
  int rc = undoReserve(&p->wb, 2);
  if( rc ) return gpudsVtabError(p, rc, "out of memory");
  rc = wbufPut(p, k1, v1, 1);
  if( rc ) return rc;
  rc = wbufPut(p, k2, v2, 0);
  if( rc ){
    /* Take the first write back; its new value was a row the caller owns
    ** (or 0), so it must not be queued for freeing here. */
    GpudsUndo *u = &p->wb.aUndo[--p->wb.nUndo];
    uint8_t had = 0; uint64_t cur = 0;
    if( u->bHad ) overPut(p, u->k, u->prev, &had, &cur);
    else overDel(p, u->k);
  }
  return rc;
}

/* True if the open transaction has written nothing to this table: the
** overlay is empty and the undo log holds no entry. */
int gpudsWbufEmpty(const GpudsTable *p){
  return p->wb.nOver==0 && p->wb.nUndo==0;
}

/* The batches the open transaction applied to the store, oldest first:
** all of them, or (bUnsynced) those no xSync has persisted yet.  *paBatch
** is sqlite3_malloc'd (NULL when *pnBatch is 0), its views valid until the
** write buffer next changes. */
int gpudsWbufBatches(GpudsTable *p, int bUnsynced, GpudsBatch **paBatch,
                     int64_t *pnBatch){
  const GpudsWbuf *w = &p->wb;
  int64_t i, n = 0, iFirst = bUnsynced ? w->nSynced : 0;
  GpudsBatch *a;
  *paBatch = 0;
  *pnBatch = 0;
  for(i=iFirst; i<w->nUndo; i++) n += (w->aUndo[i].eType==UNDO_FLUSH);
  if( n==0 ) return SQLITE_OK;
  a = sqlite3_malloc64(n*sizeof(GpudsBatch));
  if( a==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  for(i=iFirst, n=0; i<w->nUndo; i++){
    if( w->aUndo[i].eType==UNDO_FLUSH ){
      const GpudsFlush *f = (const GpudsFlush*)(uintptr_t)w->aUndo[i].prev;
      a[n].n = f->n;
      a[n].aKey = f->aKey;
      a[n].aNew = f->aNew;
      n++;
    }
  }
  *paBatch = a;
  *pnBatch = n;
  return SQLITE_OK;
}

/* True if a ROLLBACK TO undid batches an xSync of this transaction had
** persisted (a COMMIT that failed with BUSY): SQLite may or may not have
** undone those shadow writes, so only a rewrite of the whole store is
** known to be right. */
int gpudsWbufSyncLost(const GpudsTable *p){
  return p->wb.bSyncLost;
}

/* Everything the transaction applied so far is persisted (xSync wrote it). */
void gpudsWbufSynced(GpudsTable *p){
  p->wb.nSynced = p->wb.nUndo;
  p->wb.bSyncLost = 0;
}

/* The log is undone to length iTarget: if that takes back persisted
** batches, the shadow tables must be rewritten (gpudsWbufSyncLost). */
static void syncUndoneTo(GpudsWbuf *w, int64_t iTarget){
  if( w->nSynced>iTarget ){
    w->bSyncLost = 1;
    w->nSynced = 0;
  }
}

/* The transaction ended (committed or rolled back): nothing of it is
** pending persistence any more. */
static void syncForget(GpudsWbuf *w){
  w->nSynced = 0;
  w->bSyncLost = 0;
}

/* Apply the overlay to the store as one batch and empty the overlay.
** Unless bForce, only when the overlay is past its bound and no cursor is
** open.  All-or-nothing: on error the store and the overlay are unchanged. */
int gpudsWbufFlush(GpudsTable *p, int bForce){
  GpudsWbuf *w = &p->wb;
  GpudsFlush *f = 0;
  size_t n = (size_t)w->nOver;
  int rc = SQLITE_OK;

  if( n==0 ) return SQLITE_OK;
  if( !bForce && (w->nOver < p->nFlushRows || p->nCursor>0) ) return SQLITE_OK;

  rc = undoReserve(w, 1);
  if( rc ) return gpudsVtabError(p, rc, "out of memory");
  f = sqlite3_malloc64(sizeof(*f));
  if( f ) memset(f, 0, sizeof(*f));
  if( f ){
    f->n = n;
    f->aKey = malloc(n*8);
    f->aNew = malloc(n*8);
    f->aFound = malloc(n);
  }
  if( f==0 || !f->aKey || !f->aNew || !f->aFound ){
    rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
    goto flush_out;
  }
  /* The overlay in key order, all of it. */
  if( gpudsOvCount(w->pOver)!=(int64_t)n ){
    rc = gpudsVtabError(p, SQLITE_INTERNAL, "write buffer: count mismatch");
    goto flush_out;
  }
  rc = gpudsOvSorted(w->pOver, f->aKey, f->aNew);
  if( rc ){
    rc = gpudsVtabError(p, rc, "write buffer: out of memory");
    goto flush_out;
  }
  /* A table read in key order (gfsl, or gpuhash with its host mirror)
  ** scans the rows in key order later: copy them there now (arena.c).  A
  ** hash table without its mirror reads every row through a lookup
  ** anyway. */
  if( gpudsStoreOrdered(p) ) gpudsRowsRepack(f->aNew, n, gpudsLoaderCopy, &f->aOrig);

  rc = gpudsStoreFlush(p, f);
  if( rc ) goto flush_out;
  p->nFlush++;

  /* Success: log the flush, swap in the empty overlay. */
  w->aUndo[w->nUndo].eType = UNDO_FLUSH;
  w->aUndo[w->nUndo].bHad = 0;
  w->aUndo[w->nUndo].k = 0;
  w->aUndo[w->nUndo].prev = (uint64_t)(uintptr_t)f;
  w->aUndo[w->nUndo].neu = 0;
  w->nUndo++;
  f = 0;
  gpudsOvClear(w->pOver);
  w->nOver = 0;

flush_out:
  if( f ) gpudsRowsRepackUndo(f->aNew, f->n, &f->aOrig);
  gpudsFlushFree(f);
  return rc;
}

/* Undo one log entry (the last one). */
static int undoOne(GpudsTable *p, GpudsUndo *u){
  int rc = SQLITE_OK;
  p->bMaxValid = 0;
  if( u->eType==UNDO_PUT ){
    uint8_t had = 0; uint64_t cur = 0;
    gpudsRowGarbage(p, u->neu);
    if( u->bHad ) rc = overPut(p, u->k, u->prev, &had, &cur);
    else rc = overDel(p, u->k);
  }else{
    GpudsFlush *f = (GpudsFlush*)(uintptr_t)u->prev;
    size_t i;
    rc = gpudsStoreUndo(p, f);
    if( rc ) return rc;
    /* Put the flushed values back into the overlay.  In a partial rollback
    ** the overlay is empty here (everything after the flush was logged and
    ** has been undone).  In a full rollback it may still hold first writes
    ** made after the flush with no savepoint open (never logged); a value
    ** such a write displaces is a row of this transaction that nothing else
    ** references, so it is freed. */
    for(i=0; i<f->n; i++){
      uint8_t had = 0; uint64_t prev = 0;
      uint64_t v = f->aOrig ? f->aOrig[i] : f->aNew[i];
      rc = overPut(p, f->aKey[i], v, &had, &prev);
      if( rc ) return rc;
      if( had ) gpudsRowGarbage(p, prev);
      if( v!=f->aNew[i] ){
        /* the repacked copy: out of the store now, maybe in a cursor page */
        gpudsRowGarbage(p, f->aNew[i]);
        f->aNew[i] = v;
      }
    }
    gpudsFlushFree(f);
  }
  return rc;
}

/* Undo the log back to length iTarget. */
static int undoTo(GpudsTable *p, int64_t iTarget){
  int rc = SQLITE_OK;
  while( p->wb.nUndo>iTarget ){
    GpudsUndo *u = &p->wb.aUndo[p->wb.nUndo-1];
    int rc2 = undoOne(p, u);
    if( rc2 && rc==SQLITE_OK ) rc = rc2;
    if( rc2 && u->eType==UNDO_FLUSH ){
      /* The store keeps a batch it could not take back (out of memory):
      ** it no longer matches the database.  The transaction can only be
      ** rolled back now, and the next use loads the table afresh. */
      p->bBroken = 1;
      break;
    }
    p->wb.nUndo--;
  }
  return rc;
}

/* Savepoint iSavepoint begins now. */
int gpudsWbufSavepoint(GpudsTable *p, int iSavepoint){
  GpudsWbuf *w = &p->wb;
  int i;
  if( iSavepoint<0 ) return SQLITE_OK;
  /* Savepoint iSavepoint already began: another handle of this table was
  ** told first (vtab.c), or it joined the transaction late and SQLite
  ** repeats the innermost savepoint for it.  Keep the first mark. */
  if( iSavepoint<w->nMark ) return SQLITE_OK;
  if( iSavepoint>=w->nMarkAlloc ){
    int nNew = iSavepoint*2 + 8;
    int64_t *a = sqlite3_realloc64(w->aMark, nNew*sizeof(int64_t));
    if( a==0 ) return SQLITE_NOMEM;
    w->aMark = a;
    w->nMarkAlloc = nNew;
  }
  /* Savepoints that began before this table joined the transaction see the
  ** state before any of its writes: log position 0. */
  for(i=w->nMark; i<iSavepoint; i++) w->aMark[i] = 0;
  w->aMark[iSavepoint] = w->nUndo;
  w->nMark = iSavepoint+1;
  return SQLITE_OK;
}

/* Savepoints iSavepoint and above are released (merged into the outer). */
int gpudsWbufRelease(GpudsTable *p, int iSavepoint){
  if( iSavepoint<0 ) iSavepoint = 0;
  if( iSavepoint<p->wb.nMark ) p->wb.nMark = iSavepoint;
  return SQLITE_OK;
}

/* Undo the whole transaction: undo the log, then drop what is left in the
** overlay (first writes that needed no log entry).  What was persisted is
** the caller's to account. */
static int wbufUndoAll(GpudsTable *p){
  GpudsWbuf *w = &p->wb;
  int rc = undoTo(p, 0);
  p->bMaxValid = 0;
  {
    gpuds_scan s;
    size_t nPage = WBUF_SWEEP_PAGE, nOut, i;
    int64_t *aK = sqlite3_malloc64(nPage*8);
    uint64_t *aV = sqlite3_malloc64(nPage*8);
    if( aK && aV ){
      memset(&s, 0, sizeof(s));
      s.lo = INT64_MIN; s.hi = INT64_MAX;
      while( !s.done ){
        if( gpudsOvScan(w->pOver, &s, nPage, aK, aV, &nOut) ) break;
        for(i=0; i<nOut; i++) gpudsRowGarbage(p, aV[i]);
      }
    }else if( w->nOver>0 && rc==SQLITE_OK ){
      rc = SQLITE_NOMEM;       /* rows leak; the table stays consistent */
    }
    sqlite3_free(aK); sqlite3_free(aV);
    gpudsOvClear(w->pOver);
    w->nOver = 0;
  }
  w->nUndo = 0;
  w->nMark = 0;
  gpudsCollectGarbage(p);
  return rc;
}

/* After a total undo (ROLLBACK, or ROLLBACK TO the transaction's start):
** 1 if an undo could not complete, so the store must be loaded afresh
** (the caller has shadow.c do it), and the mark is cleared; else 0. */
int gpudsWbufBrokenClear(GpudsTable *p){
  int b = p->bBroken;
  p->bBroken = 0;
  return b;
}

/* Roll back to the state at the start of savepoint iSavepoint, which stays
** open.  SQLite passes -1 for a savepoint that began the transaction: then
** everything this table did in the transaction is undone.  The transaction
** goes on, so batches an xSync persisted and this undoes are remembered
** (gpudsWbufSyncLost). */
int gpudsWbufRollbackTo(GpudsTable *p, int iSavepoint){
  int rc;
  if( iSavepoint<0 ){
    syncUndoneTo(&p->wb, 0);
    return wbufUndoAll(p);
  }
  if( iSavepoint>=p->wb.nMark ) return SQLITE_OK;
  syncUndoneTo(&p->wb, p->wb.aMark[iSavepoint]);
  rc = undoTo(p, p->wb.aMark[iSavepoint]);
  p->wb.nMark = iSavepoint+1;
  gpudsCollectGarbage(p);
  return rc;
}

/* Roll back the whole transaction, which ends (xRollback): its shadow
** writes are rolled back with it. */
int gpudsWbufRollback(GpudsTable *p){
  syncForget(&p->wb);
  return wbufUndoAll(p);
}

/* The transaction committed (its writes are in the store, flushed by
** xSync): free the rows it displaced in the overlay, hand its flushes to
** the copy and forget the log.  Before the copy learns of the commit
** (gpudsShadowCommitted), which may release the flushes. */
void gpudsWbufCommit(GpudsTable *p){
  GpudsWbuf *w = &p->wb;
  int64_t i, nRows = w->nUndo;
  int bBig = 0;
  for(i=0; i<w->nUndo; i++){
    GpudsUndo *u = &w->aUndo[i];
    if( u->eType==UNDO_PUT ){
      if( u->bHad ) gpudsRowGarbage(p, u->prev);
    }else{
      /* The flush is a version of the copy, which keeps it (and the rows
      ** it displaced) while a snapshot older than the commit may read
      ** them (copy.c); the originals of repacked rows were the write
      ** buffer's alone. */
      GpudsFlush *f = (GpudsFlush*)(uintptr_t)u->prev;
      size_t j;
      nRows += (int64_t)f->n;
      for(j=0; f->aOrig && j<f->n; j++){
        if( f->aOrig[j]!=f->aNew[j] ) gpudsRowGarbage(p, f->aOrig[j]);
      }
      free(f->aOrig);
      f->aOrig = 0;
    }
  }
  w->nUndo = 0;
  w->nMark = 0;
  syncForget(w);
  if( w->nUndoAlloc > UNDO_KEEP_MAX ){
    free(w->aUndo);
    w->aUndo = 0;
    w->nUndoAlloc = 0;
    bBig = 1;
  }
  gpudsCollectGarbage(p);
  /* A big transaction freed its write buffer's arrays: back to the system. */
  if( bBig || nRows>=UNDO_KEEP_MAX ) gpudsMemTrim();
}

/* Look n keys up in the overlay at once: aHit[i] says whether it holds
** aKey[i], aVal[i] its value (0 = deleted in this transaction). */
int gpudsOverlayLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                       uint8_t *aHit, uint64_t *aVal){
  size_t i;
  for(i=0; i<n; i++){
    aVal[i] = 0;
    aHit[i] = (uint8_t)gpudsOvGet(p->wb.pOver, aKey[i], &aVal[i]);
  }
  return SQLITE_OK;
}

/* Next page of the overlay scan *pScan (key order). */
int gpudsOverlayScan(GpudsTable *p, gpuds_scan *pScan, size_t nMax,
                     int64_t *aKey, uint64_t *aVal, size_t *pnOut){
  int rc = gpudsOvScan(p->wb.pOver, pScan, nMax, aKey, aVal, pnOut);
  if( rc ) return gpudsVtabError(p, rc, "write buffer: out of memory");
  return SQLITE_OK;
}
