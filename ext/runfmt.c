/*
** runfmt.c -- the run format of the shadow table <name>_run: t_meta read
** and validated, the chunk checksum and digests, run readers
** (validating every entry before use), the list of runs, the k-way merge
** of runs ("newest wins"), and the run writer.  The format itself is
** described in runfmt.h and ARCHITECTURE.md.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "runfmt.h"
#include "gpuds_mix.h"
#include <string.h>
#include <stdlib.h>

/* The checksum a format-2 chunk ends its vals with: a 64-bit hash of the
** keys blob and of the vals entries before it, started from uSeed (0, or
** from format 5 the chunk's id: gpudsChunkSeed).  It finds damage that
** leaves every length and key order valid (a flipped byte inside a value),
** and from format 5 a chunk moved to another id; it is no defence against
** deliberate forgery. */
uint64_t gpudsChunkSum(uint64_t uSeed, const unsigned char *aK, size_t nK,
                       const unsigned char *aV, size_t nV){
  /* Four lanes, each a chain of (state ^ word) * odd: every step is a
  ** bijection of the state, so a change to any one word (or to the seed,
  ** which starts lane 0) always changes the result; four independent
  ** chains keep the multiplier busy (the loader checks every byte it
  ** reads). */
  const unsigned char *aPart[2];
  size_t anPart[2], i;
  uint64_t h[4] = { 0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL,
                    0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL };
  const uint64_t P = 0x9e3779b97f4a7c15ULL;
  int j;
  h[0] ^= uSeed;
  aPart[0] = aK; anPart[0] = nK; aPart[1] = aV; anPart[1] = nV;
  for(j=0; j<2; j++){
    const unsigned char *a = aPart[j];
    size_t n = anPart[j];
    uint64_t w[4];
    for(i=0; i+32<=n; i+=32){
      memcpy(w, a+i, 32);
      h[0] = (h[0] ^ w[0]) * P;  h[1] = (h[1] ^ w[1]) * P;
      h[2] = (h[2] ^ w[2]) * P;  h[3] = (h[3] ^ w[3]) * P;
    }
    for(; i<n; i++) h[i&3] = (h[i&3] ^ a[i]) * P;
    h[0] ^= (uint64_t)n << 1 | (uint64_t)j;      /* the lengths count too */
  }
  return gpudsMix64(gpudsMix64(h[0] ^ gpudsMix64(h[1])) ^ gpudsMix64(h[2] ^ gpudsMix64(h[3])));
}

/* The seed of the checksum of chunk iRow (its t_run id) in a table of
** format iFormat: the id from format 5, else 0. */
uint64_t gpudsChunkSeed(int iFormat, int64_t iRow){
  return iFormat>=SHADOW_FORMAT_DIGEST ? (uint64_t)iRow : 0;
}

/* A chunk's term of t_meta's 'layout' (format 5): its id, entry count and
** first key (0 for a chunk of no entries), hashed. */
uint64_t gpudsChunkLayout(int64_t iRow, int64_t n, int64_t k0){
  uint64_t h = gpudsMix64((uint64_t)iRow ^ 0x243f6a8885a308d3ULL);
  h = gpudsMix64(h ^ (uint64_t)n);
  return gpudsMix64(h ^ (uint64_t)k0);
}

/* A chunk's term of t_meta's 'digest' (format 5): its layout term and its
** checksum (the one its vals end with), hashed. */
uint64_t gpudsChunkDigest(int64_t iRow, int64_t n, int64_t k0, uint64_t uSum){
  return gpudsMix64(gpudsChunkLayout(iRow, n, k0) ^ gpudsMix64(uSum ^ 0x13198a2e03707344ULL));
}

/* Add one chunk's terms to d. */
void gpudsDigestAdd(GpudsDigest *d, int64_t iRow, int64_t n, int64_t k0, uint64_t uSum){
  d->uDigest += gpudsChunkDigest(iRow, n, k0, uSum);
  d->uLayout += gpudsChunkLayout(iRow, n, k0);
  d->nEntries += n;
}

