/*
** viewrun.c -- one evaluation of a gpuds_view: its SELECT over the table as
** the open transaction sees it, exactly as SQLite would answer it.
**
**   1. The operands of the WHERE terms: the operand statement (viewdef.c)
**      run with the parameters bound; each term's constant as SQLite
**      compares it with the column (its affinity applied: term.c).
**   2. Where a term on a column is one an equality index answers (=, IS,
**      IS NULL, a short IN list), the column set is first asked for the
**      rows that match, capped (the index path): if they are few, they and
**      the skipped keys' rows are evaluated on their records alone, every
**      group from its rows, and steps 2-4 are done.  A filter found past
**      the cap is remembered with the view.  Otherwise the column set
**      (colset.c, built if there is none) aggregates every row but the
**      skipped keys (those changed since it was built, the write
**      buffer's): xAgg, on the GPU beside a GPU store.  Text keys and
**      extremes use the set's 8 bytes; the values that stand for more than
**      one text (coltext.c) are left to the host.
**   3. The host evaluates the rows the set left over and those of the
**      skipped keys (looked up through the transaction) on their records
**      (viewexact.c), and merges them into the set's groups: counts add,
**      extremes compare exactly, integer sums add where their saturated
**      parts show that no partial sum can overflow.
**   4. A group whose answer depends on the order of its rows (an integer
**      sum near overflow, a count of distinct values with rows on both
**      sides, text extremes the set could not order) is computed again
**      from all its rows in key order.  Without an aggregating column set
**      (GPUDS_MISUSE) every group is.
** The result is materialised as cells; text and blobs stay in their
** records (the caller holds the table's rows while it reads them).
*/
#include "gpuds_int.h"
#include "runfmt.h"
SQLITE_EXTENSION_INIT3
#include "view_int.h"
#include "schema.h"
#include "gpuds_mix.h"
#include "gpuds_search.h"
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>

/* sum()'s "integer overflow", inside this file */
#define RC_OVERFLOW (SQLITE_ERROR | (0x7e<<8))

/* ------------------------------------------------------------- terms */

/* The constant v as SQLite compares it with column iCol of p: a numeric
** column applies NUMERIC affinity to it, a TEXT column makes a number its
** text, others take it as it is. */
static int constOf(VRun *r, int iCol, sqlite3_value *v, GpudsValue *pOut){
  char aff = r->p->aAff[iCol];
  int eType = sqlite3_value_type(v);
  if( aff==GPUDS_AFF_TEXT && (eType==SQLITE_INTEGER || eType==SQLITE_FLOAT) ){
    memset(pOut, 0, sizeof(*pOut));
    return gpudsTermConstText(v, r->eText, pOut);
  }
  return gpudsTermConst(v, aff, r->eText, pOut);
}

/* A new term of r on column iCol of the table (0: the key). */
static GpudsColTerm *termAdd(VRun *r, int iCol){
  GpudsColTerm *t = sqlite3_realloc64(r->aTerm, sizeof(GpudsColTerm)*(size_t)(r->nTerm+1));
  if( t==0 ) return 0;
  r->aTerm = t;
  t = &r->aTerm[r->nTerm++];
  memset(t, 0, sizeof(*t));
  t->t.iCol = iCol-1;
  return t;
}

/* A comparison term "column op v" (op GPUDS_CMP_xxx) of r. */
static int termCmp(VRun *r, int iCol, int op, sqlite3_value *v){
  GpudsColTerm *t = termAdd(r, iCol);
  int rc;
  if( t==0 ) return SQLITE_NOMEM;
  rc = constOf(r, iCol, v, &t->v);
  if( rc ) return rc;
  t->t.op = op;
  t->t.tag = t->v.tag;
  t->t.val = t->v.val;
  if( iCol==0 && op>=GPUDS_CMP_LT && op<=GPUDS_CMP_GE ){
    if( !gpudsKeyBound(op, v, &r->lo, &r->hi) ) r->bEmpty = 1;
  }
  if( iCol==0 && op==GPUDS_CMP_EQ ){
    if( !gpudsKeyBound(GPUDS_CMP_GE, v, &r->lo, &r->hi)
     || !gpudsKeyBound(GPUDS_CMP_LE, v, &r->lo, &r->hi) ) r->bEmpty = 1;
  }
  return SQLITE_OK;
}

/* The values of an IN list, one by one, for gpudsTermIn. */
typedef struct InList { sqlite3_value **ap; int n, i; } InList;
static int inListNext(void *pCtx, sqlite3_value **ppVal){
  InList *l = (InList*)pCtx;
  *ppVal = l->i<l->n ? l->ap[l->i++] : 0;
  return SQLITE_OK;
}

