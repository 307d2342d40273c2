/*
** copy.c -- one copy of each table per process.
**
** Every connection of the process to one database file reads a table from
** one copy (GpudsCopy): its store, host mirror, key filter and column set.
** Copies are registered by the file's identity (device and inode of the
** database file; a database with no file, ":memory:", a temporary one or
** a memdb one, keeps its copies private) and the table's t_meta 'id'.  A
** copy holds the commits its marks name (t_meta's generation and stamp
** after each: a stamp is random per commit, so two copies of the file
** that took different commits never match), the newest in its store and
** the older ones through its history (version.c).  A table attaches at
** the commit its connection's snapshot's t_meta names (gpudsCopyAttach,
** from shadow.c's refresh); where no copy holds it, the table loads a new
** copy and publishes it (gpudsCopyPublish).
**
** Writes.  SQLite lets one connection write a database file at a time, so
** a copy has at most one writer (pWriter): its batches are versions above
** the head mark, laid over the store by every other table.  Its xSync
** writes t_meta (gpudsCopyPending: the commit's generation and stamp); the
** commit becomes a mark (copyPromote) at its xCommit, or earlier when a
** table's snapshot already names it (SQLite lets other connections in
** between its commit and the xCommit).  A rollback takes the versions back
** (wbuf.c, store.c); one that could not (out of memory) leaves them laid
** over the store for good, and the copy takes no new table or writer
** (bDead).
**
** Versions are released (their old rows freed) once no attached table's
** pin is below them: a table's pin is its snapshot, kept while it may hold
** rows it read (cursors, a view's result) and moved at its next refresh.
**
** Locks: the registry's mutex, then a copy's mu (marks, pins, pWriter);
** the latch (version.c) is never taken under either.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "runfmt.h"
#include <string.h>
#include <stdlib.h>
#include <errno.h>
#include <time.h>
#include <sys/stat.h>

/* A writer whose copy still holds another table's batches waits at most
** this long for that table's rollback (SQLite unlocks the file before it
** calls xRollback). */
#define COPY_WRITER_WAIT_S 10

/* Versions holding more keys than this are worth letting the pins of
** idle tables go (gpudsSnapBreak) to release them. */
#define COPY_BREAK_KEYS 65536

/* A table attached to a copy, and the copy's versions it needs: those
** above iPin. */
struct GpudsPin {
  GpudsTable *p;
  int64_t iPin;
};

static pthread_mutex_t registryMutex = PTHREAD_MUTEX_INITIALIZER;
static GpudsCopy *pRegistry = 0;

/* "dev:ino" of the file of p's database (sqlite3_malloc'd), or NULL where
** its copies stay private: no file, the memdb VFS, or GPUDS_SHARE=0. */
static char *copyFileOf(GpudsTable *p){
  const char *zFile = sqlite3_db_filename(p->db, p->zDb);
  sqlite3_vfs *pVfs = 0;
  struct stat st;
  if( gpudsConfig()->bNoShare || zFile==0 || zFile[0]==0 ) return 0;
  if( sqlite3_file_control(p->db, p->zDb, SQLITE_FCNTL_VFS_POINTER, &pVfs)==SQLITE_OK
   && pVfs && pVfs->zName && strcmp(pVfs->zName, "memdb")==0 ){
    return 0;
  }
  if( stat(zFile, &st) ) return 0;
  return sqlite3_mprintf("%llu:%llu", (unsigned long long)st.st_dev,
                         (unsigned long long)st.st_ino);
}

/* Make a copy for table p: empty stores on its backend, a key filter for
** a new table, no mark (it holds no commit yet), nobody attached. */
int gpudsCopyNew(GpudsTable *p, GpudsCopy **ppCopy){
  GpudsCopy *c = sqlite3_malloc64(sizeof(*c));
  int rc;
  *ppCopy = 0;
  if( c==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  memset(c, 0, sizeof(*c));
  c->eKind = p->eKind;
  c->nCol = p->nCol;
  c->iFormat = p->iFormat;
  c->eText = gpudsTableText(p);
  pthread_mutex_init(&c->mu, 0);
  pthread_cond_init(&c->cv, 0);
  pthread_mutex_init(&c->muLatch, 0);
  pthread_cond_init(&c->cvLatch, 0);
  pthread_mutex_init(&c->muCols, 0);
  pthread_mutex_init(&c->muCall, 0);
  rc = gpudsStoreCreate(p, c);
  if( rc==SQLITE_OK && gpudsFilterReset(&c->filter, GPUDS_FILTER_INITIAL_KEYS) ){
    rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  }
  if( rc ){
    gpudsStoreFree(c);
    pthread_mutex_destroy(&c->mu); pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->muLatch); pthread_cond_destroy(&c->cvLatch);
    pthread_mutex_destroy(&c->muCols); pthread_mutex_destroy(&c->muCall);
    sqlite3_free(c);
    return rc;
  }
  *ppCopy = c;
  return SQLITE_OK;
}

