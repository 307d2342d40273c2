/*
** row.c -- row records: the non-key columns of one row, kept on the host
** with SQLite's dynamic types preserved (NULL, integer, real, text, blob).
**
** A record is the format-4 record of the run format (runfmt.h: one SQLite
** serial type per column, then each column's body, integers in the fewest
** bytes) behind two varints, all in one allocation:
**   varint R | varint H | R bytes of record, of which the first H are the
**   serial types
** so that a row takes about what it takes in the database file, a load
** copies an encoded record as it is and a commit writes it as it is.  A
** column is reached by walking the serial types before it (one byte each
** for numbers and short text); gpudsRowResult() takes a position that a
** cursor keeps, so that reading a row's columns in order walks them once.
** Records are 2-byte aligned (bit 0 of a handle is free, see below) and
** read byte by byte.
**
** Tables of formats 1 to 3 stored the records of earlier builds (the
** "legacy" layout: u32 nCol, u32 bytes, nCol cells of {u8 type, 3 bytes of
** padding, u32 offset, u32 length}, then payload, numbers as 8 bytes, text
** with a NUL); a load converts them (gpudsLoaderRow, gpudsRowFromLegacy)
** and a commit to such a table writes them (gpudsRowLegacyWrite).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "schema.h"
#include "varint.h"
#include "gpuds_hugemap.h"
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <pthread.h>
#include <unistd.h>
#ifdef __GLIBC__
# include <malloc.h>              /* malloc_trim */
#endif

/* The bytes of a record: its two varints, then the record.  An incomplete
** type: a row is only ever handled through a pointer. */
struct GpudsRow {
  unsigned char a[1];
};

/* The most bytes of a record before its format-4 record (two varints of
** values below 2^31). */
#define ROW_PREFIX_MAX 10

/* One column's value: its storage class and payload. */
typedef struct RowVal {
  int eType;                /* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL */
  sqlite3_int64 i;
  double r;
  const unsigned char *z;   /* text or blob bytes */
  uint32_t n;
} RowVal;

/* Forced inline: the steps of the cursor's column reads (gpudsRowResult),
** one function for the compiler to schedule. */
#if defined(__GNUC__)
# define ROW_INLINE static inline __attribute__((always_inline))
#else
# define ROW_INLINE static inline
#endif

/* The format-4 record of p: its first byte, *pnRec its bytes and *pnHdr
** those of its serial types. */
ROW_INLINE const unsigned char *rowRec(const GpudsRow *p, uint32_t *pnRec, uint32_t *pnHdr){
  const unsigned char *a = p->a;
  uint64_t v;
  if( a[0]<0x80 && a[1]<0x80 ){            /* a record under 128 bytes */
    *pnRec = a[0]; *pnHdr = a[1];
    return a+2;
  }
  a += gpudsVarintGet(a, 9, &v); *pnRec = (uint32_t)v;
  a += gpudsVarintGet(a, 9, &v); *pnHdr = (uint32_t)v;
  return a;
}

/* The 8 big-endian bytes at b. */
static uint64_t be64(const unsigned char *b){
  uint64_t u;
  memcpy(&u, b, 8);
#if defined(__GNUC__) && __BYTE_ORDER__==__ORDER_LITTLE_ENDIAN__
  return __builtin_bswap64(u);
#else
  {
    int i;
    u = 0;
    for(i=0; i<8; i++) u = (u<<8) | b[i];
    return u;
  }
#endif
}

/* The signed big-endian integer of n (1 to 8) bytes at b. */
static int64_t beInt(const unsigned char *b, int n){
  uint64_t v = (b[0] & 0x80) ? ~(uint64_t)0 : 0;
  int i;
  if( n==1 ) return (int8_t)b[0];
  if( n==2 ) return (int16_t)(((uint16_t)b[0]<<8) | b[1]);
  if( n==8 ) return (int64_t)be64(b);
  for(i=0; i<n; i++) v = (v<<8) | b[i];
  return (int64_t)v;
}

/* The value of serial type s whose body is at b (valid: checked when the
** record was built or loaded). */
ROW_INLINE void serialVal(uint64_t s, const unsigned char *b, RowVal *v){
  v->z = 0; v->n = 0;
  switch( s ){
    case 0: v->eType = SQLITE_NULL; break;
    case 1: case 2: case 3: case 4: case 5: case 6:
      v->eType = SQLITE_INTEGER; v->i = beInt(b, (int)gpudsSerialBytes(s)); break;
    case 7: {
      uint64_t u = be64(b);
      v->eType = SQLITE_FLOAT; memcpy(&v->r, &u, 8);
      break;
    }
    case 8: case 9: v->eType = SQLITE_INTEGER; v->i = (int64_t)s - 8; break;
    default:
      v->eType = (s & 1) ? SQLITE_TEXT : SQLITE_BLOB;
      v->z = b; v->n = (uint32_t)((s-12)/2);
      break;
  }
}

/* Where a walk through a record's columns stands: the serial type and body
** offsets (in the record) of column iCol.  A cursor keeps one per row so
** that reading the columns in order walks the serial types once. */
ROW_INLINE void posStart(const GpudsRow *p, GpudsRowPos *pos){
  uint32_t nRec, nHdr;
  const unsigned char *a = rowRec(p, &nRec, &nHdr);
  pos->pRow = p;
  pos->iCol = 0;
  pos->iHdr = 0;
  pos->iBody = nHdr;
  pos->pRec = a;
  pos->nHdr = nHdr;
}

/* Column iCol of record p into *v, walking from *pos if it is a position in
** p at or before iCol (else from the start); *pos is left at iCol.  A
** column past the record's is NULL.  The walk keeps its offsets in locals
** and stores them once: a record is read through byte pointers, which the
** compiler must assume alias *pos. */
ROW_INLINE void rowColPos(const GpudsRow *p, int iCol, RowVal *v, GpudsRowPos *pos){
  const unsigned char *a;
  uint32_t iHdr, iBody, nHdr;
  int k;
  uint64_t s = 0;
  if( pos->pRow!=p || pos->iCol>iCol || iCol<0 ) posStart(p, pos);
  if( iCol<0 ){ v->eType = SQLITE_NULL; v->z = 0; v->n = 0; return; }
  a = pos->pRec;
  iHdr = pos->iHdr; iBody = pos->iBody; nHdr = pos->nHdr; k = pos->iCol;
  for(;;){
    int m = 1;
    if( iHdr>=nHdr ){
      pos->iHdr = iHdr; pos->iBody = iBody; pos->iCol = k;
      v->eType = SQLITE_NULL; v->z = 0; v->n = 0;
      return;
    }
    s = a[iHdr];
    if( s>=0x80 ) m = gpudsVarintGet(a + iHdr, nHdr - iHdr, &s);
    if( k==iCol ) break;
    iHdr += (uint32_t)m;
    iBody += s>=12 ? (uint32_t)((s-12)>>1) : (uint32_t)gpudsSerialBytes(s);
    k++;
  }
  pos->iHdr = iHdr; pos->iBody = iBody; pos->iCol = k;
  serialVal(s, a + iBody, v);
}

/* Column iCol of record p into *v (a walk from the first column). */
static void rowCol(const GpudsRow *p, int iCol, RowVal *v){
  GpudsRowPos pos;
  posStart(p, &pos);
  rowColPos(p, iCol, v, &pos);
}

