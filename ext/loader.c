/*
** loader.c -- load a table from its shadow tables: every run read with
** sqlite3_blob_read, its chunks checked (checksum, lengths, key order, row
** records) and placed into row arenas by up to LOAD_MAX_WORKERS threads
** while the reader goes on, the runs merged ("newest wins", deletions
** dropped), and the store, its host mirror and the key filter built at
** once.  The old store stays in place if anything fails.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "runfmt.h"
#include <string.h>
#include <stdlib.h>
#include <stdarg.h>
#include <pthread.h>
#include <unistd.h>


/* Entries a load has read or merged: keys strictly ascending, row handles
** (0: a deletion).  While runs are read, entry positions are handed out
** chunk by chunk (aChunk) and filled by whichever thread places the chunk. */
typedef struct LoadChunk {
  int64_t i0;             /* first entry of the chunk */
  int n;                  /* entries */
  int bDone;              /* aKey/aVal[i0..i0+n-1] hold keys and handles */
  int64_t iRow;           /* its t_run id */
  uint64_t uSum;          /* the checksum its vals end with (0 in format 1) */
} LoadChunk;
typedef struct LoadRows {
  int64_t *aKey;
  uint64_t *aVal;
  int64_t n, nAlloc;
  LoadChunk *aChunk;      /* chunks read so far, or NULL (all entries valid) */
  int nChunk, nChunkAlloc;
} LoadRows;

/* A spilled record's entry, while a load reads chunks: its handle is the
** address of a malloc()'d GpudsOvfl with bit 1 set and bit 0 clear (a row
** handle never is: a malloc()'d record is 8-byte aligned, an arena record's
** handle has bit 0 set).
** Once the runs are merged, the connection's thread reads the records of
** those that won (loadResolve); the others are freed with their entries. */
#define LOAD_OVFL 2
static int loadIsOvfl(uint64_t h){ return (h & 3)==LOAD_OVFL; }

/* Free handle h of a load: a row, a spilled record's reference or 0. */
static void loadFreeHandle(uint64_t h){
  if( loadIsOvfl(h) ) free((void*)(uintptr_t)(h & ~(uint64_t)3));
  else gpudsRowFreeHandle(h);
}

