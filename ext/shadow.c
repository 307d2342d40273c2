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
#include "gpuds_mix.h"
#include <string.h>
#include <stdlib.h>
#include <stdarg.h>
#include <pthread.h>
#include <unistd.h>

#define SHADOW_FORMAT  2     /* written by this build: chunks carry a checksum */
#define SHADOW_FORMAT_MIN 1  /* oldest read and written: format 1, no checksums */
#define SHADOW_SUM     8     /* bytes of a format-2 chunk's checksum */
#define SHADOW_CHUNK   65536
#define SHADOW_TOMB    0xffffffffu
#define RUN_SHIFT      20

/* The checksum a format-2 chunk ends its vals with: a 64-bit hash of the
** keys blob and of the vals entries before it.  It finds damage that leaves
** every length and key order valid (a flipped byte inside a value); it is
** no defence against deliberate forgery. */
static uint64_t chunkSum(const unsigned char *aK, size_t nK,
                         const unsigned char *aV, size_t nV){
  /* Four lanes, each a chain of (state ^ word) * odd: every step is a
  ** bijection of the state, so a change to any one word always changes the
  ** result; four independent chains keep the multiplier busy (the loader
  ** checks every byte it reads). */
  const unsigned char *aPart[2];
  size_t anPart[2], i;
  uint64_t h[4] = { 0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL,
                    0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL };
  const uint64_t P = 0x9e3779b97f4a7c15ULL;
  int j;
  aPart[0] = aK; anPart[0] = nK; aPart[1] = aV; anPart[1] = nV;
  for(j=0; j<2; j++){
    const unsigned char *a = aPart[j];
    size_t n = anPart[j];
    uint64_t w[4];
    for(i=0; i+32<=n; i+=32){
      memcpy(w, a+i, 32);
      h[0] = (h[0] ^ w[0]) * P;  h[1] = (h[1] ^ w[1]) * P;
      h[2] = (h[2] ^ w[2]) * P;  h[3] = (h[3] ^ w[3]) * P;
    }
    for(; i<n; i++) h[i&3] = (h[i&3] ^ a[i]) * P;
    h[0] ^= (uint64_t)n << 1 | (uint64_t)j;      /* the lengths count too */
  }
  return gpudsMix64(gpudsMix64(h[0] ^ gpudsMix64(h[1])) ^ gpudsMix64(h[2] ^ gpudsMix64(h[3])));
}

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

/* Set *pbExists if the shadow tables exist; an error if that cannot be
** told (out of memory), never a wrong "no".  They do not exist when the CREATE VIRTUAL
** TABLE was undone by ROLLBACK TO: SQLite adds a table created inside a
** savepoint to the transaction without telling it of the savepoint, so its
** xRollbackTo is never called, yet xSync is. */
int gpudsShadowExists(GpudsTable *p, int *pbExists){
  sqlite3_stmt *pStmt;
  int rc = shadowPrepare(p, &pStmt,
      "SELECT 1 FROM %Q.sqlite_schema WHERE type='table' AND name='%q_meta'",
      p->zDb, p->zName);
  *pbExists = 0;
  if( rc ) return rc;                 /* not known: never taken for "gone" */
  *pbExists = sqlite3_step(pStmt)==SQLITE_ROW;
  rc = sqlite3_finalize(pStmt);
  if( rc ) gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  return rc;
}

/* xCreate: create the (empty) shadow tables.  t_meta is made by CREATE
** TABLE ... AS SELECT, which, unlike an INSERT, leaves sqlite3_changes() as
** the user's last statement set it (an ordinary CREATE TABLE does too).
** 'id' is a random number naming this table for as long as it exists: a
** connection that holds a table object of the same name made for another
** table (dropped and created again by another connection) tells them
** apart by it. */
int gpudsShadowCreate(GpudsTable *p){
  int64_t iId = 0;
  int rc;
  while( iId==0 ){
    sqlite3_randomness(sizeof(iId), &iId);
    iId &= INT64_MAX;
  }
  rc = shadowExec(p,
    "CREATE TABLE %Q.'%q_meta' AS SELECT 'format' AS key, %d AS value"
    " UNION ALL SELECT 'generation', 0 UNION ALL SELECT 'rows', 0"
    " UNION ALL SELECT 'id', %lld;"
    "CREATE TABLE %Q.'%q_run'(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB);",
    p->zDb, p->zName, SHADOW_FORMAT, (long long)iId, p->zDb, p->zName);
  if( rc==SQLITE_OK ){
    p->bLoaded = 1;     /* empty, and so is the store */
    p->iTableId = iId;
    p->iFormat = SHADOW_FORMAT;
  }
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

/* What t_meta says of the table. */
typedef struct ShadowMeta {
  int64_t iGeneration;    /* commits so far */
  int64_t nRows;          /* rows after the last commit */
  int64_t iId;            /* the table's identity (0: made before 'id' existed) */
  int64_t nEntries;       /* sum of t_run.n, or -1 (made before 'entries') */
} ShadowMeta;

/* Read and validate t_meta: 'format' (this build's), 'generation' and 'rows'
** (integers >= 0) each exactly once, 'id' and 'entries' at most once.  A missing,
** repeated or ill-typed row is SQLITE_CORRUPT_VTAB; a format this build
** does not know is SQLITE_ERROR naming it. */
static int metaRead(GpudsTable *p, ShadowMeta *pMeta){
  static const char *azKey[] = { "format", "generation", "rows", "id", "entries" };
  int64_t aVal[5] = {0, 0, 0, 0, -1};
  int aSeen[5] = {0, 0, 0, 0, 0};
  const char *zBad = 0;
  sqlite3_stmt *pStmt;
  int rc, i;
  rc = shadowPrepare(p, &pStmt, "SELECT key, value FROM %Q.'%q_meta'", p->zDb, p->zName);
  if( rc ) return rc;
  while( sqlite3_step(pStmt)==SQLITE_ROW ){
    const char *zKey = (const char*)sqlite3_column_text(pStmt, 0);
    for(i=0; i<5 && (zKey==0 || strcmp(zKey, azKey[i])!=0); i++){}
    if( i==5 ) continue;                      /* not ours to judge */
    if( aSeen[i]++ ){ zBad = "a key twice"; continue; }
    if( sqlite3_column_type(pStmt, 1)!=SQLITE_INTEGER
     || (aVal[i] = sqlite3_column_int64(pStmt, 1))<0 ){
      zBad = azKey[i];
    }
  }
  rc = sqlite3_finalize(pStmt);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  if( zBad==0 ){
    for(i=0; i<3 && aSeen[i]; i++){}
    if( i<3 ) zBad = azKey[i];
  }
  if( zBad ){
    return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_meta is damaged (%s%s)", p->zName,
                          strcmp(zBad, "a key twice")==0 ? "" : "bad or missing ", zBad);
  }
  if( aVal[0]<SHADOW_FORMAT_MIN || aVal[0]>SHADOW_FORMAT ){
    return gpudsVtabError(p, SQLITE_ERROR, "%s: storage format %lld is not one this "
                          "gpuds reads (formats %d to %d)", p->zName, (long long)aVal[0],
                          SHADOW_FORMAT_MIN, SHADOW_FORMAT);
  }
  p->iFormat = (int)aVal[0];
  pMeta->iGeneration = aVal[1];
  pMeta->nRows = aVal[2];
  pMeta->iId = aVal[3];
  pMeta->nEntries = aVal[4];
  return SQLITE_OK;
}

