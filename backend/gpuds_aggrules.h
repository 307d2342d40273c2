/*
** gpuds_aggrules.h -- the rules of the CUDA column set's aggregation
** (xAgg, kernels/cols/agg.cuh) that decide its results: the class of a
** row (read or not, filtered out, leftover, counted), a group key's
** canonical value, the sortable words of canonical values (the group
** order), the dense group number of few-group requests, and the state of
** an aggregate: its row step, its merge and what it reports.
**
** Compiled for the host and the device (GPUDS_HD), so that a host test
** (tests/test_agg_rules.c) runs these very functions against the host
** aggregation (backend/host_agg.c), and the kernels only move states
** around: the order of the steps and merges is fixed by the data's size,
** never by timing, so every result is the same on every run.
**
** Everything here mirrors host_agg.c, with one difference that changes
** nothing in the result: a row is named by its index in the set and its
** key travels in the state, so "first" is the least (key, index) and
** "last" the greatest key with, among equal keys, the least index (what
** host_agg.c's splits and merges keep, keys being distinct in practice).
*/
#ifndef GPUDS_AGGRULES_H
#define GPUDS_AGGRULES_H

#include <stdint.h>
#include <math.h>
#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "gpuds_search.h"

/* A row's class (aggClassify). */
#define AGG_ST_OUT      0     /* not read: outside [lo, hi] or skipped */
#define AGG_ST_FILTERED 1     /* read; a term gives 0 */
#define AGG_ST_LEFT     2     /* read; leftover (the caller's) */
#define AGG_ST_COUNTED  3     /* read; counted in its group */

/* The kinds of aggregate state (AggSt). */
#define AGGK_BASE  0          /* rows, first and last row of the group */
#define AGGK_COUNT 1
#define AGGK_SUM   2
#define AGGK_MIN   3
#define AGGK_MAX   4

/* Stat words kClass-like passes bound (AggReq.nStat): 3 per group key,
** 2 per COUNTD aggregate. */
#define AGG_STAT_MAX (3*GPUDS_AGG_KEY_MAX + 2*GPUDS_AGG_FN_MAX)

typedef struct AggTermD {     /* a term */
  int32_t iCol, op;
  uint64_t cval;
  uint8_t ctag, exact;        /* exact: gpuds_agg.aTermExact's flag */
  uint8_t pad[6];
} AggTermD;

typedef struct AggKeyD {      /* a group key */
  int32_t iCol, op;
  int64_t n;                  /* DIV, MOD: the divisor */
  int64_t ambOff, nAmb;       /* its ambiguous values: amb[ambOff..+nAmb) */
} AggKeyD;

typedef struct AggFnD {       /* an aggregate */
  int32_t fn, iCol;
  int64_t ambOff, nAmb;
} AggFnD;

/* The request as the rules read it: the set's arrays and the request's,
** all on the device for the kernels (or the host for the test). */
typedef struct AggReq {
  int64_t n;                  /* rows of the set: the column stride */
  const int64_t *key;
  const uint64_t *row;
  const uint8_t *tag;         /* column c of row i at c*n+i */
  const uint64_t *val;
  const AggTermD *term;
  const int64_t *skip;        /* ascending */
  const uint8_t *inTag;       /* the IN terms' values */
  const uint64_t *inVal;
  const uint64_t *amb;        /* every ambiguous list, one after another */
  int64_t nSkip;
  int64_t lo, hi;
  int32_t nTerm, nKey, nFn;
  int32_t checkKey;           /* compare lo <= key <= hi (unsorted keys) */
  int32_t iRepFn;
  int32_t nSt;                /* state aggregates: BASE, then COUNT, SUM, MIN, MAX */
  int32_t nCd;                /* COUNTD aggregates */
  int32_t nDirect;            /* dense group numbers (aggGid): keys used */
  AggKeyD aKey[GPUDS_AGG_KEY_MAX];
  AggFnD aFn[GPUDS_AGG_FN_MAX];
  int32_t stKind[GPUDS_AGG_FN_MAX+1];   /* state aggregate y: its kind, */
  int32_t stCol[GPUDS_AGG_FN_MAX+1];    /* column and aggregate (-1: BASE) */
  int32_t stFn[GPUDS_AGG_FN_MAX+1];
  int32_t cdFn[GPUDS_AGG_FN_MAX];       /* COUNTD aggregate d: its index */
  uint64_t dMin[GPUDS_AGG_KEY_MAX];     /* aggGid: word 1's least value */
  uint64_t dMul[GPUDS_AGG_KEY_MAX];     /* ... and its weight */
} AggReq;