/* The view's WHERE terms with their operands apOp: r->aTerm, lo, hi,
** bEmpty. */
static int termsMake(VRun *r, sqlite3_value **apOp){
  const GpudsViewDef *d = r->d;
  int i, rc = SQLITE_OK;
  r->lo = INT64_MIN; r->hi = INT64_MAX;
  for(i=0; i<d->nTerm && rc==SQLITE_OK && !r->bEmpty; i++){
    const GpudsVTerm *vt = &d->aTerm[i];
    int iCol = vt->e.iCol;
    sqlite3_value *v = vt->nArg ? apOp[vt->iArg] : 0;
    int bNull = v && sqlite3_value_type(v)==SQLITE_NULL;
    switch( vt->eOp ){
      case VTERM_ISNULL: case VTERM_NOTNULL: {
        GpudsColTerm *t = termAdd(r, iCol);
        if( t==0 ){ rc = SQLITE_NOMEM; break; }
        t->t.op = vt->eOp==VTERM_ISNULL ? GPUDS_CMP_ISNULL : GPUDS_CMP_NOTNULL;
        break;
      }
      case VTERM_IS: case VTERM_ISNOT:
        if( bNull ){
          GpudsColTerm *t = termAdd(r, iCol);
          if( t==0 ){ rc = SQLITE_NOMEM; break; }
          t->t.op = vt->eOp==VTERM_IS ? GPUDS_CMP_ISNULL : GPUDS_CMP_NOTNULL;
        }else{
          rc = termCmp(r, iCol, vt->eOp==VTERM_IS ? GPUDS_CMP_EQ : GPUDS_CMP_ISNOT, v);
        }
        break;
      case VTERM_BETWEEN:
        if( bNull || sqlite3_value_type(apOp[vt->iArg+1])==SQLITE_NULL ){ r->bEmpty = 1; break; }
        rc = termCmp(r, iCol, GPUDS_CMP_GE, v);
        if( rc==SQLITE_OK ) rc = termCmp(r, iCol, GPUDS_CMP_LE, apOp[vt->iArg+1]);
        break;
      case VTERM_IN: {
        InList l;
        GpudsColTerm *t = termAdd(r, iCol);
        if( t==0 ){ rc = SQLITE_NOMEM; break; }
        l.ap = &apOp[vt->iArg]; l.n = vt->nArg; l.i = 0;
        rc = gpudsTermIn(inListNext, &l, r->p->aAff[iCol], r->eText, 0,
                         r->p->aAff[iCol]==GPUDS_AFF_TEXT, t);
        t->t.op = GPUDS_CMP_IN;
        if( rc==SQLITE_OK && t->nIn==0 ) r->bEmpty = 1;     /* NULLs only, or none */
        break;
      }
      default: {
        static const int aOp[] = { 0, GPUDS_CMP_EQ, 0, GPUDS_CMP_NE, 0, GPUDS_CMP_LT,
                                   GPUDS_CMP_LE, GPUDS_CMP_GT, GPUDS_CMP_GE };
        if( bNull ){ r->bEmpty = 1; break; }
        rc = termCmp(r, iCol, aOp[vt->eOp], v);
        break;
      }
    }
  }
  if( r->lo>r->hi ) r->bEmpty = 1;
  return rc;
}

/* --------------------------------------------------------- the output */

/* Room for one more row of cells; its cells, or NULL out of memory. */
static GpudsVCell *outRow(GpudsViewOut *o){
  GpudsVCell *c;
  if( o->nRow==o->nAlloc ){
    int64_t n = o->nAlloc ? o->nAlloc*2 : 16;
    c = realloc(o->aCell, (size_t)n*(size_t)(o->nCol ? o->nCol : 1)*sizeof(GpudsVCell));
    if( c==0 ) return 0;
    o->aCell = c; o->nAlloc = n;
  }
  c = &o->aCell[o->nRow*o->nCol];
  memset(c, 0, sizeof(GpudsVCell)*(size_t)o->nCol);
  o->nRow++;
  return c;
}

/* Free the cells of an evaluation. */
void gpudsViewOutFree(GpudsViewOut *o){
  free(o->aCell);
  o->aCell = 0; o->nRow = o->nAlloc = 0;
}

/* Cell *c := value (tag, val) of column iCol (the table's numbering) of
** row hRow: a number or NULL as it is, text and blobs read from the row. */
static void cellValue(GpudsVCell *c, uint8_t tag, uint64_t val, int iCol, uint64_t hRow){
  switch( tag ){
    case GPUDS_TAG_INT:  c->eType = SQLITE_INTEGER; c->u.i = (int64_t)val; break;
    case GPUDS_TAG_REAL: c->eType = SQLITE_FLOAT; c->u.r = gpudsColDouble(val); break;
    case GPUDS_TAG_TEXT: case GPUDS_TAG_BLOB:
      c->eType = VCELL_ROW; c->hRow = hRow; c->iCol = iCol-1; break;
    default: c->eType = SQLITE_NULL; break;
  }
}

/* A REAL result: NULL where it is not a number (SQLite's too). */
static void cellReal(GpudsVCell *c, double r){
  if( r!=r ){ c->eType = SQLITE_NULL; return; }
  c->eType = SQLITE_FLOAT; c->u.r = r;
}

/* The exact sum i + (s, c) as a double (a compensated sum of the parts). */
static double sumReal(__int128 i, double s, double c){
  double hi = (double)i, lo;
  __int128 rem;
  if( hi>=1.7e38 || hi<=-1.7e38 ){ lo = 0.0; }
  else{ rem = i - (__int128)hi; lo = (double)rem; }
  gpudsColKbnAdd(&s, &c, hi);
  gpudsColKbnAdd(&s, &c, lo);
  return (c==c && c-c==0.0) ? s + c : s;
}

/* A group's final state, whatever computed it. */
typedef struct FAgg {
  int64_t n, nNonInt;
  __int128 iSum;
  double s, c;
  int bOvfl;
  uint8_t tag; uint64_t val; int64_t key; uint64_t hRow;
} FAgg;

