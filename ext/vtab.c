/*
** vtab.c -- the gfsl and gpuhash virtual-table modules: table lifecycle,
** cursors, xUpdate with exact constraint semantics, and the transaction
** hooks that drive the write buffer (wbuf.c).
**
** Both modules share every method; they differ only in the kind of store
** (ordered or hash) and therefore in what xBestIndex offers (plan.c).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "schema.h"
#include "plan.h"
#include "runfmt.h"
#include <string.h>
#include <stdarg.h>
#include <stdlib.h>

/* Random keys tried for a NULL-key insert once the largest key is taken
** (SQLite's own rowid allocation gives up after as many tries). */
#define NEWKEY_TRIES 100

/* Rows whose records are prefetched ahead of the one a cursor returns
** (gpudsRowPrefetch): enough to overlap the misses of a short range. */
#define PREFETCH_AHEAD 16

typedef struct GpudsCursor {
  sqlite3_vtab_cursor base;
  int bEof;
  int64_t iKey;              /* current row's key */
  uint64_t hRow;             /* current row's record */
  GpudsRowPos pos;           /* where xColumn's walk through it stands */
  /* EQ/IN plans: the found rows, in the order they are returned */
  int64_t *aKey;
  uint64_t *aRow;
  int64_t iKey1;             /* aKey/aRow of a one-key list point here */
  uint64_t hRow1;
  int64_t nList, iList;
  /* scans */
  GpudsMerge *pMerge;        /* kept across xFilter calls (its buffers) */
  int bScan;                 /* pMerge holds the open scan */
  const int64_t *aRunKey;    /* the scan's rows read ahead (gpudsMergeRun) */
  const uint64_t *aRunRow;
  size_t nRun, iRun;
  int bList;                 /* holds a list: counted in nCursor */
  int bOwnRows;              /* the list's rows were read from the runs on
                             ** disk (diskread.c): the cursor frees them */
  int64_t iWrites;           /* p->nWrites when the cursor read its rows */
  /* column plans: the plan, kept while the list is a prefix of the order */
  GpudsPlan colPlan;
  int bColPartial;           /* the list is a prefix: ask for all at its end */
  /* prefetch of the records of rows ahead: only where the statement reads
  ** them (a count or a sum of keys never does: for it, a prefetch is a
  ** cache miss a row that would not be there) */
  int bPrefetch;             /* prefetch (learnt: kept across executions) */
  int bStepped, bReadRow;    /* this execution: went past a row; read one */
} GpudsCursor;

typedef struct GpudsVtab GpudsVtab;

/* One sqlite3_vtab handed to SQLite.  SQLite connects a virtual table again
** after any schema change (even inside a transaction, e.g. ALTER TABLE of
** another table or RENAME), so several handles of one connection may exist
** for one table at once: they share one GpudsTable (found through the table
** list of info.c), which holds the write buffer of the open transaction. */
typedef struct GpudsVtab {
  sqlite3_vtab base;
  GpudsTable *pTab;
} GpudsVtab;

/* The shared table behind a handle. */
static GpudsTable *tab(sqlite3_vtab *pVtab){
  return ((GpudsVtab*)pVtab)->pTab;
}

/* Finish a method of handle pVtab: on error, hand the table's message to
** the handle, where SQLite reads it. */
static int vtabDone(sqlite3_vtab *pVtab, int rc){
  GpudsTable *p = tab(pVtab);
  if( rc!=SQLITE_OK && p->base.zErrMsg ){
    sqlite3_free(pVtab->zErrMsg);
    pVtab->zErrMsg = p->base.zErrMsg;
    p->base.zErrMsg = 0;
  }
  return rc;
}

/* SQLITE_NOMEM with a message if a rollback of this transaction could not
** be completed (out of memory while undoing a batch): the store no longer
** matches what SQLite will roll back to, so nothing but ROLLBACK may use it. */
static int brokenCheck(GpudsTable *p){
  if( !p->bBroken ) return SQLITE_OK;
  return gpudsVtabError(p, SQLITE_NOMEM, "%s: a rollback ran out of memory; "
                        "roll the transaction back", p->zName);
}

static void cursorFree(GpudsCursor *c);

/* Free a table object and everything it holds. */
static void tableFree(GpudsTable *p){
  int i;
  if( p==0 ) return;
  cursorFree((GpudsCursor*)p->pCurSpare);
  p->pCurSpare = 0;
  gpudsTableListRemove(p);
  gpudsShadowClose(p);
  if( p->pBuild ) gpudsBuildCancel(p->pBuild);  /* its thread joined */
  p->pBuild = 0;
  gpudsDiskReset(p);
  if( p->wb.pOver ){
    gpudsWbufRollback(p);                   /* frees uncommitted rows */
    if( p->pCopy ) gpudsCopyRolledBack(p, gpudsWbufBrokenClear(p));
  }
  gpudsWbufClear(p);
  gpudsCopyDetach(p);                       /* with its last table, the copy */
  gpudsLoaderEnd(&p->wArena);
  for(i=0; i<p->nCol; i++) sqlite3_free(p->azCol[i]);
  sqlite3_free(p->azCol);
  sqlite3_free(p->aNotNull);
  sqlite3_free(p->aAff);
  sqlite3_free(p->zDb);
  sqlite3_free(p->zName);
  sqlite3_free(p->base.zErrMsg);
  sqlite3_free(p);
}

/* Keep table p and its rows while something outside its cursors (a
** view's result) refers to them: the object outlives a DROP, and no row
** is freed (nCursor), until gpudsTableRelease. */
void gpudsTableHold(GpudsTable *p){
  p->nRef++;
  p->nCursor++;
}
void gpudsTableRelease(GpudsTable *p){
  p->nCursor--;
  gpudsCollectGarbage(p);
  if( --p->nRef==0 ) tableFree(p);
}

