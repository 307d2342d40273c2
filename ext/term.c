/*
** term.c -- the terms of a filter on a table's columns, shared by the
** column plans (plan.c, colset.c) and the views (view*.c): the constants
** as SQLite compares them with a column (its affinity applied), the key
** bounds a value sets, IN lists, and the exact check of a term on a row's
** record where a column set could only say "maybe".
**
** Below plan.c, colset.c and the views; it reads values through SQLite's
** API and records through row.c.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "schema.h"
#include <string.h>
#include <math.h>
#include <stdlib.h>

/* 2^63 as a double */
#define TWO63 9223372036854775808.0

/* Text value *pv with NUMERIC affinity applied, as SQLite applies it to the
** other side of a comparison with a numeric column: numeric-looking text
** becomes a number.  Returns the value's type; *pv may then point to a copy
** left in *ppDup for the caller to free.  -1 if out of memory (*pv as it
** was).  Other values are returned as they are. */
static int numericAffinity(sqlite3_value **pv, sqlite3_value **ppDup){
  int eType = sqlite3_value_type(*pv);
  *ppDup = 0;
  if( eType!=SQLITE_TEXT ) return eType;
  *ppDup = sqlite3_value_dup(*pv);
  if( *ppDup==0 ) return -1;
  *pv = *ppDup;
  return sqlite3_value_numeric_type(*ppDup);
}

/* Apply a bound "key OP v" (OP: GPUDS_CMP_GT, _GE, _LT or _LE) to
** [*pLo,*pHi], with SQLite's comparison rules between an INTEGER PRIMARY
** KEY and a value of any type.  Returns 0 if no key can satisfy it, 1
** otherwise. */
int gpudsKeyBound(int eOp, sqlite3_value *v, int64_t *pLo, int64_t *pHi){
  sqlite3_value *pDup;
  int bRet = 1;
  /* The key column has INTEGER affinity: numeric-looking text compares as
  ** a number. */
  int eType = numericAffinity(&v, &pDup);
  if( eType<0 ) return 1;         /* cannot narrow; the bound is left out */
  switch( eType ){
    case SQLITE_NULL: bRet = 0; break;
    case SQLITE_INTEGER: {
      int64_t x = sqlite3_value_int64(v);
      switch( eOp ){
        case GPUDS_CMP_GT: if( x==INT64_MAX ) bRet = 0; else if( x+1>*pLo ) *pLo = x+1; break;
        case GPUDS_CMP_GE: if( x>*pLo ) *pLo = x; break;
        case GPUDS_CMP_LT: if( x==INT64_MIN ) bRet = 0; else if( x-1<*pHi ) *pHi = x-1; break;
        case GPUDS_CMP_LE: if( x<*pHi ) *pHi = x; break;
      }
      break;
    }
    case SQLITE_FLOAT: {
      double r = sqlite3_value_double(v);
      if( r!=r ){ bRet = 0; break; }                    /* NaN */
      /* Exact in the integer domain: floor()/ceil() of a double are exact,
      ** and adding 1 is done on the int64. */
      if( eOp==GPUDS_CMP_GT || eOp==GPUDS_CMP_LE ){
        double f = floor(r);
        if( f>=TWO63 ){ if( eOp==GPUDS_CMP_GT ) bRet = 0; break; }
        if( f<-TWO63 ){ if( eOp==GPUDS_CMP_LE ) bRet = 0; break; }
        if( eOp==GPUDS_CMP_GT ){
          int64_t x = (int64_t)f;               /* key > r  <=>  key >= x+1 */
          if( x==INT64_MAX ){ bRet = 0; break; }
          if( x+1>*pLo ) *pLo = x+1;
        }else{
          if( (int64_t)f<*pHi ) *pHi = (int64_t)f;   /* key <= floor(r) */
        }
      }else{
        double c = ceil(r);
        if( c>=TWO63 ){ if( eOp==GPUDS_CMP_GE ) bRet = 0; break; }
        if( c<-TWO63 ){ if( eOp==GPUDS_CMP_LT ) bRet = 0; break; }
        if( eOp==GPUDS_CMP_GE ){
          if( (int64_t)c>*pLo ) *pLo = (int64_t)c;   /* key >= ceil(r) */
        }else{
          int64_t x = (int64_t)c;               /* key < r  <=>  key <= x-1 */
          if( x==INT64_MIN ){ bRet = 0; break; }
          if( x-1<*pHi ) *pHi = x-1;
        }
      }
      break;
    }
    default:
      /* TEXT (not numeric) and BLOB sort after every integer. */
      if( eOp==GPUDS_CMP_GT || eOp==GPUDS_CMP_GE ) bRet = 0;
      break;
  }
  if( pDup ) sqlite3_value_free(pDup);
  return bRet;
}