/* Write the result row of a group: rows, its representative row (key,
** hRow), its aggregates aF.  SQLITE_ERROR for sum()'s overflow. */
static int groupOut(VRun *r, GpudsViewOut *o, int64_t nRows, int64_t kRep, uint64_t hRep,
                    const FAgg *aF, const uint8_t *aRepTag, const uint64_t *aRepVal,
                    int64_t nStride){
  const GpudsViewDef *d = r->d;
  GpudsVCell *c = outRow(o);
  int i, rc;
  if( c==0 ) return SQLITE_NOMEM;
  for(i=0; i<d->nCol; i++){
    const GpudsVCol *pc = &d->aCol[i];
    if( pc->eKind==VCOL_AGG ){
      const GpudsVAgg *pA = &d->aAgg[pc->i];
      const FAgg *F = &aF[pc->i];
      switch( pA->eFn ){
        case VAGG_COUNTSTAR: c[i].eType = SQLITE_INTEGER; c[i].u.i = nRows; break;
        case VAGG_COUNT: case VAGG_COUNTD: c[i].eType = SQLITE_INTEGER; c[i].u.i = F->n; break;
        case VAGG_SUM:
          if( F->n==0 ){ c[i].eType = SQLITE_NULL; break; }
          if( F->bOvfl ) return RC_OVERFLOW;
          if( F->nNonInt>0 ) cellReal(&c[i], sumReal(F->iSum, F->s, F->c));
          else{ c[i].eType = SQLITE_INTEGER; c[i].u.i = (int64_t)F->iSum; }
          break;
        case VAGG_TOTAL:
          cellReal(&c[i], F->n ? sumReal(F->iSum, F->s, F->c) : 0.0);
          break;
        case VAGG_AVG:
          if( F->n==0 ) c[i].eType = SQLITE_NULL;
          else cellReal(&c[i], sumReal(F->iSum, F->s, F->c)/(double)F->n);
          break;
        case VAGG_MIN: case VAGG_MAX:
          cellValue(&c[i], F->tag, F->val, pA->e.iCol, F->hRow);
          break;
      }
    }else if( nRows==0 ){
      c[i].eType = SQLITE_NULL;
    }else{
      uint8_t tag;
      uint64_t val;
      const GpudsVExpr *e = &d->aKey[pc->i];
      if( pc->eKind==VCOL_KEY && aRepTag ){
        /* the set gave the key column's value in the representative */
        uint8_t t0 = aRepTag[pc->i*nStride];
        uint64_t v0 = aRepVal[pc->i*nStride];
        if( e->op==GPUDS_AGGKEY_COL ){ tag = t0; val = v0; }
        else if( !gpudsColDivMod(e->op, e->n, t0, v0, &tag, &val) ){
          rc = gpudsViewExpr(r, e, kRep, hRep, &tag, &val);
          if( rc ) return rc;
        }
      }else{
        if( pc->eKind==VCOL_BARE ) e = &pc->e;
        rc = gpudsViewExpr(r, e, kRep, hRep, &tag, &val);
        if( rc ) return rc;
      }
      if( e->op!=GPUDS_AGGKEY_COL && gpudsColClass(tag)>=2 ) tag = GPUDS_TAG_NULL;
      cellValue(&c[i], tag, val, e->iCol, hRep);
    }
  }
  return SQLITE_OK;
}

/* A group the host computed alone (all its rows, in key order): its row. */
static int xgroupOut(VRun *r, GpudsViewOut *o, const XGroup *g){
  const GpudsViewDef *d = r->d;
  FAgg aF[GPUDS_AGG_FN_MAX];
  int64_t kRep = g->kFirst;
  uint64_t hRep = g->hFirst;
  int f;
  memset(aF, 0, sizeof(aF));
  for(f=0; f<d->nAgg; f++){
    const XAgg *A = &g->aAgg[f];
    aF[f].n = A->n; aF[f].nNonInt = A->nNonInt; aF[f].iSum = A->iSum;
    aF[f].s = A->s; aF[f].c = A->c; aF[f].bOvfl = A->bOvfl;
    aF[f].tag = A->tag; aF[f].val = A->val; aF[f].key = A->key; aF[f].hRow = A->hRow;
  }
  if( d->iRepAgg>=0 ){
    const XAgg *A = &g->aAgg[d->iRepAgg];
    if( A->tag!=GPUDS_TAG_NULL ){ kRep = A->key; hRep = A->hRow; }
    else{ kRep = g->kLast; hRep = g->hLast; }
  }
  return groupOut(r, o, g->rows, kRep, hRep, aF, 0, 0, 0);
}

/* ------------------------------------------------- the set's groups */

/* The set's group of canonical key tuple (kt, kv) holding row hRow's text
** keys exactly: its number, or -1. */
static int64_t backFind(VRun *r, const gpuds_aggres *res, const uint8_t *kt,
                        const uint64_t *kv, uint64_t hRow){
  int64_t lo = 0, hi = res->nGroup, n = res->nGroup;
  int nKey = r->d->nKey;
  if( nKey==0 ) return n>0 ? 0 : -1;
  while( lo<hi ){
    int64_t mid = lo + (hi-lo)/2;
    int k, c = 0;
    for(k=0; k<nKey && c==0; k++){
      c = gpudsColGroupCmp(res->aKeyTag[k*n+mid], res->aKeyVal[k*n+mid], kt[k], kv[k]);
    }
    if( c==0 ){
      return gpudsViewKeysSame(r, kt, kv, res->aRepRow[mid], hRow) ? mid : -1;
    }
    if( c<0 ) lo = mid+1; else hi = mid;
  }
  return -1;
}

