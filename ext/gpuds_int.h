/*
** gpuds_int.h -- declarations shared by the files of the SQLite side.
**
** Data model of one table:
**
**   copy     the table's contents (GpudsCopy, copy.c), shared by every
**            connection of the process to the same database file: the
**            backend store (GPU or host: key -> row handle) with its host
**            mirror, key filter and column set, holding the newest state,
**            and its history: each batch applied to it kept with the values
**            its keys held before (version.c), so that a connection at an
**            older snapshot, or one that does not see a writer's
**            uncommitted batches, lays those old values over the store.
**   wbuf     the write buffer of the connection's open transaction: an
**            ordered host map key -> row handle (0 = deleted) that every
**            xUpdate writes into, and an undo log that makes ROLLBACK,
**            ROLLBACK TO and statement rollback exact.  It is applied to
**            the store as one batch in xSync, or earlier when it grows past
**            GPUDS_FLUSH_ROWS.
**   rows     each row's non-key columns live on the host in one record
**            (GpudsRow), whose address is the row handle.
**
** Reads see the store as of the connection's snapshot, overlaid with the
** write buffer, so a transaction reads its own writes.
*/
#ifndef GPUDS_INT_H
#define GPUDS_INT_H

#include "sqlite3ext.h"
#include "gpuds_backend.h"
#include "gpuds_config.h"
#include "gpuds_colval.h"

#ifndef SQLITE_CORE
extern const sqlite3_api_routines *sqlite3_api;
#endif

#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <pthread.h>

/* Memory: an array whose length is a number of rows (a table's keys, a
** load, a batch, an undo log, a key list, a column set's build, a result
** list) is malloc()'d and free()'d, never sqlite3_malloc'd: SQLite refuses
** any one block of ~2 GiB or more (SQLITE_MAX_ALLOCATION_SIZE), 2.7e8 rows
** of 8 bytes, fewer than a GPU holds (tests/c/bigalloc.c).  Structs and
** schema-sized or chunk-sized buffers stay on SQLite's allocator.  Each
** buffer goes back to the allocator that made it: sqlite3_free() of a
** malloc()'d block corrupts the heap. */

#ifndef GPUDS_VERSION
# error "GPUDS_VERSION comes from the project version in CMakeLists.txt"
#endif

/* Rows written while the write buffer holds at least this many keys come
** from an arena (vtab.c). */
#define GPUDS_ARENA_ROWS 1024

/* The key filter of a new table is sized for this many keys (filter.c's
** smallest size); it grows by rebuilds as keys arrive. */
#define GPUDS_FILTER_INITIAL_KEYS 1024

/* Bytes of the reason a table's store or column set lives on the host
** though the GPU was meant to hold it (GpudsCopy.zStoreWhy,
** GpudsColState.zWhy): the message of the allocation the GPU refused. */
#define GPUDS_WHY_MAX 320

/* Module kinds */
#define GPUDS_MOD_GFSL    GPUDS_ORDERED
#define GPUDS_MOD_GPUHASH GPUDS_HASH

/* ------------------------------------------------------------------ rows */
/* A row record: the non-key columns of one row, SQLite types preserved.
** Layout (row.c): two varints, then the row's format-4 record (runfmt.h). */
typedef struct GpudsRow GpudsRow;
/* Where a walk through one record's columns stands (row.c); pRow = NULL
** starts afresh. */
typedef struct GpudsRowPos {
  const GpudsRow *pRow;
  const unsigned char *pRec;
  int iCol;
  uint32_t iHdr, iBody, nHdr;
} GpudsRowPos;

/* ------------------------------------------ handles and arenas (arena.c) */
/* A row handle is its record's address; bit 0 marks a record in a load
** arena (arena.c).  Spare arena blocks for loaders: a list whose links
** arena.c keeps. */
typedef struct GpudsBlocks { void *pHead; int n; } GpudsBlocks;
typedef struct GpudsLoader { char *pBlock; size_t iOff; int bHold; GpudsBlocks spare; } GpudsLoader;
/* The record of handle h: inline, since every xColumn takes it. */
static inline GpudsRow *gpudsRowOf(uint64_t h){
  return (GpudsRow*)(uintptr_t)(h & ~(uint64_t)1);
}
/* Start loading the record of handle h into the caches (its first two
** lines: the header and a short row's values); reads nothing.  Inline:
** a cursor's step prefetches one row ahead (gpudsRowPrefetch: many). */
static inline void gpudsRowPrefetchOne(uint64_t h){
#if defined(__GNUC__)
  const char *z = (const char*)gpudsRowOf(h);
  __builtin_prefetch(z);
  __builtin_prefetch(z+64);
#else
  (void)h;
#endif
}
uint64_t gpudsRowAllocHandle(GpudsLoader *L, size_t nByte, unsigned char **pz);
void gpudsRowFreeHandle(uint64_t h);
void gpudsRowPrefetch(const uint64_t *aRow, size_t n);
void gpudsLoaderInit(GpudsLoader *L);
void gpudsLoaderBegin(GpudsLoader *L);
void gpudsLoaderEnd(GpudsLoader *L);
size_t gpudsLoaderSpanMax(void);
void gpudsLoaderGive(GpudsLoader *L, GpudsBlocks *pList);
void gpudsLoaderTakeBack(GpudsLoader *L, GpudsBlocks *pList);
int gpudsBlocksAdd(GpudsBlocks *pList, int bHuge);
void gpudsBlocksFree(GpudsBlocks *pList);
void gpudsMemTrim(void);
void gpudsRowsRepack(uint64_t *aRow, size_t n, uint64_t (*xCopy)(GpudsLoader*, uint64_t),
                     uint64_t **paOrig);
