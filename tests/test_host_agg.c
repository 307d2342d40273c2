/*
** test_host_agg.c -- the host column set's aggregation (xAgg,
** backend/host_agg.c) against a naive reference written from the contract
** in gpuds_backend.h: rows visited one by one in key order, groups found
** by a linear search, every aggregate stepped as the contract says.
** Random sets (values from pools with many ties: integers near the int64
** limits, reals equal to integers, -0.0, text sharing prefixes and 8-byte
** values, blobs, NULL; keys in order or not) and random requests (terms,
** IN lists, skipped keys, exact 8-byte terms, keys on columns, DIV and
** MOD by any divisor, every aggregate, ambiguous value lists, the
** representative's aggregate).  Every field must be equal, the REAL sums
** within a relative 1e-15 of the sum of the magnitudes.  Also: requests
** outside the contract give GPUDS_MISUSE and nothing to free.  The same
** filters through the set's xQuery (the filter it shares with xAgg, a
** share of the rows a thread, nMost) against a naive filter.
** Usage: test_host_agg [seed [rounds]]
*/
#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "gpuds_mix.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

static const gpuds_cols_ops *H = &gpudsHostColsOps;
static uint64_t rngState;
static uint64_t rnd(void){ return gpudsMix64(rngState += 0x9e3779b97f4a7c15ULL); }
static uint64_t below(uint64_t n){ return n ? rnd()%n : 0; }
static int nFail = 0, nCheck = 0;

#define CHECK(c, ...) do{ nCheck++; if( !(c) ){ nFail++; \
  if( nFail<20 ){ printf("FAIL line %d: ", __LINE__); printf(__VA_ARGS__); printf("\n"); } } }while(0)

/* ------------------------------------------------------------ the data */
typedef struct Set {
  int nCol; int64_t n; int bSorted;
  int64_t *aKey; uint64_t *aRow; uint8_t *aTag; uint64_t *aVal;
} Set;

static const uint64_t aTextPool[] = {   /* 8-byte values: shared prefixes */
  0x6162636400000001ULL, 0x6162636400000002ULL, 0x6162636400000003ULL,
  0x6162000000000009ULL, 0x7a7a7a7a11111111ULL, 0x7a7a7a7a11111112ULL,
  0x0000000000000005ULL, 0xffffffff00000000ULL };
#define NTEXT (sizeof(aTextPool)/8)

static void rndVal(uint8_t *pT, uint64_t *pV){
  static const int64_t aInt[] = { 0, 1, -1, 2, 3, 7, -7, 100, INT64_MAX, INT64_MIN,
    INT64_MAX-1, INT64_MIN+1, 1LL<<53, (1LL<<53)+1, 4611686018427387904LL, -4611686018427387904LL };
  static const double aReal[] = { 0.0, -0.0, 1.0, 1.5, -1.5, 2.0, 7.5, -7.0, 1e300, -1e300,
    9223372036854775808.0, -9223372036854775808.0, 9007199254740992.0, 0.1, 1e-300, 100.0 };
  switch( below(10) ){
    case 0: *pT = GPUDS_TAG_NULL; *pV = 0; break;
    case 1: case 2: case 3: *pT = GPUDS_TAG_INT; *pV = (uint64_t)aInt[below(16)]; break;
    case 4: *pT = GPUDS_TAG_INT; *pV = (uint64_t)(int64_t)(below(21)-10); break;
    case 5: case 6: *pT = GPUDS_TAG_REAL; *pV = gpudsColReal(aReal[below(16)]); break;
    case 7: case 8: *pT = GPUDS_TAG_TEXT; *pV = aTextPool[below(NTEXT)]; break;
    default: *pT = GPUDS_TAG_BLOB; *pV = aTextPool[below(NTEXT)]; break;
  }
}