/* ------------------------------------------------------------ run readers */

/* Streams one run's entries in key order, a chunk at a time, reading the
** chunk's blobs where the statement holds them (valid until its next step).
** Every entry is bounds-checked before use: a damaged chunk is reported as
** SQLITE_CORRUPT_VTAB, never read past its end. */
typedef struct RunReader {
  sqlite3_stmt *pStmt;     /* SELECT n, keys, vals of the run's chunks */
  int64_t iRun;
  int n, i;                /* entries in the current chunk, next one */
  const int64_t *aKey;     /* the chunk's keys */
  int64_t *aKeyBuf;        /* an aligned copy of them, if the blob is not */
  size_t nKeyBuf;          /* bytes of aKeyBuf */
  const unsigned char *aVal;  /* the chunk's vals */
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
    if( p->iFormat>=2 ){
      uint64_t h;
      if( nv<SHADOW_SUM ) return readerCorrupt(p, r, "bad chunk sizes");
      nv -= SHADOW_SUM;
      memcpy(&h, (const unsigned char*)pv + nv, SHADOW_SUM);
      if( n<0 || nk!=n*8 ) return readerCorrupt(p, r, "bad chunk sizes");
      if( h!=chunkSum((const unsigned char*)pk, (size_t)nk, (const unsigned char*)pv, (size_t)nv) ){
        return readerCorrupt(p, r, "checksum mismatch");
      }
    }
    if( n<0 || nk!=n*8 || (int64_t)nv < (int64_t)n*4 ) return readerCorrupt(p, r, "bad chunk sizes");
    r->aKey = (const int64_t*)pk;
    if( ((uintptr_t)pk & 7)!=0 ){           /* SQLite's buffers are aligned */
      if( (size_t)nk > r->nKeyBuf ){
        sqlite3_free(r->aKeyBuf);
        r->nKeyBuf = 0;
        r->aKeyBuf = sqlite3_malloc64((size_t)nk);
        if( r->aKeyBuf==0 ) return SQLITE_NOMEM;
        r->nKeyBuf = (size_t)nk;
      }
      memcpy(r->aKeyBuf, pk, (size_t)nk);
      r->aKey = r->aKeyBuf;
    }
    r->aVal = (const unsigned char*)pv;
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
  sqlite3_free(r->aKeyBuf);
  memset(r, 0, sizeof(*r));
}

/* The run numbers present, oldest first, with their entry counts and, if
** paCap is not NULL, the entries their keys blobs have room for (a load
** sizes its arrays by the smaller: a damaged n cannot make it allocate more
** than the blobs hold).  The rows are summed here, in id order, rather than
** by GROUP BY: SQLite's GROUP BY sorter would copy every keys blob to find
** its length. */
static int listRunsCap(GpudsTable *p, int64_t **paRun, int64_t **paN, int64_t **paCap,
                       int *pnRun){
  sqlite3_stmt *pStmt;
  int64_t *aRun = 0, *aN = 0, *aCap = 0;
  int nRun = 0, nAlloc = 0;
  int rc = shadowPrepare(p, &pStmt,
      paCap ? "SELECT id>>%d, n, length(keys)/8 FROM %Q.'%q_run' ORDER BY id"
            : "SELECT id>>%d, n, 0 FROM %Q.'%q_run' ORDER BY id",
      RUN_SHIFT, p->zDb, p->zName);
  if( rc ) return rc;
  while( sqlite3_step(pStmt)==SQLITE_ROW ){
    int64_t iRun = sqlite3_column_int64(pStmt, 0);
    if( nRun==0 || aRun[nRun-1]!=iRun ){
      if( nRun==nAlloc ){
        int64_t *a, *b, *c;
        nAlloc = nAlloc ? nAlloc*2 : 16;
        a = sqlite3_realloc64(aRun, nAlloc*8);
        if( a ) aRun = a;
        b = sqlite3_realloc64(aN, nAlloc*8);
        if( b ) aN = b;
        c = sqlite3_realloc64(aCap, nAlloc*8);
        if( c ) aCap = c;
        if( !a || !b || !c ){ rc = SQLITE_NOMEM; break; }
      }
      aRun[nRun] = iRun;
      aN[nRun] = aCap[nRun] = 0;
      nRun++;
    }
    aN[nRun-1] += sqlite3_column_int64(pStmt, 1);
    aCap[nRun-1] += sqlite3_column_int64(pStmt, 2);
  }
  {
    int rc2 = sqlite3_finalize(pStmt);
    if( rc==SQLITE_OK && rc2 ) rc = gpudsVtabError(p, rc2, "%s", sqlite3_errmsg(p->db));
  }
  if( rc ){ sqlite3_free(aRun); sqlite3_free(aN); sqlite3_free(aCap); return rc; }
  *paRun = aRun; *paN = aN; *pnRun = nRun;
  if( paCap ) *paCap = aCap; else sqlite3_free(aCap);
  return SQLITE_OK;
}
static int listRuns(GpudsTable *p, int64_t **paRun, int64_t **paN, int *pnRun){
  return listRunsCap(p, paRun, paN, 0, pnRun);
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
  int bSum;               /* format 2: end each chunk with its checksum */
} RunWriter;

