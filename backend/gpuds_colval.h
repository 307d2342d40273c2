/*
** gpuds_colval.h -- a non-key column value as filter kernels see it, and
** the comparisons on it.  Included by the SQLite side (to encode values and
** constants), by the host column set and by the CUDA kernels: one
** definition of the rules, compiled for host and device.
**
** A value is a tag and 8 bytes:
**   GPUDS_TAG_NULL  0
**   GPUDS_TAG_INT   the int64
**   GPUDS_TAG_REAL  the double's bits
**   GPUDS_TAG_TEXT  (first 4 bytes, big-endian, zero-padded) << 32 | a
**   GPUDS_TAG_BLOB  32-bit hash of all bytes (gpudsColBytes)
** Numbers compare exactly, integer against real included (as SQLite's
** sqlite3IntFloatCompare), and storage classes order as SQLite orders them:
** NULL < numbers < text < blob.  Text and blobs compare by BINARY collation
** (memcmp, then length) as far as the prefix decides; where it does not,
** the answer is "maybe" and the caller checks the row exactly.
*/
#ifndef GPUDS_COLVAL_H
#define GPUDS_COLVAL_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
# define GPUDS_HD __host__ __device__ __forceinline__
#else
# define GPUDS_HD static inline
#endif

#define GPUDS_TAG_NULL 0
#define GPUDS_TAG_INT  1
#define GPUDS_TAG_REAL 2
#define GPUDS_TAG_TEXT 3
#define GPUDS_TAG_BLOB 4

/* Term operators.  IS c (c not NULL) is EQ, IS NULL is ISNULL, IS NOT NULL
** is NOTNULL; the SQLite side maps them so. */
#define GPUDS_CMP_EQ      1   /* = c   (NULL on either side: no) */
#define GPUDS_CMP_NE      2   /* != c  (NULL on either side: no) */
#define GPUDS_CMP_LT      3
#define GPUDS_CMP_LE      4
#define GPUDS_CMP_GT      5
#define GPUDS_CMP_GE      6
#define GPUDS_CMP_ISNULL  7
#define GPUDS_CMP_NOTNULL 8
#define GPUDS_CMP_ISNOT   9   /* IS NOT c, c not NULL: NULL or != c */
#define GPUDS_CMP_IN     11   /* IN a list (a slice of the query's IN values:
                              ** val = first << 32 | count, sorted by
                              ** gpudsColInCompare): numbers exactly, text and
                              ** blobs by their 8 bytes ("maybe" where they
                              ** match); tag holds GPUDS_IN_xxx flags */
#define GPUDS_IN_TEXT 1       /* every text value "maybe" */
#define GPUDS_IN_NUM  4       /* every number "maybe" */
/* (an IN list on a column of TEXT or no affinity, a superset: a number in
** the list leaves every text open (TEXT affinity may make it text, NUMERIC
** affinity text a number), text that may read as a number every number) */
#define GPUDS_CMP_ANYEQ  10   /* a superset of "= c under any affinity the
                              ** right-hand side may carry": equal values,
                              ** and every number against text (and text
                              ** against a number) as "maybe" */
#define GPUDS_CMP_TLT    12   /* on a TEXT column: a superset of "< c" (and */
#define GPUDS_CMP_TLE    13   /* <=, >, >=) under any affinity the right-hand */
#define GPUDS_CMP_TGT    14   /* side may carry: the comparison of the values */
#define GPUDS_CMP_TGE    15   /* as stored, and for < and <= as "maybe" every
                              ** text that may read as a number (NUMERIC
                              ** affinity, which a numeric right-hand side
                              ** applies to this column, converts it, and a
                              ** number is less than any text or blob:
                              ** gpudsColNumText).  A number c of < and <= is
                              ** given as SQLite's text of it (the TEXT
                              ** affinity a right-hand side without one
                              ** takes: ext/plan.c); > and >= a number hold
                              ** for every text and blob as the values
                              ** compare, and a number is never > text */
#define GPUDS_CMP_ULT    16   /* on an untyped column: a superset of "< c" */
#define GPUDS_CMP_ULE    17   /* (and <=, >, >=) under any affinity the */
#define GPUDS_CMP_UGT    18   /* right-hand side may carry: only a numeric */
#define GPUDS_CMP_UGE    19   /* one converts (NUMERIC affinity on both
                              ** sides), so text that may read as a number is
                              ** "maybe" against a number or text, and a
                              ** number against such text; the rest compare
                              ** as stored */