/* The final state of the set's group j merged with the host's group g
** (NULL: none): aF, the group's rows and representative.  *pbExact: the
** merge cannot be exact (the group must be computed again). */
static void backMerge(VRun *r, const gpuds_aggres *res, int64_t j, const XGroup *g,
                      FAgg *aF, int64_t *pnRows, int64_t *pkRep, uint64_t *phRep,
                      int *pbExact){
  const GpudsViewDef *d = r->d;
  int64_t n = res->nGroup;
  int f;
  *pbExact = 0;
  *pnRows = res->aRows[j] + (g ? g->rows : 0);
  *pkRep = res->aRepKey[j]; *phRep = res->aRepRow[j];
  if( g && d->iRepAgg<0 && (res->aRows[j]==0 || g->kFirst<*pkRep) ){
    *pkRep = g->kFirst; *phRep = g->hFirst;
  }
  memset(aF, 0, sizeof(FAgg)*(size_t)(d->nAgg ? d->nAgg : 1));
  for(f=0; f<d->nAgg; f++){
    const GpudsVAgg *pA = &d->aAgg[f];
    const XAgg *A = g ? &g->aAgg[f] : 0;
    FAgg *F = &aF[f];
    size_t o = (size_t)f*n + j;
    switch( pA->eFn ){
      case VAGG_COUNTSTAR: break;
      case VAGG_COUNT:
        F->n = res->aN[o] + (A ? A->n : 0);
        break;
      case VAGG_COUNTD:
        F->n = res->aN[o];
        if( A && A->n>0 ) *pbExact = 1;
        break;
      case VAGG_SUM: case VAGG_TOTAL: case VAGG_AVG: {
        int64_t pos = res->aPos[o], neg = res->aNeg[o];
        double s = res->aSum[o], c = res->aErr[o];
        if( A ){
          pos = A->iPos > INT64_MAX - pos ? INT64_MAX : pos + A->iPos;
          neg = A->iNeg < INT64_MIN - neg ? INT64_MIN : neg + A->iNeg;
          gpudsColKbnMerge(&s, &c, A->s, A->c);
        }
        if( pos==INT64_MAX || neg==INT64_MIN ) *pbExact = 1;
        F->n = res->aN[o] + (A ? A->n : 0);
        F->nNonInt = res->aNReal[o] + (A ? A->nNonInt : 0);
        F->iSum = (__int128)pos + neg;
        F->s = s; F->c = c;
        break;
      }
      case VAGG_MIN: case VAGG_MAX: {
        int bHost = A && A->tag!=GPUDS_TAG_NULL;
        if( res->aFlags[o] & GPUDS_AGGF_TIE ) *pbExact = 1;
        F->tag = res->aTag[o]; F->val = res->aVal[o];
        F->key = res->aKey[o]; F->hRow = res->aRow[o];
        F->n = res->aN[o] + (A ? A->n : 0);
        if( bHost ){
          int cmp = 1;
          if( F->tag!=GPUDS_TAG_NULL ){
            cmp = gpudsXCompare(r, pA->e.iCol, A->tag, A->val, A->hRow, F->tag, F->val, F->hRow);
            if( pA->eFn==VAGG_MIN ) cmp = -cmp;
          }
          if( cmp>0 || (cmp==0 && A->key<F->key) ){
            F->tag = A->tag; F->val = A->val; F->key = A->key; F->hRow = A->hRow;
          }
        }
        break;
      }
    }
  }
  if( d->iRepAgg>=0 ){
    const FAgg *F = &aF[d->iRepAgg];
    if( F->tag!=GPUDS_TAG_NULL ){
      *pkRep = F->key; *phRep = F->hRow;
    }else if( g && (res->aRows[j]==0 || g->kLast>*pkRep) ){
      *pkRep = g->kLast; *phRep = g->hLast;       /* (the set's is its last) */
    }
  }
}

/* ---------------------------------------------------- the evaluation */

/* Every row of the view's filter as the transaction sees it, in key order,
** into evaluator x (bMake: every group; else only x's groups).  nMost > 0:
** where the set matches more than nMost rows, nothing is evaluated and
** *pnSet is -1; else *pnSet is the rows the set and the skipped keys gave
** (before the exact filter). */
static int exactPass(VRun *r, XEval *x, int bMake, int64_t nMost, int64_t *pnSet,
                     int64_t *pnHost){
  GpudsColQuery q;
  GpudsColTerm *aT = 0;
  int64_t n = 0, i, *aK = 0;
  uint64_t *aR = 0;
  int nT = 0, bPartial = 0, rc;
  memset(&q, 0, sizeof(q));
  aT = sqlite3_malloc64(sizeof(GpudsColTerm)*(size_t)(r->nTerm ? r->nTerm : 1));
  if( aT==0 ) return SQLITE_NOMEM;
  for(i=0; i<r->nTerm; i++){          /* the set takes no term on the key */
    if( r->aTerm[i].t.iCol>=0 ) aT[nT++] = r->aTerm[i];
  }
  q.lo = r->lo; q.hi = r->hi;
  q.aTerm = aT; q.nTerm = nT;
  q.iOrderCol = -1;
  q.nMost = nMost;
  q.eText = r->eText;
  rc = gpudsColsRun(r->p, &q, &n, &aK, &aR, &bPartial);
  sqlite3_free(aT);
  if( pnSet ) *pnSet = n;
  for(i=0; i<n && rc==SQLITE_OK; i++){
    if( !gpudsViewFilter(r, aK[i], aR[i]) ) continue;
    (*pnHost)++;
    rc = gpudsXRow(x, aK[i], aR[i], bMake, 0);
  }
  free(aK); free(aR);
  return rc;
}

/* ------------------------------------------------ the index path */

/* pX's verdicts are about the table's current column set: forget those
** about another. */
static void exactFor(VRun *r, GpudsViewExact *pX){
  const GpudsColState *cs = &r->p->pCopy->cs;
  if( pX->iBuildId!=cs->iBuildId ){
    gpudsViewExactClear(pX);
    pX->iBuildId = cs->iBuildId;
  }
}

/* IN lists of at most this many values are worth the index path (the CUDA
** set's equality index looks up so short a list; a longer one scans). */
#define INDEX_IN_MAX 8

/* The most rows of a set of nRows that the index path takes.  Each row it
** returns is evaluated on its record, on one thread, while the set's
** aggregation costs a pass over every row: past a small share of the rows
** that pass costs less.  At most what the CUDA set returns from its one
** pass (kFewMax), at least a few dozen where the set is small. */
static int64_t indexCap(int64_t nRows){
  int64_t n = nRows/8192;
  return n<32 ? 32 : n>2048 ? 2048 : n;
}

