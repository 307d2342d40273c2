/*
** read.c -- every read of a table as the open transaction sees it: point
** reads through the write buffer (the overlay answers for keys written in
** the open transaction, the store for the rest, in one batch), and merged
** scans (the store's entries overlaid with the write buffer's, streamed a
** page at a time so no query holds a big table in host memory).
**
** Tables that read in key order (gpudsStoreOrdered: an ordered store, or a
** hash store with its host mirror, a B+tree, which then serves every page):
** a two-way merge of two key-ordered streams; on equal keys
** the write buffer wins (a 0 value there hides the key).  Pages start small
** (a LIMIT 10 query fetches little) and double up to MERGE_PAGE_MAX.
** Hash stores without a mirror: a snapshot of the keys (8 bytes each: the store's and the
** write buffer's own), taken when the scan opens and sorted (sort.c), so a
** hash table is visited in key order as an ordinary table is (multi-row
** UPDATEs that move keys depend on it), read back a page at a time through
** a batch lookup of the current contents.  Slots
** move when the same connection commits during the scan (deletes shift
** entries back, growth rehashes), so slot positions cannot be resumed; the
** snapshot returns each row that is still there when its page is read,
** once, as an ordinary table's cursor does.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "gpuds_sort.h"
#include <string.h>
#include <stdlib.h>

/* Store pages of a merged scan: the first holds MERGE_PAGE_FIRST entries
** (a LIMIT hint, clamped to at least MERGE_PAGE_MIN, replaces it: a LIMIT 10
** fetches little), each next one twice the last, up to MERGE_PAGE_MAX (1 MiB
** of keys and values: round trips amortized, memory bounded). */
#define MERGE_PAGE_FIRST 256
#define MERGE_PAGE_MIN   16
#define MERGE_PAGE_MAX   65536
/* Write buffer pages of a merged scan: the overlay is in host memory, so a
** page only bounds the copy. */
#define OVER_PAGE 1024

typedef struct MergeSrc {
  gpuds_scan s;
  int64_t *aKey;
  uint64_t *aVal;
  size_t n, i, nAlloc;
} MergeSrc;

/* Page buffers kept by a scan that ended (gpudsMergeEnd) for the next one:
** at most this many entries (64 KiB of keys and values); bigger ones go. */
#define MERGE_KEEP 4096

struct GpudsMerge {
  GpudsTable *pTab;
  int bOpen;                /* a scan is open: counted in pTab->nCursor */
  int bOrdered;             /* store is ordered: merge by key */
  int bDesc;
  size_t nPage;             /* size of the next store page */
  MergeSrc st;              /* the store */
  MergeSrc ov;              /* the write buffer */
  /* hash scans */
  int64_t *aSnap;           /* the keys, as the scan opened */
  int64_t nSnap, iSnap;     /* keys, next one to read */
  uint8_t *aFound;          /* lookups of the current page */
  int64_t kOne;             /* gpudsMergeRun's row when it returns one */
  uint64_t rOne;
};

static int srcReserve(MergeSrc *src, size_t nMax);

/* Append key k to the hash scan's snapshot. */
static int snapAdd(GpudsMerge *m, int64_t k, int64_t *pnAlloc){
  if( m->nSnap==*pnAlloc ){
    int64_t nNew = *pnAlloc ? *pnAlloc*2 : 1024;
    int64_t *a = realloc(m->aSnap, (size_t)nNew*8);
    if( a==0 ) return SQLITE_NOMEM;
    m->aSnap = a;
    *pnAlloc = nNew;
  }
  m->aSnap[m->nSnap++] = k;
  return SQLITE_OK;
}

/* Hash scans: take the keys in [lo,hi] now, the store's (as the table's
** snapshot sees it, in one pass: gpudsStoreKeys) but those the write
** buffer also holds, and then those only the write buffer has (live
** ones). */
static int snapshotKeys(GpudsMerge *m){
  GpudsTable *p = m->pTab;
  int64_t nAlloc = 0, *aStore = 0, nStore = 0, k;
  int rc;
  size_t i;
  rc = gpudsStoreKeys(p, m->st.s.lo, m->st.s.hi, &aStore, &nStore);
  for(k=0; rc==SQLITE_OK && k<nStore; k++){
    uint64_t v;
    int bHit = 0;
    /* a key the write buffer also holds is taken from there, below */
    if( p->wb.nOver ) gpudsWbufGet(p, aStore[k], &bHit, &v);
    if( !bHit ) rc = snapAdd(m, aStore[k], &nAlloc);
  }
  free(aStore);
  while( rc==SQLITE_OK && !m->ov.s.done ){
    rc = srcReserve(&m->ov, OVER_PAGE);
    if( rc==SQLITE_OK ) rc = gpudsOverlayScan(p, &m->ov.s, OVER_PAGE, m->ov.aKey, m->ov.aVal, &m->ov.n);
    for(i=0; i<m->ov.n && rc==SQLITE_OK; i++){
      if( m->ov.aVal[i] ) rc = snapAdd(m, m->ov.aKey[i], &nAlloc);
    }
  }
  m->st.n = m->st.i = 0;
  m->ov.n = m->ov.i = 0;
  if( rc==SQLITE_OK ) rc = gpudsSortKeys(m->aSnap, 0, (size_t)m->nSnap);
  if( rc==SQLITE_OK && m->bDesc ){
    int64_t i, j;
    for(i=0, j=m->nSnap-1; i<j; i++, j--){
      int64_t t = m->aSnap[i]; m->aSnap[i] = m->aSnap[j]; m->aSnap[j] = t;
    }
  }
  return rc;
}

