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
** The device memory gpuds holds in this process: every allocation of the
** CUDA stores, column sets, equality indexes and workspaces is counted in
** one account (kernels/common/devmem.cuh), which GPUDS_GPU_MEMORY caps: an
** allocation that would pass the cap fails as one the full GPU refuses
** (GPUDS_NOMEM).  Thread-safe.  Zeros in a build without CUDA.  Defined in
** kernels/device.cu, or in backend/select.c for host-only builds.
*/
typedef struct gpuds_gpumem {
  uint64_t nHeld;          /* bytes held now */
  uint64_t nPeak;          /* the most held at once */
  uint64_t nRefusedCap;    /* allocations refused: they would pass the cap */
  uint64_t nRefusedGpu;    /* allocations the GPU refused (out of memory) */
} gpuds_gpumem;
void gpudsGpuMemory(gpuds_gpumem *p);

/*
** The store implementation to use for a table of the given kind: the CUDA
** one if a usable device is present and the environment variable
** GPUDS_BACKEND is not "host"; the host one otherwise.  (backend/select.c)
*/
const gpuds_store_ops *gpudsStoreOps(int kind);


/*
** ------------------------------------------------------------ column sets
** A column set holds the non-key columns of a table's committed rows in the
** form filter kernels read: per row its key, its store value word (the row
** handle) and, per column, a tag and 8 bytes (backend/gpuds_colval.h says
** how a value is encoded and compared).  The SQLite side builds it from the
** store's rows, queries it for the rows matching a conjunction of terms (in
** key order or ordered by a column), and rebuilds it when too many rows
** changed since (it passes the changed keys as aSkip meanwhile and answers
** for them itself).  The CUDA implementation keeps the arrays on the GPU.
*/
typedef struct gpuds_cols gpuds_cols;

/* One term of a conjunction: column iCol (0-based among the non-key
** columns) compared with the constant (tag, val) by op (GPUDS_CMP_xxx,
** gpuds_colval.h). */
typedef struct gpuds_term {
  int32_t iCol;
  int32_t op;
  uint64_t val;
  uint8_t tag;
} gpuds_term;

/* A query on a column set. */
typedef struct gpuds_query {
  int64_t lo, hi;            /* key bounds, inclusive */
  const gpuds_term *aTerm;   /* the conjunction (nTerm may be 0) */
  int nTerm;
  const int64_t *aSkip;      /* keys to leave out: ascending, distinct */
  int64_t nSkip;
  const uint8_t *aInTag;     /* the values of the IN terms (GPUDS_CMP_IN: */
  const uint64_t *aInVal;    /* each term names its slice) */
  int64_t nIn;
  int iOrderCol;             /* -1: key order; else order by this column */
  int bDesc;                 /* descending (key, or the column's sort key) */
  int64_t nFirst;            /* > 0: only the first nFirst rows of the order
                             ** are wanted, plus every further row whose sort
                             ** key equals the last of them; <= 0: all */
  int64_t nMost;             /* > 0: where more than nMost rows match, none
                             ** are returned and *pn is -1 (the caller, whose
                             ** terms SQLite checks again, scans instead);
                             ** <= 0: no cap */
} gpuds_query;

typedef struct gpuds_cols_ops {
  const char *zBackend;      /* "cuda" or "host" */

  /* Make a column set of n rows and nCol columns from aKey[i], aRow[i] and,
  ** for column c, aTag[c*n+i], aVal[c*n+i].  bSorted: aKey is ascending.
  ** The arrays are copied.  On failure *pp is NULL and *pzErr (if pzErr is
  ** not NULL) a message from malloc() that the caller frees. */
  int (*xLoad)(gpuds_cols **pp, int nCol, int64_t n, int bSorted,
               const int64_t *aKey, const uint64_t *aRow,
               const uint8_t *aTag, const uint64_t *aVal, char **pzErr);

  /* Free a column set (NULL is a no-op). */
  void (*xFree)(gpuds_cols *p);

  /* The rows with lo <= key <= hi, key not in aSkip, for which every term's
  ** gpudsColMatch() is not 0 ("maybe" counts as a match: the caller checks
  ** those exactly), in the order q asks for: key order, or the column's
  ** gpudsColSortKey() (ascending, or descending if bDesc) with ties in
  ** ascending key order.  *paKey and *paRow (and *paSort, the sort keys,
  ** when paSort is not NULL and a column orders) are malloc()ed arrays of
  ** *pn entries that the caller frees with free(); NULL when *pn is 0. */
  int (*xQuery)(gpuds_cols *p, const gpuds_query *q, int64_t *pn,
                int64_t **paKey, uint64_t **paRow, uint64_t **paSort);

  /* Bytes the column set holds (device memory for the CUDA one). */
  int64_t (*xBytes)(gpuds_cols *p);

  /* Message of the last failed call ("" if none). */
  const char *(*xErrmsg)(gpuds_cols *p);
} gpuds_cols_ops;

extern const gpuds_cols_ops gpudsHostColsOps;    /* backend/host_cols.c */
extern const gpuds_cols_ops gpudsCudaColsOps;    /* kernels/cols.cu */

/* The column-set implementation matching the store ops pOps (the CUDA one
** for a CUDA store, the host one otherwise).  (backend/select.c) */
const gpuds_cols_ops *gpudsColsOps(const gpuds_store_ops *pOps);

#ifdef __cplusplus
}
#endif
#endif /* GPUDS_BACKEND_H */
