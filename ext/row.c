/*
** row.c -- row records: the non-key columns of one row, kept on the host
** with SQLite's dynamic types preserved (NULL, integer, real, text, blob).
**
** Layout of a record, all in one allocation:
**   u32 nCol | nCol x { u8 type; u32 offset; u32 length } | payload bytes
** so that xColumn reaches any column in O(1).  Integers and reals are stored
** as 8 bytes; text and blob as their bytes (text without its terminator).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "schema.h"
#include "varint.h"
#include <string.h>
#include <stdlib.h>

struct GpudsRow {
  uint32_t nCol;
  uint32_t nByte;           /* size of the whole record */
};

#define CELL_TERM 0x80      /* eType flag: text followed by a NUL, none inside */

typedef struct RowCell {
  uint8_t eType;            /* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL,
                            ** text maybe | CELL_TERM */
  uint32_t iOff;            /* payload offset from the start of the record */
  uint32_t nLen;            /* payload bytes */
} RowCell;

/* Cell i of record p. */
static RowCell *rowCell(const GpudsRow *p, int i){
  return (RowCell*)((char*)p + sizeof(GpudsRow)) + i;
}

/* One value after column affinity: its storage class and payload. */
typedef struct AffVal {
  int eType;
  sqlite3_int64 i;
  double r;
  const void *z;            /* text or blob bytes */
  int n;
  sqlite3_value *pDup;      /* owned copy used for a text->number conversion */
} AffVal;

/* The integer a real converts to under SQLite's integer affinity
** (sqlite3VdbeIntegerAffinity: used for an INTEGER PRIMARY KEY and when a
** real is stored into an INTEGER or NUMERIC column): 1 and *pi if r equals
** an integer exactly and that integer is neither INT64_MIN nor INT64_MAX,
** else 0 (NaN and out-of-range included). */
int gpudsRealToInt(double r, sqlite3_int64 *pi){
  sqlite3_int64 ix;
  if( !(r > -9223372036854775808.0 && r < 9223372036854775808.0) ) return 0;
  ix = (sqlite3_int64)r;
  if( (double)ix!=r || ix==INT64_MAX ) return 0;
  *pi = ix;
  return 1;
}

/* Apply affinity cAff to v the way SQLite does when storing into an
** ordinary table column of that affinity. */
static void applyAffinity(sqlite3_value *v, char cAff, AffVal *a){
  memset(a, 0, sizeof(*a));
  a->eType = sqlite3_value_type(v);
  if( cAff==GPUDS_AFF_TEXT ){
    if( a->eType==SQLITE_INTEGER || a->eType==SQLITE_FLOAT ) a->eType = SQLITE_TEXT;
  }else if( cAff==GPUDS_AFF_REAL || cAff==GPUDS_AFF_NUMERIC
         || cAff==GPUDS_AFF_INTEGER ){
    if( a->eType==SQLITE_TEXT ){
      a->pDup = sqlite3_value_dup(v);
      if( a->pDup ){
        int t = sqlite3_value_numeric_type(a->pDup);
        if( t==SQLITE_INTEGER || t==SQLITE_FLOAT ){ v = a->pDup; a->eType = t; }
      }
    }
    if( cAff==GPUDS_AFF_REAL ){
      if( a->eType==SQLITE_INTEGER ){
        a->eType = SQLITE_FLOAT;
        a->r = (double)sqlite3_value_int64(v);
        return;
      }
      if( a->eType==SQLITE_FLOAT && sqlite3_value_double(v)==0.0 ){
        /* An ordinary table stores an integral real of a REAL column as an
        ** integer, so -0.0 reads back as 0.0. */
        a->r = 0.0;
        return;
      }
    }else if( a->eType==SQLITE_FLOAT ){
      sqlite3_int64 i;
      if( gpudsRealToInt(sqlite3_value_double(v), &i) ){
        a->eType = SQLITE_INTEGER; a->i = i; return;
      }
    }
  }
  switch( a->eType ){
    case SQLITE_INTEGER: a->i = sqlite3_value_int64(v); break;
    case SQLITE_FLOAT:   a->r = sqlite3_value_double(v); break;
    case SQLITE_TEXT:    a->z = sqlite3_value_text(v); a->n = sqlite3_value_bytes(v); break;
    case SQLITE_BLOB:    a->z = sqlite3_value_blob(v); a->n = sqlite3_value_bytes(v); break;
  }
}