/* What the set sees of r's filter (key bounds, its terms on non-key
** columns, text by its 8 bytes), as 64 bits: the number of rows the set
** matches for it is the same for every filter of the same fingerprint
** (but for skipped keys). */
static uint64_t filterPrint(const VRun *r){
  uint64_t h = gpudsMix64((uint64_t)r->lo ^ 0x9e3779b97f4a7c15ULL);
  int i, j;
  h = gpudsMix64(h ^ (uint64_t)r->hi);
  for(i=0; i<r->nTerm; i++){
    const GpudsColTerm *t = &r->aTerm[i];
    if( t->t.iCol<0 ) continue;
    h = gpudsMix64(h ^ ((uint64_t)(uint32_t)t->t.iCol<<16) ^ ((uint64_t)t->t.op<<8) ^ t->t.tag);
    if( t->t.op==GPUDS_CMP_IN ){
      for(j=0; j<t->nIn; j++) h = gpudsMix64(h ^ t->aInVal[j] ^ ((uint64_t)t->aInTag[j]<<56));
    }else{
      h = gpudsMix64(h ^ t->t.val);
    }
  }
  return h;
}

/* Is the index path worth a try for r?  Where some term on a non-key
** column is one an equality index answers (=, IS, IS NULL, a short IN
** list) the filter may match few rows, unless this view already found it
** matching more than the cap in this set (*pPrint: its fingerprint). */
static int indexWorth(VRun *r, GpudsViewExact *pX, uint64_t *pPrint){
  int i, bEq = 0;
  for(i=0; i<r->nTerm && !bEq; i++){
    const GpudsColTerm *t = &r->aTerm[i];
    if( t->t.iCol<0 ) continue;
    if( t->t.op==GPUDS_CMP_EQ || t->t.op==GPUDS_CMP_ISNULL
     || (t->t.op==GPUDS_CMP_IN && t->nIn<=INDEX_IN_MAX) ) bEq = 1;
  }
  if( !bEq ) return 0;
  exactFor(r, pX);
  *pPrint = filterPrint(r);
  for(i=0; i<pX->nMany; i++) if( pX->aMany[i]==*pPrint ) return 0;
  return 1;
}

/* Remember that the filter of fingerprint h matched too many rows. */
static void indexTooMany(GpudsViewExact *pX, uint64_t h){
  int i = pX->nMany<VIEW_MANY_CACHE ? pX->nMany++ : pX->iManyNext++ % VIEW_MANY_CACHE;
  pX->aMany[i] = h;
}

/* ------------------------------------------------ exact text terms */

/* Forget every verdict of the cache. */
void gpudsViewExactClear(GpudsViewExact *pX){
  int i;
  for(i=0; i<pX->n; i++) sqlite3_free((void*)pX->a[i].v.z);
  memset(pX, 0, sizeof(*pX));
}

/* Is text or blob constant v the only value behind its 8 bytes in column
** iCol (0-based) of the table's column set (or no value has them)?  Then
** the set may take equal 8 bytes for equal values.  A value listed as
** ambiguous is not; otherwise the first row of the set holding the 8
** bytes (skipped keys left out: their rows may be gone) is compared in
** full.  Verdicts are kept per view and set. */
static int exactText(VRun *r, GpudsViewExact *pX, int iCol, const GpudsValue *v,
                     const int64_t *aSkip, int64_t nSkip, int *pbOk){
  GpudsTable *p = r->p;
  const uint64_t *aAmbig;
  int64_t nAmbig, n = 0, *aK = 0;
  uint64_t *aR = 0;
  gpuds_query q;
  gpuds_term t;
  int i, rc, bOk, bAgain = 0;
  *pbOk = 0;
  exactFor(r, pX);
  for(i=0; i<pX->n; i++){
    if( pX->a[i].iCol==iCol && pX->a[i].v.tag==v->tag && pX->a[i].v.n==v->n
     && (v->n==0 || memcmp(pX->a[i].v.z, v->z, v->n)==0) ){
      *pbOk = pX->a[i].bOk;
      return SQLITE_OK;
    }
  }
  rc = gpudsColsAmbig(p, iCol, &aAmbig, &nAmbig);
  if( rc ) return rc;
  if( gpudsHasWord(aAmbig, nAmbig, v->val) ) return SQLITE_OK;  /* ambiguous: not exact */
  memset(&q, 0, sizeof(q));
  memset(&t, 0, sizeof(t));
  t.iCol = iCol; t.op = GPUDS_CMP_EQ; t.tag = v->tag; t.val = v->val;
  q.lo = INT64_MIN; q.hi = INT64_MAX;
  q.aTerm = &t; q.nTerm = 1;
  q.aSkip = aSkip; q.nSkip = nSkip;
  q.iOrderCol = -1;
  q.nFirst = 1;
  rc = gpudsStoreColsQuery(p, &q, &n, &aK, &aR, 0, &bAgain);
  if( rc || bAgain ) return rc;     /* the set is gone (store.c): not known exact */
  bOk = n==0 || gpudsRowColCmp(gpudsRowOf(aR[0]), iCol, v, r->eText)==GPUDS_ORD_EQ;
  free(aK); free(aR);
  i = pX->n<VIEW_EXACT_CACHE ? pX->n++ : pX->iNext++ % VIEW_EXACT_CACHE;
  sqlite3_free((void*)pX->a[i].v.z);
  pX->a[i].iCol = iCol;
  pX->a[i].v = *v;
  pX->a[i].v.z = 0;
  if( v->n ){
    unsigned char *z = sqlite3_malloc64(v->n);
    if( z==0 ){ pX->a[i].v.n = 0; pX->a[i].iCol = -1; return SQLITE_NOMEM; }
    memcpy(z, v->z, v->n);
    pX->a[i].v.z = z;
  }
  pX->a[i].bOk = bOk;
  *pbOk = bOk;
  return SQLITE_OK;
}

/* IN lists with more text values than this are not checked for exactness
** (their text rows are left to the host). */
#define EXACT_IN_MAX 16