static int writerOpen(GpudsTable *p, int64_t iRun, RunWriter *w){
  memset(w, 0, sizeof(*w));
  w->iRun = iRun;
  w->aKey = sqlite3_malloc64(SHADOW_CHUNK*8);
  if( w->aKey==0 ) return SQLITE_NOMEM;
  w->nLimit = sqlite3_limit(p->db, SQLITE_LIMIT_LENGTH, -1);
  if( p->iFormat<SHADOW_FORMAT_MIN ){
    return gpudsVtabError(p, SQLITE_INTERNAL, "%s: storage format not read", p->zName);
  }
  w->bSum = p->iFormat>=2;
  if( w->bSum ) w->nLimit -= SHADOW_SUM;
  return shadowPrepare(p, &w->pIns, "INSERT INTO %Q.'%q_run'(id, n, keys, vals) VALUES(?,?,?,?)",
                       p->zDb, p->zName);
}

/* Write the pending chunk, if any. */
static int writerFlush(GpudsTable *p, RunWriter *w){
  int rc;
  if( w->n==0 ) return SQLITE_OK;
  if( w->iChunk>=(1<<RUN_SHIFT) ) return gpudsVtabError(p, SQLITE_FULL, "run too large");
  if( w->bSum ){
    uint64_t h = chunkSum((const unsigned char*)w->aKey, (size_t)w->n*8, w->aVal, w->nVal);
    memcpy(w->aVal + w->nVal, &h, SHADOW_SUM);   /* writerAdd kept room */
    w->nVal += SHADOW_SUM;
  }
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
  if( nNeed+SHADOW_SUM>w->nValAlloc ){
    size_t nNew = w->nValAlloc ? w->nValAlloc*2 : 65536;
    unsigned char *a;
    while( nNew<nNeed+SHADOW_SUM ) nNew *= 2;
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

/* The entries of a store collected for sorting (a hash store visits its
** entries in slot order; a run must be written in key order). */
typedef struct RewritePair { int64_t k; uint64_t v; } RewritePair;
typedef struct RewriteAll { RewritePair *a; size_t n, nAlloc; } RewriteAll;
static int collectCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                     const uint64_t *aV, size_t n){
  RewriteAll *r = (RewriteAll*)pCtx;
  size_t i;
  if( r->n+n>r->nAlloc ){
    size_t nNew = (r->n+n)*2;
    RewritePair *aNew = sqlite3_realloc64(r->a, nNew*sizeof(RewritePair));
    if( aNew==0 ) return SQLITE_NOMEM;
    r->a = aNew; r->nAlloc = nNew;
  }
  for(i=0; i<n; i++){ r->a[r->n].k = aK[i]; r->a[r->n].v = aV[i]; r->n++; }
  return SQLITE_OK;
}
static int pairCmp(const void *a, const void *b){
  int64_t x = ((const RewritePair*)a)->k, y = ((const RewritePair*)b)->k;
  return x<y ? -1 : x>y;
}
static int shadowRewrite(GpudsTable *p){
  RunWriter w;
  RewriteAll all = {0, 0, 0};
  int rc = shadowExec(p, "DELETE FROM %Q.'%q_run'", p->zDb, p->zName);
  if( rc ) return rc;
  rc = writerOpen(p, 1, &w);
  if( rc==SQLITE_OK && p->eKind==GPUDS_ORDERED ){
    rc = gpudsStoreEach(p, rewriteCb, &w);      /* already in key order */
  }else if( rc==SQLITE_OK ){
    size_t i;
    rc = gpudsStoreEach(p, collectCb, &all);
    if( rc==SQLITE_OK ) qsort(all.a, all.n, sizeof(RewritePair), pairCmp);
    for(i=0; rc==SQLITE_OK && i<all.n; i++){
      rc = rewriteCb(p, &w, &all.a[i].k, &all.a[i].v, 1);
    }
    sqlite3_free(all.a);
  }
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
                       "UPDATE %Q.'%q_meta' SET value=%lld WHERE key='rows';"
                       "DELETE FROM %Q.'%q_meta' WHERE key='entries';"
                       "INSERT INTO %Q.'%q_meta' SELECT 'entries', coalesce(sum(n), 0)"
                       " FROM %Q.'%q_run';",
                    p->zDb, p->zName, (long long)(p->iGeneration+1),
                    p->zDb, p->zName, (long long)p->pOps->xCount(p->pStore),
                    p->zDb, p->zName, p->zDb, p->zName, p->zDb, p->zName);
    if( rc==SQLITE_OK ){
      p->iGenPending = p->iGeneration + 1;
      p->nUndoSynced = p->wb.nUndo;
      p->bShadowDirty = 0;
    }
  }
  return rc;
}

/* ------------------------------------------------------------------ load */

/* Entries a load has read or merged: keys strictly ascending, row handles
** (0: a deletion).  While runs are read, entry positions are handed out
** chunk by chunk (aChunk) and filled by whichever thread places the chunk. */
typedef struct LoadChunk {
  int64_t i0;             /* first entry of the chunk */
  int n;                  /* entries */
  int bDone;              /* aKey/aVal[i0..i0+n-1] hold keys and handles */
} LoadChunk;
typedef struct LoadRows {
  int64_t *aKey;
  uint64_t *aVal;
  int64_t n, nAlloc;
  LoadChunk *aChunk;      /* chunks read so far, or NULL (all entries valid) */
  int nChunk, nChunkAlloc;
} LoadRows;

/* Size r for nAlloc entries. */
static int loadRowsAlloc(LoadRows *r, int64_t nAlloc){
  memset(r, 0, sizeof(*r));
  if( nAlloc<1 ) nAlloc = 1;
  r->aKey = sqlite3_malloc64(nAlloc*8);
  r->aVal = sqlite3_malloc64(nAlloc*8);
  if( r->aKey==0 || r->aVal==0 ) return SQLITE_NOMEM;
  r->nAlloc = nAlloc;
  return SQLITE_OK;
}

/* Free r's arrays and the rows of its valid entries. */
static void loadRowsFree(LoadRows *r){
  int64_t i;
  int c;
  if( r->aChunk ){
    for(c=0; c<r->nChunk; c++){
      if( !r->aChunk[c].bDone ) continue;
      for(i=0; i<r->aChunk[c].n; i++) gpudsRowFreeHandle(r->aVal[r->aChunk[c].i0+i]);
    }
  }else{
    for(i=0; i<r->n; i++) gpudsRowFreeHandle(r->aVal[i]);
  }
  sqlite3_free(r->aKey);
  sqlite3_free(r->aVal);
  sqlite3_free(r->aChunk);
  memset(r, 0, sizeof(*r));
}