/* The key that value v names, as an ordinary table's INTEGER PRIMARY KEY
** lookup decides: returns 1 and sets *pk, or 0 if v names no key. */
int gpudsValueToKey(sqlite3_value *v, int64_t *pk){
  sqlite3_value *pDup;
  int bRet = 0, eType;
  if( sqlite3_value_type(v)==SQLITE_INTEGER ){
    *pk = sqlite3_value_int64(v);
    return 1;
  }
  eType = numericAffinity(&v, &pDup);
  if( eType<0 ) return 0;
  if( eType==SQLITE_INTEGER ){
    *pk = sqlite3_value_int64(v);
    bRet = 1;
  }else if( eType==SQLITE_FLOAT ){
    /* As SQLite's rowid seek (OP_MustBeInt, integer affinity): a real names
    ** a key only if it is exactly that integer, and not +/-2^63. */
    sqlite3_int64 i;
    if( gpudsRealToInt(sqlite3_value_double(v), &i) ){ *pk = i; bRet = 1; }
  }
  sqlite3_value_free(pDup);
  return bRet;
}

/* *v (holding no copy) := a copy of the text of value pArg (a number's
** as TEXT affinity makes it) as records of eText hold it (textenc.c), and
** its 8 bytes. */
static int constText(sqlite3_value *pArg, int eText, GpudsValue *v){
  const unsigned char *z = 0;
  uint32_t n = 0;
  unsigned char *zCopy;
  if( gpudsValueText(pArg, eText, &z, &n) ) return SQLITE_NOMEM;
  zCopy = sqlite3_malloc64(n>0 ? n : 1);
  if( zCopy==0 ) return SQLITE_NOMEM;
  if( n>0 ) memcpy(zCopy, z, n);
  v->tag = GPUDS_TAG_TEXT;
  v->z = zCopy; v->n = n;
  v->val = gpudsTextBytes(zCopy, n, eText);
  return SQLITE_OK;
}

/* The constant of a term on a column of affinity aff: SQLite applies
** NUMERIC affinity to it when the column's is numeric (plan.c takes no
** other comparison as exact).  Text and blob bytes are copied
** (sqlite3_malloc'd), text as the table's records hold it (eText,
** textenc.c). */
int gpudsTermConst(sqlite3_value *pArg, char aff, int eText, GpudsValue *v){
  sqlite3_value *pDup = 0;
  int eType = sqlite3_value_type(pArg), rc = SQLITE_OK;
  memset(v, 0, sizeof(*v));
  if( gpudsAffNumeric(aff) ){
    eType = numericAffinity(&pArg, &pDup);
    if( eType<0 ) return SQLITE_NOMEM;
  }
  switch( eType ){
    case SQLITE_INTEGER:
      v->tag = GPUDS_TAG_INT; v->val = (uint64_t)sqlite3_value_int64(pArg); break;
    case SQLITE_FLOAT:
      v->tag = GPUDS_TAG_REAL; v->val = gpudsColReal(sqlite3_value_double(pArg)); break;
    case SQLITE_TEXT:
      rc = constText(pArg, eText, v);
      break;
    case SQLITE_BLOB: {
      const unsigned char *z = sqlite3_value_blob(pArg);
      int n = sqlite3_value_bytes(pArg);
      unsigned char *zCopy = sqlite3_malloc64(n>0 ? n : 1);
      if( zCopy==0 || (z==0 && n>0) ){ sqlite3_free(zCopy); rc = SQLITE_NOMEM; break; }
      if( n>0 ) memcpy(zCopy, z, n);
      v->tag = GPUDS_TAG_BLOB;
      v->z = zCopy; v->n = (uint32_t)n;
      v->val = gpudsColBytes(zCopy, v->n);
      break;
    }
    default:
      v->tag = GPUDS_TAG_NULL; break;
  }
  sqlite3_value_free(pDup);
  return rc;
}

