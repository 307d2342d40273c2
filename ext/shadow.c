/*
** shadow.c -- durable contents of a gfsl/gpuhash table, in two shadow tables
** of the same database, written in xSync within the same transaction as
** everything else (so a crash at any instant leaves the last commit):
** their creation, renaming and dropping, t_meta (read and validated as a
** whole), the sync of a transaction's batches as a new run with the
** compaction that follows it, the refresh that reloads when another
** connection committed, and gpuds_check's comparison.
**
**   <name>_meta(key, value)   -- 'format', 'generation', 'rows', 'entries', 'id'
**   <name>_run(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB)
**   <name>_ovfl(id INTEGER PRIMARY KEY, data BLOB)   -- spilled records (format 3)
**
** The run format is runfmt.c's (runfmt.h), the load loader.c's.  Each
** committed batch is appended as a sorted run; after each commit the newest
** two runs are merged while the newest is at least half the size of the one
** before (size-tiered: every key is rewritten O(log n) times); a merge that
** reaches the oldest run drops tombstones.
**
** 'generation' counts commits.  A connection remembers the generation it
** loaded; when PRAGMA data_version says another connection committed, it
** reads t_meta and reloads the structure if the generation (or the table's
** 'id') changed, so it never answers from stale contents.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "runfmt.h"
#include "gpuds_sort.h"
#include <string.h>
#include <stdlib.h>
#include <stdarg.h>

/* A load that read at least this many entries is followed by a trim of the
** heap (gpudsMemTrim): below it, what the load freed is too little to matter
** and a reload-heavy workload would pay the trim each time. */
#define SHADOW_TRIM_ENTRIES 65536

/* True if zSuffix names one of our shadow tables ("<name>_<suffix>"). */
int gpudsShadowName(const char *zSuffix){
  return sqlite3_stricmp(zSuffix, "meta")==0 || sqlite3_stricmp(zSuffix, "run")==0
      || sqlite3_stricmp(zSuffix, "ovfl")==0;
}

/* Set *pbExists if this table's shadow tables exist; an error if that
** cannot be told (out of memory), never a wrong "no".  They do not exist
** when the CREATE VIRTUAL TABLE was undone by ROLLBACK TO: SQLite adds a
** table created inside a savepoint to the transaction without telling it
** of the savepoint, so its xRollbackTo is never called, yet xSync is.  And
** they are another table's when this one was dropped in the transaction
** and a table of the same name created: SQLite may still call xSync on a
** handle of the dropped one (taken into the transaction before a schema
** change made it connect again); t_meta's 'id' tells them apart. */
int gpudsShadowExists(GpudsTable *p, int *pbExists){
  sqlite3_stmt *pStmt;
  int rc = gpudsRunPrepare(p, &pStmt,
      "SELECT 1 FROM %Q.sqlite_schema WHERE type='table' AND name='%q_meta'",
      p->zDb, p->zName);
  *pbExists = 0;
  if( rc ) return rc;                 /* not known: never taken for "gone" */
  *pbExists = sqlite3_step(pStmt)==SQLITE_ROW;
  rc = sqlite3_finalize(pStmt);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  if( *pbExists && p->iTableId!=0 ){
    rc = gpudsRunPrepare(p, &pStmt, "SELECT value FROM %Q.'%q_meta' WHERE key='id'",
                         p->zDb, p->zName);
    if( rc ) return rc;
    if( sqlite3_step(pStmt)==SQLITE_ROW && sqlite3_column_int64(pStmt, 0)!=p->iTableId ){
      *pbExists = 0;                  /* another table's */
    }
    rc = sqlite3_finalize(pStmt);
    if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  }
  return rc;
}

/* A random positive number (an 'id' or a 'stamp'). */
static int64_t shadowRandom(void){
  int64_t i = 0;
  while( i==0 ){
    sqlite3_randomness(sizeof(i), &i);
    i &= INT64_MAX;
  }
  return i;
}

/* xCreate: create the (empty) shadow tables.  t_meta is made by CREATE
** TABLE ... AS SELECT, which, unlike an INSERT, leaves sqlite3_changes() as
** the user's last statement set it (an ordinary CREATE TABLE does too).
** 'id' is a random number naming this table for as long as it exists: a
** connection that holds a table object of the same name made for another
** table (dropped and created again by another connection) tells them
** apart by it.  'stamp' is a random number every commit replaces: two
** copies of the database file that have taken different commits since
** they were one differ in it, even at the same generation.  The digests
** of no chunks are 0. */
int gpudsShadowCreate(GpudsTable *p){
  int64_t iId = shadowRandom(), iStamp = shadowRandom();
  int rc;
  rc = gpudsRunExec(p,
    "CREATE TABLE %Q.'%q_meta' AS SELECT 'format' AS key, %d AS value"
    " UNION ALL SELECT 'generation', 0 UNION ALL SELECT 'rows', 0"
    " UNION ALL SELECT 'id', %lld UNION ALL SELECT 'entries', 0"
    " UNION ALL SELECT 'stamp', %lld UNION ALL SELECT 'digest', 0"
    " UNION ALL SELECT 'layout', 0;"
    "CREATE TABLE %Q.'%q_run'(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB);"
    "CREATE TABLE %Q.'%q_ovfl'(id INTEGER PRIMARY KEY, data BLOB);",
    p->zDb, p->zName, SHADOW_FORMAT, (long long)iId, (long long)iStamp,
    p->zDb, p->zName, p->zDb, p->zName);
  if( rc==SQLITE_OK ){
    p->bLoaded = 1;     /* empty, and so is the store */
    p->iTableId = iId;
    p->iStamp = iStamp;
    p->iGeneration = 0;
    p->iFormat = SHADOW_FORMAT;
    gpudsCopyCreated(p);
  }
  return rc;
}