/* A span goes into the current arena block if at least this much room is
** left there (else into a new block): at most this much of a block is
** wasted. */
#define LOAD_SPAN_MIN 65536

/* Why loadChunk found a chunk damaged (NULL: a bad row record). */
typedef struct LoadErr {
  int64_t iRun;
  const char *zWhy;
} LoadErr;

/* Place chunk c of r: its n keys are at aKey[i0..], its vals are pv[0..nv-1]
** (sizes checked); row records go into the arena of loader L, a handle or 0
** (deletion) into each aVal[i0..].  Every entry is checked first (key order,
** from the previous chunk's last key on; bounds; the record itself), so the
** rows are then placed with no failure but out of memory, which frees those
** placed: all or nothing.  Where every entry starts at a multiple of 4 bytes
** (all records of fixed-size columns, e.g. (k INTEGER PRIMARY KEY, v
** INTEGER)), the vals are copied into the arena in a few spans and each
** record is used where it lands: one memcpy per span, none per row.  Calls
** no SQLite routine: it runs on worker threads.  *pnTomb counts deletions. */
static int loadChunk(LoadRows *r, GpudsLoader *L, int nCol, int64_t i0, int n,
                     const unsigned char *pv, size_t nv, int64_t *pnTomb,
                     LoadErr *pErr){
  int64_t *aKey = &r->aKey[i0];
  uint64_t *aVal = &r->aVal[i0];
  uint64_t *aOff = aVal;                    /* scratch: offset of each entry */
  size_t off = 0, nSpanMax = gpudsLoaderSpanMax(), nBig = nSpanMax/4;
  int64_t i, nTomb = 0;
  int bSpan = 1;
  uint32_t nRec;
  if( n>0 && i0>0 && aKey[0]<=aKey[-1] ){ pErr->zWhy = "keys out of order"; return SQLITE_CORRUPT_VTAB; }
  for(i=0; i<n; i++){
    if( i>0 && aKey[i]<=aKey[i-1] ){ pErr->zWhy = "keys out of order"; return SQLITE_CORRUPT_VTAB; }
    if( off+4 > nv ){ pErr->zWhy = "entry past the end of vals"; return SQLITE_CORRUPT_VTAB; }
    memcpy(&nRec, pv+off, 4);
    aOff[i] = off;
    if( off & 3 ) bSpan = 0;
    if( nRec==SHADOW_TOMB ){ off += 4; nTomb++; continue; }
    if( (uint64_t)off+4+nRec > nv ){
      pErr->zWhy = "entry length past the end of vals";
      return SQLITE_CORRUPT_VTAB;
    }
    if( !gpudsRowValid(pv+off+4, nRec, nCol) ){ pErr->zWhy = 0; return SQLITE_CORRUPT_VTAB; }
    off += 4 + (size_t)nRec;
  }
  /* Place the rows: aVal[i] (aOff[i] until then) gets entry i's handle.
  ** A span fills the room left in the arena's current block, or a new block
  ** when that room is small. */
  i = 0;
  while( i<n ){
    int64_t j = i, nLive = 0, m;
    size_t s = aOff[i], e = s, nLim = gpudsLoaderRoom(L);
    if( nLim<LOAD_SPAN_MIN || nLim>nSpanMax ) nLim = nSpanMax;
    if( bSpan ){
      for(j=i; j<n; j++){                   /* the longest span from entry i */
        size_t eNext;
        memcpy(&nRec, pv+aOff[j], 4);
        eNext = aOff[j] + 4 + (nRec==SHADOW_TOMB ? 0 : nRec);
        if( (nRec!=SHADOW_TOMB && nRec>nBig) || eNext-s > nLim ) break;
        if( nRec!=SHADOW_TOMB ) nLive++;
        e = eNext;
      }
    }
    if( j==i ){                             /* entry i alone, copied */
      memcpy(&nRec, pv+aOff[i], 4);
      aVal[i] = 0;
      if( nRec!=SHADOW_TOMB ){
        aVal[i] = gpudsLoaderRow(L, pv+s+4, nRec, nCol);
        if( aVal[i]==0 ) goto no_mem;
      }
      i++;
      continue;
    }
    if( nLive>0 ){
      const unsigned char *z = gpudsLoaderSpan(L, pv+s, e-s, nLive);
      if( z==0 ) goto no_mem;
      for(m=i; m<j; m++){
        memcpy(&nRec, pv+aOff[m], 4);
        aVal[m] = nRec==SHADOW_TOMB ? 0 : gpudsLoaderHandle(z + (aOff[m]-s) + 4);
      }
    }else{
      for(m=i; m<j; m++) aVal[m] = 0;
    }
    i = j;
  }
  *pnTomb += nTomb;
  return SQLITE_OK;

no_mem:
  while( i-- > 0 ) gpudsRowFreeHandle(aVal[i]);
  return SQLITE_NOMEM;
}

/* The load pipeline.  The connection's thread reads each chunk (keys
** straight into the run's array, vals into a free buffer of the pipe) and
** hands it to a worker thread, which checks it and places its rows
** (loadChunk); checking and placing cost more than reading, so up to
** LOAD_MAX_WORKERS workers keep up with the reader.  With no worker (a
** small table, one CPU, no thread to be had) the reader places each chunk
** itself. */
#define LOAD_MAX_WORKERS 4
#define LOAD_NBUF        (2*LOAD_MAX_WORKERS)
#define LOADBUF_FREE 0            /* a buffer's states */
#define LOADBUF_FULL 1            /* holds a chunk no worker has taken */
#define LOADBUF_BUSY 2            /* a worker places its chunk */
typedef struct LoadBuf {
  unsigned char *a;               /* the chunk's vals (malloc) */
  size_t nAlloc, nv;
  void *pSpare;                   /* arena blocks for the chunk, a list */
  int nSpare;
  int eState;
  LoadRows *r;                    /* the chunk: aChunk[iChunk] of run iRun of r */
  int iChunk;
  int64_t i0;                     /* copies of aChunk[iChunk].i0 and .n: the */
  int nEnt;                       /* reader may move aChunk while b is placed */
  int64_t iRun;
} LoadBuf;
typedef struct LoadPipe {
  int nCol;                       /* non-key columns */
  int nWorker;
  pthread_t aTid[LOAD_MAX_WORKERS];
  GpudsLoader aL[LOAD_MAX_WORKERS+1];  /* one per worker, the last the reader's */
  LoadBuf aBuf[LOAD_NBUF];
  pthread_mutex_t mu;             /* guards everything below and eState */
  pthread_cond_t cv;
  int bEnd;                       /* no more chunks will come */
  int rc;                         /* first error of a worker */
  LoadErr err;
  int64_t nTomb;                  /* deletions placed */
  int bSum;                       /* format 2: chunks end with a checksum */
} LoadPipe;