/* aExact[i]: term i of r (one of =, !=, IS NOT, IN on a column holding
** text or blobs, with text or blob constants) may take equal 8 bytes for
** equal values (exactText). */
static int exactTerms(VRun *r, GpudsViewExact *pX, const int64_t *aSkip, int64_t nSkip,
                      uint8_t *aExact){
  int i, j, rc = SQLITE_OK;
  for(i=0; i<r->nTerm && rc==SQLITE_OK; i++){
    const GpudsColTerm *t = &r->aTerm[i];
    int bOk = 0;
    aExact[i] = 0;
    if( t->t.iCol<0 ) continue;
    if( t->t.op==GPUDS_CMP_IN ){
      if( t->nInOther==0 || t->nInOther>EXACT_IN_MAX ) continue;
      bOk = 1;
      for(j=0; j<t->nInOther && bOk && rc==SQLITE_OK; j++){
        rc = exactText(r, pX, t->t.iCol, &t->aInOther[j], aSkip, nSkip, &bOk);
      }
    }else if( (t->t.op==GPUDS_CMP_EQ || t->t.op==GPUDS_CMP_NE || t->t.op==GPUDS_CMP_ISNOT)
           && gpudsColClass(t->v.tag)>=2 ){
      rc = exactText(r, pX, t->t.iCol, &t->v, aSkip, nSkip, &bOk);
    }
    aExact[i] = (uint8_t)(rc==SQLITE_OK && bOk);
  }
  return rc;
}

/* The backend request for view r: its terms, keys and aggregates. */
typedef struct AggReq {
  gpuds_agg a;
  uint8_t *aExact;
  gpuds_aggkey aKey[GPUDS_AGG_KEY_MAX];
  gpuds_aggfn aFn[GPUDS_AGG_FN_MAX];
  gpuds_term *aT;
  uint8_t *aInTag;
  uint64_t *aInVal;
} AggReq;

static int aggReqMake(VRun *r, GpudsViewExact *pX, const int64_t *aSkip, int64_t nSkip,
                      AggReq *q){
  GpudsTable *p = r->p;
  const GpudsViewDef *d = r->d;
  int64_t nIn = 0;
  int i, rc;
  memset(q, 0, sizeof(*q));
  rc = gpudsColsTerms(p, r->aTerm, r->nTerm, &q->aT, &q->aInTag, &q->aInVal, &nIn);
  if( rc ) return rc;
  q->aExact = sqlite3_malloc64((size_t)(r->nTerm ? r->nTerm : 1));
  if( q->aExact==0 ) return SQLITE_NOMEM;
  rc = exactTerms(r, pX, aSkip, nSkip, q->aExact);
  if( rc ) return rc;
  q->a.aTermExact = q->aExact;
  q->a.q.lo = r->lo; q->a.q.hi = r->hi;
  q->a.q.aTerm = q->aT; q->a.q.nTerm = r->nTerm;
  q->a.q.aSkip = aSkip; q->a.q.nSkip = nSkip;
  q->a.q.aInTag = q->aInTag; q->a.q.aInVal = q->aInVal; q->a.q.nIn = nIn;
  q->a.q.iOrderCol = -1;
  for(i=0; i<d->nKey && rc==SQLITE_OK; i++){
    const GpudsVExpr *e = &d->aKey[i];
    q->aKey[i].iCol = e->iCol-1;
    q->aKey[i].op = e->op;
    q->aKey[i].n = e->n;
    if( e->op==GPUDS_AGGKEY_COL && e->iCol>0 ){
      rc = gpudsColsAmbig(p, e->iCol-1, &q->aKey[i].aAmbig, &q->aKey[i].nAmbig);
    }
  }
  for(i=0; i<d->nAgg && rc==SQLITE_OK; i++){
    const GpudsVAgg *pA = &d->aAgg[i];
    static const int aFn[] = { 0, GPUDS_AGG_COUNTSTAR, GPUDS_AGG_COUNT, GPUDS_AGG_COUNTD,
      GPUDS_AGG_SUM, GPUDS_AGG_SUM, GPUDS_AGG_SUM, GPUDS_AGG_MIN, GPUDS_AGG_MAX };
    q->aFn[i].fn = aFn[pA->eFn];
    q->aFn[i].iCol = pA->eFn==VAGG_COUNTSTAR ? 0 : pA->e.iCol-1;
    if( (pA->eFn==VAGG_COUNTD || pA->eFn==VAGG_MIN || pA->eFn==VAGG_MAX) && pA->e.iCol>0 ){
      rc = gpudsColsAmbig(p, pA->e.iCol-1, &q->aFn[i].aAmbig, &q->aFn[i].nAmbig);
    }
  }
  q->a.aKey = q->aKey; q->a.nKey = d->nKey;
  q->a.aFn = q->aFn; q->a.nFn = d->nAgg;
  q->a.iRepFn = d->iRepAgg;
  return rc;
}

static void aggReqFree(AggReq *q){
  sqlite3_free(q->aT); free(q->aInTag); free(q->aInVal);
  sqlite3_free(q->aExact);
}

