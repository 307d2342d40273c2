/*
** plan.c -- query planning (xBestIndex) and the decoding of a plan's
** arguments in xFilter.
**
** A plan is a list of up to 7 xFilter arguments, each tagged with what it
** is; the tags are packed 4 bits each into idxNum, with two flag bits:
**   PLAN_EQ   key = ?            PLAN_IN   key IN (...) as one batch
**   PLAN_GT/GE/LT/LE  a bound    PLAN_LIMIT, PLAN_OFFSET
**   PLAN_DESC (bit 28)  produce keys in descending order
** idxStr repeats the plan in words for EXPLAIN QUERY PLAN.
**
** Every key constraint the plan takes is omitted (the plan is exact, with
** SQLite's comparison rules for non-integer values); LIMIT and OFFSET are
** taken as a hint for the size of the first page only (not omitted, and the
** cursor never stops early), so SQLite still applies them: OFFSET stays right
** on every SQLite version, and so does a LIMIT that SQLite 3.40 offers while
** it still filters by a term it did not pass (WHERE d = k).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "plan.h"
#include <string.h>
#include <math.h>
#include <stdlib.h>

#define PLAN_EQ     1
#define PLAN_IN     2
#define PLAN_GT     3
#define PLAN_GE     4
#define PLAN_LT     5
#define PLAN_LE     6
#define PLAN_LIMIT  7
#define PLAN_OFFSET 8
#define PLAN_MAXARG 7
#define PLAN_DESC   (1<<28)

#ifndef SQLITE_INDEX_CONSTRAINT_LIMIT
# define SQLITE_INDEX_CONSTRAINT_LIMIT  73
# define SQLITE_INDEX_CONSTRAINT_OFFSET 74
#endif

/* True if the running SQLite has sqlite3_vtab_in() (3.38.0). */
static int haveVtabIn(void){
  return sqlite3_libversion_number()>=3038000;
}

/* True if constraint column iColumn is the key. */
static int isKeyColumn(int iColumn){
  return iColumn<0 || iColumn==0;
}