/* Read and validate t_meta into *pMeta and p->iFormat: 'format' (one this
** build reads), 'generation' and 'rows' (integers >= 0) each exactly once;
** 'id', 'entries' (integers >= 0), 'stamp', 'digest' and 'layout'
** (integers) at most once, and from format 5 each of the last four exactly
** once.  A missing, repeated or ill-typed row is SQLITE_CORRUPT_VTAB; a
** format this build does not know is SQLITE_ERROR naming it. */
int gpudsMetaRead(GpudsTable *p, GpudsMeta *pMeta){
  static const char *azKey[] = { "format", "generation", "rows", "id", "entries",
                                 "stamp", "digest", "layout" };
  enum { NKEY = 8, NSIGNED = 5 };     /* keys from NSIGNED on may be negative */
  int64_t aVal[NKEY] = {0, 0, 0, 0, -1, 0, 0, 0};
  int aSeen[NKEY] = {0, 0, 0, 0, 0, 0, 0, 0};
  const char *zBad = 0;
  sqlite3_stmt *pStmt;
  int rc, i, nNeed;
  rc = gpudsRunPrepare(p, &pStmt, "SELECT key, value FROM %Q.'%q_meta'", p->zDb, p->zName);
  if( rc ) return rc;
  while( sqlite3_step(pStmt)==SQLITE_ROW ){
    const char *zKey = (const char*)sqlite3_column_text(pStmt, 0);
    for(i=0; i<NKEY && (zKey==0 || strcmp(zKey, azKey[i])!=0); i++){}
    if( i==NKEY ) continue;                   /* not ours to judge */
    if( aSeen[i]++ ){ zBad = "a key twice"; continue; }
    if( sqlite3_column_type(pStmt, 1)!=SQLITE_INTEGER
     || ((aVal[i] = sqlite3_column_int64(pStmt, 1))<0 && i<NSIGNED) ){
      zBad = azKey[i];
    }
  }
  rc = sqlite3_finalize(pStmt);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  nNeed = aSeen[0] && aVal[0]>=SHADOW_FORMAT_DIGEST ? NKEY : 3;
  for(i=0; zBad==0 && i<nNeed; i++){
    if( !aSeen[i] && i!=3 ) zBad = azKey[i];  /* ('id' may lack in any format) */
  }
  if( zBad ){
    return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_meta is damaged (%s%s)", p->zName,
                          strcmp(zBad, "a key twice")==0 ? "" : "bad or missing ", zBad);
  }
  if( aVal[0]<SHADOW_FORMAT_MIN || aVal[0]>SHADOW_FORMAT ){
    return gpudsVtabError(p, SQLITE_ERROR, "%s: storage format %lld is not one this "
                          "gpuds reads (formats %d to %d)", p->zName, (long long)aVal[0],
                          SHADOW_FORMAT_MIN, SHADOW_FORMAT);
  }
  p->iFormat = (int)aVal[0];
  pMeta->iFormat = (int)aVal[0];
  pMeta->iGeneration = aVal[1];
  pMeta->nRows = aVal[2];
  pMeta->iId = aVal[3];
  pMeta->nEntries = aVal[4];
  pMeta->iStamp = aVal[5];
  pMeta->uDigest = (uint64_t)aVal[6];
  pMeta->uLayout = (uint64_t)aVal[7];
  return SQLITE_OK;
}

/* ------------------------------------------------- format 4: keys, records
** The one place that validates format 4 (runfmt.h); row.c's
** gpudsRowDecode() builds a record from what gpudsRecCheck() accepted.
** These call no SQLite routine: the loader's worker threads use them. */

#define KEY_SIGN ((uint64_t)1<<63)

/* Decode the n keys of a format-4 keys blob a[0..nA-1] into aKey[]: 1 if
** they are exactly n varints filling the blob, strictly ascending (every
** difference >= 1, none past INT64_MAX), else 0. */
int gpudsKeysDecode(const unsigned char *a, size_t nA, int64_t *aKey, int n){
  size_t off;
  uint64_t u, prev;
  int i, m;
  if( n<=0 ) return n==0 && nA==0;
  m = gpudsVarintGet(a, nA, &u);
  if( m==0 ) return 0;
  off = (size_t)m;
  aKey[0] = (int64_t)((u>>1) ^ (0 - (u & 1)));
  prev = (uint64_t)aKey[0] ^ KEY_SIGN;      /* order-preserving as unsigned */
  for(i=1; i<n; i++){
    if( off<nA && a[off]<0x80 ){
      u = a[off++];
    }else{
      m = gpudsVarintGet(a+off, nA-off, &u);
      if( m==0 ) return 0;
      off += (size_t)m;
    }
    if( u==0 || u > ~prev ) return 0;
    prev += u;
    aKey[i] = (int64_t)(prev ^ KEY_SIGN);
  }
  return off==nA;
}

/* 1 if a[0..n-1] is a valid format-4 record of nCol columns: nCol serial
** types (none 10 or 11, no varint past the end), then exactly the bytes
** they call for; *pnHdr gets the serial types' bytes and *pnByte the size
** of the row record (row.c) it decodes to, which must stay below 2^31.
** Else 0. */
int gpudsRecCheck(const unsigned char *a, uint32_t n, int nCol, uint32_t *pnHdr,
                  size_t *pnByte){
  size_t off = 0;
  uint64_t nBody = 0;
  int i;
  for(i=0; i<nCol; i++){
    uint64_t s;
    int64_t nb;
    if( off<n && a[off]<0x80 ){
      s = a[off++];
    }else{
      int m = gpudsVarintGet(a+off, n-off, &s);
      if( m==0 ) return 0;
      off += (size_t)m;
    }
    nb = gpudsSerialBytes(s);
    if( nb<0 ) return 0;
    nBody += (uint64_t)nb;
  }
  if( (uint64_t)off + nBody != n || (uint64_t)n + gpudsRowHdrBytes(nCol) > 0x7fffffff ) return 0;
  *pnHdr = (uint32_t)off;
  *pnByte = gpudsRowSize(n, (uint32_t)off);
  return 1;
}