/* A random set of n rows and nCol columns; bNum: numbers and NULL only. */
static void setMake(Set *s, int64_t n, int nCol, int bSorted, int bNum){
  int64_t i;
  int c;
  s->n = n; s->nCol = nCol; s->bSorted = bSorted;
  s->aKey = malloc((size_t)(n+1)*8); s->aRow = malloc((size_t)(n+1)*8);
  s->aTag = malloc((size_t)(n+1)*nCol); s->aVal = malloc((size_t)(n+1)*nCol*8);
  {
    int64_t k = (int64_t)below(1000) - 500;
    for(i=0; i<n; i++){ k += 1 + (int64_t)below(3); s->aKey[i] = k; }
    if( below(4)==0 && n>0 ) s->aKey[0] = INT64_MIN;
  }
  if( !bSorted ){
    for(i=n-1; i>0; i--){
      int64_t j = (int64_t)below((uint64_t)i+1), t = s->aKey[i];
      s->aKey[i] = s->aKey[j]; s->aKey[j] = t;
    }
  }
  for(i=0; i<n; i++) s->aRow[i] = 0x1000 + (uint64_t)i*2;
  for(c=0; c<nCol; c++){
    int iMode = (int)below(3);
    for(i=0; i<n; i++){
      size_t o = (size_t)c*n+i;
      rndVal(&s->aTag[o], &s->aVal[o]);
      if( bNum && s->aTag[o]>=GPUDS_TAG_TEXT ){ s->aTag[o] = GPUDS_TAG_INT; s->aVal[o] = below(5); }
      if( iMode==0 && s->aTag[o]==GPUDS_TAG_INT ) s->aVal[o] = below(6);  /* few groups */
    }
  }
}

static void setFree(Set *s){
  free(s->aKey); free(s->aRow); free(s->aTag); free(s->aVal);
}

static void colOf(const Set *s, int iCol, int64_t i, uint8_t *pT, uint64_t *pV){
  if( iCol<0 ){ *pT = GPUDS_TAG_INT; *pV = (uint64_t)s->aKey[i]; return; }
  *pT = s->aTag[(size_t)iCol*s->n+i]; *pV = s->aVal[(size_t)iCol*s->n+i];
}

/* ---------------------------------------------------------- a request */
typedef struct Req {
  gpuds_agg a;
  gpuds_term aTerm[6];
  uint8_t aExact[6];
  uint8_t aInTag[32]; uint64_t aInVal[32];
  gpuds_aggkey aKey[GPUDS_AGG_KEY_MAX];
  gpuds_aggfn aFn[10];
  uint64_t aAmbig[4];
  int64_t *aSkip;
} Req;

static int cmpIn(const void *x, const void *y){
  const uint64_t *a = x, *b = y;   /* (tag<<0 in high word unused) */
  return *a<*b ? -1 : *a>*b;
}

