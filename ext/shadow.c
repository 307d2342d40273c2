/*
** shadow.c -- durable contents of a gfsl/gpuhash table, in two shadow tables
** of the same database, written in xSync within the same transaction as
** everything else (so a crash at any instant leaves the last commit).
**
**   <name>_meta(key TEXT PRIMARY KEY, value)   -- 'format', 'generation', 'rows'
**   <name>_run(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB)
**
** Format (like an LSM tree): each committed batch is appended as a sorted
** run; a run is stored as chunks of at most SHADOW_CHUNK keys, one row per
** chunk, id = (run << 20) | chunk number, so "ORDER BY id" reads the runs
** oldest to newest and each run in key order.  In a chunk:
**   keys   n little-endian int64 keys, strictly ascending
**   vals   n entries: u32 length L then L bytes of the row record (row.c),
**          or L = 0xffffffff for a key deleted by this run
** A key's current value is the one in the newest run that holds it.  After
** each commit the newest two runs are merged while the newest is at least
** half the size of the one before (size-tiered: every key is rewritten
** O(log n) times); a merge that reaches the oldest run drops tombstones.
**
** 'generation' counts commits.  A connection remembers the generation it
** loaded; when PRAGMA data_version says another connection committed, it
** reads the generation and reloads the structure if it changed, so it never
** answers from stale contents.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>
#include <stdlib.h>
#include <stdarg.h>

#define SHADOW_FORMAT  1
#define SHADOW_CHUNK   65536
#define SHADOW_TOMB    0xffffffffu
#define RUN_SHIFT      20

/* Run (ppStmt==0) or prepare a printf-formatted SQL statement; on error the
** table's message says why. */
static int shadowSql(GpudsTable *p, sqlite3_stmt **ppStmt, const char *zFmt, va_list ap){
  char *zSql = sqlite3_vmprintf(zFmt, ap);
  int rc;
  if( ppStmt ) *ppStmt = 0;
  if( zSql==0 ) return SQLITE_NOMEM;
  rc = ppStmt ? sqlite3_prepare_v2(p->db, zSql, -1, ppStmt, 0)
              : sqlite3_exec(p->db, zSql, 0, 0, 0);
  sqlite3_free(zSql);
  if( rc ) gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  return rc;
}

/* Run a printf-formatted SQL statement that returns no rows. */
static int shadowExec(GpudsTable *p, const char *zFmt, ...){
  va_list ap;
  int rc;
  va_start(ap, zFmt);
  rc = shadowSql(p, 0, zFmt, ap);
  va_end(ap);
  return rc;
}

/* Prepare a printf-formatted statement. */
static int shadowPrepare(GpudsTable *p, sqlite3_stmt **ppStmt, const char *zFmt, ...){
  va_list ap;
  int rc;
  va_start(ap, zFmt);
  rc = shadowSql(p, ppStmt, zFmt, ap);
  va_end(ap);
  return rc;
}

/* True if zSuffix names one of our shadow tables ("<name>_<suffix>"). */
int gpudsShadowName(const char *zSuffix){
  return sqlite3_stricmp(zSuffix, "meta")==0 || sqlite3_stricmp(zSuffix, "run")==0;
}

/* True if the shadow tables exist.  They do not when the CREATE VIRTUAL
** TABLE was undone by ROLLBACK TO: SQLite adds a table created inside a
** savepoint to the transaction without telling it of the savepoint, so its
** xRollbackTo is never called, yet xSync is. */
int gpudsShadowExists(GpudsTable *p){
  sqlite3_stmt *pStmt;
  int bExists = 0;
  if( shadowPrepare(p, &pStmt, "SELECT 1 FROM %Q.sqlite_schema WHERE type='table' AND name='%q_meta'",
                    p->zDb, p->zName)==SQLITE_OK ){
    bExists = sqlite3_step(pStmt)==SQLITE_ROW;
    sqlite3_finalize(pStmt);
  }
  return bExists;
}

/* xCreate: create the (empty) shadow tables. */
int gpudsShadowCreate(GpudsTable *p){
  int rc = shadowExec(p,
    "CREATE TABLE %Q.'%q_meta'(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "INSERT INTO %Q.'%q_meta' VALUES('format', %d), ('generation', 0), ('rows', 0);"
    "CREATE TABLE %Q.'%q_run'(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB);",
    p->zDb, p->zName, p->zDb, p->zName, SHADOW_FORMAT, p->zDb, p->zName);
  if( rc==SQLITE_OK ) p->bLoaded = 1;     /* empty, and so is the store */
  return rc;
}

