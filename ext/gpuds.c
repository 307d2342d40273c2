/*
** gpuds.c -- entry point of the gpuds SQLite extension.
**
**   .load ./gpuds                     (sqlite3 shell)
**   SELECT load_extension('./gpuds'); (any client)
**
** registers the virtual-table modules gfsl (ordered, GPU-Friendly Skiplist)
** and gpuhash (GPU hash table), and the SQL functions of info.c:
** gpuds_info(), gpuds_check() and gpuds_version().
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT1

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_gpuds_init(sqlite3 *db, char **pzErrMsg,
                       const sqlite3_api_routines *pApi){
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
  rc = gpudsRegisterModules(db);
  if( rc==SQLITE_OK ) rc = gpudsRegisterFunctions(db);
  return rc;
}
