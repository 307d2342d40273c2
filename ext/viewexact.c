/*
** viewexact.c -- a view's rows evaluated one by one on their records,
** exactly as SQLite evaluates its SELECT: the filter, the group keys (text
** compared in full, text turned into numbers by SQLite itself), and every
** aggregate stepped as SQLite's own (func.c of 3.40): sum() an integer
** until a non-integer comes, "integer overflow" if the running integer
** sum overflows before one does; min() and max() keep the first row of
** their extreme; count(DISTINCT) by SQLite's comparison.
**
** It serves the rows a column set does not answer for (the keys changed
** since it was built, the write buffer's, and the rows it left over), the
** groups whose result depends on the order of their rows (computed again
** from all of them), and whole views where the set has no aggregation.
** Rows come in key order, the order SQLite's scan of the table takes.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "view_int.h"
#include "gpuds_mix.h"
#include <string.h>
#include <stdlib.h>

/* ------------------------------------------------------------- values */

/* Run pStmt (its parameters bound) for its one value: *pTag, *pVal as a
** column set holds a number, or NULL.  A statement of arithmetic gives no
** text. */
static int stmtNumber(sqlite3_stmt *pStmt, uint8_t *pTag, uint64_t *pVal){
  int rc = sqlite3_step(pStmt);
  *pTag = GPUDS_TAG_NULL; *pVal = 0;
  if( rc==SQLITE_ROW ){
    switch( sqlite3_column_type(pStmt, 0) ){
      case SQLITE_INTEGER: *pTag = GPUDS_TAG_INT; *pVal = (uint64_t)sqlite3_column_int64(pStmt, 0); break;
      case SQLITE_FLOAT:   *pTag = GPUDS_TAG_REAL; *pVal = gpudsColReal(sqlite3_column_double(pStmt, 0)); break;
    }
    rc = SQLITE_OK;
  }else if( rc==SQLITE_DONE ){
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  return rc;
}

/* Prepare *ppStmt from zSql if not yet. */
static int stmtReady(VRun *r, sqlite3_stmt **ppStmt, const char *zSql){
  if( *ppStmt ) return SQLITE_OK;
  return sqlite3_prepare_v2(r->p->db, zSql, -1, ppStmt, 0);
}

/* The value of expression e in the row (key, hRow): *pTag, *pVal as a
** column set holds it (text and blobs: their 8 bytes; hRow has them). */
int gpudsViewExpr(VRun *r, const GpudsVExpr *e, int64_t key, uint64_t hRow,
                  uint8_t *pTag, uint64_t *pVal){
  uint8_t tag;
  uint64_t val;
  sqlite3_stmt *pStmt;
  int rc, bBlob = 0;
  if( e->iCol==0 ){
    tag = GPUDS_TAG_INT; val = (uint64_t)key;
  }else{
    gpudsRowColVal(gpudsRowOf(hRow), e->iCol-1, r->eText, &tag, &val);
  }
  if( e->op==GPUDS_AGGKEY_COL ){ *pTag = tag; *pVal = val; return SQLITE_OK; }
  if( gpudsColDivMod(e->op, e->n, tag, val, pTag, pVal) ) return SQLITE_OK;
  /* text or a blob: SQLite makes a number of it (and divides) */
  if( e->op==GPUDS_AGGKEY_DIV ){
    rc = stmtReady(r, &r->pDiv, "SELECT CASE WHEN ?3 THEN CAST(?1 AS BLOB) ELSE ?1 END / ?2");
    pStmt = r->pDiv;
  }else{
    rc = stmtReady(r, &r->pMod, "SELECT CASE WHEN ?3 THEN CAST(?1 AS BLOB) ELSE ?1 END % ?2");
    pStmt = r->pMod;
  }
  if( rc ) return rc;
  rc = gpudsRowBind(gpudsRowOf(hRow), e->iCol-1, pStmt, 1, r->eText, &bBlob);
  if( rc==SQLITE_OK ) rc = sqlite3_bind_int64(pStmt, 2, e->n);
  if( rc==SQLITE_OK ) rc = sqlite3_bind_int(pStmt, 3, bBlob);
  if( rc==SQLITE_OK ) rc = stmtNumber(pStmt, pTag, pVal);
  return rc;
}

/* Column iCol (the table's numbering, non-key) of record hRow, a TEXT or
** BLOB, as sum() reads it (sqlite3_value_numeric_type): *pbInt and *pi
** for an integer, else *pr. */
int gpudsViewSumValue(VRun *r, uint64_t hRow, int iCol, int *pbInt, int64_t *pi, double *pr){
  int rc = stmtReady(r, &r->pNum, "SELECT CASE WHEN ?2 THEN CAST(?1 AS BLOB) ELSE ?1 END");
  int bBlob = 0;
  *pbInt = 0; *pi = 0; *pr = 0.0;
  if( rc ) return rc;
  rc = gpudsRowBind(gpudsRowOf(hRow), iCol-1, r->pNum, 1, r->eText, &bBlob);
  if( rc==SQLITE_OK ) rc = sqlite3_bind_int(r->pNum, 2, bBlob);
  if( rc ) return rc;
  rc = sqlite3_step(r->pNum);
  if( rc==SQLITE_ROW ){
    sqlite3_value *v = sqlite3_value_dup(sqlite3_column_value(r->pNum, 0));
    rc = SQLITE_OK;
    if( v==0 ) rc = SQLITE_NOMEM;
    else{
      if( sqlite3_value_numeric_type(v)==SQLITE_INTEGER ){
        *pbInt = 1; *pi = sqlite3_value_int64(v);
      }else{
        *pr = sqlite3_value_double(v);
      }
      sqlite3_value_free(v);
    }
  }
  sqlite3_reset(r->pNum);
  return rc==SQLITE_DONE ? SQLITE_OK : rc;
}

/* The canonical key tuple of row (key, hRow) into kt, kv. */
int gpudsViewRowKeys(VRun *r, int64_t key, uint64_t hRow, uint8_t *kt, uint64_t *kv){
  int k, rc;
  for(k=0; k<r->d->nKey; k++){
    uint8_t tag;
    uint64_t val;
    rc = gpudsViewExpr(r, &r->d->aKey[k], key, hRow, &tag, &val);
    if( rc ) return rc;
    gpudsColCanon(tag, val, &kt[k], &kv[k]);
  }
  return SQLITE_OK;
}

/* Rows hA and hB have the canonical key tuple (kt, kv): are their text and
** blob keys equal in full as well? */
int gpudsViewKeysSame(VRun *r, const uint8_t *kt, const uint64_t *kv, uint64_t hA,
                      uint64_t hB){
  int k;
  (void)kv;
  for(k=0; k<r->d->nKey; k++){
    const GpudsVExpr *e = &r->d->aKey[k];
    if( e->op!=GPUDS_AGGKEY_COL || e->iCol==0 || gpudsColClass(kt[k])<2 ) continue;
    if( hA==hB ) continue;
    if( gpudsRowColCmpRows(gpudsRowOf(hA), gpudsRowOf(hB), e->iCol-1, r->eText)!=0 ) return 0;
  }
  return 1;
}

/* Does row (key, hRow) pass the view's WHERE, exactly? */
int gpudsViewFilter(VRun *r, int64_t key, uint64_t hRow){
  int i;
  if( r->bEmpty || key<r->lo || key>r->hi ) return 0;
  for(i=0; i<r->nTerm; i++){
    const GpudsColTerm *t = &r->aTerm[i];
    if( t->t.iCol<0 ){
      int m = t->t.op==GPUDS_CMP_IN
            ? gpudsColMatchIn(GPUDS_TAG_INT, (uint64_t)key, t->t.tag, t->aInTag, t->aInVal, (uint32_t)t->nIn)
            : gpudsColMatch(GPUDS_TAG_INT, (uint64_t)key, t->t.op, t->v.tag, t->v.val);
      if( m==0 ) return 0;
    }else if( !gpudsTermHolds(gpudsRowOf(hRow), t, r->eText) ){
      return 0;
    }
  }
  return 1;
}

/* Values a and b of column iCol (the table's numbering) compared as
** SQLite compares them (text and blobs in full, on their rows ha, hb):
** < 0, 0, > 0. */
int gpudsXCompare(VRun *r, int iCol, uint8_t ta, uint64_t va, uint64_t ha,
                  uint8_t tb, uint64_t vb, uint64_t hb){
  int ca = gpudsColClass(ta), cb = gpudsColClass(tb);
  if( ca!=cb ) return ca<cb ? -1 : 1;
  if( ca==0 ) return 0;
  if( ca==1 ){
    int o = gpudsColCompare(ta, va, tb, vb);
    return o<0 ? -1 : o>0;
  }
  if( iCol==0 ) return 0;
  return gpudsRowColCmpRows(gpudsRowOf(ha), gpudsRowOf(hb), iCol-1, r->eText);
}

/* --------------------------------------------------------- distinct sets */

typedef struct DVal { uint64_t val, hRow; uint8_t tag, bUsed; } DVal;
typedef struct DSet { DVal *a; uint64_t nSlot; int64_t n; } DSet;

/* Add value (tag, val) of row hRow (column iCol) to set d: 1 if it is new,
** 0 if an equal value is in it, < 0 out of memory. */
static int dsetAdd(VRun *r, DSet *d, int iCol, uint8_t tag, uint64_t val, uint64_t hRow){
  uint64_t h;
  uint8_t ct;
  uint64_t cv;
  gpudsColCanon(tag, val, &ct, &cv);
  if( (uint64_t)(d->n+1)*2 > d->nSlot ){
    uint64_t nNew = d->nSlot ? d->nSlot*2 : 16, i;
    DVal *a = calloc(nNew, sizeof(DVal));
    if( a==0 ) return -1;
    for(i=0; i<d->nSlot; i++){
      if( !d->a[i].bUsed ) continue;
      h = gpudsMix64(d->a[i].val ^ d->a[i].tag) & (nNew-1);
      while( a[h].bUsed ) h = (h+1) & (nNew-1);
      a[h] = d->a[i];
    }
    free(d->a);
    d->a = a; d->nSlot = nNew;
  }
  h = gpudsMix64(cv ^ ct) & (d->nSlot-1);
  while( d->a[h].bUsed ){
    DVal *e = &d->a[h];
    if( e->tag==ct && e->val==cv
     && (gpudsColClass(ct)<2 || gpudsXCompare(r, iCol, ct, cv, e->hRow, ct, cv, hRow)==0) ){
      return 0;
    }
    h = (h+1) & (d->nSlot-1);
  }
  d->a[h].tag = ct; d->a[h].val = cv; d->a[h].hRow = hRow; d->a[h].bUsed = 1;
  d->n++;
  return 1;
}

/* ------------------------------------------------------------- groups */

static uint64_t tupleHash(const uint8_t *kt, const uint64_t *kv, int n){
  uint64_t h = 0;
  int k;
  for(k=0; k<n; k++) h = gpudsMix64(h ^ kv[k] ^ ((uint64_t)kt[k]<<56)) + (uint64_t)k;
  return h;
}

/* Start an evaluator of view r. */
int gpudsXInit(XEval *x, VRun *r){
  memset(x, 0, sizeof(*x));
  x->r = r;
  x->nHash = 64;
  x->aHash = calloc(x->nHash, sizeof(XGroup*));
  return x->aHash ? SQLITE_OK : SQLITE_NOMEM;
}

/* Free an evaluator and its groups. */
void gpudsXFree(XEval *x){
  int64_t i;
  int f;
  for(i=0; i<x->nGroup; i++){
    XGroup *g = x->aGroup[i];
    for(f=0; f<x->r->d->nAgg; f++){
      DSet *d = (DSet*)g->aAgg[f].pDist;
      if( d ){ free(d->a); free(d); }
    }
    free(g->aAgg);
    free(g);
  }
  free(x->aGroup);
  free(x->aHash);
  memset(x, 0, sizeof(*x));
}

/* The group of key tuple (kt, kv) that row (key, hRow) belongs to: found
** (its text keys compared in full), or made where bMake (NULL where not,
** and out of memory: x's rc then says). */
XGroup *gpudsXFind(XEval *x, const uint8_t *kt, const uint64_t *kv, int64_t key,
                   uint64_t hRow, int bMake){
  int nKey = x->r->d->nKey;
  uint64_t h = tupleHash(kt, kv, nKey) & (x->nHash-1);
  XGroup *g;
  for(g=x->aHash[h]; g; g=g->pNext){
    if( memcmp(g->kt, kt, (size_t)nKey)==0 && memcmp(g->kv, kv, (size_t)nKey*8)==0
     && gpudsViewKeysSame(x->r, kt, kv, g->hId, hRow) ) return g;
  }
  if( !bMake ) return 0;
  if( x->nGroup==x->nAlloc ){
    int64_t n = x->nAlloc ? x->nAlloc*2 : 64;
    XGroup **a = realloc(x->aGroup, (size_t)n*sizeof(XGroup*));
    if( a==0 ) return 0;
    x->aGroup = a; x->nAlloc = n;
  }
  if( (uint64_t)x->nGroup*2 >= x->nHash ){
    uint64_t nNew = x->nHash*2;
    XGroup **aH = calloc(nNew, sizeof(XGroup*));
    int64_t i;
    if( aH==0 ) return 0;
    for(i=0; i<x->nGroup; i++){
      XGroup *p = x->aGroup[i];
      uint64_t hh = tupleHash(p->kt, p->kv, nKey) & (nNew-1);
      p->pNext = aH[hh]; aH[hh] = p;
    }
    free(x->aHash);
    x->aHash = aH; x->nHash = nNew;
    h = tupleHash(kt, kv, nKey) & (x->nHash-1);
  }
  g = calloc(1, sizeof(XGroup));
  if( g==0 ) return 0;
  g->aAgg = calloc((size_t)(x->r->d->nAgg ? x->r->d->nAgg : 1), sizeof(XAgg));
  if( g->aAgg==0 ){ free(g); return 0; }
  memcpy(g->kt, kt, (size_t)nKey);
  memcpy(g->kv, kv, (size_t)nKey*8);
  g->kId = key; g->hId = hRow;
  g->iBack = -1;
  g->pNext = x->aHash[h];
  x->aHash[h] = g;
  x->aGroup[x->nGroup++] = g;
  return g;
}

/* Add row (key, hRow) (rows come in key order) to group g's state. */
static int groupStep(XEval *x, XGroup *g, int64_t key, uint64_t hRow){
  VRun *r = x->r;
  const GpudsViewDef *d = r->d;
  int f, rc;
  if( g->rows++==0 ){ g->kFirst = key; g->hFirst = hRow; }
  g->kLast = key; g->hLast = hRow;
  for(f=0; f<d->nAgg; f++){
    const GpudsVAgg *pA = &d->aAgg[f];
    XAgg *A = &g->aAgg[f];
    uint8_t tag;
    uint64_t val;
    if( pA->eFn==VAGG_COUNTSTAR ) continue;
    if( pA->e.iCol==0 ){ tag = GPUDS_TAG_INT; val = (uint64_t)key; }
    else gpudsRowColVal(gpudsRowOf(hRow), pA->e.iCol-1, r->eText, &tag, &val);
    if( tag==GPUDS_TAG_NULL ) continue;
    switch( pA->eFn ){
      case VAGG_COUNT:
        A->n++;
        break;
      case VAGG_COUNTD: {
        int bNew;
        if( A->pDist==0 ){
          A->pDist = calloc(1, sizeof(DSet));
          if( A->pDist==0 ) return SQLITE_NOMEM;
        }
        bNew = dsetAdd(r, (DSet*)A->pDist, pA->e.iCol, tag, val, hRow);
        if( bNew<0 ) return SQLITE_NOMEM;
        A->n += bNew;
        break;
      }
      case VAGG_SUM: case VAGG_TOTAL: case VAGG_AVG: {
        int bInt = tag==GPUDS_TAG_INT;
        int64_t i = (int64_t)val;
        double v = 0.0;
        A->n++;
        if( tag==GPUDS_TAG_REAL ) v = gpudsColDouble(val);
        else if( tag!=GPUDS_TAG_INT ){
          rc = gpudsViewSumValue(r, hRow, pA->e.iCol, &bInt, &i, &v);
          if( rc ) return rc;
        }
        if( bInt ){
          A->iSum += i;
          if( i>0 ) A->iPos = A->iPos > INT64_MAX - i ? INT64_MAX : A->iPos + i;
          if( i<0 ) A->iNeg = A->iNeg < INT64_MIN - i ? INT64_MIN : A->iNeg + i;
          if( !A->bApprox ){
            if( __builtin_add_overflow(A->iSeq, i, &A->iSeq) ){ A->bOvfl = 1; A->bApprox = 1; }
          }
        }else{
          A->nNonInt++;
          A->bApprox = 1;
          gpudsColKbnAdd(&A->s, &A->c, v);
        }
        break;
      }
      case VAGG_MIN: case VAGG_MAX: {
        int o;
        A->n++;
        if( A->tag==GPUDS_TAG_NULL ){
          A->tag = tag; A->val = val; A->key = key; A->hRow = hRow;
          break;
        }
        o = gpudsXCompare(r, pA->e.iCol, tag, val, hRow, A->tag, A->val, A->hRow);
        if( pA->eFn==VAGG_MAX ? o>0 : o<0 ){
          A->tag = tag; A->val = val; A->key = key; A->hRow = hRow;
        }
        break;
      }
    }
  }
  return SQLITE_OK;
}

/* Row (key, hRow), which passed the filter, into its group (*ppG, if not
** NULL): made if new where bMake, else the row is passed over (*ppG NULL)
** where its group is not one of x's. */
int gpudsXRow(XEval *x, int64_t key, uint64_t hRow, int bMake, XGroup **ppG){
  uint8_t kt[GPUDS_AGG_KEY_MAX];
  uint64_t kv[GPUDS_AGG_KEY_MAX];
  XGroup *g;
  int rc = gpudsViewRowKeys(x->r, key, hRow, kt, kv);
  if( ppG ) *ppG = 0;
  if( rc ) return rc;
  g = gpudsXFind(x, kt, kv, key, hRow, bMake);
  if( g==0 ) return bMake ? SQLITE_NOMEM : SQLITE_OK;
  if( ppG ) *ppG = g;
  return groupStep(x, g, key, hRow);
}