/* The row record (malloc()'d: a row handle can take it over; else free()
** it) of the n bytes a[] of an entry of this table's format: the record
** holding the values of a valid legacy record (formats 1 to 3) or of a
** valid format-4 record.  SQLITE_CORRUPT_VTAB (no message) if they are not valid,
** SQLITE_NOMEM. */
static int recToRow(GpudsTable *p, const unsigned char *a, uint32_t n, unsigned char **paRow){
  int nCol = p->nCol - 1;
  *paRow = 0;
  if( p->iFormat>=SHADOW_FORMAT_ENC ){
    uint32_t nHdr;
    size_t nByte;
    uint64_t h;
    if( !gpudsRecCheck(a, n, nCol, &nHdr, &nByte) ) return SQLITE_CORRUPT_VTAB;
    h = gpudsRowDecode(0, a, nHdr, nCol, nByte);
    if( h==0 ) return SQLITE_NOMEM;
    *paRow = (unsigned char*)(uintptr_t)h;
  }else{
    int bBad;
    *paRow = (unsigned char*)gpudsRowFromLegacy(a, n, nCol, &bBad);
    if( bBad ) return SQLITE_CORRUPT_VTAB;
    if( *paRow==0 ) return SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

/* The row record (malloc()'d) of the entry bytes a[0..n-1] a merge gave
** (gpudsRunMerge); a bad record is SQLITE_CORRUPT_VTAB with the table's
** message set. */
int gpudsRunRecord(GpudsTable *p, const unsigned char *a, uint32_t n, unsigned char **paRow){
  int rc = recToRow(p, a, n, paRow);
  if( rc==SQLITE_CORRUPT_VTAB ) return gpudsVtabError(p, rc, "%s_run: bad row record", p->zName);
  return rc;
}

/* ------------------------------------------------------------ run readers */

/* Streams one run's entries in key order, a chunk at a time, reading the
** chunk's blobs where the statement holds them (valid until its next step).
** Every entry is bounds-checked before use: a damaged chunk is reported as
** SQLITE_CORRUPT_VTAB, never read past its end. */
typedef struct RunReader {
  sqlite3_stmt *pStmt;     /* SELECT n, keys, vals, id of the run's chunks */
  int64_t iRun;
  int n, i;                /* entries in the current chunk, next one */
  const int64_t *aKey;     /* the chunk's keys */
  int64_t *aKeyBuf;        /* an aligned copy of them, if the blob is not */
  size_t nKeyBuf;          /* bytes of aKeyBuf */
  const unsigned char *aVal;  /* the chunk's vals */
  size_t nVal, iOff;       /* bytes of aVal, offset of entry i */
  uint32_t nCur;           /* payload bytes of entry i (SHADOW_TOMB: none;
                           ** SHADOW_OVFL: a reference, in ovfl) */
  int nEnt;                /* bytes of entry i's header (its length) */
  int bEnc;                /* format 4 */
  GpudsOvfl ovfl;          /* entry i's reference, if nCur==SHADOW_OVFL */
  int bEof;
  int bAny;                /* a chunk with entries was read: kLast is set */
  int64_t kLast;           /* the last key of that chunk */
  GpudsDigest *pSeen;      /* digests of the chunks read (NULL: none kept) */
} RunReader;

/* Report a damaged chunk of run r. */
static int readerCorrupt(GpudsTable *p, RunReader *r, const char *zWhy){
  return gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                        p->zName, (long long)r->iRun, zWhy);
}

/* Validate entry i of the current chunk at offset iOff; cache its length. */
static int readerCheckEntry(GpudsTable *p, RunReader *r){
  uint32_t L;
  if( r->bEnc ){
    uint64_t E;
    size_t off = r->iOff;
    const char *zBad = gpudsEntryNext(r->aVal, r->nVal, &off, &E);
    if( zBad ) return readerCorrupt(p, r, zBad);
    L = E==0 ? SHADOW_TOMB : E==1 ? SHADOW_OVFL : (uint32_t)(E-2);
    r->nEnt = (int)(off - r->iOff);
  }else{
    if( r->iOff+4 > r->nVal ) return readerCorrupt(p, r, "entry past the end of vals");
    memcpy(&L, r->aVal + r->iOff, 4);
    r->nEnt = 4;
  }
  if( L==SHADOW_OVFL ){
    if( p->iFormat<SHADOW_FORMAT_OVFL || r->iOff+r->nEnt+SHADOW_OVFL_REF > r->nVal
     || !gpudsOvflParse(r->aVal + r->iOff + r->nEnt, &r->ovfl) ){
      return readerCorrupt(p, r, "bad spilled record reference");
    }
  }else if( L!=SHADOW_TOMB && (uint64_t)r->iOff+r->nEnt+L > r->nVal ){
    return readerCorrupt(p, r, "entry length past the end of vals");
  }
  if( r->i>0 && r->aKey[r->i]<=r->aKey[r->i-1] ) return readerCorrupt(p, r, "keys out of order");
  r->nCur = L;
  return SQLITE_OK;
}

/* Advance to the next chunk; sets bEof at the end.  The chunk is checked
** whole before its entries are (sizes, checksum, keys, their order after
** the run's previous chunk) and its terms added to the digests. */
static int readerChunk(GpudsTable *p, RunReader *r){
  int rc;
  if( r->n>0 ){ r->bAny = 1; r->kLast = r->aKey[r->n-1]; }
  rc = sqlite3_step(r->pStmt);
  if( rc==SQLITE_DONE ){ r->bEof = 1; return SQLITE_OK; }
  if( rc!=SQLITE_ROW ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  {
    int n = sqlite3_column_int(r->pStmt, 0);
    int64_t iRow = sqlite3_column_int64(r->pStmt, 3);
    int nk, nv;
    const void *pk, *pv;
    uint64_t h = 0;
    r->n = 0;
    if( sqlite3_column_type(r->pStmt, 1)!=SQLITE_BLOB
     || sqlite3_column_type(r->pStmt, 2)!=SQLITE_BLOB ){
      return readerCorrupt(p, r, "keys or vals is not a blob");
    }
    pk = sqlite3_column_blob(r->pStmt, 1);
    nk = sqlite3_column_bytes(r->pStmt, 1);
    pv = sqlite3_column_blob(r->pStmt, 2);
    nv = sqlite3_column_bytes(r->pStmt, 2);
    if( p->iFormat>=2 ){
      if( nv<SHADOW_SUM ) return readerCorrupt(p, r, "bad chunk sizes");
      nv -= SHADOW_SUM;
      memcpy(&h, (const unsigned char*)pv + nv, SHADOW_SUM);
      if( n<0 || (r->bEnc ? nk<n : nk!=n*8) ) return readerCorrupt(p, r, "bad chunk sizes");
      if( h!=gpudsChunkSum(gpudsChunkSeed(p->iFormat, iRow), (const unsigned char*)pk,
                           (size_t)nk, (const unsigned char*)pv, (size_t)nv) ){
        return readerCorrupt(p, r, "checksum mismatch");
      }
    }
    if( r->bEnc ){
      if( n<0 || nk<n || (int64_t)nk > (int64_t)n*9 || nv<n ) return readerCorrupt(p, r, "bad chunk sizes");
      if( (size_t)n*8 > r->nKeyBuf ){
        sqlite3_free(r->aKeyBuf);
        r->nKeyBuf = 0;
        r->aKeyBuf = sqlite3_malloc64((size_t)n*8 + 8);
        if( r->aKeyBuf==0 ) return SQLITE_NOMEM;
        r->nKeyBuf = (size_t)n*8;
      }
      if( !gpudsKeysDecode((const unsigned char*)pk, (size_t)nk, r->aKeyBuf, n) ){
        return readerCorrupt(p, r, "bad keys");
      }
      r->aKey = r->aKeyBuf;
    }else if( n<0 || nk!=n*8 || (int64_t)nv < (int64_t)n*4 ){
      return readerCorrupt(p, r, "bad chunk sizes");
    }else if( ((uintptr_t)pk & 7)!=0 ){     /* SQLite's buffers are aligned */
      if( (size_t)nk > r->nKeyBuf ){
        sqlite3_free(r->aKeyBuf);
        r->nKeyBuf = 0;
        r->aKeyBuf = sqlite3_malloc64((size_t)nk);
        if( r->aKeyBuf==0 ) return SQLITE_NOMEM;
        r->nKeyBuf = (size_t)nk;
      }
      memcpy(r->aKeyBuf, pk, (size_t)nk);
      r->aKey = r->aKeyBuf;
    }else{
      r->aKey = (const int64_t*)pk;
    }
    if( n>0 && r->bAny && r->aKey[0]<=r->kLast ) return readerCorrupt(p, r, "keys out of order");
    if( r->pSeen ) gpudsDigestAdd(r->pSeen, iRow, n, n>0 ? r->aKey[0] : 0, h);
    r->aVal = (const unsigned char*)pv;
    r->n = n; r->i = 0; r->nVal = (size_t)nv; r->iOff = 0;
    if( n>0 ) return readerCheckEntry(p, r);
  }
  return SQLITE_OK;
}

/* Open a reader on run iRun, positioned on its first entry. */
static int readerOpen(GpudsTable *p, int64_t iRun, RunReader *r, GpudsDigest *pSeen){
  int rc;
  memset(r, 0, sizeof(*r));
  r->iRun = iRun;
  r->bEnc = p->iFormat>=SHADOW_FORMAT_ENC;
  r->pSeen = pSeen;
  rc = gpudsRunPrepare(p, &r->pStmt,
      "SELECT n, keys, vals, id FROM %Q.'%q_run' WHERE id BETWEEN %lld AND %lld ORDER BY id",
      p->zDb, p->zName, (long long)(iRun<<RUN_SHIFT),
      (long long)((iRun<<RUN_SHIFT) | ((1<<RUN_SHIFT)-1)));
  while( rc==SQLITE_OK && !r->bEof && r->i>=r->n ) rc = readerChunk(p, r);
  return rc;
}

/* The current (validated) entry: key, and its record bytes (NULL for a
** tombstone or a spilled record), or the spilled record's reference. */
static void readerEntry(RunReader *r, int64_t *pKey,
                        const unsigned char **paRec, uint32_t *pnRec,
                        const GpudsOvfl **ppOvfl){
  *pKey = r->aKey[r->i];
  *ppOvfl = 0;
  if( r->nCur==SHADOW_TOMB ){ *paRec = 0; *pnRec = 0; return; }
  if( r->nCur==SHADOW_OVFL ){ *paRec = 0; *pnRec = r->ovfl.nRec; *ppOvfl = &r->ovfl; return; }
  *paRec = r->aVal + r->iOff + r->nEnt;
  *pnRec = r->nCur;
}

/* Step past the current entry and validate the next one. */
static int readerNext(GpudsTable *p, RunReader *r){
  r->iOff += r->nEnt + (r->nCur==SHADOW_TOMB ? 0 : r->nCur==SHADOW_OVFL ? SHADOW_OVFL_REF : r->nCur);
  r->i++;
  if( r->i<r->n ) return readerCheckEntry(p, r);
  if( r->bEnc && r->iOff!=r->nVal ) return readerCorrupt(p, r, "bytes after the last entry");
  while( !r->bEof && r->i>=r->n ){
    int rc = readerChunk(p, r);
    if( rc ) return rc;
  }
  return SQLITE_OK;
}

static void readerClose(RunReader *r){
  sqlite3_finalize(r->pStmt);
  sqlite3_free(r->aKeyBuf);
  memset(r, 0, sizeof(*r));
}

/* The run numbers present, oldest first, with their entry counts and, if
** paCap is not NULL, the entries their keys blobs have room for (a load
** sizes its arrays by the smaller: a damaged n cannot make it allocate more
** than the blobs hold).  The rows are summed here, in id order, rather than
** by GROUP BY: SQLite's GROUP BY sorter would copy every keys blob to find
** its length. */
int gpudsRunListCap(GpudsTable *p, int64_t **paRun, int64_t **paN, int64_t **paCap,
                       int *pnRun){
  sqlite3_stmt *pStmt;
  int64_t *aRun = 0, *aN = 0, *aCap = 0;
  int nRun = 0, nAlloc = 0;
  int rc = gpudsRunPrepare(p, &pStmt,
      paCap ? "SELECT id>>%d, n, length(keys)/%d FROM %Q.'%q_run' ORDER BY id"
            : "SELECT id>>%d, n, %d*0 FROM %Q.'%q_run' ORDER BY id",
      RUN_SHIFT, p->iFormat>=SHADOW_FORMAT_ENC ? 1 : 8, p->zDb, p->zName);
  if( rc ) return rc;
  while( sqlite3_step(pStmt)==SQLITE_ROW ){
    int64_t iRun = sqlite3_column_int64(pStmt, 0);
    if( nRun==0 || aRun[nRun-1]!=iRun ){
      if( nRun==nAlloc ){
        int64_t *a, *b, *c;
        nAlloc = nAlloc ? nAlloc*2 : 16;
        a = sqlite3_realloc64(aRun, nAlloc*8);
        if( a ) aRun = a;
        b = sqlite3_realloc64(aN, nAlloc*8);
        if( b ) aN = b;
        c = sqlite3_realloc64(aCap, nAlloc*8);
        if( c ) aCap = c;
        if( !a || !b || !c ){ rc = SQLITE_NOMEM; break; }
      }
      aRun[nRun] = iRun;
      aN[nRun] = aCap[nRun] = 0;
      nRun++;
    }
    aN[nRun-1] += sqlite3_column_int64(pStmt, 1);
    aCap[nRun-1] += sqlite3_column_int64(pStmt, 2);
  }
  {
    int rc2 = sqlite3_finalize(pStmt);
    if( rc==SQLITE_OK && rc2 ) rc = gpudsVtabError(p, rc2, "%s", sqlite3_errmsg(p->db));
  }
  if( rc ){ sqlite3_free(aRun); sqlite3_free(aN); sqlite3_free(aCap); return rc; }
  *paRun = aRun; *paN = aN; *pnRun = nRun;
  if( paCap ) *paCap = aCap; else sqlite3_free(aCap);
  return SQLITE_OK;
}
int gpudsRunList(GpudsTable *p, int64_t **paRun, int64_t **paN, int *pnRun){
  return gpudsRunListCap(p, paRun, paN, 0, pnRun);
}

/* The entries of t_run, sum(n), in *pnEnt. */
int gpudsRunEntries(GpudsTable *p, int64_t *pnEnt){
  sqlite3_stmt *pStmt;
  int rc = gpudsRunPrepare(p, &pStmt, "SELECT coalesce(sum(n), 0) FROM %Q.'%q_run'",
                           p->zDb, p->zName);
  *pnEnt = 0;
  if( rc ) return rc;
  if( sqlite3_step(pStmt)==SQLITE_ROW ) *pnEnt = sqlite3_column_int64(pStmt, 0);
  rc = sqlite3_finalize(pStmt);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  return SQLITE_OK;
}

/* A k-way merge of runs aRun[0..nRun-1] (oldest first): each key once, with
** the value of the newest run that holds it.  xOut is called for each
** (key, record, spilled record or tombstone), in key order; with
** MERGE_DROP_TOMB not for tombstones.  With MERGE_FREE_OVFL the pieces of
** every spilled record a newer run overrides are deleted (the merge's output
** replaces its input runs: they would be referenced by nothing).  If
** pSeen is not NULL, the digests of every chunk read are added to it (a
** merge that succeeds reads every chunk of its runs). */
int gpudsRunMerge(GpudsTable *p, const int64_t *aRun, int nRun, int mFlags,
                  MergeOut xOut, void *pCtx, GpudsDigest *pSeen){
  RunReader *aR = sqlite3_malloc64(sizeof(RunReader)*(nRun ? nRun : 1));
  int rc = SQLITE_OK, i;
  if( aR==0 ) return SQLITE_NOMEM;
  memset(aR, 0, sizeof(RunReader)*(nRun ? nRun : 1));
  for(i=0; i<nRun && rc==SQLITE_OK; i++) rc = readerOpen(p, aRun[i], &aR[i], pSeen);
  while( rc==SQLITE_OK ){
    int64_t kMin = 0;
    int iBest = -1;
    const unsigned char *aRec = 0;
    uint32_t nRec = 0;
    const GpudsOvfl *pOvfl = 0;
    /* Smallest current key; on ties the newest run (largest i) wins. */
    for(i=0; i<nRun; i++){
      if( aR[i].bEof ) continue;
      if( iBest<0 || aR[i].aKey[aR[i].i]<=kMin ){
        kMin = aR[i].aKey[aR[i].i];
        iBest = i;
      }
    }
    if( iBest<0 ) break;
    readerEntry(&aR[iBest], &kMin, &aRec, &nRec, &pOvfl);
    if( aRec || pOvfl || !(mFlags & MERGE_DROP_TOMB) ){
      rc = xOut(p, pCtx, kMin, aRec, nRec, pOvfl);
    }
    for(i=0; i<nRun && rc==SQLITE_OK; i++){
      if( !aR[i].bEof && aR[i].aKey[aR[i].i]==kMin ){
        if( i!=iBest && aR[i].nCur==SHADOW_OVFL && (mFlags & MERGE_FREE_OVFL) ){
          rc = gpudsOvflDelete(p, &aR[i].ovfl);     /* overridden */
        }
        if( rc==SQLITE_OK ) rc = readerNext(p, &aR[i]);
      }
    }
  }
  for(i=0; i<nRun; i++) readerClose(&aR[i]);
  sqlite3_free(aR);
  return rc;
}

/* ------------------------------------------------------- spilled records */

/* Decode a spilled record's reference from the SHADOW_OVFL_REF bytes a[]
** (unaligned); 1 if it is well formed, 0 if not.  Calls no SQLite routine:
** the loader's worker threads use it. */
int gpudsOvflParse(const unsigned char *a, GpudsOvfl *o){
  memcpy(&o->iFirst, a, 8);
  memcpy(&o->nRec, a+8, 4);
  memcpy(&o->nPiece, a+12, 4);
  memcpy(&o->sum, a+16, 8);
  return o->iFirst>0 && o->nPiece>=1 && o->nPiece<=o->nRec
      && o->iFirst <= INT64_MAX - (int64_t)o->nPiece;
}

/* Read the record o refers to (found in run iRun) into *paRec, allocated
** with malloc() (a row handle can take it over; else free() it), after
** checking that every piece is there, that they add up to its length and
** checksum, and that it is a valid record of nCol non-key columns (in
** format 4, the encoded record, which *paRec gets decoded).  Any
** other state is SQLITE_CORRUPT_VTAB naming run iRun (if > 0).  Pieces are read with
** sqlite3_blob_read: this connection's length limit does not apply. */
int gpudsOvflRead(GpudsTable *p, int64_t iRun, const GpudsOvfl *o, int nCol,
                  unsigned char **paRec){
  sqlite3_blob *pBlob = 0;
  char *zTab = sqlite3_mprintf("%s_ovfl", p->zName);
  unsigned char *a = (unsigned char*)malloc(o->nRec ? o->nRec : 1);
  size_t off = 0;
  uint32_t i;
  int rc = SQLITE_OK;
  const char *zWhy = 0;
  (void)nCol;                               /* the table's: recToRow checks */
  *paRec = 0;
  if( zTab==0 || a==0 ){ rc = SQLITE_NOMEM; goto ovfl_out; }
  for(i=0; i<o->nPiece && rc==SQLITE_OK; i++){
    int n;
    int64_t iRow = o->iFirst + i;
    rc = pBlob ? sqlite3_blob_reopen(pBlob, iRow)
               : sqlite3_blob_open(p->db, p->zDb, zTab, "data", iRow, 0, &pBlob);
    if( rc==SQLITE_ERROR ){ zWhy = "a piece of a spilled record is missing"; break; }
    if( rc ){ gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db)); break; }
    n = sqlite3_blob_bytes(pBlob);
    if( n<=0 || (size_t)n > o->nRec - off ){ zWhy = "spilled record pieces of the wrong size"; break; }
    rc = sqlite3_blob_read(pBlob, a+off, n, 0);
    if( rc ){ gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db)); break; }
    off += (size_t)n;
  }
  if( rc==SQLITE_OK && zWhy==0 ){
    if( off!=o->nRec ) zWhy = "spilled record pieces of the wrong size";
    else if( gpudsChunkSum(0, a, o->nRec, 0, 0)!=o->sum ) zWhy = "spilled record checksum mismatch";
    else{
      unsigned char *aRow = 0;
      rc = recToRow(p, a, o->nRec, &aRow);
      if( rc==SQLITE_CORRUPT_VTAB ){ rc = SQLITE_OK; zWhy = "bad spilled row record"; }
      if( rc==SQLITE_OK && aRow ){ free(a); a = aRow; }
    }
  }
  if( zWhy && iRun>0 ){
    rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_run: run %lld is damaged (%s)",
                        p->zName, (long long)iRun, zWhy);
  }else if( zWhy ){
    rc = gpudsVtabError(p, SQLITE_CORRUPT_VTAB, "%s_ovfl is damaged (%s)", p->zName, zWhy);
  }
  if( rc==SQLITE_OK ){ *paRec = a; a = 0; }