/* xDestroy: drop the shadow tables. */
int gpudsShadowDestroy(GpudsTable *p){
  return shadowExec(p, "DROP TABLE IF EXISTS %Q.'%q_meta';"
                       "DROP TABLE IF EXISTS %Q.'%q_run';",
                    p->zDb, p->zName, p->zDb, p->zName);
}

/* xRename: rename the shadow tables along with the table. */
int gpudsShadowRename(GpudsTable *p, const char *zNew){
  return shadowExec(p, "ALTER TABLE %Q.'%q_meta' RENAME TO '%q_meta';"
                       "ALTER TABLE %Q.'%q_run' RENAME TO '%q_run';",
                    p->zDb, p->zName, zNew, p->zDb, p->zName, zNew);
}

/* Read integer meta value zKey into *pv. */
static int metaGet(GpudsTable *p, const char *zKey, int64_t *pv){
  sqlite3_stmt *pStmt;
  int rc = shadowPrepare(p, &pStmt, "SELECT value FROM %Q.'%q_meta' WHERE key=%Q",
                         p->zDb, p->zName, zKey);
  if( rc ) return rc;
  *pv = 0;
  if( sqlite3_step(pStmt)==SQLITE_ROW ) *pv = sqlite3_column_int64(pStmt, 0);
  rc = sqlite3_finalize(pStmt);
  if( rc ) gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  return rc;
}

/* ------------------------------------------------------------ run readers */

/* Streams one run's entries in key order, a chunk at a time.  Every entry
** is bounds-checked before use: a damaged chunk is reported as
** SQLITE_CORRUPT_VTAB, never read past its end. */
typedef struct RunReader {
  sqlite3_stmt *pStmt;     /* SELECT n, keys, vals of the run's chunks */
  int64_t iRun;
  int n, i;                /* entries in the current chunk, next one */
  int64_t *aKey;           /* copy of the chunk's keys */
  unsigned char *aVal;     /* copy of the chunk's vals */
  size_t nVal, iOff;       /* bytes of aVal, offset of entry i */
  uint32_t nCur;           /* payload bytes of entry i (SHADOW_TOMB: none) */
  int bEof;
} RunReader;

/* Report a damaged chunk of run r. */
static int readerCorrupt(GpudsTable *p, RunReader *r, const char *zWhy){
  return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                        p->zName, (long long)r->iRun, zWhy);
}

/* Validate entry i of the current chunk at offset iOff; cache its length. */
static int readerCheckEntry(GpudsTable *p, RunReader *r){
  uint32_t L;
  if( r->iOff+4 > r->nVal ) return readerCorrupt(p, r, "entry past the end of vals");
  memcpy(&L, r->aVal + r->iOff, 4);
  if( L!=SHADOW_TOMB && (uint64_t)r->iOff+4+L > r->nVal ){
    return readerCorrupt(p, r, "entry length past the end of vals");
  }
  if( r->i>0 && r->aKey[r->i]<=r->aKey[r->i-1] ) return readerCorrupt(p, r, "keys out of order");
  r->nCur = L;
  return SQLITE_OK;
}

