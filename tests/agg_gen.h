/*
** agg_gen.h -- random column sets and aggregation requests, and the field
** by field comparison of two xAgg results, shared by the host test of the
** CUDA aggregation's rules (tests/test_agg_rules.c) and the GPU test
** (tests/gpu/test_agg.cu).  C, also compiled as C++.
**
** Sets: values from pools with many ties (integers near the int64 limits,
** reals equal to integers, -0.0, 1 and 1.0 and '1', text and blobs that
** share their first 4 bytes or their 8 bytes, NULL), per column one of a
** few shapes (everything mixed, a few small integers, many integers,
** numbers only, text only, reals); keys ascending or shuffled.  Requests:
** key ranges, terms of every operator (IN lists with flags, exact 8-byte
** terms), skip lists, 0 to 8 group keys on columns or the key (DIV and
** MOD by any divisor: 0, -1, INT64_MIN...), 0 to 10 aggregates of every
** kind with or without ambiguous 8-byte values, and the representative
** row's aggregate.
*/
#ifndef GPUDS_AGG_GEN_H
#define GPUDS_AGG_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "gpuds_aggrules.h"

typedef struct AgRng { uint64_t s; } AgRng;

static uint64_t agRnd(AgRng *g){
  uint64_t x = (g->s += 0x9e3779b97f4a7c15ULL);
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
static uint64_t agBelow(AgRng *g, uint64_t n){ return n ? agRnd(g)%n : 0; }

typedef struct AgSet {
  int nCol; int64_t n; int bSorted;
  int64_t *aKey; uint64_t *aRow; uint8_t *aTag; uint64_t *aVal;
} AgSet;

/* 8-byte text values: shared prefixes, equal 8 bytes for other texts. */
static const uint64_t agTextPool[] = {
  0x6162636400000001ULL, 0x6162636400000002ULL, 0x6162636400000003ULL,
  0x6162000000000009ULL, 0x7a7a7a7a11111111ULL, 0x7a7a7a7a11111112ULL,
  0x0000000000000005ULL, 0xffffffff00000000ULL, 0x31000000a6afa5c8ULL /* text "1" */ };
#define AG_NTEXT (sizeof(agTextPool)/8)

static void agVal(AgRng *g, uint8_t *pT, uint64_t *pV){
  static const int64_t aInt[] = { 0, 1, -1, 2, 3, 7, -7, 100, INT64_MAX, INT64_MIN,
    INT64_MAX-1, INT64_MIN+1, 1LL<<53, (1LL<<53)+1, 4611686018427387904LL, -4611686018427387904LL };
  static const double aReal[] = { 0.0, -0.0, 1.0, 1.5, -1.5, 2.0, 7.5, -7.0, 1e300, -1e300,
    9223372036854775808.0, -9223372036854775808.0, 9007199254740992.0, 0.1, 1e-300, 100.0,
    0.5, -0.5, 3.25, -2.75 };
  switch( agBelow(g, 10) ){
    case 0: *pT = GPUDS_TAG_NULL; *pV = 0; break;
    case 1: case 2: case 3: *pT = GPUDS_TAG_INT; *pV = (uint64_t)aInt[agBelow(g, 16)]; break;
    case 4: *pT = GPUDS_TAG_INT; *pV = (uint64_t)((int64_t)agBelow(g, 21)-10); break;
    case 5: case 6: *pT = GPUDS_TAG_REAL; *pV = gpudsColReal(aReal[agBelow(g, 20)]); break;
    case 7: case 8: *pT = GPUDS_TAG_TEXT; *pV = agTextPool[agBelow(g, AG_NTEXT)]; break;
    default: *pT = GPUDS_TAG_BLOB; *pV = agTextPool[agBelow(g, AG_NTEXT)]; break;
  }
}

/* A value of column shape iMode (0 mixed, 1 a few small integers, 2 many
** integers, 3 numbers and NULL, 4 text, 5 reals). */
static void agColVal(AgRng *g, int iMode, uint8_t *pT, uint64_t *pV){
  switch( iMode ){
    case 1: *pT = GPUDS_TAG_INT; *pV = agBelow(g, 6); break;
    case 2: *pT = GPUDS_TAG_INT; *pV = (uint64_t)((int64_t)agBelow(g, 3000) - 1000); break;
    case 3:
      agVal(g, pT, pV);
      if( *pT>=GPUDS_TAG_TEXT ){ *pT = GPUDS_TAG_INT; *pV = agBelow(g, 5); }
      if( *pT==GPUDS_TAG_REAL && agBelow(g, 2) ){ *pV = gpudsColReal((double)agBelow(g, 5)); }
      break;
    case 4: *pT = GPUDS_TAG_TEXT; *pV = agTextPool[agBelow(g, AG_NTEXT)]; break;
    case 5: *pT = GPUDS_TAG_REAL; *pV = gpudsColReal(((double)agBelow(g, 4000) - 2000.0)/8.0); break;
    default: agVal(g, pT, pV); break;
  }
}

/* A random set of n rows, nCol columns (keys distinct; ascending if bSorted). */
static void agSetMake(AgRng *g, AgSet *s, int64_t n, int nCol, int bSorted){
  int64_t i, k;
  int c;
  s->n = n; s->nCol = nCol; s->bSorted = bSorted;
  s->aKey = (int64_t*)malloc((size_t)(n+1)*8);
  s->aRow = (uint64_t*)malloc((size_t)(n+1)*8);
  s->aTag = (uint8_t*)malloc((size_t)(n+1)*(size_t)(nCol+1));
  s->aVal = (uint64_t*)malloc((size_t)(n+1)*(size_t)(nCol+1)*8);
  k = (int64_t)agBelow(g, 1000) - 500;
  for(i=0; i<n; i++){ k += 1 + (int64_t)agBelow(g, 3); s->aKey[i] = k; }
  if( agBelow(g, 4)==0 && n>0 ) s->aKey[0] = INT64_MIN;
  if( agBelow(g, 4)==0 && n>1 ) s->aKey[n-1] = INT64_MAX;
  if( !bSorted ){
    for(i=n-1; i>0; i--){
      int64_t j = (int64_t)agBelow(g, (uint64_t)i+1), t = s->aKey[i];
      s->aKey[i] = s->aKey[j]; s->aKey[j] = t;
    }
  }
  for(i=0; i<n; i++) s->aRow[i] = 0x1000 + (uint64_t)i*2;
  for(c=0; c<nCol; c++){
    int iMode = (int)agBelow(g, 6);
    for(i=0; i<n; i++){
      size_t o = (size_t)c*(size_t)n + (size_t)i;
      agColVal(g, iMode, &s->aTag[o], &s->aVal[o]);
    }
  }
}

static void agSetFree(AgSet *s){
  free(s->aKey); free(s->aRow); free(s->aTag); free(s->aVal);
  memset(s, 0, sizeof(*s));
}

typedef struct AgReq {
  gpuds_agg a;
  gpuds_term aTerm[6];
  uint8_t aExact[6];
  uint8_t aInTag[32]; uint64_t aInVal[32];
  gpuds_aggkey aKey[GPUDS_AGG_KEY_MAX];
  gpuds_aggfn aFn[10];
  uint64_t aAmbig[4];
  int64_t *aSkip;
} AgReq;

static int agCmpU64(const void *x, const void *y){
  uint64_t a = *(const uint64_t*)x, b = *(const uint64_t*)y;
  return a<b ? -1 : a>b;
}

/* A random request on s into *r (free with agReqFree). */
static void agReqMake(AgRng *g, AgReq *r, const AgSet *s){
  static const int aOp[] = { GPUDS_CMP_EQ, GPUDS_CMP_NE, GPUDS_CMP_LT, GPUDS_CMP_LE,
    GPUDS_CMP_GT, GPUDS_CMP_GE, GPUDS_CMP_ISNULL, GPUDS_CMP_NOTNULL, GPUDS_CMP_ISNOT,
    GPUDS_CMP_IN, GPUDS_CMP_ANYEQ, GPUDS_CMP_TLT, GPUDS_CMP_TGE, GPUDS_CMP_ULE, GPUDS_CMP_UGT };
  static const int64_t aN[] = { 0, 1, -1, 2, 3, 7, -7, 100, 10, INT64_MIN, INT64_MAX };
  gpuds_agg *a = &r->a;
  gpuds_query *q = &a->q;
  int t, nIn = 0, k, f, nAmbig = (int)agBelow(g, 4);
  memset(r, 0, sizeof(*r));
  q->lo = INT64_MIN; q->hi = INT64_MAX;
  if( agBelow(g, 3)==0 && s->n>0 ){
    int64_t x = s->aKey[agBelow(g, s->n)], y = s->aKey[agBelow(g, s->n)];
    q->lo = x<y ? x : y; q->hi = x<y ? y : x;
    if( agBelow(g, 8)==0 ){ int64_t z = q->lo; q->lo = q->hi; q->hi = z; }   /* empty */
  }
  for(k=0; k<nAmbig; k++) r->aAmbig[k] = agTextPool[agBelow(g, AG_NTEXT)];
  qsort(r->aAmbig, (size_t)nAmbig, 8, agCmpU64);
  for(k=1; k<nAmbig; k++){
    if( r->aAmbig[k]==r->aAmbig[k-1] ){
      memmove(&r->aAmbig[k], &r->aAmbig[k+1], (size_t)(nAmbig-k-1)*8); nAmbig--; k--;
    }
  }
  q->nTerm = agBelow(g, 3)==0 ? 0 : (int)agBelow(g, 4);
  for(t=0; t<q->nTerm; t++){
    gpuds_term *pT = &r->aTerm[t];
    pT->iCol = (int)agBelow(g, (uint64_t)s->nCol+1) - 1;
    pT->op = aOp[agBelow(g, sizeof(aOp)/sizeof(aOp[0]))];
    if( pT->op==GPUDS_CMP_IN ){
      int m = 1 + (int)agBelow(g, 4), j, n = 0;
      uint8_t tt[4]; uint64_t vv[4];
      for(j=0; j<m; j++){      /* sorted by gpudsColInCompare, no repeats */
        uint8_t tg; uint64_t vl; int x, y;
        do{ agVal(g, &tg, &vl); }while( tg==GPUDS_TAG_NULL );
        for(x=0; x<n && gpudsColInCompare(tt[x], vv[x], tg, vl)<0; x++){}
        if( x<n && gpudsColInCompare(tt[x], vv[x], tg, vl)==0 ) continue;
        for(y=n; y>x; y--){ tt[y] = tt[y-1]; vv[y] = vv[y-1]; }
        tt[x] = tg; vv[x] = vl; n++;
      }
      for(j=0; j<n; j++){ r->aInTag[nIn+j] = tt[j]; r->aInVal[nIn+j] = vv[j]; }
      pT->val = ((uint64_t)nIn<<32) | (uint32_t)n;
      pT->tag = (uint8_t)(agBelow(g, 4)==0 ? GPUDS_IN_TEXT : 0);
      nIn += n;
    }else{
      do{ agVal(g, &pT->tag, &pT->val); }while( pT->tag==GPUDS_TAG_NULL
          && pT->op!=GPUDS_CMP_ISNULL && pT->op!=GPUDS_CMP_NOTNULL );
      if( agBelow(g, 3)==0 && s->n>0 && pT->iCol>=0 ){      /* a value of the column */
        size_t o = (size_t)pT->iCol*(size_t)s->n + agBelow(g, s->n);
        if( s->aTag[o]!=GPUDS_TAG_NULL ){ pT->tag = s->aTag[o]; pT->val = s->aVal[o]; }
      }
    }
    r->aExact[t] = (uint8_t)agBelow(g, 2);
  }
  q->aTerm = r->aTerm;
  q->aInTag = r->aInTag; q->aInVal = r->aInVal; q->nIn = nIn;
  if( agBelow(g, 2) ) a->aTermExact = r->aExact;
  if( agBelow(g, 3)==0 && s->n>0 ){
    int64_t m = (int64_t)agBelow(g, 8) + 1, j, n = 0;
    r->aSkip = (int64_t*)malloc((size_t)m*8);
    for(j=0; j<m; j++){
      int64_t x = agBelow(g, 4)==0 ? (int64_t)agBelow(g, 1000000) : s->aKey[agBelow(g, s->n)];
      int64_t y;
      for(y=0; y<n && r->aSkip[y]<x; y++){}
      if( y<n && r->aSkip[y]==x ) continue;
      memmove(&r->aSkip[y+1], &r->aSkip[y], (size_t)(n-y)*8);
      r->aSkip[y] = x; n++;
    }
    q->aSkip = r->aSkip; q->nSkip = n;
  }
  a->nKey = agBelow(g, 6)==0 ? 3 + (int)agBelow(g, 6) : (int)agBelow(g, 3);
  for(k=0; k<a->nKey; k++){
    gpuds_aggkey *pK = &r->aKey[k];
    pK->iCol = (int)agBelow(g, (uint64_t)s->nCol+1) - 1;
    pK->op = agBelow(g, 3)==0 ? (int)agBelow(g, 2)+1 : GPUDS_AGGKEY_COL;
    pK->n = aN[agBelow(g, sizeof(aN)/sizeof(aN[0]))];
    if( agBelow(g, 2) ){ pK->aAmbig = r->aAmbig; pK->nAmbig = nAmbig; }
  }
  a->aKey = r->aKey;
  a->nFn = (int)agBelow(g, 11);
  a->iRepFn = -1;
  for(f=0; f<a->nFn; f++){
    gpuds_aggfn *pF = &r->aFn[f];
    pF->fn = 1 + (int)agBelow(g, 6);
    pF->iCol = (int)agBelow(g, (uint64_t)s->nCol+1) - 1;
    if( agBelow(g, 2) ){ pF->aAmbig = r->aAmbig; pF->nAmbig = nAmbig; }
    if( (pF->fn==GPUDS_AGG_MIN || pF->fn==GPUDS_AGG_MAX) && agBelow(g, 2) ) a->iRepFn = f;
  }
  a->aFn = r->aFn;
}

static void agReqFree(AgReq *r){ free(r->aSkip); r->aSkip = 0; }

/* Make request r on a set of nCol columns invalid in one random way, or
** leave it: a key's or an aggregate's column or kind out of range, the
** representative of no MIN or MAX, an IN slice past nIn, too many keys or
** aggregates. */
static void agReqBreak(AgRng *g, AgReq *r, int nCol){
  switch( agBelow(g, 10) ){
    case 0: if( r->a.nKey ) r->aKey[0].iCol = nCol + (int)agBelow(g, 2); break;
    case 1: if( r->a.nKey ) r->aKey[0].op = 3; break;
    case 2: if( r->a.nFn ) r->aFn[0].fn = agBelow(g, 2) ? 0 : 7; break;
    case 3: if( r->a.nFn ) r->aFn[0].iCol = agBelow(g, 2) ? -2 : nCol; break;
    case 4: r->a.iRepFn = r->a.nFn; break;
    case 5: if( r->a.nFn ){ r->a.iRepFn = 0; r->aFn[0].fn = GPUDS_AGG_SUM; } break;
    case 6: if( r->a.q.nTerm ){ r->aTerm[0].op = GPUDS_CMP_IN; r->aTerm[0].val = 40; } break;
    case 7: r->a.nKey = GPUDS_AGG_KEY_MAX+1; break;
    case 8: r->a.nFn = GPUDS_AGG_FN_MAX+1; break;
    default: break;
  }
}

/* The rules' view of set s under request a (pointers into s and a; the
** term array aT of a->q.nTerm entries, the ambiguous lists into aAmb). */
static int agReqView(const AgSet *s, const gpuds_agg *a, AggReq *r, AggTermD *aT, uint64_t *aAmb){
  int rc = aggReqFill(a, s->n, s->bSorted, r, aT, aAmb);
  r->key = s->aKey; r->row = s->aRow; r->tag = s->aTag; r->val = s->aVal;
  r->term = aT; r->skip = a->q.aSkip; r->inTag = a->q.aInTag; r->inVal = a->q.aInVal;
  r->amb = aAmb;
  return rc;
}

/* ----------------------------------------------------------- compare */

/* Sum of the magnitudes of the REAL values of aggregate f of group g of
** result x, found by classifying every row with the rules (*pnMag:
** nFn*nGroup doubles, malloc()ed). */
static double *agSumMags(const AgSet *s, const gpuds_agg *a, const gpuds_aggres *x){
  AggTermD aT[8];
  uint64_t aAmb[(GPUDS_AGG_KEY_MAX+GPUDS_AGG_FN_MAX)*4];
  AggReq r;
  int64_t i, nG = x->nGroup;
  double *aMag = (double*)calloc((size_t)(nG>0 ? nG : 1)*(size_t)(a->nFn>0 ? a->nFn : 1), sizeof(double));
  if( agReqView(s, a, &r, aT, aAmb)!=GPUDS_OK || nG==0 ) return aMag;
  for(i=0; i<s->n; i++){
    int64_t lo = 0, hi = nG, g;
    int k, f;
    if( s->aKey[i]<a->q.lo || s->aKey[i]>a->q.hi ) continue;
    r.checkKey = 0;
    if( aggClassify(&r, i)!=AGG_ST_COUNTED ) continue;
    while( lo<hi ){          /* the group: binary search of the key tuple */
      int64_t mid = lo + (hi-lo)/2;
      int c = 0;
      for(k=0; k<a->nKey && c==0; k++){
        uint8_t ct; uint64_t cv;
        aggKeyCanon(&r, k, i, &ct, &cv);
        c = gpudsColGroupCmp(x->aKeyTag[k*nG+mid], x->aKeyVal[k*nG+mid], ct, cv);
      }
      if( c==0 ){ lo = mid; break; }
      if( c<0 ) lo = mid+1; else hi = mid;
    }
    g = lo<nG ? lo : nG-1;
    for(f=0; f<a->nFn; f++){
      uint8_t tg; uint64_t vl;
      if( a->aFn[f].fn!=GPUDS_AGG_SUM ) continue;
      aggColOf(&r, a->aFn[f].iCol, i, &tg, &vl);
      if( tg==GPUDS_TAG_REAL ) aMag[(size_t)f*nG+g] += fabs(gpudsColDouble(vl));
    }
  }
  return aMag;
}

#define AG_I64(arr, o)  ((arr) ? (int64_t)(arr)[o] : 0)

/* Compare result x (the one tested) with y (the reference), field by field
** as gpuds_backend.h says (NULL arrays as zeros; REAL sums within 1e-15 of
** the sum of the magnitudes).  Prints the first difference under zWhat;
** returns the number of differences. */
static int agCompare(const AgSet *s, const gpuds_agg *a, const gpuds_aggres *x,
                     const gpuds_aggres *y, const char *zWhat){
  int64_t nG = y->nGroup, j, i;
  int k, f, nBad = 0;
  double *aMag = 0;
#define AG_BAD(...) do{ if( nBad++==0 ){ printf("%s: ", zWhat); printf(__VA_ARGS__); printf("\n"); } }while(0)
  if( x->nGroup!=y->nGroup ) AG_BAD("groups %lld, expected %lld", (long long)x->nGroup, (long long)nG);
  if( x->nLeft!=y->nLeft ) AG_BAD("leftover %lld, expected %lld", (long long)x->nLeft, (long long)y->nLeft);
  if( x->nRead!=y->nRead ) AG_BAD("read %lld, expected %lld", (long long)x->nRead, (long long)y->nRead);
  if( nBad ) return nBad;
  for(i=0; i<y->nLeft; i++){
    if( x->aLeftKey[i]!=y->aLeftKey[i] || x->aLeftRow[i]!=y->aLeftRow[i] ){
      AG_BAD("leftover row %lld: key %lld row %llx, expected %lld %llx", (long long)i,
             (long long)x->aLeftKey[i], (unsigned long long)x->aLeftRow[i],
             (long long)y->aLeftKey[i], (unsigned long long)y->aLeftRow[i]);
      break;
    }
  }
  for(j=0; j<nG; j++){
    for(k=0; k<a->nKey; k++){
      size_t o = (size_t)k*nG + j;
      if( AG_I64(x->aKeyTag, o)!=AG_I64(y->aKeyTag, o) || AG_I64(x->aKeyVal, o)!=AG_I64(y->aKeyVal, o) ){
        AG_BAD("group %lld key %d: (%d, %llx), expected (%d, %llx)", (long long)j, k,
               (int)AG_I64(x->aKeyTag, o), (unsigned long long)AG_I64(x->aKeyVal, o),
               (int)AG_I64(y->aKeyTag, o), (unsigned long long)AG_I64(y->aKeyVal, o));
      }
      if( AG_I64(x->aRepTag, o)!=AG_I64(y->aRepTag, o) || AG_I64(x->aRepVal, o)!=AG_I64(y->aRepVal, o) ){
        AG_BAD("group %lld representative value %d", (long long)j, k);
      }
    }
    if( AG_I64(x->aRows, j)!=AG_I64(y->aRows, j) ){
      AG_BAD("group %lld rows %lld, expected %lld", (long long)j, (long long)AG_I64(x->aRows, j),
             (long long)AG_I64(y->aRows, j));
    }
    if( AG_I64(x->aRepKey, j)!=AG_I64(y->aRepKey, j) || AG_I64(x->aRepRow, j)!=AG_I64(y->aRepRow, j) ){
      AG_BAD("group %lld representative row: key %lld, expected %lld", (long long)j,
             (long long)AG_I64(x->aRepKey, j), (long long)AG_I64(y->aRepKey, j));
    }
    for(f=0; f<a->nFn; f++){
      size_t o = (size_t)f*nG + j;
      int fn = a->aFn[f].fn;
      if( AG_I64(x->aN, o)!=AG_I64(y->aN, o) ){
        AG_BAD("group %lld aggregate %d (fn %d) n %lld, expected %lld", (long long)j, f, fn,
               (long long)AG_I64(x->aN, o), (long long)AG_I64(y->aN, o));
      }
      if( AG_I64(x->aNReal, o)!=AG_I64(y->aNReal, o) || AG_I64(x->aPos, o)!=AG_I64(y->aPos, o)
       || AG_I64(x->aNeg, o)!=AG_I64(y->aNeg, o) ){
        AG_BAD("group %lld aggregate %d (fn %d): sum counts or integer sums", (long long)j, f, fn);
      }
      if( fn==GPUDS_AGG_SUM ){
        double xs = x->aSum ? x->aSum[o] : 0, xe = x->aErr ? x->aErr[o] : 0;
        double ys = y->aSum ? y->aSum[o] : 0, ye = y->aErr ? y->aErr[o] : 0;
        if( !aMag ) aMag = agSumMags(s, a, y);
        if( isfinite(xs) && isfinite(ys) ){
          long double d = ((long double)xs + xe) - ((long double)ys + ye);
          if( d<0 ) d = -d;
          if( d > 1e-15L*aMag[o] + 1e-300L ){
            AG_BAD("group %lld aggregate %d sum %.17g%+.3g, expected %.17g%+.3g (magnitudes %.6g)",
                   (long long)j, f, xs, xe, ys, ye, aMag[o]);
          }
        }else if( isfinite(xs) || isfinite(ys) ){
          AG_BAD("group %lld aggregate %d sum %g, expected %g", (long long)j, f, xs, ys);
        }
      }
      if( AG_I64(x->aTag, o)!=AG_I64(y->aTag, o) || AG_I64(x->aVal, o)!=AG_I64(y->aVal, o)
       || AG_I64(x->aKey, o)!=AG_I64(y->aKey, o) || AG_I64(x->aRow, o)!=AG_I64(y->aRow, o) ){
        AG_BAD("group %lld aggregate %d (fn %d) extreme (%d, %llx, key %lld), expected (%d, %llx, key %lld)",
               (long long)j, f, fn, (int)AG_I64(x->aTag, o), (unsigned long long)AG_I64(x->aVal, o),
               (long long)AG_I64(x->aKey, o), (int)AG_I64(y->aTag, o),
               (unsigned long long)AG_I64(y->aVal, o), (long long)AG_I64(y->aKey, o));
      }
      if( AG_I64(x->aFlags, o)!=AG_I64(y->aFlags, o) ){
        AG_BAD("group %lld aggregate %d flags %d, expected %d", (long long)j, f,
               (int)AG_I64(x->aFlags, o), (int)AG_I64(y->aFlags, o));
      }
    }
    if( nBad ) break;
  }
#undef AG_BAD
  free(aMag);
  return nBad;
}

#endif /* GPUDS_AGG_GEN_H */