/* Free copy c, which no table is attached to; its rows too, unless
** bKeepRows (they are someone else's). */
static void copyFreeAll(GpudsCopy *c, int bKeepRows){
  if( !bKeepRows ) gpudsStoreFreeRows(c);
  gpudsStoreColsDrop(c);
  gpudsStoreFree(c);
  gpudsFilterFree(&c->filter);
  gpudsVersionFreeList(c->pFirst);
  sqlite3_free(c->aMark);
  sqlite3_free(c->aPin);
  sqlite3_free(c->zFile);
  pthread_mutex_destroy(&c->mu); pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->muLatch); pthread_cond_destroy(&c->cvLatch);
  pthread_mutex_destroy(&c->muCols); pthread_mutex_destroy(&c->muCall);
  sqlite3_free(c);
}

/* Free copy c, which no table is attached to: its rows, stores, filter,
** column set and versions. */
static void copyFree(GpudsCopy *c){
  copyFreeAll(c, 0);
}

/* Free copy c, new and never attached, but not the rows its stores name
** (a load that failed: they are the load's to free). */
void gpudsCopyDiscard(GpudsCopy *c){
  if( c ) copyFreeAll(c, 1);
}

/* Add mark (iGen, iStamp) at the copy's newest version (mu held).  Out of
** memory the copy takes no new table (it could not tell its commits). */
static void copyMark(GpudsCopy *c, int64_t iGen, int64_t iStamp){
  if( c->nMark==c->nMarkAlloc ){
    int nNew = c->nMarkAlloc ? c->nMarkAlloc*2 : 8;
    GpudsMark *a = sqlite3_realloc64(c->aMark, nNew*sizeof(GpudsMark));
    if( a==0 ){ c->bDead = 1; return; }
    c->aMark = a;
    c->nMarkAlloc = nNew;
  }
  c->aMark[c->nMark].iGen = iGen;
  c->aMark[c->nMark].iStamp = iStamp;
  c->aMark[c->nMark].iSeq = c->iSeq;
  c->nMark++;
}

/* The head: the version number of the newest commit the copy holds (mu
** held; 0 without a mark). */
static int64_t copyHead(const GpudsCopy *c){
  return c->nMark ? c->aMark[c->nMark-1].iSeq : 0;
}

/* The writer's commit (t_meta written, SQLite committed it) becomes the
** head (mu held). */
static void copyPromote(GpudsCopy *c){
  copyMark(c, c->iPendGen, c->iPendStamp);
  c->bPend = 0;
  c->pWriter = 0;
  pthread_cond_broadcast(&c->cv);
}

/* The version number at which copy c holds the commit t_meta m names, or
** -1 (mu held).  A commit its writer's xSync wrote becomes a mark here
** once a snapshot names it. */
static int64_t copyStateOf(GpudsCopy *c, const GpudsMeta *m){
  int i;
  if( c->bDead ) return -1;
  if( c->bPend && m->iGeneration==c->iPendGen && m->iStamp==c->iPendStamp ){
    copyPromote(c);
  }
  for(i=c->nMark-1; i>=0; i--){
    if( c->aMark[i].iGen==m->iGeneration && c->aMark[i].iStamp==m->iStamp ){
      return c->aMark[i].iSeq>=c->iBaseSeq ? c->aMark[i].iSeq : -1;
    }
  }
  return -1;
}