/* xDestroy: drop the shadow tables. */
int gpudsShadowDestroy(GpudsTable *p){
  gpudsShadowClose(p);
  gpudsCopyDrop(p);
  return gpudsRunExec(p, "DROP TABLE IF EXISTS %Q.'%q_meta';"
                       "DROP TABLE IF EXISTS %Q.'%q_run';"
                       "DROP TABLE IF EXISTS %Q.'%q_ovfl';",
                    p->zDb, p->zName, p->zDb, p->zName, p->zDb, p->zName);
}

/* xRename: rename the shadow tables along with the table (<name>_ovfl
** where it exists: tables of formats 1 and 2 have none). */
int gpudsShadowRename(GpudsTable *p, const char *zNew){
  sqlite3_stmt *pStmt;
  int bOvfl, rc;
  gpudsShadowClose(p);
  rc = gpudsRunPrepare(p, &pStmt,
      "SELECT 1 FROM %Q.sqlite_schema WHERE type='table' AND name='%q_ovfl'",
      p->zDb, p->zName);
  if( rc ) return rc;
  bOvfl = sqlite3_step(pStmt)==SQLITE_ROW;
  rc = sqlite3_finalize(pStmt);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  rc = gpudsRunExec(p, "ALTER TABLE %Q.'%q_meta' RENAME TO '%q_meta';"
                       "ALTER TABLE %Q.'%q_run' RENAME TO '%q_run';",
                    p->zDb, p->zName, zNew, p->zDb, p->zName, zNew);
  if( rc==SQLITE_OK && bOvfl ){
    rc = gpudsRunExec(p, "ALTER TABLE %Q.'%q_ovfl' RENAME TO '%q_ovfl';",
                      p->zDb, p->zName, zNew);
  }
  return rc;
}

static int outToWriter(GpudsTable *p, void *pCtx, int64_t k,
                       const unsigned char *aRec, uint32_t nRec, const GpudsOvfl *pOvfl){
  if( pOvfl ) return gpudsRunWriterAddOvfl(p, (RunWriter*)pCtx, k, pOvfl);  /* moved, not copied */
  return gpudsRunWriterAdd(p, (RunWriter*)pCtx, k, aRec, nRec);
}

/* Merge the newest runs while the newest is at least half the size of the
** one before it (the merged size counted as the sum of the sizes, which
** bounds it), in ONE k-way merge of all of them: merging them pairwise
** rewrote the newest entries once per level of the cascade (a range DELETE
** after many small commits: its deletions copied again at every level).
** The digests of the chunks written are added to *pAdd, those of the
** chunks merged away to *pDel. */
static int compactRuns(GpudsTable *p, GpudsDigest *pAdd, GpudsDigest *pDel){
  int64_t *aRun = 0, *aN = 0, nSum;
  int nRun = 0, iFirst, rc;
  rc = gpudsRunList(p, &aRun, &aN, &nRun);
  if( rc==SQLITE_OK && nRun>=2 ){
    iFirst = nRun-1;
    nSum = aN[nRun-1];
    while( iFirst>0 && nSum*2 >= aN[iFirst-1] ){
      iFirst--;
      nSum += aN[iFirst];
    }
    if( iFirst<nRun-1 ){
      RunWriter w;
      int64_t iNew = aRun[nRun-1] + 1;
      int bOldest = (iFirst==0);
      rc = gpudsRunWriterOpen(p, iNew, &w);
      if( rc==SQLITE_OK ){
        rc = gpudsRunMerge(p, &aRun[iFirst], nRun-iFirst,
                           MERGE_FREE_OVFL | (bOldest ? MERGE_DROP_TOMB : 0),
                           outToWriter, &w, pDel);
      }
      if( rc==SQLITE_OK ) rc = gpudsRunWriterFlush(p, &w);
      pAdd->uDigest += w.dig.uDigest;
      pAdd->uLayout += w.dig.uLayout;
      pAdd->nEntries += w.dig.nEntries;
      if( rc==SQLITE_OK ){
        rc = gpudsRunExec(p, "DELETE FROM %Q.'%q_run' WHERE id BETWEEN %lld AND %lld",
                        p->zDb, p->zName, (long long)(aRun[iFirst]<<RUN_SHIFT),
                        (long long)((aRun[nRun-1]<<RUN_SHIFT) | ((1<<RUN_SHIFT)-1)));
      }
      gpudsRunWriterClose(&w);
    }
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
    rc = gpudsRunWriterAddRow(p, (RunWriter*)pCtx, aK[i], gpudsRowOf(aV[i]));
  }
  return rc;
}

