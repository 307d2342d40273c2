/*
** host_cols.c -- the host column set (gpuds_cols_ops): the non-key columns
** of a table as arrays in host memory, filtered and ordered by tight loops
** over them.  The reference the CUDA column set (kernels/cols.cu) is
** checked against, and what a table without a GPU runs.  Its aggregation
** (xAgg) is host_agg.c.
*/
#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "gpuds_sort.h"
#include "host_cols.h"
#include "host_filter.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#include <unistd.h>

static HostCols *hc(gpuds_cols *p){ return (HostCols*)p; }

/* Free everything p holds, and p. */
static void colsFree(gpuds_cols *pCols){
  HostCols *p = hc(pCols);
  if( p==0 ) return;
  free(p->aKey); free(p->aRow); free(p->aTag); free(p->aVal);
  free(p);
}

/* A malloc()ed copy of message z for *pzErr. */
static void setErr(char **pzErr, const char *z){
  if( pzErr ){
    *pzErr = malloc(strlen(z)+1);
    if( *pzErr ) strcpy(*pzErr, z);
  }
}

/* xLoad: copy the arrays. */
static int colsLoad(gpuds_cols **pp, int nCol, int64_t n, int bSorted,
                    const int64_t *aKey, const uint64_t *aRow,
                    const uint8_t *aTag, const uint64_t *aVal, char **pzErr){
  HostCols *p = calloc(1, sizeof(*p));
  size_t nn = n>0 ? (size_t)n : 1, nc = nCol>0 ? (size_t)nCol : 1;
  *pp = 0;
  if( p==0 ){ setErr(pzErr, "out of memory"); return GPUDS_NOMEM; }
  p->nCol = nCol; p->n = n; p->bSorted = bSorted;
  p->aKey = malloc(nn*8);
  p->aRow = malloc(nn*8);
  p->aTag = malloc(nn*nc);
  p->aVal = malloc(nn*nc*8);
  if( !p->aKey || !p->aRow || !p->aTag || !p->aVal ){
    colsFree((gpuds_cols*)p);
    setErr(pzErr, "out of memory");
    return GPUDS_NOMEM;
  }
  if( n>0 ){
    memcpy(p->aKey, aKey, (size_t)n*8);
    memcpy(p->aRow, aRow, (size_t)n*8);
    if( nCol>0 ){
      memcpy(p->aTag, aTag, (size_t)n*nCol);
      memcpy(p->aVal, aVal, (size_t)n*nCol*8);
    }
  }
  *pp = (gpuds_cols*)p;
  return GPUDS_OK;
}

/* ------------------------------------------------------------- queries */

/* One thread's share of a query's filter: rows [r0, r1), their matches'
** indices written from aIdx[0] on in ascending order (*pnOut).  Stops once
** it has more than nMost (> 0) of them: the query then returns none. */
typedef struct ScanPart {
  const HostCols *p;
  const gpuds_query *q;
  int64_t r0, r1;
  int64_t *aIdx;
  int64_t nOut;
} ScanPart;

static void *scanRun(void *pArg){
  ScanPart *w = (ScanPart*)pArg;
  const HostCols *p = w->p;
  const gpuds_query *q = w->q;
  uint8_t aMaybe[HOST_BLOCK];
  int64_t b0, n = 0, iSkip = -1, m;
  int t;
  for(b0=w->r0; b0<w->r1; b0+=HOST_BLOCK){
    int64_t b1 = b0+HOST_BLOCK<w->r1 ? b0+HOST_BLOCK : w->r1;
    int64_t *aSel = w->aIdx + n;
    m = gpudsHostBlock(p, q, b0, b1, &iSkip, aSel, aMaybe);
    for(t=0; t<q->nTerm && m>0; t++) m = gpudsHostTermPass(p, q, t, 0, aSel, aMaybe, m);
    n += m;
    if( q->nMost>0 && n>q->nMost ) break;
  }
  w->nOut = n;
  return 0;
}

/* The number of threads for a pass over nRow rows: one share of at least
** HOST_SHARE_MIN rows per CPU, at most HOST_MAX_THREADS. */
int gpudsHostThreads(int64_t nRow){
  long nCpu = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t n = nRow/HOST_SHARE_MIN;
  if( nCpu<1 ) nCpu = 1;
  if( n>nCpu ) n = nCpu;
  if( n>HOST_MAX_THREADS ) n = HOST_MAX_THREADS;
  return n<1 ? 1 : (int)n;
}

/* xRun on each of the nPart parts of the array aPart (szPart bytes a
** part), at once: parts 1.. on threads of their own (on this one where a
** thread cannot be made), part 0 on this one; returns when all are done. */
void gpudsHostRunParts(void *(*xRun)(void*), void *aPart, size_t szPart, int nPart){
  pthread_t aTid[HOST_MAX_THREADS];
  int aOk[HOST_MAX_THREADS], t;
  for(t=1; t<nPart; t++){
    aOk[t] = pthread_create(&aTid[t], 0, xRun, (char*)aPart + szPart*(size_t)t)==0;
  }
  xRun(aPart);
  for(t=1; t<nPart; t++){
    if( aOk[t] ) pthread_join(aTid[t], 0);
    else xRun((char*)aPart + szPart*(size_t)t);
  }
}