/* Results of gpudsColCompare */
#define GPUDS_ORD_LT   (-1)
#define GPUDS_ORD_EQ     0
#define GPUDS_ORD_GT     1
#define GPUDS_ORD_MAYBE  2   /* text/blob with the same prefix and hash:
                             ** may be equal, order unknown */
#define GPUDS_ORD_NE     3   /* text/blob with the same prefix, other hash:
                             ** not equal, order unknown */

/* Storage class rank: NULL 0, number 1, text 2, blob 3. */
GPUDS_HD int gpudsColClass(uint8_t tag){
  return tag==GPUDS_TAG_NULL ? 0 : tag<=GPUDS_TAG_REAL ? 1 : tag==GPUDS_TAG_TEXT ? 2 : 3;
}

/* FNV-1a, 32 bits: the hash of a text or blob value's bytes. */
GPUDS_HD uint32_t gpudsColHash(const unsigned char *z, uint32_t n){
  uint32_t h = 2166136261u, i;
  for(i=0; i<n; i++){ h ^= z[i]; h *= 16777619u; }
  return h;
}

/* The 8 bytes of a text or blob value z[0..n-1]. */
GPUDS_HD uint64_t gpudsColBytes(const unsigned char *z, uint32_t n){
  uint64_t pre = 0;
  uint32_t i;
  for(i=0; i<4; i++) pre = (pre<<8) | (i<n ? z[i] : 0);
  return (pre<<32) | gpudsColHash(z, n);
}

/* The 8 bytes of a double (bits) and back. */
GPUDS_HD uint64_t gpudsColReal(double r){ uint64_t u; memcpy(&u, &r, 8); return u; }
GPUDS_HD double gpudsColDouble(uint64_t u){ double r; memcpy(&r, &u, 8); return r; }

/* Compare integer i with real r exactly (SQLite's sqlite3IntFloatCompare). */
GPUDS_HD int gpudsColIntReal(int64_t i, double r){
  int64_t y;
  double s;
  if( r!=r ) return GPUDS_ORD_GT;                 /* NaN: never stored */
  if( r<-9223372036854775808.0 ) return GPUDS_ORD_GT;
  if( r>=9223372036854775808.0 ) return GPUDS_ORD_LT;
  y = (int64_t)r;
  if( i<y ) return GPUDS_ORD_LT;
  if( i>y ) return GPUDS_ORD_GT;
  s = (double)i;
  if( s<r ) return GPUDS_ORD_LT;
  if( s>r ) return GPUDS_ORD_GT;
  return GPUDS_ORD_EQ;
}

/* Compare value (ta, a) with value (tb, b): GPUDS_ORD_xxx.  NULLs compare
** as the lowest class (the operators handle NULL themselves). */
GPUDS_HD int gpudsColCompare(uint8_t ta, uint64_t a, uint8_t tb, uint64_t b){
  int ca = gpudsColClass(ta), cb = gpudsColClass(tb);
  if( ca!=cb ) return ca<cb ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  if( ca==0 ) return GPUDS_ORD_EQ;
  if( ca==1 ){
    if( ta==GPUDS_TAG_INT && tb==GPUDS_TAG_INT ){
      int64_t x = (int64_t)a, y = (int64_t)b;
      return x<y ? GPUDS_ORD_LT : x>y ? GPUDS_ORD_GT : GPUDS_ORD_EQ;
    }
    if( ta==GPUDS_TAG_REAL && tb==GPUDS_TAG_REAL ){
      double x = gpudsColDouble(a), y = gpudsColDouble(b);
      return x<y ? GPUDS_ORD_LT : x>y ? GPUDS_ORD_GT : GPUDS_ORD_EQ;
    }
    if( ta==GPUDS_TAG_INT ) return gpudsColIntReal((int64_t)a, gpudsColDouble(b));
    return -gpudsColIntReal((int64_t)b, gpudsColDouble(a));
  }
  {
    /* text or blob: the prefix orders, the hash tells unequal values */
    uint32_t pa = (uint32_t)(a>>32), pb = (uint32_t)(b>>32);
    if( pa!=pb ) return pa<pb ? GPUDS_ORD_LT : GPUDS_ORD_GT;
    return a==b ? GPUDS_ORD_MAYBE : GPUDS_ORD_NE;
  }
}