void gpudsRowsRepackUndo(uint64_t *aRow, size_t n, uint64_t **paOrig);

/* ----------------------------------------------------- text (textenc.c) */
/* How a table's records hold text (the eText arguments of row.c and
** textenc.c; which one a table's storage format gives: gpudsTableText,
** runfmt.h): SQLITE_UTF8, SQLITE_UTF16LE or SQLITE_UTF16BE, text in that
** encoding, the database's, byte for byte as SQLite's own records hold
** it, so that BINARY order is the order of its bytes; or GPUDS_TEXT_UTF8 |
** SQLITE_UTF16LE or SQLITE_UTF16BE, text held as UTF-8 in a UTF-16
** database (the tables of older formats), ordered as the UTF-16 that SQLite
** makes of it. */
#define GPUDS_TEXT_UTF8 0x10
/* The encoding of the text in records of eText. */
static inline int gpudsTextRecEnc(int eText){
  return (eText & GPUDS_TEXT_UTF8) || eText==0 ? SQLITE_UTF8 : eText;
}
int gpudsValueText(sqlite3_value *v, int eText, const unsigned char **pz, uint32_t *pn);
void gpudsResultText16(sqlite3_context *ctx, const unsigned char *z, uint32_t n, int eRec);
int gpudsBindText16(sqlite3_stmt *pStmt, int iParam, const unsigned char *z, uint32_t n,
                    int eEnc);
uint64_t gpudsTextBytes(const unsigned char *z, uint32_t n, int eText);
int gpudsTextCmp(const unsigned char *a, uint32_t na, const unsigned char *b, uint32_t nb,
                 int eText);
int gpudsBytesCmp(const unsigned char *a, uint32_t na, const unsigned char *b, uint32_t nb);

/* ------------------------------------------------------ records (row.c) */
uint64_t gpudsRowNew(GpudsLoader *L, int nCol, sqlite3_value **apVal, const char *aAff,
                     int eText);
int gpudsRealToInt(double r, sqlite3_int64 *pi);
uint64_t gpudsRowDecode(GpudsLoader *L, const unsigned char *a, uint32_t nHdr,
                        int nCol, size_t nByte);
uint64_t gpudsLoaderCopy(GpudsLoader *L, uint64_t h);
size_t gpudsRowBytes(const GpudsRow *p);
const unsigned char *gpudsRowRecord(const GpudsRow *p, uint32_t *pnRec);
size_t gpudsRowHdrBytes(int nCol);
size_t gpudsRowSize(uint32_t nRec, uint32_t nHdr);
int gpudsRowTooBig(const GpudsRow *p, const char *aAff, int64_t nLimit);
void gpudsRowResult(const GpudsRow *p, int iCol, sqlite3_context *ctx, GpudsRowPos *pos,
                    int eText);
int gpudsRowBind(const GpudsRow *p, int iCol, sqlite3_stmt *pStmt, int iParam, int eText,
                 int *pbBlob);

/* A non-key value as column sets encode it (tag, val: gpuds_colval.h), with
** the bytes of a text or blob for exact comparisons. */
typedef struct GpudsValue {
  uint8_t tag;
  uint64_t val;
  const unsigned char *z;   /* text/blob bytes, else NULL */
  uint32_t n;
} GpudsValue;
void gpudsRowColVal(const GpudsRow *p, int iCol, int eText, uint8_t *pTag, uint64_t *pVal);
void gpudsRowColValue(const GpudsRow *p, int iCol, int eText, GpudsValue *v);
int gpudsRowColCmp(const GpudsRow *p, int iCol, const GpudsValue *v, int eText);
int gpudsRowColCmpRows(const GpudsRow *a, const GpudsRow *b, int iCol, int eText);

/* Records of formats 1 to 3, the legacy layout (row.c). */
int gpudsRowValid(const unsigned char *a, uint32_t n, int nCol);
GpudsRow *gpudsRowFromLegacy(const unsigned char *a, uint32_t n, int nCol, int *pbBad);
uint64_t gpudsLoaderRow(GpudsLoader *L, const unsigned char *a, uint32_t n, int nCol);
size_t gpudsRowLegacyBytes(const GpudsRow *p);
void gpudsRowLegacyWrite(const GpudsRow *p, unsigned char *a);