static char *loaderAlloc(GpudsLoader *L, size_t nByte);

/* The handle of a new record holding the values apVal[0..nCol-1] after the
** column affinities aAff[0..nCol-1], allocated from arena L (or by malloc()
** if L is NULL); 0 if out of memory.  Values are copied. */
uint64_t gpudsRowNew(GpudsLoader *L, int nCol, sqlite3_value **apVal, const char *aAff){
  size_t nByte = sizeof(GpudsRow) + (size_t)nCol*sizeof(RowCell);
  AffVal aStatic[16], *aV = aStatic;
  GpudsRow *p = 0;
  uint64_t h = 0;
  char *z;
  int i;
  if( nCol>16 ){
    aV = sqlite3_malloc64(nCol*sizeof(AffVal));
    if( aV==0 ) return 0;
  }
  for(i=0; i<nCol; i++){
    applyAffinity(apVal[i], aAff[i], &aV[i]);
    switch( aV[i].eType ){
      case SQLITE_INTEGER: case SQLITE_FLOAT: nByte += 8; break;
      case SQLITE_TEXT: nByte += (size_t)aV[i].n + 1; break;   /* + NUL */
      case SQLITE_BLOB: nByte += (size_t)aV[i].n; break;
    }
  }
  /* Rows use malloc() directly (or the arena): freed by gpudsRowFreeHandle(). */
  if( nByte<=0x7fffffff ){
    if( L && (p = (GpudsRow*)loaderAlloc(L, nByte))!=0 ){
      h = (uint64_t)(uintptr_t)p | 1;
    }else if( (p = (GpudsRow*)malloc(nByte))!=0 ){
      h = (uint64_t)(uintptr_t)p;
    }
  }
  if( p ){
    p->nCol = (uint32_t)nCol;
    p->nByte = (uint32_t)nByte;
    z = (char*)rowCell(p, nCol);
    memset(rowCell(p, 0), 0, (size_t)nCol*sizeof(RowCell));  /* no stray padding bytes */
    for(i=0; i<nCol; i++){
      RowCell *c = rowCell(p, i);
      c->eType = (uint8_t)aV[i].eType;
      c->iOff = (uint32_t)(z - (char*)p);
      c->nLen = 0;
      switch( c->eType ){
        case SQLITE_INTEGER: memcpy(z, &aV[i].i, 8); c->nLen = 8; break;
        case SQLITE_FLOAT:   memcpy(z, &aV[i].r, 8); c->nLen = 8; break;
        case SQLITE_TEXT:
          c->nLen = (uint32_t)aV[i].n;
          if( c->nLen ) memcpy(z, aV[i].z, c->nLen);
          z[c->nLen] = 0;
          if( c->nLen==0 || memchr(z, 0, c->nLen)==0 ) c->eType |= CELL_TERM;
          z++;
          break;
        case SQLITE_BLOB:
          c->nLen = (uint32_t)aV[i].n;
          if( c->nLen ) memcpy(z, aV[i].z, c->nLen);
          break;
      }
      z += c->nLen;
    }
  }
  for(i=0; i<nCol; i++) sqlite3_value_free(aV[i].pDup);
  if( aV!=aStatic ) sqlite3_free(aV);
  return h;
}