ovfl_out:
  sqlite3_blob_close(pBlob);
  sqlite3_free(zTab);
  free(a);
  return rc;
}

/* Delete the pieces of the spilled record o (its entry is being dropped). */
int gpudsOvflDelete(GpudsTable *p, const GpudsOvfl *o){
  return gpudsRunExec(p, "DELETE FROM %Q.'%q_ovfl' WHERE id BETWEEN %lld AND %lld",
                      p->zDb, p->zName, (long long)o->iFirst,
                      (long long)(o->iFirst + o->nPiece - 1));
}

/* Delete every piece (the runs are being written again from scratch). */
int gpudsOvflDeleteAll(GpudsTable *p){
  if( p->iFormat<SHADOW_FORMAT_OVFL ) return SQLITE_OK;
  return gpudsRunExec(p, "DELETE FROM %Q.'%q_ovfl'", p->zDb, p->zName);
}

/* The largest record a chunk holds alone under this connection's length
** limit (a bigger one is spilled, in format 3). */
int64_t gpudsRunInlineMax(GpudsTable *p){
  return sqlite3_limit(p->db, SQLITE_LIMIT_LENGTH, -1)
       - (p->iFormat>=2 ? SHADOW_SUM : 0) - SHADOW_SLACK - 8 - 4;
}