/* *v (a number, holding no copy) := SQLite's text of the number pArg, as
** TEXT affinity makes it (on a copy of pArg), as records of eText hold it. */
int gpudsTermConstText(sqlite3_value *pArg, int eText, GpudsValue *v){
  sqlite3_value *pDup = sqlite3_value_dup(pArg);
  int rc = pDup ? constText(pDup, eText, v) : SQLITE_NOMEM;
  sqlite3_value_free(pDup);
  return rc;
}

/* Order two values (tag, val pairs) for the IN list. */
static int cmpInVal(const void *a, const void *b){
  const GpudsValue *x = (const GpudsValue*)a, *y = (const GpudsValue*)b;
  return gpudsColInCompare(x->tag, x->val, y->tag, y->val);
}

/* The values of "column IN (...)", as xNext gives them one by one
** (SQLITE_OK and the next value, NULL at the end, or an error), into term
** t, sorted (gpudsColInCompare): on a numeric column after its NUMERIC
** affinity, exact for numbers, text and blobs by their 8 bytes with an
** exact check of the rows that match (bRefine).  bAny: a superset that
** SQLite checks again (a column of another affinity, where the IN
** operator's affinity may convert numbers to text or text to numbers:
** GPUDS_IN_xxx).  bText: a TEXT column compared with constants of no
** affinity, which take its TEXT affinity (numbers become their text).
** NULLs match nothing. */
int gpudsTermIn(int (*xNext)(void*, sqlite3_value**), void *pCtx, char aff, int eText,
                int bAny, int bText, GpudsColTerm *t){
  sqlite3_value *pVal = 0;
  GpudsValue *a = 0;
  int64_t n = 0, nAlloc = 0, nOtherAlloc = 0, i;
  int rc, bOther = 0;
  uint8_t flags = 0;
  for(rc = xNext(pCtx, &pVal); rc==SQLITE_OK && pVal; rc = xNext(pCtx, &pVal)){
    GpudsValue v;
    int eT = sqlite3_value_type(pVal);
    int rc2 = (bText && (eT==SQLITE_INTEGER || eT==SQLITE_FLOAT))
            ? gpudsTermConstText(pVal, eText, &v) : gpudsTermConst(pVal, aff, eText, &v);
    if( rc2 ){ rc = rc2; break; }
    if( bAny && v.tag==GPUDS_TAG_TEXT && gpudsColNumText(v.val) ) flags |= GPUDS_IN_NUM;
    if( bAny && (v.tag==GPUDS_TAG_INT || v.tag==GPUDS_TAG_REAL) ) flags |= GPUDS_IN_TEXT;
    if( v.tag==GPUDS_TAG_TEXT || v.tag==GPUDS_TAG_BLOB ){
      /* kept for the exact check of the rows the set says "maybe" to (the
      ** array doubles: a long list of text is linear to gather) */
      if( t->nInOther==nOtherAlloc ){
        GpudsValue *aNew = nOtherAlloc>=0x40000000 ? 0
            : realloc(t->aInOther, sizeof(GpudsValue)*(size_t)(nOtherAlloc ? nOtherAlloc*2 : 16));
        if( aNew==0 ){ sqlite3_free((void*)v.z); rc = SQLITE_NOMEM; break; }
        t->aInOther = aNew;
        nOtherAlloc = nOtherAlloc ? nOtherAlloc*2 : 16;
      }
      t->aInOther[t->nInOther++] = v;
      bOther = 1;
      v.z = 0; v.n = 0;           /* (the copy belongs to aInOther) */
    }
    if( v.tag==GPUDS_TAG_NULL ) continue;
    if( n==0x7fffffff ){ rc = SQLITE_TOOBIG; break; }   /* t->nIn is an int */
    if( n==nAlloc ){
      GpudsValue *aNew;
      nAlloc = nAlloc ? nAlloc*2 : 16;
      aNew = realloc(a, sizeof(GpudsValue)*(size_t)nAlloc);
      if( aNew==0 ){ rc = SQLITE_NOMEM; break; }
      a = aNew;
    }
    a[n++] = v;
  }
  if( rc==SQLITE_DONE ) rc = SQLITE_OK;
  if( rc==SQLITE_OK ){
    if( n>1 ) qsort(a, (size_t)n, sizeof(GpudsValue), cmpInVal);
    t->aInTag = malloc((size_t)(n>0 ? n : 1));
    t->aInVal = malloc(8*(size_t)(n>0 ? n : 1));
    if( !t->aInTag || !t->aInVal ) rc = SQLITE_NOMEM;
  }
  if( rc==SQLITE_OK ){
    for(i=0; i<n; i++){ t->aInTag[i] = a[i].tag; t->aInVal[i] = a[i].val; }
    t->nIn = (int)n;
    t->t.tag = flags;
    t->bRefine = !bAny && bOther;
  }
  free(a);
  return rc;
}

