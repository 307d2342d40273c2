/*
** stmt.c -- statements run on the table's connection: printf-formatted SQL
** prepared or run with its error in the table's message, and the one value
** of a PRAGMA read as one of a list of names.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <stdarg.h>

/* Run (ppStmt==0) or prepare a printf-formatted SQL statement; on error the
** table's message says why. */
static int stmtSql(GpudsTable *p, sqlite3_stmt **ppStmt, const char *zFmt, va_list ap){
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
int gpudsRunExec(GpudsTable *p, const char *zFmt, ...){
  va_list ap;
  int rc;
  va_start(ap, zFmt);
  rc = stmtSql(p, 0, zFmt, ap);
  va_end(ap);
  return rc;
}

/* Prepare a printf-formatted statement (*ppStmt NULL on error). */
int gpudsRunPrepare(GpudsTable *p, sqlite3_stmt **ppStmt, const char *zFmt, ...){
  va_list ap;
  int rc;
  va_start(ap, zFmt);
  rc = stmtSql(p, ppStmt, zFmt, ap);
  va_end(ap);
  return rc;
}

/* The index i of the text azValue[i] (0 <= i < nValue) that the one value
** PRAGMA statement zSql (run on db) returns, compared as SQLite compares
** names (any case); -1 where it is none of them or cannot be read. */
int gpudsPragmaPick(sqlite3 *db, const char *zSql, const char *const *azValue,
                    int nValue){
  sqlite3_stmt *pStmt = 0;
  int iPick = -1, i;
  if( zSql && sqlite3_prepare_v2(db, zSql, -1, &pStmt, 0)==SQLITE_OK
   && sqlite3_step(pStmt)==SQLITE_ROW ){
    const char *z = (const char*)sqlite3_column_text(pStmt, 0);
    for(i=0; z && iPick<0 && i<nValue; i++){
      if( sqlite3_stricmp(z, azValue[i])==0 ) iPick = i;
    }
  }
  sqlite3_finalize(pStmt);
  return iPick;
}

/* True if the one value PRAGMA statement zSql (run on db) returns is the
** text zValue (gpudsPragmaPick). */
int gpudsPragmaIs(sqlite3 *db, const char *zSql, const char *zValue){
  return gpudsPragmaPick(db, zSql, &zValue, 1)==0;
}