/* Choose a plan.  Always succeeds (a full scan is always possible). */
int gpudsBestIndex(GpudsTable *p, sqlite3_index_info *pInfo){
  int aiArg[PLAN_MAXARG];       /* constraint index for each argument */
  int aeArg[PLAN_MAXARG];       /* PLAN_xxx for each argument */
  int nArg = 0, i, iEq = -1, bIn = 0, nLo = 0, nHi = 0;
  int iLimit = -1, iOffset = -1, bAllUsed = 1;
  int bOrdered = p->eKind==GPUDS_ORDERED;
  double nRow = (double)p->pOps->xCount(p->pStore) + (double)p->wb.nOver;
  double rows, cost;
  sqlite3_str *pStr;
  const char *zKey = p->azCol[0];

  if( nRow<1 ) nRow = 1;
  /* Pass 1: the equality (or IN) on the key, preferring plain = over IN. */
  for(i=0; i<pInfo->nConstraint; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if( !c->usable || !isKeyColumn(c->iColumn) ) continue;
    if( c->op!=SQLITE_INDEX_CONSTRAINT_EQ ) continue;
    if( haveVtabIn() && sqlite3_vtab_in(pInfo, i, -1) ){
      if( iEq<0 ){ iEq = i; bIn = 1; }
    }else if( iEq<0 || bIn ){
      iEq = i; bIn = 0;
    }
  }
  if( iEq>=0 ){
    aiArg[nArg] = iEq;
    aeArg[nArg++] = bIn ? PLAN_IN : PLAN_EQ;
    if( bIn ) sqlite3_vtab_in(pInfo, iEq, 1);
  }
  /* Pass 2: bounds on the key, LIMIT and OFFSET. */
  for(i=0; i<pInfo->nConstraint; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    int e = 0;
    if( i==iEq ) continue;
    if( c->op==SQLITE_INDEX_CONSTRAINT_LIMIT ){ if( c->usable ) iLimit = i; continue; }
    if( c->op==SQLITE_INDEX_CONSTRAINT_OFFSET ){ if( c->usable ) iOffset = i; continue; }
    if( c->usable && isKeyColumn(c->iColumn) ){
      switch( c->op ){
        case SQLITE_INDEX_CONSTRAINT_GT: e = PLAN_GT; break;
        case SQLITE_INDEX_CONSTRAINT_GE: e = PLAN_GE; break;
        case SQLITE_INDEX_CONSTRAINT_LT: e = PLAN_LT; break;
        case SQLITE_INDEX_CONSTRAINT_LE: e = PLAN_LE; break;
      }
    }
    if( e && nArg<PLAN_MAXARG-2 ){
      aiArg[nArg] = i;
      aeArg[nArg++] = e;
      if( e==PLAN_GT || e==PLAN_GE ) nLo++; else nHi++;
    }else{
      bAllUsed = 0;
    }
  }

  /* Ordering: key order is produced by every plan (a hash table's scans
  ** sort their snapshot of the keys, its EQ/IN plans sort their keys). */
  if( pInfo->nOrderBy>=1 && isKeyColumn(pInfo->aOrderBy[0].iColumn) ){
    pInfo->orderByConsumed = 1;
    if( pInfo->aOrderBy[0].desc ) pInfo->idxNum |= PLAN_DESC;
  }
  /* LIMIT/OFFSET: a hint, usable when no row is filtered after us. */
  if( bAllUsed && (pInfo->nOrderBy==0 || pInfo->orderByConsumed) ){
    if( iLimit>=0 ){ aiArg[nArg] = iLimit; aeArg[nArg++] = PLAN_LIMIT; }
    if( iLimit>=0 && iOffset>=0 ){ aiArg[nArg] = iOffset; aeArg[nArg++] = PLAN_OFFSET; }
  }

  for(i=0; i<nArg; i++){
    pInfo->aConstraintUsage[aiArg[i]].argvIndex = i+1;
    pInfo->aConstraintUsage[aiArg[i]].omit =
        (aeArg[i]!=PLAN_LIMIT && aeArg[i]!=PLAN_OFFSET);
    pInfo->idxNum |= aeArg[i] << (4*i);
  }

  /* Costs: a point read costs about one probe, an IN list a batch of probes,
  ** a range its rows plus a descent, a scan every row.  A hash table
  ** streams a scan from every slot, however narrow the bounds. */
  if( iEq>=0 && !bIn ){
    rows = 1; cost = 1;
    pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  }else if( iEq>=0 ){
    rows = 10; cost = 10;
  }else if( bOrdered && (nLo || nHi) ){
    rows = nRow / ((nLo && nHi) ? 16 : 4);
    if( rows<1 ) rows = 1;
    cost = rows + log2(nRow+1);
  }else{
    rows = nRow; cost = nRow + 10;
  }
  pInfo->estimatedRows = (sqlite3_int64)rows;
  pInfo->estimatedCost = cost;

  /* idxStr: the plan in words. */
  pStr = sqlite3_str_new(0);
  sqlite3_str_appendf(pStr, "%s", bOrdered ? "gfsl" : "gpuhash");
  if( nArg==0 || (aeArg[0]==PLAN_LIMIT) ) sqlite3_str_appendf(pStr, " full scan");
  for(i=0; i<nArg; i++){
    static const char *azOp[] = { "", "=?", " IN (...) batch", ">?", ">=?", "<?", "<=?" };
    if( aeArg[i]==PLAN_LIMIT ){ sqlite3_str_appendf(pStr, " limit"); continue; }
    if( aeArg[i]==PLAN_OFFSET ){ sqlite3_str_appendf(pStr, " offset"); continue; }
    sqlite3_str_appendf(pStr, "%s %s%s", i ? " AND" : "", zKey, azOp[aeArg[i]]);
  }
  if( pInfo->orderByConsumed ){
    sqlite3_str_appendf(pStr, " ORDER BY %s%s", zKey,
                        (pInfo->idxNum & PLAN_DESC) ? " DESC" : "");
  }
  pInfo->idxStr = sqlite3_str_finish(pStr);
  pInfo->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

/* 2^63 as a double */
#define TWO63 9223372036854775808.0

/* Apply a bound "key OP v" to [*pLo,*pHi], with SQLite's comparison rules
** between an INTEGER PRIMARY KEY and a value of any type.  Returns 0 if no
** key can satisfy it, 1 otherwise. */
static int applyBound(int eOp, sqlite3_value *v, int64_t *pLo, int64_t *pHi){
  int eType = sqlite3_value_type(v);
  sqlite3_value *pDup = 0;
  int bRet = 1;
  if( eType==SQLITE_TEXT ){
    /* The key column has INTEGER affinity: numeric-looking text compares
    ** as a number. */
    pDup = sqlite3_value_dup(v);
    if( pDup==0 ) return 1;       /* cannot narrow; the bound is left out */
    eType = sqlite3_value_numeric_type(pDup);
    v = pDup;
  }
  switch( eType ){
    case SQLITE_NULL: bRet = 0; break;
    case SQLITE_INTEGER: {
      int64_t x = sqlite3_value_int64(v);
      switch( eOp ){
        case PLAN_GT: if( x==INT64_MAX ) bRet = 0; else if( x+1>*pLo ) *pLo = x+1; break;
        case PLAN_GE: if( x>*pLo ) *pLo = x; break;
        case PLAN_LT: if( x==INT64_MIN ) bRet = 0; else if( x-1<*pHi ) *pHi = x-1; break;
        case PLAN_LE: if( x<*pHi ) *pHi = x; break;
      }
      break;
    }
    case SQLITE_FLOAT: {
      double r = sqlite3_value_double(v);
      if( r!=r ){ bRet = 0; break; }                    /* NaN */
      /* Exact in the integer domain: floor()/ceil() of a double are exact,
      ** and adding 1 is done on the int64. */
      if( eOp==PLAN_GT || eOp==PLAN_LE ){
        double f = floor(r);
        if( f>=TWO63 ){ if( eOp==PLAN_GT ) bRet = 0; break; }
        if( f<-TWO63 ){ if( eOp==PLAN_LE ) bRet = 0; break; }
        if( eOp==PLAN_GT ){
          int64_t x = (int64_t)f;               /* key > r  <=>  key >= x+1 */
          if( x==INT64_MAX ){ bRet = 0; break; }
          if( x+1>*pLo ) *pLo = x+1;
        }else{
          if( (int64_t)f<*pHi ) *pHi = (int64_t)f;   /* key <= floor(r) */
        }
      }else{
        double c = ceil(r);
        if( c>=TWO63 ){ if( eOp==PLAN_GE ) bRet = 0; break; }
        if( c<-TWO63 ){ if( eOp==PLAN_LT ) bRet = 0; break; }
        if( eOp==PLAN_GE ){
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
      if( eOp==PLAN_GT || eOp==PLAN_GE ) bRet = 0;
      break;
  }
  sqlite3_value_free(pDup);
  return bRet;
}

/* The key that value v names, as an ordinary table's INTEGER PRIMARY KEY
** lookup decides: returns 1 and sets *pk, or 0 if v names no key. */
int gpudsValueToKey(sqlite3_value *v, int64_t *pk){
  int eType = sqlite3_value_type(v);
  sqlite3_value *pDup = 0;
  int bRet = 0;
  if( eType==SQLITE_INTEGER ){
    *pk = sqlite3_value_int64(v);
    return 1;
  }
  if( eType==SQLITE_TEXT ){
    pDup = sqlite3_value_dup(v);
    if( pDup==0 ) return 0;
    eType = sqlite3_value_numeric_type(pDup);
    v = pDup;
  }
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

/* qsort comparator for int64 keys. */
static int cmpKey(const void *a, const void *b){
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return x<y ? -1 : x>y;
}

/* Decode the arguments of plan idxNum into *pPlan.  Collects the keys of an
** EQ or IN plan (sorted, distinct, within the bounds).  The caller frees
** pPlan->aKey with sqlite3_free. */
int gpudsPlanDecode(int idxNum, int argc, sqlite3_value **argv, GpudsPlan *pPlan){
  int i;
  int64_t nLimit = -1, nOffset = 0;
  memset(pPlan, 0, sizeof(*pPlan));
  pPlan->lo = INT64_MIN;
  pPlan->hi = INT64_MAX;
  pPlan->bDesc = (idxNum & PLAN_DESC)!=0;
  pPlan->nHint = -1;
  for(i=0; i<argc && i<PLAN_MAXARG; i++){
    int e = (idxNum >> (4*i)) & 0xf;
    switch( e ){
      case PLAN_EQ: {
        int64_t k;
        pPlan->bList = 1;
        if( pPlan->aKey==0 ){
          pPlan->aKey = sqlite3_malloc64(8);
          if( pPlan->aKey==0 ) return SQLITE_NOMEM;
        }
        if( gpudsValueToKey(argv[i], &k) ){ pPlan->aKey[0] = k; pPlan->nKey = 1; }
        break;
      }
      case PLAN_IN: {
        sqlite3_value *pVal = 0;
        int64_t nAlloc = 0;
        int rc;
        pPlan->bList = 1;
        for(rc = sqlite3_vtab_in_first(argv[i], &pVal);
            rc==SQLITE_OK && pVal;
            rc = sqlite3_vtab_in_next(argv[i], &pVal)){
          int64_t k;
          if( !gpudsValueToKey(pVal, &k) ) continue;
          if( pPlan->nKey==nAlloc ){
            int64_t *a;
            nAlloc = nAlloc ? nAlloc*2 : 64;
            a = sqlite3_realloc64(pPlan->aKey, nAlloc*8);
            if( a==0 ) return SQLITE_NOMEM;
            pPlan->aKey = a;
          }
          pPlan->aKey[pPlan->nKey++] = k;
        }
        if( rc!=SQLITE_OK && rc!=SQLITE_DONE ) return rc;
        break;
      }
      case PLAN_GT: case PLAN_GE: case PLAN_LT: case PLAN_LE:
        if( !applyBound(e, argv[i], &pPlan->lo, &pPlan->hi) ) pPlan->bEmpty = 1;
        break;
      case PLAN_LIMIT:
        if( sqlite3_value_type(argv[i])==SQLITE_INTEGER ) nLimit = sqlite3_value_int64(argv[i]);
        break;
      case PLAN_OFFSET:
        if( sqlite3_value_type(argv[i])==SQLITE_INTEGER ) nOffset = sqlite3_value_int64(argv[i]);
        break;
    }
  }
  if( pPlan->lo>pPlan->hi ) pPlan->bEmpty = 1;
  if( nLimit>=0 ){
    if( nOffset<0 ) nOffset = 0;
    pPlan->nHint = (nLimit > INT64_MAX - nOffset) ? -1 : nLimit + nOffset;
  }
  if( pPlan->bList && pPlan->nKey>0 ){
    /* Sort, drop duplicates and keys outside the bounds. */
    int64_t j, n = 0;
    if( pPlan->nKey>1 ) qsort(pPlan->aKey, (size_t)pPlan->nKey, 8, cmpKey);
    for(j=0; j<pPlan->nKey; j++){
      int64_t k = pPlan->aKey[j];
      if( k<pPlan->lo || k>pPlan->hi ) continue;
      if( n>0 && pPlan->aKey[n-1]==k ) continue;
      pPlan->aKey[n++] = k;
    }
    pPlan->nKey = n;
  }
  return SQLITE_OK;
}
