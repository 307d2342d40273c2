/*
** host_cols.h -- the host column set's arrays (host_cols.c), shared with
** its aggregation (host_agg.c).
*/
#ifndef GPUDS_HOST_COLS_H
#define GPUDS_HOST_COLS_H

#include "gpuds_backend.h"
#include "gpuds_search.h"

typedef struct HostCols {
  int nCol;
  int64_t n;
  int bSorted;               /* aKey ascending */
  int64_t *aKey;
  uint64_t *aRow;
  uint8_t *aTag;             /* nCol*n: column c of row i at c*n+i */
  uint64_t *aVal;
  char zErr[128];
} HostCols;

/* A pass over a set's rows takes one thread a share of at least
** HOST_SHARE_MIN rows, and at most HOST_MAX_THREADS threads:
** gpudsHostThreads(rows) of them, run by gpudsHostRunParts (host_cols.c). */
#define HOST_SHARE_MIN 32768
#define HOST_MAX_THREADS 16
int gpudsHostThreads(int64_t nRow);
void gpudsHostRunParts(void *(*xRun)(void*), void *aPart, size_t szPart, int nPart);

/* xAgg of the host column set (host_agg.c). */
int gpudsHostColsAgg(gpuds_cols *p, const gpuds_agg *pAgg, gpuds_aggres *pRes);

#endif