/* Hash scans: the next row of the snapshot that still exists. */
static int snapshotNext(GpudsMerge *m, int *pbEof, int64_t *pKey, uint64_t *pRow){
  GpudsTable *p = m->pTab;
  for(;;){
    while( m->st.i<m->st.n ){
      size_t i = m->st.i++;
      if( m->aFound[i] ){
        *pbEof = 0;
        *pKey = m->st.aKey[i];
        *pRow = m->st.aVal[i];
        return SQLITE_OK;
      }
    }
    if( m->iSnap>=m->nSnap ){ *pbEof = 1; return SQLITE_OK; }
    {
      /* Next page: look its keys up as the table is now. */
      size_t n = m->nPage, i;
      int rc;
      if( (int64_t)n > m->nSnap - m->iSnap ) n = (size_t)(m->nSnap - m->iSnap);
      rc = srcReserve(&m->st, n);
      if( rc ) return rc;
      sqlite3_free(m->aFound);
      m->aFound = sqlite3_malloc64(n);
      if( m->aFound==0 ) return SQLITE_NOMEM;
      for(i=0; i<n; i++) m->st.aKey[i] = m->aSnap[m->iSnap+i];
      rc = gpudsLookupMany(p, n, m->st.aKey, m->aFound, m->st.aVal);
      if( rc ) return rc;
      m->iSnap += n;
      m->st.n = n;
      m->st.i = 0;
      if( m->nPage<MERGE_PAGE_MAX ) m->nPage *= 2;
    }
  }
}

/* Start a scan of [lo,hi].  nHint is the number of rows the caller expects
** to need (-1 if unknown).  *pp is NULL, or a scan ended by gpudsMergeEnd
** whose object and page buffers are reused (a cursor's next xFilter); on
** error *pp is freed and NULL. */
int gpudsMergeOpen(GpudsTable *p, int64_t lo, int64_t hi, int bDesc,
                   int64_t nHint, GpudsMerge **pp){
  GpudsMerge *m = *pp;
  if( m==0 ){
    m = sqlite3_malloc64(sizeof(*m));
    if( m==0 ) return SQLITE_NOMEM;
    memset(m, 0, sizeof(*m));
  }else{
    /* keep the buffers, reset everything else */
    MergeSrc st = m->st, ov = m->ov;
    memset(m, 0, sizeof(*m));
    m->st.aKey = st.aKey; m->st.aVal = st.aVal; m->st.nAlloc = st.nAlloc;
    m->ov.aKey = ov.aKey; m->ov.aVal = ov.aVal; m->ov.nAlloc = ov.nAlloc;
  }
  *pp = m;
  m->pTab = p;
  m->bOrdered = gpudsStoreOrdered(p);
  m->bDesc = bDesc;
  if( nHint<=0 ) m->nPage = MERGE_PAGE_FIRST;
  else m->nPage = nHint<MERGE_PAGE_MIN ? MERGE_PAGE_MIN
                : (nHint>MERGE_PAGE_MAX ? MERGE_PAGE_MAX : (size_t)nHint);
  m->st.s.lo = m->ov.s.lo = lo;
  m->st.s.hi = m->ov.s.hi = hi;
  m->st.s.desc = m->ov.s.desc = m->bOrdered ? m->bDesc : 0;
  if( lo>hi ){ m->st.s.done = 1; m->ov.s.done = 1; }
  if( p->wb.nOver==0 ) m->ov.s.done = 1;
  p->nCursor++;
  m->bOpen = 1;
  if( !m->bOrdered && lo<=hi ){
    int rc = snapshotKeys(m);
    if( rc ){ gpudsMergeClose(m); *pp = 0; return rc; }
  }
  return SQLITE_OK;
}