static void reqMake(Req *r, const Set *s){
  gpuds_agg *a = &r->a;
  gpuds_query *q = &a->q;
  int t, nIn = 0, k, f, nAmbig = (int)below(3);
  memset(r, 0, sizeof(*r));
  q->lo = INT64_MIN; q->hi = INT64_MAX;
  if( below(3)==0 && s->n>0 ){
    int64_t x = s->aKey[below(s->n)], y = s->aKey[below(s->n)];
    q->lo = x<y ? x : y; q->hi = x<y ? y : x;
  }
  for(k=0; k<nAmbig; k++) r->aAmbig[k] = aTextPool[below(NTEXT)];
  qsort(r->aAmbig, nAmbig, 8, cmpIn);
  for(k=1; k<nAmbig; k++){ if( r->aAmbig[k]==r->aAmbig[k-1] ){ memmove(&r->aAmbig[k], &r->aAmbig[k+1], (nAmbig-k-1)*8); nAmbig--; k--; } }
  q->nTerm = (int)below(4);
  for(t=0; t<q->nTerm; t++){
    gpuds_term *pT = &r->aTerm[t];
    static const int aOp[] = { GPUDS_CMP_EQ, GPUDS_CMP_NE, GPUDS_CMP_LT, GPUDS_CMP_LE,
      GPUDS_CMP_GT, GPUDS_CMP_GE, GPUDS_CMP_ISNULL, GPUDS_CMP_NOTNULL, GPUDS_CMP_ISNOT, GPUDS_CMP_IN,
      GPUDS_CMP_ANYEQ };
    pT->iCol = (int)below(s->nCol+1) - 1;
    pT->op = aOp[below(sizeof(aOp)/sizeof(aOp[0]))];
    if( pT->op==GPUDS_CMP_IN ){
      int m = 1 + (int)below(4), j;
      /* sorted by gpudsColInCompare, duplicates dropped */
      uint8_t tt[4]; uint64_t vv[4]; int n = 0;
      for(j=0; j<m; j++){
        uint8_t tg; uint64_t vl; int x, y;
        do{ rndVal(&tg, &vl); }while( tg==GPUDS_TAG_NULL );
        for(x=0; x<n && gpudsColInCompare(tt[x], vv[x], tg, vl)<0; x++){}
        if( x<n && gpudsColInCompare(tt[x], vv[x], tg, vl)==0 ) continue;
        for(y=n; y>x; y--){ tt[y] = tt[y-1]; vv[y] = vv[y-1]; }
        tt[x] = tg; vv[x] = vl; n++;
      }
      for(j=0; j<n; j++){ r->aInTag[nIn+j] = tt[j]; r->aInVal[nIn+j] = vv[j]; }
      pT->val = ((uint64_t)nIn<<32) | (uint32_t)n;
      pT->tag = 0;
      nIn += n;
    }else{
      do{ rndVal(&pT->tag, &pT->val); }while( pT->tag==GPUDS_TAG_NULL
          && pT->op!=GPUDS_CMP_ISNULL && pT->op!=GPUDS_CMP_NOTNULL );
    }
    r->aExact[t] = (uint8_t)below(2);
  }
  q->aTerm = r->aTerm;
  q->aInTag = r->aInTag; q->aInVal = r->aInVal; q->nIn = nIn;
  if( below(2) ) a->aTermExact = r->aExact;
  if( below(3)==0 && s->n>0 ){
    int64_t m = (int64_t)below(8) + 1, j, n = 0;
    r->aSkip = malloc((size_t)m*8);
    for(j=0; j<m; j++){
      int64_t x = below(4)==0 ? (int64_t)below(1000000) : s->aKey[below(s->n)];
      int64_t y;
      for(y=0; y<n && r->aSkip[y]<x; y++){}
      if( y<n && r->aSkip[y]==x ) continue;
      memmove(&r->aSkip[y+1], &r->aSkip[y], (size_t)(n-y)*8);
      r->aSkip[y] = x; n++;
    }
    q->aSkip = r->aSkip; q->nSkip = n;
  }
  a->nKey = (int)below(4);
  for(k=0; k<a->nKey; k++){
    static const int64_t aN[] = { 0, 1, -1, 2, 3, 7, -7, 100, INT64_MIN, INT64_MAX };
    gpuds_aggkey *pK = &r->aKey[k];
    pK->iCol = (int)below(s->nCol+1) - 1;
    pK->op = below(3)==0 ? (int)below(2)+1 : GPUDS_AGGKEY_COL;
    pK->n = aN[below(10)];
    if( below(2) ){ pK->aAmbig = r->aAmbig; pK->nAmbig = nAmbig; }
  }
  a->aKey = r->aKey;
  a->nKey = a->nKey;
  a->nFn = (int)below(7);
  a->iRepFn = -1;
  for(f=0; f<a->nFn; f++){
    gpuds_aggfn *pF = &r->aFn[f];
    pF->fn = 1 + (int)below(6);
    pF->iCol = (int)below(s->nCol+1) - 1;
    if( below(2) ){ pF->aAmbig = r->aAmbig; pF->nAmbig = nAmbig; }
    if( (pF->fn==GPUDS_AGG_MIN || pF->fn==GPUDS_AGG_MAX) && below(2) ) a->iRepFn = f;
  }
  a->aFn = r->aFn;
}

/* ------------------------------------------------------ the reference */
typedef struct RGroup {
  uint8_t kt[GPUDS_AGG_KEY_MAX]; uint64_t kv[GPUDS_AGG_KEY_MAX];
  int64_t rows, iFirst, iLast;
  int64_t n[10], nReal[10], pos[10], neg[10];
  long double sum[10], mag[10];
  uint8_t tag[10]; uint64_t val[10]; int64_t idx[10];
  uint8_t *dT[10]; uint64_t *dV[10]; int64_t nD[10];   /* all values seen */
} RGroup;

