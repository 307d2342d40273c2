/*
** scan.c -- merged scans: the store's entries overlaid with the write
** buffer's, streamed a page at a time so no query holds a big table in host
** memory.
**
** Ordered stores: a two-way merge of two key-ordered streams; on equal keys
** the write buffer wins (a 0 value there hides the key).  Pages start small
** (a LIMIT 10 query fetches little) and double up to MERGE_PAGE_MAX.
** Hash stores: the store's entries in slot order, skipping keys the write
** buffer holds, then the write buffer's live entries.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>

#define MERGE_PAGE_MAX 65536
#define OVER_PAGE 1024

typedef struct MergeSrc {
  gpuds_scan s;
  int64_t *aKey;
  uint64_t *aVal;
  size_t n, i, nAlloc;
} MergeSrc;

struct GpudsMerge {
  GpudsTable *pTab;
  int bOrdered;             /* store is ordered: merge by key */
  int bDesc;
  size_t nPage;             /* size of the next store page */
  MergeSrc st;              /* the store */
  MergeSrc ov;              /* the write buffer */
  uint8_t *aHit;            /* hash scans: overlay hits for a store page */
  uint64_t *aHitVal;
};

/* Start a scan of [lo,hi].  nHint is the number of rows the caller expects
** to need (-1 if unknown). */
int gpudsMergeOpen(GpudsTable *p, int64_t lo, int64_t hi, int bDesc,
                   int64_t nHint, GpudsMerge **pp){
  GpudsMerge *m = sqlite3_malloc64(sizeof(*m));
  *pp = 0;
  if( m==0 ) return SQLITE_NOMEM;
  memset(m, 0, sizeof(*m));
  m->pTab = p;
  m->bOrdered = p->pOps->kind==GPUDS_ORDERED;
  m->bDesc = m->bOrdered ? bDesc : 0;
  if( nHint<=0 ) m->nPage = 256;
  else m->nPage = nHint<16 ? 16 : (nHint>MERGE_PAGE_MAX ? MERGE_PAGE_MAX : (size_t)nHint);
  m->st.s.lo = m->ov.s.lo = lo;
  m->st.s.hi = m->ov.s.hi = hi;
  m->st.s.desc = m->ov.s.desc = m->bDesc;
  if( lo>hi ){ m->st.s.done = 1; m->ov.s.done = 1; }
  if( p->wb.nOver==0 ) m->ov.s.done = 1;
  p->nCursor++;
  *pp = m;
  return SQLITE_OK;
}

/* Free the scan and let the table reclaim rows it was protecting. */
void gpudsMergeClose(GpudsMerge *m){
  if( m ){
    GpudsTable *p = m->pTab;
    sqlite3_free(m->st.aKey); sqlite3_free(m->st.aVal);
    sqlite3_free(m->ov.aKey); sqlite3_free(m->ov.aVal);
    sqlite3_free(m->aHit); sqlite3_free(m->aHitVal);
    sqlite3_free(m);
    p->nCursor--;
    gpudsCollectGarbage(p);
  }
}

/* Make room for nMax entries in src. */
static int srcReserve(MergeSrc *src, size_t nMax){
  if( nMax>src->nAlloc ){
    int64_t *aK = sqlite3_realloc64(src->aKey, nMax*8);
    uint64_t *aV;
    if( aK==0 ) return SQLITE_NOMEM;
    src->aKey = aK;
    aV = sqlite3_realloc64(src->aVal, nMax*8);
    if( aV==0 ) return SQLITE_NOMEM;
    src->aVal = aV;
    src->nAlloc = nMax;
  }
  return SQLITE_OK;
}

/* Refill the store page if it is used up and more remains. */
static int fillStore(GpudsMerge *m){
  GpudsTable *p = m->pTab;
  int rc;
  while( m->st.i>=m->st.n && !m->st.s.done ){
    size_t nMax = m->nPage;
    rc = srcReserve(&m->st, nMax);
    if( rc ) return rc;
    rc = p->pOps->xScan(p->pStore, &m->st.s, nMax, m->st.aKey, m->st.aVal, &m->st.n);
    if( rc ) return gpudsVtabError(p, rc, "scan: %s", p->pOps->xErrmsg(p->pStore));
    m->st.i = 0;
    if( m->nPage<MERGE_PAGE_MAX ) m->nPage *= 2;
    if( !m->bOrdered && m->st.n>0 && p->wb.nOver>0 ){
      /* Hash scan: find which of these keys the write buffer overrides. */
      sqlite3_free(m->aHit); sqlite3_free(m->aHitVal);
      m->aHit = sqlite3_malloc64(m->st.n);
      m->aHitVal = sqlite3_malloc64(m->st.n*8);
      if( !m->aHit || !m->aHitVal ) return SQLITE_NOMEM;
      rc = gpudsOverlayLookup(p, m->st.n, m->st.aKey, m->aHit, m->aHitVal);
      if( rc ) return rc;
    }else{
      sqlite3_free(m->aHit); sqlite3_free(m->aHitVal);
      m->aHit = 0; m->aHitVal = 0;
    }
  }
  return SQLITE_OK;
}

/* Refill the write-buffer page if it is used up and more remains. */
static int fillOver(GpudsMerge *m){
  while( m->ov.i>=m->ov.n && !m->ov.s.done ){
    int rc = srcReserve(&m->ov, OVER_PAGE);
    if( rc ) return rc;
    rc = gpudsOverlayScan(m->pTab, &m->ov.s, OVER_PAGE, m->ov.aKey, m->ov.aVal, &m->ov.n);
    if( rc ) return rc;
    m->ov.i = 0;
  }
  return SQLITE_OK;
}

/* Next entry of the merged scan: *pbEof, or *pKey and *pRow (never 0). */
int gpudsMergeNext(GpudsMerge *m, int *pbEof, int64_t *pKey, uint64_t *pRow){
  int rc;
  for(;;){
    int bSt, bOv;
    if( (rc = fillStore(m))!=SQLITE_OK ) return rc;
    if( (rc = fillOver(m))!=SQLITE_OK ) return rc;
    bSt = m->st.i<m->st.n;
    bOv = m->ov.i<m->ov.n;
    if( !bSt && !bOv ){ *pbEof = 1; return SQLITE_OK; }
    *pbEof = 0;
    if( !m->bOrdered ){
      /* Hash: store entries first (unless overridden), then the overlay. */
      if( bSt ){
        size_t i = m->st.i++;
        if( m->aHit && m->aHit[i] ) continue;
        *pKey = m->st.aKey[i];
        *pRow = m->st.aVal[i];
        return SQLITE_OK;
      }
      {
        size_t i = m->ov.i++;
        if( m->ov.aVal[i]==0 ) continue;
        *pKey = m->ov.aKey[i];
        *pRow = m->ov.aVal[i];
        return SQLITE_OK;
      }
    }else{
      int bTakeOv;
      if( bSt && bOv ){
        int64_t ks = m->st.aKey[m->st.i], ko = m->ov.aKey[m->ov.i];
        if( ks==ko ){ m->st.i++; bTakeOv = 1; }
        else bTakeOv = m->bDesc ? (ko>ks) : (ko<ks);
      }else{
        bTakeOv = bOv;
      }
      if( bTakeOv ){
        size_t i = m->ov.i++;
        if( m->ov.aVal[i]==0 ) continue;     /* deleted in this transaction */
        *pKey = m->ov.aKey[i];
        *pRow = m->ov.aVal[i];
      }else{
        size_t i = m->st.i++;
        *pKey = m->st.aKey[i];
        *pRow = m->st.aVal[i];
      }
      return SQLITE_OK;
    }
  }
}