/* A total order of values for IN lists: gpudsColCompare's, with text and
** blobs of the same prefix ordered by their hash; GPUDS_ORD_EQ for equal
** numbers and for text or blobs with the same 8 bytes. */
GPUDS_HD int gpudsColInCompare(uint8_t ta, uint64_t a, uint8_t tb, uint64_t b){
  int o = gpudsColCompare(ta, a, tb, b);
  if( o==GPUDS_ORD_MAYBE ) return GPUDS_ORD_EQ;
  if( o==GPUDS_ORD_NE ) return a<b ? GPUDS_ORD_LT : GPUDS_ORD_GT;
  return o;
}

/* May the text whose first 4 bytes val carries (GPUDS_TAG_TEXT) read as a
** number under NUMERIC affinity?  SQLite converts a text only if all of it
** is a number (sqlite3AtoF: white space, then a sign, a digit or a point,
** then digits, a point, an exponent, white space), so a byte outside those
** says no; a zero byte may be the end of a short text.  False only where
** it certainly does not. */
GPUDS_HD int gpudsColNumText(uint64_t val){
  int i, bLead = 1;
  for(i=0; i<4; i++){
    unsigned c = (unsigned)(val>>(56-8*i)) & 0xffu;
    int bSpace = c==' ' || (c>=0x09 && c<=0x0d);
    if( c==0 ) return 1;
    if( bLead && bSpace ) continue;
    if( bLead ){
      if( !((c>='0' && c<='9') || c=='+' || c=='-' || c=='.') ) return 0;
      bLead = 0;
      continue;
    }
    if( !((c>='0' && c<='9') || c=='+' || c=='-' || c=='.' || c=='e' || c=='E' || bSpace) ) return 0;
  }
  return 1;
}

/* The plain operator a superset operator stands for (ANYEQ: EQ, TLT and
** ULT: LT, ...); others as they are. */
GPUDS_HD int gpudsColBaseOp(int op){
  switch( op ){
    case GPUDS_CMP_ANYEQ:    return GPUDS_CMP_EQ;
    case GPUDS_CMP_TLT: case GPUDS_CMP_TLE: case GPUDS_CMP_TGT: case GPUDS_CMP_TGE:
      return GPUDS_CMP_LT + (op - GPUDS_CMP_TLT);
    case GPUDS_CMP_ULT: case GPUDS_CMP_ULE: case GPUDS_CMP_UGT: case GPUDS_CMP_UGE:
      return GPUDS_CMP_LT + (op - GPUDS_CMP_ULT);
  }
  return op;
}

/* Is superset term (op, ctag, cval) open on value (tag, val) whatever the
** values compare, because an affinity the right-hand side may carry could
** convert one side (the ops' comments)?  Such a value is "maybe". */
GPUDS_HD int gpudsColAffMaybe(int op, uint8_t tag, uint64_t val, uint8_t ctag,
                              uint64_t cval){
  int cr, cc;
  if( tag==GPUDS_TAG_NULL || ctag==GPUDS_TAG_NULL ) return 0;
  cr = gpudsColClass(tag); cc = gpudsColClass(ctag);
  switch( op ){
    case GPUDS_CMP_ANYEQ:
      return (cr==1 && cc==2) || (cr==2 && cc==1);
    case GPUDS_CMP_TLT: case GPUDS_CMP_TLE:
      return cr==2 && gpudsColNumText(val);
    case GPUDS_CMP_ULT: case GPUDS_CMP_ULE: case GPUDS_CMP_UGT: case GPUDS_CMP_UGE:
      return (cr==1 && cc==2 && gpudsColNumText(cval))
          || (cr==2 && cc<=2 && gpudsColNumText(val));
  }
  return 0;
}