/* True if copy c holds table p's kind of contents for t_meta m: the same
** table, columns, format, text and backend as p's own copy, or either's
** store moved to the host for lack of GPU memory (store.c: zStoreWhy),
** where sharing the one on the host beats loading another onto a full GPU. */
static int copyFits(const GpudsCopy *c, const GpudsTable *p, const GpudsMeta *m){
  const GpudsCopy *pOwn = p->pCopy;
  return c->iTableId==m->iId && c->eKind==p->eKind && c->nCol==p->nCol
      && c->iFormat==m->iFormat && c->eText==gpudsTableText(p)
      && (pOwn==0 || c->zStoreWhy[0] || pOwn->zStoreWhy[0]
          || (c->pOps==pOwn->pOps && (c->pMirOps==0)==(pOwn->pMirOps==0)));
}

/* Table p's pin in c (mu held), or NULL. */
static GpudsPin *copyPinOf(GpudsCopy *c, const GpudsTable *p){
  int i;
  for(i=0; i<c->nPin; i++) if( c->aPin[i].p==p ) return &c->aPin[i];
  return 0;
}

/* Add table p's pin at iPin to c (mu held): SQLITE_NOMEM or SQLITE_OK. */
static int copyPinAdd(GpudsCopy *c, GpudsTable *p, int64_t iPin){
  if( c->nPin==c->nPinAlloc ){
    int nNew = c->nPinAlloc ? c->nPinAlloc*2 : 4;
    GpudsPin *a = sqlite3_realloc64(c->aPin, nNew*sizeof(GpudsPin));
    if( a==0 ) return SQLITE_NOMEM;
    c->aPin = a;
    c->nPinAlloc = nNew;
  }
  c->aPin[c->nPin].p = p;
  c->aPin[c->nPin].iPin = iPin;
  c->nPin++;
  return SQLITE_OK;
}

/* Release the versions of p's copy that no pin needs, if the latch can be
** had at once (else a later call does). */
static void copyRelease(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  GpudsFlush *pDone = 0, *f;
  int64_t iMin;
  int i, bBreak;
  if( __atomic_load_n(&c->nVersion, __ATOMIC_RELAXED)==0 ) return;
  if( !gpudsLatchTryWrite(p) ) return;
  pthread_mutex_lock(&c->mu);
  iMin = copyHead(c);
  bBreak = __atomic_load_n(&c->nVersionKeys, __ATOMIC_RELAXED) > COPY_BREAK_KEYS;
  for(i=0; i<c->nPin; i++){
    GpudsPin *pPin = &c->aPin[i];
    if( pPin->iPin>=iMin ) continue;
    /* an idle table's pin holding big versions goes (not the writer's) */
    if( bBreak && pPin->p!=p && pPin->p!=c->pWriter && gpudsSnapBreak(pPin->p) ){
      pPin->iPin = INT64_MAX;
      continue;
    }
    iMin = pPin->iPin;
  }
  for(f=c->pFirst; f && f->iSeq<=iMin; f=f->pNext){
    c->iBaseSeq = f->iSeq;
    __atomic_sub_fetch(&c->nVersion, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&c->nVersionKeys, (int64_t)f->n, __ATOMIC_RELAXED);
  }
  if( f!=c->pFirst ){
    pDone = c->pFirst;
    if( f ){ f->pPrev->pNext = 0; f->pPrev = 0; }
    else c->pLast = 0;
    c->pFirst = f;
    /* marks below the oldest state still held name nothing */
    for(i=0; i<c->nMark-1 && c->aMark[i].iSeq<c->iBaseSeq; i++){}
    if( i>0 ){
      memmove(c->aMark, &c->aMark[i], (c->nMark-i)*sizeof(GpudsMark));
      c->nMark -= i;
    }
  }
  pthread_mutex_unlock(&c->mu);
  gpudsLatchWriteEnd(p);
  gpudsVersionFreeList(pDone);
}

/* Table p leaves its copy (it holds no row of it): the copy goes with its
** last table.  A writer's batches it could not take back stay laid over
** the store for the others, and the copy takes nobody new. */
void gpudsCopyDetach(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  GpudsPin *pPin;
  int bFree = 0;
  if( c==0 ) return;
  pthread_mutex_lock(&c->mu);
  if( c->pWriter==p ){
    c->pWriter = 0;
    c->bPend = 0;
    c->bDead = 1;
    pthread_cond_broadcast(&c->cv);
  }
  pPin = copyPinOf(c, p);
  if( pPin ) pPin->iPin = INT64_MAX;     /* needs nothing; keeps c alive */
  pthread_mutex_unlock(&c->mu);
  copyRelease(p);
  gpudsLatchLeave(c, p);
  pthread_mutex_lock(&registryMutex);
  pthread_mutex_lock(&c->mu);
  pPin = copyPinOf(c, p);
  if( pPin ) *pPin = c->aPin[--c->nPin];
  if( c->nPin==0 ){
    GpudsCopy **pp;
    bFree = 1;
    for(pp=&pRegistry; *pp; pp=&(*pp)->pNext){
      if( *pp==c ){ *pp = c->pNext; break; }
    }
  }
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&registryMutex);
  p->pCopy = 0;
  if( bFree ) copyFree(c);
}

