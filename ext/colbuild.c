/*
** colbuild.c -- the build of a table's column set: every row
** of the store decoded into its non-key columns' tags and 8-byte values
** (gpudsRowColVal) on one thread per CPU, handed to the column set's
** backend (xLoad: the GPU's where the table's backend is the GPU's, the
** host's where the GPU is absent, or full, or GPUDS_GPU_MEMORY would be
** passed: then while the copy lives, cs.zWhy saying why: store.c).
**
** Called by the first column query (colset.c) and by a background load
** (bgload.c), which builds the set with the store so that the first
** column query after opening need not wait for it.  Below both: it reads
** the store (store.c) and the rows (row.c) only.
*/
#include "gpuds_int.h"
#include "runfmt.h"
SQLITE_EXTENSION_INIT3
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>

typedef struct BuildCtx {
  int nCol;                 /* non-key columns */
  int64_t n, nAlloc;
  int64_t *aKey;
  uint64_t *aRow;
  uint8_t *aTag;            /* nCol*n, column-major */
  uint64_t *aVal;
  int eText;                /* how the table's records hold text (textenc.c) */
} BuildCtx;

/* gpudsStoreEach callback: append a page of entries (decoded later). */
static int buildCb(GpudsTable *p, void *pCtx, const int64_t *aK,
                   const uint64_t *aV, size_t n){
  BuildCtx *b = (BuildCtx*)pCtx;
  if( b->n + (int64_t)n > b->nAlloc ) return SQLITE_CORRUPT_VTAB;  /* count lied */
  memcpy(&b->aKey[b->n], aK, n*8);
  memcpy(&b->aRow[b->n], aV, n*8);
  b->n += (int64_t)n;
  (void)p;
  return SQLITE_OK;
}

/* Rows [i0, i1) of a build decoded into the column arrays: one thread's
** share.  The rows are read where they lie (a cache miss each), so many
** threads decode far faster than one. */
typedef struct DecodeJob {
  BuildCtx *b;
  int64_t i0, i1;
  uint8_t *aBytes;          /* per column: a TEXT or BLOB value was seen */
  pthread_t tid;
  int bThread;
} DecodeJob;

static void *decodeRun(void *pArg){
  DecodeJob *j = (DecodeJob*)pArg;
  BuildCtx *b = j->b;
  int64_t i;
  int c;
  for(i=j->i0; i<j->i1; i++){
    const GpudsRow *pRow = gpudsRowOf(b->aRow[i]);
    for(c=0; c<b->nCol; c++){
      size_t o = (size_t)c*(size_t)b->n + (size_t)i;
      gpudsRowColVal(pRow, c, b->eText, &b->aTag[o], &b->aVal[o]);
      j->aBytes[c] |= b->aTag[o]>=GPUDS_TAG_TEXT;
    }
  }
  return 0;
}

/* Below this many rows a build decodes on the calling thread only. */
#define DECODE_THREAD_MIN 65536
/* Threads that decode a build at most (a memory-latency-bound loop). */
#define DECODE_MAX_THREADS 16

/* Decode every row of b into its column arrays (laid out n apart), on up
** to DECODE_MAX_THREADS threads (one per CPU); all joined on return.
** aBytes[c] (b->nCol zeros on entry): column c holds TEXT or BLOB. */
static void decodeAll(BuildCtx *b, uint8_t *aBytes){
  DecodeJob aJob[DECODE_MAX_THREADS];
  uint8_t *aFlag;
  int nJob = 1, i, c;
#ifdef _SC_NPROCESSORS_ONLN
  if( b->n>=DECODE_THREAD_MIN ) nJob = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
  if( nJob<1 ) nJob = 1;
  if( nJob>DECODE_MAX_THREADS ) nJob = DECODE_MAX_THREADS;
  aFlag = calloc((size_t)nJob, (size_t)(b->nCol>0 ? b->nCol : 1));
  if( aFlag==0 ) nJob = 1;           /* one job, writing aBytes itself */
  for(i=0; i<nJob; i++){
    aJob[i].b = b;
    aJob[i].i0 = b->n*i/nJob;
    aJob[i].i1 = b->n*(i+1)/nJob;
    aJob[i].aBytes = aFlag ? &aFlag[(size_t)i*b->nCol] : aBytes;
    aJob[i].bThread = i>0 && pthread_create(&aJob[i].tid, 0, decodeRun, &aJob[i])==0;
  }
  decodeRun(&aJob[0]);
  for(i=1; i<nJob; i++){
    if( aJob[i].bThread ) pthread_join(aJob[i].tid, 0);
    else decodeRun(&aJob[i]);
  }
  for(i=0; aFlag && i<nJob; i++){
    for(c=0; c<b->nCol; c++) aBytes[c] |= aJob[i].aBytes[c];
  }
  free(aFlag);
}

/* A build of at least this many rows ends with a trim of the heap. */
#define COLS_TRIM_ROWS 65536

/* Build the column set of the table's copy from the store's rows, unless
** it has one (another table of the copy built it meanwhile).  On error the
** copy has none and the table's message says why.  The latch held for
** reading keeps the store as it is meanwhile, and the copy's muCols other
** builds out; a table nothing else sees (a background load's) may be
** built on any thread. */
int gpudsColsBuild(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  GpudsColState *cs = &c->cs;
  BuildCtx b;
  int rc;
  int64_t nStore;

  memset(&b, 0, sizeof(b));
  gpudsLatchRead(p);
  gpudsColsLock(p);
  if( gpudsColsBuilt(p) ){
    gpudsColsUnlock(p);
    gpudsLatchReadEnd(p);
    return SQLITE_OK;
  }
  nStore = gpudsStoreCount(p);
  b.nCol = p->nCol-1;
  b.eText = gpudsTableText(p);
  b.nAlloc = nStore>0 ? nStore : 1;
  b.aKey = malloc((size_t)b.nAlloc*8);
  b.aRow = malloc((size_t)b.nAlloc*8);
  b.aTag = malloc((size_t)b.nAlloc*(b.nCol>0 ? b.nCol : 1));
  b.aVal = malloc((size_t)b.nAlloc*8*(b.nCol>0 ? b.nCol : 1));
  if( !b.aKey || !b.aRow || !b.aTag || !b.aVal ){
    rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory building the column set");
    goto build_out;
  }
  rc = gpudsStoreEach(p, buildCb, &b);
  if( rc==SQLITE_OK && b.n!=nStore ) rc = SQLITE_CORRUPT_VTAB;
  if( rc ){
    if( p->base.zErrMsg==0 ) gpudsVtabError(p, rc, "column set: the store's count and its rows disagree");
    goto build_out;
  }
  free(cs->aBytes);              /* (of a build that failed) */
  cs->aBytes = calloc((size_t)(b.nCol>0 ? b.nCol : 1), 1);
  if( cs->aBytes==0 ){
    rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory building the column set");
    goto build_out;
  }
  decodeAll(&b, cs->aBytes);
  rc = gpudsStoreColsLoad(p, b.nCol, b.n, b.aKey, b.aRow, b.aTag, b.aVal);
build_out:
  gpudsColsUnlock(p);
  gpudsLatchReadEnd(p);
  free(b.aKey); free(b.aRow);
  free(b.aTag); free(b.aVal);
  /* The build's arrays (a GPU set holds its copy on the device, a host one
  ** its own): what they took of the heap goes back to the system. */
  if( b.nAlloc>=COLS_TRIM_ROWS ) gpudsMemTrim();
  return rc;
}