/* True if table object p was made for a table of kind eKind with exactly
** the columns of sch. */
static int sameSchema(const GpudsTable *p, int eKind, const GpudsSchema *sch){
  int i;
  if( p->eKind!=eKind || p->nCol!=sch->nCol ) return 0;
  for(i=0; i<p->nCol; i++){
    if( strcmp(p->azCol[i], sch->azCol[i])!=0 || p->aAff[i]!=sch->aAff[i]
     || p->aNotNull[i]!=sch->aNotNull[i] ){
      return 0;
    }
  }
  return 1;
}

/* The text encoding of connection db (PRAGMA encoding): SQLITE_UTF8,
** SQLITE_UTF16LE or SQLITE_UTF16BE; 0 if it cannot be read.  Every database
** of a connection has the main database's encoding. */
static int dbEncoding(sqlite3 *db){
  static const char *const azName[] = { "UTF-8", "UTF-16le", "UTF-16be" };
  static const int aEnc[] = { SQLITE_UTF8, SQLITE_UTF16LE, SQLITE_UTF16BE };
  int i = gpudsPragmaPick(db, "PRAGMA encoding", azName, 3);
  return i<0 ? 0 : aEnc[i];
}

/* xCreate and xConnect: parse the columns, declare the schema, create an
** empty store on the backend chosen for this kind of table; xCreate also
** creates the shadow tables, xConnect leaves the store to be loaded from
** them on first use. */
static int gpudsInit(sqlite3 *db, void *pAux, int argc, const char *const*argv,
                     sqlite3_vtab **ppVtab, char **pzErr, int bCreate){
  int eKind = ((const GpudsModAux*)pAux)->eKind;
  GpudsSchema sch;
  GpudsTable *p = 0;
  GpudsVtab *pV;
  char *zErr = 0;
  int rc;

  *ppVtab = 0;
  pV = sqlite3_malloc64(sizeof(*pV));
  if( pV==0 ) return SQLITE_NOMEM;
  memset(pV, 0, sizeof(*pV));
  rc = gpudsSchemaParse(argc, argv, &sch, &zErr);
  if( rc ){
    *pzErr = sqlite3_mprintf("%s: %s", argv[0], zErr ? zErr : "out of memory");
    sqlite3_free(zErr);
    sqlite3_free(pV);
    return rc;
  }
  rc = sqlite3_declare_vtab(db, sch.zDecl);
  if( rc ){
    *pzErr = sqlite3_mprintf("%s: cannot declare \"%s\": %s", argv[0],
                             sch.zDecl, sqlite3_errmsg(db));
    gpudsSchemaFree(&sch);
    sqlite3_free(pV);
    return rc;
  }
  if( !bCreate && (p = gpudsTableFindExact(db, argv[1], argv[2]))!=0
   && !sameSchema(p, eKind, &sch) ){
    /* The table object of this name was made for another table (dropped,
    ** or renamed away, and created again by another connection): it must
    ** not serve this one.  Its handles keep it until SQLite drops them. */
    gpudsTableListRemove(p);
    p = 0;
  }
  if( !bCreate && p!=0 ){
    /* Another handle of this connection holds the table: share it.  If the
    ** same schema was created again, the 'id' in t_meta tells, and the
    ** next refresh loads the new table's rows. */
    gpudsSchemaFree(&sch);
    p->nRef++;
    pV->pTab = p;
    /* SQLite connects again after a schema change, which may have been a
    ** ROLLBACK TO that undid a DROP and CREATE of this name (SQLite calls
    ** no xRollbackTo of a table created inside the savepoint) and which
    ** PRAGMA data_version does not show: the next refresh reads t_meta. */
    p->iDataVersion = 0;
    sqlite3_vtab_config(db, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
    *ppVtab = &pV->base;
    return SQLITE_OK;
  }
  if( bCreate && (p = gpudsTableFindExact(db, argv[1], argv[2]))!=0 ){
    gpudsTableListRemove(p);     /* a dropped table still referenced */
    p = 0;
  }
  p = sqlite3_malloc64(sizeof(*p));
  if( p==0 ){ gpudsSchemaFree(&sch); sqlite3_free(pV); return SQLITE_NOMEM; }
  memset(p, 0, sizeof(*p));
  p->nRef = 1;
  pV->pTab = p;
  gpudsLoaderBegin(&p->wArena);
  p->db = db;
  p->eKind = eKind;
  p->nCol = sch.nCol;
  p->azCol = sch.azCol;
  p->aNotNull = sch.aNotNull;
  p->aAff = sch.aAff;
  p->eEnc = dbEncoding(db);
  sqlite3_free(sch.zDecl);
  p->zDb = sqlite3_mprintf("%s", argv[1]);
  p->zName = sqlite3_mprintf("%s", argv[2]);
  p->nFlushRows = gpudsConfig()->nFlushRows;
  if( !p->zDb || !p->zName ){ tableFree(p); sqlite3_free(pV); return SQLITE_NOMEM; }
  if( p->eEnc==0 ){
    /* records hold text in the database's encoding: unknown, no table */
    *pzErr = sqlite3_mprintf("%s: cannot read the database's text encoding", argv[0]);
    tableFree(p);
    sqlite3_free(pV);
    return SQLITE_ERROR;
  }
  {
    /* an empty copy of its own until its first refresh (or, created, the
    ** empty table's, which gpudsShadowCreate publishes) */
    GpudsCopy *c = 0;
    rc = gpudsCopyNew(p, &c);
    if( rc==SQLITE_OK ){
      rc = gpudsCopyAdopt(p, c, 0);
      if( rc ) gpudsCopyDiscard(c);
    }
  }
  if( rc ){
    *pzErr = sqlite3_mprintf("%s: %s", argv[0], p->base.zErrMsg ? p->base.zErrMsg : "cannot create the store");
    tableFree(p);
    sqlite3_free(pV);
    return rc;
  }
  rc = gpudsWbufInit(p);
  if( rc ){ tableFree(p); sqlite3_free(pV); return rc; }
  if( bCreate ){
    rc = gpudsShadowCreate(p);
    if( rc ){
      *pzErr = sqlite3_mprintf("%s", p->base.zErrMsg ? p->base.zErrMsg : "cannot create shadow tables");
      tableFree(p);
      sqlite3_free(pV);
      return rc;
    }
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
  gpudsTableListAdd(p);
  *ppVtab = &pV->base;
  return SQLITE_OK;
}
static int gpudsCreate(sqlite3 *db, void *pAux, int argc, const char *const*argv,
                       sqlite3_vtab **ppVtab, char **pzErr){
  return gpudsInit(db, pAux, argc, argv, ppVtab, pzErr, 1);
}
static int gpudsConnect(sqlite3 *db, void *pAux, int argc, const char *const*argv,
                        sqlite3_vtab **ppVtab, char **pzErr){
  return gpudsInit(db, pAux, argc, argv, ppVtab, pzErr, 0);
}

/* Drop handle pVtab; the table goes when its last handle does. */
static void vtabRelease(sqlite3_vtab *pVtab){
  GpudsTable *p = tab(pVtab);
  if( --p->nRef==0 ) tableFree(p);
  sqlite3_free(pVtab->zErrMsg);
  sqlite3_free(pVtab);
}

/* xDisconnect: free the in-memory table; the database keeps the data. */
static int gpudsDisconnect(sqlite3_vtab *pVtab){
  vtabRelease(pVtab);
  return SQLITE_OK;
}

/* xDestroy: DROP TABLE: the shadow tables go too. */
static int gpudsDestroy(sqlite3_vtab *pVtab){
  GpudsTable *p = tab(pVtab);
  int rc;
  if( p->pBuild ){              /* its rows are about to go */
    gpudsBuildCancel(p->pBuild);
    p->pBuild = 0;
    gpudsDiskReset(p);
  }
  rc = gpudsShadowDestroy(p);
  if( rc ) return vtabDone(pVtab, rc);
  gpudsTableListRemove(p);      /* no later handle may share it */
  vtabRelease(pVtab);
  return SQLITE_OK;
}

/* xBestIndex: see plan.c. */
static int gpudsBestIndexMethod(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo){
  return vtabDone(pVtab, gpudsBestIndex(tab(pVtab), pInfo));
}

/* xOpen: the cursor the table kept from its last xClose if there is one
** (a prepared statement run again opens and closes one each time: its
** allocation and its scan's page buffers are reused), else a new one. */
static int gpudsOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur){
  GpudsTable *p = tab(pVtab);
  GpudsCursor *c;
  /* Once per statement (its read transaction is open): catch up with what
  ** other connections committed.  Not per xFilter, which a join calls once
  ** per outer row. */
  int rc = gpudsShadowRefresh(p);
  if( rc ) return vtabDone(pVtab, rc);
  c = (GpudsCursor*)p->pCurSpare;
  if( c ){
    GpudsMerge *pMerge = c->pMerge;
    int bPrefetch = c->bPrefetch;
    p->pCurSpare = 0;
    memset(c, 0, sizeof(*c));
    c->pMerge = pMerge;
    c->bPrefetch = bPrefetch;
  }else{
    c = sqlite3_malloc64(sizeof(*c));
    if( c==0 ) return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
  }
  c->bEof = 1;
  *ppCur = &c->base;
  return SQLITE_OK;
}

/* Drop whatever the cursor holds from a previous xFilter. */
static void cursorReset(GpudsCursor *c){
  GpudsTable *p = tab(c->base.pVtab);
  if( c->bScan ){
    gpudsMergeEnd(c->pMerge);    /* its buffers stay for the next scan */
    c->bScan = 0;
    c->aRunKey = 0; c->aRunRow = 0;
    c->nRun = c->iRun = 0;
  }
  if( c->bOwnRows ){
    int64_t i;
    for(i=0; i<c->nList; i++) gpudsRowFreeHandle(c->aRow[i]);
    c->bOwnRows = 0;
  }
  if( c->aKey!=&c->iKey1 ){ free(c->aKey); free(c->aRow); }
  c->aKey = 0; c->aRow = 0;
  c->nList = c->iList = 0;
  gpudsPlanFree(&c->colPlan);
  c->bColPartial = 0;
  if( c->bList ){
    c->bList = 0;
    p->nCursor--;
    gpudsCollectGarbage(p);
  }
  c->bEof = 1;
}

/* Free a cursor that holds nothing but its scan object (reset, or kept). */
static void cursorFree(GpudsCursor *c){
  if( c ){
    gpudsMergeClose(c->pMerge);
    sqlite3_free(c);
  }
}

/* xClose: the table keeps one closed cursor for its next xOpen. */
static int gpudsClose(sqlite3_vtab_cursor *pCur){
  GpudsCursor *c = (GpudsCursor*)pCur;
  GpudsTable *p = tab(pCur->pVtab);
  if( c->bStepped && !c->bReadRow ) c->bPrefetch = 0;   /* rows, none read */
  cursorReset(c);
  if( p->pCurSpare==0 ){
    p->pCurSpare = c;
  }else{
    cursorFree(c);
  }
  return SQLITE_OK;
}

/* The query of the cursor's column plan. */
static void cursorColsQuery(GpudsCursor *c, GpudsColQuery *q){
  GpudsPlan *pl = &c->colPlan;
  memset(q, 0, sizeof(*q));
  q->lo = pl->lo; q->hi = pl->hi;
  q->aTerm = pl->aTerm; q->nTerm = pl->nTerm;
  q->iOrderCol = pl->iOrderCol;
  q->bDesc = pl->iOrderCol>=0 ? pl->bOrderDesc : pl->bDesc;
  q->eText = gpudsTableText(tab(c->base.pVtab));
}

/* Run the cursor's column plan: nFirst > 0 asks for a prefix of that many
** rows, nMost > 0 for none past that many (*pbMany set, the list left
** as it was).  Replaces the cursor's list. */
static int cursorColsRun(GpudsCursor *c, int64_t nFirst, int64_t nMost, int *pbMany){
  GpudsTable *p = tab(c->base.pVtab);
  GpudsColQuery q;
  int64_t n = 0, *aK = 0;
  uint64_t *aR = 0;
  int bPartial = 0, rc;
  cursorColsQuery(c, &q);
  q.nFirst = nFirst;
  q.nMost = nMost;
  rc = gpudsColsRun(p, &q, &n, &aK, &aR, &bPartial);
  if( rc ) return rc;
  if( n<0 ){ *pbMany = 1; return SQLITE_OK; }
  if( c->aKey!=&c->iKey1 ){ free(c->aKey); free(c->aRow); }
  c->aKey = aK; c->aRow = aR; c->nList = n;
  c->bColPartial = bPartial;
  return SQLITE_OK;
}

/* A plan whose terms SQLite checks again, in key order, over a store read in
** key order, gives up its candidate list past a quarter of the table's rows
** (at least COLS_SCAN_MIN): there a scan of the key range costs no more, and
** the list would cost a copy of every candidate (text compared by its first
** bytes: values that share them are all candidates). */
#define COLS_SCAN_MIN 16

/* Start a column plan (colset.c): its rows as one list, in its order; a
** LIMIT hint first asks for that many (a prefix).  *pbScan: too many
** candidates for a plan SQLite checks again (the cursor reset): scan the
** key range instead. */
static int cursorCols(GpudsCursor *c, GpudsPlan *pl, int *pbScan){
  GpudsTable *p = tab(c->base.pVtab);
  int64_t nMost = 0;
  int bMany = 0, rc;
  *pbScan = 0;
  if( pl->bRecheck && pl->iOrderCol<0 && pl->nHint<=0 && gpudsStoreOrdered(p) ){
    nMost = gpudsShadowRows(p)/4;
    if( nMost<COLS_SCAN_MIN ) nMost = COLS_SCAN_MIN;
  }
  c->colPlan = *pl;
  c->colPlan.aKey = 0; c->colPlan.nKey = 0;  /* a column plan has no key list */
  pl->aTerm = 0; pl->nTerm = 0;
  c->bList = 1;                /* the rows must outlive any commit */
  p->nCursor++;
  c->iList = 0;
  rc = cursorColsRun(c, pl->nHint>0 ? pl->nHint : 0, nMost, &bMany);
  if( rc==SQLITE_OK && bMany ){
    cursorReset(c);
    *pbScan = 1;
  }
  return rc;
}

/* The cursor read a prefix of its column plan's order to its end: read the
** whole order and go on after the last row of the prefix (found by its
** place in the order: rows written since may have left or joined). */
static int cursorColsMore(GpudsCursor *c){
  GpudsColQuery q;
  int64_t kLast = 0;
  uint64_t rLast = 0;
  int bAny = c->iList>0, bMany = 0, rc;
  if( bAny ){ kLast = c->aKey[c->iList-1]; rLast = c->aRow[c->iList-1]; }
  rc = cursorColsRun(c, 0, 0, &bMany);     /* (no cap: bMany stays 0) */
  if( rc ) return rc;
  cursorColsQuery(c, &q);
  c->iList = bAny ? gpudsColsAfter(&q, c->aKey, c->aRow, c->nList, kLast, rLast) : 0;
  c->bColPartial = 0;
  return SQLITE_OK;
}

/* The next row the cursor's plan holds (or EOF), as it was read. */
static int cursorNextHeld(GpudsCursor *c){
  if( c->bScan ){
    if( c->iRun>=c->nRun ){
      int rc = gpudsMergeRun(c->pMerge, &c->aRunKey, &c->aRunRow, &c->nRun);
      c->iRun = 0;
      if( rc ){
        GpudsTable *p = tab(c->base.pVtab);
        c->nRun = 0;
        if( p->base.zErrMsg==0 ) gpudsVtabError(p, rc, "scan failed");
        return vtabDone(c->base.pVtab, rc);
      }
      if( c->nRun==0 ){ c->bEof = 1; return SQLITE_OK; }
      if( c->bPrefetch ) gpudsRowPrefetch(c->aRunRow, c->nRun<PREFETCH_AHEAD ? c->nRun : PREFETCH_AHEAD);
    }
    c->iKey = c->aRunKey[c->iRun];
    c->hRow = c->aRunRow[c->iRun++];
    c->bEof = 0;
    return SQLITE_OK;
  }
  if( c->iList>=c->nList && c->bColPartial ){
    int rc = cursorColsMore(c);
    if( rc ) return vtabDone(c->base.pVtab, rc);
  }
  if( c->iList>=c->nList ){ c->bEof = 1; return SQLITE_OK; }
  c->iKey = c->aKey[c->iList];
  c->hRow = c->aRow[c->iList];
  c->iList++;
  c->bEof = 0;
  return SQLITE_OK;
}

/* The next row after writes since the cursor read its rows (or at the end
** of what it holds): each row is looked up again before it is returned
** (cursorStep). */
static int cursorStepAgain(GpudsCursor *c){
  GpudsTable *p = tab(c->base.pVtab);
  for(;;){
    uint8_t bFound = 0;
    uint64_t hNow = 0;
    int rc = cursorNextHeld(c);
    if( rc || c->bEof || c->iWrites==p->nWrites ) return rc;
    rc = gpudsLookupMany(p, 1, &c->iKey, &bFound, &hNow);
    if( rc ) return vtabDone(c->base.pVtab, rc);
    if( bFound ){ c->hRow = hNow; return SQLITE_OK; }
  }
}

/* Advance to the next row (or EOF).  Rows come from pages and lists read
** ahead; if this connection wrote to the table since (iterating and
** changing rows ahead of the cursor), each row is looked up again before
** it is returned, as an ordinary table's cursor would see it: a row
** deleted since is skipped, an updated one shows its new values.  Without
** writes this costs one comparison a row, inlined into xNext; the rest is
** cursorStepAgain. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int cursorStep(GpudsCursor *c){
  c->pos.pRow = 0;                          /* a new row: walk it afresh */
  if( c->iWrites==tab(c->base.pVtab)->nWrites ){
    /* no write since: the next row a scan's page or a list holds, if any,
    ** with no call out */
    if( c->iRun<c->nRun ){
      size_t i = c->iRun++;
      if( c->bPrefetch && i+PREFETCH_AHEAD<c->nRun ){
        gpudsRowPrefetchOne(c->aRunRow[i+PREFETCH_AHEAD]);
      }
      c->iKey = c->aRunKey[i];
      c->hRow = c->aRunRow[i];
      return SQLITE_OK;
    }
    if( c->iList<c->nList ){
      int64_t i = c->iList++;
      if( c->bPrefetch && i+PREFETCH_AHEAD<c->nList ){
        gpudsRowPrefetchOne(c->aRow[i+PREFETCH_AHEAD]);
      }
      c->iKey = c->aKey[i];
      c->hRow = c->aRow[i];
      c->bEof = 0;             /* (xFilter's first step comes here too) */
      return SQLITE_OK;
    }
  }
  return cursorStepAgain(c);
}

