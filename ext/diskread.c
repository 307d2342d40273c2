/*
** diskread.c -- key lookups answered from the runs in <name>_run, on the
** connection's own snapshot, while the table's store is built in the
** background (bgload.c).  Formats 4 and 5 only (varint keys: a chunk's
** first key is its first bytes).
**
** The index: every chunk's row id and entry count (one SELECT of id, n and
** the blobs' types, which reads no blob), grouped by run, oldest first,
** and its first key (a few bytes of its keys blob, sqlite3_blob_read).
** Before any search trusts it, it is checked as the loader checks what it
** reads: the entries add up to t_meta's, the first keys ascend within each
** run, and from format 5 the chunks' ids, counts and first keys add up to
** t_meta's 'layout' digest (a chunk moved, repeated, dropped or renumbered
** would otherwise send a binary search past the chunk that holds a key).
** A lookup asks the runs newest first: the last chunk whose first key is
** not above the key, decoded whole (keys, entry offsets) and checked as
** the loader checks it (sizes, its checksum, from format 5 seeded with its
** id, keys, its first key the indexed one and its last below the next
** chunk's, the entries' layout; the record found with gpudsRunRecord or
** gpudsOvflRead), then the key in it.  The newest run holding the key
** decides: a record is the answer, a deletion means no row.  The last
** DISK_CACHE chunks decoded are kept.  The index describes one snapshot:
** shadow.c drops it (gpudsDiskReset) whenever the database may have
** changed.  Blob handles are closed before a lookup returns: an open one
** would keep the connection's read transaction open.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "runfmt.h"
#include <string.h>
#include <stdlib.h>

#define DISK_CACHE 4

typedef struct DiskChunk {
  int64_t iRow;           /* t_run id */
  int64_t n;              /* entries */
  int64_t k0;             /* first key */
} DiskChunk;
typedef struct DiskRun {
  int64_t iRun;
  int iFirst, nChunk;     /* its chunks in aChunk */
} DiskRun;
typedef struct DiskDecoded {
  int64_t iRow;           /* t_run id, if n > 0 (else an empty slot) */
  int n;
  int64_t *aKey;          /* the chunk's keys */
  uint32_t *aOff;         /* offset of each entry in aVal */
  unsigned char *aVal;    /* the vals blob (malloc()'d: up to 64 MiB and a record) */
  uint64_t iUse;          /* for eviction */
} DiskDecoded;
struct GpudsDisk {
  DiskChunk *aChunk;
  int nChunk;
  DiskRun *aRun;
  int nRun;
  DiskDecoded aDec[DISK_CACHE];
  uint64_t iClock;
  char *zTab;             /* "<name>_run" */
  sqlite3_blob *pKeys, *pVals;   /* open within one gpudsDiskLookup only */
};

static void decodedClear(DiskDecoded *d){
  sqlite3_free(d->aKey);
  sqlite3_free(d->aOff);
  free(d->aVal);
  memset(d, 0, sizeof(*d));
}

/* Forget the index and the decoded chunks (the database may have
** changed, or the table goes). */
void gpudsDiskReset(GpudsTable *p){
  GpudsDisk *d = p->pDisk;
  int i;
  if( d==0 ) return;
  for(i=0; i<DISK_CACHE; i++) decodedClear(&d->aDec[i]);
  sqlite3_blob_close(d->pKeys);
  sqlite3_blob_close(d->pVals);
  sqlite3_free(d->aChunk);
  sqlite3_free(d->aRun);
  sqlite3_free(d->zTab);
  sqlite3_free(d);
  p->pDisk = 0;
}

static int diskCorrupt(GpudsTable *p, int64_t iRun, const char *zWhy){
  return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                        p->zName, (long long)iRun, zWhy);
}

/* Point *pp (open, or moved if open) at column zCol of chunk row iRow. */
static int diskBlob(GpudsTable *p, sqlite3_blob **pp, const char *zCol, int64_t iRow){
  int rc = *pp ? sqlite3_blob_reopen(*pp, iRow)
               : sqlite3_blob_open(p->db, p->zDb, p->pDisk->zTab, zCol, iRow, 0, pp);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  return SQLITE_OK;
}