/* The rows the host answers for: the skipped keys' rows as the transaction
** sees them and the rows the set left over, those that pass the filter, in
** key order, into evaluator x; each new group tied to the set's. */
static int hostRows(VRun *r, XEval *x, const gpuds_aggres *res, const int64_t *aSkip,
                    int64_t nSkip, int64_t *pnHost){
  uint8_t *aF = 0;
  uint64_t *aR = 0;
  int64_t i = 0, j = 0;
  int rc = SQLITE_OK;
  if( nSkip ){
    aF = malloc((size_t)nSkip);
    aR = malloc((size_t)nSkip*8);
    if( !aF || !aR ){ free(aF); free(aR); return SQLITE_NOMEM; }
    rc = gpudsLookupMany(r->p, (size_t)nSkip, aSkip, aF, aR);
  }
  while( rc==SQLITE_OK && (i<nSkip || j<res->nLeft) ){
    int64_t key;
    uint64_t hRow;
    XGroup *g = 0;
    if( j>=res->nLeft || (i<nSkip && aSkip[i]<res->aLeftKey[j]) ){
      key = aSkip[i]; hRow = aR[i];
      if( !aF[i++] ) continue;
    }else{
      key = res->aLeftKey[j]; hRow = res->aLeftRow[j++];
    }
    if( !gpudsViewFilter(r, key, hRow) ) continue;
    (*pnHost)++;
    rc = gpudsXRow(x, key, hRow, 1, &g);
    if( rc==SQLITE_OK && g->rows==1 ){
      g->iBack = backFind(r, res, g->kt, g->kv, hRow);
    }
  }
  free(aF); free(aR);
  return rc;
}