/* Keep the entries i of the cursor's list (aKey, aRow)[0..n) that were
** found (aF[i]), in order, reversed for DESC; nList is their count. */
static void cursorListKeep(GpudsCursor *c, const uint8_t *aF, int64_t n, int bDesc){
  int64_t i, j = 0;
  for(i=0; i<n; i++){
    if( aF[i] ){ c->aKey[j] = c->aKey[i]; c->aRow[j] = c->aRow[i]; j++; }
  }
  if( bDesc ){
    for(i=0; i<j/2; i++){
      int64_t tk = c->aKey[i]; uint64_t tr = c->aRow[i];
      c->aKey[i] = c->aKey[j-1-i]; c->aRow[i] = c->aRow[j-1-i];
      c->aKey[j-1-i] = tk; c->aRow[j-1-i] = tr;
    }
  }
  c->nList = j;
  if( c->bPrefetch ) gpudsRowPrefetch(c->aRow, j<PREFETCH_AHEAD ? (size_t)j : PREFETCH_AHEAD);
}

/* Resolve an EQ/IN plan: look every key up in one batch and keep the rows
** found, in key order (reversed for DESC). */
static int cursorList(GpudsCursor *c, GpudsPlan *pl){
  GpudsTable *p = tab(c->base.pVtab);
  int64_t n = pl->nKey;
  uint8_t bFound1 = 0, *aF = &bFound1;
  int bDisk = gpudsShadowPending(p), rc;
  if( n==0 ) return SQLITE_OK;
  if( n==1 ){
    /* key = ?: nothing allocated (a join runs one per outer row) */
    c->iKey1 = pl->aKey[0];
    c->hRow1 = 0;
    c->aKey = &c->iKey1;
    c->aRow = &c->hRow1;
  }else{
    c->aKey = pl->aKey;  pl->aKey = 0;
    c->aRow = malloc((size_t)n*8);
    aF = malloc((size_t)n);
    if( !c->aRow || !aF ){ free(aF); return SQLITE_NOMEM; }
  }
  if( bDisk ){
    /* The store is being built: ask the runs on disk (no write can be
    ** buffered: a write waits for the build).  The rows are the cursor's,
    ** so it is not counted in nCursor: a reload may go on beside it. */
    rc = gpudsDiskLookup(p, (size_t)n, c->aKey, aF, c->aRow);
    if( rc==SQLITE_OK ) c->bOwnRows = 1;
  }else{
    rc = gpudsLookupMany(p, (size_t)n, c->aKey, aF, c->aRow);
    /* The rows in the list must outlive any commit while it is open. */
    c->bList = 1;
    p->nCursor++;
  }
  if( rc==SQLITE_OK ) cursorListKeep(c, aF, n, pl->bDesc);
  if( aF!=&bFound1 ) free(aF);
  return rc;
}

