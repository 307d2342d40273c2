/*
** version.c -- the history of a shared copy (copy.c) and the latch that
** orders its readers and its writer.
**
** A copy's store holds the newest state of the table.  Every batch applied
** to it (a write buffer's flush, GpudsFlush) stays linked into the copy's
** history with the values its keys held before, numbered in the order
** applied (iSeq).  A table reads the copy at a snapshot, the number of the
** last version it sees (GpudsTable.iSnapSeq): where a version with a
** higher number holds a key, the key's value at the snapshot is the old
** value of the oldest such version; elsewhere it is the store's.  So a
** reader in a transaction that began before a commit, or any reader while
** another connection's batches are not committed yet, lays the old values
** over what it reads from the store; the writer reads the store as it is
** (iSnapSeq INT64_MAX).  copy.c says which versions are committed and
** releases those no table's snapshot needs any more.
**
** The latch.  Readers of the store and of the history take it for reading
** around each call (a lookup, a page, a column query with its skipped
** keys), the writer for writing around each batch and its undo, and a
** release of old versions tries it for writing.  One connection writes a
** database file at a time (SQLite's write lock), so writers hardly ever
** meet; readers are many and must not slow one another down, so each table
** attached to the copy announces itself in a slot of its own (a cache
** line: no reader writes where another reads) and the writer waits until
** no slot is taken.  Dekker's order: a reader sets its slot, then looks
** for a writer; a writer sets bLatchWrite, then looks at the slots (both
** sequentially consistent), so at least one sees the other.  A reader that
** sees a writer clears its slot and waits for it.  Taken again by the same
** table it only counts (a table is used by one thread at a time), also
** inside its own hold for writing.  Never held across a call into SQLite,
** except by the writer (readers never wait for it there: they hold SQLite
** locks no writer waits for).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "gpuds_search.h"
#include <string.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>

/* One table's announcement that it reads the copy: a cache line of its
** own. */
struct GpudsLatchSlot {
  int nIn;                    /* atomic: 1 while its table reads */
  int bActive;                /* atomic: its table is in a statement or
                              ** holds rows (gpudsSnapActive) */
  int bLost;                  /* atomic: its pin was let go while it was
                              ** idle (gpudsSnapBreak) */
  GpudsLatchSlot *pNext;      /* the copy's list (muLatch) */
  char aPad[64 - 3*sizeof(int) - sizeof(void*)];
};

/* A writer waiting for readers yields this many times, then sleeps
** LATCH_NAP_NS between looks (a reader may hold the latch for a column
** set's build). */
#define LATCH_SPINS  64
#define LATCH_NAP_NS 20000

/* A slot for a table about to join a copy's latch, or NULL (no memory). */
GpudsLatchSlot *gpudsLatchSlotNew(void){
  GpudsLatchSlot *s = 0;
  if( posix_memalign((void**)&s, 64, sizeof(*s)) ) return 0;
  memset(s, 0, sizeof(*s));
  return s;
}

/* Table p joins copy c's latch with slot s (gpudsLatchSlotNew). */
void gpudsLatchJoin(GpudsCopy *c, GpudsTable *p, GpudsLatchSlot *s){
  pthread_mutex_lock(&c->muLatch);
  s->pNext = c->pSlots;
  c->pSlots = s;
  pthread_mutex_unlock(&c->muLatch);
  p->pSlot = s;
  p->nLatchRead = 0;
  p->bLatchWrite = 0;
}

/* Take table p's slot out of copy c's latch (p holds nothing). */
void gpudsLatchLeave(GpudsCopy *c, GpudsTable *p){
  GpudsLatchSlot **pp;
  if( p->pSlot==0 ) return;
  pthread_mutex_lock(&c->muLatch);
  for(pp=&c->pSlots; *pp; pp=&(*pp)->pNext){
    if( *pp==p->pSlot ){ *pp = p->pSlot->pNext; break; }
  }
  pthread_mutex_unlock(&c->muLatch);
  free(p->pSlot);
  p->pSlot = 0;
}

/* Take the latch of p's copy for reading (see the top). */
void gpudsLatchRead(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  GpudsLatchSlot *s = p->pSlot;
  if( p->nLatchRead++ > 0 || p->bLatchWrite || s==0 ) return;
  for(;;){
    __atomic_store_n(&s->nIn, 1, __ATOMIC_SEQ_CST);
    if( !__atomic_load_n(&c->bLatchWrite, __ATOMIC_SEQ_CST) ) return;
    __atomic_store_n(&s->nIn, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&c->muLatch);
    while( __atomic_load_n(&c->bLatchWrite, __ATOMIC_SEQ_CST) ){
      pthread_cond_wait(&c->cvLatch, &c->muLatch);
    }
    pthread_mutex_unlock(&c->muLatch);
  }
}

