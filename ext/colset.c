/*
** colset.c -- reads that filter or order by non-key columns,
** as the open transaction sees the table.
**
** The table's column set (backend gpuds_cols_ops: on the GPU beside a GPU
** store) holds every committed row's key, row handle and non-key values as
** arrays; it is built from the store's rows on the first such query and
** kept until the store is rebuilt or too many keys changed (store.c logs
** them).  A query runs in three parts:
**   1. the column set answers for every key except the skipped ones: the
**      keys changed in the store since the set was built and the keys of
**      the write buffer;
**   2. the host answers for the skipped keys from their current rows
**      (gpudsLookupMany: write buffer first, then the store), exactly;
**   3. the two lists merge in the order asked for.  Where the set could
**      only say "maybe" (text and blobs compared by a prefix and a hash) or
**      its sort key ties, the rows are compared exactly here.
** With nFirst > 0 only a prefix of the order is produced (*pbPartial): the
** caller asks again for all rows if it needs more.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "gpuds_sort.h"
#include <string.h>
#include <stdlib.h>

/* ------------------------------------------------------------- helpers */

/* The keys the column set must not answer for, sorted and distinct, in
** *paSkip (malloc()'d, NULL if none): those logged since it was built,
** those of the copy's versions newer than the table's snapshot, and those
** of the write buffer.  The caller holds the latch for reading until it
** has queried the set with them. */
int gpudsColsSkipKeys(GpudsTable *p, int64_t **paSkip, int64_t *pn){
  int64_t *a = 0, n = 0, i, j;
  int rc;
  *paSkip = 0; *pn = 0;
  rc = gpudsStoreColsSkip(p, &a, &n);
  if( rc==SQLITE_OK && p->wb.nOver ){
    gpuds_scan s;
    uint64_t *aV = malloc((size_t)p->wb.nOver*8);
    int64_t *aNew = realloc(a, (size_t)(n + p->wb.nOver)*8), nEnd = n + p->wb.nOver;
    size_t nOut = 0;
    if( aNew ) a = aNew;
    if( aV==0 || aNew==0 ){
      free(aV); free(a);
      return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
    }
    memset(&s, 0, sizeof(s));
    s.lo = INT64_MIN; s.hi = INT64_MAX;
    while( rc==SQLITE_OK && !s.done && n<nEnd ){
      rc = gpudsOverlayScan(p, &s, (size_t)(nEnd-n), &a[n], aV, &nOut);
      n += (int64_t)nOut;
    }
    free(aV);
    if( rc ){ free(a); return rc; }
  }
  if( rc ){
    free(a);
    return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  }
  if( n==0 ){ free(a); return SQLITE_OK; }
  if( gpudsSortKeys(a, 0, (size_t)n) ){
    free(a);
    return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  }
  for(i=0, j=0; i<n; i++){
    if( j==0 || a[j-1]!=a[i] ) a[j++] = a[i];
  }
  *paSkip = a; *pn = j;
  return SQLITE_OK;
}

/* Does record pRow satisfy every term of q? */
static int rowHolds(const GpudsRow *pRow, const GpudsColQuery *q, int bRefineOnly){
  int i;
  for(i=0; i<q->nTerm; i++){
    if( bRefineOnly && !q->aTerm[i].bRefine ) continue;
    if( !gpudsTermHolds(pRow, &q->aTerm[i], q->eText) ) return 0;
  }
  return 1;
}

/* The order a query asks for, exactly: < 0 if (ka, ra) comes first. */
typedef struct OrderCtx { int iCol; int bDesc; int eText; } OrderCtx;

/* The order query q asks for. */
static OrderCtx orderOf(const GpudsColQuery *q){
  OrderCtx o;
  o.iCol = q->iOrderCol; o.bDesc = q->bDesc; o.eText = q->eText;
  return o;
}
static int orderCmp(const OrderCtx *o, int64_t ka, uint64_t ra, int64_t kb, uint64_t rb){
  int c = 0;
  if( o->iCol>=0 ){
    c = gpudsRowColCmpRows(gpudsRowOf(ra), gpudsRowOf(rb), o->iCol, o->eText);
    if( o->bDesc ) c = -c;
    if( c ) return c;
    return ka<kb ? -1 : ka>kb;
  }
  c = ka<kb ? -1 : ka>kb;
  return o->bDesc ? -c : c;
}