/* ------------------------------------------------------------ key filter */
/* A Bloom filter over the keys of the store: "might this key exist?" without
** a device round trip.  Never a false "no". */
typedef struct GpudsFilter {
  uint64_t *aBit;       /* nBlock blocks of 512 bits */
  uint64_t nBlock;      /* blocks */
  int64_t nAdded;       /* keys added since the last rebuild */
  int64_t nCap;         /* keys the filter is sized for */
  int64_t nStale;       /* keys deleted from the store since the last rebuild */
} GpudsFilter;

int gpudsFilterMaybe(const GpudsFilter *p, int64_t k);
int gpudsFilterAdd(GpudsFilter *p, int64_t k);   /* 1 if the filter is full */
int gpudsFilterReset(GpudsFilter *p, int64_t nCap);
int gpudsFilterAlloc(GpudsFilter *p, int64_t nCap);
void gpudsFilterFill(GpudsFilter *p, const int64_t *aKey, int64_t n);
int gpudsFilterAddMany(GpudsFilter *p, const int64_t *aKey, int64_t n);
int gpudsFilterAddIf(GpudsFilter *p, const int64_t *aKey, const uint64_t *aSel,
                     int64_t n);
void gpudsFilterFree(GpudsFilter *p);

/* ----------------------------------------------------------- the table */
typedef struct GpudsTable GpudsTable;
typedef struct GpudsUndo GpudsUndo;
typedef struct GpudsFlush GpudsFlush;

/* The write buffer of the open transaction. */
typedef struct GpudsOverlay GpudsOverlay;
typedef struct GpudsWbuf {
  GpudsOverlay *pOver;    /* map key -> row handle (0 = deleted), overlay.c */
  int64_t nOver;          /* keys in pOver */
  GpudsUndo *aUndo;       /* undo log */
  int64_t nUndo, nUndoAlloc;
  int64_t *aMark;         /* aMark[i]: nUndo when savepoint i began */
  int nMark, nMarkAlloc;
  uint64_t *aGarbage;     /* row handles to free once no cursor can see them */
  int64_t nGarbage, nGarbageAlloc;
  int64_t nSynced;        /* undo entries whose batches an xSync persisted */
  int bSyncLost;          /* a ROLLBACK TO undid persisted batches: what the
                          ** shadow tables hold matches no prefix of the log */
} GpudsWbuf;

/* The column set of a table (colset.c): its non-key columns as arrays for
** the filter kernels, built from the store's rows on first use.  The store
** layer (store.c) logs the keys each batch changes while a set exists, and
** drops the set when the store is rebuilt or the log grows too long. */
typedef struct GpudsColText {
  int bDone;                  /* computed (coltext.c) */
  uint64_t *aAmbig;           /* the 8-byte values that stand for more than
                              ** one TEXT or BLOB value, ascending */
  int64_t nAmbig;
} GpudsColText;
typedef struct GpudsColState {
  const gpuds_cols_ops *pOps;
  gpuds_cols *pCols;          /* NULL: not built (or dropped) */
  int64_t nRows;              /* rows in pCols */
  uint8_t *aBytes;            /* per column of pCols: it holds TEXT or BLOB
                              ** values (colbuild.c) */
  GpudsColText *aText;        /* per column: its ambiguous 8-byte values,
                              ** found on demand (coltext.c) */
  int64_t *aDirty;            /* keys changed in the store since pCols */
  int64_t nDirty, nDirtyAlloc;
  char zWhy[GPUDS_WHY_MAX];   /* "": the set goes where the store's backend
                              ** puts it; else why it is on the host: the GPU
                              ** could not hold it (store.c), and builds go
                              ** to the host while the copy lives */
  int64_t nBuild;             /* sets built (statistics) */
  int64_t iBuildId;           /* names the set (unique in the process) */
  int64_t nQuery;             /* queries run on sets (statistics) */
  int64_t nCapped;            /* of them, past their nMost: scanned instead */
} GpudsColState;

/* One flush of the write buffer, applied to the store as one batch
** (gpudsStoreFlush): its keys, the values written and what the store held
** before.  It is also a version of the copy (version.c): linked into its
** history when applied, and owned by the copy once its transaction commits
** (the write buffer's undo log keeps it until then). */
struct GpudsFlush {
  GpudsFlush *pPrev, *pNext;  /* the copy's history, oldest first */
  int64_t iSeq;         /* its place in that history (from 1, ascending) */
  int64_t nDelta;       /* keys it added to the store less those it removed */
  size_t n;
  int64_t *aKey;        /* keys, ascending */
  uint64_t *aNew;       /* values written (0 = deleted) */
  uint8_t *aFound;      /* key was in the store before */
  uint64_t *aOld;       /* its value then; NULL after a bulk load (every
                        ** key was new: all 0) */
  uint64_t *aOrig;      /* if the rows were repacked: the overlay's handles,
                        ** which the undo log knows (aNew holds the copies) */
};

/* A batch the open transaction applied to the store (gpudsWbufBatches):
** n distinct keys, ascending, and the values written (0 = deleted).  A view
** into the undo log, valid until the write buffer next changes. */
typedef struct GpudsBatch {
  size_t n;
  const int64_t *aKey;
  const uint64_t *aNew;
} GpudsBatch;