/* The first key of chunk c of run iRun: its first varint, zigzag-decoded. */
static int diskFirstKey(GpudsTable *p, int64_t iRun, DiskChunk *c){
  GpudsDisk *d = p->pDisk;
  unsigned char a[9];
  uint64_t u;
  int nk, m, rc;
  rc = diskBlob(p, &d->pKeys, "keys", c->iRow);
  if( rc ) return rc;
  nk = sqlite3_blob_bytes(d->pKeys);
  m = nk<9 ? nk : 9;
  rc = sqlite3_blob_read(d->pKeys, a, m, 0);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  if( m<=0 || gpudsVarintGet(a, (size_t)m, &u)==0 ) return diskCorrupt(p, iRun, "bad keys");
  c->k0 = (int64_t)((u>>1) ^ (0 - (u & 1)));
  return SQLITE_OK;
}

/* Build the index of the snapshot: chunks by id, grouped into runs, with
** their first keys; then check it (the entries, the first keys' order, the
** layout digest of format 5). */
static int diskOpen(GpudsTable *p){
  GpudsDisk *d;
  sqlite3_stmt *pStmt;
  int64_t nAll = 0;
  uint64_t uLayout = 0;
  int nAlloc = 0, rc, j;
  d = sqlite3_malloc64(sizeof(*d));
  if( d==0 ) return SQLITE_NOMEM;
  memset(d, 0, sizeof(*d));
  p->pDisk = d;
  d->zTab = sqlite3_mprintf("%s_run", p->zName);
  if( d->zTab==0 ) return SQLITE_NOMEM;
  rc = gpudsRunPrepare(p, &pStmt, "SELECT id, n, typeof(keys)=='blob' AND typeof(vals)=='blob'"
                       " FROM %Q.'%q_run' ORDER BY id", p->zDb, p->zName);
  if( rc ) return rc;
  while( (rc = sqlite3_step(pStmt))==SQLITE_ROW ){
    int64_t iRow = sqlite3_column_int64(pStmt, 0), n = sqlite3_column_int64(pStmt, 1);
    int64_t iRun = iRow >> RUN_SHIFT;
    nAll += n;
    if( !sqlite3_column_int(pStmt, 2) ){
      rc = diskCorrupt(p, iRun, "keys or vals is not a blob");
      break;
    }
    if( n<0 ){ rc = diskCorrupt(p, iRun, "bad chunk sizes"); break; }
    if( n==0 ){                 /* the loader reads none: no writer makes one */
      uLayout += gpudsChunkLayout(iRow, 0, 0);
      continue;
    }
    if( d->nChunk==nAlloc ){
      int nNew = nAlloc ? 2*nAlloc : 64;
      DiskChunk *a = sqlite3_realloc64(d->aChunk, sizeof(DiskChunk)*nNew);
      DiskRun *r = a ? sqlite3_realloc64(d->aRun, sizeof(DiskRun)*nNew) : 0;
      if( a ) d->aChunk = a;
      if( r ) d->aRun = r;
      if( !a || !r ){ rc = SQLITE_NOMEM; break; }
      nAlloc = nNew;
    }
    if( d->nRun==0 || d->aRun[d->nRun-1].iRun!=iRun ){
      d->aRun[d->nRun].iRun = iRun;
      d->aRun[d->nRun].iFirst = d->nChunk;
      d->aRun[d->nRun].nChunk = 0;
      d->nRun++;
    }
    d->aRun[d->nRun-1].nChunk++;
    d->aChunk[d->nChunk].iRow = iRow;
    d->aChunk[d->nChunk].n = n;
    d->nChunk++;
  }
  if( rc==SQLITE_DONE ) rc = SQLITE_OK;
  if( rc!=SQLITE_OK && rc!=SQLITE_NOMEM && p->base.zErrMsg==0 ){
    gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  }
  sqlite3_finalize(pStmt);
  if( rc==SQLITE_OK && p->nMetaEntries>=0 && nAll!=p->nMetaEntries ){
    rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run is damaged: its chunks hold "
                        "%lld entries, %s_meta says %lld", p->zName,
                        (long long)nAll, p->zName, (long long)p->nMetaEntries);
  }
  for(j=0; rc==SQLITE_OK && j<d->nRun; j++){
    const DiskRun *r = &d->aRun[j];
    int i;
    for(i=0; rc==SQLITE_OK && i<r->nChunk; i++){
      DiskChunk *c = &d->aChunk[r->iFirst+i];
      rc = diskFirstKey(p, r->iRun, c);
      if( rc==SQLITE_OK && i>0 && c->k0<=c[-1].k0 ){
        rc = diskCorrupt(p, r->iRun, "keys out of order");
      }
      uLayout += gpudsChunkLayout(c->iRow, c->n, c->k0);
    }
  }
  sqlite3_blob_close(d->pKeys);
  d->pKeys = 0;
  if( rc==SQLITE_OK && p->iFormat>=SHADOW_FORMAT_DIGEST && uLayout!=p->uMetaLayout ){
    rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run is damaged: its chunks do not "
                        "match the digests in %s_meta", p->zName, p->zName);
  }
  return rc;
}