/* Let go of a hold for reading. */
void gpudsLatchReadEnd(GpudsTable *p){
  if( --p->nLatchRead > 0 || p->bLatchWrite || p->pSlot==0 ) return;
  __atomic_store_n(&p->pSlot->nIn, 0, __ATOMIC_RELEASE);
}

/* The first slot of copy c other than p's that a reader holds, or NULL
** (muLatch held). */
static GpudsLatchSlot *latchBusy(GpudsCopy *c, GpudsTable *p){
  GpudsLatchSlot *s;
  for(s=c->pSlots; s; s=s->pNext){
    if( s!=p->pSlot && __atomic_load_n(&s->nIn, __ATOMIC_SEQ_CST) ) return s;
  }
  return 0;
}

/* Let readers go on after bLatchWrite was cleared (muLatch held). */
static void latchOpen(GpudsCopy *c){
  __atomic_store_n(&c->bLatchWrite, 0, __ATOMIC_SEQ_CST);
  pthread_cond_broadcast(&c->cvLatch);
}

/* Take the latch of p's copy for writing: wait for another writer, then
** for every reader but p itself (which may hold it for reading). */
void gpudsLatchWrite(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int nSpin = 0;
  pthread_mutex_lock(&c->muLatch);
  while( __atomic_load_n(&c->bLatchWrite, __ATOMIC_SEQ_CST) ){
    pthread_cond_wait(&c->cvLatch, &c->muLatch);
  }
  __atomic_store_n(&c->bLatchWrite, 1, __ATOMIC_SEQ_CST);
  c->nLatchWrites++;
  while( latchBusy(c, p) ){
    pthread_mutex_unlock(&c->muLatch);
    if( nSpin++ < LATCH_SPINS ){
      sched_yield();
    }else{
      struct timespec t = { 0, LATCH_NAP_NS };
      nanosleep(&t, 0);
    }
    pthread_mutex_lock(&c->muLatch);
  }
  pthread_mutex_unlock(&c->muLatch);
  p->bLatchWrite = 1;
}

/* Take the latch for writing if that needs no wait: 1 if taken. */
int gpudsLatchTryWrite(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int bOk = 0;
  pthread_mutex_lock(&c->muLatch);
  if( !__atomic_load_n(&c->bLatchWrite, __ATOMIC_SEQ_CST) ){
    __atomic_store_n(&c->bLatchWrite, 1, __ATOMIC_SEQ_CST);
    if( latchBusy(c, p) ) latchOpen(c);
    else{ bOk = 1; c->nLatchWrites++; }
  }
  pthread_mutex_unlock(&c->muLatch);
  if( bOk ) p->bLatchWrite = 1;
  return bOk;
}

/* Let go of a hold for writing. */
void gpudsLatchWriteEnd(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  p->bLatchWrite = 0;
  /* a hold for reading taken inside it goes on as an ordinary one */
  if( p->nLatchRead>0 ) __atomic_store_n(&p->pSlot->nIn, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&c->muLatch);
  latchOpen(c);
  pthread_mutex_unlock(&c->muLatch);
}

/* ------------------------------------------------------------ idle pins
** A table idle between statements (no cursor, no row held) needs its
** snapshot's versions only if its next statement is in the same read
** transaction, which nothing tells: copy.c lets its pin go when the
** versions grow big, and the table, told so, finds its snapshot again at
** its next refresh (loading a copy of its own if the versions are gone).
** Dekker's order again: the table sets bActive, then looks at bLost; the
** releaser sets bLost, then looks at bActive. */

/* Table p begins a statement (its refresh): 1 if its pin was let go
** meanwhile (its snapshot must be found again), else 0. */
int gpudsSnapActive(GpudsTable *p){
  GpudsLatchSlot *s = p->pSlot;
  if( s==0 ) return 0;
  __atomic_store_n(&s->bActive, 1, __ATOMIC_SEQ_CST);
  if( !__atomic_load_n(&s->bLost, __ATOMIC_SEQ_CST) ) return 0;
  __atomic_store_n(&s->bLost, 0, __ATOMIC_SEQ_CST);
  return 1;
}

/* Table p holds no row any more (its cursors closed). */
void gpudsSnapIdle(GpudsTable *p){
  if( p->pSlot ) __atomic_store_n(&p->pSlot->bActive, 0, __ATOMIC_RELEASE);
}

