/*
** textenc.c -- text as a table's records hold it (the eText arguments,
** gpuds_int.h): the bytes of a value in that encoding, UTF-16 handed to
** SQLite byte for byte, and the order SQLite's BINARY collation gives it.
**
** From format 5 a record holds text in the database's encoding, byte for
** byte as SQLite's own records do, and BINARY order is the order of those
** bytes.  Records of older formats hold UTF-8; in a UTF-16 database they
** order as the UTF-16 that SQLite makes of them, which this file walks.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>

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

/* ---- UTF-16 handed to SQLite byte for byte ------------------------------ */

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
void gpudsResultText16(sqlite3_context *ctx, const unsigned char *z, uint32_t n, int eRec){
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

/* Bind the UTF-16 text z[0..n) in encoding eEnc (the database's) to
** parameter iParam of pStmt, byte for byte (text16Arg).  SQLite's result
** code. */
int gpudsBindText16(sqlite3_stmt *pStmt, int iParam, const unsigned char *z, uint32_t n,
                    int eEnc){
  uint32_t nArg;
  int bCopy;
  const unsigned char *zArg = text16Arg(n ? z : (const unsigned char*)"", n, eEnc,
                                        &nArg, &bCopy);
  if( zArg==0 ) return SQLITE_NOMEM;
  return sqlite3_bind_text64(pStmt, iParam, (const char*)zArg, nArg,
                             bCopy ? sqlite3_free : SQLITE_TRANSIENT, (unsigned char)eEnc);
}

/* ---- the order of text ---------------------------------------------------
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
uint64_t gpudsTextBytes(const unsigned char *z, uint32_t n, int eText){
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

/* Compare two blob values (or two texts held in the database's encoding)
** by BINARY collation: GPUDS_ORD_LT, _EQ or _GT. */
int gpudsBytesCmp(const unsigned char *a, uint32_t na, const unsigned char *b, uint32_t nb){
  int r = (na && nb) ? memcmp(a, b, na<nb ? na : nb) : 0;
  if( r ) return r<0 ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  return na<nb ? GPUDS_ORD_LT : na>nb ? GPUDS_ORD_GT : GPUDS_ORD_EQ;
}

/* Compare texts a and b, held as records of eText hold them, by SQLite's
** BINARY collation in the database's encoding: GPUDS_ORD_LT, _EQ or _GT. */
int gpudsTextCmp(const unsigned char *a, uint32_t na, const unsigned char *b, uint32_t nb,
                 int eText){
  if( textWalk(eText) ) return utf16Cmp(a, na, b, nb, eText & ~GPUDS_TEXT_UTF8);
  return gpudsBytesCmp(a, na, b, nb);
}