/* True if bytes a[0..n-1] are a valid record of nCol columns: header,
** every cell's type, length and bounds.  Reads the bytes where they are
** (they need not be aligned). */
static int rowValid(const unsigned char *a, uint32_t n, int nCol){
  GpudsRow hdr;
  uint32_t i;
  size_t nHdr = sizeof(GpudsRow) + (size_t)nCol*sizeof(RowCell);
  if( a==0 || n<nHdr ) return 0;
  memcpy(&hdr, a, sizeof(hdr));
  if( hdr.nCol!=(uint32_t)nCol || hdr.nByte!=n ) return 0;
  for(i=0; i<hdr.nCol; i++){
    RowCell c;
    int bOk;
    memcpy(&c, a + sizeof(GpudsRow) + i*sizeof(RowCell), sizeof(c));
    bOk = c.iOff>=nHdr && (uint64_t)c.iOff + c.nLen <= n;
    switch( c.eType ){
      case SQLITE_INTEGER: case SQLITE_FLOAT: bOk = bOk && c.nLen==8; break;
      case SQLITE_NULL:                       bOk = bOk && c.nLen==0; break;
      case SQLITE_TEXT: case SQLITE_BLOB:     break;
      case SQLITE_TEXT|CELL_TERM:
        bOk = bOk && (uint64_t)c.iOff + c.nLen < n
                  && a[c.iOff + c.nLen]==0
                  && memchr(a + c.iOff, 0, c.nLen)==0;
        break;
      default:                                bOk = 0; break;
    }
    if( !bOk ) return 0;
  }
  return 1;
}

/* A copy of the record in bytes a[0..n-1] (as written by a shadow table),
** or NULL if they are not a valid record of nCol columns. */
GpudsRow *gpudsRowFromBytes(const unsigned char *a, uint32_t n, int nCol){
  GpudsRow *p;
  if( !rowValid(a, n, nCol) ) return 0;
  p = (GpudsRow*)malloc(n);
  if( p ) memcpy(p, a, n);
  return p;
}

/* ------------------------------------------------------------- handles
** A row handle (the 64-bit word a store keeps for a key) is the record's
** address; bit 0 set means the record lives in a load arena: a 2 MiB block,
** aligned to its size, holding the rows of one reload back to back with a
** count of live rows in its first bytes, freed when the count drops to 0.
** Reloading a big table then costs a bump of a pointer per row instead of a
** malloc(), and closing it a decrement instead of a free().
**
** A reload may also copy a whole span of a shadow chunk (length-prefixed
** records, shadow.c) into an arena with one memcpy and hand out handles to
** the records where they landed (gpudsLoaderSpan): no copy per row. */
#define ARENA_SIZE  ((size_t)2<<20)
#define ARENA_HDR   16              /* int64 live count, padded to 16 */

/* The record of handle h. */
GpudsRow *gpudsRowOf(uint64_t h){
  return (GpudsRow*)(uintptr_t)(h & ~(uint64_t)1);
}

/* Start loading the records of handles aRow[0..n) into the CPU's caches
** (the first two cache lines of each: the header and a short row's values),
** so that the misses of rows a cursor is about to return overlap instead of
** following one another.  Reads nothing, changes nothing. */
void gpudsRowPrefetch(const uint64_t *aRow, size_t n){
#if defined(__GNUC__)
  size_t i;
  for(i=0; i<n; i++){
    const char *z = (const char*)gpudsRowOf(aRow[i]);
    __builtin_prefetch(z);
    __builtin_prefetch(z+64);
  }
#else
  (void)aRow; (void)n;
#endif
}

/* Drop one reference to arena block pBlock; free it at the last. */
static void arenaRelease(char *pBlock){
  int64_t *pnLive = (int64_t*)pBlock;
  if( --*pnLive==0 ) free(pBlock);
}

/* Free the record of handle h (0 is a no-op). */
void gpudsRowFreeHandle(uint64_t h){
  if( h & 1 ){
    arenaRelease((char*)((uintptr_t)(h & ~(uint64_t)1) & ~(uintptr_t)(ARENA_SIZE-1)));
  }else if( h ){
    free((void*)(uintptr_t)h);
  }
}