/* Advance to the next chunk; sets bEof at the end. */
static int readerChunk(GpudsTable *p, RunReader *r){
  int rc = sqlite3_step(r->pStmt);
  if( rc==SQLITE_DONE ){ r->bEof = 1; return SQLITE_OK; }
  if( rc!=SQLITE_ROW ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  {
    int n = sqlite3_column_int(r->pStmt, 0);
    int nk, nv;
    const void *pk, *pv;
    if( sqlite3_column_type(r->pStmt, 1)!=SQLITE_BLOB
     || sqlite3_column_type(r->pStmt, 2)!=SQLITE_BLOB ){
      return readerCorrupt(p, r, "keys or vals is not a blob");
    }
    pk = sqlite3_column_blob(r->pStmt, 1);
    nk = sqlite3_column_bytes(r->pStmt, 1);
    pv = sqlite3_column_blob(r->pStmt, 2);
    nv = sqlite3_column_bytes(r->pStmt, 2);
    if( n<0 || nk!=n*8 || (int64_t)nv < (int64_t)n*4 ) return readerCorrupt(p, r, "bad chunk sizes");
    sqlite3_free(r->aKey); sqlite3_free(r->aVal);
    r->aKey = sqlite3_malloc64((size_t)nk + 8);
    r->aVal = sqlite3_malloc64((size_t)nv + 8);
    if( !r->aKey || !r->aVal ) return SQLITE_NOMEM;
    if( nk ) memcpy(r->aKey, pk, (size_t)nk);
    if( nv ) memcpy(r->aVal, pv, (size_t)nv);
    r->n = n; r->i = 0; r->nVal = (size_t)nv; r->iOff = 0;
    if( n>0 ) return readerCheckEntry(p, r);
  }
  return SQLITE_OK;
}

/* Open a reader on run iRun, positioned on its first entry. */
static int readerOpen(GpudsTable *p, int64_t iRun, RunReader *r){
  int rc;
  memset(r, 0, sizeof(*r));
  r->iRun = iRun;
  rc = shadowPrepare(p, &r->pStmt,
      "SELECT n, keys, vals FROM %Q.'%q_run' WHERE id BETWEEN %lld AND %lld ORDER BY id",
      p->zDb, p->zName, (long long)(iRun<<RUN_SHIFT),
      (long long)((iRun<<RUN_SHIFT) | ((1<<RUN_SHIFT)-1)));
  while( rc==SQLITE_OK && !r->bEof && r->i>=r->n ) rc = readerChunk(p, r);
  return rc;
}

/* The current (validated) entry: key, and its record bytes (NULL for a
** tombstone). */
static void readerEntry(RunReader *r, int64_t *pKey,
                        const unsigned char **paRec, uint32_t *pnRec){
  *pKey = r->aKey[r->i];
  if( r->nCur==SHADOW_TOMB ){ *paRec = 0; *pnRec = 0; return; }
  *paRec = r->aVal + r->iOff + 4;
  *pnRec = r->nCur;
}

/* Step past the current entry and validate the next one. */
static int readerNext(GpudsTable *p, RunReader *r){
  r->iOff += 4 + (r->nCur==SHADOW_TOMB ? 0 : r->nCur);
  r->i++;
  if( r->i<r->n ) return readerCheckEntry(p, r);
  while( !r->bEof && r->i>=r->n ){
    int rc = readerChunk(p, r);
    if( rc ) return rc;
  }
  return SQLITE_OK;
}

static void readerClose(RunReader *r){
  sqlite3_finalize(r->pStmt);
  sqlite3_free(r->aKey); sqlite3_free(r->aVal);
  memset(r, 0, sizeof(*r));
}

/* The run numbers present, oldest first, with their entry counts. */
static int listRuns(GpudsTable *p, int64_t **paRun, int64_t **paN, int *pnRun){
  sqlite3_stmt *pStmt;
  int64_t *aRun = 0, *aN = 0;
  int nRun = 0, nAlloc = 0;
  int rc = shadowPrepare(p, &pStmt,
      "SELECT id>>%d, sum(n) FROM %Q.'%q_run' GROUP BY 1 ORDER BY 1",
      RUN_SHIFT, p->zDb, p->zName);
  if( rc ) return rc;
  while( sqlite3_step(pStmt)==SQLITE_ROW ){
    if( nRun==nAlloc ){
      int64_t *a, *b;
      nAlloc = nAlloc ? nAlloc*2 : 16;
      a = sqlite3_realloc64(aRun, nAlloc*8);
      if( a ) aRun = a;
      b = sqlite3_realloc64(aN, nAlloc*8);
      if( b ) aN = b;
      if( !a || !b ){ rc = SQLITE_NOMEM; break; }
    }
    aRun[nRun] = sqlite3_column_int64(pStmt, 0);
    aN[nRun++] = sqlite3_column_int64(pStmt, 1);
  }
  {
    int rc2 = sqlite3_finalize(pStmt);
    if( rc==SQLITE_OK && rc2 ) rc = gpudsVtabError(p, rc2, "%s", sqlite3_errmsg(p->db));
  }
  if( rc ){ sqlite3_free(aRun); sqlite3_free(aN); return rc; }
  *paRun = aRun; *paN = aN; *pnRun = nRun;
  return SQLITE_OK;
}

/* A k-way merge of runs aRun[0..nRun-1] (oldest first): each key once, with
** the value of the newest run that holds it.  xOut is called for each
** (key, record or NULL for a tombstone), in key order. */
typedef int (*MergeOut)(GpudsTable*, void*, int64_t, const unsigned char*, uint32_t);
static int mergeRuns(GpudsTable *p, const int64_t *aRun, int nRun, int bDropTomb,
                     MergeOut xOut, void *pCtx){
  RunReader *aR = sqlite3_malloc64(sizeof(RunReader)*(nRun ? nRun : 1));
  int rc = SQLITE_OK, i;
  if( aR==0 ) return SQLITE_NOMEM;
  memset(aR, 0, sizeof(RunReader)*(nRun ? nRun : 1));
  for(i=0; i<nRun && rc==SQLITE_OK; i++) rc = readerOpen(p, aRun[i], &aR[i]);
  while( rc==SQLITE_OK ){
    int64_t kMin = 0;
    int iBest = -1;
    const unsigned char *aRec = 0;
    uint32_t nRec = 0;
    /* Smallest current key; on ties the newest run (largest i) wins. */
    for(i=0; i<nRun; i++){
      if( aR[i].bEof ) continue;
      if( iBest<0 || aR[i].aKey[aR[i].i]<=kMin ){
        kMin = aR[i].aKey[aR[i].i];
        iBest = i;
      }
    }
    if( iBest<0 ) break;
    readerEntry(&aR[iBest], &kMin, &aRec, &nRec);
    if( aRec || !bDropTomb ) rc = xOut(p, pCtx, kMin, aRec, nRec);
    for(i=0; i<nRun && rc==SQLITE_OK; i++){
      if( !aR[i].bEof && aR[i].aKey[aR[i].i]==kMin ) rc = readerNext(p, &aR[i]);
    }
  }
  for(i=0; i<nRun; i++) readerClose(&aR[i]);
  sqlite3_free(aR);
  return rc;
}

/* ------------------------------------------------------------ run writer */

/* Accumulates entries into chunks and inserts them as run iRun. */
typedef struct RunWriter {
  sqlite3_stmt *pIns;
  int64_t nLimit;         /* largest blob the connection accepts */
  int64_t iRun;
  int iChunk;
  int n;
  int64_t *aKey;          /* SHADOW_CHUNK keys */
  unsigned char *aVal;    /* the chunk's vals */
  size_t nVal, nValAlloc;
  int64_t nTotal;
} RunWriter;

static int writerOpen(GpudsTable *p, int64_t iRun, RunWriter *w){
  memset(w, 0, sizeof(*w));
  w->iRun = iRun;
  w->aKey = sqlite3_malloc64(SHADOW_CHUNK*8);
  if( w->aKey==0 ) return SQLITE_NOMEM;
  w->nLimit = sqlite3_limit(p->db, SQLITE_LIMIT_LENGTH, -1);
  return shadowPrepare(p, &w->pIns, "INSERT INTO %Q.'%q_run'(id, n, keys, vals) VALUES(?,?,?,?)",
                       p->zDb, p->zName);
}

/* Write the pending chunk, if any. */
static int writerFlush(GpudsTable *p, RunWriter *w){
  int rc;
  if( w->n==0 ) return SQLITE_OK;
  if( w->iChunk>=(1<<RUN_SHIFT) ) return gpudsVtabError(p, SQLITE_FULL, "run too large");
  rc = sqlite3_bind_int64(w->pIns, 1, (w->iRun<<RUN_SHIFT) | w->iChunk);
  if( rc==SQLITE_OK ) rc = sqlite3_bind_int(w->pIns, 2, w->n);
  if( rc==SQLITE_OK ) rc = sqlite3_bind_blob64(w->pIns, 3, w->aKey, (uint64_t)w->n*8, SQLITE_STATIC);
  if( rc==SQLITE_OK ){
    rc = sqlite3_bind_blob64(w->pIns, 4, w->aVal ? (const void*)w->aVal : (const void*)"",
                             w->nVal, SQLITE_STATIC);
  }
  if( rc ){
    return gpudsVtabError(p, rc, "%s_run: cannot store a chunk of %lld bytes: %s",
                          p->zName, (long long)w->nVal, sqlite3_errstr(rc));
  }
  sqlite3_step(w->pIns);
  rc = sqlite3_reset(w->pIns);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  w->nVal = 0;
  w->iChunk++;
  w->n = 0;
  return SQLITE_OK;
}

/* Append (key, record or NULL = tombstone); keys must ascend. */
static int writerAdd(GpudsTable *p, RunWriter *w, int64_t k,
                     const unsigned char *aRec, uint32_t nRec){
  uint32_t L = aRec ? nRec : SHADOW_TOMB;
  size_t nNeed = w->nVal + 4 + (aRec ? nRec : 0);
  if( w->n>0 && ((int64_t)nNeed > w->nLimit || (int64_t)(w->n+1)*8 > w->nLimit) ){
    /* Keep every chunk within SQLITE_LIMIT_LENGTH. */
    int rc = writerFlush(p, w);
    if( rc ) return rc;
    nNeed = 4 + (aRec ? nRec : 0);
  }
  if( nNeed>w->nValAlloc ){
    size_t nNew = w->nValAlloc ? w->nValAlloc*2 : 65536;
    unsigned char *a;
    while( nNew<nNeed ) nNew *= 2;
    a = sqlite3_realloc64(w->aVal, nNew);
    if( a==0 ) return SQLITE_NOMEM;
    w->aVal = a;
    w->nValAlloc = nNew;
  }
  w->aKey[w->n++] = k;
  memcpy(w->aVal + w->nVal, &L, 4);
  if( aRec && nRec ) memcpy(w->aVal + w->nVal + 4, aRec, nRec);
  w->nVal = nNeed;
  w->nTotal++;
  if( w->n==SHADOW_CHUNK || w->nVal>(64<<20) ) return writerFlush(p, w);
  return SQLITE_OK;
}

static void writerClose(RunWriter *w){
  sqlite3_finalize(w->pIns);
  sqlite3_free(w->aKey);
  sqlite3_free(w->aVal);
  memset(w, 0, sizeof(*w));
}

/* mergeRuns() callback that appends to a RunWriter. */
static int outToWriter(GpudsTable *p, void *pCtx, int64_t k,
                       const unsigned char *aRec, uint32_t nRec){
  return writerAdd(p, (RunWriter*)pCtx, k, aRec, nRec);
}

/* Merge the newest runs while the newest is at least half the size of the
** one before it. */
static int compactRuns(GpudsTable *p){
  int64_t *aRun = 0, *aN = 0;
  int nRun = 0, rc;
  rc = listRuns(p, &aRun, &aN, &nRun);
  while( rc==SQLITE_OK && nRun>=2 && aN[nRun-1]*2 >= aN[nRun-2] ){
    RunWriter w;
    int64_t iNew = aRun[nRun-1] + 1;
    int bOldest = (nRun==2);
    rc = writerOpen(p, iNew, &w);
    if( rc==SQLITE_OK ) rc = mergeRuns(p, &aRun[nRun-2], 2, bOldest, outToWriter, &w);
    if( rc==SQLITE_OK ) rc = writerFlush(p, &w);
    if( rc==SQLITE_OK ){
      rc = shadowExec(p, "DELETE FROM %Q.'%q_run' WHERE id BETWEEN %lld AND %lld",
                      p->zDb, p->zName, (long long)(aRun[nRun-2]<<RUN_SHIFT),
                      (long long)((aRun[nRun-1]<<RUN_SHIFT) | ((1<<RUN_SHIFT)-1)));
    }
    nRun--;
    aRun[nRun-1] = iNew;
    aN[nRun-1] = w.nTotal;
    writerClose(&w);
  }
  sqlite3_free(aRun); sqlite3_free(aN);
  return rc;
}

/* Write the whole store as the only run (after a ROLLBACK TO undid part of
** what an earlier xSync of this transaction wrote: the shadow tables then no
** longer match any set of undo entries, but the store does). */
static int rewriteCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                     const uint64_t *aV, size_t n){
  size_t i;
  int rc = SQLITE_OK;
  for(i=0; i<n && rc==SQLITE_OK; i++){
    const GpudsRow *pRow = gpudsRowOf(aV[i]);
    rc = writerAdd(p, (RunWriter*)pCtx, aK[i], (const unsigned char*)pRow,
                   (uint32_t)gpudsRowBytes(pRow));
  }
  return rc;
}
static int shadowRewrite(GpudsTable *p){
  RunWriter w;
  int rc = shadowExec(p, "DELETE FROM %Q.'%q_run'", p->zDb, p->zName);
  if( rc ) return rc;
  rc = writerOpen(p, 1, &w);
  if( rc==SQLITE_OK ) rc = gpudsStoreEach(p, rewriteCb, &w);
  if( rc==SQLITE_OK ) rc = writerFlush(p, &w);
  writerClose(&w);
  return rc;
}