/* Insertion-sort entries [i0, i1) of (aK, aR) by orderCmp (short runs). */
static void sortRun(const OrderCtx *o, int64_t *aK, uint64_t *aR, int64_t i0, int64_t i1){
  int64_t i, j;
  for(i=i0+1; i<i1; i++){
    int64_t k = aK[i];
    uint64_t r = aR[i];
    for(j=i; j>i0 && orderCmp(o, aK[j-1], aR[j-1], k, r)>0; j--){
      aK[j] = aK[j-1]; aR[j] = aR[j-1];
    }
    aK[j] = k; aR[j] = r;
  }
}

/* Sort (aK, aR)[0..n) by orderCmp: insertion-sorted runs of 32, merged
** through a scratch copy.  SQLITE_OK or SQLITE_NOMEM (order then undefined). */
static int sortAll(const OrderCtx *o, int64_t *aK, uint64_t *aR, int64_t n){
  int64_t w, i, *tK;
  uint64_t *tR;
  if( n<=32 ){ sortRun(o, aK, aR, 0, n); return SQLITE_OK; }
  tK = malloc((size_t)n*8);
  tR = malloc((size_t)n*8);
  if( !tK || !tR ){ free(tK); free(tR); return SQLITE_NOMEM; }
  for(i=0; i<n; i+=32) sortRun(o, aK, aR, i, i+32<n ? i+32 : n);
  for(w=32; w<n; w*=2){
    for(i=0; i<n; i+=2*w){
      int64_t a = i, aEnd = i+w<n ? i+w : n, b = aEnd, bEnd = i+2*w<n ? i+2*w : n, d = i;
      while( a<aEnd && b<bEnd ){
        if( orderCmp(o, aK[b], aR[b], aK[a], aR[a])<0 ){ tK[d] = aK[b]; tR[d++] = aR[b++]; }
        else{ tK[d] = aK[a]; tR[d++] = aR[a++]; }
      }
      while( a<aEnd ){ tK[d] = aK[a]; tR[d++] = aR[a++]; }
      while( b<bEnd ){ tK[d] = aK[b]; tR[d++] = aR[b++]; }
    }
    memcpy(aK, tK, (size_t)n*8);
    memcpy(aR, tR, (size_t)n*8);
  }
  free(tK); free(tR);
  return SQLITE_OK;
}

/* ------------------------------------------------------------- queries */