/* xFilter: start the plan chosen by xBestIndex.  LIMIT+OFFSET only sizes
** the first page: SQLite 3.40 offers LIMIT even when it still filters rows
** by a term it did not show us (WHERE d = k), so the cursor never stops
** early; SQLite ends the loop at the limit. */
static int gpudsFilter(sqlite3_vtab_cursor *pCur, int idxNum, const char *idxStr,
                       int argc, sqlite3_value **argv){
  GpudsCursor *c = (GpudsCursor*)pCur;
  GpudsTable *p = tab(pCur->pVtab);
  GpudsPlan pl;
  int rc;
  cursorReset(c);
  c->iWrites = p->nWrites;
  rc = brokenCheck(p);
  if( rc ) return vtabDone(pCur->pVtab, rc);
  rc = gpudsPlanDecode(p, idxNum, idxStr, argc, argv, &pl);
  if( rc ){ gpudsPlanFree(&pl); return vtabDone(pCur->pVtab, rc); }
  if( !pl.bEmpty && !pl.bList && gpudsShadowPending(p) ){
    /* Only key lookups are answered from the runs: wait for the store. */
    rc = gpudsShadowReady(p);
    if( rc ){ gpudsPlanFree(&pl); return vtabDone(pCur->pVtab, rc); }
  }
  if( pl.bEmpty ){
    c->bEof = 1;
  }else if( pl.bList ){
    rc = cursorList(c, &pl);
    if( rc==SQLITE_OK ) rc = cursorStep(c);
  }else{
    /* a scan of the key range, or a column plan (which may give its
    ** candidates up for that scan: cursorCols) */
    int bScan = !pl.bCols;
    if( pl.bCols ) rc = cursorCols(c, &pl, &bScan);
    if( rc==SQLITE_OK && bScan ){
      rc = gpudsMergeOpen(p, pl.lo, pl.hi, pl.bDesc, pl.nHint, &c->pMerge);
      if( rc==SQLITE_OK ) c->bScan = 1;
    }
    if( rc==SQLITE_OK ) rc = cursorStep(c);
  }
  gpudsPlanFree(&pl);
  return vtabDone(pCur->pVtab, rc);
}