/* The entries of a store collected for sorting (a hash store visits its
** entries in slot order; a run must be written in key order). */
typedef struct RewriteAll { int64_t *aK; uint64_t *aV; size_t n, nAlloc; } RewriteAll;
static int collectCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                     const uint64_t *aV, size_t n){
  RewriteAll *r = (RewriteAll*)pCtx;
  if( r->n+n>r->nAlloc ){
    size_t nNew = (r->n+n)*2;
    int64_t *aKNew = realloc(r->aK, nNew*sizeof(int64_t));
    uint64_t *aVNew;
    if( aKNew==0 ) return SQLITE_NOMEM;
    r->aK = aKNew;
    aVNew = realloc(r->aV, nNew*sizeof(uint64_t));
    if( aVNew==0 ) return SQLITE_NOMEM;
    r->aV = aVNew;
    r->nAlloc = nNew;
  }
  memcpy(&r->aK[r->n], aK, n*sizeof(int64_t));
  memcpy(&r->aV[r->n], aV, n*sizeof(uint64_t));
  r->n += n;
  return SQLITE_OK;
}
static int shadowRewrite(GpudsTable *p, GpudsDigest *pAdd){
  RunWriter w;
  RewriteAll all = {0, 0, 0, 0};
  int rc = gpudsRunExec(p, "DELETE FROM %Q.'%q_run'", p->zDb, p->zName);
  if( rc==SQLITE_OK ) rc = gpudsOvflDeleteAll(p);
  if( rc ) return rc;
  rc = gpudsRunWriterOpen(p, 1, &w);
  if( rc==SQLITE_OK && gpudsStoreOrdered(p) ){
    rc = gpudsStoreEach(p, rewriteCb, &w);      /* already in key order */
  }else if( rc==SQLITE_OK ){
    rc = gpudsStoreEach(p, collectCb, &all);
    if( rc==SQLITE_OK ) rc = gpudsSortKeys(all.aK, all.aV, all.n);
    if( rc==SQLITE_OK ) rc = rewriteCb(p, &w, all.aK, all.aV, all.n);
    free(all.aK);
    free(all.aV);
  }
  if( rc==SQLITE_OK ) rc = gpudsRunWriterFlush(p, &w);
  *pAdd = w.dig;
  gpudsRunWriterClose(&w);
  return rc;
}

/* How many keys ahead shadowAppendRun prefetches a batch's records. */
#define SYNC_AHEAD 16

