/*
** gpuds_config.h -- every setting gpuds takes from the environment, read in
** one place (config.c).
**
** The environment is read by gpudsConfigLoad(), which the extension's entry
** point calls each time it is loaded into a connection, so a process that
** sets a variable before loading the extension gets it; a value a variable
** does not take fails the load, naming the variable and what it takes.
** gpudsConfig() loads once on first use where nothing loaded it (unit
** tests, benchmarks that use the stores without SQLite; a bad value then
** leaves every setting at its default).  README.md lists every variable
** with its default.
*/
#ifndef GPUDS_CONFIG_H
#define GPUDS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GPUDS_FLUSH_ROWS: apply a transaction's write buffer to the store once it
** holds this many keys.  2^20 keeps the buffer's host map (about 40 bytes a
** key) under ~50 MB while leaving batches big enough to fill a GPU. */
#define GPUDS_DEFAULT_FLUSH_ROWS ((int64_t)1<<20)

/* GPUDS_HOST_CHUNK: keys per chunk of the pipelined host<->GPU transfers.
** 2^19 keys (8.5 MiB of pinned memory a slot) is about where one chunk's
** copy time covers its kernel (see kernels/common/hostpipe.cuh); above 2^24
** the pinned slots would take hundreds of MiB. */
#define GPUDS_DEFAULT_HOST_CHUNK ((size_t)1<<19)
#define GPUDS_MAX_HOST_CHUNK     ((size_t)1<<24)

/* What GPUDS_MIRROR asks for. */
#define GPUDS_MIRROR_DEFAULT 0   /* unset: mirror GPU stores only */
#define GPUDS_MIRROR_NEVER   1   /* =0: no mirror (every read goes to the GPU) */
#define GPUDS_MIRROR_ALWAYS  2   /* =1: mirror host stores too (tests) */

/* What GFSL_REBUILD asks of the GFSL store's batch path. */
#define GPUDS_REBUILD_AUTO   0   /* unset: rebuild when a batch is large */
#define GPUDS_REBUILD_NEVER  1   /* =never: always apply batches in place */
#define GPUDS_REBUILD_ALWAYS 2   /* =always: always rebuild (tests) */

#define GPUDS_COLPLAN_AUTO   0   /* unset: column plans where they cost less */
#define GPUDS_COLPLAN_OFF    1   /* =off: never (SQLite filters every row) */
#define GPUDS_COLPLAN_ALWAYS 2   /* =always: whenever a column term or ORDER
                                 ** BY can be taken (tests: small tables) */

/* What GPUDS_COLUMNS_ON_LOAD asks of a background load (ext/bgload.c):
** whether it builds the table's column set after its store, so that the
** first column query after opening finds it. */
#define GPUDS_COLSLOAD_AUTO   0   /* unset: where the set would be on the GPU */
#define GPUDS_COLSLOAD_OFF    1   /* =0, or GPUDS_COLUMN_PLANS=off: never */
#define GPUDS_COLSLOAD_ALWAYS 2   /* =1: the host column set too */

/* What GPUDS_LAZY_LOAD asks of the first use of a table after opening
** (and of a reload after another connection's commit): whether its store is
** built by a background thread while point queries read the runs on disk
** (ext/bgload.c, ext/diskread.c), or loaded before the statement goes on. */
#define GPUDS_LAZY_AUTO   0   /* unset: in background for a WAL database of a
                              ** table of at least GPUDS_LAZY_MIN_ENTRIES entries */
#define GPUDS_LAZY_OFF    1   /* =off: always load before answering */
#define GPUDS_LAZY_ALWAYS 2   /* =always: in background for any non-empty table
                              ** of a database file, whatever its journal mode */
#define GPUDS_LAZY_HOLD   3   /* =hold (tests): as always, and the build waits,
                              ** its snapshot taken, until a statement needs it */
#define GPUDS_LAZY_MIN_ENTRIES ((int64_t)1<<16)

/* GPUDS_GPU_MEMORY: the most device memory gpuds takes from the GPU in this
** process (stores, column sets, equality indexes, workspaces), in bytes: a
** whole number, optionally followed by K, M or G (2^10, 2^20, 2^30, either
** case).  Unset or empty: no cap.  A table part that would pass it lives on
** the host instead (ext/store.c, ext/colbuild.c). */
#define GPUDS_GPU_MEMORY_TEXT 24  /* bytes kept of the value, for messages */

typedef struct gpuds_config {
  int bForceHost;        /* GPUDS_BACKEND=host */
  int64_t nFlushRows;    /* GPUDS_FLUSH_ROWS, >= 1 */
  int eMirror;           /* GPUDS_MIRROR, GPUDS_MIRROR_xxx */
  size_t nHostChunk;     /* GPUDS_HOST_CHUNK, 0 = one copy each way */
  int eGfslRebuild;      /* GFSL_REBUILD, GPUDS_REBUILD_xxx */
  int eColPlans;         /* GPUDS_COLUMN_PLANS, GPUDS_COLPLAN_xxx */
  int eLazyLoad;         /* GPUDS_LAZY_LOAD, GPUDS_LAZY_xxx */
  int bHugePages;        /* GPUDS_HUGE_PAGES: 0 when =0 (no MADV_HUGEPAGE
                         ** for B+tree leaf slabs, hint tables, row arenas) */
  int eColsOnLoad;       /* GPUDS_COLUMNS_ON_LOAD, GPUDS_COLSLOAD_xxx */
  int bNoShare;          /* GPUDS_SHARE=0: no connection shares another's
                         ** copy of a table (ext/copy.c) */
  int bGpuMemCap;        /* GPUDS_GPU_MEMORY is set: nGpuMemCap caps */
  uint64_t nGpuMemCap;   /* ... the device bytes gpuds holds (0: none) */
  char zGpuMemory[GPUDS_GPU_MEMORY_TEXT];  /* its value as set ("" unset) */
} gpuds_config;

/* Read the environment into the process's configuration: 0, or 1 if a
** variable holds a value it does not take (the configuration is then left
** as it was) with the message in zErr[0..nErr) (zErr may be NULL). */
int gpudsConfigLoad(char *zErr, size_t nErr);

/* Parse a GPUDS_GPU_MEMORY value z (a whole number of bytes, optionally
** followed by K, M or G) into *pn: 0, or 1 if z is not such a value or
** overflows 64 bits. */
int gpudsParseBytes(const char *z, uint64_t *pn);

/* The configuration; loaded on first use if gpudsConfigLoad() was never
** called.  Never NULL. */
const gpuds_config *gpudsConfig(void);

#ifdef __cplusplus
}
#endif
#endif /* GPUDS_CONFIG_H */
