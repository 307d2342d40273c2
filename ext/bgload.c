/*
** bgload.c -- the load of a table (loader.c) on a thread of its own, so
** that the first statements after opening need not wait for it.
**
** The thread opens its own read-only connection to the database file,
** begins a read transaction, reads t_meta and loads the runs of that
** snapshot with gpudsShadowLoad into a private table object: a copy (its
** store, host mirror and key filter) that nothing else sees; then, its read
** transaction over, the table's column set where it would be on the GPU
** (colbuild.c, GPUDS_COLUMNS_ON_LOAD).  The connection that started it
** takes the copy (gpudsBuildFinish) only if its own snapshot's t_meta
** names the same commit (generation, id, stamp, format) and, from format
** 5, the digests of what the build read are that t_meta's; otherwise they
** are dropped and the caller loads again.  A build that failed is dropped
** too: the caller's own load then finds and reports the same damage, with
** the same message, as it always has.
**
** Where the database is not in WAL mode, a read transaction held for the
** whole load would make every writer wait (or fail with SQLITE_BUSY), this
** connection's own writes to other tables included.  There the build of a
** format-5 table (GPUDS_BUILD_UNLOCKED) opens the file with the URI
** parameter immutable=1: SQLite then takes no lock at all.  What it reads
** while a writer commits may be torn (pages of two versions), or of a
** later commit; the digests in t_meta cover every chunk's id, count,
** first key and checksum, and every chunk is checked against its
** checksum, so such a read fails or has digests other than the installing
** connection's snapshot, and is not installed.
**
** Thread safety: the private table is touched by the thread alone until it
** ends (pthread_join orders its writes before the installer's reads); the
** backend promises that distinct stores may be used from distinct threads
** (gpuds_backend.h); rows come from the load's own arenas (arena.c).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "runfmt.h"
#include <string.h>
#include <stdlib.h>
#include <pthread.h>

struct GpudsBuild {
  GpudsTable t;           /* private: its db is the thread's connection */
  char *zFile;            /* the database file */
  char *zVfs;             /* its VFS, or NULL for the default */
  int bHold;              /* GPUDS_LAZY_LOAD=hold: wait for bGo after the snapshot */
  int bUnlocked;          /* read without locks (GPUDS_BUILD_UNLOCKED) */
  pthread_t tid;
  pthread_mutex_t mu;     /* guards the fields below */
  pthread_cond_t cv;
  int bGo;                /* a statement needs the build now */
  int bCancel;            /* the table goes: stop as soon as possible */
  int bDone;              /* the thread has ended */
  int rc;                 /* its outcome */
  GpudsMeta meta;         /* what its snapshot's t_meta says */
};

/* GPUDS_LAZY_LOAD=hold: wait until a statement needs the build (or the
** table goes). */
static void buildHold(GpudsBuild *b){
  pthread_mutex_lock(&b->mu);
  while( !b->bGo && !b->bCancel ) pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
}

/* True if database zDb of db is in WAL mode, where a held snapshot blocks
** no writer (0 where the mode cannot be read: the caller then takes the
** path that needs no WAL). */
int gpudsDbIsWal(sqlite3 *db, const char *zDb){
  char *zSql = sqlite3_mprintf("PRAGMA %Q.journal_mode", zDb);
  int bWal = gpudsPragmaIs(db, zSql, "wal");
  sqlite3_free(zSql);
  return bWal;
}

/* After the load, the column set of a table with non-key
** columns where it would be on the GPU (GPUDS_COLUMNS_ON_LOAD: =1 the
** host's too, =0 never; never with GPUDS_COLUMN_PLANS=off): the first
** column query after opening then finds it built, as a transaction finds
** the store.  A host column set is left to that query, since it would add
** its bytes to the process of every user of the table.  It is an extra:
** where it cannot be built (memory), the store is installed without it and
** the first column query builds it, or reports why it cannot, as before. */
static void buildColumns(GpudsBuild *b){
  GpudsTable *t = &b->t;
  int eWhen = gpudsConfig()->eColsOnLoad;
  int bCancel;
  if( t->nCol<2 || eWhen==GPUDS_COLSLOAD_OFF || !t->bLoaded ) return;
  if( eWhen==GPUDS_COLSLOAD_AUTO && strcmp(gpudsColsBackend(t), "host")==0 ) return;
  pthread_mutex_lock(&b->mu);
  bCancel = b->bCancel;
  pthread_mutex_unlock(&b->mu);
  if( bCancel ) return;
  if( gpudsColsBuild(t)!=SQLITE_OK ){
    sqlite3_free(t->base.zErrMsg);
    t->base.zErrMsg = 0;
  }
}