/* Chunk i of run r, decoded and checked, in a cache slot (*ppDec). */
static int diskDecode(GpudsTable *p, const DiskRun *r, int i, DiskDecoded **ppDec){
  GpudsDisk *d = p->pDisk;
  DiskDecoded *s = &d->aDec[0];
  const DiskChunk *c = &d->aChunk[r->iFirst+i];
  int64_t iRun = r->iRun;
  unsigned char *aK = 0;
  int64_t nk, nv, n = c->n;
  size_t off = 0, nEnt;
  uint64_t h;
  int rc, j;
  for(j=0; j<DISK_CACHE; j++){
    if( d->aDec[j].n>0 && d->aDec[j].iRow==c->iRow ){
      *ppDec = &d->aDec[j];
      d->aDec[j].iUse = ++d->iClock;
      return SQLITE_OK;
    }
    if( d->aDec[j].iUse < s->iUse ) s = &d->aDec[j];
  }
  decodedClear(s);
  rc = diskBlob(p, &d->pKeys, "keys", c->iRow);
  if( rc==SQLITE_OK ) rc = diskBlob(p, &d->pVals, "vals", c->iRow);
  if( rc ) return rc;
  nk = sqlite3_blob_bytes(d->pKeys);
  nv = sqlite3_blob_bytes(d->pVals);
  if( n<=0 || n>0x7fffffff || nk<n || nk>n*9 || nv<n+SHADOW_SUM ){
    return diskCorrupt(p, iRun, "bad chunk sizes");
  }
  aK = sqlite3_malloc64(nk);
  s->aVal = malloc((size_t)nv);
  s->aKey = sqlite3_malloc64(n*8);
  s->aOff = sqlite3_malloc64(n*4);
  if( !aK || !s->aVal || !s->aKey || !s->aOff ){ rc = SQLITE_NOMEM; goto decode_out; }
  rc = sqlite3_blob_read(d->pKeys, aK, (int)nk, 0);
  if( rc==SQLITE_OK ) rc = sqlite3_blob_read(d->pVals, s->aVal, (int)nv, 0);
  if( rc ){ gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db)); goto decode_out; }
  nEnt = (size_t)nv - SHADOW_SUM;
  memcpy(&h, s->aVal + nEnt, SHADOW_SUM);
  if( h!=gpudsChunkSum(gpudsChunkSeed(p->iFormat, c->iRow), aK, (size_t)nk, s->aVal, nEnt) ){
    rc = diskCorrupt(p, iRun, "checksum mismatch"); goto decode_out;
  }
  if( !gpudsKeysDecode(aK, (size_t)nk, s->aKey, (int)n) ){ rc = diskCorrupt(p, iRun, "bad keys"); goto decode_out; }
  if( s->aKey[0]!=c->k0 || (i+1<r->nChunk && s->aKey[n-1]>=c[1].k0) ){
    rc = diskCorrupt(p, iRun, "keys out of order"); goto decode_out;
  }
  for(j=0; j<n; j++){
    uint64_t E;
    const char *zBad;
    s->aOff[j] = (uint32_t)off;
    if( (zBad = gpudsEntryNext(s->aVal, nEnt, &off, &E))!=0 ){
      rc = diskCorrupt(p, iRun, zBad); goto decode_out;
    }
    if( E==1 ) off += SHADOW_OVFL_REF;
    else if( E>=2 ) off += (size_t)(E-2);
  }
  if( off!=nEnt ){ rc = diskCorrupt(p, iRun, "bytes after the last entry"); goto decode_out; }
  s->iRow = c->iRow;
  s->n = (int)n;
  s->iUse = ++d->iClock;
  *ppDec = s;