/* sqlite3_vtab_in()'s values, one by one, for gpudsTermIn. */
static int vtabInNext(void *pCtx, sqlite3_value **ppVal){
  sqlite3_value **pp = (sqlite3_value**)pCtx;
  int rc;
  if( pp[1]==0 ){
    pp[1] = pp[0];
    rc = sqlite3_vtab_in_first(pp[0], ppVal);
  }else{
    rc = sqlite3_vtab_in_next(pp[0], ppVal);
  }
  if( rc==SQLITE_DONE ){ *ppVal = 0; rc = SQLITE_OK; }
  return rc;
}

/* gpudsTermIn over the values of pArg, a column plan's IN argument
** (sqlite3_vtab_in()). */
int gpudsTermInVtab(sqlite3_value *pArg, char aff, int eText, int bAny, GpudsColTerm *t){
  sqlite3_value *ap[2];
  ap[0] = pArg; ap[1] = 0;
  return gpudsTermIn(vtabInNext, ap, aff, eText, bAny, 0, t);
}

/* Does record pRow satisfy term t exactly?  A superset term's "maybe" (a
** number against text, text that may read as a number: SQLite decides
** with the affinity it knows) counts as yes: SQLite checks those terms
** itself. */
int gpudsTermHolds(const GpudsRow *pRow, const GpudsColTerm *t, int eText){
  uint8_t tag;
  uint64_t val;
  int o = 0;
  gpudsRowColVal(pRow, t->t.iCol, eText, &tag, &val);
  if( t->t.op==GPUDS_CMP_IN ){
    int i;
    if( tag!=GPUDS_TAG_TEXT && tag!=GPUDS_TAG_BLOB ){
      return gpudsColMatchIn(tag, val, t->t.tag, t->aInTag, t->aInVal, (uint32_t)t->nIn)!=0;
    }
    if( tag==GPUDS_TAG_TEXT && (t->t.tag & GPUDS_IN_TEXT) ) return 1;
    for(i=0; i<t->nInOther; i++){
      if( gpudsRowColCmp(pRow, t->t.iCol, &t->aInOther[i], eText)==GPUDS_ORD_EQ ) return 1;
    }
    return 0;
  }
  if( gpudsColAffMaybe(t->t.op, tag, val, t->v.tag, t->v.val) ) return 1;   /* SQLite decides */
  if( tag!=GPUDS_TAG_NULL && t->v.tag!=GPUDS_TAG_NULL ){
    o = gpudsRowColCmp(pRow, t->t.iCol, &t->v, eText);
  }
  return gpudsColApply(t->t.op, tag, t->v.tag, o)!=0;
}

/* Free what term t holds (its constant's copy, its IN list). */
void gpudsTermFree(GpudsColTerm *t){
  int j;
  sqlite3_free((void*)t->v.z);
  free(t->aInTag);
  free(t->aInVal);
  for(j=0; j<t->nInOther; j++) sqlite3_free((void*)t->aInOther[j].z);
  free(t->aInOther);
  memset(t, 0, sizeof(*t));
}