/* Evaluate view d over table p with parameters apParam (d->nParam values,
** NULL for unbound) into *pOut; what it did into *pStat.  The operand
** statement pOps is d->zOperands prepared (or NULL); pExact the view's
** verdicts on text constants.  On error the message is the table's
** (p->base.zErrMsg). */
int gpudsViewRun(GpudsTable *p, GpudsViewDef *d, sqlite3_stmt *pOps, sqlite3_value **apParam,
                 GpudsViewExact *pExact, GpudsViewOut *pOut, GpudsViewStat *pStat){
  VRun R, *r = &R;
  sqlite3_value **apOp = 0;
  int64_t *aSkip = 0, nSkip = 0, j;
  gpuds_aggres res;
  AggReq req;
  XEval x, xe;
  XGroup **aHostOf = 0;
  int64_t *aExact = 0, nExact = 0;
  int i, rc = SQLITE_OK, bAgg = 0, bIndex = 0;
  uint64_t uPrint = 0;
  struct timespec t0, t1;

  clock_gettime(CLOCK_MONOTONIC, &t0);
  memset(r, 0, sizeof(*r));
  memset(&res, 0, sizeof(res));
  memset(&req, 0, sizeof(req));
  memset(&x, 0, sizeof(x)); memset(&xe, 0, sizeof(xe));
  r->p = p; r->d = d; r->eText = gpudsTableText(p);
  pOut->nCol = d->nCol;
  gpudsViewOutFree(pOut);
  pStat->nRead = pStat->nHost = pStat->nLeft = pStat->nExact = pStat->nGroup = 0;
  sqlite3_snprintf(sizeof(pStat->zWhere), pStat->zWhere, "none");

  /* 1. the operands and the terms */
  if( pOps ){
    for(i=0; i<d->nParam && rc==SQLITE_OK; i++){
      rc = apParam && apParam[i] ? sqlite3_bind_value(pOps, i+1, apParam[i])
                                 : sqlite3_bind_null(pOps, i+1);
    }
    if( rc==SQLITE_OK && sqlite3_step(pOps)!=SQLITE_ROW ){
      rc = sqlite3_reset(pOps);
      if( rc==SQLITE_OK ) rc = SQLITE_ERROR;
      gpudsVtabError(p, rc, "gpuds_view: the WHERE operands: %s", sqlite3_errmsg(p->db));
    }
    if( rc==SQLITE_OK ){
      apOp = sqlite3_malloc64(sizeof(sqlite3_value*)*(size_t)d->nOperand);
      if( apOp==0 ) rc = SQLITE_NOMEM;
      else memset(apOp, 0, sizeof(sqlite3_value*)*(size_t)d->nOperand);
      for(i=0; i<d->nOperand && rc==SQLITE_OK; i++){
        apOp[i] = sqlite3_value_dup(sqlite3_column_value(pOps, i));
        if( apOp[i]==0 ) rc = SQLITE_NOMEM;
      }
    }
    sqlite3_reset(pOps);
    sqlite3_clear_bindings(pOps);
  }
  if( rc==SQLITE_OK ) rc = termsMake(r, apOp);
  if( rc==SQLITE_OK ) rc = gpudsXInit(&x, r);

  /* 2. the copy's latch held for reading from here on (the set and the
  ** skipped keys must not change until its rows are read).  A filter that
  ** may be selective: the rows it matches from the set (an equality index
  ** where it has one), each evaluated on its record, if they are few; else,
  ** or where it is not, the set's aggregation */
  gpudsLatchRead(p);
  if( rc==SQLITE_OK && !r->bEmpty && indexWorth(r, pExact, &uPrint) ){
    int64_t nSet = 0;
    if( !gpudsColsBuilt(p) ) rc = gpudsColsBuild(p);
    if( rc==SQLITE_OK ){
      rc = exactPass(r, &x, 1, indexCap(p->pCopy->cs.nRows), &nSet, &pStat->nHost);
    }
    if( rc==SQLITE_OK && nSet>=0 ){
      bIndex = 1;
      pStat->nRead = nSet;
      sqlite3_snprintf(sizeof(pStat->zWhere), pStat->zWhere, "%s index", gpudsColsBackend(p));
    }else if( rc==SQLITE_OK ){
      exactFor(r, pExact);
      indexTooMany(pExact, uPrint);
    }
  }
  if( rc==SQLITE_OK && !r->bEmpty && !bIndex ){
    if( !gpudsColsBuilt(p) ) rc = gpudsColsBuild(p);
    if( rc==SQLITE_OK ) rc = gpudsColsSkipKeys(p, &aSkip, &nSkip);
    if( rc==SQLITE_OK ) rc = aggReqMake(r, pExact, aSkip, nSkip, &req);
    if( rc==SQLITE_OK ){
      __atomic_add_fetch(&p->pCopy->cs.nQuery, 1, __ATOMIC_RELAXED);
      rc = gpudsStoreColsAgg(p, &req.a, &res);
      if( rc==GPUDS_OK ){
        bAgg = 1;
        sqlite3_snprintf(sizeof(pStat->zWhere), pStat->zWhere, "%s", gpudsColsBackend(p));
      }else if( rc==GPUDS_MISUSE ){
        /* no aggregation there, or the GPU had no room for it (the set
        ** moves to the host, built there by the next query: store.c,
        ** colsToHost): every group from its rows */
        rc = SQLITE_OK;
      }
    }
    pStat->nRead = res.nRead;
    pStat->nLeft = res.nLeft;
  }

  if( rc==SQLITE_OK && !bAgg ){
    /* the index path, no aggregating set, or no row can match: every
    ** group from its rows */
    if( !bIndex ){
      sqlite3_snprintf(sizeof(pStat->zWhere), pStat->zWhere, "exact");
      if( !r->bEmpty ) rc = exactPass(r, &x, 1, 0, 0, &pStat->nHost);
    }
    if( rc==SQLITE_OK && d->nKey==0 && x.nGroup==0 ){
      uint8_t kt[1]; uint64_t kv[1];
      if( gpudsXFind(&x, kt, kv, 0, 0, 1)==0 ) rc = SQLITE_NOMEM;
    }
    for(j=0; j<x.nGroup && rc==SQLITE_OK; j++) rc = xgroupOut(r, pOut, x.aGroup[j]);
  }else if( rc==SQLITE_OK ){
    /* 3. the host's rows, merged into the set's groups */
    rc = hostRows(r, &x, &res, aSkip, nSkip, &pStat->nHost);
    if( rc==SQLITE_OK && res.nGroup ){
      aHostOf = calloc((size_t)res.nGroup, sizeof(XGroup*));
      aExact = malloc((size_t)res.nGroup*8);
      if( !aHostOf || !aExact ) rc = SQLITE_NOMEM;
    }
    for(j=0; j<x.nGroup && rc==SQLITE_OK; j++){
      if( x.aGroup[j]->iBack>=0 ) aHostOf[x.aGroup[j]->iBack] = x.aGroup[j];
    }
    for(j=0; j<res.nGroup && rc==SQLITE_OK; j++){
      FAgg aF[GPUDS_AGG_FN_MAX];
      int64_t nRows, kRep;
      uint64_t hRep;
      int bExact;
      backMerge(r, &res, j, aHostOf[j], aF, &nRows, &kRep, &hRep, &bExact);
      if( bExact ){ aExact[nExact++] = j; continue; }
      if( d->nKey>0 && nRows==0 ) continue;
      rc = groupOut(r, pOut, nRows, kRep, hRep, aF,
                    aHostOf[j] ? 0 : res.aRepTag ? &res.aRepTag[j] : 0,
                    aHostOf[j] ? 0 : res.aRepVal ? &res.aRepVal[j] : 0, res.nGroup);
    }
    for(j=0; j<x.nGroup && rc==SQLITE_OK; j++){
      /* a group the set counted no row of (backFind found none): every
      ** row of it is here */
      if( x.aGroup[j]->iBack<0 ) rc = xgroupOut(r, pOut, x.aGroup[j]);
    }
    /* 4. groups computed again from all their rows */
    if( rc==SQLITE_OK && nExact ){
      rc = gpudsXInit(&xe, r);
      for(j=0; j<nExact && rc==SQLITE_OK; j++){
        int64_t jb = aExact[j];
        if( jb>=0 ){
          int64_t n = res.nGroup;
          uint8_t kt[GPUDS_AGG_KEY_MAX];
          uint64_t kv[GPUDS_AGG_KEY_MAX];
          int k;
          for(k=0; k<d->nKey && k<GPUDS_AGG_KEY_MAX; k++){ kt[k] = res.aKeyTag[k*n+jb]; kv[k] = res.aKeyVal[k*n+jb]; }
          if( gpudsXFind(&xe, kt, kv, res.aRepKey[jb], res.aRepRow[jb], 1)==0 ) rc = SQLITE_NOMEM;
        }
      }
      if( rc==SQLITE_OK ) rc = exactPass(r, &xe, 0, 0, 0, &pStat->nHost);
      for(j=0; j<xe.nGroup && rc==SQLITE_OK; j++){
        if( xe.aGroup[j]->rows>0 ) rc = xgroupOut(r, pOut, xe.aGroup[j]);
      }
      pStat->nExact = nExact;
    }
  }
  gpudsLatchReadEnd(p);
  if( rc==RC_OVERFLOW ){
    rc = gpudsVtabError(p, SQLITE_ERROR, "integer overflow");
  }else if( rc && p->base.zErrMsg==0 ){
    gpudsVtabError(p, rc, "%s", rc==SQLITE_NOMEM ? "out of memory" : sqlite3_errstr(rc));
  }
  pStat->nGroup = pOut->nRow;
  pStat->nRun++;
  for(i=0; apOp && i<d->nOperand; i++) sqlite3_value_free(apOp[i]);
  sqlite3_free(apOp);
  for(i=0; i<r->nTerm; i++) gpudsTermFree(&r->aTerm[i]);
  sqlite3_free(r->aTerm);
  sqlite3_finalize(r->pNum); sqlite3_finalize(r->pDiv); sqlite3_finalize(r->pMod);
  gpudsXFree(&x); gpudsXFree(&xe);
  gpudsAggResFree(&res);
  aggReqFree(&req);
  free(aSkip); free(aHostOf); free(aExact);
  if( rc ) gpudsViewOutFree(pOut);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  pStat->nUs = (int64_t)(t1.tv_sec - t0.tv_sec)*1000000 + (t1.tv_nsec - t0.tv_nsec)/1000;
  return rc;
}