/* ------------------------------------------------------------ run writer */

/* Accumulates entries into chunks and inserts them as run iRun.  Every
** t_run row it writes (keys, vals and SHADOW_SLACK) stays within
** SQLITE_LIMIT_LENGTH; in format 3 a record that does not fit in a chunk
** alone is spilled to <name>_ovfl in pieces within the limit. */

int gpudsRunWriterOpen(GpudsTable *p, int64_t iRun, RunWriter *w){
  memset(w, 0, sizeof(*w));
  w->iRun = iRun;
  w->aKey = sqlite3_malloc64(SHADOW_CHUNK*8);
  if( w->aKey==0 ) return SQLITE_NOMEM;
  w->nLimit = sqlite3_limit(p->db, SQLITE_LIMIT_LENGTH, -1) - SHADOW_SLACK;
  if( p->iFormat<SHADOW_FORMAT_MIN ){
    return gpudsVtabError(p, SQLITE_INTERNAL, "%s: storage format not read", p->zName);
  }
  w->bSum = p->iFormat>=2;
  w->bOvfl = p->iFormat>=SHADOW_FORMAT_OVFL;
  w->bEnc = p->iFormat>=SHADOW_FORMAT_ENC;
  if( w->bSum ) w->nLimit -= SHADOW_SUM;
  if( w->bEnc ){
    w->aKeyEnc = sqlite3_malloc64(SHADOW_CHUNK*9);
    if( w->aKeyEnc==0 ) return SQLITE_NOMEM;
  }
  return gpudsRunPrepare(p, &w->pIns, "INSERT INTO %Q.'%q_run'(id, n, keys, vals) VALUES(?,?,?,?)",
                       p->zDb, p->zName);
}

