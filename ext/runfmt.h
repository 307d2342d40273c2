/* runfmt.h -- the run format of <name>_run (runfmt.c), shared by the
** persistence files (shadow.c, loader.c).
**
**   <name>_run(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB)
**   id     (run << RUN_SHIFT) | chunk: "ORDER BY id" reads runs oldest to
**          newest, each in key order
**   keys   n little-endian int64 keys, strictly ascending
**   vals   n entries: u32 length L then L bytes of a row record (row.c), or
**          L = SHADOW_TOMB for a key the run deletes; in format 2 followed by
**          a SHADOW_SUM-byte checksum of keys and entries (gpudsChunkSum);
**          in format 3, L = SHADOW_OVFL for a record too big for a chunk,
**          followed by a SHADOW_OVFL_REF-byte reference (GpudsOvfl) to its
**          pieces in <name>_ovfl
**
**   <name>_ovfl(id INTEGER PRIMARY KEY, data BLOB)   (format 3)
**   the pieces of spilled records: a record's pieces are the rows
**   iFirst..iFirst+nPiece-1, their data in order; each piece is referenced
**   by exactly one entry of one run (a merge that drops the entry deletes
**   the pieces)
*/
#ifndef GPUDS_RUNFMT_H
#define GPUDS_RUNFMT_H

#define SHADOW_FORMAT  3     /* written by this build: checksums, spilled records */
#define SHADOW_FORMAT_MIN 1  /* oldest read and written: format 1, no checksums */
#define SHADOW_FORMAT_OVFL 3 /* first format with <name>_ovfl */
#define SHADOW_SUM     8     /* bytes of a format-2 chunk's checksum */
#define SHADOW_CHUNK   65536 /* keys per chunk at most */
#define SHADOW_TOMB    0xffffffffu
#define SHADOW_OVFL    0xfffffffeu  /* entry: a spilled record's reference */
#define SHADOW_OVFL_REF 24   /* bytes of the reference: i64 iFirst, u32 nRec,
                             ** u32 nPiece, u64 checksum of the record */
#define SHADOW_SLACK   64    /* bytes of a t_run row besides its keys and vals
                             ** (record header, id, n), kept free under the
                             ** length limit */
#define RUN_SHIFT      20

/* Where a spilled record lies in <name>_ovfl. */
typedef struct GpudsOvfl {
  int64_t iFirst;         /* id of its first piece (> 0) */
  uint32_t nRec;          /* record bytes */
  uint32_t nPiece;        /* pieces: ids iFirst..iFirst+nPiece-1 */
  uint64_t sum;           /* gpudsChunkSum of the record bytes */
} GpudsOvfl;

typedef struct RunWriter {
  sqlite3_stmt *pIns;
  int64_t nLimit;         /* largest blob the connection accepts */
  int64_t iRun;
  int iChunk;
  int n;
  int64_t *aKey;          /* SHADOW_CHUNK keys */
  unsigned char *aVal;    /* the chunk's vals */
  size_t nVal, nValAlloc;
  int64_t nTotal;
  int bSum;               /* format 2: end each chunk with its checksum */
  int bOvfl;              /* format 3: spill records too big for a chunk */
  sqlite3_stmt *pOvflIns; /* INSERT INTO <name>_ovfl, once needed */
  int64_t iOvflNext;      /* id of the next piece (0: not yet looked up) */
} RunWriter;

/* A merge's output: one key and its newest record: inline (aRec, nRec),
** spilled (pOvfl, aRec NULL), or deleted (aRec and pOvfl NULL). */
typedef int (*MergeOut)(GpudsTable*, void*, int64_t, const unsigned char*, uint32_t,
                        const GpudsOvfl*);
#define MERGE_DROP_TOMB 1    /* gpudsRunMerge: leave deletions out */
#define MERGE_FREE_OVFL 2    /* delete the pieces of overridden spilled records */

uint64_t gpudsChunkSum(const unsigned char *aK, size_t nK,
                       const unsigned char *aV, size_t nV);
int gpudsRunExec(GpudsTable *p, const char *zFmt, ...);
int gpudsRunPrepare(GpudsTable *p, sqlite3_stmt **ppStmt, const char *zFmt, ...);
int gpudsRunListCap(GpudsTable *p, int64_t **paRun, int64_t **paN, int64_t **paCap,
                    int *pnRun);
int gpudsRunList(GpudsTable *p, int64_t **paRun, int64_t **paN, int *pnRun);
int gpudsRunMerge(GpudsTable *p, const int64_t *aRun, int nRun, int mFlags,
                  MergeOut xOut, void *pCtx);
int64_t gpudsRunInlineMax(GpudsTable *p);
int gpudsOvflParse(const unsigned char *a, GpudsOvfl *o);
int gpudsOvflRead(GpudsTable *p, int64_t iRun, const GpudsOvfl *o, int nCol,
                  unsigned char **paRec);
int gpudsOvflDelete(GpudsTable *p, const GpudsOvfl *o);
int gpudsOvflDeleteAll(GpudsTable *p);
int gpudsRunWriterOpen(GpudsTable *p, int64_t iRun, RunWriter *w);
int gpudsRunWriterFlush(GpudsTable *p, RunWriter *w);
int gpudsRunWriterAdd(GpudsTable *p, RunWriter *w, int64_t k,
                      const unsigned char *aRec, uint32_t nRec);
int gpudsRunWriterAddOvfl(GpudsTable *p, RunWriter *w, int64_t k, const GpudsOvfl *o);
void gpudsRunWriterClose(RunWriter *w);

/* loader.c: load the store from the runs (generation iGen). */
int gpudsShadowLoad(GpudsTable *p, int64_t iGen);

#endif /* GPUDS_RUNFMT_H */