/* Write the batches applied since the last xSync of this transaction (undo
** entries from nUndoSynced on) as ONE new run: a merge of the batches,
** the newest value of each key winning, deletions kept. */
static int shadowAppendRun(GpudsTable *p, int64_t iRun, int *pbAny){
  int64_t i, nF = 0;
  size_t *aPos = 0, *aN = 0;
  const int64_t **aaKey = 0;
  const uint64_t **aaNew = 0;
  RunWriter w;
  int rc = SQLITE_OK;
  *pbAny = 0;
  for(i=p->nUndoSynced; i<p->wb.nUndo; i++){
    size_t n; const int64_t *ak; const uint64_t *an;
    if( gpudsUndoFlush(p, i, &n, &ak, &an) ) nF++;
  }
  if( nF==0 ) return SQLITE_OK;
  aPos = sqlite3_malloc64(nF*sizeof(size_t));
  aN = sqlite3_malloc64(nF*sizeof(size_t));
  aaKey = sqlite3_malloc64(nF*sizeof(int64_t*));
  aaNew = sqlite3_malloc64(nF*sizeof(uint64_t*));
  if( !aPos || !aN || !aaKey || !aaNew ){ rc = SQLITE_NOMEM; goto append_out; }
  nF = 0;
  for(i=p->nUndoSynced; i<p->wb.nUndo; i++){
    if( gpudsUndoFlush(p, i, &aN[nF], &aaKey[nF], &aaNew[nF]) ){ aPos[nF] = 0; nF++; }
  }
  rc = writerOpen(p, iRun, &w);
  while( rc==SQLITE_OK ){
    int64_t j, jBest = -1, k = 0;
    const GpudsRow *pRow;
    for(j=0; j<nF; j++){                 /* smallest key; newest batch on ties */
      if( aPos[j]>=aN[j] ) continue;
      if( jBest<0 || aaKey[j][aPos[j]]<=k ){ k = aaKey[j][aPos[j]]; jBest = j; }
    }
    if( jBest<0 ) break;
    pRow = gpudsRowOf(aaNew[jBest][aPos[jBest]]);
    rc = writerAdd(p, &w, k, (const unsigned char*)pRow,
                   pRow ? (uint32_t)gpudsRowBytes(pRow) : 0);
    for(j=0; j<nF; j++){
      if( aPos[j]<aN[j] && aaKey[j][aPos[j]]==k ) aPos[j]++;
    }
  }
  if( rc==SQLITE_OK ) rc = writerFlush(p, &w);
  writerClose(&w);
  *pbAny = 1;
append_out:
  sqlite3_free(aPos); sqlite3_free(aN); sqlite3_free((void*)aaKey); sqlite3_free((void*)aaNew);
  return rc;
}