/* The state of one aggregate of one group (or part of one), 6 words:
**   BASE   rows, first key, first index, last key, last index
**   COUNT  non-NULL values
**   SUM    n, REAL values, positive and negative integer sums (saturated),
**          compensated sum (s, c as the doubles' bits)
**   MIN/MAX  n, tag, value, key and index of its row, and "lo": among the
**          values of the extreme's tag and first 4 bytes, the opposite
**          extreme of their 8 bytes (another one there: GPUDS_AGGF_TIE)
** All zero is the empty state of every kind. */
typedef struct AggSt { uint64_t w[6]; } AggSt;

/* ------------------------------------------------------------ rows */

/* Column iCol (-1: the key) of row i. */
GPUDS_HD void aggColOf(const AggReq *r, int iCol, int64_t i, uint8_t *pT, uint64_t *pV){
  if( iCol<0 ){ *pT = GPUDS_TAG_INT; *pV = (uint64_t)r->key[i]; return; }
  *pT = r->tag[(int64_t)iCol*r->n + i];
  *pV = r->val[(int64_t)iCol*r->n + i];
}

/* Does a TEXT or BLOB value have 8 bytes listed as ambiguous? */
GPUDS_HD int aggAmbiguous(uint8_t tag, uint64_t val, const uint64_t *a, int64_t n){
  return n>0 && gpudsColClass(tag)>=2 && gpudsHasWord(a, n, val);
}

/* Is key k in the skip list? */
GPUDS_HD int aggSkipped(const AggReq *r, int64_t k){
  return gpudsHasKey(r->skip, r->nSkip, k);
}

/* The canonical value of group key k in row i: 1, or 0 where it is
** undecidable (the row is leftover). */
GPUDS_HD int aggKeyCanon(const AggReq *r, int k, int64_t i, uint8_t *pT, uint64_t *pV){
  const AggKeyD *K = &r->aKey[k];
  uint8_t tg, t2;
  uint64_t vl, v2;
  *pT = GPUDS_TAG_NULL; *pV = 0;
  aggColOf(r, K->iCol, i, &tg, &vl);
  if( K->op==GPUDS_AGGKEY_COL ){
    if( aggAmbiguous(tg, vl, r->amb + K->ambOff, K->nAmb) ) return 0;
    gpudsColCanon(tg, vl, pT, pV);
    return 1;
  }
  if( !gpudsColDivMod(K->op, K->n, tg, vl, &t2, &v2) ) return 0;
  gpudsColCanon(t2, v2, pT, pV);
  return 1;
}

/* The class of row i (AGG_ST_xxx), of a row the caller found within the
** key range where the keys are sorted. */
GPUDS_HD int aggClassify(const AggReq *r, int64_t i){
  int t, k, f, bLeft = 0;
  if( r->checkKey || r->nSkip>0 ){
    int64_t key = r->key[i];
    if( r->checkKey && (key<r->lo || key>r->hi) ) return AGG_ST_OUT;
    if( r->nSkip>0 && aggSkipped(r, key) ) return AGG_ST_OUT;
  }
  for(t=0; t<r->nTerm; t++){
    const AggTermD *T = &r->term[t];
    uint8_t tg;
    uint64_t vl;
    int m;
    aggColOf(r, T->iCol, i, &tg, &vl);
    m = gpudsColMatchAgg(tg, vl, T->op, T->ctag, T->cval, r->inTag, r->inVal, T->exact);
    if( m==0 ) return AGG_ST_FILTERED;
    if( m==2 ) bLeft = 1;
  }
  if( bLeft ) return AGG_ST_LEFT;
  for(k=0; k<r->nKey; k++){
    uint8_t ct;
    uint64_t cv;
    if( !aggKeyCanon(r, k, i, &ct, &cv) ) return AGG_ST_LEFT;
  }
  for(f=0; f<r->nFn; f++){
    const AggFnD *F = &r->aFn[f];
    uint8_t tg;
    uint64_t vl;
    if( F->fn==GPUDS_AGG_COUNTSTAR || F->fn==GPUDS_AGG_COUNT ) continue;
    aggColOf(r, F->iCol, i, &tg, &vl);
    if( gpudsColClass(tg)<2 ) continue;
    if( F->fn==GPUDS_AGG_SUM ) return AGG_ST_LEFT;
    if( aggAmbiguous(tg, vl, r->amb + F->ambOff, F->nAmb) ) return AGG_ST_LEFT;
  }
  return AGG_ST_COUNTED;
}