/* Write the pending chunk, if any. */
int gpudsRunWriterFlush(GpudsTable *p, RunWriter *w){
  int rc;
  const unsigned char *aK = w->bEnc ? w->aKeyEnc : (const unsigned char*)w->aKey;
  int64_t iRow = (w->iRun<<RUN_SHIFT) | w->iChunk;
  uint64_t h = 0;
  if( w->n==0 ) return SQLITE_OK;
  if( w->iChunk>=(1<<RUN_SHIFT) ) return gpudsVtabError(p, SQLITE_FULL, "run too large");
  if( w->bSum ){
    h = gpudsChunkSum(gpudsChunkSeed(p->iFormat, iRow), aK, w->nKeyEnc, w->aVal, w->nVal);
    memcpy(w->aVal + w->nVal, &h, SHADOW_SUM);   /* writerEntry kept room */
    w->nVal += SHADOW_SUM;
  }
  gpudsDigestAdd(&w->dig, iRow, w->n, w->aKey[0], h);
  rc = sqlite3_bind_int64(w->pIns, 1, iRow);
  if( rc==SQLITE_OK ) rc = sqlite3_bind_int(w->pIns, 2, w->n);
  if( rc==SQLITE_OK ) rc = sqlite3_bind_blob64(w->pIns, 3, aK, (uint64_t)w->nKeyEnc, SQLITE_STATIC);
  if( rc==SQLITE_OK ){
    rc = sqlite3_bind_blob64(w->pIns, 4, w->aVal ? (const void*)w->aVal : (const void*)"",
                             w->nVal, SQLITE_STATIC);
  }
  if( rc ){
    return gpudsVtabError(p, rc, "%s_run: cannot store a chunk of %lld bytes: %s",
                          p->zName, (long long)w->nVal, sqlite3_errstr(rc));
  }
  sqlite3_step(w->pIns);
  rc = sqlite3_reset(w->pIns);
  if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
  w->nVal = 0;
  w->nKeyEnc = 0;
  w->iChunk++;
  w->n = 0;
  return SQLITE_OK;
}