/* ------------------------------------------------------ the shared copy
** The contents of one table, shared by the connections of the process to
** one database file that read a commit it holds (copy.c, version.c; see
** ARCHITECTURE.md, "One copy per process"). */
typedef struct GpudsCopy GpudsCopy;
typedef struct GpudsLatchSlot GpudsLatchSlot;
typedef struct GpudsPin GpudsPin;

/* A commit the copy holds: t_meta's generation and stamp after it, and the
** last version of the copy's history it includes. */
typedef struct GpudsMark {
  int64_t iGen, iStamp, iSeq;
} GpudsMark;

struct GpudsCopy {
  /* what it is a copy of (fixed at creation) */
  char *zFile;                /* the database file's identity ("dev:ino"),
                              ** or NULL: private to one table */
  int64_t iTableId;           /* t_meta 'id' */
  int eKind, nCol, iFormat, eText;
  /* the contents (store.c); changed under the latch held for writing */
  const gpuds_store_ops *pOps;
  gpuds_store *pStore;        /* the newest state: committed rows and the
                              ** writer's flushed batches */
  const gpuds_store_ops *pMirOps;  /* host mirror of a GPU store */
  gpuds_store *pMirror;       /* or NULL */
  char zStoreWhy[GPUDS_WHY_MAX];  /* "", or why the store is on the host
                              ** though the GPU was meant to hold it (it ran
                              ** out of GPU memory, or GPUDS_GPU_MEMORY
                              ** would be passed): store.c */
  GpudsFilter filter;         /* keys that might be in pStore (the writer's) */
  GpudsColState cs;           /* column set (colbuild.c, kept by store.c) */
  /* the history (version.c): the list changes under the latch held for
  ** writing, the rest under mu */
  GpudsFlush *pFirst, *pLast; /* versions newer than iBaseSeq, oldest first */
  int64_t iSeq;               /* the last version's number (0: none yet) */
  int64_t iBaseSeq;           /* versions up to this number are released */
  GpudsMark *aMark;           /* the commits it holds, oldest first: the */
  int nMark, nMarkAlloc;      /* last one is the newest (the head) */
  struct GpudsTable *pWriter; /* the table whose transaction wrote the
                              ** versions after the head, or NULL */
  int bPend;                  /* pWriter's commit has written t_meta: */
  int64_t iPendGen, iPendStamp;    /* with these */
  int64_t nVersion;           /* versions in the list (atomic) */
  int64_t nVersionKeys;       /* keys of those versions (atomic) */
  /* sharing (copy.c), under mu */
  struct GpudsPin *aPin;      /* the tables attached, and their pins */
  int nPin, nPinAlloc;
  int bDead;                  /* no table attaches any more */
  GpudsCopy *pNext;           /* the registry's list (copy.c) */
  pthread_mutex_t mu;
  pthread_cond_t cv;          /* pWriter changed */
  /* the latch (version.c): readers of the store and its history against
  ** the one writer that changes them */
  pthread_mutex_t muLatch;
  pthread_cond_t cvLatch;
  int bLatchWrite;            /* atomic: held (or wanted) for writing */
  int64_t nLatchWrites;       /* holds for writing so far (muLatch) */
  GpudsLatchSlot *pSlots;     /* one per attached table (muLatch) */
  /* calls that must not run at once (store.c): column set builds and text
  ** passes; calls on a store or set whose backend takes no concurrent
  ** reads (its ops' bConcurrentReads is 0) */
  pthread_mutex_t muCols;
  pthread_mutex_t muCall;
};

