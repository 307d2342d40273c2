/*
** storetest.h -- the harness of test_host_stores.c (storetest.c): a store
** under test beside a trivially correct reference, the checks that compare
** them, allocation-failure injection and seeded random numbers.
**
** The reference.  Each scenario draws a sorted "domain" of distinct keys
** (crowded near INT64_MIN, 0 and INT64_MAX, plus clusters and random ones).
** The reference holds a present flag and a value per domain index: lookups
** are a binary search, updates O(1), ordered scans walk the indices.  Keys
** outside the domain are used only for lookups and deletes (always absent).
*/
#ifndef GPUDS_STORETEST_H
#define GPUDS_STORETEST_H

#include "gpuds_backend.h"
#include <stddef.h>
#include <stdint.h>

typedef struct Ref Ref;
struct Ref {
  int64_t *aDom;     /* nDom distinct keys, ascending */
  size_t nDom;
  uint8_t *aHas;     /* aHas[i]: aDom[i] is present */
  uint64_t *aVal;    /* its value when present */
  int64_t nKey;      /* present keys */
  size_t iZero;      /* index of the first domain key >= 0 */
};

typedef struct T T;
struct T {
  const gpuds_store_ops *pOps;
  gpuds_store *pS;
  Ref ref;
  int bOrdered;
  /* batch buffers */
  size_t nBuf;
  uint8_t *aOp, *aFound;
  int64_t *aKey;
  uint64_t *aVal, *aOld;
};

/* Allocation-failure injection: the allocation after the next nOk fails
** (and every one after it with bPersist), until faultOff(). */
extern long long nFaultHit;       /* failures injected so far */
void faultArm(long long nOk, int bPersist);
void faultOff(void);
int faultWorks(void);

/* Seeded random numbers (splitmix64 from rngState). */
extern uint64_t rngState;
uint64_t rnd64(void);
uint64_t rndN(uint64_t n);
uint64_t rndVal(void);

/* Checks: a failed one reports the seed that replays it and exits. */
extern long long nCheck;          /* checks made */
extern long long mxHeight;        /* tallest b+tree seen (coverage) */
extern long long nHintSeen;       /* checks that met a b+tree hint table */
extern uint64_t curSeed;          /* the seed running */
extern const char *curWhat;       /* the store running */
void failed(const char *zFile, int line, const char *zFmt, ...);
#define CHECK(c, ...) \
  do{ nCheck++; if( !(c) ) failed(__FILE__, __LINE__, __VA_ARGS__); }while(0)
double nowSec(void);
void *xmalloc(size_t n);

/* The reference and a store under test. */
void refApply(Ref *r, int op, int64_t k, uint64_t v, uint8_t *pFound, uint64_t *pOld);
void tOpen(T *t, const gpuds_store_ops *pOps, size_t nDom);
void tClose(T *t);
void tBuffers(T *t, size_t n);
long long tInfoField(T *t, const char *zField);
void tCheckStructure(T *t);
void tVerifyAll(T *t);
void tGenBatch(T *t, size_t n, int pctLookup, int pctUpsert);
void tRunBatch(T *t, size_t n);
void tLookups(T *t, size_t n);
void tScans(T *t, int nScan);
void tScanMutating(T *t);
void tReload(T *t);
void tBulkMore(T *t, int pct);
void tMisuse(T *t);
void tDrain(T *t);
void tFaultOne(T *t, int bBulk);
void tFaultCreate(const gpuds_store_ops *pOps);

#endif /* GPUDS_STORETEST_H */