/* xNext */
static int gpudsNext(sqlite3_vtab_cursor *pCur){
  GpudsCursor *c = (GpudsCursor*)pCur;
  c->bStepped = 1;
  return cursorStep(c);
}

/* xEof */
static int gpudsEof(sqlite3_vtab_cursor *pCur){
  return ((GpudsCursor*)pCur)->bEof;
}

/* xColumn: column 0 is the key; the others come from the row record. */
static int gpudsColumn(sqlite3_vtab_cursor *pCur, sqlite3_context *ctx, int i){
  GpudsCursor *c = (GpudsCursor*)pCur;
  if( i==0 ){
    sqlite3_result_int64(ctx, c->iKey);
  }else{
    c->bReadRow = c->bPrefetch = 1;
    gpudsRowResult(gpudsRowOf(c->hRow), i-1, ctx, &c->pos,
                   gpudsTableText(tab(c->base.pVtab)));
  }
  return SQLITE_OK;
}

/* xRowid: the key. */
static int gpudsRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid){
  *pRowid = ((GpudsCursor*)pCur)->iKey;
  return SQLITE_OK;
}

/* A key for a row inserted with a NULL key: max(key)+1, like a rowid
** table; if the largest key is taken, a random unused one. */
static int newKey(GpudsTable *p, int64_t *pk){
  int bAny = 0, rc, i;
  int64_t mx = 0;
  rc = gpudsMaxKey(p, &bAny, &mx);
  if( rc ) return rc;
  if( !bAny ){ *pk = 1; return SQLITE_OK; }
  if( mx<INT64_MAX ){ *pk = mx+1; return SQLITE_OK; }
  for(i=0; i<NEWKEY_TRIES; i++){
    int64_t k;
    int bExists = 0;
    sqlite3_randomness(sizeof(k), &k);
    k &= INT64_MAX;
    if( k==0 ) continue;
    rc = gpudsKeyExists(p, k, &bExists);
    if( rc ) return rc;
    if( !bExists ){ *pk = k; return SQLITE_OK; }
  }
  return gpudsVtabError(p, SQLITE_FULL, "database or disk is full");
}