/* Size r for nAlloc entries. */
static int loadRowsAlloc(LoadRows *r, int64_t nAlloc){
  memset(r, 0, sizeof(*r));
  if( nAlloc<1 ) nAlloc = 1;
  r->aKey = malloc((size_t)nAlloc*8);
  r->aVal = malloc((size_t)nAlloc*8);
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
      for(i=0; i<r->aChunk[c].n; i++) loadFreeHandle(r->aVal[r->aChunk[c].i0+i]);
    }
  }else{
    for(i=0; i<r->n; i++) loadFreeHandle(r->aVal[i]);
  }
  free(r->aKey);
  free(r->aVal);
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
** placed: all or nothing.  Each record is converted from the legacy layout
** of formats 1 to 3 (gpudsLoaderRow).  Calls no SQLite routine: it runs on
** worker threads.  *pnTomb counts deletions.
** A spilled record's entry (format 3) gets a LOAD_OVFL handle. */
static int loadChunk(LoadRows *r, GpudsLoader *L, int nCol, int bOvfl, int64_t i0, int n,
                     const unsigned char *pv, size_t nv, int64_t *pnTomb,
                     LoadErr *pErr){
  int64_t *aKey = &r->aKey[i0];
  uint64_t *aVal = &r->aVal[i0];
  uint64_t *aOff = aVal;                    /* scratch: offset of each entry */
  size_t off = 0;
  int64_t i, nTomb = 0;
  uint32_t nRec;
  if( n>0 && i0>0 && aKey[0]<=aKey[-1] ){ pErr->zWhy = "keys out of order"; return SQLITE_CORRUPT_VTAB; }
  for(i=0; i<n; i++){
    if( i>0 && aKey[i]<=aKey[i-1] ){ pErr->zWhy = "keys out of order"; return SQLITE_CORRUPT_VTAB; }
    if( off+4 > nv ){ pErr->zWhy = "entry past the end of vals"; return SQLITE_CORRUPT_VTAB; }
    memcpy(&nRec, pv+off, 4);
    aOff[i] = off;
    if( nRec==SHADOW_TOMB ){ off += 4; nTomb++; continue; }
    if( nRec==SHADOW_OVFL ){
      GpudsOvfl o;
      if( !bOvfl || (uint64_t)off+4+SHADOW_OVFL_REF > nv || !gpudsOvflParse(pv+off+4, &o) ){
        pErr->zWhy = "bad spilled record reference";
        return SQLITE_CORRUPT_VTAB;
      }
      off += 4 + SHADOW_OVFL_REF;
      continue;
    }
    if( (uint64_t)off+4+nRec > nv ){
      pErr->zWhy = "entry length past the end of vals";
      return SQLITE_CORRUPT_VTAB;
    }
    if( !gpudsRowValid(pv+off+4, nRec, nCol) ){ pErr->zWhy = 0; return SQLITE_CORRUPT_VTAB; }
    off += 4 + (size_t)nRec;
  }
  /* Place the rows: aVal[i] (aOff[i] until then) gets entry i's handle. */
  for(i=0; i<n; i++){
    size_t s = aOff[i];
    memcpy(&nRec, pv+s, 4);
    aVal[i] = 0;
    if( nRec==SHADOW_OVFL ){
      GpudsOvfl *pO = (GpudsOvfl*)malloc(sizeof(GpudsOvfl));
      if( pO==0 ) goto no_mem;
      gpudsOvflParse(pv+s+4, pO);
      aVal[i] = (uint64_t)(uintptr_t)pO | LOAD_OVFL;
    }else if( nRec!=SHADOW_TOMB ){
      aVal[i] = gpudsLoaderRow(L, pv+s+4, nRec, nCol);
      if( aVal[i]==0 ) goto no_mem;
    }
  }
  *pnTomb += nTomb;
  return SQLITE_OK;

no_mem:
  while( i-- > 0 ) loadFreeHandle(aVal[i]);
  return SQLITE_NOMEM;
}

/* Place format-4 chunk c of r (runfmt.h): decode its n keys from pk[0..nk-1]
** into aKey[i0..] and its entries from pv[0..nv-1] (sizes checked), each
** record validated (gpudsRecCheck) and decoded straight into a row record
** in the arena of loader L (gpudsRowDecode), a handle or 0 (deletion) into
** each aVal[i0..].  All or nothing: a damaged entry frees the rows placed.
** The order of the chunk's first key after the previous chunk's last is
** checked after every chunk is placed (loadKeyOrder): another worker may
** still be decoding that one.  Calls no SQLite routine: it runs on worker
** threads.  *pnTomb counts deletions. */
static int loadChunkEnc(LoadRows *r, GpudsLoader *L, int nCol, int64_t i0, int n,
                        const unsigned char *pk, size_t nk,
                        const unsigned char *pv, size_t nv, int64_t *pnTomb,
                        LoadErr *pErr){
  int64_t *aKey = &r->aKey[i0];
  uint64_t *aVal = &r->aVal[i0];
  size_t off = 0;
  int64_t i, nTomb = 0;
  int rc = SQLITE_CORRUPT_VTAB;
  if( !gpudsKeysDecode(pk, nk, aKey, n) ){ pErr->zWhy = "bad keys"; return SQLITE_CORRUPT_VTAB; }
  for(i=0; i<n; i++){
    uint64_t E;
    const char *zBad;
    aVal[i] = 0;
    if( (zBad = gpudsEntryNext(pv, nv, &off, &E))!=0 ){ pErr->zWhy = zBad; goto fail; }
    if( E==0 ){ nTomb++; continue; }
    if( E==1 ){
      GpudsOvfl *pO;
      pO = (GpudsOvfl*)malloc(sizeof(GpudsOvfl));
      if( pO==0 ){ rc = SQLITE_NOMEM; goto fail; }
      if( !gpudsOvflParse(pv+off, pO) ){
        free(pO);
        pErr->zWhy = "bad spilled record reference";
        goto fail;
      }
      aVal[i] = (uint64_t)(uintptr_t)pO | LOAD_OVFL;
      off += SHADOW_OVFL_REF;
      continue;
    }
    {
      uint32_t nRec = (uint32_t)(E-2), nHdr;
      size_t nByte;
      if( !gpudsRecCheck(pv+off, nRec, nCol, &nHdr, &nByte) ){ pErr->zWhy = "bad row record"; goto fail; }
      aVal[i] = gpudsRowDecode(L, pv+off, nHdr, nCol, nByte);
      if( aVal[i]==0 ){ rc = SQLITE_NOMEM; goto fail; }
      off += nRec;
    }
  }
  if( off!=nv ){ pErr->zWhy = "bytes after the last entry"; goto fail; }
  *pnTomb += nTomb;
  return SQLITE_OK;

fail:
  while( i-- > 0 ){ loadFreeHandle(aVal[i]); aVal[i] = 0; }
  return rc;
}