/* Place buffer b's chunk with loader L; record the outcome. */
static int loadPipePlace(LoadPipe *pp, LoadBuf *b, GpudsLoader *L, int bLock){
  LoadErr err;
  int64_t nTomb = 0;
  int rc;
  err.iRun = b->iRun; err.zWhy = 0;
  while( b->pSpare ){                       /* the reader's blocks first */
    void *pBlk = b->pSpare;
    b->pSpare = *(void**)pBlk;
    gpudsLoaderGive(L, pBlk);
  }
  b->nSpare = 0;
  if( pp->bSum ){
    /* loadRun made sure the vals hold at least the checksum */
    uint64_t h;
    size_t nv = b->nv - SHADOW_SUM;
    memcpy(&h, b->a + nv, SHADOW_SUM);
    if( h!=chunkSum((const unsigned char*)&b->r->aKey[b->i0], (size_t)b->nEnt*8, b->a, nv) ){
      err.zWhy = "checksum mismatch";
      rc = SQLITE_CORRUPT_VTAB;
    }else{
      rc = loadChunk(b->r, L, pp->nCol, b->i0, b->nEnt, b->a, nv, &nTomb, &err);
    }
  }else{
    rc = loadChunk(b->r, L, pp->nCol, b->i0, b->nEnt, b->a, b->nv, &nTomb, &err);
  }
  while( L->pSpare ){                       /* and back, those not used */
    void *pBlk = L->pSpare;
    L->pSpare = *(void**)pBlk;
    *(void**)pBlk = b->pSpare;
    b->pSpare = pBlk;
    b->nSpare++;
  }
  if( bLock ) pthread_mutex_lock(&pp->mu);
  if( rc==SQLITE_OK ){
    b->r->aChunk[b->iChunk].bDone = 1;    /* under pp->mu: see loadRun */
    pp->nTomb += nTomb;
  }else if( pp->rc==SQLITE_OK ){
    pp->rc = rc;
    pp->err = err;
  }
  b->eState = LOADBUF_FREE;
  if( bLock ){
    pthread_cond_broadcast(&pp->cv);
    pthread_mutex_unlock(&pp->mu);
  }
  return rc;
}

/* Take a chunk no worker has taken yet and place it with loader L; called
** and returning with pp->mu held.  0 if there was none. */
static int loadPipeTake(LoadPipe *pp, GpudsLoader *L){
  LoadBuf *b = 0;
  int i;
  for(i=0; i<LOAD_NBUF && b==0; i++){
    if( pp->aBuf[i].eState==LOADBUF_FULL ) b = &pp->aBuf[i];
  }
  if( b==0 ) return 0;
  b->eState = LOADBUF_BUSY;
  if( pp->rc ){                             /* an error: drop the chunk */
    b->eState = LOADBUF_FREE;
    pthread_cond_broadcast(&pp->cv);
    return 1;
  }
  pthread_mutex_unlock(&pp->mu);
  loadPipePlace(pp, b, L, 1);
  pthread_mutex_lock(&pp->mu);
  return 1;
}

/* A worker: place chunks until the reader is done and none is left. */
typedef struct LoadWorkerArg { LoadPipe *pp; int iWorker; } LoadWorkerArg;
static void *loadWorker(void *pArg){
  LoadPipe *pp = ((LoadWorkerArg*)pArg)->pp;
  GpudsLoader *L = &pp->aL[((LoadWorkerArg*)pArg)->iWorker];
  pthread_mutex_lock(&pp->mu);
  for(;;){
    if( loadPipeTake(pp, L) ) continue;
    if( pp->bEnd ) break;
    pthread_cond_wait(&pp->cv, &pp->mu);
  }
  pthread_mutex_unlock(&pp->mu);
  return 0;
}

/* Tables of fewer rows than this are loaded without worker threads. */
#define LOAD_THREAD_MIN 131072

/* Start the pipe, with workers if nRow rows are worth them. */
static void loadPipeOpen(LoadPipe *pp, int nCol, int bSum, int64_t nRow,
                         LoadWorkerArg *aArg){
  int i, nCpu = 1;
  memset(pp, 0, sizeof(*pp));
  pp->nCol = nCol;
  pp->bSum = bSum;
  for(i=0; i<=LOAD_MAX_WORKERS; i++) gpudsLoaderBegin(&pp->aL[i]);
#ifdef _SC_NPROCESSORS_ONLN
  nCpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
  if( nRow<LOAD_THREAD_MIN || nCpu<2 ) return;
  if( pthread_mutex_init(&pp->mu, 0) ) return;
  if( pthread_cond_init(&pp->cv, 0) ){ pthread_mutex_destroy(&pp->mu); return; }
  for(i=0; i<LOAD_MAX_WORKERS && i<nCpu-1; i++){
    aArg[i].pp = pp;
    aArg[i].iWorker = i;
    if( pthread_create(&pp->aTid[i], 0, loadWorker, &aArg[i]) ) break;
    pp->nWorker++;
  }
  if( pp->nWorker==0 ){
    pthread_cond_destroy(&pp->cv);
    pthread_mutex_destroy(&pp->mu);
  }
}