/* The serial type of value v, and its body's bytes in *pnBody. */
static uint64_t valSerial(const RowVal *v, uint32_t *pnBody){
  uint64_t s = 0;
  switch( v->eType ){
    case SQLITE_INTEGER: s = gpudsIntSerial(v->i); break;
    case SQLITE_FLOAT:   s = 7; break;
    case SQLITE_TEXT:    s = (uint64_t)v->n*2 + 13; break;
    case SQLITE_BLOB:    s = (uint64_t)v->n*2 + 12; break;
  }
  *pnBody = (uint32_t)gpudsSerialBytes(s);
  return s;
}

/* Bytes of a record whose format-4 record has nRec bytes, nHdr of them
** serial types. */
static size_t rowSize(uint64_t nRec, uint64_t nHdr){
  return (size_t)(gpudsVarintLen(nRec) + gpudsVarintLen(nHdr) + nRec);
}

/* The record bytes and serial-type bytes of values aV[0..nCol-1]; 0 if the
** record would reach 2^31 bytes. */
static int valsMeasure(const RowVal *aV, int nCol, uint32_t *pnRec, uint32_t *pnHdr){
  uint64_t nHdr = 0, nBody = 0;
  int i;
  for(i=0; i<nCol; i++){
    uint32_t nb;
    uint64_t s = valSerial(&aV[i], &nb);
    nHdr += (uint64_t)gpudsVarintLen(s);
    nBody += nb;
  }
  if( nHdr + nBody + ROW_PREFIX_MAX > 0x7fffffff ) return 0;
  *pnRec = (uint32_t)(nHdr + nBody);
  *pnHdr = (uint32_t)nHdr;
  return 1;
}

/* Write the record of values aV[0..nCol-1] (measured by valsMeasure) at z. */
static void valsWrite(unsigned char *z, const RowVal *aV, int nCol,
                      uint32_t nRec, uint32_t nHdr){
  unsigned char *b;
  int i;
  z += gpudsVarintPut(z, nRec);
  z += gpudsVarintPut(z, nHdr);
  b = z + nHdr;
  for(i=0; i<nCol; i++){
    uint32_t nb;
    uint64_t s = valSerial(&aV[i], &nb);
    z += gpudsVarintPut(z, s);
    switch( aV[i].eType ){
      case SQLITE_INTEGER: gpudsIntBody(aV[i].i, (int)nb, b); break;
      case SQLITE_FLOAT: {
        uint64_t u;
        int j;
        memcpy(&u, &aV[i].r, 8);
        for(j=7; j>=0; j--){ b[j] = (unsigned char)u; u >>= 8; }
        break;
      }
      case SQLITE_TEXT: case SQLITE_BLOB:
        if( nb ) memcpy(b, aV[i].z, nb);
        break;
    }
    b += nb;
  }
}


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
** ordinary table column of that affinity: the value in *a (text as records
** of eText hold it: gpudsValueText), and in *ppDup an owned copy (or NULL)
** that a text->number conversion used, to be freed once *a is no longer
** needed.  *a is written in place (no copy of it follows: one was a
** store-forwarding stall a column).  SQLITE_OK, or SQLITE_NOMEM. */
static int applyAffinity(sqlite3_value *v, char cAff, int eText, RowVal *a,
                         sqlite3_value **ppDup){
  memset(a, 0, sizeof(*a));
  *ppDup = 0;
  a->eType = sqlite3_value_type(v);
  if( cAff==GPUDS_AFF_TEXT ){
    if( a->eType==SQLITE_INTEGER || a->eType==SQLITE_FLOAT ) a->eType = SQLITE_TEXT;
  }else if( cAff==GPUDS_AFF_REAL || cAff==GPUDS_AFF_NUMERIC
         || cAff==GPUDS_AFF_INTEGER ){
    if( a->eType==SQLITE_TEXT ){
      *ppDup = sqlite3_value_dup(v);
      if( *ppDup ){
        int t = sqlite3_value_numeric_type(*ppDup);
        if( t==SQLITE_INTEGER || t==SQLITE_FLOAT ){ v = *ppDup; a->eType = t; }
      }
    }
    if( cAff==GPUDS_AFF_REAL ){
      if( a->eType==SQLITE_INTEGER ){
        a->eType = SQLITE_FLOAT;
        a->r = (double)sqlite3_value_int64(v);
        return SQLITE_OK;
      }
      if( a->eType==SQLITE_FLOAT && sqlite3_value_double(v)==0.0 ){
        /* An ordinary table stores an integral real of a REAL column as an
        ** integer, so -0.0 reads back as 0.0. */
        a->r = 0.0;
        return SQLITE_OK;
      }
    }else if( a->eType==SQLITE_FLOAT ){
      sqlite3_int64 i;
      if( gpudsRealToInt(sqlite3_value_double(v), &i) ){
        a->eType = SQLITE_INTEGER; a->i = i; return SQLITE_OK;
      }
    }
  }
  switch( a->eType ){
    case SQLITE_INTEGER: a->i = sqlite3_value_int64(v); break;
    case SQLITE_FLOAT:   a->r = sqlite3_value_double(v); break;
    case SQLITE_TEXT:
      if( eText==SQLITE_UTF8 ){
        /* In a UTF-8 database a text value's bytes are the record's
        ** (gpudsValueText).  sqlite3_value_blob() returns them as they
        ** are, where sqlite3_value_text() must first NUL-terminate a
        ** value that is not (a parameter bound with its length, a column
        ** read from a page): a malloc(), a copy and a free() per value.
        ** The value's type stays TEXT.  A value that is a number converted
        ** for TEXT affinity has no bytes yet: sqlite3_value_blob()
        ** converts it as sqlite3_value_text() would. */
        a->z = sqlite3_value_blob(v);
        a->n = (uint32_t)sqlite3_value_bytes(v);
        break;
      }
      return gpudsValueText(v, eText, &a->z, &a->n);
    case SQLITE_BLOB:
      a->z = sqlite3_value_blob(v); a->n = (uint32_t)sqlite3_value_bytes(v); break;
  }
  return SQLITE_OK;
}

/* The bytes of value v as text (a number as SQLite's text of it, which
** TEXT affinity makes) as the records of eText (gpuds_int.h) hold them:
** *pz (v's own, valid while v is unchanged) and *pn.  SQLITE_OK, or
** SQLITE_NOMEM.  A text value in a register holds the database's encoding
** (SQLite converts text as it enters one), so where the records hold that
** encoding its bytes are theirs, byte for byte (a lone surrogate or a byte
** order mark included).  A UTF-16 value is asked for in its encoding,
** which converts nothing where it is in it already and makes the text of
** a number; sqlite3_value_bytes() after sqlite3_value_blob() is then its
** byte count in that encoding in every SQLite version
** (sqlite3_value_bytes16() converts a UTF-16be value to the machine's
** order in some).  Records that hold UTF-8 in a UTF-16 database take
** sqlite3_value_text()'s conversion. */
int gpudsValueText(sqlite3_value *v, int eText, const unsigned char **pz, uint32_t *pn){
  int eRec = gpudsTextRecEnc(eText);
  const unsigned char *z;
  if( eRec==SQLITE_UTF8 ){
    z = sqlite3_value_text(v);
  }else{
    int bText = sqlite3_value_type(v)==SQLITE_TEXT;
    z = eRec==SQLITE_UTF16LE ? sqlite3_value_text16le(v) : sqlite3_value_text16be(v);
    if( z==0 ) return SQLITE_NOMEM;
    if( !bText ){
      /* a number's text: no NUL inside (sqlite3_value_blob() would mark
      ** the number a blob too) */
      uint32_t n = 0;
      while( z[n] || z[n+1] ) n += 2;
      *pz = z; *pn = n;
      return SQLITE_OK;
    }
    z = sqlite3_value_blob(v);
  }
  *pn = (uint32_t)sqlite3_value_bytes(v);
  *pz = z;
  return (z==0 && *pn>0) ? SQLITE_NOMEM : SQLITE_OK;
}

