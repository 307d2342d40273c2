/*
** error.c -- the one way every file of ext/ reports an error: the message
** goes to the table (its base.zErrMsg), where vtab.c hands it to SQLite at
** the end of the method.  The bottom layer: it calls nothing of ext/.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <stdarg.h>

/* Set p's error message from a printf-style format; returns rc. */
int gpudsVtabError(GpudsTable *p, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  sqlite3_free(p->base.zErrMsg);
  p->base.zErrMsg = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  return rc;
}