/* Bytes of an entry's header (its length L, SHADOW_TOMB or SHADOW_OVFL)
** in writer w's format, written to a if not NULL. */
static int entryHdr(const RunWriter *w, uint32_t L, unsigned char *a){
  if( w->bEnc ){
    uint64_t E = L==SHADOW_TOMB ? 0 : L==SHADOW_OVFL ? 1 : (uint64_t)L + 2;
    if( a ) return gpudsVarintPut(a, E);
    return gpudsVarintLen(E);
  }
  if( a ) memcpy(a, &L, 4);
  return 4;
}

/* The most bytes one key takes in writer w's format. */
#define KEY_MAX(w) ((w)->bEnc ? 9 : 8)

/* Append key k with entry header L and nPay payload bytes aPay[]; keys must
** ascend. */
static int writerEntry(GpudsTable *p, RunWriter *w, int64_t k, uint32_t L,
                       const unsigned char *aPay, uint32_t nPay){
  int nHdr = entryHdr(w, L, 0);
  size_t nNeed = w->nVal + nHdr + nPay;
  if( w->n>0 && (int64_t)w->nKeyEnc + KEY_MAX(w) + (int64_t)nNeed > w->nLimit ){
    /* Keep every chunk within SQLITE_LIMIT_LENGTH. */
    int rc = gpudsRunWriterFlush(p, w);
    if( rc ) return rc;
    nNeed = nHdr + nPay;
  }
  if( nNeed+SHADOW_SUM>w->nValAlloc ){
    size_t nNew = w->nValAlloc ? w->nValAlloc*2 : 65536;
    unsigned char *a;
    while( nNew<nNeed+SHADOW_SUM ) nNew *= 2;
    a = realloc(w->aVal, nNew);          /* up to 64 MiB and a record */
    if( a==0 ) return SQLITE_NOMEM;
    w->aVal = a;
    w->nValAlloc = nNew;
  }
  if( w->bEnc ){
    uint64_t u = w->n==0 ? ((uint64_t)k<<1) ^ (uint64_t)(k>>63)     /* zigzag */
                         : (uint64_t)k - (uint64_t)w->aKey[w->n-1];
    w->nKeyEnc += (size_t)gpudsVarintPut(w->aKeyEnc + w->nKeyEnc, u);
  }else{
    w->nKeyEnc += 8;
  }
  w->aKey[w->n++] = k;
  entryHdr(w, L, w->aVal + w->nVal);
  if( nPay ) memcpy(w->aVal + w->nVal + nHdr, aPay, nPay);
  w->nVal = nNeed;
  w->nTotal++;
  if( w->n==SHADOW_CHUNK || w->nVal>(64<<20) ) return gpudsRunWriterFlush(p, w);
  return SQLITE_OK;
}