/* The first chunk of r (entries read from run iRun) whose first key is not
** above the previous chunk's last, or -1: format-4 chunks are decoded by
** workers in any order, so the order across chunks is checked once all
** are placed. */
static int loadKeyOrder(const LoadRows *r){
  int c;
  for(c=1; c<r->nChunk; c++){
    int64_t i0 = r->aChunk[c].i0;
    if( i0>0 && r->aKey[i0]<=r->aKey[i0-1] ) return c;
  }
  return -1;
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
  unsigned char *a;               /* the chunk's vals (malloc); in format 4 its
                                  ** keys, then its vals */
  size_t nAlloc, nv;
  size_t nk;                      /* format 4: bytes of the keys before vals */
  GpudsBlocks spare;              /* arena blocks for the chunk */
  int eState;
  LoadRows *r;                    /* the chunk: aChunk[iChunk] of run iRun of r */
  int iChunk;
  int64_t i0;                     /* copies of aChunk[iChunk].i0 and .n: the */
  int nEnt;                       /* reader may move aChunk while b is placed */
  int64_t iRun;
  uint64_t uSeed;                 /* of the chunk's checksum (gpudsChunkSeed) */
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
  int bOvfl;                      /* format 3: spilled records may occur */
  int bEnc;                       /* format 4: keys and records encoded */
} LoadPipe;

