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
** Threads: the caller serialises the calls on one store, except where
** its ops table's bConcurrentReads is set: such a backend also takes its
** read calls (xLookup, xScan, xCount, xInfo, xCheck, xErrmsg; a column
** set's xQuery, xAgg, xBytes, xErrmsg) on one store from several threads
** at once, while no other call runs on it.  Distinct stores may always be
** used from distinct threads.  xErrmsg is asked right after the call that
** failed, on the thread that made it (ext/store.c does): with concurrent
** reads it gives that thread's message.  (The CUDA column set keeps a
** message a thread.  The host backends keep one a store: their read calls
** fail only where memory runs out or xCheck finds a broken invariant, and
** two such failures at once may leave either's text.)
*/
#ifndef GPUDS_BACKEND_H
#define GPUDS_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "gpuds_rc.h"     /* GPUDS_OK, GPUDS_ERROR, GPUDS_NOMEM, GPUDS_MISUSE */
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

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
  int bConcurrentReads;    /* read calls may run on one store from several
                           ** threads at once, with no other call running
                           ** (see the top) */

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
  ** succeeds need not clear it).  With bConcurrentReads: of the calling
  ** thread's last failed call (see the top). */
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

/*
** ------------------------------------------------------------ aggregation
** xAgg computes GROUP BY and aggregates over the rows of a column set that
** match a filter, as far as tags and 8-byte values decide them exactly,
** and leaves the rest to the caller, which has the rows' records:
**
**   - "leftover" rows: rows the backend cannot place or aggregate exactly.
**     They take no part in any group; the caller evaluates them itself.
**   - flags on aggregates the backend cannot finish exactly
**     (GPUDS_AGGF_TIE).  Integer sums that may overflow in some order
**     are not flagged: their saturated sums say so (aPos, aNeg).
**
** A row of the set is read where lo <= key <= hi and its key is not in
** aSkip (q's fields; the set's row words, aRow, are handed back as they
** were loaded).  Such a row is
**   1. out, if some term gives 0 (gpudsColMatchAgg: gpudsColMatch or
**      gpudsColMatchIn, with aTermExact's 8-byte equality);
**   2. else leftover, if some term gives 2 ("maybe"), or a group key
**      or an aggregate's argument is undecidable (GPUDS_AGGKEY_xxx,
**      GPUDS_AGG_xxx say when);
**   3. else counted in the group of its key tuple.
** The caller learns a leftover row's group and values from its record;
** the backend's groups never include it, so the caller merges its own
** rows (the leftover ones and those of the skipped keys) into them.
** Column -1 (a term's, a group key's or an aggregate's iCol) is the row's
** key, an INTEGER value; 0.. are the set's columns.
**
** The groups are returned in ascending order of their key tuples,
** compared key by key by gpudsColGroupCmp (canonical values: an integral
** REAL is the INTEGER it equals, so 1 and 1.0 are one group; text and
** blobs by their 8 bytes).  With no group key (nKey 0) there is exactly
** one group, also when no row is counted (aRows[0] 0).  Everything but
** the REAL sums (aSum, aErr: compare their sum within a relative 1e-15 of
** the sum of the magnitudes) is exact and the same on every backend.
**
** Allocation: every array of *pRes is malloc()ed by the backend and the
** caller frees them all with gpudsAggResFree().  An array is NULL where
** it would be empty (nGroup 0, nKey 0, nFn 0, nLeft 0) and may be NULL
** where no aggregate uses it (aNReal, aPos, aNeg, aSum, aErr: SUM; aTag,
** aVal, aKey, aRow, aFlags: MIN, MAX); compare a NULL array as zeros.
** All-or-nothing: on error the backend frees what it allocated and *pRes
** is all zero (nothing to free).  GPUDS_NOMEM when
** host or device memory runs out (the message from xErrmsg()),
** GPUDS_MISUSE for a request outside this contract (an iCol out of
** range, nKey or nFn above their maximum, an IN slice past nIn, iRepFn
** not a MIN or MAX).
*/
#define GPUDS_AGG_KEY_MAX 8     /* group keys at most */
#define GPUDS_AGG_FN_MAX  64    /* aggregates at most */