/* Write the batches aBatch[0..nBatch-1] (oldest first; those the write
** buffer has not persisted yet) as ONE new run: a merge of the batches,
** the newest value of each key winning, deletions kept. */
static int shadowAppendRun(GpudsTable *p, int64_t iRun, const GpudsBatch *aBatch,
                           int64_t nBatch, GpudsDigest *pAdd){
  size_t *aPos = sqlite3_malloc64(nBatch*sizeof(size_t));
  RunWriter w;
  int rc = SQLITE_OK;
  int64_t j;
  if( aPos==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  memset(aPos, 0, nBatch*sizeof(size_t));
  rc = gpudsRunWriterOpen(p, iRun, &w);
  while( rc==SQLITE_OK ){
    int64_t jBest = -1, k = 0;
    const GpudsRow *pRow;
    for(j=0; j<nBatch; j++){             /* smallest key; newest batch on ties */
      if( aPos[j]>=aBatch[j].n ) continue;
      if( jBest<0 || aBatch[j].aKey[aPos[j]]<=k ){ k = aBatch[j].aKey[aPos[j]]; jBest = j; }
    }
    if( jBest<0 ) break;
    {
      /* A batch's records lie wherever xUpdate put them (a hash table
      ** without its ordered mirror never repacks them into key order, and
      ** small flushes are not repacked): load the one SYNC_AHEAD keys
      ** on into the caches now, so that this walk is not a miss a row. */
      size_t a = aPos[jBest] + SYNC_AHEAD;
      if( a<aBatch[jBest].n && aBatch[jBest].aNew[a] ){
        gpudsRowPrefetchOne(aBatch[jBest].aNew[a]);
      }
    }
    pRow = gpudsRowOf(aBatch[jBest].aNew[aPos[jBest]]);
    rc = gpudsRunWriterAddRow(p, &w, k, pRow);
    for(j=0; j<nBatch; j++){
      if( aPos[j]<aBatch[j].n && aBatch[j].aKey[aPos[j]]==k ) aPos[j]++;
    }
  }
  if( rc==SQLITE_OK ) rc = gpudsRunWriterFlush(p, &w);
  *pAdd = w.dig;
  gpudsRunWriterClose(&w);
  sqlite3_free(aPos);
  return rc;
}

/* Write t_meta for the commit in progress: the next generation, the rows,
** the entries, a new stamp and, from format 5, the digests: what t_meta
** holds (or nothing after a full rewrite, bAll) plus the chunks written
** (add) less those merged away (del).  What t_meta holds is what this
** connection last read of it (every refresh that finds the database
** changed reads it, and a write transaction begins with one) or, after a
** commit of its own, wrote; or, if an xSync of this transaction already
** wrote it (a COMMIT that failed with SQLITE_BUSY, retried), that.  Format
** 5 has every key once (t_meta was validated when read): one UPDATE, kept
** prepared (a commit pays no parse for it); older tables may lack
** 'entries' and 'stamp'. */
static int shadowMetaWrite(GpudsTable *p, int bAll, const GpudsDigest *pAdd,
                           const GpudsDigest *pDel){
  int64_t iStamp = shadowRandom(), iGen = p->iGeneration + 1, nEnt = 0;
  int64_t nRows = gpudsStoreCount(p);
  uint64_t uDigest = 0, uLayout = 0;
  int rc;
  if( !bAll ){
    int bPend = p->iGenPending!=0;
    uDigest = bPend ? p->uDigestPending : p->uMetaDigest;
    uLayout = bPend ? p->uLayoutPending : p->uMetaLayout;
    nEnt = bPend ? p->nEntriesPending : p->nMetaEntries;
  }
  uDigest += pAdd->uDigest - pDel->uDigest;
  uLayout += pAdd->uLayout - pDel->uLayout;
  nEnt += pAdd->nEntries - pDel->nEntries;
  if( p->iFormat>=SHADOW_FORMAT_DIGEST ){
    sqlite3_stmt *pUp = p->pMetaWrite;
    if( pUp==0 ){
      rc = gpudsRunPrepare(p, &pUp, "UPDATE %Q.'%q_meta' SET value=CASE key"
          " WHEN 'generation' THEN ?1 WHEN 'rows' THEN ?2 WHEN 'entries' THEN ?3"
          " WHEN 'stamp' THEN ?4 WHEN 'digest' THEN ?5 ELSE ?6 END"
          " WHERE key IN ('generation', 'rows', 'entries', 'stamp', 'digest', 'layout')",
          p->zDb, p->zName);
      if( rc ) return rc;
      p->pMetaWrite = pUp;
    }
    sqlite3_bind_int64(pUp, 1, iGen);
    sqlite3_bind_int64(pUp, 2, nRows);
    sqlite3_bind_int64(pUp, 3, nEnt);
    sqlite3_bind_int64(pUp, 4, iStamp);
    sqlite3_bind_int64(pUp, 5, (int64_t)uDigest);
    sqlite3_bind_int64(pUp, 6, (int64_t)uLayout);
    sqlite3_step(pUp);
    rc = sqlite3_reset(pUp);
    if( rc ) gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  }else{
    rc = gpudsRunExec(p, "UPDATE %Q.'%q_meta' SET value=%lld WHERE key='generation';"
                         "UPDATE %Q.'%q_meta' SET value=%lld WHERE key='rows';"
                         "DELETE FROM %Q.'%q_meta' WHERE key IN ('entries', 'stamp');"
                         "INSERT INTO %Q.'%q_meta' SELECT 'entries', coalesce(sum(n), 0)"
                         " FROM %Q.'%q_run' UNION ALL SELECT 'stamp', %lld;",
                      p->zDb, p->zName, (long long)iGen, p->zDb, p->zName, (long long)nRows,
                      p->zDb, p->zName, p->zDb, p->zName, p->zDb, p->zName, (long long)iStamp);
  }
  if( rc==SQLITE_OK ){
    p->iGenPending = iGen;
    p->iStampPending = iStamp;
    p->uDigestPending = uDigest;
    p->uLayoutPending = uLayout;
    p->nEntriesPending = nEnt;
    /* readers whose snapshot names this commit read the batches (copy.c) */
    gpudsCopyPending(p, iGen, iStamp);
  }
  return rc;
}

/* Let go of the statements the table keeps (it goes, or is renamed or
** dropped: they name its shadow tables). */
void gpudsShadowClose(GpudsTable *p){
  sqlite3_finalize(p->pMetaWrite);
  p->pMetaWrite = 0;
}

/* xSync, after the write buffer was flushed: bring the shadow tables to
** the transaction's state and set the generation.  What to write is the
** write buffer's to say: the batches it has not persisted yet (one new
** run), or, after a ROLLBACK TO undid persisted ones, the whole store.
** Safe to call again if COMMIT failed (SQLITE_BUSY) and is retried.
** Errors make SQLite roll back. */
int gpudsShadowSync(GpudsTable *p){
  int64_t *aRun = 0, *aN = 0, iNext = 1, nBatch = 0;
  GpudsBatch *aBatch = 0;
  GpudsDigest add = {0, 0, 0}, del = {0, 0, 0};
  int nRun = 0, rc = SQLITE_OK;
  int bAll = gpudsWbufSyncLost(p);
  if( !bAll ){
    rc = gpudsWbufBatches(p, 1, &aBatch, &nBatch);
    /* Nothing new to write?  Then touch nothing: the shadow tables may even
    ** be gone (CREATE VIRTUAL TABLE undone by ROLLBACK TO). */
    if( rc || nBatch==0 ) return rc;
  }
  if( bAll ){
    rc = shadowRewrite(p, &add);
  }else{
    rc = gpudsRunList(p, &aRun, &aN, &nRun);
    if( rc==SQLITE_OK && nRun ) iNext = aRun[nRun-1] + 1;
    sqlite3_free(aRun); sqlite3_free(aN);
    if( rc==SQLITE_OK ) rc = shadowAppendRun(p, iNext, aBatch, nBatch, &add);
    if( rc==SQLITE_OK ) rc = compactRuns(p, &add, &del);
  }
  sqlite3_free(aBatch);
  if( rc==SQLITE_OK ) rc = shadowMetaWrite(p, bAll, &add, &del);
  if( rc==SQLITE_OK ) gpudsWbufSynced(p);
  return rc;
}

/* Remember what t_meta says (m, just read). */
static void shadowMetaNote(GpudsTable *p, const GpudsMeta *m){
  p->nMetaRows = m->nRows;
  p->nMetaEntries = m->nEntries;
  p->uMetaDigest = m->uDigest;
  p->uMetaLayout = m->uLayout;
}

/* How a load of table p (t_meta says m) may be left to a background build
** (bgload.c) while key lookups read the runs (diskread.c): 0, it may not
** (GPUDS_LAZY_LOAD=off, an empty table, or a format before 4, whose keys
** the disk reads cannot search); GPUDS_BUILD_SNAPSHOT, the build reads in
** a read transaction of its own (a WAL database, where that blocks no
** writer, by default only for a table of GPUDS_LAZY_MIN_ENTRIES entries or
** more; in rollback-journal mode only a format-4 table under
** GPUDS_LAZY_LOAD=always or hold, since the build's read lock would make
** every writer, this connection's included, wait or fail with SQLITE_BUSY
** until it ends); GPUDS_BUILD_UNLOCKED, the build reads the file without
** any lock and is installed only if the digests of what it read are its
** snapshot's (format 5 in rollback-journal mode: no writer ever waits for
** it). */
static int shadowLazy(GpudsTable *p, const GpudsMeta *m){
  int eLazy = gpudsConfig()->eLazyLoad;
  int64_t nEnt = m->nEntries>=0 ? m->nEntries : m->nRows;
  if( eLazy==GPUDS_LAZY_OFF || p->iFormat<SHADOW_FORMAT_ENC || nEnt<=0 ) return 0;
  if( eLazy==GPUDS_LAZY_AUTO && nEnt<GPUDS_LAZY_MIN_ENTRIES ) return 0;
  if( gpudsDbIsWal(p->db, p->zDb) ) return GPUDS_BUILD_SNAPSHOT;
  if( p->iFormat>=SHADOW_FORMAT_DIGEST ) return GPUDS_BUILD_UNLOCKED;
  return eLazy==GPUDS_LAZY_AUTO ? 0 : GPUDS_BUILD_SNAPSHOT;
}

/* The chunks of t_run are not those whose digests t_meta holds. */
static int shadowDigestError(GpudsTable *p){
  return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run is damaged: its chunks do not "
                        "match the digests in %s_meta", p->zName, p->zName);
}