/* The URI of file zFile opened with immutable=1 (sqlite3_malloc'd): the
** characters a URI gives a meaning to escaped, and an absolute path behind
** an empty authority (a path that begins with "//" is not one). */
static char *buildUri(const char *zFile){
  sqlite3_str *s = sqlite3_str_new(0);
  const char *z;
  sqlite3_str_appendall(s, zFile[0]=='/' ? "file://" : "file:");
  for(z=zFile; *z; z++){
    if( *z=='%' || *z=='?' || *z=='#' ) sqlite3_str_appendf(s, "%%%02x", (unsigned char)*z);
    else sqlite3_str_appendchar(s, 1, *z);
  }
  sqlite3_str_appendall(s, "?immutable=1");
  return sqlite3_str_finish(s);
}

/* The thread: snapshot, load, end the read transaction, the column set,
** report.  Held (tests), it waits after taking its snapshot where that
** holds no lock that blocks a writer (WAL, or a build without locks),
** before it in others. */
static void *buildMain(void *pArg){
  GpudsBuild *b = (GpudsBuild*)pArg;
  GpudsTable *t = &b->t;
  sqlite3 *db = 0;
  int rc;
  if( b->bUnlocked ){
    char *zUri = buildUri(b->zFile);
    rc = zUri ? sqlite3_open_v2(zUri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, b->zVfs)
              : SQLITE_NOMEM;
    sqlite3_free(zUri);
  }else{
    rc = sqlite3_open_v2(b->zFile, &db, SQLITE_OPEN_READONLY, b->zVfs);
  }
  pthread_mutex_lock(&b->mu);
  t->db = db;                 /* gpudsBuildCancel may interrupt it now */
  if( b->bCancel ) rc = SQLITE_INTERRUPT;
  pthread_mutex_unlock(&b->mu);
  if( rc==SQLITE_OK && b->bHold && !b->bUnlocked && !gpudsDbIsWal(db, "main") ) buildHold(b);
  if( rc==SQLITE_OK ) rc = sqlite3_exec(db, "BEGIN", 0, 0, 0);
  /* Any doubt about t_meta is an error: the installer's own load then
  ** judges the table. */
  if( rc==SQLITE_OK ) rc = gpudsMetaRead(t, &b->meta);
  if( rc==SQLITE_OK && b->bHold ) buildHold(b);
  if( rc==SQLITE_OK && !b->bCancel ) rc = gpudsShadowLoad(t, &b->meta);
  pthread_mutex_lock(&b->mu);
  t->db = 0;
  pthread_mutex_unlock(&b->mu);
  if( db ){
    sqlite3_exec(db, "COMMIT", 0, 0, 0);  /* a read: nothing to fail but the lock */
    sqlite3_close_v2(db);
  }
  if( rc==SQLITE_OK ) buildColumns(b);
  pthread_mutex_lock(&b->mu);
  b->rc = rc;
  b->bDone = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  return 0;
}

/* Free a build whose thread has ended, and whatever it built. */
static void buildFree(GpudsBuild *b){
  GpudsTable *t = &b->t;
  gpudsCopyDetach(t);             /* the copy goes with it, if it has one */
  sqlite3_free(t->zName);
  sqlite3_free(t->base.zErrMsg);
  sqlite3_free(b->zFile);
  sqlite3_free(b->zVfs);
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  sqlite3_free(b);
}