struct GpudsTable {
  sqlite3_vtab base;          /* only base.zErrMsg is used: the last error */
  int nRef;                   /* sqlite3_vtab handles sharing this table */
  sqlite3 *db;
  char *zDb;                  /* schema name, e.g. "main" */
  char *zName;                /* table name */
  int eKind;                  /* GPUDS_ORDERED (gfsl) or GPUDS_HASH (gpuhash) */
  int nCol;                   /* columns including the key (column 0) */
  char **azCol;               /* column names */
  unsigned char *aNotNull;    /* column declared NOT NULL */
  char *aAff;                 /* column affinity (schema.h GPUDS_AFF_xxx) */
  int eEnc;                   /* the connection's text encoding: SQLITE_UTF8,
                              ** SQLITE_UTF16LE or SQLITE_UTF16BE (with the
                              ** format, how records hold text:
                              ** gpudsTableText, runfmt.h) */
  GpudsTable *pNextTable;     /* list of all tables (info.c) */
  /* the copy it reads (copy.c) */
  GpudsCopy *pCopy;           /* never NULL once made (xCreate, xConnect) */
  int64_t iSnapSeq;           /* its snapshot: the copy's versions with
                              ** higher numbers are laid over the store
                              ** (INT64_MAX: none, the writer's own) */
  GpudsLatchSlot *pSlot;      /* its slot in the copy's latch */
  int nLatchRead;             /* the latch held for reading, nested */
  int bLatchWrite;            /* ... for writing */
  int bRepin;                 /* its copy keeps versions for rows it held
                              ** when its snapshot moved (gpudsCopyRepin) */
  GpudsWbuf wb;               /* write buffer of the open transaction */
  GpudsLoader wArena;         /* arena for the rows of big write buffers */
  int nCursor;                /* open cursors on this table */
  void *pCurSpare;            /* a closed cursor kept for the next xOpen
                              ** (vtab.c: its allocation and page buffers) */
  int bBroken;                /* an undo failed: only ROLLBACK may follow */
  int64_t nWrites;            /* xUpdate and rollback calls: an open cursor
                              ** compares it to know its rows are stale */
  int bMaxValid;              /* iMax/bMaxAny describe the table as now seen */
  int bMaxAny;                /* the table has a row */
  int64_t iMax;               /* its largest key, if bMaxAny */
  int64_t nFlushRows;         /* flush the write buffer past this many keys */
  int64_t nFlush;             /* batches applied to the store (statistics) */
  /* persistence (shadow.c) */
  int bLoaded;                /* the store holds the shadow tables' contents */
  int64_t iGeneration;        /* commit count the store reflects */
  int64_t iTableId;           /* t_meta 'id' of the table the store holds */
  int64_t iStamp;             /* t_meta 'stamp' of the commit it holds: with
                              ** the generation and id, what tells two
                              ** copies of the file apart (0: none yet) */
  int iFormat;                /* t_meta 'format' (shadow.c SHADOW_FORMAT) */
  int64_t iGenPending;        /* generation after the commit in progress */
  int64_t iStampPending;      /* and its stamp, */
  uint64_t uDigestPending;    /* its digests and entries (format 5) */
  uint64_t uLayoutPending;
  int64_t nEntriesPending;
  sqlite3_stmt *pMetaWrite;   /* t_meta's UPDATE at a commit (format 5), kept */
  unsigned int iDataVersion;  /* SQLITE_FCNTL_DATA_VERSION when last checked */
  int64_t nLoadRows;          /* rows read by the last load */
  int64_t nLoadEntries;       /* sum of t_run.n seen by the last load */
  uint64_t uLoadDigest;       /* format 5: the digests of the chunks the last */
  uint64_t uLoadLayout;       /* load read (runfmt.h, GpudsDigest) */
  /* a load in the background (bgload.c) and reads of the runs on disk
  ** meanwhile (diskread.c): while pBuild is set, pStore is not the table's
  ** (bLoaded is 0) and only key lookups are answered, from the runs */
  struct GpudsBuild *pBuild;  /* the store being built by a thread, or NULL */
  struct GpudsDisk *pDisk;    /* the runs' chunk index and decoded chunks */
  int64_t nMetaRows;          /* t_meta 'rows' when last read */
  int64_t nMetaEntries;       /* t_meta 'entries' when last read (-1: absent) */
  uint64_t uMetaDigest;       /* t_meta 'digest' and 'layout' when last read */
  uint64_t uMetaLayout;       /* or, after a commit, written (format 5; also
                              ** nMetaEntries then) */
};

/* Queries on non-key columns (colset.c) */
typedef struct GpudsColTerm {
  gpuds_term t;               /* as the column set evaluates it */
  GpudsValue v;               /* the constant, for exact checks */
  int bRefine;                /* the set may say "maybe": check exactly */
  uint8_t *aInTag;            /* GPUDS_CMP_IN: the values of the list, */
  uint64_t *aInVal;           /* sorted (t.tag: GPUDS_IN_xxx flags) */
  int nIn;
  GpudsValue *aInOther;       /* ... its text and blob values again, whole, */
  int nInOther;               /* for the exact check of the set's "maybe" */
} GpudsColTerm;
typedef struct GpudsColQuery {
  int64_t lo, hi;             /* key bounds, inclusive */
  GpudsColTerm *aTerm;        /* conjunction */
  int nTerm;
  int iOrderCol;              /* -1: key order; else non-key column index */
  int bDesc;
  int64_t nFirst;             /* > 0: rows wanted first (a LIMIT hint) */
  int64_t nMost;              /* > 0: past this many matches the set returns
                              ** none (gpudsColsRun's *pn is -1) */
  int eText;                  /* how the table's records hold text
                              ** (gpudsTableText) */
} GpudsColQuery;
int gpudsColsRun(GpudsTable *p, const GpudsColQuery *q, int64_t *pn,
                 int64_t **paKey, uint64_t **paRow, int *pbPartial);
int64_t gpudsColsAfter(const GpudsColQuery *q, const int64_t *aKey, const uint64_t *aRow,
                       int64_t n, int64_t kLast, uint64_t rLast);
int64_t gpudsColsBytes(GpudsTable *p);
int gpudsColsSkipKeys(GpudsTable *p, int64_t **paSkip, int64_t *pn);
int gpudsColsTerms(GpudsTable *p, const GpudsColTerm *aTerm, int nTerm, gpuds_term **paT,
                   uint8_t **paInTag, uint64_t **paInVal, int64_t *pnIn);