static char *loaderAlloc(GpudsLoader *L, size_t nByte);

/* nByte bytes for a record, from arena L (its handle has bit 0 set) or, if
** L is NULL or has no room, from malloc(): the handle, and the bytes in
** *pz; 0 if out of memory. */
static uint64_t rowAlloc(GpudsLoader *L, size_t nByte, unsigned char **pz){
  unsigned char *z;
  if( L && (z = (unsigned char*)loaderAlloc(L, nByte))!=0 ){
    *pz = z;
    return (uint64_t)(uintptr_t)z | 1;
  }
  if( (z = (unsigned char*)malloc(nByte))!=0 ){
    *pz = z;
    return (uint64_t)(uintptr_t)z;
  }
  return 0;
}

/* A handle to a new record of nByte bytes written by valsWrite(aV, nCol,
** nRec, nHdr), allocated from arena L (or by malloc() if L is NULL or the
** record too big for an arena); 0 if out of memory. */
static uint64_t valsRow(GpudsLoader *L, const RowVal *aV, int nCol,
                        uint32_t nRec, uint32_t nHdr){
  unsigned char *z = 0;
  uint64_t h = rowAlloc(L, rowSize(nRec, nHdr), &z);
  if( h ) valsWrite(z, aV, nCol, nRec, nHdr);
  return h;
}

/* The handle of a new record holding the values apVal[0..nCol-1] after the
** column affinities aAff[0..nCol-1], allocated from arena L (or by malloc()
** if L is NULL); 0 if out of memory.  Values are copied, text as the
** records of eText hold it (gpudsValueText). */
uint64_t gpudsRowNew(GpudsLoader *L, int nCol, sqlite3_value **apVal, const char *aAff,
                     int eText){
  RowVal vStatic[16], *aV = vStatic;
  sqlite3_value *dStatic[16], **aDup = dStatic;
  uint64_t h = 0;
  uint32_t nRec, nHdr;
  int i;
  if( nCol>16 ){
    aV = sqlite3_malloc64(nCol*(sizeof(RowVal)+sizeof(sqlite3_value*)));
    if( aV==0 ) return 0;
    aDup = (sqlite3_value**)&aV[nCol];
  }
  for(i=0; i<nCol; i++){
    if( applyAffinity(apVal[i], aAff[i], eText, &aV[i], &aDup[i]) ) break;
  }
  if( i==nCol && valsMeasure(aV, nCol, &nRec, &nHdr) ) h = valsRow(L, aV, nCol, nRec, nHdr);
  if( i<nCol ) i++;                         /* the failed column's copy too */
  while( i>0 ) sqlite3_value_free(aDup[--i]);
  if( aV!=vStatic ) sqlite3_free(aV);
  return h;
}

/* ---------------------------------------------------- the legacy layout */
typedef struct LegacyHdr {
  uint32_t nCol;
  uint32_t nByte;           /* size of the whole record */
} LegacyHdr;

#define CELL_TERM 0x80      /* eType flag: text followed by a NUL, none inside */

typedef struct LegacyCell {
  uint8_t eType;            /* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL,
                            ** text maybe | CELL_TERM */
  uint32_t iOff;            /* payload offset from the start of the record */
  uint32_t nLen;            /* payload bytes */
} LegacyCell;