/* Start a load arena. */
void gpudsLoaderInit(GpudsLoader *L){
  memset(L, 0, sizeof(*L));
}

/* Start a load arena that holds a reference to its current block, so that
** rows of the load may be freed while it goes on (a reload frees the rows
** that newer runs override); gpudsLoaderEnd() drops the reference. */
void gpudsLoaderBegin(GpudsLoader *L){
  memset(L, 0, sizeof(*L));
  L->bHold = 1;
}

/* Finish a loader started by gpudsLoaderBegin() (or gpudsLoaderInit()). */
void gpudsLoaderEnd(GpudsLoader *L){
  if( L->bHold && L->pBlock ) arenaRelease(L->pBlock);
  gpudsBlocksFree(&L->spare);
  memset(L, 0, sizeof(*L));
}

/* Push block pBlock onto list pList (its first word links the list). */
static void blocksPush(GpudsBlocks *pList, void *pBlock){
  *(void**)pBlock = pList->pHead;
  pList->pHead = pBlock;
  pList->n++;
}

/* Pop a block off list pList, or NULL if it is empty. */
static void *blocksPop(GpudsBlocks *pList){
  void *pBlock = pList->pHead;
  if( pBlock ){
    pList->pHead = *(void**)pBlock;
    pList->n--;
  }
  return pBlock;
}

/* Add one fresh arena block to list pList: 1, or 0 if out of memory. */
int gpudsBlocksAdd(GpudsBlocks *pList){
  void *pNew = 0;
  if( posix_memalign(&pNew, ARENA_SIZE, ARENA_SIZE) ) return 0;
  blocksPush(pList, pNew);
  return 1;
}

/* Free every block of list pList, which is left empty. */
void gpudsBlocksFree(GpudsBlocks *pList){
  void *pBlock;
  while( (pBlock = blocksPop(pList))!=0 ) free(pBlock);
}

/* Give loader L (started by gpudsLoaderBegin) the blocks of pList (left
** empty) to use before it allocates any, so that a thread can use memory
** that another thread took (a thread's malloc() gets fresh pages from its
** own arena, while the thread that freed memory reuses it);
** gpudsLoaderEnd() frees those not used. */
void gpudsLoaderGive(GpudsLoader *L, GpudsBlocks *pList){
  void *pBlock;
  while( (pBlock = blocksPop(pList))!=0 ) blocksPush(&L->spare, pBlock);
}

/* Take loader L's spare blocks, those it has not used, onto list pList. */
void gpudsLoaderTakeBack(GpudsLoader *L, GpudsBlocks *pList){
  void *pBlock;
  while( (pBlock = blocksPop(&L->spare))!=0 ) blocksPush(pList, pBlock);
}

/* Move loader L to a fresh block.  0 if out of memory (L unchanged). */
static int loaderNewBlock(GpudsLoader *L){
  void *pNew = blocksPop(&L->spare);
  if( pNew==0 && posix_memalign(&pNew, ARENA_SIZE, ARENA_SIZE) ) return 0;
  if( L->bHold && L->pBlock ) arenaRelease(L->pBlock);
  L->pBlock = (char*)pNew;
  *(int64_t*)L->pBlock = L->bHold ? 1 : 0;
  L->iOff = ARENA_HDR;
  return 1;
}

/* nByte bytes (8-byte aligned) for one row in loader L's arena, counted in
** its block; NULL if out of memory or if the row is too big for an arena
** (the caller then uses malloc()). */
static char *loaderAlloc(GpudsLoader *L, size_t nByte){
  size_t nAl = (nByte + 7) & ~(size_t)7;
  char *z;
  if( nAl > ARENA_SIZE/4 ) return 0;
  if( L->pBlock==0 || L->iOff + nAl > ARENA_SIZE ){
    if( !loaderNewBlock(L) ) return 0;
  }
  z = L->pBlock + L->iOff;
  L->iOff += nAl;
  (*(int64_t*)L->pBlock)++;
  return z;
}