/* Terms of a filter (term.c): constants as SQLite compares them with a
** column, key bounds, IN lists, exact checks on records. */
int gpudsKeyBound(int eOp, sqlite3_value *v, int64_t *pLo, int64_t *pHi);
int gpudsTermConst(sqlite3_value *pArg, char aff, int eText, GpudsValue *v);
int gpudsTermConstText(sqlite3_value *pArg, int eText, GpudsValue *v);
int gpudsTermIn(int (*xNext)(void*, sqlite3_value**), void *pCtx, char aff, int eText,
                int bAny, int bText, GpudsColTerm *t);
int gpudsTermInVtab(sqlite3_value *pArg, char aff, int eText, int bAny, GpudsColTerm *t);
int gpudsTermHolds(const GpudsRow *pRow, const GpudsColTerm *t, int eText);
void gpudsTermFree(GpudsColTerm *t);

/* The build of a table's column set (colbuild.c) */
int gpudsColsBuild(GpudsTable *p);

/* The 8-byte values of column iCol (0-based, non-key) of the table's
** column set that stand for more than one TEXT or BLOB value (coltext.c) */
int gpudsColsAmbig(GpudsTable *p, int iCol, const uint64_t **paAmbig, int64_t *pn);

/* Error helper (error.c): set the table's error message (printf-style),
** return rc. */
int gpudsVtabError(GpudsTable *p, int rc, const char *zFmt, ...);
int gpudsErrorV(sqlite3_vtab *pVtab, int rc, const char *zFmt, va_list ap);

/* The history of a shared copy and its latch (version.c) */
typedef struct GpudsVerEnt {
  int64_t k;                  /* a key a version newer than a snapshot holds */
  uint64_t v;                 /* its value at the snapshot, if bFound */
  uint8_t bFound;
  int64_t iSeq;               /* the version's number */
} GpudsVerEnt;
GpudsLatchSlot *gpudsLatchSlotNew(void);
void gpudsLatchJoin(GpudsCopy *c, GpudsTable *p, GpudsLatchSlot *s);
void gpudsLatchLeave(GpudsCopy *c, GpudsTable *p);
void gpudsLatchRead(GpudsTable *p);
void gpudsLatchReadEnd(GpudsTable *p);
void gpudsLatchWrite(GpudsTable *p);
int gpudsLatchTryWrite(GpudsTable *p);
void gpudsLatchWriteEnd(GpudsTable *p);
int gpudsLatchUpgrade(GpudsTable *p);
void gpudsColsLock(GpudsTable *p);
void gpudsColsUnlock(GpudsTable *p);
int gpudsSnapActive(GpudsTable *p);
void gpudsSnapIdle(GpudsTable *p);
int gpudsSnapBreak(GpudsTable *pOther);
void gpudsFlushFree(GpudsFlush *f);
void gpudsVersionFreeList(GpudsFlush *pList);
void gpudsVersionAdd(GpudsTable *p, GpudsFlush *f);
void gpudsVersionRemove(GpudsTable *p, GpudsFlush *f);
int gpudsVersionNewer(const GpudsTable *p);
void gpudsVersionLookup(const GpudsTable *p, size_t n, const int64_t *aKey,
                        uint8_t *aFound, uint64_t *aVal);
int gpudsVersionRange(const GpudsTable *p, int64_t lo, int64_t hi,
                      GpudsVerEnt **pa, size_t *pn);
int gpudsVersionKeys(const GpudsTable *p, int64_t **pa, int64_t *pn);
int64_t gpudsVersionDelta(const GpudsTable *p);

/* One copy of each table per process (copy.c) */
typedef struct GpudsMeta GpudsMeta;     /* t_meta, read (runfmt.h) */
int gpudsCopyNew(GpudsTable *p, GpudsCopy **ppCopy);
void gpudsCopyDiscard(GpudsCopy *c);
int gpudsCopyAdopt(GpudsTable *p, GpudsCopy *c, const GpudsMeta *m);
int gpudsCopyAttach(GpudsTable *p, const GpudsMeta *m, int bOther, int *pbDone);
void gpudsCopyPublish(GpudsTable *p);
int gpudsCopyHandOver(GpudsTable *pFrom, GpudsTable *pTo);
void gpudsCopyCreated(GpudsTable *p);
void gpudsCopyDetach(GpudsTable *p);
void gpudsCopyDrop(GpudsTable *p);
void gpudsCopyRepin(GpudsTable *p);
int gpudsCopyWriteBegin(GpudsTable *p);
void gpudsCopyPending(GpudsTable *p, int64_t iGen, int64_t iStamp);
int gpudsCopyCommitted(GpudsTable *p);
void gpudsCopyRolledBack(GpudsTable *p, int bBroken);
int gpudsCopyUsers(GpudsTable *p);
int64_t gpudsCopyVersions(GpudsTable *p);

/* Statements on the table's connection (stmt.c): printf-formatted SQL run
** or prepared, its error in the table's message; a PRAGMA's one value. */
int gpudsRunExec(GpudsTable *p, const char *zFmt, ...);
int gpudsRunPrepare(GpudsTable *p, sqlite3_stmt **ppStmt, const char *zFmt, ...);
int gpudsPragmaPick(sqlite3 *db, const char *zSql, const char *const *azValue,
                    int nValue);