/* A group key (gpuds_aggkey.op).  DIV and MOD are SQLite's "/" and "%" by
** the integer n, on numbers (gpudsColDivMod, gpuds_colval.h: NULL where
** n is 0); a TEXT or BLOB value of a DIV or MOD key makes the row
** leftover (SQLite converts text to a number there: the caller does). */
#define GPUDS_AGGKEY_COL 0      /* the value */
#define GPUDS_AGGKEY_DIV 1      /* value / n */
#define GPUDS_AGGKEY_MOD 2      /* value % n */

/* Aggregates (gpuds_aggfn.fn).  What the backend returns for each, per
** group (arrays of gpuds_aggres, aggregate f of group g at f*nGroup+g):
**   COUNTSTAR  aN: the group's rows.
**   COUNT      aN: its non-NULL values.
**   SUM        aN: its non-NULL values; aNReal: the REAL ones among them;
**              aPos, aNeg: the sum of its positive INTEGER values,
**              saturated at INT64_MAX, and of its negative ones,
**              saturated at INT64_MIN (where neither saturates, no
**              partial sum of the integers in any order overflows, and
**              their exact sum is aPos + aNeg); aSum, aErr: the sum of its
**              REAL values compensated (Kahan-Babuska-Neumaier, partial
**              sums merged with TwoSum): aSum + aErr is that sum.  A
**              TEXT or BLOB value makes the row leftover.
**   MIN, MAX   aN: its non-NULL values; aTag, aVal: the least (greatest)
**              non-NULL value, in gpudsColInCompare's order (numbers by
**              value, text and blobs by their first 4 bytes, then by all
**              8); aKey, aRow: the first row (least key) holding a value
**              equal to it (for numbers, equal by value: 1 and 1.0; the
**              value returned is that row's); aTag NULL (and aVal, aKey,
**              aRow 0) where the group has no non-NULL value.
**              GPUDS_AGGF_TIE in aFlags where another value of the group
**              has the same first 4 bytes and other 8 bytes (text, blob):
**              the exact extreme is undecided.  A TEXT or BLOB value
**              whose 8 bytes are in aAmbig makes the row leftover.
**   COUNTD     aN: its distinct non-NULL values (canonical values:
**              gpudsColCanon; text and blobs by their 8 bytes).  A TEXT
**              or BLOB value whose 8 bytes are in aAmbig makes the row
**              leftover.
** The arrays an aggregate does not use hold 0 for it. */
#define GPUDS_AGG_COUNTSTAR 1
#define GPUDS_AGG_COUNT     2
#define GPUDS_AGG_SUM       3
#define GPUDS_AGG_MIN       4
#define GPUDS_AGG_MAX       5
#define GPUDS_AGG_COUNTD    6

/* Flags (gpuds_aggres.aFlags) */
#define GPUDS_AGGF_TIE      1   /* MIN, MAX: see above */

typedef struct gpuds_aggkey {
  int32_t iCol;              /* -1: the row's key; else a column */
  int32_t op;                /* GPUDS_AGGKEY_xxx */
  int64_t n;                 /* DIV, MOD: the divisor (any int64) */
  const uint64_t *aAmbig;    /* COL: 8-byte values (ascending, distinct)
                             ** that stand for more than one TEXT or BLOB
                             ** value: a row whose TEXT or BLOB value has
                             ** one is leftover */
  int64_t nAmbig;
} gpuds_aggkey;

typedef struct gpuds_aggfn {
  int32_t fn;                /* GPUDS_AGG_xxx */
  int32_t iCol;              /* -1: the key; ignored for COUNTSTAR */
  const uint64_t *aAmbig;    /* MIN, MAX, COUNTD: as gpuds_aggkey's */
  int64_t nAmbig;
} gpuds_aggfn;