/* Does a value of tag `tag` satisfy term (op, ctag, c), given o, the
** comparison of the two values (GPUDS_ORD_xxx; unused when either is
** NULL), where gpudsColAffMaybe() has said no?  0 no, 1 yes, 2 maybe (the
** caller decides on the row itself). */
GPUDS_HD int gpudsColApply(int op, uint8_t tag, uint8_t ctag, int o){
  op = gpudsColBaseOp(op);
  if( op==GPUDS_CMP_ISNULL ) return tag==GPUDS_TAG_NULL;
  if( op==GPUDS_CMP_NOTNULL ) return tag!=GPUDS_TAG_NULL;
  if( ctag==GPUDS_TAG_NULL ) return 0;
  if( tag==GPUDS_TAG_NULL ) return op==GPUDS_CMP_ISNOT;
  switch( op ){
    case GPUDS_CMP_EQ:    return o==GPUDS_ORD_EQ ? 1 : o==GPUDS_ORD_MAYBE ? 2 : 0;
    case GPUDS_CMP_NE:
    case GPUDS_CMP_ISNOT: return o==GPUDS_ORD_EQ ? 0 : o==GPUDS_ORD_MAYBE ? 2 : 1;
    case GPUDS_CMP_LT:    return o>=GPUDS_ORD_MAYBE ? 2 : o<0;
    case GPUDS_CMP_LE:    return o>=GPUDS_ORD_MAYBE ? 2 : o<=0;
    case GPUDS_CMP_GT:    return o>=GPUDS_ORD_MAYBE ? 2 : o>0;
    case GPUDS_CMP_GE:    return o>=GPUDS_ORD_MAYBE ? 2 : o>=0;
  }
  return 2;
}

/* Does value (tag, val) satisfy term (op, ctag, cval)?  0 no, 1 yes, 2
** maybe (the caller decides on the row itself). */
GPUDS_HD int gpudsColMatch(uint8_t tag, uint64_t val, int op, uint8_t ctag,
                           uint64_t cval){
  int o = 0;
  if( gpudsColAffMaybe(op, tag, val, ctag, cval) ) return 2;
  if( tag!=GPUDS_TAG_NULL && ctag!=GPUDS_TAG_NULL ){
    o = gpudsColCompare(tag, val, ctag, cval);
  }
  return gpudsColApply(op, tag, ctag, o);
}

/* Term (op, ctag, cval) as words: where it is =, IS, a superset of = (EQ,
** ANYEQ), IS NULL or IS NOT NULL, gpudsColMatch() is not 0 exactly for the
** values whose tag has its bit in *pAny (1 << tag) and those equal to one
** of the *pn pairs (aT[i], aV[i]) bit for bit: returns 1 and fills them (at
** most 3 pairs).  0 for other terms.  A scan then compares words, not
** values (cols.cu's one-term path).  Equal numbers of the other type: an
** integer c equals only the real (double)c where that is exact (and -0.0
** for 0), a real r only the integer r where r is one within int64's range;
** 0.0 and -0.0 are equal. */
GPUDS_HD int gpudsColAsPairs(int op, uint8_t ctag, uint64_t cval, uint32_t *pAny,
                             uint8_t aT[3], uint64_t aV[3], int *pn){
  int n = 0;
  uint32_t any = 0;
  const uint64_t kNegZero = 0x8000000000000000ULL;
  if( op==GPUDS_CMP_ISNULL || op==GPUDS_CMP_NOTNULL ){
    any = op==GPUDS_CMP_ISNULL ? (1u<<GPUDS_TAG_NULL)
        : (1u<<GPUDS_TAG_INT)|(1u<<GPUDS_TAG_REAL)|(1u<<GPUDS_TAG_TEXT)|(1u<<GPUDS_TAG_BLOB);
  }else if( op!=GPUDS_CMP_EQ && op!=GPUDS_CMP_ANYEQ ){
    return 0;
  }else if( ctag==GPUDS_TAG_INT ){
    int64_t c = (int64_t)cval;
    double d = (double)c;
    aT[n] = GPUDS_TAG_INT; aV[n++] = cval;
    if( d<9223372036854775808.0 && (int64_t)d==c ){
      aT[n] = GPUDS_TAG_REAL; aV[n++] = gpudsColReal(d);
      if( c==0 ){ aT[n] = GPUDS_TAG_REAL; aV[n++] = kNegZero; }
    }
    if( op==GPUDS_CMP_ANYEQ ) any = 1u<<GPUDS_TAG_TEXT;
  }else if( ctag==GPUDS_TAG_REAL ){
    double r = gpudsColDouble(cval);
    if( r==r ){
      if( r==0.0 ){
        aT[n] = GPUDS_TAG_REAL; aV[n++] = 0;
        aT[n] = GPUDS_TAG_REAL; aV[n++] = kNegZero;
        aT[n] = GPUDS_TAG_INT; aV[n++] = 0;
      }else{
        aT[n] = GPUDS_TAG_REAL; aV[n++] = cval;
        if( r>=-9223372036854775808.0 && r<9223372036854775808.0 && (double)(int64_t)r==r ){
          aT[n] = GPUDS_TAG_INT; aV[n++] = (uint64_t)(int64_t)r;
        }
      }
    }
    if( op==GPUDS_CMP_ANYEQ ) any = 1u<<GPUDS_TAG_TEXT;
  }else if( ctag==GPUDS_TAG_TEXT || ctag==GPUDS_TAG_BLOB ){
    aT[n] = ctag; aV[n++] = cval;
    if( op==GPUDS_CMP_ANYEQ && ctag==GPUDS_TAG_TEXT ){
      any = (1u<<GPUDS_TAG_INT)|(1u<<GPUDS_TAG_REAL);
    }
  }
  *pAny = any;
  *pn = n;
  return 1;
}