/* In *pb, a free buffer of at least nv bytes for the next chunk (only the
** reader takes free buffers).  While there is none, the reader places a
** chunk itself, or waits for a worker.  SQLITE_NOMEM, or SQLITE_ERROR if a
** worker failed (loadPipeJoin says why). */
static int loadPipeBuf(LoadPipe *pp, size_t nv, LoadBuf **pb){
  LoadBuf *b = 0;
  int i, rc = SQLITE_OK;
  if( pp->nWorker==0 ){
    b = &pp->aBuf[0];
  }else{
    pthread_mutex_lock(&pp->mu);
    while( b==0 && pp->rc==SQLITE_OK ){
      for(i=0; i<LOAD_NBUF && b==0; i++){
        if( pp->aBuf[i].eState==LOADBUF_FREE ) b = &pp->aBuf[i];
      }
      if( b==0 && !loadPipeTake(pp, &pp->aL[LOAD_MAX_WORKERS]) ){
        pthread_cond_wait(&pp->cv, &pp->mu);
      }
    }
    if( b==0 ) rc = SQLITE_ERROR;
    pthread_mutex_unlock(&pp->mu);
    if( rc ) return rc;
  }
  if( nv+1 > b->nAlloc ){
    size_t nNew = nv+1 > 2*b->nAlloc ? nv+1 : 2*b->nAlloc;
    free(b->a);
    b->nAlloc = 0;
    b->a = (unsigned char*)malloc(nNew);
    if( b->a==0 ) return SQLITE_NOMEM;
    b->nAlloc = nNew;
  }
  /* Arena blocks for the chunk's rows, taken here: memory this thread (the
  ** connection's) freed is reused, where a worker would fault in fresh
  ** pages.  A chunk's rows take at most its vals' bytes and a block's
  ** wasted end (at most LOAD_SPAN_MIN); if they take more, the worker
  ** allocates. */
  while( b->nSpare < (int)(nv/(gpudsLoaderSpanMax() - LOAD_SPAN_MIN)) + 2 ){
    void *pBlk = gpudsArenaBlock();
    if( pBlk==0 ) break;                    /* the worker will try */
    *(void**)pBlk = b->pSpare;
    b->pSpare = pBlk;
    b->nSpare++;
  }
  *pb = b;
  return SQLITE_OK;
}

/* Hand buffer b, filled with the vals of chunk iChunk of r (run iRun), to a
** worker, or place it now if there is none. */
static int loadPipeSubmit(LoadPipe *pp, LoadBuf *b, LoadRows *r, int iChunk,
                          int64_t iRun, size_t nv){
  b->r = r; b->iChunk = iChunk; b->iRun = iRun; b->nv = nv;
  b->i0 = r->aChunk[iChunk].i0; b->nEnt = r->aChunk[iChunk].n;
  if( pp->nWorker==0 ){
    b->eState = LOADBUF_BUSY;
    return loadPipePlace(pp, b, &pp->aL[LOAD_MAX_WORKERS], 0);
  }
  pthread_mutex_lock(&pp->mu);
  b->eState = LOADBUF_FULL;
  pthread_cond_broadcast(&pp->cv);
  pthread_mutex_unlock(&pp->mu);
  return SQLITE_OK;
}

/* Place, with the workers, every chunk handed to them, and end them.
** Returns the first error of a chunk, with the table's message set. */
static int loadPipeJoin(GpudsTable *p, LoadPipe *pp){
  int i;
  if( pp->nWorker ){
    pthread_mutex_lock(&pp->mu);
    pp->bEnd = 1;
    pthread_cond_broadcast(&pp->cv);
    while( loadPipeTake(pp, &pp->aL[LOAD_MAX_WORKERS]) ){}
    pthread_mutex_unlock(&pp->mu);
    for(i=0; i<pp->nWorker; i++) pthread_join(pp->aTid[i], 0);
    pthread_cond_destroy(&pp->cv);
    pthread_mutex_destroy(&pp->mu);
    pp->nWorker = 0;
  }
  for(i=0; i<LOAD_NBUF; i++){
    LoadBuf *b = &pp->aBuf[i];
    while( b->pSpare ){
      void *pBlk = b->pSpare;
      b->pSpare = *(void**)pBlk;
      free(pBlk);
    }
    b->nSpare = 0;
    free(b->a);
    b->a = 0;
  }
  if( pp->rc==SQLITE_CORRUPT_VTAB && pp->err.zWhy==0 ){
    return gpudsVtabError(p, pp->rc, "%s_run: bad row record", p->zName);
  }
  if( pp->rc==SQLITE_CORRUPT_VTAB ){
    return gpudsVtabError(p, pp->rc, "%s_run: run %lld is damaged (%s)",
                          p->zName, (long long)pp->err.iRun, pp->err.zWhy);
  }
  return pp->rc;
}

/* End the pipe's loaders (after its rows are owned or freed). */
static void loadPipeClose(LoadPipe *pp){
  int i;
  for(i=0; i<=LOAD_MAX_WORKERS; i++) gpudsLoaderEnd(&pp->aL[i]);
}

/* Open (or move, if *pp is open) a read-only blob handle on column zCol of
** chunk row iRow of the run table. */
static int loadBlob(GpudsTable *p, sqlite3_blob **pp, const char *zTab,
                    const char *zCol, int64_t iRow){
  int rc = *pp ? sqlite3_blob_reopen(*pp, iRow)
               : sqlite3_blob_open(p->db, p->zDb, zTab, zCol, iRow, 0, pp);
  if( rc ) gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  return rc;
}