/* ----------------------------------------------------------- words */

/* A double's bits in an unsigned order that is its numeric order. */
GPUDS_HD uint64_t aggSortable(double d){
  uint64_t u = gpudsColReal(d);
  return (u>>63) ? ~u : (u | 0x8000000000000000ULL);
}

/* Word w (0, 1, 2) of canonical value (ct, cv): the three words compared
** in turn, unsigned, order canonical values as gpudsColGroupCmp does, and
** are equal exactly for the same canonical value.  Word 0: the class and,
** for numbers, the band (below -2^63, within int64's range, from 2^63 on);
** word 1: the integer part within the band (floor, sign bit flipped), a
** number outside it by its bits, text and blobs by their 8 bytes; word 2:
** a REAL within the band (never integral: gpudsColCanon made those
** INTEGER) by its bits, above the 0 of the integer equal to its floor. */
GPUDS_HD uint64_t aggWord(uint8_t ct, uint64_t cv, int w){
  const uint64_t kSign = 0x8000000000000000ULL;
  int c = gpudsColClass(ct);
  uint64_t w0 = 0, w1 = 0, w2 = 0;
  if( c==1 ){
    if( ct==GPUDS_TAG_INT ){
      w0 = 5; w1 = cv ^ kSign;
    }else{
      double d = gpudsColDouble(cv);
      if( d<-9223372036854775808.0 ){ w0 = 4; w1 = aggSortable(d); }
      else if( d>=9223372036854775808.0 || d!=d ){ w0 = 6; w1 = aggSortable(d); }
      else{ w0 = 5; w1 = (uint64_t)(int64_t)floor(d) ^ kSign; w2 = aggSortable(d); }
    }
  }else if( c>=2 ){
    w0 = 4*(uint64_t)c; w1 = cv;
  }
  return w==0 ? w0 : w==1 ? w1 : w2;
}

/* The dense group number of counted row i where every key's words 0 and
** 2 are the same in all counted rows (r->nDirect keys; none: group 0):
** the keys' words 1 less their least, in mixed radix, key 0 first, so
** that the numbers order the groups as their key tuples. */
GPUDS_HD int64_t aggGid(const AggReq *r, int64_t i){
  uint64_t g = 0;
  int k;
  for(k=0; k<r->nDirect; k++){
    uint8_t ct = 0;
    uint64_t cv = 0;
    aggKeyCanon(r, k, i, &ct, &cv);
    g += (aggWord(ct, cv, 1) - r->dMin[k]) * r->dMul[k];
  }
  return (int64_t)g;
}

/* ---------------------------------------------------------- states */

GPUDS_HD int64_t aggSatAdd(int64_t a, int64_t b){       /* a, b of one sign */
  if( b>0 ) return a > INT64_MAX - b ? INT64_MAX : a + b;
  return a < INT64_MIN - b ? INT64_MIN : a + b;
}

/* Is row (ka, ia) before row (kb, ib): a lesser key, or the same and a
** lesser index? */
GPUDS_HD int aggBefore(int64_t ka, int64_t ia, int64_t kb, int64_t ib){
  return ka<kb || (ka==kb && ia<ib);
}

