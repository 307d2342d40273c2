/*
** gpuds.c -- entry point of the gpuds SQLite extension.
**
**   .load ./gpuds                     (sqlite3 shell)
**   SELECT load_extension('./gpuds'); (any client)
**
** registers the virtual-table modules gfsl (ordered, GPU-Friendly Skiplist)
** and gpuhash (GPU hash table), gpuds_view (a SELECT's aggregates computed
** on a table's column set), and the SQL functions of info.c: gpuds_info(),
** gpuds_check() and gpuds_version().  A second load into a connection that
** has the modules registers nothing (SQLite would refuse to replace the
** functions while a statement runs, and replacing them expires every
** prepared statement).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT1
#include <pthread.h>

/* Every module registration this copy of the extension holds, over all
** connections: each module's client data (GpudsModAux), listed until its
** xDestroy. */
static pthread_mutex_t gRegMutex = PTHREAD_MUTEX_INITIALIZER;
static GpudsModAux *gpReg = 0;

/* A module's xDestroy: its registration is gone (the connection closed, or
** the module was dropped or replaced). */
static void regGone(void *pArg){
  GpudsModAux *p = (GpudsModAux*)pArg, **pp;
  pthread_mutex_lock(&gRegMutex);
  for(pp=&gpReg; *pp; pp=&(*pp)->pNext){
    if( *pp==p ){ *pp = p->pNext; break; }
  }
  pthread_mutex_unlock(&gRegMutex);
  sqlite3_free(p);
}

/* True if both modules are registered in db by this copy of gpuds. */
static int regHas(sqlite3 *db){
  GpudsModAux *p;
  int mask = 0;
  pthread_mutex_lock(&gRegMutex);
  for(p=gpReg; p; p=p->pNext){
    if( p->db==db ) mask |= p->eKind==GPUDS_ORDERED ? 1 : 2;
  }
  pthread_mutex_unlock(&gRegMutex);
  return mask==3;
}

/* A new registration of a module of kind eKind in db, listed; NULL if out
** of memory. */
static GpudsModAux *regNew(sqlite3 *db, int eKind){
  GpudsModAux *p = sqlite3_malloc64(sizeof(*p));
  if( p==0 ) return 0;
  p->eKind = eKind;
  p->db = db;
  pthread_mutex_lock(&gRegMutex);
  p->pNext = gpReg;
  gpReg = p;
  pthread_mutex_unlock(&gRegMutex);
  return p;
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_gpuds_init(sqlite3 *db, char **pzErrMsg,
                       const sqlite3_api_routines *pApi){
  GpudsModAux *pGfsl, *pHash;
  char zErr[300];
  int rc;
  SQLITE_EXTENSION_INIT2(pApi);
  if( sqlite3_libversion_number()<3032000 ){
    *pzErrMsg = sqlite3_mprintf("gpuds needs SQLite 3.32.0 or later (this is %s)",
                                sqlite3_libversion());
    return SQLITE_ERROR;
  }
  if( gpudsConfigLoad(zErr, sizeof(zErr)) ){
    *pzErrMsg = sqlite3_mprintf("gpuds: %s", zErr);
    return SQLITE_ERROR;
  }
  if( regHas(db) ) return SQLITE_OK;
  pGfsl = regNew(db, GPUDS_ORDERED);
  pHash = regNew(db, GPUDS_HASH);
  if( pGfsl==0 || pHash==0 ){
    if( pGfsl ) regGone(pGfsl);
    if( pHash ) regGone(pHash);
    *pzErrMsg = sqlite3_mprintf("gpuds: out of memory");
    return SQLITE_NOMEM;
  }
  rc = gpudsRegisterModules(db, pGfsl, pHash, regGone);
  if( rc==SQLITE_OK ){
    rc = gpudsRegisterView(db);
    if( rc==SQLITE_OK ) rc = gpudsRegisterFunctions(db);
    if( rc ){
      *pzErrMsg = sqlite3_mprintf("gpuds: %s", sqlite3_errmsg(db));
      /* SQLite unloads a library whose load failed: nothing of it may stay
      ** registered (a module's xDestroy would be called into it at close) */
      gpudsUnregisterModules(db);
      sqlite3_create_module_v2(db, "gpuds_view", 0, 0, 0);
    }
  }else{
    *pzErrMsg = sqlite3_mprintf("gpuds: %s", sqlite3_errmsg(db));
  }
  return rc;
}