/* Let table pOther's pin go if it is idle (the caller holds the latch for
** writing and the copy's mu): 1 if let go. */
int gpudsSnapBreak(GpudsTable *pOther){
  GpudsLatchSlot *s = pOther->pSlot;
  if( s==0 || __atomic_load_n(&s->bActive, __ATOMIC_SEQ_CST) ) return 0;
  __atomic_store_n(&s->bLost, 1, __ATOMIC_SEQ_CST);
  return !__atomic_load_n(&s->bActive, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------ the history */

/* Free a flush's arrays and the flush (not the rows it names). */
void gpudsFlushFree(GpudsFlush *f){
  if( f ){
    free(f->aKey); free(f->aNew);
    free(f->aFound); free(f->aOld);
    free(f->aOrig);
    sqlite3_free(f);
  }
}

/* Free versions pList, pList->pNext... released from a copy: each with the
** rows its keys held before it, which no snapshot reads any more. */
void gpudsVersionFreeList(GpudsFlush *pList){
  while( pList ){
    GpudsFlush *f = pList;
    size_t i;
    pList = f->pNext;
    for(i=0; f->aOld && i<f->n; i++){
      if( f->aFound[i] ) gpudsRowFreeHandle(f->aOld[i]);
    }
    gpudsFlushFree(f);
  }
}

/* Link flush f, just applied to p's copy by p's transaction, into the
** history (the latch held for writing): p is the copy's writer and reads
** the store as it is from now on. */
void gpudsVersionAdd(GpudsTable *p, GpudsFlush *f){
  GpudsCopy *c = p->pCopy;
  size_t i;
  int64_t d = 0;
  for(i=0; i<f->n; i++) d += (f->aNew[i]!=0) - (f->aFound[i]!=0);
  f->nDelta = d;
  f->pNext = 0;
  f->pPrev = c->pLast;
  if( c->pLast ) c->pLast->pNext = f; else c->pFirst = f;
  c->pLast = f;
  __atomic_add_fetch(&c->nVersion, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&c->nVersionKeys, (int64_t)f->n, __ATOMIC_RELAXED);
  pthread_mutex_lock(&c->mu);
  f->iSeq = ++c->iSeq;
  c->pWriter = p;
  pthread_mutex_unlock(&c->mu);
  p->iSnapSeq = INT64_MAX;
}

/* Unlink flush f, the newest version, taken back (the latch held for
** writing). */
void gpudsVersionRemove(GpudsTable *p, GpudsFlush *f){
  GpudsCopy *c = p->pCopy;
  if( f->pPrev ) f->pPrev->pNext = f->pNext; else c->pFirst = f->pNext;
  if( f->pNext ) f->pNext->pPrev = f->pPrev; else c->pLast = f->pPrev;
  f->pPrev = f->pNext = 0;
  __atomic_sub_fetch(&c->nVersion, 1, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&c->nVersionKeys, (int64_t)f->n, __ATOMIC_RELAXED);
}

/* True if p reads versions of its copy newer than its snapshot: their old
** values must be laid over the store.  The latch held for reading. */
int gpudsVersionNewer(const GpudsTable *p){
  const GpudsFlush *f = p->pCopy->pLast;
  return f!=0 && f->iSeq>p->iSnapSeq;
}

/* First index of f's ascending keys that is >= k. */
static size_t flushLower(const GpudsFlush *f, int64_t k){
  return (size_t)gpudsLowerBound(f->aKey, (int64_t)f->n, k);
}

/* Index of k in the ascending keys of f, or -1. */
static int64_t flushFind(const GpudsFlush *f, int64_t k){
  size_t i = flushLower(f, k);
  return (i<f->n && f->aKey[i]==k) ? (int64_t)i : -1;
}

/* Keys aKey[0..n) as p's snapshot sees them, given aFound/aVal as the
** store answered: a key a newer version holds takes the value it had
** before the oldest such version.  The latch held for reading. */
void gpudsVersionLookup(const GpudsTable *p, size_t n, const int64_t *aKey,
                        uint8_t *aFound, uint64_t *aVal){
  const GpudsFlush *f;
  for(f=p->pCopy->pLast; f && f->iSeq>p->iSnapSeq; f=f->pPrev){
    size_t i;
    for(i=0; i<n; i++){
      int64_t j = flushFind(f, aKey[i]);
      if( j<0 ) continue;
      aFound[i] = f->aFound[j];
      aVal[i] = f->aFound[j] && f->aOld ? f->aOld[j] : 0;
    }
  }
}

/* Order of GpudsVerEnt: by key, then the older version first. */
static int verEntCmp(const void *a, const void *b){
  const GpudsVerEnt *x = (const GpudsVerEnt*)a, *y = (const GpudsVerEnt*)b;
  if( x->k!=y->k ) return x->k<y->k ? -1 : 1;
  return x->iSeq<y->iSeq ? -1 : x->iSeq>y->iSeq;
}

/* The keys in [lo, hi] that versions newer than p's snapshot hold, each
** with its value at the snapshot (found or not): *pa (malloc()'d, NULL if
** none), *pn of them, ascending and distinct.  The latch held for
** reading. */
int gpudsVersionRange(const GpudsTable *p, int64_t lo, int64_t hi,
                      GpudsVerEnt **pa, size_t *pn){
  const GpudsFlush *f;
  GpudsVerEnt *a = 0;
  size_t n = 0, nAlloc = 0, i, j;
  *pa = 0; *pn = 0;
  if( lo>hi ) return SQLITE_OK;
  for(f=p->pCopy->pLast; f && f->iSeq>p->iSnapSeq; f=f->pPrev){
    size_t i0 = flushLower(f, lo), i1 = i0;
    while( i1<f->n && f->aKey[i1]<=hi ) i1++;
    if( i1==i0 ) continue;
    if( n + (i1-i0) > nAlloc ){
      size_t nNew = (n + (i1-i0))*2;
      GpudsVerEnt *aNew = realloc(a, nNew*sizeof(*a));
      if( aNew==0 ){ free(a); return SQLITE_NOMEM; }
      a = aNew; nAlloc = nNew;
    }
    for(i=i0; i<i1; i++){
      a[n].k = f->aKey[i];
      a[n].bFound = f->aFound[i];
      a[n].v = f->aFound[i] && f->aOld ? f->aOld[i] : 0;
      a[n].iSeq = f->iSeq;
      n++;
    }
  }
  if( n>1 ) qsort(a, n, sizeof(*a), verEntCmp);
  for(i=0, j=0; i<n; i++){          /* the oldest version of each key */
    if( j==0 || a[j-1].k!=a[i].k ) a[j++] = a[i];
  }
  *pa = a; *pn = j;
  return SQLITE_OK;
}

/* Every key of the versions newer than p's snapshot, appended to *pa
** (malloc()'d, grown; *pn keys so far, in no order, repeats possible).
** The latch held for reading. */
int gpudsVersionKeys(const GpudsTable *p, int64_t **pa, int64_t *pn){
  const GpudsFlush *f;
  int64_t nAll = *pn;
  for(f=p->pCopy->pLast; f && f->iSeq>p->iSnapSeq; f=f->pPrev) nAll += (int64_t)f->n;
  if( nAll>*pn ){
    int64_t *a = realloc(*pa, (size_t)nAll*8);
    if( a==0 ) return SQLITE_NOMEM;
    *pa = a;
    for(f=p->pCopy->pLast; f && f->iSeq>p->iSnapSeq; f=f->pPrev){
      memcpy(&a[*pn], f->aKey, f->n*8);
      *pn += (int64_t)f->n;
    }
  }
  return SQLITE_OK;
}

/* The keys the store holds less those p's snapshot holds: what the
** versions newer than it added.  The latch held for reading. */
int64_t gpudsVersionDelta(const GpudsTable *p){
  const GpudsFlush *f;
  int64_t d = 0;
  for(f=p->pCopy->pLast; f && f->iSeq>p->iSnapSeq; f=f->pPrev) d += f->nDelta;
  return d;
}

/* ------------------------------------------------------------ upgrades */

/* Table p, which may hold the latch for reading (nested), takes it for
** writing (let go with gpudsLatchWriteEnd, after which its holds for
** reading go on): its slot is cleared first, so that a writer or another
** table doing the same is never waited for while it waits for p.  So
** another writer may come in between: 1 if one did (the store may have
** changed since p's hold for reading began), else 0. */
int gpudsLatchUpgrade(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int64_t n0;
  pthread_mutex_lock(&c->muLatch);
  n0 = c->nLatchWrites;
  pthread_mutex_unlock(&c->muLatch);
  if( p->nLatchRead>0 && p->pSlot && !p->bLatchWrite ){
    __atomic_store_n(&p->pSlot->nIn, 0, __ATOMIC_SEQ_CST);
  }
  gpudsLatchWrite(p);
  return c->nLatchWrites!=n0+1;       /* (no other writer now: stable) */
}

/* Take copy p's muCols (column set builds and text passes), which its
** holder may keep while it waits for the latch (a move of the store to the
** host, gpudsLatchUpgrade): so a table that holds the latch for reading
** lets it go while it waits, and takes it again once it has muCols.  The
** caller checks again what it learnt before (the set may be gone). */
void gpudsColsLock(GpudsTable *p){
  GpudsCopy *c = p->pCopy;
  int bSlot;
  if( pthread_mutex_trylock(&c->muCols)==0 ) return;
  bSlot = p->nLatchRead>0 && p->pSlot && !p->bLatchWrite;
  if( bSlot ) __atomic_store_n(&p->pSlot->nIn, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&c->muCols);
  if( bSlot ){
    int n = p->nLatchRead;
    p->nLatchRead = 0;
    gpudsLatchRead(p);
    p->nLatchRead = n;
  }
}

/* Let copy p's muCols go. */
void gpudsColsUnlock(GpudsTable *p){
  pthread_mutex_unlock(&p->pCopy->muCols);
}