static int64_t satAdd(int64_t a, int64_t b){
  if( b>0 ) return a > INT64_MAX - b ? INT64_MAX : a + b;
  return a < INT64_MIN - b ? INT64_MIN : a + b;
}

static int isAmbig(uint8_t t, uint64_t v, const uint64_t *a, int64_t n){
  int64_t i;
  if( t!=GPUDS_TAG_TEXT && t!=GPUDS_TAG_BLOB ) return 0;
  for(i=0; i<n; i++) if( a[i]==v ) return 1;
  return 0;
}

static const Set *gSet;
static int keyCmpQ(const void *a, const void *b){
  int64_t x = gSet->aKey[*(const int64_t*)a], y = gSet->aKey[*(const int64_t*)b];
  return x<y ? -1 : x>y;
}

static int tupleCmp(const RGroup *x, const RGroup *y, int nKey){
  int k;
  for(k=0; k<nKey; k++){
    int c = gpudsColGroupCmp(x->kt[k], x->kv[k], y->kt[k], y->kv[k]);
    if( c ) return c;
  }
  return 0;
}
static int gNKey;
static int groupCmpQ(const void *a, const void *b){
  return tupleCmp((const RGroup*)a, (const RGroup*)b, gNKey);
}

/* Run the reference and compare with res. */
static void compare(const Set *s, const Req *r, const gpuds_aggres *res, const char *zWhat){
  const gpuds_agg *a = &r->a;
  const gpuds_query *q = &a->q;
  int64_t *aOrd = malloc((size_t)(s->n+1)*8), i, j, nG = 0, nLeft = 0, nRead = 0;
  RGroup *aG = calloc((size_t)s->n+1, sizeof(RGroup));
  int64_t *aLeft = malloc((size_t)(s->n+1)*8);
  int f, k, t;
  uint64_t nHash = 64, *aHash;
  while( nHash < 2*(uint64_t)s->n ) nHash *= 2;
  aHash = calloc(nHash, 8);         /* group+1 by the tuple's hash */
  /* rows in key order */
  for(i=0; i<s->n; i++) aOrd[i] = i;
  gSet = s;
  qsort(aOrd, (size_t)s->n, 8, keyCmpQ);
  if( a->nKey==0 ){ nG = 1; }
  for(j=0; j<s->n; j++){
    int64_t ix = aOrd[j], key = s->aKey[ix], g;
    int bLeft = 0, bOut = 0;
    uint8_t kt[GPUDS_AGG_KEY_MAX] = {0}; uint64_t kv[GPUDS_AGG_KEY_MAX] = {0};
    if( key<q->lo || key>q->hi ) continue;
    for(i=0; i<q->nSkip; i++) if( q->aSkip[i]==key ) break;
    if( i<q->nSkip ) continue;
    nRead++;
    for(t=0; t<q->nTerm; t++){
      uint8_t tg; uint64_t vl; int m;
      colOf(s, q->aTerm[t].iCol, ix, &tg, &vl);
      m = gpudsColMatchAgg(tg, vl, q->aTerm[t].op, q->aTerm[t].tag, q->aTerm[t].val,
                           q->aInTag, q->aInVal, a->aTermExact ? a->aTermExact[t] : 0);
      if( m==0 ) bOut = 1;
      if( m==2 ) bLeft = 1;
    }
    if( bOut ) continue;
    for(k=0; k<a->nKey; k++){
      uint8_t tg, t2; uint64_t vl, v2;
      colOf(s, a->aKey[k].iCol, ix, &tg, &vl);
      if( a->aKey[k].op==GPUDS_AGGKEY_COL ){
        if( isAmbig(tg, vl, a->aKey[k].aAmbig, a->aKey[k].nAmbig) ) bLeft = 1;
        gpudsColCanon(tg, vl, &kt[k], &kv[k]);
      }else{
        if( !gpudsColDivMod(a->aKey[k].op, a->aKey[k].n, tg, vl, &t2, &v2) ) bLeft = 1;
        gpudsColCanon(t2, v2, &kt[k], &kv[k]);
      }
    }
    for(f=0; f<a->nFn; f++){
      uint8_t tg; uint64_t vl;
      int fn = a->aFn[f].fn;
      if( fn==GPUDS_AGG_COUNTSTAR || fn==GPUDS_AGG_COUNT ) continue;
      colOf(s, a->aFn[f].iCol, ix, &tg, &vl);
      if( fn==GPUDS_AGG_SUM && (tg==GPUDS_TAG_TEXT || tg==GPUDS_TAG_BLOB) ) bLeft = 1;
      if( fn!=GPUDS_AGG_SUM && isAmbig(tg, vl, a->aFn[f].aAmbig, a->aFn[f].nAmbig) ) bLeft = 1;
    }
    if( bLeft ){ aLeft[nLeft++] = ix; continue; }
    if( a->nKey==0 ) g = 0;
    else{
      RGroup tmp;
      uint64_t h = 0;
      memcpy(tmp.kt, kt, sizeof(kt)); memcpy(tmp.kv, kv, sizeof(kv));
      for(k=0; k<a->nKey; k++) h = gpudsMix64(h ^ kv[k] ^ kt[k]);
      h &= nHash-1;
      for(;;){
        if( aHash[h]==0 ){
          g = nG++;
          memcpy(aG[g].kt, kt, sizeof(kt)); memcpy(aG[g].kv, kv, sizeof(kv));
          aHash[h] = (uint64_t)g+1;
          break;
        }
        g = (int64_t)aHash[h]-1;
        if( tupleCmp(&aG[g], &tmp, a->nKey)==0 ) break;
        h = (h+1) & (nHash-1);
      }
    }
    if( aG[g].rows++==0 ) aG[g].iFirst = ix;
    aG[g].iLast = ix;
    for(f=0; f<a->nFn; f++){
      uint8_t tg; uint64_t vl;
      int fn = a->aFn[f].fn;
      if( fn==GPUDS_AGG_COUNTSTAR ) continue;
      colOf(s, a->aFn[f].iCol, ix, &tg, &vl);
      if( tg==GPUDS_TAG_NULL ) continue;
      aG[g].n[f]++;
      if( fn==GPUDS_AGG_SUM ){
        if( tg==GPUDS_TAG_INT ){
          int64_t v = (int64_t)vl;
          if( v>0 ) aG[g].pos[f] = satAdd(aG[g].pos[f], v);
          if( v<0 ) aG[g].neg[f] = satAdd(aG[g].neg[f], v);
        }else{
          double d = gpudsColDouble(vl);
          aG[g].nReal[f]++;
          aG[g].sum[f] += d; aG[g].mag[f] += fabsl((long double)d);
        }
      }else if( fn==GPUDS_AGG_MIN || fn==GPUDS_AGG_MAX ){
        if( aG[g].n[f]==1 ){ aG[g].tag[f] = tg; aG[g].val[f] = vl; aG[g].idx[f] = ix; }
        else{
          int o = gpudsColInCompare(tg, vl, aG[g].tag[f], aG[g].val[f]);
          if( fn==GPUDS_AGG_MAX ? o>0 : o<0 ){ aG[g].tag[f] = tg; aG[g].val[f] = vl; aG[g].idx[f] = ix; }
        }
      }
      if( fn==GPUDS_AGG_MIN || fn==GPUDS_AGG_MAX || fn==GPUDS_AGG_COUNTD ){
        aG[g].dT[f] = realloc(aG[g].dT[f], aG[g].nD[f]+1);
        aG[g].dV[f] = realloc(aG[g].dV[f], (aG[g].nD[f]+1)*8);
        aG[g].dT[f][aG[g].nD[f]] = tg; aG[g].dV[f][aG[g].nD[f]] = vl; aG[g].nD[f]++;
      }
    }
  }
  gNKey = a->nKey;
  qsort(aG, (size_t)nG, sizeof(RGroup), groupCmpQ);
  CHECK(res->nGroup==nG, "%s: groups %lld, expected %lld", zWhat, (long long)res->nGroup, (long long)nG);
  CHECK(res->nLeft==nLeft, "%s: leftover %lld, expected %lld", zWhat, (long long)res->nLeft, (long long)nLeft);
  CHECK(res->nRead==nRead, "%s: read %lld, expected %lld", zWhat, (long long)res->nRead, (long long)nRead);
  for(i=0; i<nLeft && i<res->nLeft; i++){
    CHECK(res->aLeftKey[i]==s->aKey[aLeft[i]] && res->aLeftRow[i]==s->aRow[aLeft[i]],
          "%s: leftover row %lld", zWhat, (long long)i);
  }
  for(j=0; j<nG && j<res->nGroup; j++){
    RGroup *G = &aG[j];
    int64_t iRep = -1;
    if( G->rows>0 ){
      if( a->iRepFn<0 ) iRep = G->iFirst;
      else iRep = G->n[a->iRepFn]>0 ? G->idx[a->iRepFn] : G->iLast;
    }
    for(k=0; k<a->nKey; k++){
      size_t o = (size_t)k*nG + j;
      uint8_t tg = GPUDS_TAG_NULL; uint64_t vl = 0;
      CHECK(res->aKeyTag[o]==G->kt[k] && res->aKeyVal[o]==G->kv[k], "%s: group %lld key %d", zWhat, (long long)j, k);
      if( iRep>=0 ) colOf(s, a->aKey[k].iCol, iRep, &tg, &vl);
      if( tg==GPUDS_TAG_NULL ) vl = 0;
      CHECK(res->aRepTag[o]==tg && res->aRepVal[o]==vl, "%s: group %lld rep value %d", zWhat, (long long)j, k);
    }
    CHECK(res->aRows[j]==G->rows, "%s: group %lld rows %lld, expected %lld", zWhat, (long long)j,
          (long long)res->aRows[j], (long long)G->rows);
    CHECK(res->aRepKey[j]==(iRep>=0 ? s->aKey[iRep] : 0) && res->aRepRow[j]==(iRep>=0 ? s->aRow[iRep] : 0),
          "%s: group %lld representative", zWhat, (long long)j);
    for(f=0; f<a->nFn; f++){
      size_t o = (size_t)f*nG + j;
      int fn = a->aFn[f].fn;
      int64_t n = fn==GPUDS_AGG_COUNTSTAR ? G->rows : G->n[f];
      if( fn==GPUDS_AGG_COUNTD ){
        int64_t x, y, nd = 0;
        for(x=0; x<G->nD[f]; x++){
          uint8_t tx, ty; uint64_t vx, vy;
          gpudsColCanon(G->dT[f][x], G->dV[f][x], &tx, &vx);
          for(y=0; y<x; y++){
            gpudsColCanon(G->dT[f][y], G->dV[f][y], &ty, &vy);
            if( tx==ty && vx==vy ) break;
          }
          if( y==x ) nd++;
        }
        n = nd;
      }
      CHECK(res->aN[o]==n, "%s: group %lld fn %d (%d) n %lld, expected %lld", zWhat, (long long)j, f, fn,
            (long long)res->aN[o], (long long)n);
      if( fn==GPUDS_AGG_SUM ){
        long double got = (long double)res->aSum[o] + (long double)res->aErr[o];
        CHECK(res->aNReal[o]==G->nReal[f] && res->aPos[o]==G->pos[f] && res->aNeg[o]==G->neg[f],
              "%s: group %lld sum fields", zWhat, (long long)j);
        CHECK(isinf((double)G->sum[f]) || isinf(res->aSum[o])
              || fabsl(got - G->sum[f]) <= 1e-15L*G->mag[f] + 1e-300L,
              "%s: group %lld sum %.17Lg, expected %.17Lg", zWhat, (long long)j, got, G->sum[f]);
      }
      if( fn==GPUDS_AGG_MIN || fn==GPUDS_AGG_MAX ){
        uint8_t fl = 0;
        if( G->n[f]>0 ){
          /* the first row holding a value equal to the extreme */
          int64_t x;
          CHECK(res->aTag[o]==G->tag[f] && res->aVal[o]==G->val[f]
                && res->aKey[o]==s->aKey[G->idx[f]] && res->aRow[o]==s->aRow[G->idx[f]],
                "%s: group %lld fn %d extreme", zWhat, (long long)j, f);
          for(x=0; x<G->nD[f]; x++){
            uint8_t tx = G->dT[f][x]; uint64_t vx = G->dV[f][x];
            if( gpudsColClass(tx)>=2 && tx==G->tag[f] && (vx>>32)==(G->val[f]>>32) && vx!=G->val[f] ) fl = GPUDS_AGGF_TIE;
          }
        }else{
          CHECK(res->aTag[o]==GPUDS_TAG_NULL && res->aVal[o]==0 && res->aKey[o]==0 && res->aRow[o]==0,
                "%s: group %lld fn %d empty extreme", zWhat, (long long)j, f);
        }
        CHECK(res->aFlags[o]==fl, "%s: group %lld fn %d flags %d, expected %d", zWhat, (long long)j, f,
              res->aFlags[o], fl);
      }
    }
  }
  for(j=0; j<s->n; j++){
    for(f=0; f<10; f++){ free(aG[j].dT[f]); free(aG[j].dV[f]); }
  }
  free(aG); free(aOrd); free(aLeft); free(aHash);
}