/* Place buffer b's chunk with loader L; record the outcome. */
static int loadPipePlace(LoadPipe *pp, LoadBuf *b, GpudsLoader *L, int bLock){
  LoadErr err;
  int64_t nTomb = 0;
  int rc;
  err.iRun = b->iRun; err.zWhy = 0;
  gpudsLoaderGive(L, &b->spare);            /* the reader's blocks first */
  if( pp->bEnc ){
    /* loadRun made sure the vals hold at least the checksum */
    uint64_t h;
    size_t nv = b->nv - SHADOW_SUM;
    const unsigned char *pv = b->a + b->nk;
    memcpy(&h, pv + nv, SHADOW_SUM);
    if( h!=gpudsChunkSum(b->uSeed, b->a, b->nk, pv, nv) ){
      err.zWhy = "checksum mismatch";
      rc = SQLITE_CORRUPT_VTAB;
    }else{
      rc = loadChunkEnc(b->r, L, pp->nCol, b->i0, b->nEnt, b->a, b->nk, pv, nv, &nTomb, &err);
    }
  }else if( pp->bSum ){
    /* loadRun made sure the vals hold at least the checksum */
    uint64_t h;
    size_t nv = b->nv - SHADOW_SUM;
    memcpy(&h, b->a + nv, SHADOW_SUM);
    if( h!=gpudsChunkSum(b->uSeed, (const unsigned char*)&b->r->aKey[b->i0], (size_t)b->nEnt*8,
                         b->a, nv) ){
      err.zWhy = "checksum mismatch";
      rc = SQLITE_CORRUPT_VTAB;
    }else{
      rc = loadChunk(b->r, L, pp->nCol, pp->bOvfl, b->i0, b->nEnt, b->a, nv, &nTomb, &err);
    }
  }else{
    rc = loadChunk(b->r, L, pp->nCol, pp->bOvfl, b->i0, b->nEnt, b->a, b->nv, &nTomb, &err);
  }
  gpudsLoaderTakeBack(L, &b->spare);        /* and back, those not used */
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
static void loadPipeOpen(LoadPipe *pp, int nCol, int iFormat, int64_t nRow,
                         LoadWorkerArg *aArg){
  int i, nCpu = 1;
  memset(pp, 0, sizeof(*pp));
  pp->nCol = nCol;
  pp->bSum = iFormat>=2;
  pp->bOvfl = iFormat>=SHADOW_FORMAT_OVFL;
  pp->bEnc = iFormat>=SHADOW_FORMAT_ENC;
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
** reader takes free buffers), with arena blocks for nRowBytes bytes of
** rows.  While there is none, the reader places a chunk itself, or waits
** for a worker.  SQLITE_NOMEM, or SQLITE_ERROR if a worker failed
** (loadPipeJoin says why). */
static int loadPipeBuf(LoadPipe *pp, size_t nv, size_t nRowBytes, LoadBuf **pb){
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
  ** allocates.  A chunk whose rows fill half a block or more is a big
  ** table's: its blocks are huge pages (arena.c, blockAlloc). */
  while( b->spare.n < (int)(nRowBytes/(gpudsLoaderSpanMax() - LOAD_SPAN_MIN)) + 2 ){
    if( !gpudsBlocksAdd(&b->spare, nRowBytes >= gpudsLoaderSpanMax()/2) ) break;  /* the worker will try */
  }
  *pb = b;
  return SQLITE_OK;
}

/* Hand buffer b, filled with the vals of chunk iChunk of r (run iRun), to a
** worker, or place it now if there is none. */
static int loadPipeSubmit(LoadPipe *pp, LoadBuf *b, LoadRows *r, int iChunk,
                          int64_t iRun, uint64_t uSeed, size_t nk, size_t nv){
  b->r = r; b->iChunk = iChunk; b->iRun = iRun; b->nk = nk; b->nv = nv;
  b->uSeed = uSeed;
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
    gpudsBlocksFree(&b->spare);
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
** keys are read straight into r and its vals into a buffer of the pipe.
** A chunk of no entries is not read; its digest terms go to pDig now (those
** of the others once they are placed: loadDigest). */
static int loadRun(GpudsTable *p, LoadPipe *pp, int64_t iRun, LoadRows *r,
                   GpudsDigest *pDig){
  sqlite3_stmt *pStmt;
  sqlite3_blob *pKeys = 0, *pVals = 0;
  char *zTab = sqlite3_mprintf("%s_run", p->zName);
  int rc;
  if( zTab==0 ) return SQLITE_NOMEM;
  rc = gpudsRunPrepare(p, &pStmt,
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
    if( pp->bEnc ? (n<0 || n>0x7fffffff || nk<n || nk>n*9 || nv<n + SHADOW_SUM)
                 : (n<0 || n>0x7fffffff || nk!=n*8 || nv<n*4 + (pp->bSum ? SHADOW_SUM : 0)) ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                          p->zName, (long long)iRun, "bad chunk sizes");
      break;
    }
    if( n > r->nAlloc - r->n ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                          p->zName, (long long)iRun, "more entries than its chunks count");
      break;
    }
    if( n==0 ){
      /* no writer makes one: from format 5 its term spoils the digests */
      gpudsDigestAdd(pDig, iRow, 0, 0, 0);
      continue;
    }
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
    if( rc==SQLITE_OK ) rc = loadBlob(p, &pVals, zTab, "vals", iRow);
    if( rc==SQLITE_OK && pp->bEnc ){
      /* keys and vals into the buffer; the rows take at most a prefix and
      ** a byte of alignment a row more than their encoding */
      rc = loadPipeBuf(pp, (size_t)(nk+nv), (size_t)nv + (size_t)n*(gpudsRowHdrBytes(pp->nCol)
                       + 1), &b);
      if( rc==SQLITE_OK ) rc = sqlite3_blob_read(pKeys, b->a, (int)nk, 0);
      if( rc==SQLITE_OK ) rc = sqlite3_blob_read(pVals, b->a + nk, (int)nv, 0);
    }else if( rc==SQLITE_OK ){
      rc = sqlite3_blob_read(pKeys, &r->aKey[r->n], (int)nk, 0);
      if( rc==SQLITE_OK ) rc = loadPipeBuf(pp, (size_t)nv, (size_t)nv, &b);
      if( rc==SQLITE_OK ) rc = sqlite3_blob_read(pVals, b->a, (int)nv, 0);
    }
    if( rc ){
      if( p->base.zErrMsg==0 && rc!=SQLITE_NOMEM ) gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
      break;
    }
    r->aChunk[r->nChunk].i0 = r->n;
    r->aChunk[r->nChunk].n = (int)n;
    r->aChunk[r->nChunk].bDone = 0;
    r->aChunk[r->nChunk].iRow = iRow;
    r->aChunk[r->nChunk].uSum = 0;
    if( pp->bSum ){                         /* nv >= SHADOW_SUM: checked above */
      memcpy(&r->aChunk[r->nChunk].uSum, b->a + (pp->bEnc ? nk : 0) + nv - SHADOW_SUM, SHADOW_SUM);
    }
    r->nChunk++;
    r->n += n;
    rc = loadPipeSubmit(pp, b, r, r->nChunk-1, iRun, gpudsChunkSeed(p->iFormat, iRow),
                        pp->bEnc ? (size_t)nk : 0, (size_t)nv);
    if( rc ) rc = SQLITE_ERROR;             /* loadPipeJoin reports it */
  }
  sqlite3_blob_close(pKeys);
  sqlite3_blob_close(pVals);
  sqlite3_finalize(pStmt);
  sqlite3_free(zTab);
  return rc;
}