/* Free src's page buffers. */
static void srcFree(MergeSrc *src){
  sqlite3_free(src->aKey); sqlite3_free(src->aVal);
  src->aKey = 0; src->aVal = 0; src->nAlloc = 0;
}

/* End the scan (a no-op if none is open): the table may reclaim rows it
** was protecting.  The object and page buffers of up to MERGE_KEEP entries
** stay for the next gpudsMergeOpen on it. */
void gpudsMergeEnd(GpudsMerge *m){
  if( m && m->bOpen ){
    GpudsTable *p = m->pTab;
    if( m->st.nAlloc>MERGE_KEEP ) srcFree(&m->st);
    if( m->ov.nAlloc>MERGE_KEEP ) srcFree(&m->ov);
    if( m->aSnap ){ free(m->aSnap); m->aSnap = 0; }
    if( m->aFound ){ sqlite3_free(m->aFound); m->aFound = 0; }
    m->bOpen = 0;
    p->nCursor--;
    gpudsCollectGarbage(p);
  }
}

/* End the scan and free it. */
void gpudsMergeClose(GpudsMerge *m){
  if( m ){
    gpudsMergeEnd(m);
    srcFree(&m->st);
    srcFree(&m->ov);
    sqlite3_free(m);
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
    rc = gpudsStoreScan(p, &m->st.s, nMax, m->st.aKey, m->st.aVal, &m->st.n);
    if( rc ) return rc;
    m->st.i = 0;
    if( m->nPage<MERGE_PAGE_MAX ) m->nPage *= 2;
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
  if( !m->bOrdered ) return snapshotNext(m, pbEof, pKey, pRow);
  if( m->st.i<m->st.n && m->ov.s.done && m->ov.i>=m->ov.n ){
    /* Nothing of the write buffer left in range (always so outside a
    ** write transaction): the next entry of the store page. */
    *pbEof = 0;
    *pKey = m->st.aKey[m->st.i];
    *pRow = m->st.aVal[m->st.i++];
    return SQLITE_OK;
  }
  for(;;){
    int bSt, bOv;
    if( (rc = fillStore(m))!=SQLITE_OK ) return rc;
    if( (rc = fillOver(m))!=SQLITE_OK ) return rc;
    bSt = m->st.i<m->st.n;
    bOv = m->ov.i<m->ov.n;
    if( !bSt && !bOv ){ *pbEof = 1; return SQLITE_OK; }
    *pbEof = 0;
    {
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

/* The next rows of the merged scan, in its order: *paKey and *paRow point to
** *pn of them, valid until the next call on m; *pn is 0 at the end.  Where
** nothing of the write buffer is left in range (always so outside a write
** transaction) that is the rest of the store page, read ahead as before;
** otherwise one row, as gpudsMergeNext gives it. */
int gpudsMergeRun(GpudsMerge *m, const int64_t **paKey, const uint64_t **paRow,
                  size_t *pn){
  int rc, bEof = 0;
  *pn = 0;
  if( m->bOrdered && m->ov.s.done && m->ov.i>=m->ov.n ){
    if( (rc = fillStore(m))!=SQLITE_OK ) return rc;
    *paKey = m->st.aKey + m->st.i;
    *paRow = m->st.aVal + m->st.i;
    *pn = m->st.n - m->st.i;
    m->st.i = m->st.n;
    return SQLITE_OK;
  }
  rc = gpudsMergeNext(m, &bEof, &m->kOne, &m->rOne);
  if( rc==SQLITE_OK && !bEof ){
    *paKey = &m->kOne;
    *paRow = &m->rOne;
    *pn = 1;
  }
  return rc;
}

/* ----------------------------------------------------------- point reads */

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
  if( n==1 ){
    /* one key (a point query, a cursor's re-read): nothing allocated */
    int bHit = 0;
    uint64_t v = 0;
    rc = gpudsWbufGet(p, aKey[0], &bHit, &v);
    if( rc ) return rc;
    if( bHit ){
      aFound[0] = v!=0;
      aRow[0] = v;
      return SQLITE_OK;
    }
    return gpudsStoreLookup(p, 1, aKey, aFound, aRow);
  }
  aMiss = malloc(n*8);
  aIdx = malloc(n*sizeof(size_t));
  aF = malloc(n);
  aV = malloc(n*8);
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
  free(aMiss); free(aIdx); free(aF); free(aV);
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
  if( gpudsStoreCount(p)==0 ) return SQLITE_OK;
  if( !gpudsStoreMaybe(p, k) ) return SQLITE_OK;
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
  int bOrdered = gpudsStoreOrdered(p);
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