/* The store holds the rows t_meta (m) says at the table's snapshot, or
** the shadow tables disagree with each other (a deleted or changed run, or
** a changed count): SQLITE_CORRUPT_VTAB, and the table is loaded again on
** the next try. */
static int shadowRowsCheck(GpudsTable *p, const GpudsMeta *m){
  int64_t nHeld = gpudsStoreRows(p);
  if( nHeld==m->nRows ) return SQLITE_OK;
  p->bLoaded = 0;
  gpudsCopyDrop(p);               /* no table attaches to it again */
  return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_meta is damaged: it says %lld rows, "
                        "%s_run holds %lld", p->zName, (long long)m->nRows,
                        p->zName, (long long)nHeld);
}

/* Bring the table to what t_meta (m, this connection's snapshot) says:
** install a finished background build of that commit; or attach to a copy
** of the process that holds it (copy.c: the table's own at another
** snapshot, or another connection's; unless bNoAttach); or start a build
** (bLazy, where shadowLazy allows: the table is then pending); or load
** now (gpudsShadowLoad).  A build that failed is dropped and the load done
** here, which reports the damage as it always has.  After a load, the
** entries, the digests (format 5) and the rows must be what t_meta says;
** *pbFresh then says that the table's copy is new (the caller publishes
** it once the rows are checked too). */
static int shadowLoad(GpudsTable *p, const GpudsMeta *m, int bLazy, int bNoAttach,
                      int *pbFresh){
  int rc = SQLITE_OK, bInstalled = 0, eHow;
  *pbFresh = 0;
  if( p->pBuild ){
    int rcBuild = gpudsBuildFinish(p, p->pBuild, m, &bInstalled);
    p->pBuild = 0;
    gpudsDiskReset(p);
    if( rcBuild ) bLazy = 0;
  }
  if( !bInstalled ){
    int bAttached = 0;
    if( !bNoAttach ){
      rc = gpudsCopyAttach(p, m, 0, &bAttached);
      if( rc==SQLITE_OK && !bAttached ){
        /* Another connection's copy was checked against the shadow tables
        ** when it loaded them; that they still hold as many entries as
        ** t_meta says is checked here (a run deleted by no commit), as a
        ** load would. */
        int64_t nEnt = -1;
        if( m->nEntries>=0 ) rc = gpudsRunEntries(p, &nEnt);
        if( rc==SQLITE_OK && nEnt!=m->nEntries ){
          return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run is damaged: its chunks "
                                "hold %lld entries, %s_meta says %lld", p->zName,
                                (long long)nEnt, p->zName, (long long)m->nEntries);
        }
        if( rc==SQLITE_OK && m->nEntries>=0 ) rc = gpudsCopyAttach(p, m, 1, &bAttached);
      }
      if( rc ) return rc;
    }
    if( bAttached ){
      /* checked when it was loaded */
      p->bMaxValid = 0;
      p->iGeneration = m->iGeneration;
      p->iTableId = m->iId;
      p->iStamp = m->iStamp;
      p->bLoaded = 1;
      return SQLITE_OK;
    }
    if( bLazy && (eHow = shadowLazy(p, m))!=0
     && gpudsBuildStart(p, eHow, &p->pBuild)==SQLITE_OK ){
      p->bLoaded = 0;             /* pending: its copy is not the table's */
      return SQLITE_OK;
    }
    rc = gpudsShadowLoad(p, m);
  }
  /* A big load (here or by a build's thread) freed its temporaries, and
  ** the rows it replaced: give that memory back to the system rather than
  ** keep it resident. */
  if( p->nLoadEntries>=SHADOW_TRIM_ENTRIES || m->nEntries>=SHADOW_TRIM_ENTRIES ) gpudsMemTrim();
  /* A new table of this name and schema (dropped and created again by
  ** another connection) is loaded afresh like a new generation. */
  if( rc==SQLITE_OK ){
    p->iTableId = m->iId;
    p->iStamp = m->iStamp;
    *pbFresh = 1;
  }
  if( rc==SQLITE_OK && m->nEntries>=0 && p->nLoadEntries!=m->nEntries ){
    /* a chunk or run deleted, repeated or its count changed */
    rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run is damaged: its chunks hold "
                        "%lld entries, %s_meta says %lld", p->zName,
                        (long long)p->nLoadEntries, p->zName, (long long)m->nEntries);
  }
  if( rc==SQLITE_OK && m->iFormat>=SHADOW_FORMAT_DIGEST
   && (p->uLoadDigest!=m->uDigest || p->uLoadLayout!=m->uLayout) ){
    /* a chunk moved to another id, its first key or count changed, or the
    ** digests themselves */
    rc = shadowDigestError(p);
  }
  if( rc && *pbFresh ){
    /* what it loaded is no commit's: no table attaches to it (this one
    ** loads again, and reports the damage again) */
    p->bLoaded = 0;
    gpudsCopyDrop(p);
  }
  return rc;
}