/* A handle to a copy of the n record bytes a[] in loader L's arena (or its
** own malloc() if too big for one); 0 if out of memory. */
static uint64_t loaderCopy(GpudsLoader *L, const unsigned char *a, uint32_t n){
  char *z = loaderAlloc(L, n);
  if( z ){
    memcpy(z, a, n);
    return (uint64_t)(uintptr_t)z | 1;
  }else{                                     /* big, or no arena memory */
    GpudsRow *pBig = (GpudsRow*)malloc(n);
    if( pBig ) memcpy(pBig, a, n);
    return (uint64_t)(uintptr_t)pBig;
  }
}

/* A handle to a copy of record bytes a[0..n-1] of a table of nCol non-key
** columns, allocated from loader L; 0 if out of memory or if the bytes are
** not a valid record. */
uint64_t gpudsLoaderRow(GpudsLoader *L, const unsigned char *a, uint32_t n, int nCol){
  if( !rowValid(a, n, nCol) ) return 0;
  return loaderCopy(L, a, n);
}

/* A handle to a copy, allocated from loader L, of the record of handle h:
** a record this extension built, so not checked again.  0 if out of
** memory. */
uint64_t gpudsLoaderCopy(GpudsLoader *L, uint64_t h){
  const GpudsRow *pRow = gpudsRowOf(h);
  return loaderCopy(L, (const unsigned char*)pRow, pRow->nByte);
}

/* Bytes of SQLite's varint encoding of v (sqlite3VarintLen). */
static int varintLen(uint64_t v){
  int n = 1;
  while( (v >>= 7)!=0 && n<9 ) n++;
  return n;
}

/* Payload bytes of integer v in an ordinary record (sqlite3VdbeSerialType,
** file format 4: 0 and 1 take none). */
static int plainIntBytes(int64_t v){
  uint64_t u = v<0 ? ~(uint64_t)v : (uint64_t)v;
  if( v==0 || v==1 ) return 0;
  if( u<=127 ) return 1;
  if( u<=32767 ) return 2;
  if( u<=8388607 ) return 3;
  if( u<=2147483647 ) return 4;
  if( u<=0x7fffffffffffULL ) return 6;
  return 8;
}

/* The bytes an ordinary rowid table with the same declarations would give
** this row's record: the key (an INTEGER PRIMARY KEY) as NULL, then each
** column as OP_MakeRecord (vdbe.c) encodes it, header included; a REAL
** column's integral value is stored as an integer there.  That is what an
** ordinary table compares with SQLITE_LIMIT_LENGTH ("string or blob too
** big").  Text is counted in UTF-8. */
int64_t gpudsRowPlainBytes(const GpudsRow *p, const char *aAff){
  int64_t nHdr = 1, nData = 0;
  uint32_t i;
  for(i=0; i<p->nCol; i++){
    const RowCell *c = rowCell(p, (int)i);
    const char *z = (const char*)p + c->iOff;
    uint64_t eSerial = 0;
    int nPay = 0;
    switch( c->eType & ~CELL_TERM ){
      case SQLITE_INTEGER: {
        int64_t x; memcpy(&x, z, 8);
        nPay = plainIntBytes(x);
        break;
      }
      case SQLITE_FLOAT: {
        double r; sqlite3_int64 x;
        memcpy(&r, z, 8);
        nPay = (aAff[i]==GPUDS_AFF_REAL && gpudsRealToInt(r, &x)) ? plainIntBytes(x) : 8;
        break;
      }
      case SQLITE_TEXT: eSerial = (uint64_t)c->nLen*2 + 13; nData += c->nLen; break;
      case SQLITE_BLOB: eSerial = (uint64_t)c->nLen*2 + 12; nData += c->nLen; break;
    }
    nData += nPay;
    nHdr += varintLen(eSerial);
  }
  if( nHdr<=126 ){
    nHdr += 1;
  }else{
    int nVar = varintLen((uint64_t)nHdr);
    nHdr += nVar;
    if( nVar<varintLen((uint64_t)nHdr) ) nHdr++;
  }
  return nHdr + nData;
}