/* xSync, after the write buffer was flushed: bring the shadow tables to
** the transaction's state and set the generation.  Safe to call again if
** COMMIT failed (SQLITE_BUSY) and is retried.  Errors make SQLite roll back. */
int gpudsShadowSync(GpudsTable *p){
  int64_t *aRun = 0, *aN = 0, iNext = 1, i;
  int nRun = 0, rc, bAny = 0;
  if( !p->bShadowDirty ){
    /* Nothing new to write?  Then touch nothing: the shadow tables may even
    ** be gone (CREATE VIRTUAL TABLE undone by ROLLBACK TO). */
    size_t n; const int64_t *ak; const uint64_t *an;
    for(i=p->nUndoSynced; i<p->wb.nUndo; i++){
      if( gpudsUndoFlush(p, i, &n, &ak, &an) ) break;
    }
    if( i>=p->wb.nUndo ) return SQLITE_OK;
  }
  if( p->bShadowDirty ){
    rc = shadowRewrite(p);
    bAny = 1;
  }else{
    rc = listRuns(p, &aRun, &aN, &nRun);
    if( rc ) return rc;
    if( nRun ) iNext = aRun[nRun-1] + 1;
    sqlite3_free(aRun); sqlite3_free(aN);
    rc = shadowAppendRun(p, iNext, &bAny);
    if( rc==SQLITE_OK && bAny ) rc = compactRuns(p);
  }
  if( rc==SQLITE_OK && bAny ){
    rc = shadowExec(p, "UPDATE %Q.'%q_meta' SET value=%lld WHERE key='generation';"
                       "UPDATE %Q.'%q_meta' SET value=%lld WHERE key='rows';",
                    p->zDb, p->zName, (long long)(p->iGeneration+1),
                    p->zDb, p->zName, (long long)p->pOps->xCount(p->pStore));
    if( rc==SQLITE_OK ){
      p->iGenPending = p->iGeneration + 1;
      p->nUndoSynced = p->wb.nUndo;
      p->bShadowDirty = 0;
    }
  }
  return rc;
}