/* After shadowLoad (*pbFresh) and its rows' check: other connections may
** share a copy the table loaded. */
static int shadowLoaded(GpudsTable *p, const GpudsMeta *m, int bFresh){
  int rc = p->bLoaded ? shadowRowsCheck(p, m) : SQLITE_OK;
  if( rc==SQLITE_OK && bFresh && p->bLoaded ) gpudsCopyPublish(p);
  return rc;
}

/* Make sure the structure holds what the database holds: load it on first
** use, and reload it when another connection has committed to the table.
** Never while this table has a transaction or a cursor open.  The load may
** be left to a background build (shadowLoad): the table is then pending
** (gpudsShadowPending) until a later call finds the build finished or a
** statement needs the store (gpudsShadowReady). */
int gpudsShadowRefresh(GpudsTable *p){
  int rc = SQLITE_OK, bDone, bFresh = 0, bFind = 0;
  GpudsMeta meta;
  unsigned int iVersion = 0;
  sqlite3_vfs *pVfs = 0;
  /* NULL names "main" and spares SQLite a search of the schema names (once
  ** per statement) */
  const char *zDb = strcmp(p->zDb, "main")==0 ? 0 : p->zDb;
  if( p->nCursor>0 || !gpudsWbufEmpty(p) ) return SQLITE_OK;
  /* a statement begins: the table's pin holds; if it was let go while the
  ** table was idle (copy.c), its snapshot is found again */
  if( gpudsSnapActive(p) ){
    p->iDataVersion = 0;
    bFind = 1;
  }
  if( sqlite3_file_control(p->db, zDb, SQLITE_FCNTL_DATA_VERSION, &iVersion)!=SQLITE_OK ){
    iVersion = 0;
  }
  /* sqlite3_deserialize() replaces a database with a new in-memory one
  ** (the memdb VFS) whose data version starts afresh, and SQLite runs the
  ** statements prepared before it with this table's handle when the
  ** schema cookie is the same (memdb.c reopens the database without
  ** expiring them): the data version cannot tell, so t_meta is read for
  ** every statement there. */
  if( sqlite3_file_control(p->db, zDb, SQLITE_FCNTL_VFS_POINTER, &pVfs)==SQLITE_OK
   && pVfs && pVfs->zName && strcmp(pVfs->zName, "memdb")==0 ){
    iVersion = 0;
  }
  bDone = p->pBuild && gpudsBuildDone(p->pBuild);
  if( (p->bLoaded || p->pBuild) && !bDone && iVersion==p->iDataVersion && iVersion!=0 ){
    /* the same snapshot; rows read before it the table no longer holds */
    if( p->bRepin ) gpudsCopyRepin(p);
    return SQLITE_OK;
  }
  rc = gpudsMetaRead(p, &meta);
  if( rc ) return rc;
  shadowMetaNote(p, &meta);
  if( p->pBuild && (iVersion!=p->iDataVersion || iVersion==0) ){
    gpudsDiskReset(p);          /* the runs may have changed */
  }
  if( p->pBuild && !bDone ){
    p->iDataVersion = iVersion;   /* disk reads answer meanwhile */
    return SQLITE_OK;
  }
  /* The generation, id and stamp name the commit the store holds: another
  ** commit (by another connection, or in another copy of the file that
  ** replaced this one: ATTACH, the backup API, sqlite3_deserialize) is
  ** loaded afresh. */
  if( p->pBuild || !p->bLoaded || meta.iGeneration!=p->iGeneration || meta.iId!=p->iTableId
   || meta.iStamp!=p->iStamp || bFind ){
    rc = shadowLoad(p, &meta, 1, 0, &bFresh);
  }else if( p->bRepin ){
    gpudsCopyRepin(p);
  }
  if( rc==SQLITE_OK ) rc = shadowLoaded(p, &meta, bFresh);
  if( rc==SQLITE_OK ) p->iDataVersion = iVersion;
  return rc;
}