/* Table p, which holds a pin in copy c at iSeq, leaves its old copy and
** reads c from there, with latch slot sl (gpudsLatchSlotNew). */
static void copyMove(GpudsTable *p, GpudsCopy *c, int64_t iSeq, GpudsLatchSlot *sl){
  gpudsCopyDetach(p);
  p->pCopy = c;
  p->iSnapSeq = iSeq;
  gpudsLatchJoin(c, p, sl);
}

/* Table p reads copy c from now on, a new one that nobody else knows yet,
** holding the commit t_meta m names (NULL: none yet); its old copy is
** left (gpudsCopyDetach).  On error p keeps its copy and c is the
** caller's (gpudsCopyDiscard). */
int gpudsCopyAdopt(GpudsTable *p, GpudsCopy *c, const GpudsMeta *m){
  GpudsLatchSlot *sl = gpudsLatchSlotNew();
  int rc = sl ? SQLITE_OK : SQLITE_NOMEM;
  if( m ){
    c->iTableId = m->iId;
    c->iFormat = m->iFormat;
    copyMark(c, m->iGeneration, m->iStamp);
  }
  if( rc==SQLITE_OK ) rc = copyPinAdd(c, p, c->iSeq);
  if( rc ){
    free(sl);
    return gpudsVtabError(p, rc, "out of memory");
  }
  copyMove(p, c, c->iSeq, sl);
  return SQLITE_OK;
}

/* The registered copy (other than pNot) of the database file zFile that
** holds table p's commit m (bHead: as its newest, with no writer), with a
** pin for p added at that commit (*piSeq), or NULL (also out of memory: p
** then loads its own). */
static GpudsCopy *copyFind(GpudsTable *p, const char *zFile, const GpudsMeta *m,
                           const GpudsCopy *pNot, int bHead, int64_t *piSeq){
  GpudsCopy *c;
  pthread_mutex_lock(&registryMutex);
  for(c=pRegistry; c; c=c->pNext){
    int64_t iSeq;
    int bOk = 0;
    if( c==pNot || strcmp(c->zFile, zFile)!=0 ) continue;
    pthread_mutex_lock(&c->mu);
    if( copyFits(c, p, m) && (iSeq = copyStateOf(c, m))>=0
     && (!bHead || (iSeq==copyHead(c) && c->pWriter==0)) ){
      bOk = copyPinAdd(c, p, iSeq)==SQLITE_OK;
      *piSeq = iSeq;
    }
    pthread_mutex_unlock(&c->mu);
    if( bOk ) break;
  }
  pthread_mutex_unlock(&registryMutex);
  return c;
}