/* Does value (tag, val) satisfy "IN" term (flags GPUDS_IN_xxx, the sorted
** values aT/aV[0..n))?  0 no, 1 yes, 2 maybe (text or blob whose 8 bytes
** match, or a class the flags leave open). */
GPUDS_HD int gpudsColMatchIn(uint8_t tag, uint64_t val, uint8_t flags,
                             const uint8_t *aT, const uint64_t *aV, uint32_t n){
  int c = gpudsColClass(tag);
  uint32_t lo = 0, hi = n;
  if( c==0 ) return 0;
  if( (c==1 && (flags & GPUDS_IN_NUM)) || (c==2 && (flags & GPUDS_IN_TEXT)) ) return 2;
  while( lo<hi ){
    uint32_t mid = lo + (hi-lo)/2;
    int o = gpudsColInCompare(aT[mid], aV[mid], tag, val);
    if( o==GPUDS_ORD_EQ ) return c==1 ? 1 : 2;
    if( o<0 ) lo = mid+1; else hi = mid;
  }
  return 0;
}

/* A 64-bit key whose unsigned order never contradicts SQLite's order of
** the values (NULL < numbers < text < blob; numbers by value; text by its
** first bytes): a < b implies key(a) <= key(b).  Equal keys need an exact
** comparison (the SQLite side does it for the rows it returns). */
GPUDS_HD uint64_t gpudsColSortKey(uint8_t tag, uint64_t val){
  uint64_t cls = (uint64_t)gpudsColClass(tag), body = 0;
  if( cls==1 ){
    double d = tag==GPUDS_TAG_INT ? (double)(int64_t)val : gpudsColDouble(val);
    uint64_t u;
    if( d==0.0 ) d = 0.0;                          /* -0.0 == 0.0 */
    u = gpudsColReal(d);
    u = (u>>63) ? ~u : (u | 0x8000000000000000ULL);
    body = u>>2;
  }else if( cls>=2 ){
    body = (val>>32)<<30;
  }
  return (cls<<62) | body;
}

/* ---- aggregation (gpuds_backend.h, xAgg) ---------------------------- */

/* The canonical value of (tag, val) for grouping and DISTINCT: a REAL
** that equals an integer of int64's range is that INTEGER (-0.0 is 0), so
** that values SQLite finds equal (1 and 1.0) are one; the rest as they
** are (NULL as (NULL, 0)). */
GPUDS_HD void gpudsColCanon(uint8_t tag, uint64_t val, uint8_t *pTag, uint64_t *pVal){
  if( tag==GPUDS_TAG_REAL ){
    double r = gpudsColDouble(val);
    if( r>=-9223372036854775808.0 && r<9223372036854775808.0 && (double)(int64_t)r==r ){
      *pTag = GPUDS_TAG_INT; *pVal = (uint64_t)(int64_t)r;
      return;
    }
  }
  *pTag = tag;
  *pVal = tag==GPUDS_TAG_NULL ? 0 : val;
}

/* The order of canonical values (gpudsColCanon) in which xAgg returns its
** groups: NULL < numbers (by value) < text < blob, text and blobs by their
** 8 bytes as an unsigned number.  -1, 0 (the same value), 1. */
GPUDS_HD int gpudsColGroupCmp(uint8_t ta, uint64_t a, uint8_t tb, uint64_t b){
  int ca = gpudsColClass(ta), cb = gpudsColClass(tb);
  if( ca!=cb ) return ca<cb ? -1 : 1;
  if( ca==1 ){
    int o = gpudsColCompare(ta, a, tb, b);
    return o<0 ? -1 : o>0;
  }
  if( ca==0 ) return 0;
  return a<b ? -1 : a>b;
}

