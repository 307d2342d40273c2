/*
** host_filter.h -- the host column set's filter, shared by its query
** (host_cols.c) and its aggregation (host_agg.c): a block of HOST_BLOCK
** rows at a time, the rows the query's key range and skip list leave
** (gpudsHostBlock), then one term after the other over them
** (gpudsHostTermPass), each a tight loop inlined into its caller's.
*/
#ifndef GPUDS_HOST_FILTER_H
#define GPUDS_HOST_FILTER_H

#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "host_cols.h"

#define HOST_BLOCK 1024

/* Number (tag, val) against the number of term pT, exactly: < 0, 0, > 0. */
static inline int numCmp(uint8_t tag, uint64_t val, uint8_t ctag, uint64_t cval,
                         double cd, int bExactD){
  if( tag==GPUDS_TAG_INT ){
    int64_t x = (int64_t)val;
    if( ctag==GPUDS_TAG_INT ){ int64_t c = (int64_t)cval; return x<c ? -1 : x>c; }
    if( x>=-9007199254740992LL && x<=9007199254740992LL ){
      double d = (double)x;
      return d<cd ? -1 : d>cd;
    }
    return gpudsColIntReal(x, cd);
  }else{
    double x = gpudsColDouble(val);
    if( bExactD ) return x<cd ? -1 : x>cd;
    return -gpudsColIntReal((int64_t)cval, x);
  }
}

/* The rows [b0, b1) of p that q's key range and skip list leave, into
** aSel, aMaybe 0 for each: their number.  *piSkip is where a sorted set's
** walk of the skip list is (-1 before the first block). */
static inline int64_t gpudsHostBlock(const HostCols *p, const gpuds_query *q, int64_t b0,
                                     int64_t b1, int64_t *piSkip, int64_t *aSel,
                                     uint8_t *aMaybe){
  int64_t i, n = 0, iSkip = *piSkip;
  if( p->bSorted && q->nSkip==0 ){
    for(i=b0; i<b1; i++){ aSel[n] = i; aMaybe[n++] = 0; }
    return n;
  }
  if( p->bSorted && q->nSkip>0 && iSkip<0 && b0<b1 ){
    iSkip = gpudsLowerBound(q->aSkip, q->nSkip, p->aKey[b0]);
  }
  for(i=b0; i<b1; i++){
    int64_t key = p->aKey[i];
    if( !p->bSorted && (key<q->lo || key>q->hi) ) continue;
    if( q->nSkip>0 ){
      if( p->bSorted ){
        while( iSkip<q->nSkip && q->aSkip[iSkip]<key ) iSkip++;
        if( iSkip<q->nSkip && q->aSkip[iSkip]==key ) continue;
      }else{
        int64_t k = gpudsLowerBound(q->aSkip, q->nSkip, key);
        if( k<q->nSkip && q->aSkip[k]==key ) continue;
      }
    }
    aSel[n] = i; aMaybe[n++] = 0;
  }
  *piSkip = iSkip;
  return n;
}