/* True while the table's store is being built in the background: only key
** lookups (diskread.c) may be answered before gpudsShadowReady. */
int gpudsShadowPending(const GpudsTable *p){
  return p->pBuild!=0;
}

/* The rows of the table as of the last refresh: the store's, or t_meta's
** while pending (for plan costs). */
int64_t gpudsShadowRows(GpudsTable *p){
  return p->pBuild ? p->nMetaRows : gpudsStoreRows(p);
}

/* The store must hold the table now (a scan, a write, a check): wait for
** a pending build and install it, or load here if the table moved on
** since it began or it failed.  Call after gpudsShadowRefresh in the same
** statement. */
int gpudsShadowReady(GpudsTable *p){
  GpudsMeta meta;
  int rc, bFresh = 0;
  if( p->pBuild==0 ) return SQLITE_OK;
  rc = gpudsMetaRead(p, &meta);
  if( rc ) return rc;
  shadowMetaNote(p, &meta);
  rc = shadowLoad(p, &meta, 0, 0, &bFresh);
  if( rc==SQLITE_OK ) rc = shadowLoaded(p, &meta, bFresh);
  return rc;
}

/* The table's connection begins to write it (xBegin, after
** gpudsShadowRefresh and gpudsShadowReady: it holds the file's write lock
** and its snapshot is the newest commit).  Its copy must hold that commit
** as its newest, with no other writer's batches (copy.c); else the table
** loads a copy of its own. */
int gpudsShadowWrite(GpudsTable *p){
  GpudsMeta meta;
  int rc = gpudsCopyWriteBegin(p), bFresh = 0;
  if( rc!=1 ) return rc;
  rc = gpudsMetaRead(p, &meta);
  if( rc ) return rc;
  shadowMetaNote(p, &meta);
  p->bLoaded = 0;
  rc = shadowLoad(p, &meta, 0, 1, &bFresh);
  if( rc==SQLITE_OK ) rc = shadowLoaded(p, &meta, bFresh);
  if( rc==SQLITE_OK ) rc = gpudsCopyWriteBegin(p);
  if( rc==1 ){
    rc = gpudsVtabError(p, SQLITE_INTERNAL, "%s: its new copy does not hold the "
                        "newest commit", p->zName);
  }
  return rc;
}

/* The transaction's shadow writes are committed: adopt the generation,
** the stamp and the digests. */
void gpudsShadowCommitted(GpudsTable *p){
  if( p->iGenPending ){
    p->iGeneration = p->iGenPending;
    p->iStamp = p->iStampPending;
    p->uMetaDigest = p->uDigestPending;
    p->uMetaLayout = p->uLayoutPending;
    if( p->iFormat>=SHADOW_FORMAT_DIGEST ) p->nMetaEntries = p->nEntriesPending;
    p->iGenPending = 0;
  }
  /* the commit is the copy's newest (out of memory it cannot tell where:
  ** the next refresh loads the table) */
  if( gpudsCopyCommitted(p) ) p->bLoaded = 0;
}

/* The transaction (bFull) or a savepoint rolled back: its shadow writes
** are gone too.  So may be a DROP and CREATE of this name, which PRAGMA
** data_version does not show (it counts other connections' commits): the
** next refresh reads t_meta.  bReload: the store cannot be trusted (an
** undo could not complete): the next refresh loads what the database
** holds. */
void gpudsShadowRolledBack(GpudsTable *p, int bFull, int bReload){
  p->iDataVersion = 0;
  if( bFull ) p->iGenPending = 0;
  if( bReload ) p->bLoaded = 0;
  if( bFull || bReload ) gpudsCopyRolledBack(p, bReload);
}

/* ------------------------------------------------------------ gpuds_check */

typedef struct CheckCtx {
  int64_t n;
  int64_t nBad;
  char *zFirst;
  int64_t *aSkip;         /* sorted keys the open transaction flushed */
  int64_t nSkip;
} CheckCtx;

static int keyCmp(const void *a, const void *b){
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return x<y ? -1 : x>y;
}

/* The keys of the batches this table's open transaction applied to the
** store (not yet committed: the shadow tables still hold their committed
** rows), sorted, into c->aSkip. */
static int checkSkipKeys(GpudsTable *p, CheckCtx *c){
  GpudsBatch *aBatch = 0;
  int64_t i, nBatch = 0, nAll = 0;
  int rc = gpudsWbufBatches(p, 0, &aBatch, &nBatch);
  for(i=0; i<nBatch; i++) nAll += (int64_t)aBatch[i].n;
  if( rc==SQLITE_OK && nAll>0 ){
    c->aSkip = malloc((size_t)nAll*sizeof(int64_t));
    if( c->aSkip==0 ) rc = SQLITE_NOMEM;
  }
  for(i=0; rc==SQLITE_OK && i<nBatch; i++){
    memcpy(&c->aSkip[c->nSkip], aBatch[i].aKey, aBatch[i].n*sizeof(int64_t));
    c->nSkip += (int64_t)aBatch[i].n;
  }
  sqlite3_free(aBatch);
  if( rc==SQLITE_OK ) rc = gpudsSortKeys(c->aSkip, 0, (size_t)c->nSkip);
  return rc;
}