/* Bytes of a record of nCol columns before its payload. */
size_t gpudsRowHdrBytes(int nCol){
  return sizeof(GpudsRow) + (size_t)nCol*sizeof(RowCell);
}

/* Column i of record p: its storage class (SQLITE_INTEGER, _FLOAT, _TEXT,
** _BLOB or _NULL), its payload at *pz and the payload's bytes at *pn (8
** for numbers, the length of text without its NUL). */
int gpudsRowCell(const GpudsRow *p, int i, const unsigned char **pz, uint32_t *pn){
  const RowCell *c = rowCell(p, i);
  *pz = (const unsigned char*)p + c->iOff;
  *pn = c->nLen;
  return c->eType & ~CELL_TERM;
}

/* The signed big-endian integer of n bytes at b. */
static int64_t beInt(const unsigned char *b, int n){
  uint64_t v = (b[0] & 0x80) ? ~(uint64_t)0 : 0;
  int i;
  for(i=0; i<n; i++) v = (v<<8) | b[i];
  return (int64_t)v;
}

/* The handle of the record a[0..n-1] of the storage format 4 (runfmt.h:
** nCol serial types in nHdr bytes, then the columns' bytes), which
** gpudsRecCheck() (runfmt.c, the one place that validates it) found valid
** and gave nByte, the size of the record this builds: the same bytes
** gpudsRowNew() gives the same values.  Allocated from loader L, or by
** malloc() if L is NULL or the record too big for an arena; 0 if out of
** memory.  Calls no SQLite routine: the loader's worker threads use it. */
uint64_t gpudsRowDecode(GpudsLoader *L, const unsigned char *a, uint32_t nHdr,
                        int nCol, size_t nByte){
  GpudsRow *p = 0;
  uint64_t h = 0;
  const unsigned char *aHdr = a, *b = a + nHdr;
  char *z;
  int i;
  if( L && (p = (GpudsRow*)loaderAlloc(L, nByte))!=0 ){
    h = (uint64_t)(uintptr_t)p | 1;
  }else if( (p = (GpudsRow*)malloc(nByte))!=0 ){
    h = (uint64_t)(uintptr_t)p;
  }else{
    return 0;
  }
  p->nCol = (uint32_t)nCol;
  p->nByte = (uint32_t)nByte;
  memset(rowCell(p, 0), 0, (size_t)nCol*sizeof(RowCell));
  z = (char*)rowCell(p, nCol);
  for(i=0; i<nCol; i++){
    RowCell *c = rowCell(p, i);
    uint64_t s = 0;
    int64_t x;
    if( aHdr[0]<0x80 ){ s = *aHdr++; }
    else{ aHdr += gpudsVarintGet(aHdr, (size_t)(a + nHdr - aHdr), &s); }
    c->iOff = (uint32_t)(z - (char*)p);
    switch( s ){
      case 0: c->eType = SQLITE_NULL; break;
      case 1: case 2: case 3: case 4: case 5: case 6: {
        int nb = (int)gpudsSerialBytes(s);
        x = beInt(b, nb);
        b += nb;
        c->eType = SQLITE_INTEGER; c->nLen = 8;
        memcpy(z, &x, 8); z += 8;
        break;
      }
      case 7: {
        uint64_t u = 0;
        int j;
        for(j=0; j<8; j++) u = (u<<8) | b[j];
        b += 8;
        c->eType = SQLITE_FLOAT; c->nLen = 8;
        memcpy(z, &u, 8); z += 8;
        break;
      }
      case 8: case 9:
        x = (int64_t)s - 8;
        c->eType = SQLITE_INTEGER; c->nLen = 8;
        memcpy(z, &x, 8); z += 8;
        break;
      default: {
        uint32_t nLen = (uint32_t)((s-12)/2);
        c->nLen = nLen;
        if( nLen ) memcpy(z, b, nLen);
        b += nLen;
        if( s & 1 ){
          c->eType = SQLITE_TEXT;
          z[nLen] = 0;
          if( nLen==0 || memchr(z, 0, nLen)==0 ) c->eType |= CELL_TERM;
          z += nLen + 1;
        }else{
          c->eType = SQLITE_BLOB;
          z += nLen;
        }
        break;
      }
    }
  }
  return h;
}

