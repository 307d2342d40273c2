/*
** read.c -- point reads through the write buffer: the overlay answers for
** keys written in the open transaction, the store for the rest, in one batch.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>

/* Look up n keys; aFound[i]/aRow[i] describe key aKey[i] as the open
** transaction sees it.  Keys the overlay does not know go to the store in
** one batch. */
int gpudsLookupMany(GpudsTable *p, size_t n, const int64_t *aKey,
                    uint8_t *aFound, uint64_t *aRow){
  int64_t *aMiss = 0;
  size_t *aIdx = 0, nMiss = 0, i;
  uint8_t *aF = 0;
  uint64_t *aV = 0;
  int rc = SQLITE_OK;

  if( n==0 ) return SQLITE_OK;
  if( p->wb.nOver==0 ){
    return gpudsStoreLookup(p, n, aKey, aFound, aRow);
  }
  aMiss = sqlite3_malloc64(n*8);
  aIdx = sqlite3_malloc64(n*sizeof(size_t));
  aF = sqlite3_malloc64(n);
  aV = sqlite3_malloc64(n*8);
  if( !aMiss || !aIdx || !aF || !aV ){
    rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
    goto lookup_out;
  }
  rc = gpudsOverlayLookup(p, n, aKey, aF, aV);
  if( rc ) goto lookup_out;
  for(i=0; i<n; i++){
    if( aF[i] ){
      aFound[i] = aV[i]!=0;
      aRow[i] = aV[i];
    }else{
      aIdx[nMiss] = i;
      aMiss[nMiss++] = aKey[i];
    }
  }
  if( nMiss ){
    rc = gpudsStoreLookup(p, nMiss, aMiss, aF, aV);
    if( rc ) goto lookup_out;
    for(i=0; i<nMiss; i++){
      aFound[aIdx[i]] = aF[i];
      aRow[aIdx[i]] = aV[i];
    }
  }
lookup_out:
  sqlite3_free(aMiss); sqlite3_free(aIdx); sqlite3_free(aF); sqlite3_free(aV);
  return rc;
}

/* Does key k exist, as the open transaction sees it?  The key filter
** answers "no" for most new keys without asking the store. */
int gpudsKeyExists(GpudsTable *p, int64_t k, int *pbExists){
  int bHit = 0, rc;
  uint64_t v = 0;
  *pbExists = 0;
  rc = gpudsWbufGet(p, k, &bHit, &v);
  if( rc ) return rc;
  if( bHit ){
    *pbExists = v!=0;
    return SQLITE_OK;
  }
  if( p->pOps->xCount(p->pStore)==0 ) return SQLITE_OK;
  if( !gpudsFilterMaybe(&p->filter, k) ) return SQLITE_OK;
  {
    /* The write buffer does not hold k (checked above): ask the store. */
    uint8_t f = 0;
    rc = gpudsStoreLookup(p, 1, &k, &f, &v);
    *pbExists = f;
  }
  return rc;
}

/* The largest key as the open transaction sees it; *pbAny is 0 for an
** empty table.  Cached: writes keep the cache current (wbuf.c), undo and
** reloads drop it. */
int gpudsMaxKey(GpudsTable *p, int *pbAny, int64_t *pMax){
  GpudsMerge *m = 0;
  int bEof = 1, rc;
  int64_t k = 0, mx = INT64_MIN;
  uint64_t r;
  int bOrdered = p->pOps->kind==GPUDS_ORDERED;
  *pbAny = 0;
  if( p->bMaxValid ){
    *pbAny = p->bMaxAny;
    *pMax = p->iMax;
    return SQLITE_OK;
  }
  rc = gpudsMergeOpen(p, INT64_MIN, INT64_MAX, 1, bOrdered ? 1 : -1, &m);
  if( rc ) return rc;
  while( (rc = gpudsMergeNext(m, &bEof, &k, &r))==SQLITE_OK && !bEof ){
    if( !*pbAny || k>mx ) mx = k;
    *pbAny = 1;
    if( bOrdered ) break;   /* descending: the first key is the largest */
  }
  gpudsMergeClose(m);
  *pMax = mx;
  if( rc==SQLITE_OK ){
    p->bMaxValid = 1;
    p->bMaxAny = *pbAny;
    p->iMax = mx;
  }
  return rc;
}