/* Add the digest terms of every chunk of r (all placed: its first key is
** known) to d. */
static void loadDigest(const LoadRows *r, GpudsDigest *d){
  int c;
  for(c=0; c<r->nChunk; c++){
    const LoadChunk *pc = &r->aChunk[c];
    gpudsDigestAdd(d, pc->iRow, pc->n, r->aKey[pc->i0], pc->uSum);
  }
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
        loadFreeHandle(aR[i].aVal[aPos[i]]);  /* overridden (0 if taken) */
        aR[i].aVal[aPos[i]] = 0;
        aPos[i]++;
      }
    }
  }
  sqlite3_free(aPos);
  return SQLITE_OK;
}


/* Read the spilled records the merged entries of r refer to: each
** LOAD_OVFL handle becomes the handle of its record.  On an error the
** handles not yet read stay as they are (loadRowsFree frees both kinds). */
static int loadResolve(GpudsTable *p, LoadRows *r){
  int64_t j;
  for(j=0; j<r->n; j++){
    GpudsOvfl *pO;
    unsigned char *aRec = 0;
    int rc;
    if( !loadIsOvfl(r->aVal[j]) ) continue;
    pO = (GpudsOvfl*)(uintptr_t)(r->aVal[j] & ~(uint64_t)3);
    rc = gpudsOvflRead(p, 0, pO, p->nCol-1, &aRec);
    if( rc ) return rc;
    free(pO);
    r->aVal[j] = (uint64_t)(uintptr_t)aRec;   /* malloc()'d: a row of its own */
  }
  return SQLITE_OK;
}