typedef struct gpuds_agg {
  gpuds_query q;             /* the filter: lo, hi, aTerm, nTerm, aSkip,
                             ** nSkip, aInTag, aInVal, nIn (the others are
                             ** ignored); a term's iCol may be -1 */
  const uint8_t *aTermExact; /* NULL, or nTerm flags: where 1, a TEXT or
                             ** BLOB value whose 8 bytes equal the term's
                             ** constant (an IN term: one of its values)
                             ** is equal to it (the caller checked that no
                             ** other value of the column shares them) */
  const gpuds_aggkey *aKey;  /* GROUP BY keys, nKey <= GPUDS_AGG_KEY_MAX */
  int nKey;
  const gpuds_aggfn *aFn;    /* aggregates, nFn <= GPUDS_AGG_FN_MAX */
  int nFn;
  int iRepFn;                /* the representative row of a group (aRep*):
                             ** -1: its first row (least key); else a MIN or
                             ** MAX aggregate's row (aKey, aRow) where it
                             ** has a non-NULL value, the group's last row
                             ** (greatest key) where it has none */
} gpuds_agg;

typedef struct gpuds_aggres {
  int64_t nGroup;
  /* per group g and key k, at k*nGroup+g: */
  uint8_t *aKeyTag;          /* the key's canonical value (gpudsColCanon */
  uint64_t *aKeyVal;         /* of the column's value, or of the DIV/MOD) */
  uint8_t *aRepTag;          /* the key's column value in the */
  uint64_t *aRepVal;         /* representative row (before DIV/MOD) */
  /* per group g: */
  int64_t *aRepKey;          /* the representative row (0, 0 where the */
  uint64_t *aRepRow;         /* group has no row) */
  int64_t *aRows;            /* rows counted in the group */
  /* per aggregate f and group g, at f*nGroup+g (see GPUDS_AGG_xxx): */
  int64_t *aN, *aNReal, *aPos, *aNeg;
  double *aSum, *aErr;
  uint8_t *aTag;
  uint64_t *aVal;
  int64_t *aKey;
  uint64_t *aRow;
  uint8_t *aFlags;
  /* the leftover rows, ascending key: */
  int64_t nLeft;
  int64_t *aLeftKey;
  uint64_t *aLeftRow;
  int64_t nRead;             /* rows read: in [lo, hi] and not skipped */
} gpuds_aggres;

/* Free every array of *pRes (free()) and zero it. */
static inline void gpudsAggResFree(gpuds_aggres *pRes){
  void *a[] = { pRes->aKeyTag, pRes->aKeyVal, pRes->aRepTag, pRes->aRepVal,
    pRes->aRepKey, pRes->aRepRow, pRes->aRows, pRes->aN, pRes->aNReal,
    pRes->aPos, pRes->aNeg, pRes->aSum, pRes->aErr, pRes->aTag, pRes->aVal,
    pRes->aKey, pRes->aRow, pRes->aFlags, pRes->aLeftKey, pRes->aLeftRow };
  size_t i;
  for(i=0; i<sizeof(a)/sizeof(a[0]); i++) free(a[i]);
  memset(pRes, 0, sizeof(*pRes));
}

typedef struct gpuds_cols_ops {
  const char *zBackend;      /* "cuda" or "host" */
  int bConcurrentReads;      /* xQuery, xAgg, xBytes and xErrmsg may run on
                             ** one set from several threads at once (see
                             ** the top); xLoad and xFree never do */

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

  /* Message of the last failed call ("" if none).  With bConcurrentReads:
  ** of the calling thread's last failed call on this set, valid until
  ** that thread's next call (see the top). */
  const char *(*xErrmsg)(gpuds_cols *p);

  /* GROUP BY and aggregates over the rows that match a filter: see
  ** gpuds_agg below.  GPUDS_MISUSE where the backend has none (the caller
  ** then reads the rows with xQuery and aggregates them itself). */
  int (*xAgg)(gpuds_cols *p, const gpuds_agg *pAgg, gpuds_aggres *pRes);
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