/* BASE: merge B into A. */
GPUDS_HD void aggMergeBase(AggSt *A, const AggSt *B){
  if( B->w[0]==0 ) return;
  if( A->w[0]==0 ){ *A = *B; return; }
  A->w[0] += B->w[0];
  if( aggBefore((int64_t)B->w[1], (int64_t)B->w[2], (int64_t)A->w[1], (int64_t)A->w[2]) ){
    A->w[1] = B->w[1]; A->w[2] = B->w[2];
  }
  if( (int64_t)B->w[3]>(int64_t)A->w[3]
   || ((int64_t)B->w[3]==(int64_t)A->w[3] && (int64_t)B->w[4]<(int64_t)A->w[4]) ){
    A->w[3] = B->w[3]; A->w[4] = B->w[4];
  }
}

/* SUM: merge B into A. */
GPUDS_HD void aggMergeSum(AggSt *A, const AggSt *B){
  double s = gpudsColDouble(A->w[4]), c = gpudsColDouble(A->w[5]);
  if( B->w[0]==0 ) return;
  A->w[0] += B->w[0];
  A->w[1] += B->w[1];
  A->w[2] = (uint64_t)aggSatAdd((int64_t)A->w[2], (int64_t)B->w[2]);
  A->w[3] = (uint64_t)aggSatAdd((int64_t)A->w[3], (int64_t)B->w[3]);
  if( B->w[1]>0 ){
    gpudsColKbnMerge(&s, &c, gpudsColDouble(B->w[4]), gpudsColDouble(B->w[5]));
    A->w[4] = gpudsColReal(s); A->w[5] = gpudsColReal(c);
  }
}

/* MIN (bMax 0), MAX: merge B into A (host_agg.c's mmMerge, rows by their
** key and index). */
GPUDS_HD void aggMergeMM(AggSt *A, const AggSt *B, int bMax){
  uint8_t ta = (uint8_t)A->w[1], tb = (uint8_t)B->w[1];
  int o, bSame;
  uint64_t lo;
  if( B->w[0]==0 ) return;
  if( A->w[0]==0 ){ *A = *B; return; }
  A->w[0] += B->w[0];
  bSame = gpudsColClass(ta)>=2 && ta==tb && (A->w[2]>>32)==(B->w[2]>>32);
  lo = !bSame ? A->w[5]
     : bMax ? (A->w[5]<B->w[5] ? A->w[5] : B->w[5])
            : (A->w[5]>B->w[5] ? A->w[5] : B->w[5]);
  o = gpudsColInCompare(tb, B->w[2], ta, A->w[2]);
  if( bMax ? o>0 : o<0 ){
    if( !bSame ) lo = B->w[5];
    A->w[1] = B->w[1]; A->w[2] = B->w[2]; A->w[3] = B->w[3]; A->w[4] = B->w[4];
  }else if( o==GPUDS_ORD_EQ
         && aggBefore((int64_t)B->w[3], (int64_t)B->w[4], (int64_t)A->w[3], (int64_t)A->w[4]) ){
    A->w[1] = B->w[1]; A->w[2] = B->w[2]; A->w[3] = B->w[3]; A->w[4] = B->w[4];
  }
  A->w[5] = lo;
}

/* Merge state B of kind `kind` into A. */
GPUDS_HD void aggMerge(int kind, AggSt *A, const AggSt *B){
  switch( kind ){
    case AGGK_BASE: aggMergeBase(A, B); break;
    case AGGK_COUNT: A->w[0] += B->w[0]; break;
    case AGGK_SUM: aggMergeSum(A, B); break;
    default: aggMergeMM(A, B, kind==AGGK_MAX); break;
  }
}