/* Attach table p, at the commit t_meta m names (its connection's
** snapshot), to a copy that holds it: its own copy, or (bOther) one
** another connection of the process made; never one of a table whose
** commits have no stamp (older formats before their first commit by this
** build: two copies of the file could not be told apart).  *pbDone: it
** did; else the caller loads a copy.  p holds no row (no cursor, no write
** buffer). */
int gpudsCopyAttach(GpudsTable *p, const GpudsMeta *m, int bOther, int *pbDone){
  GpudsCopy *c = p->pCopy, *pFound = 0;
  GpudsLatchSlot *sl;
  int64_t iSeq = -1;
  char *zFile;
  *pbDone = 0;
  if( c ){
    pthread_mutex_lock(&c->mu);
    if( copyFits(c, p, m) ) iSeq = copyStateOf(c, m);
    if( iSeq>=0 ){
      GpudsPin *pPin = copyPinOf(c, p);
      p->iSnapSeq = iSeq;
      if( pPin ) pPin->iPin = iSeq;
    }
    pthread_mutex_unlock(&c->mu);
    if( iSeq>=0 ){
      copyRelease(p);
      *pbDone = 1;
      return SQLITE_OK;
    }
  }
  if( !bOther || m->iStamp==0 ) return SQLITE_OK;
  zFile = copyFileOf(p);
  if( zFile==0 ) return SQLITE_OK;
  sl = gpudsLatchSlotNew();
  if( sl ) pFound = copyFind(p, zFile, m, c, 0, &iSeq);
  sqlite3_free(zFile);
  if( sl==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  if( pFound==0 ){
    free(sl);
    return SQLITE_OK;
  }
  copyMove(p, pFound, iSeq, sl);
  *pbDone = 1;
  return SQLITE_OK;
}

/* Let other connections share p's copy, which p alone holds (it just
** loaded it, or created its table): register it, unless a copy registered
** meanwhile holds the same commit as its newest, which p then attaches to
** instead. */
void gpudsCopyPublish(GpudsTable *p){
  GpudsCopy *c = p->pCopy, *pFound = 0;
  GpudsLatchSlot *sl;
  GpudsMeta m;
  int64_t iSeq = 0;
  char *zFile;
  if( c==0 || c->zFile || c->nMark==0 || c->bDead || c->aMark[c->nMark-1].iStamp==0 ) return;
  zFile = copyFileOf(p);
  if( zFile==0 ) return;
  memset(&m, 0, sizeof(m));
  m.iId = c->iTableId;
  m.iFormat = c->iFormat;
  m.iGeneration = c->aMark[c->nMark-1].iGen;
  m.iStamp = c->aMark[c->nMark-1].iStamp;
  sl = gpudsLatchSlotNew();
  if( sl ) pFound = copyFind(p, zFile, &m, c, 1, &iSeq);
  if( pFound ){
    sqlite3_free(zFile);
    copyMove(p, pFound, iSeq, sl);
    return;
  }
  free(sl);
  pthread_mutex_lock(&registryMutex);
  pthread_mutex_lock(&c->mu);
  c->zFile = zFile;
  c->pNext = pRegistry;
  pRegistry = c;
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&registryMutex);
}

/* Table pTo reads the copy of pFrom, the private table of a load on
** another thread (bgload.c), now ended, from now on, at its one commit;
** pFrom has none, and pTo's own copy is left. */
int gpudsCopyHandOver(GpudsTable *pFrom, GpudsTable *pTo){
  GpudsCopy *c = pFrom->pCopy;
  GpudsPin *pPin;
  gpudsCopyDetach(pTo);
  pthread_mutex_lock(&c->mu);
  pPin = copyPinOf(c, pFrom);
  if( pPin ) pPin->p = pTo;
  pthread_mutex_unlock(&c->mu);
  pTo->pCopy = c;
  pTo->pSlot = pFrom->pSlot;
  pTo->nLatchRead = 0;
  pTo->bLatchWrite = 0;
  pTo->iSnapSeq = pFrom->iSnapSeq;
  pFrom->pCopy = 0;
  pFrom->pSlot = 0;
  return SQLITE_OK;
}

/* Table p was created (xCreate): its copy holds the empty table of t_meta
** 'id' p->iTableId at generation 0, stamp p->iStamp, and is published. */
void gpudsCopyCreated(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  pthread_mutex_lock(&c->mu);
  c->iTableId = p->iTableId;
  c->iFormat = p->iFormat;
  c->eText = gpudsTableText(p);
  copyMark(c, p->iGeneration, p->iStamp);
  p->iSnapSeq = c->iSeq;
  pthread_mutex_unlock(&c->mu);
  gpudsCopyPublish(p);
}

/* The table is dropped: no table attaches to its copy any more. */
void gpudsCopyDrop(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  if( c==0 ) return;
  pthread_mutex_lock(&c->mu);
  c->bDead = 1;
  pthread_mutex_unlock(&c->mu);
}

/* Table p no longer holds rows it read before (refresh): the versions its
** snapshot does not need may go. */
void gpudsCopyRepin(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  GpudsPin *pPin;
  if( c==0 || p->nCursor>0 || p->iSnapSeq==INT64_MAX ) return;
  p->bRepin = 0;
  pthread_mutex_lock(&c->mu);
  pPin = copyPinOf(c, p);
  if( pPin ) pPin->iPin = p->iSnapSeq;
  pthread_mutex_unlock(&c->mu);
  copyRelease(p);
}