/* Read every chunk of run iRun into r through the pipe: the chunk's sizes
** and types are checked from the row (without reading the blobs), then its
** keys are read straight into r and its vals into a buffer of the pipe. */
static int loadRun(GpudsTable *p, LoadPipe *pp, int64_t iRun, LoadRows *r){
  sqlite3_stmt *pStmt;
  sqlite3_blob *pKeys = 0, *pVals = 0;
  char *zTab = sqlite3_mprintf("%s_run", p->zName);
  int rc;
  if( zTab==0 ) return SQLITE_NOMEM;
  rc = shadowPrepare(p, &pStmt,
      "SELECT id, n, typeof(keys)=='blob' AND typeof(vals)=='blob', length(keys), length(vals)"
      " FROM %Q.'%q_run' WHERE id BETWEEN %lld AND %lld ORDER BY id",
      p->zDb, p->zName, (long long)(iRun<<RUN_SHIFT),
      (long long)((iRun<<RUN_SHIFT) | ((1<<RUN_SHIFT)-1)));
  while( rc==SQLITE_OK ){
    int64_t iRow, n, nk, nv;
    LoadBuf *b = 0;
    rc = sqlite3_step(pStmt);
    if( rc==SQLITE_DONE ){ rc = SQLITE_OK; break; }
    if( rc!=SQLITE_ROW ){ rc = gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db)); break; }
    rc = SQLITE_OK;
    iRow = sqlite3_column_int64(pStmt, 0);
    n = sqlite3_column_int64(pStmt, 1);
    nk = sqlite3_column_int64(pStmt, 3);
    nv = sqlite3_column_int64(pStmt, 4);
    if( !sqlite3_column_int(pStmt, 2) ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                          p->zName, (long long)iRun, "keys or vals is not a blob");
      break;
    }
    if( n<0 || n>0x7fffffff || nk!=n*8 || nv<n*4 + (pp->bSum ? SHADOW_SUM : 0) ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                          p->zName, (long long)iRun, "bad chunk sizes");
      break;
    }
    if( n > r->nAlloc - r->n ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                          p->zName, (long long)iRun, "more entries than its chunks count");
      break;
    }
    if( n==0 ) continue;
    if( r->nChunk==r->nChunkAlloc ){
      /* Workers set bDone in aChunk holding pp->mu: move it only under it. */
      int nNew = r->nChunkAlloc ? 2*r->nChunkAlloc : 64;
      LoadChunk *a;
      if( pp->nWorker ) pthread_mutex_lock(&pp->mu);
      a = sqlite3_realloc64(r->aChunk, sizeof(LoadChunk)*nNew);
      if( a ){ r->aChunk = a; r->nChunkAlloc = nNew; }
      if( pp->nWorker ) pthread_mutex_unlock(&pp->mu);
      if( a==0 ){ rc = SQLITE_NOMEM; break; }
    }
    rc = loadBlob(p, &pKeys, zTab, "keys", iRow);
    if( rc==SQLITE_OK ) rc = sqlite3_blob_read(pKeys, &r->aKey[r->n], (int)nk, 0);
    if( rc==SQLITE_OK ) rc = loadBlob(p, &pVals, zTab, "vals", iRow);
    if( rc==SQLITE_OK ) rc = loadPipeBuf(pp, (size_t)nv, &b);
    if( rc==SQLITE_OK ) rc = sqlite3_blob_read(pVals, b->a, (int)nv, 0);
    if( rc ){
      if( p->base.zErrMsg==0 && rc!=SQLITE_NOMEM ) gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
      break;
    }
    r->aChunk[r->nChunk].i0 = r->n;
    r->aChunk[r->nChunk].n = (int)n;
    r->aChunk[r->nChunk].bDone = 0;
    r->nChunk++;
    r->n += n;
    rc = loadPipeSubmit(pp, b, r, r->nChunk-1, iRun, (size_t)nv);
    if( rc ) rc = SQLITE_ERROR;             /* loadPipeJoin reports it */
  }
  sqlite3_blob_close(pKeys);
  sqlite3_blob_close(pVals);
  sqlite3_finalize(pStmt);
  sqlite3_free(zTab);
  return rc;
}

/* Merge the runs aR[0..nRun-1] (oldest first) into *pOut: each key once,
** with the entry of the newest run that holds it, deletions dropped.  The
** rows move to *pOut or, if a newer run overrides them, are freed; either
** way their handles in aR are zeroed. */
static int loadMerge(LoadRows *aR, int nRun, LoadRows *pOut){
  int64_t nAll = 0, *aPos;
  int i, rc;
  for(i=0; i<nRun; i++) nAll += aR[i].n;
  rc = loadRowsAlloc(pOut, nAll);
  aPos = sqlite3_malloc64(sizeof(int64_t)*nRun);
  if( rc || aPos==0 ){
    sqlite3_free(aPos);
    return SQLITE_NOMEM;
  }
  memset(aPos, 0, sizeof(int64_t)*nRun);
  for(;;){
    int64_t kMin = 0;
    int iBest = -1;
    uint64_t h;
    for(i=0; i<nRun; i++){                  /* smallest key; newest run on ties */
      if( aPos[i]<aR[i].n && (iBest<0 || aR[i].aKey[aPos[i]]<=kMin) ){
        kMin = aR[i].aKey[aPos[i]];
        iBest = i;
      }
    }
    if( iBest<0 ) break;
    h = aR[iBest].aVal[aPos[iBest]];
    aR[iBest].aVal[aPos[iBest]] = 0;
    if( h ){
      pOut->aKey[pOut->n] = kMin;
      pOut->aVal[pOut->n++] = h;
    }
    for(i=0; i<nRun; i++){
      if( aPos[i]<aR[i].n && aR[i].aKey[aPos[i]]==kMin ){
        gpudsRowFreeHandle(aR[i].aVal[aPos[i]]);  /* overridden (0 if taken) */
        aR[i].aVal[aPos[i]] = 0;
        aPos[i]++;
      }
    }
  }
  sqlite3_free(aPos);
  return SQLITE_OK;
}


