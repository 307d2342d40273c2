/* plan.h -- xBestIndex plans and their decoding (plan.c). */
#ifndef GPUDS_PLAN_H
#define GPUDS_PLAN_H

typedef struct GpudsPlan {
  int bEmpty;          /* no row can match */
  int bList;           /* EQ or IN plan: the keys are aKey[0..nKey-1] */
  int64_t *aKey;       /* sorted, distinct, within [lo,hi] */
  int64_t nKey;
  int64_t lo, hi;      /* inclusive key bounds */
  int bDesc;           /* descending key order */
  int64_t nHint;       /* LIMIT+OFFSET: rows that can be needed, or -1 */
} GpudsPlan;

int gpudsBestIndex(GpudsTable *p, sqlite3_index_info *pInfo);
int gpudsPlanDecode(int idxNum, int argc, sqlite3_value **argv, GpudsPlan *pPlan);

#endif
