/*
** gpuds_rc.h -- the result codes every layer of gpuds returns: SQLite's
** values, so that ext/ hands a store's or a utility's code to SQLite as it
** is (GPUDS_NOMEM == SQLITE_NOMEM).
*/
#ifndef GPUDS_RC_H
#define GPUDS_RC_H

#define GPUDS_OK      0
#define GPUDS_ERROR   1   /* SQLITE_ERROR */
#define GPUDS_NOMEM   7   /* SQLITE_NOMEM: host or device memory exhausted */
#define GPUDS_MISUSE 21   /* SQLITE_MISUSE: call not valid for this store */

#endif /* GPUDS_RC_H */