/* ------------------------------------------------------------ xQuery */
typedef struct KeyIdx { int64_t k, i; } KeyIdx;
static int keyIdxCmp(const void *a, const void *b){
  int64_t x = ((const KeyIdx*)a)->k, y = ((const KeyIdx*)b)->k;
  return x<y ? -1 : x>y;
}

/* xQuery of request r's filter (terms on columns only), in key order or
** descending, with a random nMost, against a naive filter: the same rows
** (keys are distinct), or -1 exactly where more than nMost match. */
static void queryCheck(gpuds_cols *pC, const Set *s, const Req *r, const char *zWhat){
  gpuds_query q = r->a.q;
  int64_t i, n = 0, nGot = -2, *aK = 0;
  uint64_t *aR = 0;
  KeyIdx *aRef;
  int t, rc;
  for(t=0; t<q.nTerm; t++) if( q.aTerm[t].iCol<0 ) return;
  aRef = malloc((size_t)(s->n+1)*sizeof(KeyIdx));
  for(i=0; i<s->n; i++){
    int64_t k = s->aKey[i], j;
    int ok = k>=q.lo && k<=q.hi;
    for(j=0; ok && j<q.nSkip; j++) if( q.aSkip[j]==k ) ok = 0;
    for(t=0; ok && t<q.nTerm; t++){
      const gpuds_term *pT = &q.aTerm[t];
      uint8_t tg; uint64_t vl;
      colOf(s, pT->iCol, i, &tg, &vl);
      ok = pT->op==GPUDS_CMP_IN
         ? gpudsColMatchIn(tg, vl, pT->tag, q.aInTag + (pT->val>>32), q.aInVal + (pT->val>>32),
                           (uint32_t)pT->val)!=0
         : gpudsColMatch(tg, vl, pT->op, pT->tag, pT->val)!=0;
    }
    if( ok ){ aRef[n].k = k; aRef[n++].i = i; }
  }
  qsort(aRef, (size_t)n, sizeof(KeyIdx), keyIdxCmp);
  q.iOrderCol = -1;
  q.bDesc = (int)below(2);
  q.nMost = below(2) ? 0 : (int64_t)below((uint64_t)n*2+2);
  rc = H->xQuery(pC, &q, &nGot, &aK, &aR, 0);
  CHECK(rc==GPUDS_OK, "%s: xQuery %d", zWhat, rc);
  if( q.nMost>0 && n>q.nMost ){
    CHECK(nGot==-1 && aK==0, "%s: xQuery past nMost %lld: %lld (%lld match)", zWhat,
          (long long)q.nMost, (long long)nGot, (long long)n);
  }else{
    CHECK(nGot==n, "%s: xQuery %lld rows, %lld match", zWhat, (long long)nGot, (long long)n);
    for(i=0; i<n && nGot==n; i++){
      const KeyIdx *w = &aRef[q.bDesc ? n-1-i : i];
      if( aK[i]!=w->k || aR[i]!=s->aRow[w->i] ){
        CHECK(0, "%s: xQuery row %lld: key %lld, want %lld", zWhat, (long long)i,
              (long long)aK[i], (long long)w->k);
        break;
      }
    }
  }
  free(aK); free(aR); free(aRef);
}

