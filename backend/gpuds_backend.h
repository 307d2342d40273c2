/*
** gpuds_backend.h -- the one interface between the SQLite side (ext/) and
** the storage structures (the CUDA kernels in kernels/, the host fallback in
** backend/).
**
** A "store" maps 64-bit signed keys (the full range, INT64_MIN..INT64_MAX:
** no key value is reserved) to one 64-bit word each.  The SQLite side puts a
** row handle in the word; the store never interprets it.
**
** Two kinds of store exist:
**   GPUDS_ORDERED  a skiplist / B+tree: batches, point lookups and ordered
**                  range scans in both directions (gfsl tables).
**   GPUDS_HASH     a hash table: batches and point lookups; its scan visits
**                  every entry in no particular order (gpuhash tables).
**
** Every function returns GPUDS_OK or an error code whose value is the SQLite
** result code of the same name (GPUDS_NOMEM == SQLITE_NOMEM), with a message
** available from xErrmsg().  A function that fails leaves the store exactly as
** it was before the call: no half-applied batch.
**
** Nothing here is thread-safe; the caller serialises calls on one store.
** Distinct stores may be used from distinct threads.
*/
#ifndef GPUDS_BACKEND_H
#define GPUDS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUDS_OK      0
#define GPUDS_ERROR   1   /* SQLITE_ERROR */
#define GPUDS_NOMEM   7   /* SQLITE_NOMEM: host or device memory exhausted */
#define GPUDS_MISUSE 21   /* SQLITE_MISUSE: call not valid for this store */

#define GPUDS_ORDERED 1
#define GPUDS_HASH    2

/* Operation codes of a mixed batch (xBatch). */
#define GPUDS_OP_LOOKUP 0   /* report (found, value); change nothing */
#define GPUDS_OP_UPSERT 1   /* set key -> value; report the previous (found, value) */
#define GPUDS_OP_DELETE 2   /* remove key; report the previous (found, value) */

/* Opaque handle of a store.  No backend defines struct gpuds_store: each
** has its own struct (GfslStore, GpuHashStore, HostOrderedStore,
** HostHashStore) and converts the handle at its ops table. */
typedef struct gpuds_store gpuds_store;

/*
** Position of a scan between two pages.  Filled by the caller before the
** first page (lo, hi, desc; pos = 0, done = 0) and advanced by xScan.
**
** Ordered stores return the entries with lo <= key <= hi in ascending key
** order (descending if desc), and advance by narrowing lo (or hi) past the
** last key returned, so a scan stays valid when the store is modified between
** pages: it then continues from the last key it returned.
**
** Hash stores return the entries with lo <= key <= hi in slot order; pos is
** the next slot to visit.  The caller must not modify a hash store between
** the pages of one scan (the SQLite side guarantees this).
*/
typedef struct gpuds_scan {
  int64_t lo, hi;      /* inclusive key bounds */
  int desc;            /* ordered stores: nonzero for descending order */
  int done;            /* set by xScan once no entry is left */
  uint64_t pos;        /* hash stores: next slot; private to the backend */
} gpuds_scan;

typedef struct gpuds_store_ops {
  const char *zBackend;    /* "cuda" or "host" */
  int kind;                /* GPUDS_ORDERED or GPUDS_HASH */

  /* Create an empty store.  On failure *pp is NULL and, if pzErr is not NULL,
  ** *pzErr is set to a message from malloc() that the caller frees. */
  int (*xCreate)(gpuds_store **pp, char **pzErr);

  /* Free the store and everything it holds.  NULL is a no-op. */
  void (*xDestroy)(gpuds_store *p);

  /* Apply a mixed batch of n operations on DISTINCT keys: the caller
  ** guarantees that no key appears twice in one batch (the SQLite side's
  ** write buffer holds one value per key), so the operations commute and the
  ** store may apply them all at once.  For each operation i, aFound[i] is 1
  ** if the key was present before the batch (0 otherwise) and aOld[i] is its
  ** value then (0 when absent).  A batch that breaks the promise has
  ** undefined results and may leave the store inconsistent (the GPU hash
  ** store could hold a key twice).  aFound/aOld may be NULL when the caller
  ** does not want them; aVal may be NULL when the batch holds no upsert.
  ** All-or-nothing: on error the store is unchanged (and the contents of
  ** aFound/aOld are undefined). */
  int (*xBatch)(gpuds_store *p, size_t n, const uint8_t *aOp,
                const int64_t *aKey, const uint64_t *aVal,
                uint8_t *aFound, uint64_t *aOld);

  /* Look up n keys (any order, duplicates allowed): aFound[i], aVal[i]. */
  int (*xLookup)(gpuds_store *p, size_t n, const int64_t *aKey,
                 uint8_t *aFound, uint64_t *aVal);

  /* Return the next page of at most nMax (>= 1) entries of the scan *pScan
  ** into aKey/aVal, their number in *pnOut, and advance *pScan (see
  ** gpuds_scan).  *pnOut < nMax does not by itself mean the end: test
  ** pScan->done. */
  int (*xScan)(gpuds_store *p, gpuds_scan *pScan, size_t nMax,
               int64_t *aKey, uint64_t *aVal, size_t *pnOut);

  /* Insert n entries, keys strictly ascending (else GPUDS_MISUSE, store
  ** unchanged).  The fast path for big sorted loads, above all into an empty
  ** store; same result as an xBatch of upserts (a key already present takes
  ** the new value).  All-or-nothing. */
  int (*xBulkLoad)(gpuds_store *p, size_t n, const int64_t *aKey,
                   const uint64_t *aVal);

  /* Number of keys held. */
  int64_t (*xCount)(gpuds_store *p);

  /* Write a JSON object describing the store (structure, memory used, ...)
  ** into zBuf, NUL-terminated, at most nBuf bytes ("{}" if it does not fit). */
  void (*xInfo)(gpuds_store *p, char *zBuf, size_t nBuf);

  /* Check the structure's invariants.  GPUDS_OK if they hold; otherwise an
  ** error code, with xErrmsg() saying which invariant failed. */
  int (*xCheck)(gpuds_store *p);

  /* Message of the last failed call on this store ("" if none; a call that
  ** succeeds need not clear it). */
  const char *(*xErrmsg)(gpuds_store *p);

} gpuds_store_ops;

/* Host implementations (backend/host_*.c): always available. */
extern const gpuds_store_ops gpudsHostOrderedOps;
extern const gpuds_store_ops gpudsHostHashOps;

/* CUDA implementations (in kernels/): present when built with CUDA. */
extern const gpuds_store_ops gpudsCudaOrderedOps;
extern const gpuds_store_ops gpudsCudaHashOps;

/*
** The device the CUDA backend would use.  Returns 1 and fills zName (at most
** nName bytes) and the memory figures if a usable CUDA device is present;
** returns 0 otherwise (no CUDA build, no driver, no device), with the reason
** in zName.  Defined in kernels/device.cu, or in backend/select.c for
** host-only builds.
*/
int gpudsCudaDevice(char *zName, size_t nName, uint64_t *pnFree,
                    uint64_t *pnTotal);

/*
** The store implementation to use for a table of the given kind: the CUDA
** one if a usable device is present and the environment variable
** GPUDS_BACKEND is not "host"; the host one otherwise.  (backend/select.c)
*/
const gpuds_store_ops *gpudsStoreOps(int kind);

#ifdef __cplusplus
}
#endif
#endif /* GPUDS_BACKEND_H */
