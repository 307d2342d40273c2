/* runfmt.h -- the run format of <name>_run (runfmt.c), shared by the
** persistence files (shadow.c, loader.c).
**
**   <name>_run(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB)
**   id     (run << RUN_SHIFT) | chunk: "ORDER BY id" reads runs oldest to
**          newest, each in key order
**   keys   n little-endian int64 keys, strictly ascending
**   vals   n entries: u32 length L then L bytes of a row record (row.c), or
**          L = SHADOW_TOMB for a key the run deletes; in format 2 followed by
**          a SHADOW_SUM-byte checksum of keys and entries (gpudsChunkSum)
*/
#ifndef GPUDS_RUNFMT_H
#define GPUDS_RUNFMT_H

#define SHADOW_FORMAT  2     /* written by this build: chunks carry a checksum */
#define SHADOW_FORMAT_MIN 1  /* oldest read and written: format 1, no checksums */
#define SHADOW_SUM     8     /* bytes of a format-2 chunk's checksum */
#define SHADOW_CHUNK   65536 /* keys per chunk at most */
#define SHADOW_TOMB    0xffffffffu
#define RUN_SHIFT      20

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
} RunWriter;

/* A merge's output: one key, its newest record (NULL: deleted). */
typedef int (*MergeOut)(GpudsTable*, void*, int64_t, const unsigned char*, uint32_t);

uint64_t gpudsChunkSum(const unsigned char *aK, size_t nK,
                       const unsigned char *aV, size_t nV);
int gpudsRunExec(GpudsTable *p, const char *zFmt, ...);
int gpudsRunPrepare(GpudsTable *p, sqlite3_stmt **ppStmt, const char *zFmt, ...);
int gpudsRunListCap(GpudsTable *p, int64_t **paRun, int64_t **paN, int64_t **paCap,
                    int *pnRun);
int gpudsRunList(GpudsTable *p, int64_t **paRun, int64_t **paN, int *pnRun);
int gpudsRunMerge(GpudsTable *p, const int64_t *aRun, int nRun, int bDropTomb,
                  MergeOut xOut, void *pCtx);
int gpudsRunWriterOpen(GpudsTable *p, int64_t iRun, RunWriter *w);
int gpudsRunWriterFlush(GpudsTable *p, RunWriter *w);
int gpudsRunWriterAdd(GpudsTable *p, RunWriter *w, int64_t k,
                      const unsigned char *aRec, uint32_t nRec);
void gpudsRunWriterClose(RunWriter *w);

/* loader.c: load the store from the runs (generation iGen). */
int gpudsShadowLoad(GpudsTable *p, int64_t iGen);

#endif /* GPUDS_RUNFMT_H */