/* Keep the rows aSel[0..n) that term t of q may hold for (marking aMaybe
** where it says "maybe"; bExact: gpuds_agg's aTermExact flag of the term):
** their number.  A tight loop, numbers compared with a number inline. */
static inline int64_t gpudsHostTermPass(const HostCols *p, const gpuds_query *q, int t, int bExact,
                                        int64_t *aSel, uint8_t *aMaybe, int64_t n){
  const gpuds_term *pT = &q->aTerm[t];
  int op = pT->op;
  int64_t j, m = 0;
  const uint8_t *aTag = pT->iCol>=0 ? &p->aTag[(size_t)pT->iCol*(size_t)p->n] : 0;
  const uint64_t *aVal = pT->iCol>=0 ? &p->aVal[(size_t)pT->iCol*(size_t)p->n] : 0;
  uint32_t any = 0;
  uint8_t aT[3] = { 0xff, 0xff, 0xff };
  uint64_t aV[3] = { 0, 0, 0 };
  int nPair = 0;
  if( gpudsColAsPairs(op, pT->tag, pT->val, &any, aT, aV, &nPair) ){
    /* =, IS, IS [NOT] NULL: the values that may match are a few words and
    ** whole tags.  A text or blob whose 8 bytes match is a "maybe" but for
    ** the constant's own 8 bytes where bExact; a whole tag is a "maybe"
    ** (another affinity could convert it) but for IS [NOT] NULL. */
    const int rAny = op==GPUDS_CMP_ISNULL || op==GPUDS_CMP_NOTNULL ? 1 : 2;
    for(j=0; j<n; j++){
      int64_t i = aSel[j];
      uint8_t tag = aTag ? aTag[i] : GPUDS_TAG_INT;
      uint64_t val = aTag ? aVal[i] : (uint64_t)p->aKey[i];
      int r = 0;
      if( (any>>tag) & 1u ){
        r = rAny;
      }else if( (tag==aT[0] && val==aV[0]) || (tag==aT[1] && val==aV[1])
             || (tag==aT[2] && val==aV[2]) ){
        r = gpudsColClass(tag)<2 || (bExact && tag==pT->tag && val==pT->val) ? 1 : 2;
      }
      if( r ){ aSel[m] = i; aMaybe[m] = aMaybe[j] | (r==2); m++; }
    }
    return m;
  }
  if( op>=GPUDS_CMP_EQ && op<=GPUDS_CMP_GE
   && (pT->tag==GPUDS_TAG_INT || pT->tag==GPUDS_TAG_REAL) ){
    /* a number: numbers compare inline, other values by the rules */
    double cd = pT->tag==GPUDS_TAG_INT ? (double)(int64_t)pT->val : gpudsColDouble(pT->val);
    int bExactD = pT->tag==GPUDS_TAG_REAL
               || ((int64_t)pT->val>=-9007199254740992LL && (int64_t)pT->val<=9007199254740992LL);
    /* bit c+1 of the op's mask: does a comparison c (< 0, 0, > 0) pass */
    static const uint8_t aMask[] = { 0, 2, 5, 1, 3, 4, 6 };
    const unsigned mask = aMask[op];
    for(j=0; j<n; j++){
      int64_t i = aSel[j];
      uint8_t tag = aTag ? aTag[i] : GPUDS_TAG_INT;
      uint64_t val = aTag ? aVal[i] : (uint64_t)p->aKey[i];
      int r;
      if( tag==GPUDS_TAG_INT || tag==GPUDS_TAG_REAL ){
        int c = numCmp(tag, val, pT->tag, pT->val, cd, bExactD);
        r = (int)((mask >> (c+1)) & 1u);
      }else{
        r = gpudsColMatch(tag, val, op, pT->tag, pT->val);
      }
      if( r ){ aSel[m] = i; aMaybe[m] = aMaybe[j] | (r==2); m++; }
    }
    return m;
  }
  if( op==GPUDS_CMP_IN ){
    /* its own loop: the rules of IN alone, inlined */
    for(j=0; j<n; j++){
      int64_t i = aSel[j];
      uint8_t tag = aTag ? aTag[i] : GPUDS_TAG_INT;
      uint64_t val = aTag ? aVal[i] : (uint64_t)p->aKey[i];
      int r = gpudsColMatchAgg(tag, val, GPUDS_CMP_IN, pT->tag, pT->val, q->aInTag, q->aInVal,
                               bExact);
      if( r ){ aSel[m] = i; aMaybe[m] = aMaybe[j] | (r==2); m++; }
    }
    return m;
  }
  for(j=0; j<n; j++){
    int64_t i = aSel[j];
    uint8_t tag = aTag ? aTag[i] : GPUDS_TAG_INT;
    uint64_t val = aTag ? aVal[i] : (uint64_t)p->aKey[i];
    int r = gpudsColMatchAgg(tag, val, op, pT->tag, pT->val, q->aInTag, q->aInVal, bExact);
    if( r ){ aSel[m] = i; aMaybe[m] = aMaybe[j] | (r==2); m++; }
  }
  return m;
}

#endif
