/*
** error.c -- the one way every file of ext/ reports an error: the message
** goes to the table (its base.zErrMsg), where vtab.c hands it to SQLite at
** the end of the method.  The bottom layer: it calls nothing of ext/.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <stdarg.h>

/* Set the error message of virtual table pVtab (a table's base, or a
** view's) from a printf-style format; returns rc. */
int gpudsErrorV(sqlite3_vtab *pVtab, int rc, const char *zFmt, va_list ap){
  sqlite3_free(pVtab->zErrMsg);
  pVtab->zErrMsg = sqlite3_vmprintf(zFmt, ap);
  return rc;
}

/* Set p's error message from a printf-style format; returns rc. */
int gpudsVtabError(GpudsTable *p, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  rc = gpudsErrorV(&p->base, rc, zFmt, ap);
  va_end(ap);
  return rc;
}