/* ------------------------------------------------------------------ load */

typedef struct LoadCtx {
  int64_t *aKey;
  uint64_t *aVal;
  int64_t n, nAlloc;
  GpudsLoader loader;     /* the rows' arena */
} LoadCtx;

/* mergeRuns() callback that collects rows for the bulk load. */
static int outToLoad(GpudsTable *p, void *pCtx, int64_t k,
                     const unsigned char *aRec, uint32_t nRec){
  LoadCtx *c = (LoadCtx*)pCtx;
  uint64_t hRow;
  if( c->n==c->nAlloc ){
    int64_t nNew = c->nAlloc ? c->nAlloc*2 : 4096;
    int64_t *a = sqlite3_realloc64(c->aKey, nNew*8);
    uint64_t *b;
    if( a==0 ) return SQLITE_NOMEM;
    c->aKey = a;
    b = sqlite3_realloc64(c->aVal, nNew*8);
    if( b==0 ) return SQLITE_NOMEM;
    c->aVal = b;
    c->nAlloc = nNew;
  }
  hRow = gpudsLoaderRow(&c->loader, aRec, nRec, p->nCol-1);
  if( hRow==0 ) return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: bad row record", p->zName);
  c->aKey[c->n] = k;
  c->aVal[c->n++] = hRow;
  return SQLITE_OK;
}