/* Start building table p's store on a thread, reading in a read
** transaction of its own (eHow GPUDS_BUILD_SNAPSHOT) or without locks
** (GPUDS_BUILD_UNLOCKED).  SQLITE_OK with *ppBuild set, or an error
** (nothing started, no message: the caller loads as before) where the
** database has no file another connection could open (":memory:", a temp
** database), SQLite is not thread-safe, or a thread or memory cannot be
** had. */
int gpudsBuildStart(GpudsTable *p, int eHow, GpudsBuild **ppBuild){
  const char *zFile = sqlite3_db_filename(p->db, p->zDb);
  sqlite3_vfs *pVfs = 0;
  GpudsBuild *b;
  *ppBuild = 0;
  if( zFile==0 || zFile[0]==0 || !sqlite3_threadsafe() ) return SQLITE_MISUSE;
  if( sqlite3_file_control(p->db, p->zDb, SQLITE_FCNTL_VFS_POINTER, &pVfs)!=SQLITE_OK ) pVfs = 0;
  b = sqlite3_malloc64(sizeof(*b));
  if( b==0 ) return SQLITE_NOMEM;
  memset(b, 0, sizeof(*b));
  b->zFile = sqlite3_mprintf("%s", zFile);
  b->zVfs = pVfs ? sqlite3_mprintf("%s", pVfs->zName) : 0;
  b->t.zName = sqlite3_mprintf("%s", p->zName);
  b->t.zDb = (char*)"main";      /* the file is the thread's main database */
  b->t.eKind = p->eKind;
  b->t.nCol = p->nCol;
  b->t.iFormat = p->iFormat;
  b->t.eEnc = p->eEnc;
  b->bHold = gpudsConfig()->eLazyLoad==GPUDS_LAZY_HOLD;
  b->bUnlocked = eHow==GPUDS_BUILD_UNLOCKED;
  if( !b->zFile || (pVfs && !b->zVfs) || !b->t.zName ){
    sqlite3_free(b->zFile); sqlite3_free(b->zVfs); sqlite3_free(b->t.zName);
    sqlite3_free(b);
    return SQLITE_NOMEM;
  }
  if( pthread_mutex_init(&b->mu, 0) ){
    sqlite3_free(b->zFile); sqlite3_free(b->zVfs); sqlite3_free(b->t.zName);
    sqlite3_free(b);
    return SQLITE_NOMEM;
  }
  if( pthread_cond_init(&b->cv, 0) ){
    pthread_mutex_destroy(&b->mu);
    sqlite3_free(b->zFile); sqlite3_free(b->zVfs); sqlite3_free(b->t.zName);
    sqlite3_free(b);
    return SQLITE_NOMEM;
  }
  if( pthread_create(&b->tid, 0, buildMain, b) ){
    buildFree(b);
    return SQLITE_NOMEM;
  }
  *ppBuild = b;
  return SQLITE_OK;
}

/* True once the build's thread has ended (without waiting for it). */
int gpudsBuildDone(GpudsBuild *b){
  int bDone;
  pthread_mutex_lock(&b->mu);
  bDone = b->bDone;
  pthread_mutex_unlock(&b->mu);
  return bDone;
}

/* True if build b read the commit t_meta m describes, as far as t_meta
** can tell: the same generation, id, stamp and format, and (format 5) the
** entries and digests of the chunks it read are m's. */
static int buildMatches(const GpudsBuild *b, const GpudsMeta *m){
  const GpudsTable *t = &b->t;
  const GpudsMeta *s = &b->meta;
  if( s->iGeneration!=m->iGeneration || s->iId!=m->iId || s->iStamp!=m->iStamp
   || s->iFormat!=m->iFormat ){
    return 0;
  }
  if( m->iFormat<SHADOW_FORMAT_DIGEST ) return 1;
  return t->nLoadEntries==m->nEntries && t->uLoadDigest==m->uDigest
      && t->uLoadLayout==m->uLayout;
}

/* Wait for the build (releasing a held one) and free it.  If it succeeded
** and read the commit that t_meta m (the caller's snapshot) describes in
** p's format (buildMatches), p reads its copy from now on (leaving its
** own) and *pbInstalled is set.  Returns the build's error, if
** it failed (its message dropped: the caller's own load reports it), else
** SQLITE_OK. */
int gpudsBuildFinish(GpudsTable *p, GpudsBuild *b, const GpudsMeta *m, int *pbInstalled){
  GpudsTable *t = &b->t;
  int rc;
  *pbInstalled = 0;
  pthread_mutex_lock(&b->mu);
  b->bGo = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  pthread_join(b->tid, 0);
  rc = b->rc;
  if( rc==SQLITE_OK && t->bLoaded && m->iFormat==p->iFormat && buildMatches(b, m)
   && gpudsCopyHandOver(t, p)==SQLITE_OK ){
    /* p reads the build's copy (with the column set built with the store)
    ** from now on; its own is left */
    p->bMaxValid = 0;
    p->iGeneration = t->iGeneration;
    p->nLoadRows = t->nLoadRows;
    p->nLoadEntries = t->nLoadEntries;
    p->uLoadDigest = t->uLoadDigest;
    p->uLoadLayout = t->uLoadLayout;
    p->bLoaded = 1;
    *pbInstalled = 1;
  }
  buildFree(b);
  return rc;
}

/* The table goes (or is dropped): stop the build (interrupting its reads)
** and free it. */
void gpudsBuildCancel(GpudsBuild *b){
  pthread_mutex_lock(&b->mu);
  b->bCancel = 1;
  if( b->t.db ) sqlite3_interrupt(b->t.db);
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  pthread_join(b->tid, 0);
  buildFree(b);
}
