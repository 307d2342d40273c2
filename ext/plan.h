/* plan.h -- xBestIndex plans and their decoding (plan.c). */
#ifndef GPUDS_PLAN_H
#define GPUDS_PLAN_H

typedef struct GpudsPlan {
  int bEmpty;          /* no row can match */
  int bList;           /* EQ or IN plan: the keys are aKey[0..nKey-1] */
  int64_t *aKey;       /* sorted, distinct, within [lo,hi]; an EQ plan's
                       ** points to iKey1 (not to be moved elsewhere) */
  int64_t nKey;
  int64_t iKey1;
  int64_t lo, hi;      /* inclusive key bounds */
  int bDesc;           /* descending key order */
  int64_t nHint;       /* LIMIT+OFFSET: rows that can be needed, or -1 */
  /* column plans: terms on non-key columns, ORDER BY a column */
  int bCols;           /* answered by the column set (colset.c) */
  GpudsColTerm *aTerm; /* terms; text/blob constants copied (gpudsPlanFree) */
  int nTerm;
  int iOrderCol;       /* -1: key order; else the non-key column (0-based) */
  int bOrderDesc;
  int bRecheck;        /* every term is one SQLite checks again (a superset:
                       ** not omitted), so a scan of the key range is an
                       ** answer too */
} GpudsPlan;

int gpudsBestIndex(GpudsTable *p, sqlite3_index_info *pInfo);
int gpudsPlanDecode(GpudsTable *p, int idxNum, const char *idxStr, int argc,
                    sqlite3_value **argv, GpudsPlan *pPlan);
void gpudsPlanFree(GpudsPlan *pPlan);

#endif