/* Terms aTerm[0..nTerm) as a column set takes them: *paT (sqlite3_free)
** and the IN terms' lists one after another in *paInTag, *paInVal
** (malloc()'d, *pnIn values; each IN term names its slice). */
int gpudsColsTerms(GpudsTable *p, const GpudsColTerm *aTerm, int nTerm, gpuds_term **paT,
                   uint8_t **paInTag, uint64_t **paInVal, int64_t *pnIn){
  gpuds_term *aT = sqlite3_malloc64(sizeof(gpuds_term)*(nTerm ? nTerm : 1));
  uint8_t *aInTag = 0;
  uint64_t *aInVal = 0;
  int64_t nIn = 0, iIn = 0;
  int i;
  *paT = 0; *paInTag = 0; *paInVal = 0; *pnIn = 0;
  if( aT==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  for(i=0; i<nTerm; i++){
    aT[i] = aTerm[i].t;
    if( aT[i].op==GPUDS_CMP_IN ){ nIn += aTerm[i].nIn; aT[i].val = 0; }
  }
  if( nIn ){
    aInTag = malloc((size_t)nIn);
    aInVal = malloc((size_t)nIn*8);
    if( !aInTag || !aInVal ){
      sqlite3_free(aT); free(aInTag); free(aInVal);
      return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
    }
    for(i=0; i<nTerm; i++){
      const GpudsColTerm *t = &aTerm[i];
      if( aT[i].op!=GPUDS_CMP_IN ) continue;
      memcpy(&aInTag[iIn], t->aInTag, (size_t)t->nIn);
      memcpy(&aInVal[iIn], t->aInVal, (size_t)t->nIn*8);
      aT[i].val = ((uint64_t)iIn<<32) | (uint32_t)t->nIn;
      iIn += t->nIn;
    }
  }
  *paT = aT; *paInTag = aInTag; *paInVal = aInVal; *pnIn = nIn;
  return SQLITE_OK;
}

/* gpudsColsRun, under the latch. */
static int colsRun(GpudsTable *p, const GpudsColQuery *q, int64_t *pn,
                   int64_t **paKey, uint64_t **paRow, int *pbPartial){
  GpudsColState *cs = &p->pCopy->cs;
  gpuds_term *aT = 0;
  gpuds_query gq;
  int64_t *aSkip = 0, nSkip = 0, nG = 0, nX = 0, i, j, nOut = 0;
  int64_t *aGK = 0, *aXK = 0, *aOK = 0;
  uint64_t *aGR = 0, *aGS = 0, *aXR = 0, *aOR = 0;
  uint8_t *aXF = 0, *aInTag = 0;
  uint64_t *aInVal = 0;
  int64_t nIn = 0;
  int64_t kLast = 0;
  uint64_t rLast = 0;
  int bPartial = 0, bRefine = 0, rc;
  OrderCtx oc = orderOf(q);

  *pn = 0; *paKey = 0; *paRow = 0; *pbPartial = 0;
  if( !gpudsColsBuilt(p) ){
    rc = gpudsColsBuild(p);
    if( rc ) return rc;
  }
  rc = gpudsColsSkipKeys(p, &aSkip, &nSkip);
  if( rc ) return rc;
  rc = gpudsColsTerms(p, q->aTerm, q->nTerm, &aT, &aInTag, &aInVal, &nIn);
  if( rc ) goto run_out;
  for(i=0; i<q->nTerm; i++) if( q->aTerm[i].bRefine ) bRefine = 1;
  memset(&gq, 0, sizeof(gq));
  gq.lo = q->lo; gq.hi = q->hi;
  gq.aTerm = aT; gq.nTerm = q->nTerm;
  gq.aSkip = aSkip; gq.nSkip = nSkip;
  gq.aInTag = aInTag; gq.aInVal = aInVal; gq.nIn = nIn;
  gq.iOrderCol = q->iOrderCol; gq.bDesc = q->bDesc;
  gq.nFirst = q->nFirst;
  gq.nMost = q->nMost;
  __atomic_add_fetch(&cs->nQuery, 1, __ATOMIC_RELAXED);
  for(;;){
    int bAgain = 0;
    rc = gpudsStoreColsQuery(p, &gq, &nG, &aGK, &aGR, q->iOrderCol>=0 ? &aGS : 0, &bAgain);
    if( rc || !bAgain ) break;
    /* The set is gone: the GPU had no room for the query's workspace (it
    ** moves to the host: store.c, colsToHost), or another table dropped it
    ** while p waited.  Built again, and the skipped keys learnt again (a
    ** writer may have come in meanwhile), the query runs again. */
    rc = gpudsColsBuild(p);
    free(aSkip);
    aSkip = 0; nSkip = 0;
    if( rc==SQLITE_OK ) rc = gpudsColsSkipKeys(p, &aSkip, &nSkip);
    if( rc ) break;
    gq.aSkip = aSkip; gq.nSkip = nSkip;
    free(aGK); free(aGR); free(aGS);
    aGK = 0; aGR = 0; aGS = 0; nG = 0;
  }
  if( rc ) goto run_out;
  if( nG<0 ){            /* more than q->nMost: the caller scans instead */
    __atomic_add_fetch(&cs->nCapped, 1, __ATOMIC_RELAXED);
    *pn = -1;
    goto run_out;
  }
  /* The set's sort keys tie where it cannot order exactly: order each run
  ** of equal sort keys exactly. */
  if( q->iOrderCol>=0 ){
    for(i=0; i<nG; i=j){
      for(j=i+1; j<nG && aGS[j]==aGS[i]; j++){}
      if( j-i>1 && sortAll(&oc, &aGK[i], &aGR[i], j-i) ){
        rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto run_out;
      }
    }
  }
  /* A prefix ends at its last row in the exact order (the set returns the
  ** whole run of sort keys tied with its last one), whatever the exact
  ** checks below leave of it. */
  if( q->nFirst>0 && nG>=q->nFirst ){
    bPartial = 1;
    kLast = aGK[nG-1]; rLast = aGR[nG-1];
  }
  /* Exact checks of the set's "maybe"s: text and blob terms. */
  if( bRefine ){
    for(i=0, j=0; i<nG; i++){
      if( rowHolds(gpudsRowOf(aGR[i]), q, 1) ){ aGK[j] = aGK[i]; aGR[j] = aGR[i]; j++; }
    }
    nG = j;
  }
  /* The skipped keys: their rows as the transaction sees them. */
  if( nSkip ){
    aXR = malloc((size_t)nSkip*8);
    aXF = malloc((size_t)nSkip);
    aXK = malloc((size_t)nSkip*8);
    if( !aXR || !aXF || !aXK ){ rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto run_out; }
    rc = gpudsLookupMany(p, (size_t)nSkip, aSkip, aXF, aXR);
    if( rc ) goto run_out;
    for(i=0; i<nSkip; i++){
      if( !aXF[i] || aSkip[i]<q->lo || aSkip[i]>q->hi ) continue;
      if( !rowHolds(gpudsRowOf(aXR[i]), q, 0) ) continue;
      if( bPartial && orderCmp(&oc, aSkip[i], aXR[i], kLast, rLast)>0 ) continue;
      aXK[nX] = aSkip[i]; aXR[nX] = aXR[i]; nX++;
    }
    if( sortAll(&oc, aXK, aXR, nX) ){
      rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto run_out;
    }
  }
  /* Merge. */
  if( nG+nX>0 ){
    aOK = malloc((size_t)(nG+nX)*8);
    aOR = malloc((size_t)(nG+nX)*8);
    if( !aOK || !aOR ){ rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto run_out; }
    for(i=0, j=0; i<nG || j<nX; ){
      if( j>=nX || (i<nG && orderCmp(&oc, aGK[i], aGR[i], aXK[j], aXR[j])<=0) ){
        aOK[nOut] = aGK[i]; aOR[nOut++] = aGR[i++];
      }else{
        aOK[nOut] = aXK[j]; aOR[nOut++] = aXR[j++];
      }
    }
  }
  *paKey = aOK; *paRow = aOR; *pn = nOut; *pbPartial = bPartial;
  aOK = 0; aOR = 0;
run_out:
  free(aOK); free(aOR);
  sqlite3_free(aT); free(aSkip);
  free(aInTag); free(aInVal);
  free(aXK); free(aXR); free(aXF);
  free(aGK); free(aGR); free(aGS);
  return rc;
}

/* Run query q on table p as the open transaction sees it: the matching
** rows' keys and row handles in q's order, in *paKey and *paRow (malloc()'d,
** the caller frees) and their number in *pn.  *pbPartial: only a prefix of
** the order (q->nFirst > 0 and more rows may follow).  Where q->nMost > 0
** and the set finds more matches than that, *pn is -1 and nothing is
** returned. */
int gpudsColsRun(GpudsTable *p, const GpudsColQuery *q, int64_t *pn,
                 int64_t **paKey, uint64_t **paRow, int *pbPartial){
  int rc;
  gpudsLatchRead(p);
  rc = colsRun(p, q, pn, paKey, paRow, pbPartial);
  gpudsLatchReadEnd(p);
  return rc;
}

/* The first index of the list (aKey, aRow)[0..n) in q's order that comes
** after the entry (kLast, rLast): where a cursor that returned a prefix of
** an earlier list of the same query goes on (rows written since may have
** left or joined the list, so a count of the rows returned would not do). */
int64_t gpudsColsAfter(const GpudsColQuery *q, const int64_t *aKey, const uint64_t *aRow,
                       int64_t n, int64_t kLast, uint64_t rLast){
  OrderCtx oc = orderOf(q);
  int64_t lo = 0, hi = n;
  while( lo<hi ){
    int64_t mid = lo + (hi-lo)/2;
    if( orderCmp(&oc, aKey[mid], aRow[mid], kLast, rLast)<=0 ) lo = mid+1; else hi = mid;
  }
  return lo;
}