/* (Re)build the store from the shadow tables: merge every run, bulk-load
** the result into a fresh store, and only then replace the old one, so a
** failure leaves the table as it was. */
static int shadowLoad(GpudsTable *p, int64_t iGen){
  int64_t *aRun = 0, *aN = 0, i;
  int nRun = 0, rc;
  LoadCtx c;
  gpuds_store *pNew = 0, *pNewMir = 0;
  memset(&c, 0, sizeof(c));
  gpudsLoaderInit(&c.loader);
  rc = listRuns(p, &aRun, &aN, &nRun);
  if( rc==SQLITE_OK ) rc = mergeRuns(p, aRun, nRun, 1, outToLoad, &c);
  if( rc==SQLITE_OK ) rc = gpudsStoreCreate(p, &pNew, &pNewMir);
  if( rc==SQLITE_OK && c.n>0 ){
    rc = gpudsStoreBulk(p, pNew, pNewMir, (size_t)c.n, c.aKey, c.aVal);
  }
  if( rc==SQLITE_OK ){
    gpudsStoreReplace(p, pNew, pNewMir, c.aKey, c.n);
    pNew = 0;
    pNewMir = 0;
    p->iGeneration = iGen;
    p->bLoaded = 1;
    p->nLoadRows = c.n;
  }else{
    for(i=0; i<c.n; i++) gpudsRowFreeHandle(c.aVal[i]);
    gpudsStoreFree(p, pNew, pNewMir);
  }
  sqlite3_free(c.aKey); sqlite3_free(c.aVal);
  sqlite3_free(aRun); sqlite3_free(aN);
  return rc;
}