/* Step state S of kind `kind` (on column iCol) by row i. */
GPUDS_HD void aggAddRow(const AggReq *r, int kind, int iCol, AggSt *S, int64_t i){
  AggSt B;
  uint8_t tg;
  uint64_t vl;
  if( kind==AGGK_BASE ){
    uint64_t k = (uint64_t)r->key[i];
    B.w[0] = 1; B.w[1] = k; B.w[2] = (uint64_t)i; B.w[3] = k; B.w[4] = (uint64_t)i; B.w[5] = 0;
    aggMergeBase(S, &B);
    return;
  }
  aggColOf(r, iCol, i, &tg, &vl);
  if( tg==GPUDS_TAG_NULL ) return;
  if( kind==AGGK_COUNT ){ S->w[0]++; return; }
  if( kind==AGGK_SUM ){
    S->w[0]++;
    if( tg==GPUDS_TAG_INT ){
      int64_t v = (int64_t)vl;
      if( v>0 ) S->w[2] = (uint64_t)aggSatAdd((int64_t)S->w[2], v);
      else if( v<0 ) S->w[3] = (uint64_t)aggSatAdd((int64_t)S->w[3], v);
    }else{
      double s = gpudsColDouble(S->w[4]), c = gpudsColDouble(S->w[5]);
      S->w[1]++;
      gpudsColKbnAdd(&s, &c, gpudsColDouble(vl));
      S->w[4] = gpudsColReal(s); S->w[5] = gpudsColReal(c);
    }
    return;
  }
  B.w[0] = 1; B.w[1] = tg; B.w[2] = vl; B.w[3] = (uint64_t)r->key[i]; B.w[4] = (uint64_t)i;
  B.w[5] = vl;
  aggMergeMM(S, &B, kind==AGGK_MAX);
}

/* ---------------------------------------------------------- output */

/* Report state S of the aggregate of state y into o's arrays at `at`
** (f*stride+g): what gpuds_aggres says each aggregate returns.  BASE
** reports nothing here (aggEmitGroup). */
GPUDS_HD void aggEmitFn(const AggReq *r, int y, const AggSt *S, const gpuds_aggres *o, int64_t at){
  int kind = r->stKind[y];
  if( kind==AGGK_BASE ) return;
  o->aN[at] = (int64_t)S->w[0];
  if( kind==AGGK_SUM ){
    o->aNReal[at] = (int64_t)S->w[1];
    o->aPos[at] = (int64_t)S->w[2];
    o->aNeg[at] = (int64_t)S->w[3];
    o->aSum[at] = gpudsColDouble(S->w[4]);
    o->aErr[at] = gpudsColDouble(S->w[5]);
  }else if( kind==AGGK_MIN || kind==AGGK_MAX ){
    int bSome = S->w[0]>0;
    uint8_t tg = (uint8_t)S->w[1];
    o->aTag[at] = bSome ? tg : GPUDS_TAG_NULL;
    o->aVal[at] = bSome ? S->w[2] : 0;
    o->aKey[at] = bSome ? (int64_t)S->w[3] : 0;
    o->aRow[at] = bSome ? r->row[(int64_t)S->w[4]] : 0;
    o->aFlags[at] = (uint8_t)(bSome && gpudsColClass(tg)>=2 && S->w[5]!=S->w[2] ? GPUDS_AGGF_TIE : 0);
  }
}

/* Report group g's own fields into o (arrays of stride S): its rows, its
** representative row and that row's key values, its key tuple, and the
** COUNTSTAR aggregates.  base: the group's BASE state; rep: the state of
** aggregate iRepFn (unused where it is -1). */
GPUDS_HD void aggEmitGroup(const AggReq *r, const AggSt *base, const AggSt *rep,
                           const gpuds_aggres *o, int64_t g, int64_t S){
  int64_t rows = (int64_t)base->w[0], iRep = -1;
  int k, f;
  if( rows>0 ){
    if( r->iRepFn<0 ) iRep = (int64_t)base->w[2];
    else iRep = rep->w[0]>0 ? (int64_t)rep->w[4] : (int64_t)base->w[4];
  }
  o->aRows[g] = rows;
  o->aRepKey[g] = iRep>=0 ? r->key[iRep] : 0;
  o->aRepRow[g] = iRep>=0 ? r->row[iRep] : 0;
  for(k=0; k<r->nKey; k++){
    uint8_t ct = GPUDS_TAG_NULL, tg = GPUDS_TAG_NULL;
    uint64_t cv = 0, vl = 0;
    if( rows>0 ) aggKeyCanon(r, k, (int64_t)base->w[2], &ct, &cv);
    if( iRep>=0 ) aggColOf(r, r->aKey[k].iCol, iRep, &tg, &vl);
    o->aKeyTag[k*S+g] = ct;
    o->aKeyVal[k*S+g] = cv;
    o->aRepTag[k*S+g] = tg;
    o->aRepVal[k*S+g] = tg==GPUDS_TAG_NULL ? 0 : vl;
  }
  for(f=0; f<r->nFn; f++){
    if( r->aFn[f].fn==GPUDS_AGG_COUNTSTAR ) o->aN[f*S+g] = rows;
  }
}