/* The key given by an INSERT or UPDATE: integer, or a value that converts
** to one losslessly (as for a rowid table); otherwise a datatype mismatch. */
static int keyFromValue(GpudsTable *p, sqlite3_value *v, int64_t *pk){
  int eType = sqlite3_value_type(v);
  if( eType==SQLITE_INTEGER ){ *pk = sqlite3_value_int64(v); return SQLITE_OK; }
  if( eType!=SQLITE_BLOB && gpudsValueToKey(v, pk) ) return SQLITE_OK;
  return gpudsVtabError(p, SQLITE_MISMATCH, "datatype mismatch");
}

/* True if value v is the integer key of value pOld (an integer). */
static int sameKey(sqlite3_value *v, sqlite3_value *pOld){
  return sqlite3_value_type(v)==SQLITE_INTEGER
      && sqlite3_value_int64(v)==sqlite3_value_int64(pOld);
}

/* Report a duplicate key the way SQLite does for a rowid table. */
static int uniqueError(GpudsTable *p){
  return gpudsVtabError(p, SQLITE_CONSTRAINT, "UNIQUE constraint failed: %s.%s",
                        p->zName, p->azCol[0]);
}

/* xUpdate: DELETE (argc==1), INSERT (argv[0] NULL) or UPDATE.  Every call
** either changes the write buffer as asked or changes nothing. */
static int tableUpdate(GpudsTable *p, int argc, sqlite3_value **argv,
                       sqlite3_int64 *pRowid){
  int rc, i, eConflict, bExists = 0;
  int64_t kOld = 0, kNew = 0;
  uint64_t hRow;

  rc = brokenCheck(p);
  if( rc ) return rc;
  /* Flush a full buffer before changing anything, so a failed flush leaves
  ** this statement's row unwritten. */
  rc = gpudsWbufFlush(p, 0);
  if( rc ) return rc;

  if( argc==1 ){
    return gpudsWbufPut(p, sqlite3_value_int64(argv[0]), 0);
  }

  /* The new key.  In a virtual table the declared INTEGER PRIMARY KEY is
  ** column 0, not an alias of the rowid: SQLite passes it in argv[2] and
  ** the hidden rowid in argv[1].  gpuds makes the rowid an alias of the key:
  ** an INSERT may give either, an UPDATE may change either.  Where a
  ** statement gives both, an ordinary table takes the one named last, an
  ** order xUpdate cannot see (README, Known differences): an INSERT takes
  ** the rowid (INSERT INTO t(k, rowid, ...)), an UPDATE the key
  ** (UPDATE t SET rowid=..., k=...). */
  {
    sqlite3_value *pKey = argv[2];
    int bUpd = sqlite3_value_type(argv[0])!=SQLITE_NULL;
    if( bUpd ){
      if( !sameKey(argv[2], argv[0]) ){
        pKey = argv[2];                 /* UPDATE ... SET k = ... */
      }else if( !sameKey(argv[1], argv[0]) ){
        pKey = argv[1];                 /* UPDATE ... SET rowid = ... */
      }
    }else if( sqlite3_value_type(argv[1])!=SQLITE_NULL ){
      pKey = argv[1];                   /* INSERT INTO t(rowid, ...) */
    }
    if( sqlite3_value_type(pKey)==SQLITE_NULL ){
      if( bUpd ) return gpudsVtabError(p, SQLITE_MISMATCH, "datatype mismatch");
      rc = newKey(p, &kNew);
      if( rc ) return rc;
    }else{
      rc = keyFromValue(p, pKey, &kNew);
      if( rc ) return rc;
      bExists = -1;     /* to be looked up */
    }
  }
  for(i=1; i<p->nCol; i++){
    if( p->aNotNull[i] && sqlite3_value_type(argv[2+i])==SQLITE_NULL ){
      return gpudsVtabError(p, SQLITE_CONSTRAINT, "NOT NULL constraint failed: %s.%s",
                            p->zName, p->azCol[i]);
    }
  }

  eConflict = sqlite3_vtab_on_conflict(p->db);
  if( sqlite3_value_type(argv[0])!=SQLITE_NULL ){
    kOld = sqlite3_value_int64(argv[0]);
    if( kOld==kNew ) bExists = 0;        /* an UPDATE in place */
  }
  if( bExists<0 && !p->bMaxValid && p->wb.nOver==0
   && (gpudsStoreOrdered(p) || gpudsStoreCount(p)==0) ){
    /* Learn the largest key while that is cheap (one key of an ordered
    ** store, or an empty table), for the test below. */
    int bAny = 0;
    int64_t mx = 0;
    rc = gpudsMaxKey(p, &bAny, &mx);
    if( rc ) return rc;
  }
  if( bExists<0 && p->bMaxValid && (!p->bMaxAny || kNew>p->iMax) ){
    bExists = 0;        /* past the largest key (keys in order): new */
  }
  if( bExists<0 ){
    rc = gpudsKeyExists(p, kNew, &bExists);
    if( rc ) return rc;
  }
  if( bExists && eConflict!=SQLITE_REPLACE ){
    if( eConflict==SQLITE_IGNORE ) return SQLITE_CONSTRAINT;  /* SQLite skips the row */
    return uniqueError(p);
  }

  /* A big write buffer (a bulk load) takes its rows from an arena: a bump
  ** of a pointer each instead of a malloc(), and no free() per row later.
  ** Small transactions keep malloc(), whose holes are reused: a long run of
  ** small updates must not pin arena blocks that are mostly dead. */
  hRow = gpudsRowNew(p->wb.nOver>=GPUDS_ARENA_ROWS ? &p->wArena : 0,
                     p->nCol-1, &argv[3], &p->aAff[1], gpudsTableText(p));
  if( hRow==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  if( gpudsRowTooBig(gpudsRowOf(hRow), &p->aAff[1],
                     sqlite3_limit(p->db, SQLITE_LIMIT_LENGTH, -1))
   || (p->iFormat<SHADOW_FORMAT_OVFL
       && (int64_t)gpudsRowLegacyBytes(gpudsRowOf(hRow)) > gpudsRunInlineMax(p)) ){
    /* An ordinary table's record of this row would pass
    ** SQLITE_LIMIT_LENGTH: refuse the row now, as it does.  (Format 3
    ** stores every other row, spilling records too big for a chunk; a table
    ** of format 1 or 2 only those that fit in one.)  Refused here rather
    ** than at COMMIT, which would lose the transaction's other rows. */
    gpudsRowFreeHandle(hRow);
    return gpudsVtabError(p, SQLITE_TOOBIG, "string or blob too big");
  }
  if( sqlite3_value_type(argv[0])==SQLITE_NULL || kOld==kNew ){
    rc = gpudsWbufPut(p, kNew, hRow);
  }else{
    rc = gpudsWbufPut2(p, kOld, 0, kNew, hRow);
  }
  if( rc ){
    gpudsRowFreeHandle(hRow);
    return rc;
  }
  *pRowid = kNew;
  return SQLITE_OK;
}

static int gpudsUpdate(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv,
                       sqlite3_int64 *pRowid){
  GpudsTable *p = tab(pVtab);
  p->nWrites++;                 /* open cursors look their rows up again */
  return vtabDone(pVtab, tableUpdate(p, argc, argv, pRowid));
}

/* xBegin: a write transaction starts (holding the database's write lock):
** bring the structure up to date with what other connections committed. */
static int gpudsBegin(sqlite3_vtab *pVtab){
  int rc = gpudsShadowRefresh(tab(pVtab));
  /* writes need the store: wait for a build in the background; and a copy
  ** whose newest commit is the connection's snapshot */
  if( rc==SQLITE_OK ) rc = gpudsShadowReady(tab(pVtab));
  if( rc==SQLITE_OK ) rc = gpudsShadowWrite(tab(pVtab));
  return vtabDone(pVtab, rc);
}

/* xSync: apply the transaction's writes to the store as one batch and
** write them to the shadow tables.  An error here makes SQLite roll the
** transaction back (xRollback), shadow tables included. */
static int gpudsSync(sqlite3_vtab *pVtab){
  GpudsTable *p = tab(pVtab);
  /* The shadow writes below set last_insert_rowid(): give the user's back. */
  sqlite3_int64 iLastRowid = sqlite3_last_insert_rowid(p->db);
  int rc, bExists = 1;
  if( p->bBroken ) return vtabDone(pVtab, brokenCheck(p));
  if( !gpudsWbufEmpty(p) ){
    rc = gpudsShadowExists(p, &bExists);
    if( rc ) return vtabDone(pVtab, rc);
  }
  if( !bExists ){
    /* The table's creation was rolled back (ROLLBACK TO), or it was dropped
    ** (and another made under its name): so are its rows. */
    rc = gpudsWbufRollback(p);
    gpudsShadowRolledBack(p, 1, gpudsWbufBrokenClear(p));
    return vtabDone(pVtab, rc);
  }
  rc = gpudsWbufFlush(p, 1);
  if( rc==SQLITE_OK ) rc = gpudsShadowSync(p);
  sqlite3_set_last_insert_rowid(p->db, iLastRowid);
  return vtabDone(pVtab, rc);
}

/* xCommit: the writes are in the store and the database; release what
** rollback needed. */
static int gpudsCommit(sqlite3_vtab *pVtab){
  GpudsTable *p = tab(pVtab);
  gpudsWbufCommit(p);           /* its flushes are the copy's from now on */
  gpudsShadowCommitted(p);
  return SQLITE_OK;
}

/* xRollback */
static int gpudsRollback(sqlite3_vtab *pVtab){
  GpudsTable *p = tab(pVtab);
  int rc;
  p->nWrites++;
  rc = gpudsWbufRollback(p);
  /* after an undo that could not complete, shadow.c reloads the table */
  gpudsShadowRolledBack(p, 1, gpudsWbufBrokenClear(p));
  return vtabDone(pVtab, rc);
}

/* xSavepoint, xRelease, xRollbackTo */
static int gpudsSavepoint(sqlite3_vtab *pVtab, int i){
  return vtabDone(pVtab, gpudsWbufSavepoint(tab(pVtab), i));
}
static int gpudsRelease(sqlite3_vtab *pVtab, int i){
  return vtabDone(pVtab, gpudsWbufRelease(tab(pVtab), i));
}
static int gpudsRollbackTo(sqlite3_vtab *pVtab, int i){
  GpudsTable *p = tab(pVtab);
  int rc;
  p->nWrites++;
  rc = gpudsWbufRollbackTo(p, i);
  /* It may have undone a DROP and CREATE of this name: the next refresh
  ** reads t_meta (its 'id' tells); a total undo that could not complete
  ** has the table reloaded. */
  gpudsShadowRolledBack(p, 0, i<0 ? gpudsWbufBrokenClear(p) : 0);
  return vtabDone(pVtab, rc);
}

/* xRename: the table and its shadow tables take the new name. */
static int gpudsRename(sqlite3_vtab *pVtab, const char *zNew){
  GpudsTable *p = tab(pVtab);
  char *z = sqlite3_mprintf("%s", zNew);
  int rc;
  if( z==0 ) return SQLITE_NOMEM;
  rc = gpudsShadowReady(p);     /* a build reads the shadow tables by name */
  if( rc==SQLITE_OK ) rc = gpudsShadowRename(p, zNew);
  if( rc ){ sqlite3_free(z); return vtabDone(pVtab, rc); }
  sqlite3_free(p->zName);
  p->zName = z;
  return SQLITE_OK;
}

/* xIntegrity (SQLite >= 3.44, PRAGMA integrity_check and quick_check):
** gpuds_check's findings in SQLite's words; SQLITE_OK with *pzErr NULL when
** the table is sound. */
static int gpudsIntegrity(sqlite3_vtab *pVtab, const char *zSchema,
                          const char *zTabName, int mFlags, char **pzErr){
  GpudsTable *p = tab(pVtab);
  char *zRes = 0;
  int rc = gpudsShadowCheck(p, &zRes);
  *pzErr = 0;
  if( rc==SQLITE_CORRUPT_VTAB ){
    /* damage found while reading the shadow tables: a finding, not a
    ** failure of the check itself */
    *pzErr = sqlite3_mprintf("%s", p->base.zErrMsg ? p->base.zErrMsg : "damaged");
    sqlite3_free(p->base.zErrMsg);
    p->base.zErrMsg = 0;
    return *pzErr ? SQLITE_OK : SQLITE_NOMEM;
  }
  if( rc ) return vtabDone(pVtab, rc);
  if( strcmp(zRes, "ok")!=0 ){
    *pzErr = zRes;
  }else{
    sqlite3_free(zRes);
  }
  (void)zSchema; (void)zTabName; (void)mFlags;
  return SQLITE_OK;
}

/* The methods, in sqlite3_module order after iVersion. */
#define GPUDS_METHODS \
  gpudsCreate, gpudsConnect, gpudsBestIndexMethod, gpudsDisconnect,          \
  gpudsDestroy, gpudsOpen, gpudsClose, gpudsFilter, gpudsNext, gpudsEof,     \
  gpudsColumn, gpudsRowid, gpudsUpdate, gpudsBegin, gpudsSync, gpudsCommit,  \
  gpudsRollback, 0 /* xFindFunction */, gpudsRename, gpudsSavepoint,         \
  gpudsRelease, gpudsRollbackTo, gpudsShadowName

/* Version 3: savepoints and shadow tables. */
static sqlite3_module gpudsModule = { 3, GPUDS_METHODS };

/* Version 4 adds xIntegrity after the version-3 methods.  It is registered
** where the SQLite that loads gpuds has it (>= 3.44), whatever headers
** gpuds was built with: older headers lack the member, so the layout is
** spelled out here, the same as SQLite's own. */
#if SQLITE_VERSION_NUMBER>=3044000
static sqlite3_module gpudsModule4 = { 4, GPUDS_METHODS, gpudsIntegrity };
#else
static struct {
  sqlite3_module base;
  int (*xIntegrity)(sqlite3_vtab*, const char*, const char*, int, char**);
} gpudsModule4 = { { 4, GPUDS_METHODS }, gpudsIntegrity };
#endif

/* Register the gfsl and gpuhash modules on db, with client data pGfsl and
** pHash, each handed to xDestroy when its module goes (the connection
** closes, the module is dropped or replaced), or now if not registered. */
int gpudsRegisterModules(sqlite3 *db, GpudsModAux *pGfsl, GpudsModAux *pHash,
                         void (*xDestroy)(void*)){
  const sqlite3_module *pMod = sqlite3_libversion_number()>=3044000
      ? (const sqlite3_module*)&gpudsModule4 : &gpudsModule;
  int rc = sqlite3_create_module_v2(db, "gfsl", pMod, pGfsl, xDestroy);
  if( rc==SQLITE_OK ){
    rc = sqlite3_create_module_v2(db, "gpuhash", pMod, pHash, xDestroy);
    if( rc ) gpudsUnregisterModules(db);
  }else{
    xDestroy(pHash);
  }
  return rc;
}

/* Remove both modules from db (their xDestroy runs now): a load that fails
** leaves nothing of this library registered, since SQLite unloads it. */
void gpudsUnregisterModules(sqlite3 *db){
  sqlite3_create_module_v2(db, "gfsl", 0, 0, 0);
  sqlite3_create_module_v2(db, "gpuhash", 0, 0, 0);
}