/* Load the commit t_meta m names from the shadow tables into a new copy
** of the table (copy.c): read every run (loadRun), merge them (one run,
** the usual case after compaction, is read straight into the load's
** arrays), build the store, its mirror and the key filter at once
** (gpudsStoreBuild), and only then have the table read it instead of its
** old one (gpudsCopyAdopt), so a failure leaves the table as it was.  The
** copy is the table's alone until the caller publishes it. */
int gpudsShadowLoad(GpudsTable *p, const GpudsMeta *m){
  int64_t *aRun = 0, *aN = 0, *aCap = 0, nRow = 0;
  int nRun = 0, rc, rc2, i;
  LoadRows out, *aR = 0;
  LoadPipe pipe;
  LoadWorkerArg aArg[LOAD_MAX_WORKERS];
  GpudsDigest dig = {0, 0, 0};
  GpudsCopy *pNew = 0;
  int64_t nLoaded = 0;
  memset(&out, 0, sizeof(out));
  rc = gpudsRunListCap(p, &aRun, &aN, &aCap, &nRun);
  p->nLoadEntries = 0;
  for(i=0; i<nRun; i++) p->nLoadEntries += aN[i];
  for(i=0; i<nRun; i++){
    if( aCap[i]<aN[i] ) aN[i] = aCap[i];    /* entries the run can hold */
    if( aN[i]<0 ) aN[i] = 0;
    nRow += aN[i];
  }
  loadPipeOpen(&pipe, p->nCol-1, p->iFormat, nRow, aArg);
  if( rc==SQLITE_OK && nRun<=1 ){
    rc = loadRowsAlloc(&out, nRun ? aN[0] : 0);
    if( rc==SQLITE_OK && nRun ) rc = loadRun(p, &pipe, aRun[0], &out, &dig);
  }else if( rc==SQLITE_OK ){
    aR = sqlite3_malloc64(sizeof(LoadRows)*nRun);
    if( aR==0 ) rc = SQLITE_NOMEM;
    else memset(aR, 0, sizeof(LoadRows)*nRun);
    for(i=0; i<nRun && rc==SQLITE_OK; i++){
      rc = loadRowsAlloc(&aR[i], aN[i]);
      if( rc==SQLITE_OK ) rc = loadRun(p, &pipe, aRun[i], &aR[i], &dig);
    }
  }
  rc2 = loadPipeJoin(p, &pipe);             /* every chunk placed */
  if( rc2 ) rc = rc2;
  for(i=0; rc==SQLITE_OK && pipe.bEnc && i<(aR ? nRun : 1); i++){
    if( loadKeyOrder(aR ? &aR[i] : &out)>=0 ){
      rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                          p->zName, (long long)(nRun ? aRun[i] : 0), "keys out of order");
    }
  }
  for(i=0; rc==SQLITE_OK && i<(aR ? nRun : 1); i++) loadDigest(aR ? &aR[i] : &out, &dig);
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
  if( rc==SQLITE_OK && p->iFormat>=SHADOW_FORMAT_OVFL ) rc = loadResolve(p, &out);
  for(i=0; aR && i<nRun; i++) loadRowsFree(&aR[i]);
  sqlite3_free(aR);

  if( rc==SQLITE_OK ) rc = gpudsCopyNew(p, &pNew);
  if( rc==SQLITE_OK ){
    gpudsFilterAlloc(&pNew->filter, out.n + out.n/4); /* none: slower, never wrong */
    rc = gpudsStoreBuild(p, pNew, (size_t)out.n, out.aKey, out.aVal);
    nLoaded = out.n;
    if( rc==SQLITE_OK ) rc = gpudsCopyAdopt(p, pNew, m);
    if( rc==SQLITE_OK ) out.n = 0;          /* the rows are the copy's now */
    else gpudsCopyDiscard(pNew);            /* (its rows stay out's) */
  }
  if( rc==SQLITE_OK ){
    /* The table reads the new copy; the old one (and its rows) went
    ** unless another table reads it. */
    p->bMaxValid = 0;
    p->iGeneration = m->iGeneration;
    p->uLoadDigest = dig.uDigest;
    p->uLoadLayout = dig.uLayout;
    p->bLoaded = 1;
    p->nLoadRows = nLoaded;
  }
  loadRowsFree(&out);
  loadPipeClose(&pipe);
  sqlite3_free(aRun); sqlite3_free(aN); sqlite3_free(aCap);
  return rc;
}