/* Table p's connection begins to write (xBegin, holding the file's write
** lock, its snapshot the newest commit): wait until another table's
** rollback has taken its batches back.  0: p may write into its copy; 1:
** it may not (the copy holds an older commit as its newest, or batches no
** rollback took back), the caller loads a new one; or an error. */
int gpudsCopyWriteBegin(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  struct timespec t;
  int r = 0;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += COPY_WRITER_WAIT_S;
  pthread_mutex_lock(&c->mu);
  while( c->pWriter && c->pWriter!=p && !c->bDead ){
    if( pthread_cond_timedwait(&c->cv, &c->mu, &t)==ETIMEDOUT ){
      pthread_mutex_unlock(&c->mu);
      return gpudsVtabError(p, SQLITE_BUSY, "%s: another connection's rollback "
                            "of this table is not finishing", p->zName);
    }
  }
  if( c->bDead || c->nMark==0
   || (p->iSnapSeq!=INT64_MAX && p->iSnapSeq!=copyHead(c)) ){
    r = 1;
  }
  pthread_mutex_unlock(&c->mu);
  return r;
}

/* p's xSync wrote t_meta for its commit: generation iGen, stamp iStamp. */
void gpudsCopyPending(GpudsTable *p, int64_t iGen, int64_t iStamp){
  GpudsCopy *c = p->pCopy;
  pthread_mutex_lock(&c->mu);
  c->pWriter = p;
  c->bPend = 1;
  c->iPendGen = iGen;
  c->iPendStamp = iStamp;
  pthread_mutex_unlock(&c->mu);
}

/* p's transaction committed (xCommit; p->iGeneration and p->iStamp name
** its commit): the commit is the copy's head, p's snapshot.  1 if the copy
** cannot say where (out of memory): the caller loads p again. */
int gpudsCopyCommitted(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  GpudsMeta m;
  int64_t iSeq;
  /* nothing of p's: it wrote no batch (which sets iSnapSeq), and no t_meta
  ** (which sets pWriter; only p sets it to p) */
  if( p->iSnapSeq!=INT64_MAX && c->pWriter!=p ) return 0;
  memset(&m, 0, sizeof(m));
  m.iGeneration = p->iGeneration;
  m.iStamp = p->iStamp;
  pthread_mutex_lock(&c->mu);
  if( c->pWriter==p ){
    if( c->bPend ){
      copyPromote(c);
    }else{
      /* its batches were all taken back (ROLLBACK TO) and it committed
      ** nothing to this table: p's snapshot is the head still */
      c->pWriter = 0;
      pthread_cond_broadcast(&c->cv);
    }
  }
  iSeq = copyStateOf(c, &m);
  if( iSeq>=0 ){
    GpudsPin *pPin = copyPinOf(c, p);
    p->iSnapSeq = iSeq;
    if( pPin && p->nCursor==0 ) pPin->iPin = iSeq;
    else p->bRepin = 1;                 /* at its next refresh */
  }
  pthread_mutex_unlock(&c->mu);
  if( iSeq<0 ) return 1;
  copyRelease(p);
  return 0;
}

/* p's transaction rolled back (xRollback), its batches taken back unless
** bBroken (an undo ran out of memory: they stay, laid over the store for
** every other table, and the copy takes nobody new). */
void gpudsCopyRolledBack(GpudsTable *p, int bBroken){
  GpudsCopy *c = p->pCopy;
  pthread_mutex_lock(&c->mu);
  if( c->pWriter==p ){
    c->pWriter = 0;
    c->bPend = 0;
    pthread_cond_broadcast(&c->cv);
  }
  if( bBroken ) c->bDead = 1;
  if( p->iSnapSeq==INT64_MAX ) p->iSnapSeq = copyHead(c);
  pthread_mutex_unlock(&c->mu);
}

/* Tables attached to p's copy (gpuds_info). */
int gpudsCopyUsers(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int n;
  if( c==0 ) return 0;
  pthread_mutex_lock(&c->mu);
  n = c->nPin;
  pthread_mutex_unlock(&c->mu);
  return n;
}

/* Versions p's copy keeps (gpuds_info). */
int64_t gpudsCopyVersions(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int64_t n;
  if( c==0 ) return 0;
  n = __atomic_load_n(&c->nVersion, __ATOMIC_RELAXED);
  return n;
}