/* ------------------------------------------------- the request (host) */

/* Is request a valid on a set of nCol columns (host_agg.c's checks)?
** GPUDS_OK or GPUDS_MISUSE. */
static inline int aggReqCheck(const gpuds_agg *a, int nCol){
  const gpuds_query *q = &a->q;
  int t, k, f;
  if( a->nKey<0 || a->nKey>GPUDS_AGG_KEY_MAX || a->nFn<0 || a->nFn>GPUDS_AGG_FN_MAX ) return GPUDS_MISUSE;
  if( (a->nKey && !a->aKey) || (a->nFn && !a->aFn) || (q->nTerm>0 && !q->aTerm) ) return GPUDS_MISUSE;
  for(t=0; t<q->nTerm; t++){
    const gpuds_term *pT = &q->aTerm[t];
    if( pT->iCol<-1 || pT->iCol>=nCol ) return GPUDS_MISUSE;
    if( pT->op==GPUDS_CMP_IN
     && (pT->val>>32) + (uint32_t)pT->val > (uint64_t)(q->nIn>0 ? q->nIn : 0) ) return GPUDS_MISUSE;
  }
  for(k=0; k<a->nKey; k++){
    const gpuds_aggkey *pK = &a->aKey[k];
    if( pK->iCol<-1 || pK->iCol>=nCol ) return GPUDS_MISUSE;
    if( pK->op<GPUDS_AGGKEY_COL || pK->op>GPUDS_AGGKEY_MOD ) return GPUDS_MISUSE;
  }
  for(f=0; f<a->nFn; f++){
    const gpuds_aggfn *pF = &a->aFn[f];
    if( pF->fn<GPUDS_AGG_COUNTSTAR || pF->fn>GPUDS_AGG_COUNTD ) return GPUDS_MISUSE;
    if( pF->fn!=GPUDS_AGG_COUNTSTAR && (pF->iCol<-1 || pF->iCol>=nCol) ) return GPUDS_MISUSE;
  }
  if( a->iRepFn<-1 || a->iRepFn>=a->nFn ) return GPUDS_MISUSE;
  if( a->iRepFn>=0 && a->aFn[a->iRepFn].fn!=GPUDS_AGG_MIN
   && a->aFn[a->iRepFn].fn!=GPUDS_AGG_MAX ) return GPUDS_MISUSE;
  return GPUDS_OK;
}

/* Is the ambiguous list of a key (op) or aggregate (fn) read?  A COL key's
** and a MIN, MAX or COUNTD aggregate's; 0 where it is empty. */
static inline int64_t aggAmbOfKey(const gpuds_aggkey *pK){
  return pK->op==GPUDS_AGGKEY_COL && pK->aAmbig && pK->nAmbig>0 ? pK->nAmbig : 0;
}
static inline int64_t aggAmbOfFn(const gpuds_aggfn *pF){
  return (pF->fn==GPUDS_AGG_MIN || pF->fn==GPUDS_AGG_MAX || pF->fn==GPUDS_AGG_COUNTD)
         && pF->aAmbig && pF->nAmbig>0 ? pF->nAmbig : 0;
}

/* The ambiguous values request a reads (aggReqFill's aAmb size). */
static inline int64_t aggAmbTotal(const gpuds_agg *a){
  int64_t n = 0;
  int k, f;
  for(k=0; k<a->nKey; k++) n += aggAmbOfKey(&a->aKey[k]);
  for(f=0; f<a->nFn; f++) n += aggAmbOfFn(&a->aFn[f]);
  return n;
}