decode_out:
  sqlite3_free(aK);
  if( rc ) decodedClear(s);
  return rc;
}

/* Look key k up in run r: *pbHit if the run holds it, then *phRow its row
** (malloc'd: the caller's) or 0 for a deletion. */
static int diskRunLookup(GpudsTable *p, const DiskRun *r, int64_t k, int *pbHit, uint64_t *phRow){
  GpudsDisk *d = p->pDisk;
  DiskDecoded *s = 0;
  int lo = 0, hi = r->nChunk, rc;
  *pbHit = 0;
  *phRow = 0;
  while( lo<hi ){                   /* the first chunk whose first key is above k */
    int mid = lo + (hi-lo)/2;
    if( d->aChunk[r->iFirst+mid].k0<=k ) lo = mid+1; else hi = mid;
  }
  if( lo==0 ) return SQLITE_OK;     /* k is below the run's first key */
  rc = diskDecode(p, r, lo-1, &s);
  if( rc ) return rc;
  lo = 0; hi = s->n;
  while( lo<hi ){
    int mid = lo + (hi-lo)/2;
    if( s->aKey[mid]<k ) lo = mid+1; else hi = mid;
  }
  if( lo>=s->n || s->aKey[lo]!=k ) return SQLITE_OK;
  *pbHit = 1;
  {
    const unsigned char *a = s->aVal + s->aOff[lo];
    uint64_t E;
    int m = gpudsVarintGet(a, 9, &E);   /* checked by diskDecode */
    unsigned char *aRow = 0;
    if( E==0 ) return SQLITE_OK;      /* deleted by this run */
    if( E==1 ){
      GpudsOvfl o;
      if( !gpudsOvflParse(a+m, &o) ) return diskCorrupt(p, r->iRun, "bad spilled record reference");
      rc = gpudsOvflRead(p, r->iRun, &o, p->nCol-1, &aRow);
    }else{
      rc = gpudsRunRecord(p, a+m, (uint32_t)(E-2), &aRow);
    }
    if( rc ) return rc;
    *phRow = (uint64_t)(uintptr_t)aRow;
  }
  return SQLITE_OK;
}

/* Look the n keys aKey[] up in the runs of the connection's snapshot:
** aFound[i] and aRow[i] (a row the caller frees with gpudsRowFreeHandle,
** or 0) as the table's store would answer, newest run first.  On error
** the rows found so far are freed and the table's message says why. */
int gpudsDiskLookup(GpudsTable *p, size_t n, const int64_t *aKey,
                    uint8_t *aFound, uint64_t *aRow){
  GpudsDisk *d;
  size_t i;
  int rc = SQLITE_OK;
  memset(aFound, 0, n);
  memset(aRow, 0, n*sizeof(uint64_t));
  if( p->iFormat<SHADOW_FORMAT_ENC ){
    return gpudsVtabError(p, SQLITE_INTERNAL, "%s: no disk reads of format %d",
                          p->zName, p->iFormat);
  }
  if( p->pDisk==0 ){
    rc = diskOpen(p);
    if( rc ){ gpudsDiskReset(p); return rc; }
  }
  d = p->pDisk;
  for(i=0; i<n && rc==SQLITE_OK; i++){
    int j, bHit = 0;
    for(j=d->nRun-1; j>=0 && !bHit && rc==SQLITE_OK; j--){
      rc = diskRunLookup(p, &d->aRun[j], aKey[i], &bHit, &aRow[i]);
    }
    aFound[i] = aRow[i]!=0;
  }
  sqlite3_blob_close(d->pKeys);
  sqlite3_blob_close(d->pVals);
  d->pKeys = d->pVals = 0;
  if( rc ){
    for(i=0; i<n; i++){ gpudsRowFreeHandle(aRow[i]); aRow[i] = 0; aFound[i] = 0; }
  }
  return rc;
}