/* True if bytes a[0..n-1] are a valid record of nCol non-key columns. */
int gpudsRowValid(const unsigned char *a, uint32_t n, int nCol){
  return rowValid(a, n, nCol);
}

/* The most bytes one gpudsLoaderSpan() call copies. */
size_t gpudsLoaderSpanMax(void){
  return ARENA_SIZE - ARENA_HDR - 8;
}

/* The most bytes gpudsLoaderSpan() can copy into L's current block (0 if
** it has none): a span that fits there uses no new block. */
size_t gpudsLoaderRoom(const GpudsLoader *L){
  size_t iAt;
  if( L->pBlock==0 ) return 0;
  iAt = (L->iOff & ~(size_t)7) + 4;
  if( iAt < L->iOff ) iAt += 8;
  return iAt < ARENA_SIZE ? ARENA_SIZE - iAt : 0;
}

/* Copy the nByte bytes a[] (at most gpudsLoaderSpanMax()) into loader L's
** arena at an address z that is 4 more than a multiple of 8, and count nLive
** rows in its block: the caller turns exactly nLive valid, 4-byte aligned
** records inside the copy into handles with gpudsLoaderHandle(), each to be
** freed once.  Returns z, or NULL if out of memory (nothing counted). */
unsigned char *gpudsLoaderSpan(GpudsLoader *L, const unsigned char *a, size_t nByte,
                               int64_t nLive){
  size_t iAt;
  if( nByte > gpudsLoaderSpanMax() ) return 0;
  iAt = (L->iOff & ~(size_t)7) + 4;
  if( iAt < L->iOff ) iAt += 8;
  if( L->pBlock==0 || iAt + nByte > ARENA_SIZE ){
    if( !loaderNewBlock(L) ) return 0;
    iAt = ARENA_HDR + 4;
  }
  memcpy(L->pBlock + iAt, a, nByte);
  L->iOff = (iAt + nByte + 7) & ~(size_t)7;
  *(int64_t*)L->pBlock += nLive;
  return (unsigned char*)L->pBlock + iAt;
}

/* The handle of the record at z, inside a span that counted it. */
uint64_t gpudsLoaderHandle(const unsigned char *z){
  return (uint64_t)(uintptr_t)z | 1;
}

/* Bytes held by a record. */
size_t gpudsRowBytes(const GpudsRow *p){
  return p ? p->nByte : 0;
}

/* Set the result of ctx to column iCol (0-based, non-key) of record p. */
void gpudsRowResult(const GpudsRow *p, int iCol, sqlite3_context *ctx){
  const RowCell *c;
  const char *z;
  if( p==0 || iCol<0 || (uint32_t)iCol>=p->nCol ){
    sqlite3_result_null(ctx);
    return;
  }
  c = rowCell(p, iCol);
  z = (const char*)p + c->iOff;
  switch( c->eType ){
    case SQLITE_INTEGER: {
      sqlite3_int64 x; memcpy(&x, z, 8);
      sqlite3_result_int64(ctx, x); break;
    }
    case SQLITE_FLOAT: {
      double x; memcpy(&x, z, 8);
      sqlite3_result_double(ctx, x); break;
    }
    case SQLITE_TEXT|CELL_TERM:
      /* NUL-terminated: SQLite copies it once and need not add a NUL */
      sqlite3_result_text(ctx, z, -1, SQLITE_TRANSIENT); break;
    case SQLITE_TEXT:
      sqlite3_result_text(ctx, z, (int)c->nLen, SQLITE_TRANSIENT); break;
    case SQLITE_BLOB:
      sqlite3_result_blob(ctx, z, (int)c->nLen, SQLITE_TRANSIENT); break;
    default:
      sqlite3_result_null(ctx); break;
  }
}