/* gpudsRunMerge() callback for gpuds_check(): compare one shadow row with the
** structure. */
static int outToCheck(GpudsTable *p, void *pCtx, int64_t k,
                      const unsigned char *aRec, uint32_t nRec, const GpudsOvfl *pOvfl){
  CheckCtx *c = (CheckCtx*)pCtx;
  uint8_t f = 0;
  uint64_t v = 0;
  unsigned char *aSpill = 0;
  int rc = SQLITE_OK;
  if( c->nSkip && bsearch(&k, c->aSkip, (size_t)c->nSkip, sizeof(int64_t), keyCmp) ){
    return SQLITE_OK;             /* changed by the open transaction */
  }
  if( pOvfl ){
    rc = gpudsOvflRead(p, 0, pOvfl, p->nCol-1, &aSpill);
  }else if( aRec ){
    rc = gpudsRunRecord(p, aRec, nRec, &aSpill);   /* the row record it encodes */
  }
  if( rc ) return rc;
  if( aSpill ){
    aRec = aSpill;
    nRec = (uint32_t)gpudsRowBytes((const GpudsRow*)aSpill);
  }
  rc = gpudsStoreLookup(p, 1, &k, &f, &v);
  if( rc ){ free(aSpill); return rc; }
  c->n++;
  if( !f || gpudsRowBytes(gpudsRowOf(v))!=nRec
   || memcmp(gpudsRowOf(v), aRec, nRec)!=0 ){
    if( c->nBad++==0 ){
      c->zFirst = sqlite3_mprintf("key %lld: %s", (long long)k,
                                  f ? "row differs from the shadow table" : "missing from the structure");
    }
  }
  free(aSpill);
  return SQLITE_OK;
}

/* Verify the structure against the shadow tables and its own invariants,
** on one snapshot: the one the calling statement reads if it has begun
** one, else one taken here (a statement that names no table, such as
** SELECT gpuds_check('t'), has none: the store is first brought to it, as
** a read would be, and every read of the check sees it).  Returns
** SQLITE_OK with *pzResult "ok" or a description of the first problem
** (sqlite3_malloc'd); damage found while reading the shadow tables (a bad
** chunk, chunks that do not match t_meta's entries or digests) is
** SQLITE_CORRUPT_VTAB. */
int gpudsShadowCheck(GpudsTable *p, char **pzResult){
  int64_t *aRun = 0, *aN = 0, nStore, nEnt = 0;
  int nRun = 0, rc, i;
  sqlite3_stmt *pPin = 0;
  GpudsDigest seen = {0, 0, 0};
  GpudsMeta meta;
  CheckCtx c;
  memset(&c, 0, sizeof(c));
  *pzResult = 0;
  rc = gpudsRunPrepare(p, &pPin, "SELECT 1 FROM %Q.'%q_meta'", p->zDb, p->zName);
  if( rc==SQLITE_OK ){
    rc = sqlite3_step(pPin);                  /* its read transaction: held */
    rc = rc==SQLITE_ROW || rc==SQLITE_DONE ? SQLITE_OK
       : gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  }
  if( rc==SQLITE_OK ) rc = gpudsShadowRefresh(p);
  if( rc==SQLITE_OK ) rc = gpudsShadowReady(p);
  if( rc==SQLITE_OK ) rc = gpudsMetaRead(p, &meta);
  if( rc ) goto check_out;
  shadowMetaNote(p, &meta);
  if( gpudsStoreCheck(p)!=SQLITE_OK ){
    *pzResult = sqlite3_mprintf("%s: %s", p->zName, p->base.zErrMsg ? p->base.zErrMsg : "check failed");
    goto check_out;
  }
  rc = checkSkipKeys(p, &c);
  if( rc==SQLITE_OK ) rc = gpudsRunList(p, &aRun, &aN, &nRun);
  if( rc==SQLITE_OK ) rc = gpudsRunMerge(p, aRun, nRun, MERGE_DROP_TOMB, outToCheck, &c, &seen);
  for(i=0; i<nRun; i++) nEnt += aN[i];
  sqlite3_free(aRun); sqlite3_free(aN);
  free(c.aSkip);
  /* t_meta as this transaction sees it: after its own commits' xSync the
  ** shadow tables are the transaction's too */
  if( rc==SQLITE_OK && meta.nEntries>=0 && nEnt!=meta.nEntries ){
    rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run is damaged: its chunks hold "
                        "%lld entries, %s_meta says %lld", p->zName,
                        (long long)nEnt, p->zName, (long long)meta.nEntries);
  }
  if( rc==SQLITE_OK && meta.iFormat>=SHADOW_FORMAT_DIGEST
   && (seen.uDigest!=meta.uDigest || seen.uLayout!=meta.uLayout) ){
    rc = shadowDigestError(p);
  }
  if( rc ) goto check_out;
  nStore = gpudsStoreRows(p);
  if( c.nBad ){
    *pzResult = sqlite3_mprintf("%s: %lld of %lld shadow rows disagree; first: %s",
                                p->zName, (long long)c.nBad, (long long)c.n, c.zFirst);
  }else if( nStore!=c.n && gpudsWbufEmpty(p) ){
    *pzResult = sqlite3_mprintf("%s: the structure holds %lld keys, the shadow tables %lld",
                                p->zName, (long long)nStore, (long long)c.n);
  }else{
    *pzResult = sqlite3_mprintf("ok");
  }
  if( *pzResult==0 ) rc = SQLITE_NOMEM;
check_out:
  sqlite3_free(c.zFirst);
  sqlite3_finalize(pPin);
  return rc;
}