/* Fill *r from request a (checked by aggReqCheck) on a set of n rows
** (bSorted: keys ascending): everything but the pointers to the arrays,
** which the caller sets (key, row, tag, val: the set's; term: aT; skip,
** inTag, inVal: the request's; amb: aAmb).  aT gets the terms (nTerm),
** aAmb the ambiguous lists read (aggAmbTotal).  nDirect is 0. */
static inline int aggReqFill(const gpuds_agg *a, int64_t n, int bSorted, AggReq *r,
                             AggTermD *aT, uint64_t *aAmb){
  const gpuds_query *q = &a->q;
  int64_t off = 0, m;
  int t, k, f;
  memset(r, 0, sizeof(*r));
  r->n = n;
  r->lo = q->lo; r->hi = q->hi;
  r->checkKey = !bSorted && !(q->lo==INT64_MIN && q->hi==INT64_MAX);
  r->nSkip = q->nSkip>0 && q->aSkip ? q->nSkip : 0;
  r->nTerm = q->nTerm>0 ? q->nTerm : 0;
  r->nKey = a->nKey; r->nFn = a->nFn; r->iRepFn = a->iRepFn;
  for(t=0; t<r->nTerm; t++){
    memset(&aT[t], 0, sizeof(aT[t]));
    aT[t].iCol = q->aTerm[t].iCol; aT[t].op = q->aTerm[t].op;
    aT[t].cval = q->aTerm[t].val; aT[t].ctag = q->aTerm[t].tag;
    aT[t].exact = (uint8_t)(a->aTermExact && a->aTermExact[t] ? 1 : 0);
  }
  for(k=0; k<a->nKey; k++){
    AggKeyD *K = &r->aKey[k];
    K->iCol = a->aKey[k].iCol; K->op = a->aKey[k].op; K->n = a->aKey[k].n;
    m = aggAmbOfKey(&a->aKey[k]);
    if( m ) memcpy(&aAmb[off], a->aKey[k].aAmbig, (size_t)m*8);
    K->ambOff = off; K->nAmb = m; off += m;
  }
  r->stKind[0] = AGGK_BASE; r->stCol[0] = -1; r->stFn[0] = -1;
  r->nSt = 1;
  for(f=0; f<a->nFn; f++){
    AggFnD *F = &r->aFn[f];
    int kind = -1;
    F->fn = a->aFn[f].fn; F->iCol = a->aFn[f].iCol;
    m = aggAmbOfFn(&a->aFn[f]);
    if( m ) memcpy(&aAmb[off], a->aFn[f].aAmbig, (size_t)m*8);
    F->ambOff = off; F->nAmb = m; off += m;
    switch( F->fn ){
      case GPUDS_AGG_COUNT: kind = AGGK_COUNT; break;
      case GPUDS_AGG_SUM: kind = AGGK_SUM; break;
      case GPUDS_AGG_MIN: kind = AGGK_MIN; break;
      case GPUDS_AGG_MAX: kind = AGGK_MAX; break;
      case GPUDS_AGG_COUNTD: r->cdFn[r->nCd++] = f; break;
    }
    if( kind>=0 ){
      r->stKind[r->nSt] = kind; r->stCol[r->nSt] = F->iCol; r->stFn[r->nSt] = f;
      r->nSt++;
    }
  }
  return GPUDS_OK;
}

/* ----------------------------------------------- the result's arrays */

/* gpuds_aggres's 18 per-group arrays in the order of the struct: their
** element sizes, and which rows each has (0: nKey rows, 1: one, 2: nFn). */
#define AGG_RES_NARR 18
static const unsigned char aggResElem[AGG_RES_NARR] = {1,8,1,8, 8,8,8, 8,8,8,8,8,8,1,8,8,8,1};
static const unsigned char aggResKind[AGG_RES_NARR] = {0,0,0,0, 1,1,1, 2,2,2,2,2,2,2,2,2,2,2};