/* Append key k's reference to a spilled record (already in <name>_ovfl). */
int gpudsRunWriterAddOvfl(GpudsTable *p, RunWriter *w, int64_t k, const GpudsOvfl *o){
  unsigned char a[SHADOW_OVFL_REF];
  memcpy(a, &o->iFirst, 8);
  memcpy(a+8, &o->nRec, 4);
  memcpy(a+12, &o->nPiece, 4);
  memcpy(a+16, &o->sum, 8);
  return writerEntry(p, w, k, SHADOW_OVFL, a, SHADOW_OVFL_REF);
}

/* Spill the nRec bytes aRec[] to <name>_ovfl as pieces within the length
** limit; *o says where. */
static int writerSpill(GpudsTable *p, RunWriter *w, const unsigned char *aRec,
                       uint32_t nRec, GpudsOvfl *o){
  int64_t nMax = sqlite3_limit(p->db, SQLITE_LIMIT_LENGTH, -1) - SHADOW_SLACK;
  uint32_t off = 0;
  int rc = SQLITE_OK;
  if( nMax<1 ) return gpudsVtabError(p, SQLITE_TOOBIG, "string or blob too big");
  if( w->pOvflIns==0 ){
    rc = gpudsRunPrepare(p, &w->pOvflIns, "INSERT INTO %Q.'%q_ovfl'(id, data) VALUES(?,?)",
                         p->zDb, p->zName);
    if( rc ) return rc;
  }
  if( w->iOvflNext==0 ){
    sqlite3_stmt *pMax;
    rc = gpudsRunPrepare(p, &pMax, "SELECT coalesce(max(id), 0) + 1 FROM %Q.'%q_ovfl'",
                         p->zDb, p->zName);
    if( rc ) return rc;
    if( sqlite3_step(pMax)==SQLITE_ROW ) w->iOvflNext = sqlite3_column_int64(pMax, 0);
    rc = sqlite3_finalize(pMax);
    if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
    if( w->iOvflNext<1 ) w->iOvflNext = 1;
  }
  o->iFirst = w->iOvflNext;
  o->nRec = nRec;
  o->nPiece = 0;
  o->sum = gpudsChunkSum(0, aRec, nRec, 0, 0);
  while( off<nRec ){
    uint32_t n = (int64_t)(nRec-off) > nMax ? (uint32_t)nMax : nRec-off;
    rc = sqlite3_bind_int64(w->pOvflIns, 1, w->iOvflNext);
    if( rc==SQLITE_OK ) rc = sqlite3_bind_blob64(w->pOvflIns, 2, aRec+off, n, SQLITE_STATIC);
    if( rc ) return gpudsVtabError(p, rc, "%s_ovfl: %s", p->zName, sqlite3_errstr(rc));
    sqlite3_step(w->pOvflIns);
    rc = sqlite3_reset(w->pOvflIns);
    sqlite3_clear_bindings(w->pOvflIns);
    if( rc ) return gpudsVtabError(p, rc, "%s", sqlite3_errmsg(p->db));
    w->iOvflNext++;
    o->nPiece++;
    off += n;
  }
  return SQLITE_OK;
}

/* Append (key, entry bytes or NULL = tombstone); keys must ascend.  The
** bytes are a record in this table's format, as a merge of its runs gives
** them (gpudsRunMerge).  A record too big for a chunk alone is spilled
** (from format 3). */
int gpudsRunWriterAdd(GpudsTable *p, RunWriter *w, int64_t k,
                     const unsigned char *aRec, uint32_t nRec){
  if( aRec && w->bOvfl && KEY_MAX(w) + entryHdr(w, nRec, 0) + (int64_t)nRec > w->nLimit ){
    GpudsOvfl o = {0, 0, 0, 0};
    int rc = writerSpill(p, w, aRec, nRec, &o);
    if( rc==SQLITE_OK ) rc = gpudsRunWriterAddOvfl(p, w, k, &o);
    return rc;
  }
  return writerEntry(p, w, k, aRec ? nRec : SHADOW_TOMB, aRec, aRec ? nRec : 0);
}

/* Append (key, row record or NULL = tombstone); keys must ascend.  In
** format 4 the row's record is written as the row holds it; in formats 1
** to 3 it is laid out as the builds of those formats did (row.c). */
int gpudsRunWriterAddRow(GpudsTable *p, RunWriter *w, int64_t k, const GpudsRow *pRow){
  uint32_t nRec;
  if( pRow==0 ) return gpudsRunWriterAdd(p, w, k, 0, 0);
  if( w->bEnc ){                            /* the row holds its record */
    const unsigned char *aRec = gpudsRowRecord(pRow, &nRec);
    return gpudsRunWriterAdd(p, w, k, aRec, nRec);
  }
  nRec = (uint32_t)gpudsRowLegacyBytes(pRow);
  if( nRec>w->nRecAlloc ){
    unsigned char *a = sqlite3_realloc64(w->aRec, nRec);
    if( a==0 ) return SQLITE_NOMEM;
    w->aRec = a;
    w->nRecAlloc = nRec;
  }
  gpudsRowLegacyWrite(pRow, w->aRec);
  return gpudsRunWriterAdd(p, w, k, w->aRec, nRec);
}

void gpudsRunWriterClose(RunWriter *w){
  sqlite3_finalize(w->pIns);
  sqlite3_finalize(w->pOvflIns);
  sqlite3_free(w->aKey);
  free(w->aVal);
  sqlite3_free(w->aKeyEnc);
  sqlite3_free(w->aRec);
  memset(w, 0, sizeof(*w));
}
