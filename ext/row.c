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
** Records are 2-byte aligned (bit 0 of a handle is free: arena.c) and
** read byte by byte.  Text is held and compared as textenc.c says.
**
** Tables of formats 1 to 3 stored the records of earlier builds (the
** "legacy" layout: u32 nCol, u32 bytes, nCol cells of {u8 type, 3 bytes of
** padding, u32 offset, u32 length}, then payload, numbers as 8 bytes, text
** with a NUL); a load converts them (gpudsLoaderRow, gpudsRowFromLegacy)
** and a commit to such a table writes them (gpudsRowLegacyWrite), at the
** end of this file.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "schema.h"
#include "varint.h"
#include <string.h>
#include <stdlib.h>

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

/* ------------------------------------------------------------ reading */

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

/* Number of columns of record p. */
static int rowColumns(const GpudsRow *p){
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

/* ------------------------------------------------------------ writing */

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

/* A handle to a new record of nByte bytes written by valsWrite(aV, nCol,
** nRec, nHdr), allocated from arena L (or by malloc() if L is NULL or the
** record too big for an arena); 0 if out of memory. */
static uint64_t valsRow(GpudsLoader *L, const RowVal *aV, int nCol,
                        uint32_t nRec, uint32_t nHdr){
  unsigned char *z = 0;
  uint64_t h = gpudsRowAllocHandle(L, rowSize(nRec, nHdr), &z);
  if( h ) valsWrite(z, aV, nCol, nRec, nHdr);
  return h;
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

/* ------------------------------------------ records copied, their sizes */

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
  h = gpudsRowAllocHandle(L, nByte, &z);
  if( h==0 ) return 0;
  z += gpudsVarintPut(z, nRec);
  z += gpudsVarintPut(z, nHdr);
  memcpy(z, a, nRec);
  return h;
}

/* A handle to a copy, allocated from loader L, of the record of handle h:
** a record this extension built, so not checked again.  0 if out of
** memory. */
uint64_t gpudsLoaderCopy(GpudsLoader *L, uint64_t h){
  const GpudsRow *pRow = gpudsRowOf(h);
  size_t n = gpudsRowBytes(pRow);
  unsigned char *z = 0;
  uint64_t hNew = gpudsRowAllocHandle(L, n, &z);
  if( hNew ) memcpy(z, pRow->a, n);
  return hNew;
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
static int64_t rowPlainBytes(const GpudsRow *p, const char *aAff){
  int64_t nHdr = 1, nData = 0;
  GpudsRowPos pos;
  int i, nCol = rowColumns(p);
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

/* True if an ordinary table's record of row p (rowPlainBytes) would
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
  return rowPlainBytes(p, aAff) > nLimit;
}

/* ------------------------------------- columns handed out and compared */

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
        gpudsResultText16(ctx, v.z, v.n, eRec);
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
** gpudsBindText16).  A blob SQLite turns into a number as text in the
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
      if( eRec!=SQLITE_UTF8 ) return gpudsBindText16(pStmt, iParam, v.z, v.n, eRec);
      return sqlite3_bind_text(pStmt, iParam, (const char*)v.z, (int)v.n, SQLITE_TRANSIENT);
    case SQLITE_BLOB:
      if( eDb==SQLITE_UTF16LE || eDb==SQLITE_UTF16BE ){
        *pbBlob = 1;
        return gpudsBindText16(pStmt, iParam, v.z, v.n, eDb);
      }
      return sqlite3_bind_blob(pStmt, iParam, v.z, (int)v.n, SQLITE_TRANSIENT);
  }
  return sqlite3_bind_null(pStmt, iParam);
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
    case SQLITE_TEXT:    *pTag = GPUDS_TAG_TEXT; *pVal = gpudsTextBytes(v.z, v.n, eText); break;
    case SQLITE_BLOB:    *pTag = GPUDS_TAG_BLOB; *pVal = gpudsColBytes(v.z, v.n); break;
  }
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
    case SQLITE_TEXT:    v->tag = GPUDS_TAG_TEXT; v->val = gpudsTextBytes(r.z, r.n, eText); break;
    case SQLITE_BLOB:    v->tag = GPUDS_TAG_BLOB; v->val = gpudsColBytes(r.z, r.n); break;
  }
  if( v->tag==GPUDS_TAG_TEXT || v->tag==GPUDS_TAG_BLOB ){ v->z = r.z; v->n = r.n; }
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
  if( ca==2 ) return gpudsTextCmp(a.z, a.n, v->z, v->n, eText);
  return gpudsBytesCmp(a.z, a.n, v->z, v->n);
}

/* Column iCol of records a and b compared exactly (NULL first, numbers,
** text and blobs by BINARY collation; text as records of eText hold it):
** < 0, 0, > 0. */
int gpudsRowColCmpRows(const GpudsRow *a, const GpudsRow *b, int iCol, int eText){
  GpudsValue v;
  gpudsRowColValue(b, iCol, eText, &v);
  return gpudsRowColCmp(a, iCol, &v, eText);
}

/* ---------------------------------------- the legacy layout (formats 1-3) */
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
  int i, nCol = rowColumns(p);
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
  int i, nCol = rowColumns(p);
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

/* A handle to a record holding the values of the legacy record bytes
** a[0..n-1] of a table of nCol non-key columns (format 1 to 3), allocated
** from loader L; 0 if out of memory or if the bytes are not a valid
** record. */
uint64_t gpudsLoaderRow(GpudsLoader *L, const unsigned char *a, uint32_t n, int nCol){
  if( !legacyValid(a, n, nCol) ) return 0;
  return legacyToRow(L, a, nCol);
}