int gpudsPragmaIs(sqlite3 *db, const char *zSql, const char *zValue);

/* Write buffer (wbuf.c) */
int gpudsWbufInit(GpudsTable *p);
void gpudsWbufClear(GpudsTable *p);
int gpudsWbufGet(GpudsTable *p, int64_t k, int *pbHit, uint64_t *pVal);
int gpudsWbufPut(GpudsTable *p, int64_t k, uint64_t v);
int gpudsWbufPut2(GpudsTable *p, int64_t k1, uint64_t v1, int64_t k2, uint64_t v2);
int gpudsOverlayLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                       uint8_t *aHit, uint64_t *aVal);
int gpudsOverlayScan(GpudsTable *p, gpuds_scan *pScan, size_t nMax,
                     int64_t *aKey, uint64_t *aVal, size_t *pnOut);
int gpudsWbufFlush(GpudsTable *p, int bForce);
int gpudsWbufSavepoint(GpudsTable *p, int iSavepoint);
int gpudsWbufRelease(GpudsTable *p, int iSavepoint);
int gpudsWbufRollbackTo(GpudsTable *p, int iSavepoint);
int gpudsWbufRollback(GpudsTable *p);
int gpudsWbufBrokenClear(GpudsTable *p);
void gpudsWbufCommit(GpudsTable *p);
void gpudsRowGarbage(GpudsTable *p, uint64_t hRow);
void gpudsCollectGarbage(GpudsTable *p);
int gpudsWbufEmpty(const GpudsTable *p);
int gpudsWbufBatches(GpudsTable *p, int bUnsynced, GpudsBatch **paBatch,
                     int64_t *pnBatch);
int gpudsWbufSyncLost(const GpudsTable *p);
void gpudsWbufSynced(GpudsTable *p);

/* The store and its host mirror (store.c): the only file that calls the
** backends' ops tables, the column set's included; the stores are the
** copy's (copy.c), read at the table's snapshot (version.c) */
int64_t gpudsStoreCount(GpudsTable *p);
int64_t gpudsStoreRows(GpudsTable *p);
const char *gpudsStoreBackend(const GpudsTable *p);
const char *gpudsStoreKindBackend(int eKind);
int gpudsStoreHasMirror(const GpudsTable *p);
int gpudsStoreKind(const GpudsTable *p);
const char *gpudsStoreWhy(const GpudsTable *p);
const char *gpudsColsWhy(const GpudsTable *p);
int gpudsStoreInfo(GpudsTable *p, int bMirror, char *zBuf, size_t nBuf);
int gpudsColsBuilt(const GpudsTable *p);
const char *gpudsColsBackend(const GpudsTable *p);
int gpudsStoreColsLoad(GpudsTable *p, int nCol, int64_t n, const int64_t *aKey,
                       const uint64_t *aRow, const uint8_t *aTag, const uint64_t *aVal);
int gpudsStoreColsQuery(GpudsTable *p, const gpuds_query *q, int64_t *pn,
                        int64_t **paKey, uint64_t **paRow, uint64_t **paSort,
                        int *pbAgain);
int gpudsStoreColsAgg(GpudsTable *p, const gpuds_agg *pAgg, gpuds_aggres *pRes);
int gpudsStoreColsSkip(GpudsTable *p, int64_t **pa, int64_t *pn);
int gpudsStoreCreate(GpudsTable *p, GpudsCopy *c);
void gpudsStoreFree(GpudsCopy *c);
int gpudsStoreBatch(GpudsTable *p, size_t n, const uint8_t *aOp,
                    const int64_t *aKey, const uint64_t *aVal,
                    uint8_t *aFound, uint64_t *aOld);
int gpudsStoreBulk(GpudsTable *p, size_t n, const int64_t *aKey, const uint64_t *aVal);
int gpudsStoreBuild(GpudsTable *p, GpudsCopy *c, size_t n, const int64_t *aKey,
                    const uint64_t *aVal);
int gpudsStoreLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                     uint8_t *aFound, uint64_t *aVal);
int gpudsStoreScan(GpudsTable *p, gpuds_scan *pScan, size_t nMax,
                   int64_t *aKey, uint64_t *aVal, size_t *pnOut);
int gpudsStoreKeys(GpudsTable *p, int64_t lo, int64_t hi, int64_t **paKey, int64_t *pn);
int gpudsStoreCheck(GpudsTable *p);
int gpudsStoreOrdered(const GpudsTable *p);
void gpudsStoreFreeRows(GpudsCopy *c);
void gpudsStoreColsDrop(GpudsCopy *c);
int gpudsStoreEach(GpudsTable *p, int (*xEach)(GpudsTable*, void*, const int64_t*,
                   const uint64_t*, size_t), void *pCtx);

/* A flush applied to the copy, the key filter's rules (flush.c) */
int gpudsStoreMaybe(GpudsTable *p, int64_t k);
int gpudsStoreFlush(GpudsTable *p, GpudsFlush *f);
int gpudsStoreUndo(GpudsTable *p, GpudsFlush *f);