/* SQLite's "v / n" (op GPUDS_AGGKEY_DIV, 1) or "v % n" (GPUDS_AGGKEY_MOD,
** 2) of a number or NULL v = (tag, val) and an integer n (its OP_Divide
** and OP_Remainder): the result in *pTag, *pVal (NULL where SQLite's is
** NULL: n is 0, or v is NULL).  Integers divide as C does, except that
** INT64_MIN / -1 is the REAL 2^63; a REAL divides as a double, and its
** remainder is that of the integer SQLite makes of it (clamped to int64's
** range), as a REAL.  Returns 0, leaving the outputs alone, for TEXT and
** BLOB (SQLite converts them to numbers first: the caller's part). */
GPUDS_HD int gpudsColDivMod(int op, int64_t n, uint8_t tag, uint64_t val,
                            uint8_t *pTag, uint64_t *pVal){
  *pTag = GPUDS_TAG_NULL; *pVal = 0;
  if( tag==GPUDS_TAG_TEXT || tag==GPUDS_TAG_BLOB ) return 0;
  if( tag==GPUDS_TAG_NULL || n==0 ) return 1;
  if( tag==GPUDS_TAG_INT ){
    int64_t i = (int64_t)val;
    if( op==1 ){
      if( n==-1 && i==(int64_t)0x8000000000000000ULL ){
        *pTag = GPUDS_TAG_REAL; *pVal = gpudsColReal(9223372036854775808.0);
        return 1;
      }
      *pTag = GPUDS_TAG_INT; *pVal = (uint64_t)(i / n);
    }else{
      *pTag = GPUDS_TAG_INT; *pVal = (uint64_t)(n==-1 ? 0 : i % n);
    }
    return 1;
  }
  {
    double r = gpudsColDouble(val), q;
    if( op==1 ){
      q = r / (double)n;
    }else{
      int64_t i = r<=-9223372036854775808.0 ? (int64_t)0x8000000000000000ULL
                : r>=9223372036854775808.0 ? (int64_t)0x7fffffffffffffffULL
                : (int64_t)r;
      q = (double)(n==-1 ? 0 : i % n);
    }
    if( q!=q ) return 1;                       /* NaN: SQLite's NULL */
    *pTag = GPUDS_TAG_REAL; *pVal = gpudsColReal(q);
  }
  return 1;
}

/* Does value (tag, val) satisfy term (op, ctag, cval) of an aggregation's
** filter?  gpudsColMatch, or for GPUDS_CMP_IN gpudsColMatchIn over
** aInTag/aInVal (cval names the slice); bExact: a TEXT or BLOB value
** whose 8 bytes equal the constant's (one of the list's) is equal to it.
** 0 no, 1 yes, 2 maybe. */
GPUDS_HD int gpudsColMatchAgg(uint8_t tag, uint64_t val, int op, uint8_t ctag,
                              uint64_t cval, const uint8_t *aInTag,
                              const uint64_t *aInVal, int bExact){
  int r;
  if( op==GPUDS_CMP_IN ){
    uint32_t i0 = (uint32_t)(cval>>32), nv = (uint32_t)cval;
    r = gpudsColMatchIn(tag, val, ctag, aInTag + i0, aInVal + i0, nv);
    if( r==2 && bExact && ctag==0 && gpudsColClass(tag)>=2 ) r = 1;
    return r;
  }
  r = gpudsColMatch(tag, val, op, ctag, cval);
  if( r==2 && bExact && tag==ctag && val==cval && gpudsColClass(tag)>=2 ){
    r = gpudsColApply(op, tag, ctag, GPUDS_ORD_EQ);
  }
  return r;
}

/* Add x to the compensated sum (*pS, *pC) (Kahan-Babuska-Neumaier): *pS
** + *pC is the sum.  Where a sum is infinite the compensation is not a
** number; the caller then takes *pS alone. */
GPUDS_HD void gpudsColKbnAdd(double *pS, double *pC, double x){
  double s = *pS, t = s + x;
  if( (s<0 ? -s : s) >= (x<0 ? -x : x) ) *pC += (s - t) + x;
  else *pC += (x - t) + s;
  *pS = t;
}

/* Merge the compensated sum (s2, c2) into (*pS, *pC). */
GPUDS_HD void gpudsColKbnMerge(double *pS, double *pC, double s2, double c2){
  gpudsColKbnAdd(pS, pC, s2);
  *pC += c2;
}

#endif /* GPUDS_COLVAL_H */