/* (Re)build the store from the shadow tables: read every run (loadRun),
** merge them (one run, the usual case after compaction, is read straight
** into the load's arrays), build the store, its mirror and the key filter
** at once (gpudsStoreBuild), and only then replace the old ones, so a
** failure leaves the table as it was. */
static int shadowLoad(GpudsTable *p, int64_t iGen){
  int64_t *aRun = 0, *aN = 0, *aCap = 0, nRow = 0;
  int nRun = 0, rc, rc2, i;
  LoadRows out, *aR = 0;
  LoadPipe pipe;
  LoadWorkerArg aArg[LOAD_MAX_WORKERS];
  GpudsFilter f;
  gpuds_store *pNew = 0, *pNewMir = 0;
  memset(&out, 0, sizeof(out));
  memset(&f, 0, sizeof(f));
  rc = listRunsCap(p, &aRun, &aN, &aCap, &nRun);
  p->nLoadEntries = 0;
  for(i=0; i<nRun; i++) p->nLoadEntries += aN[i];
  for(i=0; i<nRun; i++){
    if( aCap[i]<aN[i] ) aN[i] = aCap[i];    /* entries the run can hold */
    if( aN[i]<0 ) aN[i] = 0;
    nRow += aN[i];
  }
  loadPipeOpen(&pipe, p->nCol-1, p->iFormat>=2, nRow, aArg);
  if( rc==SQLITE_OK && nRun<=1 ){
    rc = loadRowsAlloc(&out, nRun ? aN[0] : 0);
    if( rc==SQLITE_OK && nRun ) rc = loadRun(p, &pipe, aRun[0], &out);
  }else if( rc==SQLITE_OK ){
    aR = sqlite3_malloc64(sizeof(LoadRows)*nRun);
    if( aR==0 ) rc = SQLITE_NOMEM;
    else memset(aR, 0, sizeof(LoadRows)*nRun);
    for(i=0; i<nRun && rc==SQLITE_OK; i++){
      rc = loadRowsAlloc(&aR[i], aN[i]);
      if( rc==SQLITE_OK ) rc = loadRun(p, &pipe, aRun[i], &aR[i]);
    }
  }
  rc2 = loadPipeJoin(p, &pipe);             /* every chunk placed */
  if( rc2 ) rc = rc2;
  if( rc==SQLITE_OK && aR ){
    for(i=0; i<nRun; i++){ sqlite3_free(aR[i].aChunk); aR[i].aChunk = 0; aR[i].nChunk = 0; }
    rc = loadMerge(aR, nRun, &out);
  }else if( rc==SQLITE_OK && pipe.nTomb ){
    int64_t j, w = 0;                       /* drop the deletions */
    for(j=0; j<out.n; j++){
      if( out.aVal[j] ){ out.aKey[w] = out.aKey[j]; out.aVal[w++] = out.aVal[j]; }
    }
    out.n = w;
  }
  if( rc==SQLITE_OK ){ sqlite3_free(out.aChunk); out.aChunk = 0; out.nChunk = 0; }
  for(i=0; aR && i<nRun; i++) loadRowsFree(&aR[i]);
  sqlite3_free(aR);

  if( rc==SQLITE_OK ) rc = gpudsStoreCreate(p, &pNew, &pNewMir);
  if( rc==SQLITE_OK ){
    gpudsFilterAlloc(&f, out.n*2);          /* none: slower, never wrong */
    rc = gpudsStoreBuild(p, pNew, pNewMir, (size_t)out.n, out.aKey, out.aVal, &f);
  }
  if( rc==SQLITE_OK ){
    /* Replace the store, its rows and the filter. */
    p->bMaxValid = 0;
    gpudsStoreFreeRows(p);
    gpudsStoreFree(p, p->pStore, p->pMirror);
    p->pStore = pNew;
    p->pMirror = pNewMir;
    gpudsFilterFree(&p->filter);
    p->filter = f;
    p->iGeneration = iGen;
    p->bLoaded = 1;
    p->nLoadRows = out.n;
    out.n = 0;                              /* the rows are the store's now */
  }else{
    gpudsStoreFree(p, pNew, pNewMir);
    gpudsFilterFree(&f);
  }
  loadRowsFree(&out);
  loadPipeClose(&pipe);
  sqlite3_free(aRun); sqlite3_free(aN); sqlite3_free(aCap);
  return rc;
}

/* Make sure the structure holds what the database holds: load it on first
** use, and reload it when another connection has committed to the table.
** Never while this table has a transaction or a cursor open. */
int gpudsShadowRefresh(GpudsTable *p){
  int rc;
  int64_t iGen = 0;
  ShadowMeta meta = {0, 0, 0, -1};
  unsigned int iVersion = 0;
  if( p->nCursor>0 || p->wb.nOver>0 || p->wb.nUndo>0 ) return SQLITE_OK;
  if( sqlite3_file_control(p->db, p->zDb, SQLITE_FCNTL_DATA_VERSION, &iVersion)!=SQLITE_OK ){
    iVersion = 0;
  }
  if( p->bLoaded && iVersion==p->iDataVersion && iVersion!=0 ) return SQLITE_OK;
  rc = metaRead(p, &meta);
  if( rc ) return rc;
  iGen = meta.iGeneration;
  if( !p->bLoaded || iGen!=p->iGeneration || meta.iId!=p->iTableId ){
    /* A new table of this name and schema (dropped and created again by
    ** another connection) is loaded afresh like a new generation. */
    rc = shadowLoad(p, iGen);
    if( rc==SQLITE_OK ) p->iTableId = meta.iId;
    if( rc==SQLITE_OK && meta.nEntries>=0 && p->nLoadEntries!=meta.nEntries ){
      /* a chunk or run deleted, repeated or its count changed */
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run is damaged: its chunks hold "
                          "%lld entries, %s_meta says %lld", p->zName,
                          (long long)p->nLoadEntries, p->zName, (long long)meta.nEntries);
      p->bLoaded = 0;
    }
  }
  if( rc==SQLITE_OK && p->pOps->xCount(p->pStore)!=meta.nRows ){
    /* A deleted or changed run, or a changed count: the shadow tables
    ** disagree with each other.  Loaded again on the next try. */
    rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_meta is damaged: it says %lld rows, "
                        "%s_run holds %lld", p->zName, (long long)meta.nRows,
                        p->zName, (long long)p->pOps->xCount(p->pStore));
    p->bLoaded = 0;
  }
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
  int64_t i, nAll = 0;
  size_t n; const int64_t *ak; const uint64_t *an;
  for(i=0; i<p->wb.nUndo; i++){
    if( gpudsUndoFlush(p, i, &n, &ak, &an) ) nAll += (int64_t)n;
  }
  if( nAll==0 ) return SQLITE_OK;
  c->aSkip = sqlite3_malloc64(nAll*sizeof(int64_t));
  if( c->aSkip==0 ) return SQLITE_NOMEM;
  for(i=0; i<p->wb.nUndo; i++){
    if( gpudsUndoFlush(p, i, &n, &ak, &an) ){
      memcpy(&c->aSkip[c->nSkip], ak, n*sizeof(int64_t));
      c->nSkip += (int64_t)n;
    }
  }
  qsort(c->aSkip, (size_t)c->nSkip, sizeof(int64_t), keyCmp);
  return SQLITE_OK;
}

/* mergeRuns() callback for gpuds_check(): compare one shadow row with the
** structure. */
static int outToCheck(GpudsTable *p, void *pCtx, int64_t k,
                      const unsigned char *aRec, uint32_t nRec){
  CheckCtx *c = (CheckCtx*)pCtx;
  uint8_t f = 0;
  uint64_t v = 0;
  int rc;
  if( c->nSkip && bsearch(&k, c->aSkip, (size_t)c->nSkip, sizeof(int64_t), keyCmp) ){
    return SQLITE_OK;             /* changed by the open transaction */
  }
  rc = gpudsStoreLookup(p, 1, &k, &f, &v);
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
  rc = checkSkipKeys(p, &c);
  if( rc==SQLITE_OK ) rc = listRuns(p, &aRun, &aN, &nRun);
  if( rc==SQLITE_OK ) rc = mergeRuns(p, aRun, nRun, 1, outToCheck, &c);
  sqlite3_free(aRun); sqlite3_free(aN);
  sqlite3_free(c.aSkip);
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