/* Persistence (shadow.c) */
int gpudsShadowName(const char *zSuffix);
int gpudsShadowCreate(GpudsTable *p);
int gpudsShadowDestroy(GpudsTable *p);
int gpudsShadowRename(GpudsTable *p, const char *zNew);
void gpudsShadowClose(GpudsTable *p);
int gpudsShadowSync(GpudsTable *p);
int gpudsShadowExists(GpudsTable *p, int *pbExists);
int gpudsShadowRefresh(GpudsTable *p);
void gpudsShadowCommitted(GpudsTable *p);
void gpudsShadowRolledBack(GpudsTable *p, int bFull, int bReload);
int gpudsShadowCheck(GpudsTable *p, char **pzResult);
int gpudsShadowReady(GpudsTable *p);
int gpudsShadowWrite(GpudsTable *p);
int gpudsShadowPending(const GpudsTable *p);
int64_t gpudsShadowRows(GpudsTable *p);
GpudsTable *gpudsTableFind(sqlite3 *db, const char *zName);
GpudsTable *gpudsTableFindExact(sqlite3 *db, const char *zDb, const char *zName);

/* The store built by a thread of its own (bgload.c): started where a load
** is due, installed (or dropped, if the table moved on) when finished. */
typedef struct GpudsBuild GpudsBuild;
#define GPUDS_BUILD_SNAPSHOT 1  /* the build reads in a read transaction */
#define GPUDS_BUILD_UNLOCKED 2  /* ... without locks (immutable=1) */
int gpudsDbIsWal(sqlite3 *db, const char *zDb);
int gpudsBuildStart(GpudsTable *p, int eHow, GpudsBuild **ppBuild);
int gpudsBuildDone(GpudsBuild *b);
int gpudsBuildFinish(GpudsTable *p, GpudsBuild *b, const GpudsMeta *m, int *pbInstalled);
void gpudsBuildCancel(GpudsBuild *b);

/* Key lookups answered from the runs on disk (diskread.c), while a build
** runs: rows returned are the caller's (gpudsRowFreeHandle). */
typedef struct GpudsDisk GpudsDisk;
int gpudsDiskLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                    uint8_t *aFound, uint64_t *aRow);
void gpudsDiskReset(GpudsTable *p);

/* Lookups through the overlay (read.c) */
int gpudsLookupMany(GpudsTable *p, size_t n, const int64_t *aKey,
                    uint8_t *aFound, uint64_t *aRow);
int gpudsMaxKey(GpudsTable *p, int *pbAny, int64_t *pMax);
int gpudsKeyExists(GpudsTable *p, int64_t k, int *pbExists);

/* Merged scans (read.c): store + write buffer, one page at a time. */
typedef struct GpudsMerge GpudsMerge;
int gpudsMergeOpen(GpudsTable *p, int64_t lo, int64_t hi, int bDesc,
                   int64_t nHint, GpudsMerge **pp);
int gpudsMergeNext(GpudsMerge *m, int *pbEof, int64_t *pKey, uint64_t *pRow);
int gpudsMergeRun(GpudsMerge *m, const int64_t **paKey, const uint64_t **paRow,
                  size_t *pn);
void gpudsMergeEnd(GpudsMerge *m);
void gpudsMergeClose(GpudsMerge *m);

/* Module registration (vtab.c, view.c) and gpuds_info() (info.c).  A module's
** client data (pAux) is a GpudsModAux: its kind, and the connection it is
** registered in (gpuds.c keeps them: a second load into the connection
** registers nothing). */
typedef struct GpudsModAux {
  int eKind;                  /* GPUDS_ORDERED (gfsl) or GPUDS_HASH (gpuhash) */
  sqlite3 *db;
  struct GpudsModAux *pNext;  /* gpuds.c's list */
} GpudsModAux;
int gpudsRegisterModules(sqlite3 *db, GpudsModAux *pGfsl, GpudsModAux *pHash,
                         void (*xDestroy)(void*));
void gpudsUnregisterModules(sqlite3 *db);
int gpudsRegisterView(sqlite3 *db);
int gpudsRegisterFunctions(sqlite3 *db);
void gpudsTableListAdd(GpudsTable *p);
void gpudsTableListRemove(GpudsTable *p);
void gpudsTableHold(GpudsTable *p);
void gpudsTableRelease(GpudsTable *p);
/* Something else gpuds_info() lists (a view): its JSON object by xJson. */
typedef struct GpudsInfoNode {
  sqlite3 *db;
  void *pArg;
  void (*xJson)(void *pArg, sqlite3_str *s);
  struct GpudsInfoNode *pNext;
} GpudsInfoNode;
void gpudsInfoAdd(GpudsInfoNode *pNode);
void gpudsInfoRemove(GpudsInfoNode *pNode);

/* Convert a value to an integer key the way an INTEGER PRIMARY KEY compares:
** returns 1 and sets *pk if v equals exactly one integer key, else 0. */
int gpudsValueToKey(sqlite3_value *v, int64_t *pk);

#endif /* GPUDS_INT_H */