/* One random set and many requests on it. */
static void oneSet(int64_t n, int nQuery){
  Set s;
  gpuds_cols *pC = 0;
  char *zErr = 0;
  int i, rc;
  setMake(&s, n, 1 + (int)below(3), (int)below(4)!=0, (int)below(4)==0);
  rc = H->xLoad(&pC, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, &zErr);
  CHECK(rc==GPUDS_OK, "xLoad %d", rc);
  if( rc ){ free(zErr); setFree(&s); return; }
  for(i=0; i<nQuery; i++){
    Req r;
    gpuds_aggres res;
    char zWhat[64];
    reqMake(&r, &s);
    rc = H->xAgg(pC, &r.a, &res);
    snprintf(zWhat, sizeof(zWhat), "n=%lld sorted=%d query %d", (long long)n, s.bSorted, i);
    CHECK(rc==GPUDS_OK, "%s: xAgg %d %s", zWhat, rc, H->xErrmsg(pC));
    if( rc==GPUDS_OK ) compare(&s, &r, &res, zWhat);
    queryCheck(pC, &s, &r, zWhat);
    gpudsAggResFree(&res);
    free(r.aSkip);
  }
  H->xFree(pC);
  setFree(&s);
}

/* Requests outside the contract: GPUDS_MISUSE, nothing to free. */
static void misuse(void){
  Set s;
  gpuds_cols *pC = 0;
  gpuds_agg a;
  gpuds_aggres res;
  gpuds_aggkey k;
  gpuds_aggfn f[2];
  gpuds_term t;
  setMake(&s, 100, 2, 1, 0);
  H->xLoad(&pC, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, 0);
  memset(&a, 0, sizeof(a)); memset(&k, 0, sizeof(k)); memset(f, 0, sizeof(f)); memset(&t, 0, sizeof(t));
  a.q.lo = INT64_MIN; a.q.hi = INT64_MAX; a.iRepFn = -1;
  a.aKey = &k; a.nKey = 1; k.iCol = 2;
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_MISUSE && res.nGroup==0 && res.aRows==0, "key column out of range");
  k.iCol = 0; k.op = 7;
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_MISUSE, "bad key op");
  k.op = 0; a.nKey = GPUDS_AGG_KEY_MAX+1;
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_MISUSE, "too many keys");
  a.nKey = 1; a.aFn = f; a.nFn = 1; f[0].fn = 99;
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_MISUSE, "bad aggregate");
  f[0].fn = GPUDS_AGG_SUM; f[0].iCol = -2;
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_MISUSE, "aggregate column out of range");
  f[0].iCol = 0; a.iRepFn = 0;
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_MISUSE, "representative of a SUM");
  a.iRepFn = -1; a.q.aTerm = &t; a.q.nTerm = 1; t.op = GPUDS_CMP_IN; t.val = 3;
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_MISUSE, "IN slice past nIn");
  t.op = GPUDS_CMP_EQ; t.tag = GPUDS_TAG_INT; t.iCol = -1; t.val = (uint64_t)s.aKey[5];
  CHECK(H->xAgg(pC, &a, &res)==GPUDS_OK && res.nGroup+res.nLeft<=1 && res.nRead==100, "key term");
  gpudsAggResFree(&res);
  CHECK(res.aRows==0 && res.nGroup==0, "freed");
  H->xFree(pC);
  setFree(&s);
}

int main(int argc, char **argv){
  uint64_t seed = argc>1 ? strtoull(argv[1], 0, 0) : (uint64_t)time(0);
  int nRound = argc>2 ? atoi(argv[2]) : 200, i;
  rngState = seed;
  printf("seed %llu\n", (unsigned long long)seed);
  misuse();
  for(i=0; i<nRound; i++) oneSet((int64_t)below(i%10==0 ? 3000 : 200), 20);
  /* shares of several threads (and the merge of their tables) */
  for(i=0; i<3; i++) oneSet(70000 + (int64_t)below(70000), 4);
  printf("%d checks, %d failed\n", nCheck, nFail);
  return nFail ? 1 : 0;
}