/* True if bytes a[0..n-1] are a valid legacy record of nCol columns:
** header, every cell's type, length and bounds.  Reads the bytes where they
** are (they need not be aligned). */
static int legacyValid(const unsigned char *a, uint32_t n, int nCol){
  LegacyHdr hdr;
  uint32_t i;
  size_t nHdr = sizeof(LegacyHdr) + (size_t)nCol*sizeof(LegacyCell);
  if( a==0 || n<nHdr ) return 0;
  memcpy(&hdr, a, sizeof(hdr));
  if( hdr.nCol!=(uint32_t)nCol || hdr.nByte!=n ) return 0;
  for(i=0; i<hdr.nCol; i++){
    LegacyCell c;
    int bOk;
    memcpy(&c, a + sizeof(LegacyHdr) + i*sizeof(LegacyCell), sizeof(c));
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

/* True if bytes a[0..n-1] are a valid legacy record of nCol non-key
** columns. */
int gpudsRowValid(const unsigned char *a, uint32_t n, int nCol){
  return legacyValid(a, n, nCol);
}

/* The handle of a record holding the values of the valid legacy record
** a[] of nCol columns, allocated from arena L (or by malloc() if L is NULL);
** 0 if out of memory.  Calls no SQLite routine (worker threads use it). */
static uint64_t legacyToRow(GpudsLoader *L, const unsigned char *a, int nCol){
  RowVal vStatic[16], *aV = vStatic;
  uint32_t nRec, nHdr;
  uint64_t h = 0;
  int i;
  if( nCol>16 ){
    aV = (RowVal*)malloc(nCol*sizeof(RowVal));
    if( aV==0 ) return 0;
  }
  for(i=0; i<nCol; i++){
    LegacyCell c;
    const unsigned char *z;
    memcpy(&c, a + sizeof(LegacyHdr) + i*sizeof(LegacyCell), sizeof(c));
    z = a + c.iOff;
    aV[i].eType = c.eType & ~CELL_TERM;
    aV[i].z = 0; aV[i].n = 0;
    switch( aV[i].eType ){
      case SQLITE_INTEGER: memcpy(&aV[i].i, z, 8); break;
      case SQLITE_FLOAT:   memcpy(&aV[i].r, z, 8); break;
      case SQLITE_TEXT: case SQLITE_BLOB: aV[i].z = z; aV[i].n = c.nLen; break;
    }
  }
  if( valsMeasure(aV, nCol, &nRec, &nHdr) ) h = valsRow(L, aV, nCol, nRec, nHdr);
  if( aV!=vStatic ) free(aV);
  return h;
}

/* A malloc()'d record holding the values of the legacy record a[0..n-1] (as
** a table of format 1 to 3 stores it), or NULL with *pbBad set if the bytes
** are not a valid record of nCol columns, or NULL if out of memory. */
GpudsRow *gpudsRowFromLegacy(const unsigned char *a, uint32_t n, int nCol, int *pbBad){
  *pbBad = !legacyValid(a, n, nCol);
  if( *pbBad ) return 0;
  return (GpudsRow*)(uintptr_t)legacyToRow(0, a, nCol);
}

/* Bytes of the legacy record of row p (what gpudsRowLegacyWrite writes). */
size_t gpudsRowLegacyBytes(const GpudsRow *p){
  GpudsRowPos pos;
  size_t n = 0;
  int i, nCol = gpudsRowColumns(p);
  posStart(p, &pos);
  n = sizeof(LegacyHdr) + (size_t)nCol*sizeof(LegacyCell);
  for(i=0; i<nCol; i++){
    RowVal v;
    rowColPos(p, i, &v, &pos);
    switch( v.eType ){
      case SQLITE_INTEGER: case SQLITE_FLOAT: n += 8; break;
      case SQLITE_TEXT: n += (size_t)v.n + 1; break;
      case SQLITE_BLOB: n += v.n; break;
    }
  }
  return n;
}

/* Write the legacy record of row p at a (gpudsRowLegacyBytes(p) bytes):
** byte for byte what builds of formats 1 to 3 wrote for the same values. */
void gpudsRowLegacyWrite(const GpudsRow *p, unsigned char *a){
  GpudsRowPos pos;
  LegacyHdr hdr;
  int i, nCol = gpudsRowColumns(p);
  unsigned char *z = a + sizeof(LegacyHdr) + (size_t)nCol*sizeof(LegacyCell);
  posStart(p, &pos);
  hdr.nCol = (uint32_t)nCol;
  hdr.nByte = (uint32_t)gpudsRowLegacyBytes(p);
  memcpy(a, &hdr, sizeof(hdr));
  for(i=0; i<nCol; i++){
    LegacyCell c;
    RowVal v;
    memset(&c, 0, sizeof(c));             /* no stray padding bytes */
    rowColPos(p, i, &v, &pos);
    c.eType = (uint8_t)v.eType;
    c.iOff = (uint32_t)(z - a);
    switch( v.eType ){
      case SQLITE_INTEGER: memcpy(z, &v.i, 8); c.nLen = 8; break;
      case SQLITE_FLOAT:   memcpy(z, &v.r, 8); c.nLen = 8; break;
      case SQLITE_TEXT:
        c.nLen = v.n;
        if( v.n ) memcpy(z, v.z, v.n);
        z[v.n] = 0;
        if( v.n==0 || memchr(z, 0, v.n)==0 ) c.eType |= CELL_TERM;
        z++;
        break;
      case SQLITE_BLOB:
        c.nLen = v.n;
        if( v.n ) memcpy(z, v.z, v.n);
        break;
    }
    z += c.nLen;
    memcpy(a + sizeof(LegacyHdr) + i*sizeof(LegacyCell), &c, sizeof(c));
  }
}

/* ------------------------------------------------------------- handles
** A row handle (the 64-bit word a store keeps for a key) is the record's
** address; bit 0 set means the record lives in a load arena: a 2 MiB block,
** aligned to its size, holding the rows of one reload back to back with a
** count of live rows in its first bytes, freed when the count drops to 0.
** Reloading a big table then costs a bump of a pointer per row instead of a
** malloc(), and closing it a decrement instead of a free().
 Records in an arena are 2-byte aligned. */
#define ARENA_SIZE  ((size_t)2<<20)
#define ARENA_HDR   16              /* int64 live count, padded to 16 */

/* gpudsRowOf (gpuds_int.h): a handle's bit 0 marks a record in an arena. */

/* A fresh arena block (ARENA_SIZE bytes aligned to their size), or NULL.
** Blocks are mapped from the system directly, not taken from malloc(): an
** aligned malloc() leaves the alignment's slack in the heap as free
** fragments, and a block freed in the heap's middle stays resident until a
** trim; a mapping costs the pages the rows touch and goes back to the
** system the moment its last row is freed.  bHuge asks for one transparent
** huge page (MADV_HUGEPAGE, before anything touches it), for blocks a big
** load or transaction will fill: reading a random row of a big table then
** misses the TLB far less often (the rows of 10^7 keys span 100,000 small
** pages); a block that may stay nearly empty (a small table's) keeps small
** pages, which cost only what is touched (and so does every block under
** GPUDS_HUGE_PAGES=0). */
static void *blockAlloc(int bHuge){
  return gpudsMapAligned(ARENA_SIZE, bHuge);
}

/* Give block pBlock (from blockAlloc) back to the system. */
static void blockFree(void *pBlock){
  munmap(pBlock, ARENA_SIZE);
}

/* Start loading the records of handles aRow[0..n) into the CPU's caches
** (the first two cache lines of each: the header and a short row's values),
** so that the misses of rows a cursor is about to return overlap instead of
** following one another.  Reads nothing, changes nothing. */
void gpudsRowPrefetch(const uint64_t *aRow, size_t n){
  size_t i;
  for(i=0; i<n; i++) gpudsRowPrefetchOne(aRow[i]);
}

/* Drop one reference to arena block pBlock; free it at the last. */
static void arenaRelease(char *pBlock){
  int64_t *pnLive = (int64_t*)pBlock;
  if( --*pnLive==0 ) blockFree(pBlock);
}

/* Free the record of handle h (0 is a no-op). */
void gpudsRowFreeHandle(uint64_t h){
  if( h & 1 ){
    arenaRelease((char*)((uintptr_t)(h & ~(uint64_t)1) & ~(uintptr_t)(ARENA_SIZE-1)));
  }else if( h ){
    free((void*)(uintptr_t)h);
  }
}

/* Give the heap memory that a load or a big transaction freed (its
** temporaries: blob buffers, key and handle arrays, the write buffer) back
** to the system.  glibc keeps freed memory of every thread's malloc arena
** resident for reuse, so without this a table's first load leaves its
** temporaries' size in the process long after (malloc_trim, glibc only;
** elsewhere a no-op).  It walks the free lists only: call it after work
** that freed much, not per statement. */
void gpudsMemTrim(void){
#ifdef __GLIBC__
  malloc_trim(0);
#endif
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

/* Add one fresh arena block to list pList: 1, or 0 if out of memory.
** bHuge: rows will fill it (blockAlloc). */
int gpudsBlocksAdd(GpudsBlocks *pList, int bHuge){
  void *pNew = blockAlloc(bHuge);
  if( pNew==0 ) return 0;
  blocksPush(pList, pNew);
  return 1;
}

/* Free every block of list pList, which is left empty. */
void gpudsBlocksFree(GpudsBlocks *pList){
  void *pBlock;
  while( (pBlock = blocksPop(pList))!=0 ) blockFree(pBlock);
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

/* Move loader L to a fresh block.  0 if out of memory (L unchanged).  A
** loader that has filled a block already is a big one: its next blocks are
** asked for as huge pages. */
static int loaderNewBlock(GpudsLoader *L){
  void *pNew = blocksPop(&L->spare);
  if( pNew==0 && (pNew = blockAlloc(L->pBlock!=0))==0 ) return 0;
  if( L->bHold && L->pBlock ) arenaRelease(L->pBlock);
  L->pBlock = (char*)pNew;
  *(int64_t*)L->pBlock = L->bHold ? 1 : 0;
  L->iOff = ARENA_HDR;
  return 1;
}

/* nByte bytes (2-byte aligned: bit 0 of the handle marks the arena) for one row in loader L's arena, counted in
** its block; NULL if out of memory or if the row is too big for an arena
** (the caller then uses malloc()). */
static char *loaderAlloc(GpudsLoader *L, size_t nByte){
  size_t nAl = (nByte + 1) & ~(size_t)1;
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
static uint64_t loaderCopy(GpudsLoader *L, const unsigned char *a, size_t n){
  char *z = loaderAlloc(L, n);
  if( z ){
    memcpy(z, a, n);
    return (uint64_t)(uintptr_t)z | 1;
  }else{                                     /* big, or no arena memory */
    char *pBig = (char*)malloc(n);
    if( pBig ) memcpy(pBig, a, n);
    return (uint64_t)(uintptr_t)pBig;
  }
}

/* A handle to a record holding the values of the legacy record bytes
** a[0..n-1] of a table of nCol non-key columns (format 1 to 3), allocated
** from loader L; 0 if out of memory or if the bytes are not a valid
** record. */
uint64_t gpudsLoaderRow(GpudsLoader *L, const unsigned char *a, uint32_t n, int nCol){
  if( !legacyValid(a, n, nCol) ) return 0;
  return legacyToRow(L, a, nCol);
}

/* A handle to a copy, allocated from loader L, of the record of handle h:
** a record this extension built, so not checked again.  0 if out of
** memory. */
uint64_t gpudsLoaderCopy(GpudsLoader *L, uint64_t h){
  const GpudsRow *pRow = gpudsRowOf(h);
  return loaderCopy(L, pRow->a, gpudsRowBytes(pRow));
}

/* ------------------------------------------------------------ repacking
** The rows of a big write buffer's flush lie wherever xUpdate put them (in
** the order written); a range scan of them later costs a cache miss a
** row.  A repack copies them into load arenas in key order, so that the
** scan reads them sequentially. */

/* A repack of at least this many rows copies them: below it a scan's cache
** misses cost less than the copy. */
#define REPACK_MIN_ROWS 1024

/* Rows lying more than REPACK_GAP bytes apart in memory (a page), or
** backwards, break the key order a scan would read them in; rows are
** repacked when at least one in REPACK_BREAK_DIV does so (fewer: they are
** already mostly in key order, e.g. a sorted insert). */
#define REPACK_GAP       4096
#define REPACK_BREAK_DIV 8

/* A repack uses one thread per this many rows, at most REPACK_MAX_THREADS
** (and no more than the machine's processors). */
#define REPACK_ROWS_PER_THREAD 65536
#define REPACK_MAX_THREADS     8

/* One thread's share of a repack: rows [iFirst, iLast) of aRow, copied
** into an arena of its own (so each thread's copies are in key order). */
typedef struct RepackJob {
  uint64_t *aRow;
  size_t iFirst, iLast;
  int bFail;              /* out of memory: some rows were not copied */
  pthread_t tid;
  int bThread;            /* tid is a running thread to join */
} RepackJob;

static void *repackJobRun(void *pArg){
  RepackJob *j = (RepackJob*)pArg;
  GpudsLoader L;
  size_t i;
  gpudsLoaderInit(&L);
  for(i=j->iFirst; i<j->iLast; i++){
    uint64_t h = j->aRow[i], hNew;
    if( h==0 ) continue;
    hNew = gpudsLoaderCopy(&L, h);
    if( hNew==0 ){ j->bFail = 1; break; }
    j->aRow[i] = hNew;
  }
  return 0;
}

/* Put the originals back into aRow[0..n) and free the copies a repack made
** (*paOrig, freed and cleared; a no-op if it is NULL). */
void gpudsRowsRepackUndo(uint64_t *aRow, size_t n, uint64_t **paOrig){
  uint64_t *aOrig = *paOrig;
  size_t i;
  if( aOrig==0 ) return;
  for(i=0; i<n; i++){
    if( aRow[i]!=aOrig[i] ) gpudsRowFreeHandle(aRow[i]);
  }
  memcpy(aRow, aOrig, n*8);
  free(aOrig);
  *paOrig = 0;
}

/* Copy the rows of handles aRow[0..n) (0 entries skipped), which are in
** key order, into load arenas, so that a scan reads them sequentially:
** aRow gets the copies and *paOrig (malloc()'d) the originals, which the
** caller's other references still name.  Rows already in key order in
** memory (a sorted insert) and short lists are left as they are (*paOrig
** stays NULL); so is everything when memory is short (this only saves
** time).  Big lists are split among threads (the copies are independent;
** each thread's arena holds a contiguous key range), all joined before
** returning. */
void gpudsRowsRepack(uint64_t *aRow, size_t n, uint64_t **paOrig){
  size_t i, nRow = 0, nBreak = 0;
  uintptr_t prev = 0;
  RepackJob aJob[REPACK_MAX_THREADS];
  int nJob, iJob, bFail = 0;
  long nCpu = 1;
  *paOrig = 0;
  for(i=0; i<n; i++){
    uint64_t h = aRow[i];
    if( h==0 ) continue;
    nRow++;
    if( (uintptr_t)h < prev || (uintptr_t)h - prev > REPACK_GAP ) nBreak++;
    prev = (uintptr_t)h;
  }
  if( nRow<REPACK_MIN_ROWS || nBreak<nRow/REPACK_BREAK_DIV ) return;
  *paOrig = malloc(n*8);
  if( *paOrig==0 ) return;
  memcpy(*paOrig, aRow, n*8);
#ifdef _SC_NPROCESSORS_ONLN
  nCpu = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  nJob = (int)(n / REPACK_ROWS_PER_THREAD);
  if( nJob>nCpu ) nJob = (int)nCpu;
  if( nJob>REPACK_MAX_THREADS ) nJob = REPACK_MAX_THREADS;
  if( nJob<1 ) nJob = 1;
  memset(aJob, 0, sizeof(aJob));
  for(iJob=0; iJob<nJob; iJob++){
    aJob[iJob].aRow = aRow;
    aJob[iJob].iFirst = n*iJob/nJob;
    aJob[iJob].iLast = n*(iJob+1)/nJob;
  }
  for(iJob=1; iJob<nJob; iJob++){
    aJob[iJob].bThread = pthread_create(&aJob[iJob].tid, 0, repackJobRun, &aJob[iJob])==0;
  }
  repackJobRun(&aJob[0]);
  for(iJob=1; iJob<nJob; iJob++){
    if( aJob[iJob].bThread ) pthread_join(aJob[iJob].tid, 0);
    else repackJobRun(&aJob[iJob]);          /* no thread: do it here */
  }
  for(iJob=0; iJob<nJob; iJob++) bFail |= aJob[iJob].bFail;
  if( bFail ) gpudsRowsRepackUndo(aRow, n, paOrig);
}

/* Payload bytes of integer v in an ordinary record (sqlite3VdbeSerialType,
** file format 4: 0 and 1 take none). */
static int plainIntBytes(int64_t v){
  return (int)gpudsSerialBytes(gpudsIntSerial(v));
}

/* The bytes an ordinary rowid table with the same declarations would give
** this row's record: the key (an INTEGER PRIMARY KEY) as NULL, then each
** column as OP_MakeRecord (vdbe.c) encodes it, header included; a REAL
** column's integral value is stored as an integer there.  That is what an
** ordinary table compares with SQLITE_LIMIT_LENGTH ("string or blob too
** big").  Text is counted as the record holds it (in a UTF-16 database
** the tables of older formats hold UTF-8, which this counts). */
int64_t gpudsRowPlainBytes(const GpudsRow *p, const char *aAff){
  int64_t nHdr = 1, nData = 0;
  GpudsRowPos pos;
  int i, nCol = gpudsRowColumns(p);
  posStart(p, &pos);
  for(i=0; i<nCol; i++){
    RowVal v;
    uint64_t eSerial = 0;
    int nPay = 0;
    rowColPos(p, i, &v, &pos);
    switch( v.eType ){
      case SQLITE_INTEGER: nPay = plainIntBytes(v.i); break;
      case SQLITE_FLOAT: {
        sqlite3_int64 x;
        nPay = (aAff[i]==GPUDS_AFF_REAL && gpudsRealToInt(v.r, &x)) ? plainIntBytes(x) : 8;
        break;
      }
      case SQLITE_TEXT: eSerial = (uint64_t)v.n*2 + 13; nData += v.n; break;
      case SQLITE_BLOB: eSerial = (uint64_t)v.n*2 + 12; nData += v.n; break;
    }
    nData += nPay;
    nHdr += gpudsVarintLen(eSerial);
  }
  if( nHdr<=126 ){
    nHdr += 1;
  }else{
    int nVar = gpudsVarintLen((uint64_t)nHdr);
    nHdr += nVar;
    if( nVar<gpudsVarintLen((uint64_t)nHdr) ) nHdr++;
  }
  return nHdr + nData;
}

/* True if an ordinary table's record of row p (gpudsRowPlainBytes) would
** pass nLimit bytes.  That record is at most ROW_PLAIN_SLACK bytes longer
** than p's format-4 record: every column's serial type and body are as
** long there or shorter (a REAL column's integral value as an integer),
** and it adds the key's NULL serial type and its header's size varint.  So
** a record that far under the limit is answered without a walk of its
** columns (every bulk insert's row). */
#define ROW_PLAIN_SLACK 10
int gpudsRowTooBig(const GpudsRow *p, const char *aAff, int64_t nLimit){
  uint32_t nRec, nHdr;
  rowRec(p, &nRec, &nHdr);
  if( (int64_t)nRec + ROW_PLAIN_SLACK <= nLimit ) return 0;
  return gpudsRowPlainBytes(p, aAff) > nLimit;
}

/* The most bytes a record takes besides its format-4 record. */
size_t gpudsRowHdrBytes(int nCol){
  (void)nCol;
  return ROW_PREFIX_MAX;
}

/* Bytes of the row record that holds a format-4 record of nRec bytes,
** nHdr of them serial types. */
size_t gpudsRowSize(uint32_t nRec, uint32_t nHdr){
  return rowSize(nRec, nHdr);
}

/* The handle of the record holding the storage format 4's record a[] (nCol
** serial types in nHdr bytes, then the columns' bytes), which
** gpudsRecCheck() (runfmt.c, the one place that validates it) found valid
** and gave nByte, the size of the record this builds (gpudsRowSize): the
** encoded record is copied as it is.  Allocated from loader L, or by
** malloc() if L is NULL or the record too big for an arena; 0 if out of
** memory.  Calls no SQLite routine: the loader's worker threads use it. */
uint64_t gpudsRowDecode(GpudsLoader *L, const unsigned char *a, uint32_t nHdr,
                        int nCol, size_t nByte){
  unsigned char *z = 0;
  uint64_t h = 0;
  size_t nRec = 0;
  int nPre = gpudsVarintLen(nHdr), m;
  (void)nCol;
  for(m=1; m<=5; m++){                     /* nByte = nPre + m + nRec, m = len(nRec) */
    if( nByte < (size_t)(nPre + m) ) break;
    nRec = nByte - (size_t)(nPre + m);
    if( gpudsVarintLen(nRec)==m ) break;
  }
  h = rowAlloc(L, nByte, &z);
  if( h==0 ) return 0;
  z += gpudsVarintPut(z, nRec);
  z += gpudsVarintPut(z, nHdr);
  memcpy(z, a, nRec);
  return h;
}

/* The most bytes of records one arena block holds. */
size_t gpudsLoaderSpanMax(void){
  return ARENA_SIZE - ARENA_HDR;
}

/* Bytes held by a record. */
size_t gpudsRowBytes(const GpudsRow *p){
  uint32_t nRec, nHdr;
  if( p==0 ) return 0;
  rowRec(p, &nRec, &nHdr);
  return rowSize(nRec, nHdr);
}

/* Row p's format-4 record (runfmt.h), in place: its first byte, and its
** bytes in *pnRec. */
const unsigned char *gpudsRowRecord(const GpudsRow *p, uint32_t *pnRec){
  uint32_t nHdr;
  return rowRec(p, pnRec, &nHdr);
}

/* Number of columns of record p. */
int gpudsRowColumns(const GpudsRow *p){
  uint32_t nRec, nHdr, i = 0;
  const unsigned char *a = rowRec(p, &nRec, &nHdr);
  int n = 0;
  while( i<nHdr ){
    uint64_t s;
    i += (a[i]<0x80) ? 1 : (uint32_t)gpudsVarintGet(a+i, nHdr-i, &s);
    n++;
  }
  return n;
}

/* Text shorter than this is handed to SQLite from a NUL-terminated copy on
** the stack (gpudsRowResult). */
#define ROW_TEXT_STACK 512

/* The 8 bytes at z as one word (any alignment). */
static uint64_t word8(const unsigned char *z){
  uint64_t u;
  memcpy(&u, z, 8);
  return u;
}

/* Copy the n bytes at z to zBuf, followed by a NUL; 1 if none of them is
** a NUL (SQLite may then take zBuf's length from the terminator), else 0.
** Words of 8 bytes (the last one overlapping) rather than memchr() and
** memcpy(): the text of a row is mostly a few dozen bytes, where calls and
** string instructions cost more than the copy.  Reads only z[0..n). */
static int textCopy(char *zBuf, const unsigned char *z, uint32_t n){
  const uint64_t lo = 0x0101010101010101ULL, hi = 0x8080808080808080ULL;
  uint64_t bZero = 0;
  if( n>=8 ){
    uint32_t i;
    uint64_t u;
    for(i=0; i+8<=n; i+=8){
      u = word8(z+i);
      bZero |= (u - lo) & ~u & hi;
      memcpy(zBuf+i, &u, 8);
    }
    if( i<n ){
      u = word8(z+n-8);
      bZero |= (u - lo) & ~u & hi;
      memcpy(zBuf+n-8, &u, 8);
    }
  }else{
    uint32_t i;
    for(i=0; i<n; i++){
      zBuf[i] = (char)z[i];
      bZero |= (z[i]==0);
    }
  }
  zBuf[n] = 0;
  return bZero==0;
}

/* The bytes to hand SQLite for the UTF-16 text z[0..n) in encoding eRec
** (the database's), byte for byte, their number in *pn.  SQLite reads two
** first bytes FF FE or FE FF of UTF-16 it is given (a result or a bound
** value) as a byte order mark, drops them and takes the rest in the order
** they name (sqlite3VdbeMemHandleBom), where an ordinary table keeps the
** character U+FEFF or U+FFFE they are: such text is given behind a mark of
** its own encoding, which SQLite drops, in a sqlite3_malloc()ed copy
** (*pbCopy set; NULL if out of memory).  Else z itself. */
static const unsigned char *text16Arg(const unsigned char *z, uint32_t n, int eRec,
                                      uint32_t *pn, int *pbCopy){
  unsigned char *zBom;
  *pn = n; *pbCopy = 0;
  if( n<2 || !((z[0]==0xff && z[1]==0xfe) || (z[0]==0xfe && z[1]==0xff)) ) return z;
  zBom = sqlite3_malloc64((uint64_t)n + 2);
  if( zBom==0 ) return 0;
  zBom[0] = eRec==SQLITE_UTF16LE ? 0xff : 0xfe;
  zBom[1] = eRec==SQLITE_UTF16LE ? 0xfe : 0xff;
  memcpy(zBom+2, z, n);
  *pn = n+2; *pbCopy = 1;
  return zBom;
}

/* Set the result of ctx to the UTF-16 text z[0..n) in encoding eRec (the
** database's), byte for byte (text16Arg). */
static void resultText16(sqlite3_context *ctx, const unsigned char *z, uint32_t n, int eRec){
  uint32_t nArg;
  int bCopy;
  const unsigned char *zArg = text16Arg(z, n, eRec, &nArg, &bCopy);
  if( zArg==0 ){ sqlite3_result_error_nomem(ctx); return; }
  if( eRec==SQLITE_UTF16LE ){
    sqlite3_result_text16le(ctx, zArg, (int)nArg, bCopy ? sqlite3_free : SQLITE_TRANSIENT);
  }else{
    sqlite3_result_text16be(ctx, zArg, (int)nArg, bCopy ? sqlite3_free : SQLITE_TRANSIENT);
  }
}

/* Set the result of ctx to column iCol (0-based, non-key) of record p, a
** record of a table whose records hold text as eText says (gpuds_int.h).
** pos (may be NULL) is where the last call on p stood: reading a row's
** columns in order walks its serial types once.  A position holds no
** memory; a cursor resets it (pRow = NULL) whenever its row may have been
** freed, since a new record can take the same address.  This is xColumn's
** path, once per column of every row returned: the walk and the decoding
** are inlined into it. */
void gpudsRowResult(const GpudsRow *p, int iCol, sqlite3_context *ctx, GpudsRowPos *pos,
                    int eText){
  GpudsRowPos tmp;
  RowVal v;
  if( p==0 ){
    sqlite3_result_null(ctx);
    return;
  }
  if( pos==0 ){ tmp.pRow = 0; pos = &tmp; }
  rowColPos(p, iCol, &v, pos);
  switch( v.eType ){
    case SQLITE_INTEGER: sqlite3_result_int64(ctx, v.i); break;
    case SQLITE_FLOAT:   sqlite3_result_double(ctx, v.r); break;
    case SQLITE_TEXT: {
      char zBuf[ROW_TEXT_STACK];
      int eRec = gpudsTextRecEnc(eText);
      if( eRec!=SQLITE_UTF8 ){
        resultText16(ctx, v.z, v.n, eRec);
      }else if( v.n<ROW_TEXT_STACK && textCopy(zBuf, v.z, v.n) ){
        /* Given with a NUL after it and its length unsaid, SQLite copies
        ** the text once, terminated, into a buffer it reuses from row to
        ** row, and need not copy it again to read it as text (as it would
        ** for a text given with its length). */
        sqlite3_result_text(ctx, zBuf, -1, SQLITE_TRANSIENT);
      }else{
        sqlite3_result_text(ctx, (const char*)v.z, (int)v.n, SQLITE_TRANSIENT);
      }
      break;
    }
    case SQLITE_BLOB:
      sqlite3_result_blob(ctx, v.z, (int)v.n, SQLITE_TRANSIENT); break;
    default:
      sqlite3_result_null(ctx); break;
  }
}

/* Bind column iCol (0-based, non-key) of record p, whose table's records
** hold text as eText says (gpuds_int.h), to parameter iParam of pStmt, for
** SQLite to read as it reads the column (UTF-16 text byte for byte:
** text16Arg).  A blob SQLite turns into a number as text in the
** database's encoding, while a bound blob is read as UTF-8: in a UTF-16
** database a blob is bound as text in that encoding, *pbBlob set, and the
** statement must CAST it back AS BLOB.  SQLite's result code. */
int gpudsRowBind(const GpudsRow *p, int iCol, sqlite3_stmt *pStmt, int iParam, int eText,
                 int *pbBlob){
  RowVal v;
  int eDb = eText & ~GPUDS_TEXT_UTF8, eRec = gpudsTextRecEnc(eText);
  *pbBlob = 0;
  if( p==0 ) return sqlite3_bind_null(pStmt, iParam);
  rowCol(p, iCol, &v);
  switch( v.eType ){
    case SQLITE_INTEGER: return sqlite3_bind_int64(pStmt, iParam, v.i);
    case SQLITE_FLOAT:   return sqlite3_bind_double(pStmt, iParam, v.r);
    case SQLITE_TEXT:
      if( eRec!=SQLITE_UTF8 ){
        uint32_t nArg;
        int bCopy;
        const unsigned char *zArg = text16Arg(v.n ? v.z : (const unsigned char*)"", v.n,
                                              eRec, &nArg, &bCopy);
        if( zArg==0 ) return SQLITE_NOMEM;
        return sqlite3_bind_text64(pStmt, iParam, (const char*)zArg, nArg,
                                   bCopy ? sqlite3_free : SQLITE_TRANSIENT, (unsigned char)eRec);
      }
      return sqlite3_bind_text(pStmt, iParam, (const char*)v.z, (int)v.n, SQLITE_TRANSIENT);
    case SQLITE_BLOB:
      if( eDb==SQLITE_UTF16LE || eDb==SQLITE_UTF16BE ){
        uint32_t nArg;
        int bCopy;
        const unsigned char *zArg = text16Arg(v.n ? v.z : (const unsigned char*)"", v.n,
                                              eDb, &nArg, &bCopy);
        if( zArg==0 ) return SQLITE_NOMEM;
        *pbBlob = 1;
        return sqlite3_bind_text64(pStmt, iParam, (const char*)zArg, nArg,
                                   bCopy ? sqlite3_free : SQLITE_TRANSIENT, (unsigned char)eDb);
      }
      return sqlite3_bind_blob(pStmt, iParam, v.z, (int)v.n, SQLITE_TRANSIENT);
  }
  return sqlite3_bind_null(pStmt, iParam);
}

/* ---- text in the database's encoding ------------------------------------
** SQLite's BINARY collation compares the bytes of the database's encoding.
** Records that hold text in that encoding (eText a plain encoding,
** gpuds_int.h) order it by its bytes, as blobs.  Records that hold UTF-8
** in a UTF-16 database (GPUDS_TEXT_UTF8: tables of older formats) order it
** by the bytes of the UTF-16 that SQLite makes of it
** (sqlite3VdbeMemTranslate), another order beyond ASCII, walked below.  A
** column set's 8 bytes of a text and the exact comparisons follow eText. */

/* A walk over the UTF-16 code units of UTF-8 text z[0..n), as SQLite
** translates it (READ_UTF8: malformed sequences and surrogates read as
** U+FFFD; WRITE_UTF16: a surrogate pair above U+FFFF). */
typedef struct Utf16Walk {
  const unsigned char *z;
  uint32_t n, i;
  uint32_t uLow;          /* the low surrogate still to come, or 0 */
} Utf16Walk;

/* The next code unit into *pu: 1, or 0 at the end. */
static int utf16Next(Utf16Walk *w, uint32_t *pu){
  static const unsigned char aTrans1[] = {    /* SQLite's sqlite3Utf8Trans1 */
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
    0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
    0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x00, 0x01, 0x02, 0x03,
    0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x00, 0x01, 0x02, 0x03,
    0x00, 0x01, 0x00, 0x00,
  };
  uint32_t c;
  if( w->uLow ){ *pu = w->uLow; w->uLow = 0; return 1; }
  if( w->i>=w->n ) return 0;
  c = w->z[w->i++];
  if( c>=0xc0 ){
    c = aTrans1[c-0xc0];
    while( w->i<w->n && (w->z[w->i] & 0xc0)==0x80 ) c = (c<<6) + (0x3f & w->z[w->i++]);
    if( c<0x80 || (c & 0xFFFFF800)==0xD800 || (c & 0xFFFFFFFE)==0xFFFE ) c = 0xFFFD;
  }
  if( c<=0xFFFF ){
    *pu = c;
  }else{
    *pu = 0xD800 + (((c - 0x10000)>>10) & 0x3FF);
    w->uLow = 0xDC00 + (c & 0x3FF);
  }
  return 1;
}

/* True if records of eText hold UTF-8 ordered as the UTF-16 SQLite makes
** of it. */
static int textWalk(int eText){
  return (eText & GPUDS_TEXT_UTF8)!=0;
}

/* Code unit u as its two bytes in encoding eEnc read big-endian (so that
** comparing these numbers compares the bytes in order). */
static uint32_t utf16Order(uint32_t u, int eEnc){
  return eEnc==SQLITE_UTF16LE ? ((u & 0xff)<<8) | (u>>8) : u;
}

/* The 8 bytes a column set holds for text z[0..n) as records of eText
** hold it: gpudsColBytes() of its bytes in the database's encoding (the
** first 4 and a hash of all). */
uint64_t gpudsRowTextBytes(const unsigned char *z, uint32_t n, int eText){
  Utf16Walk w;
  uint32_t pre = 0, h = 2166136261u, u;
  int k = 0, eEnc = eText & ~GPUDS_TEXT_UTF8;
  if( !textWalk(eText) ) return gpudsColBytes(z, n);
  w.z = z; w.n = n; w.i = 0; w.uLow = 0;
  while( utf16Next(&w, &u) ){
    uint32_t o = utf16Order(u, eEnc);
    if( k<2 ) pre |= o<<(16*(1-k));
    k++;
    h ^= o>>8; h *= 16777619u;
    h ^= o & 0xff; h *= 16777619u;
  }
  return ((uint64_t)pre<<32) | h;
}

/* Compare two UTF-8 texts by BINARY collation in UTF-16 encoding eEnc. */
static int utf16Cmp(const unsigned char *a, uint32_t na, const unsigned char *b, uint32_t nb,
                    int eEnc){
  Utf16Walk x, y;
  uint32_t u, v;
  x.z = a; x.n = na; x.i = 0; x.uLow = 0;
  y.z = b; y.n = nb; y.i = 0; y.uLow = 0;
  for(;;){
    int hx = utf16Next(&x, &u), hy = utf16Next(&y, &v);
    if( !hx || !hy ) return hx==hy ? GPUDS_ORD_EQ : hx ? GPUDS_ORD_GT : GPUDS_ORD_LT;
    u = utf16Order(u, eEnc); v = utf16Order(v, eEnc);
    if( u!=v ) return u<v ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  }
}

/* Column iCol (0-based, non-key) of record p as a column set holds it
** (gpuds_colval.h), text as records of eText hold it: its tag and 8
** bytes.  A missing record or column is NULL. */
void gpudsRowColVal(const GpudsRow *p, int iCol, int eText, uint8_t *pTag, uint64_t *pVal){
  RowVal v;
  *pTag = GPUDS_TAG_NULL; *pVal = 0;
  if( p==0 ) return;
  rowCol(p, iCol, &v);
  switch( v.eType ){
    case SQLITE_INTEGER: *pTag = GPUDS_TAG_INT; memcpy(pVal, &v.i, 8); break;
    case SQLITE_FLOAT:   *pTag = GPUDS_TAG_REAL; memcpy(pVal, &v.r, 8); break;
    case SQLITE_TEXT:    *pTag = GPUDS_TAG_TEXT; *pVal = gpudsRowTextBytes(v.z, v.n, eText); break;
    case SQLITE_BLOB:    *pTag = GPUDS_TAG_BLOB; *pVal = gpudsColBytes(v.z, v.n); break;
  }
}

/* Compare two blob values (or two texts held in the database's encoding)
** by BINARY collation. */
static int bytesCmp(const unsigned char *a, uint32_t na, const unsigned char *b, uint32_t nb){
  int r = (na && nb) ? memcmp(a, b, na<nb ? na : nb) : 0;
  if( r ) return r<0 ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  return na<nb ? GPUDS_ORD_LT : na>nb ? GPUDS_ORD_GT : GPUDS_ORD_EQ;
}

/* Column iCol of record p against value v (its text as records of eText
** hold it) exactly, as SQLite compares two values with BINARY collation
** (no affinity applied): GPUDS_ORD_LT, _EQ or _GT.  A NULL orders first. */
int gpudsRowColCmp(const GpudsRow *p, int iCol, const GpudsValue *v, int eText){
  GpudsValue a;
  int ca, cb;
  gpudsRowColValue(p, iCol, eText, &a);
  ca = gpudsColClass(a.tag); cb = gpudsColClass(v->tag);
  if( ca!=cb ) return ca<cb ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  if( ca==0 ) return GPUDS_ORD_EQ;
  if( ca==1 ) return gpudsColCompare(a.tag, a.val, v->tag, v->val);
  if( ca==2 && textWalk(eText) ){
    return utf16Cmp(a.z, a.n, v->z, v->n, eText & ~GPUDS_TEXT_UTF8);
  }
  return bytesCmp(a.z, a.n, v->z, v->n);
}

/* Column iCol of records a and b compared exactly (NULL first, numbers,
** text and blobs by BINARY collation; text as records of eText hold it):
** < 0, 0, > 0. */
int gpudsRowColCmpRows(const GpudsRow *a, const GpudsRow *b, int iCol, int eText){
  GpudsValue v;
  gpudsRowColValue(b, iCol, eText, &v);
  return gpudsRowColCmp(a, iCol, &v, eText);
}

/* Column iCol of record p as a GpudsValue, text as records of eText hold
** it (text and blobs point into the record). */
void gpudsRowColValue(const GpudsRow *p, int iCol, int eText, GpudsValue *v){
  RowVal r;
  v->tag = GPUDS_TAG_NULL; v->val = 0; v->z = 0; v->n = 0;
  if( p==0 ) return;
  rowCol(p, iCol, &r);
  switch( r.eType ){
    case SQLITE_INTEGER: v->tag = GPUDS_TAG_INT; memcpy(&v->val, &r.i, 8); break;
    case SQLITE_FLOAT:   v->tag = GPUDS_TAG_REAL; memcpy(&v->val, &r.r, 8); break;
    case SQLITE_TEXT:    v->tag = GPUDS_TAG_TEXT; v->val = gpudsRowTextBytes(r.z, r.n, eText); break;
    case SQLITE_BLOB:    v->tag = GPUDS_TAG_BLOB; v->val = gpudsColBytes(r.z, r.n); break;
  }
  if( v->tag==GPUDS_TAG_TEXT || v->tag==GPUDS_TAG_BLOB ){ v->z = r.z; v->n = r.n; }
}