/* Make sure the structure holds what the database holds: load it on first
** use, and reload it when another connection has committed to the table.
** Never while this table has a transaction or a cursor open. */
int gpudsShadowRefresh(GpudsTable *p){
  int rc;
  int64_t iGen = 0;
  unsigned int iVersion = 0;
  if( p->nCursor>0 || p->wb.nOver>0 || p->wb.nUndo>0 ) return SQLITE_OK;
  if( sqlite3_file_control(p->db, p->zDb, SQLITE_FCNTL_DATA_VERSION, &iVersion)!=SQLITE_OK ){
    iVersion = 0;
  }
  if( p->bLoaded && iVersion==p->iDataVersion && iVersion!=0 ) return SQLITE_OK;
  rc = metaGet(p, "generation", &iGen);
  if( rc ) return rc;
  if( !p->bLoaded || iGen!=p->iGeneration ) rc = shadowLoad(p, iGen);
  if( rc==SQLITE_OK ) p->iDataVersion = iVersion;
  return rc;
}

/* The transaction's shadow writes are committed: adopt the generation. */
void gpudsShadowCommitted(GpudsTable *p){
  if( p->iGenPending ){
    p->iGeneration = p->iGenPending;
    p->iGenPending = 0;
  }
  p->nUndoSynced = 0;
  p->bShadowDirty = 0;
}

/* The transaction rolled back: its shadow writes are gone too. */
void gpudsShadowRolledBack(GpudsTable *p){
  p->iGenPending = 0;
  p->nUndoSynced = 0;
  p->bShadowDirty = 0;
}

/* ------------------------------------------------------------ gpuds_check */

typedef struct CheckCtx {
  int64_t n;
  int64_t nBad;
  char *zFirst;
} CheckCtx;

/* mergeRuns() callback for gpuds_check(): compare one shadow row with the
** structure. */
static int outToCheck(GpudsTable *p, void *pCtx, int64_t k,
                      const unsigned char *aRec, uint32_t nRec){
  CheckCtx *c = (CheckCtx*)pCtx;
  uint8_t f = 0;
  uint64_t v = 0;
  int rc = gpudsStoreLookup(p, 1, &k, &f, &v);
  if( rc ) return rc;
  c->n++;
  if( !f || gpudsRowBytes(gpudsRowOf(v))!=nRec
   || memcmp(gpudsRowOf(v), aRec, nRec)!=0 ){
    if( c->nBad++==0 ){
      c->zFirst = sqlite3_mprintf("key %lld: %s", (long long)k,
                                  f ? "row differs from the shadow table" : "missing from the structure");
    }
  }
  return SQLITE_OK;
}

/* Verify the structure against the shadow tables and its own invariants.
** Returns SQLITE_OK with *pzResult "ok" or a description of the first
** problem (sqlite3_malloc'd). */
int gpudsShadowCheck(GpudsTable *p, char **pzResult){
  int64_t *aRun = 0, *aN = 0, nStore;
  int nRun = 0, rc;
  CheckCtx c;
  memset(&c, 0, sizeof(c));
  *pzResult = 0;
  rc = gpudsShadowRefresh(p);
  if( rc ) return rc;
  if( gpudsStoreCheck(p)!=SQLITE_OK ){
    *pzResult = sqlite3_mprintf("%s: %s", p->zName, p->base.zErrMsg ? p->base.zErrMsg : "check failed");
    return SQLITE_OK;
  }
  rc = listRuns(p, &aRun, &aN, &nRun);
  if( rc==SQLITE_OK ) rc = mergeRuns(p, aRun, nRun, 1, outToCheck, &c);
  sqlite3_free(aRun); sqlite3_free(aN);
  if( rc ){ sqlite3_free(c.zFirst); return rc; }
  nStore = p->pOps->xCount(p->pStore);
  if( c.nBad ){
    *pzResult = sqlite3_mprintf("%s: %lld of %lld shadow rows disagree; first: %s",
                                p->zName, (long long)c.nBad, (long long)c.n, c.zFirst);
  }else if( nStore!=c.n && p->wb.nOver==0 && p->wb.nUndo==0 ){
    *pzResult = sqlite3_mprintf("%s: the structure holds %lld keys, the shadow tables %lld",
                                p->zName, (long long)nStore, (long long)c.n);
  }else{
    *pzResult = sqlite3_mprintf("ok");
  }
  sqlite3_free(c.zFirst);
  return *pzResult ? SQLITE_OK : SQLITE_NOMEM;
}