/* Pointers to o's 18 per-group array fields. */
static inline void aggResArrays(gpuds_aggres *o, void **ap[AGG_RES_NARR]){
  ap[0] = (void**)&o->aKeyTag; ap[1] = (void**)&o->aKeyVal;
  ap[2] = (void**)&o->aRepTag; ap[3] = (void**)&o->aRepVal;
  ap[4] = (void**)&o->aRepKey; ap[5] = (void**)&o->aRepRow; ap[6] = (void**)&o->aRows;
  ap[7] = (void**)&o->aN; ap[8] = (void**)&o->aNReal; ap[9] = (void**)&o->aPos;
  ap[10] = (void**)&o->aNeg; ap[11] = (void**)&o->aSum; ap[12] = (void**)&o->aErr;
  ap[13] = (void**)&o->aTag; ap[14] = (void**)&o->aVal; ap[15] = (void**)&o->aKey;
  ap[16] = (void**)&o->aRow; ap[17] = (void**)&o->aFlags;
}

/* Rows of array i for nKey keys and nFn aggregates, 0 where the request
** has none of it (bSum: a SUM among them; bMM: a MIN or MAX). */
static inline int aggResRows(int i, int nKey, int nFn, int bSum, int bMM){
  if( aggResKind[i]==0 ) return nKey;
  if( aggResKind[i]==1 ) return 1;
  if( i>=8 && i<=12 && !bSum ) return 0;
  if( i>=13 && !bMM ) return 0;
  return nFn;
}

/* Lay out the arrays of a result of stride S in one block (offsets 8-byte
** aligned) and point *o's fields into it at base (NULL where absent; base
** NULL: offsets only).  Returns the block's bytes. */
static inline size_t aggResLayout(int64_t S, int nKey, int nFn, int bSum, int bMM,
                                  char *base, gpuds_aggres *o){
  void **ap[AGG_RES_NARR];
  size_t off = 0;
  int i;
  memset(o, 0, sizeof(*o));
  aggResArrays(o, ap);
  for(i=0; i<AGG_RES_NARR; i++){
    size_t nb = (size_t)aggResRows(i, nKey, nFn, bSum, bMM)*(size_t)S*aggResElem[i];
    if( nb==0 ) continue;
    *ap[i] = base ? (void*)(base + off) : (void*)0;
    off += (nb + 7) & ~(size_t)7;
  }
  o->nGroup = S;
  return off;
}

/* The result *pR (gpudsAggResFree frees it) from the arrays of src
** (stride S): its nG groups are slots aSlot[0..nG) (NULL: 0..nG-1) of
** src, in that order.  GPUDS_OK or GPUDS_NOMEM (what was allocated is in
** *pR). */
static inline int aggResFromSlots(const gpuds_aggres *src, int64_t S, const int64_t *aSlot,
                                  int64_t nG, int nKey, int nFn, gpuds_aggres *pR){
  gpuds_aggres s2 = *src;
  void **aps[AGG_RES_NARR], **apd[AGG_RES_NARR];
  int i, rr;
  int64_t j;
  pR->nGroup = nG;
  if( nG==0 ) return GPUDS_OK;
  aggResArrays(&s2, aps);
  aggResArrays(pR, apd);
  for(i=0; i<AGG_RES_NARR; i++){
    const char *zs = (const char*)*aps[i];
    char *zd;
    size_t e = aggResElem[i];
    int nRow = aggResKind[i]==0 ? nKey : aggResKind[i]==1 ? 1 : nFn;
    if( zs==0 || nRow==0 ) continue;
    zd = (char*)malloc((size_t)nRow*(size_t)nG*e);
    if( zd==0 ) return GPUDS_NOMEM;
    *apd[i] = zd;
    for(rr=0; rr<nRow; rr++){
      const char *a = zs + (size_t)rr*(size_t)S*e;
      char *b = zd + (size_t)rr*(size_t)nG*e;
      if( aSlot==0 ){ memcpy(b, a, (size_t)nG*e); continue; }
      for(j=0; j<nG; j++) memcpy(b + (size_t)j*e, a + (size_t)aSlot[j]*e, e);
    }
  }
  return GPUDS_OK;
}

/* The state aggregate (AggReq.stFn) of aggregate f, or -1. */
static inline int aggStOfFn(const AggReq *r, int f){
  int y;
  for(y=1; y<r->nSt; y++) if( r->stFn[y]==f ) return y;
  return -1;
}

#endif /* GPUDS_AGGRULES_H */