/* Column iCol (0-based, non-key) of record p as a column set holds it
** (gpuds_colval.h): its tag and 8 bytes.  A missing record or column is
** NULL. */
void gpudsRowColVal(const GpudsRow *p, int iCol, uint8_t *pTag, uint64_t *pVal){
  const RowCell *c;
  const unsigned char *z;
  *pTag = GPUDS_TAG_NULL; *pVal = 0;
  if( p==0 || iCol<0 || (uint32_t)iCol>=p->nCol ) return;
  c = rowCell(p, iCol);
  z = (const unsigned char*)p + c->iOff;
  switch( c->eType & ~CELL_TERM ){
    case SQLITE_INTEGER: *pTag = GPUDS_TAG_INT; memcpy(pVal, z, 8); break;
    case SQLITE_FLOAT:   *pTag = GPUDS_TAG_REAL; memcpy(pVal, z, 8); break;
    case SQLITE_TEXT:    *pTag = GPUDS_TAG_TEXT; *pVal = gpudsColBytes(z, c->nLen); break;
    case SQLITE_BLOB:    *pTag = GPUDS_TAG_BLOB; *pVal = gpudsColBytes(z, c->nLen); break;
  }
}

/* Compare two text or two blob values by BINARY collation. */
static int bytesCmp(const unsigned char *a, uint32_t na, const unsigned char *b, uint32_t nb){
  int r = memcmp(a, b, na<nb ? na : nb);
  if( r ) return r<0 ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  return na<nb ? GPUDS_ORD_LT : na>nb ? GPUDS_ORD_GT : GPUDS_ORD_EQ;
}

/* Column iCol of record p against value v exactly, as SQLite compares two
** values with BINARY collation (no affinity applied): GPUDS_ORD_LT, _EQ or
** _GT.  A NULL orders first. */
int gpudsRowColCmp(const GpudsRow *p, int iCol, const GpudsValue *v){
  uint8_t tag;
  uint64_t val;
  int ca, cb;
  gpudsRowColVal(p, iCol, &tag, &val);
  ca = gpudsColClass(tag); cb = gpudsColClass(v->tag);
  if( ca!=cb ) return ca<cb ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  if( ca==0 ) return GPUDS_ORD_EQ;
  if( ca==1 ) return gpudsColCompare(tag, val, v->tag, v->val);
  {
    const RowCell *c = rowCell(p, iCol);
    return bytesCmp((const unsigned char*)p + c->iOff, c->nLen, v->z, v->n);
  }
}

/* Column iCol of records a and b compared exactly (NULL first, numbers,
** text and blobs by BINARY collation): < 0, 0, > 0. */
int gpudsRowColCmpRows(const GpudsRow *a, const GpudsRow *b, int iCol){
  GpudsValue v;
  gpudsRowColValue(b, iCol, &v);
  return gpudsRowColCmp(a, iCol, &v);
}

/* Column iCol of record p as a GpudsValue (text and blobs point into the
** record). */
void gpudsRowColValue(const GpudsRow *p, int iCol, GpudsValue *v){
  gpudsRowColVal(p, iCol, &v->tag, &v->val);
  v->z = 0; v->n = 0;
  if( v->tag==GPUDS_TAG_TEXT || v->tag==GPUDS_TAG_BLOB ){
    const RowCell *c = rowCell(p, iCol);
    v->z = (const unsigned char*)p + c->iOff;
    v->n = c->nLen;
  }
}