/* The indices of the rows [i0, i1) that match q, ascending, into aIdx
** (room for i1-i0): their number, or more than q->nMost (> 0) where more
** match (the indices then undefined).  One share of the rows a thread. */
static int64_t scanAll(const HostCols *p, const gpuds_query *q, int64_t i0, int64_t i1,
                       int64_t *aIdx){
  ScanPart aPart[HOST_MAX_THREADS];
  int nPart = gpudsHostThreads(i1-i0), t;
  int64_t nOut = 0;
  memset(aPart, 0, sizeof(aPart));
  for(t=0; t<nPart; t++){
    ScanPart *w = &aPart[t];
    w->p = p; w->q = q;
    w->r0 = i0 + (i1-i0)*t/nPart;
    w->r1 = i0 + (i1-i0)*(t+1)/nPart;
    w->aIdx = aIdx + (w->r0 - i0);
  }
  gpudsHostRunParts(scanRun, aPart, sizeof(aPart[0]), nPart);
  for(t=0; t<nPart; t++){
    if( aPart[t].aIdx!=aIdx+nOut && aPart[t].nOut>0 ){
      memmove(aIdx+nOut, aPart[t].aIdx, (size_t)aPart[t].nOut*8);
    }
    nOut += aPart[t].nOut;
  }
  return nOut;
}

/* xQuery (see gpuds_backend.h). */
static int colsQuery(gpuds_cols *pCols, const gpuds_query *q, int64_t *pn,
                     int64_t **paKey, uint64_t **paRow, uint64_t **paSort){
  HostCols *p = hc(pCols);
  int64_t i0 = 0, i1 = p->n, i, nOut = 0, *aIdx = 0;
  uint64_t *aS = 0;
  int rc = GPUDS_OK, t;

  *pn = 0; *paKey = 0; *paRow = 0;
  if( paSort ) *paSort = 0;
  for(t=0; t<q->nTerm; t++){
    if( q->aTerm[t].iCol<0 || q->aTerm[t].iCol>=p->nCol ) return GPUDS_MISUSE;
    if( q->aTerm[t].op==GPUDS_CMP_IN
     && (q->aTerm[t].val>>32) + (uint32_t)q->aTerm[t].val > (uint64_t)(q->nIn>0 ? q->nIn : 0) ){
      return GPUDS_MISUSE;
    }
  }
  if( q->iOrderCol>=p->nCol ) return GPUDS_MISUSE;
  if( p->bSorted ){
    i0 = gpudsLowerBound(p->aKey, p->n, q->lo);
    i1 = q->hi==INT64_MAX ? p->n : gpudsLowerBound(p->aKey, p->n, q->hi+1);
  }
  aIdx = malloc((size_t)(i1>i0 ? i1-i0 : 1)*8);
  if( !aIdx ){ rc = GPUDS_NOMEM; goto query_out; }
  if( i1>i0 ) nOut = scanAll(p, q, i0, i1, aIdx);
  if( q->nMost>0 && nOut>q->nMost ){ *pn = -1; goto query_out; }
  aS = malloc((size_t)(nOut ? nOut : 1)*8);
  if( !aS ){ rc = GPUDS_NOMEM; goto query_out; }
  /* Key order first: the order itself, or the ties' order under a column. */
  if( !p->bSorted && nOut>1 ){
    for(i=0; i<nOut; i++) aS[i] = (uint64_t)p->aKey[aIdx[i]] ^ 0x8000000000000000ULL;
    rc = gpudsSortU64(aS, (uint64_t*)aIdx, (size_t)nOut);
    if( rc ) goto query_out;
  }
  if( q->iOrderCol>=0 ){
    size_t o = (size_t)q->iOrderCol*(size_t)p->n;
    for(i=0; i<nOut; i++){
      uint64_t s = gpudsColSortKey(p->aTag[o+aIdx[i]], p->aVal[o+aIdx[i]]);
      aS[i] = q->bDesc ? ~s : s;
    }
    rc = gpudsSortU64(aS, (uint64_t*)aIdx, (size_t)nOut);
    if( rc ) goto query_out;
  }else if( q->bDesc ){
    for(i=0; i<nOut/2; i++){
      int64_t x = aIdx[i]; aIdx[i] = aIdx[nOut-1-i]; aIdx[nOut-1-i] = x;
    }
  }
  if( q->nFirst>0 && nOut>q->nFirst ){
    int64_t m = q->nFirst;
    if( q->iOrderCol>=0 ) while( m<nOut && aS[m]==aS[q->nFirst-1] ) m++;
    nOut = m;
  }
  if( nOut>0 ){
    *paKey = malloc((size_t)nOut*8);
    *paRow = malloc((size_t)nOut*8);
    if( paSort && q->iOrderCol>=0 ) *paSort = malloc((size_t)nOut*8);
    if( !*paKey || !*paRow || (paSort && q->iOrderCol>=0 && !*paSort) ){
      free(*paKey); free(*paRow); if( paSort ){ free(*paSort); *paSort = 0; }
      *paKey = 0; *paRow = 0;
      rc = GPUDS_NOMEM;
      goto query_out;
    }
    for(i=0; i<nOut; i++){
      (*paKey)[i] = p->aKey[aIdx[i]];
      (*paRow)[i] = p->aRow[aIdx[i]];
      if( paSort && q->iOrderCol>=0 ) (*paSort)[i] = q->bDesc ? ~aS[i] : aS[i];
    }
  }
  *pn = nOut;
query_out:
  if( rc==GPUDS_NOMEM ) snprintf(p->zErr, sizeof(p->zErr), "out of memory");
  free(aIdx); free(aS);
  return rc;
}

/* xBytes */
static int64_t colsBytes(gpuds_cols *pCols){
  HostCols *p = hc(pCols);
  return p ? p->n*(16 + 9*(int64_t)p->nCol) : 0;
}

/* xErrmsg */
static const char *colsErrmsg(gpuds_cols *pCols){
  return pCols ? hc(pCols)->zErr : "";
}

const gpuds_cols_ops gpudsHostColsOps = {
  "host", 1, colsLoad, colsFree, colsQuery, colsBytes, colsErrmsg, gpudsHostColsAgg
};
