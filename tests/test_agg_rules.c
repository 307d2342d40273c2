/*
** test_agg_rules.c -- the rules of the CUDA aggregation
** (backend/gpuds_aggrules.h) on the CPU, where every test can run:
**   words    the sortable words of canonical values order and tell them
**            apart exactly as gpudsColGroupCmp does (every pair of edge
**            values, and random ones);
**   emulate  the CUDA algorithm (kernels/cols/agg.cuh) step by step on
**            the host with the very functions its kernels call: the
**            classes of rows, dense group numbers (few groups) or groups
**            sorted by their words (many), states stepped by "lanes" of
**            random chunks and merged in random order, the result laid
**            out as on the device and assembled as the host code does;
**            compared field by field with the host column set's xAgg
**            (backend/host_agg.c) on random sets and requests
**            (tests/agg_gen.h).
** Usage: test_agg_rules [seed [rounds]]   (seed also from GPUDS_TEST_SEED)
*/
#include "agg_gen.h"
#include <time.h>

static AgRng gR;
static int nFail = 0, nCheck = 0;

#define CHECK(c, ...) do{ nCheck++; if( !(c) ){ nFail++; \
  if( nFail<20 ){ printf("FAIL line %d: ", __LINE__); printf(__VA_ARGS__); printf("\n"); } } }while(0)

/* ------------------------------------------------------------- words */

static int wordCmp(uint8_t ta, uint64_t a, uint8_t tb, uint64_t b){
  int w;
  for(w=0; w<3; w++){
    uint64_t x = aggWord(ta, a, w), y = aggWord(tb, b, w);
    if( x!=y ) return x<y ? -1 : 1;
  }
  return 0;
}

static void testWords(void){
  static const int64_t aI[] = { 0, 1, -1, 5, 1LL<<53, (1LL<<53)+1, INT64_MAX, INT64_MIN,
    INT64_MAX-1, INT64_MIN+1, 4503599627370496LL, -4503599627370497LL };
  static const double aD[] = { 0.5, -0.5, 1.5, -1.5, 1e300, -1e300, 9223372036854775808.0,
    -18446744073709551616.0, 1e-300, -1e-300, 4503599627370495.5, -4503599627370495.5,
    9.3e18, -9.3e18, 1.0/0.0, -1.0/0.0, 4.9e-324, 0.9999999999999999, -0.9999999999999999,
    1.0, -0.0, 0.0, -9223372036854775808.0, 2.5, -2.5 };
  uint8_t aT[200];
  uint64_t aV[200];
  int n = 0, i, j;
  size_t k;
  for(k=0; k<sizeof(aI)/8; k++){ aT[n] = GPUDS_TAG_INT; aV[n++] = (uint64_t)aI[k]; }
  for(k=0; k<sizeof(aD)/8; k++){ gpudsColCanon(GPUDS_TAG_REAL, gpudsColReal(aD[k]), &aT[n], &aV[n]); n++; }
  for(k=0; k<AG_NTEXT; k++){
    aT[n] = GPUDS_TAG_TEXT; aV[n++] = agTextPool[k];
    aT[n] = GPUDS_TAG_BLOB; aV[n++] = agTextPool[k];
  }
  aT[n] = GPUDS_TAG_NULL; aV[n++] = 0;
  while( n<200 ){           /* random integers and reals around them */
    uint64_t u = agRnd(&gR);
    double d;
    switch( agBelow(&gR, 4) ){
      case 0: aT[n] = GPUDS_TAG_INT; aV[n] = u; break;
      case 1: aT[n] = GPUDS_TAG_INT; aV[n] = u>>(agBelow(&gR, 64)); break;
      case 2:
        d = gpudsColDouble(u);
        if( d!=d ) continue;
        gpudsColCanon(GPUDS_TAG_REAL, u, &aT[n], &aV[n]);
        break;
      default:
        d = (double)(int64_t)(u>>agBelow(&gR, 64)) + (double)agBelow(&gR, 8)/8.0;
        gpudsColCanon(GPUDS_TAG_REAL, gpudsColReal(d), &aT[n], &aV[n]);
        break;
    }
    n++;
  }
  for(i=0; i<n; i++){
    for(j=0; j<n; j++){
      int want = gpudsColGroupCmp(aT[i], aV[i], aT[j], aV[j]);
      int got = wordCmp(aT[i], aV[i], aT[j], aV[j]);
      int same = aT[i]==aT[j] && aV[i]==aV[j];
      CHECK(want==got && (got==0)==same, "words of (%d, %016llx) and (%d, %016llx): %d, expected %d",
            aT[i], (unsigned long long)aV[i], aT[j], (unsigned long long)aV[j], got, want);
    }
  }
}

/* ---------------------------------------------------------- emulator */

static const AgSet *gSet;
static const AggReq *gReq;

/* Counted rows by their key tuple's words, then index. */
static int tupleCmpQ(const void *x, const void *y){
  int64_t a = *(const int64_t*)x, b = *(const int64_t*)y;
  int k, w;
  for(k=0; k<gReq->nKey; k++){
    uint8_t ta, tb; uint64_t va, vb;
    aggKeyCanon(gReq, k, a, &ta, &va);
    aggKeyCanon(gReq, k, b, &tb, &vb);
    for(w=0; w<3; w++){
      uint64_t p = aggWord(ta, va, w), q = aggWord(tb, vb, w);
      if( p!=q ) return p<q ? -1 : 1;
    }
  }
  return a<b ? -1 : a>b;
}

static int tupleEq(int64_t a, int64_t b){
  int k;
  for(k=0; k<gReq->nKey; k++){
    uint8_t ta, tb; uint64_t va, vb;
    aggKeyCanon(gReq, k, a, &ta, &va);
    aggKeyCanon(gReq, k, b, &tb, &vb);
    if( ta!=tb || va!=vb ) return 0;
  }
  return 1;
}

static int keyIdxQ(const void *x, const void *y){
  int64_t a = *(const int64_t*)x, b = *(const int64_t*)y;
  int64_t ka = gSet->aKey[a], kb = gSet->aKey[b];
  return ka<kb ? -1 : ka>kb ? 1 : (a<b ? -1 : a>b);
}

static int u64x3Q(const void *x, const void *y){
  const uint64_t *a = (const uint64_t*)x, *b = (const uint64_t*)y;
  int w;
  for(w=0; w<3; w++) if( a[w]!=b[w] ) return a[w]<b[w] ? -1 : 1;
  return 0;
}

/* The state of aggregate y over rows R[0..n): contiguous chunks of random
** size, each stepped by nL "lanes" (lane l: rows l, l+nL, ... in order),
** then all the partial states merged two at a time in random order. */
static AggSt stateOf(const AggReq *r, int y, const int64_t *R, int64_t n){
  AggSt *aP = (AggSt*)calloc((size_t)n*32+1, sizeof(AggSt));
  int64_t nP = 0, c0 = 0;
  AggSt res;
  while( c0<n ){
    int64_t len = 1 + (int64_t)agBelow(&gR, (uint64_t)(n-c0));
    int nL = 1 + (int)agBelow(&gR, 32), l;
    int64_t p;
    if( agBelow(&gR, 2) ) len = n-c0;
    for(l=0; l<nL; l++){
      memset(&aP[nP], 0, sizeof(AggSt));
      for(p=c0+l; p<c0+len; p+=nL) aggAddRow(r, r->stKind[y], r->stCol[y], &aP[nP], R[p]);
      nP++;
    }
    c0 += len;
  }
  while( nP>1 ){
    int64_t a = (int64_t)agBelow(&gR, (uint64_t)nP), b = (int64_t)agBelow(&gR, (uint64_t)nP-1);
    if( b>=a ) b++;
    aggMerge(r->stKind[y], &aP[a], &aP[b]);
    aP[b] = aP[--nP];
  }
  if( nP==0 ) memset(&aP[0], 0, sizeof(AggSt));
  res = aP[0];
  free(aP);
  return res;
}

/* xAgg as the CUDA column set computes it, on the host: *pR (free with
** gpudsAggResFree).  bForceL: never dense group numbers. */
static int emulate(const AgSet *s, const gpuds_agg *a, int bForceL, gpuds_aggres *pR){
  AggTermD aT[8];
  uint64_t aAmb[(GPUDS_AGG_KEY_MAX+GPUDS_AGG_FN_MAX)*4];
  AggReq r;
  int64_t i0 = 0, i1 = s->n, i, j, nC = 0, nL = 0, S = 0, nG = 0;
  int64_t *aC = (int64_t*)malloc((size_t)(s->n+1)*8), *aL = (int64_t*)malloc((size_t)(s->n+1)*8);
  int64_t *aStart = 0, *aSlot = 0, *aGid = 0;
  uint64_t mn[GPUDS_AGG_KEY_MAX][3], mx[GPUDS_AGG_KEY_MAX][3];
  int k, w, y, d, bW = 0, bSum = 0, bMM = 0, f;
  gpuds_aggres o;
  AggSt *aBase = 0, *aRep = 0;
  char *block = 0;

  memset(pR, 0, sizeof(*pR));
  if( aggReqCheck(a, s->nCol) ) return GPUDS_MISUSE;
  agReqView(s, a, &r, aT, aAmb);
  gSet = s; gReq = &r;
  if( s->bSorted ){
    for(i0=0; i0<s->n && s->aKey[i0]<a->q.lo; i0++){}
    for(i1=i0; i1<s->n && s->aKey[i1]<=a->q.hi; i1++){}
  }
  for(i=i0; i<i1; i++){
    int c = aggClassify(&r, i);
    if( c!=AGG_ST_OUT ) pR->nRead++;
    if( c==AGG_ST_COUNTED ) aC[nC++] = i;
    if( c==AGG_ST_LEFT ) aL[nL++] = i;
  }
  for(k=0; k<r.nKey; k++) for(w=0; w<3; w++){ mn[k][w] = ~0ULL; mx[k][w] = 0; }
  for(j=0; j<nC; j++){
    for(k=0; k<r.nKey; k++){
      uint8_t ct; uint64_t cv;
      CHECK(aggKeyCanon(&r, k, aC[j], &ct, &cv), "counted row with an undecidable key");
      for(w=0; w<3; w++){
        uint64_t x = aggWord(ct, cv, w);
        if( x<mn[k][w] ) mn[k][w] = x;
        if( x>mx[k][w] ) mx[k][w] = x;
      }
    }
  }
  /* dense group numbers: words 0 and 2 the same everywhere, few values */
  if( r.nKey==0 ){ bW = 1; S = 1; }
  else if( nC>0 && !bForceL ){
    uint64_t prod = 1;
    bW = 1;
    for(k=r.nKey-1; k>=0 && bW; k--){
      uint64_t span = mx[k][1]-mn[k][1];
      if( mn[k][0]!=mx[k][0] || mn[k][2]!=mx[k][2] || span>=128 || prod*(span+1)>128 ){ bW = 0; break; }
      r.dMin[k] = mn[k][1]; r.dMul[k] = prod;
      prod *= span+1;
    }
    if( bW ){ r.nDirect = r.nKey; S = (int64_t)prod; }
  }
  aGid = (int64_t*)malloc((size_t)(nC+1)*8);
  if( bW ){
    /* the dense numbers order the tuples */
    for(j=0; j<nC; j++) aGid[j] = aggGid(&r, aC[j]);
    for(j=0; j<nC; j++){
      CHECK(aGid[j]>=0 && aGid[j]<S, "group number %lld of %lld", (long long)aGid[j], (long long)S);
    }
    for(j=1; j<nC && j<64; j++){
      int64_t x = aC[agBelow(&gR, (uint64_t)nC)], z = aC[agBelow(&gR, (uint64_t)nC)];
      int c = tupleCmpQ(&x, &z), e = tupleEq(x, z);
      int64_t gx = aggGid(&r, x), gz = aggGid(&r, z);
      CHECK(e ? gx==gz : (gx<gz)==(c<0) && gx!=gz, "dense numbers %lld %lld against the tuples",
            (long long)gx, (long long)gz);
    }
  }else if( nC>0 ){
    /* groups sorted by their words: runs of equal tuples */
    qsort(aC, (size_t)nC, 8, tupleCmpQ);
    aStart = (int64_t*)malloc((size_t)(nC+1)*8);
    for(j=0; j<nC; j++){
      if( j==0 || !tupleEq(aC[j-1], aC[j]) ){
        if( j>0 ){
          int c = 0;
          for(k=0; k<r.nKey && c==0; k++){
            uint8_t ta, tb; uint64_t va, vb;
            aggKeyCanon(&r, k, aC[j-1], &ta, &va);
            aggKeyCanon(&r, k, aC[j], &tb, &vb);
            c = gpudsColGroupCmp(ta, va, tb, vb);
          }
          CHECK(c<0, "groups out of order");
        }
        aStart[S++] = j;
      }
      aGid[j] = S-1;
    }
    aStart[S] = nC;
  }
  for(f=0; f<r.nFn; f++){
    if( r.aFn[f].fn==GPUDS_AGG_SUM ) bSum = 1;
    if( r.aFn[f].fn==GPUDS_AGG_MIN || r.aFn[f].fn==GPUDS_AGG_MAX ) bMM = 1;
  }
  block = (char*)calloc(aggResLayout(S, r.nKey, r.nFn, bSum, bMM, 0, &o) + 8, 1);
  aggResLayout(S, r.nKey, r.nFn, bSum, bMM, block, &o);
  aBase = (AggSt*)calloc((size_t)S+1, sizeof(AggSt));
  aRep = (AggSt*)calloc((size_t)S+1, sizeof(AggSt));
  for(j=0; j<S; j++){
    /* group j's rows, ascending index */
    int64_t *R = (int64_t*)malloc((size_t)(nC+1)*8), n = 0;
    if( bW ){ for(i=0; i<nC; i++) if( aGid[i]==j ) R[n++] = aC[i]; }
    else{ for(i=aStart[j]; i<aStart[j+1]; i++) R[n++] = aC[i]; }
    for(y=0; y<r.nSt; y++){
      AggSt st = stateOf(&r, y, R, n);
      if( y==0 ) aBase[j] = st;
      else{
        aggEmitFn(&r, y, &st, &o, (int64_t)r.stFn[y]*S + j);
        if( r.stFn[y]==r.iRepFn ) aRep[j] = st;
      }
    }
    aggEmitGroup(&r, &aBase[j], &aRep[j], &o, j, S);
    for(d=0; d<r.nCd; d++){
      uint64_t *aW = (uint64_t*)malloc((size_t)(n+1)*24);
      int64_t m = 0, nd = 0;
      for(i=0; i<n; i++){
        uint8_t tg, ct; uint64_t vl, cv;
        aggColOf(&r, r.aFn[r.cdFn[d]].iCol, R[i], &tg, &vl);
        if( tg==GPUDS_TAG_NULL ) continue;
        gpudsColCanon(tg, vl, &ct, &cv);
        for(w=0; w<3; w++) aW[m*3+w] = aggWord(ct, cv, w);
        m++;
      }
      qsort(aW, (size_t)m, 24, u64x3Q);
      for(i=0; i<m; i++) nd += i==0 || u64x3Q(&aW[i*3], &aW[(i-1)*3])!=0;
      o.aN[(int64_t)r.cdFn[d]*S + j] = nd;
      free(aW);
    }
    free(R);
  }
  /* the groups: every segment, or the dense numbers that have rows */
  aSlot = (int64_t*)malloc((size_t)(S+1)*8);
  for(j=0; j<S; j++){
    if( r.nKey==0 || !bW || aBase[j].w[0]>0 ) aSlot[nG++] = j;
  }
  if( aggResFromSlots(&o, S, aSlot, nG, r.nKey, r.nFn, pR) ) CHECK(0, "out of memory");
  /* leftover rows, ascending key */
  if( !s->bSorted ) qsort(aL, (size_t)nL, 8, keyIdxQ);
  pR->nLeft = nL;
  if( nL ){
    pR->aLeftKey = (int64_t*)malloc((size_t)nL*8);
    pR->aLeftRow = (uint64_t*)malloc((size_t)nL*8);
    for(j=0; j<nL; j++){ pR->aLeftKey[j] = s->aKey[aL[j]]; pR->aLeftRow[j] = s->aRow[aL[j]]; }
  }
  free(aC); free(aL); free(aStart); free(aSlot); free(aGid); free(aBase); free(aRep); free(block);
  return GPUDS_OK;
}

/* One random set, nQuery random requests: the emulation (dense numbers
** where they apply, and groups sorted always) against the host xAgg. */
static void oneSet(int64_t n, int nQuery){
  AgSet s;
  gpuds_cols *pC = 0;
  int i, rc;
  agSetMake(&gR, &s, n, 1 + (int)agBelow(&gR, 3), (int)agBelow(&gR, 4)!=0);
  rc = gpudsHostColsOps.xLoad(&pC, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, 0);
  CHECK(rc==GPUDS_OK, "xLoad %d", rc);
  for(i=0; i<nQuery && rc==GPUDS_OK; i++){
    AgReq q;
    gpuds_aggres hr, er;
    char zWhat[96];
    int bL;
    agReqMake(&gR, &q, &s);
    rc = gpudsHostColsOps.xAgg(pC, &q.a, &hr);
    CHECK(rc==GPUDS_OK, "host xAgg %d", rc);
    for(bL=0; bL<2 && rc==GPUDS_OK; bL++){
      snprintf(zWhat, sizeof(zWhat), "n=%lld sorted=%d request %d%s", (long long)n, s.bSorted, i,
               bL ? " (groups sorted)" : "");
      CHECK(emulate(&s, &q.a, bL, &er)==GPUDS_OK, "emulate");
      CHECK(agCompare(&s, &q.a, &er, &hr, zWhat)==0, "%s", zWhat);
      gpudsAggResFree(&er);
    }
    gpudsAggResFree(&hr);
    agReqFree(&q);
    rc = GPUDS_OK;
  }
  gpudsHostColsOps.xFree(pC);
  agSetFree(&s);
}

/* Requests outside the contract: aggReqCheck says GPUDS_MISUSE where the
** host xAgg does. */
static void testCheck(void){
  AgSet s;
  gpuds_cols *pC = 0;
  int i;
  agSetMake(&gR, &s, 50, 2, 1);
  gpudsHostColsOps.xLoad(&pC, s.nCol, s.n, s.bSorted, s.aKey, s.aRow, s.aTag, s.aVal, 0);
  for(i=0; i<400; i++){
    AgReq q;
    gpuds_aggres hr;
    int rcH, rcR;
    agReqMake(&gR, &q, &s);
    agReqBreak(&gR, &q, s.nCol);
    rcH = gpudsHostColsOps.xAgg(pC, &q.a, &hr);
    rcR = aggReqCheck(&q.a, s.nCol);
    CHECK(rcH==rcR || (rcH==GPUDS_OK && rcR==GPUDS_OK), "check %d, host %d", rcR, rcH);
    gpudsAggResFree(&hr);
    agReqFree(&q);
  }
  gpudsHostColsOps.xFree(pC);
  agSetFree(&s);
}

int main(int argc, char **argv){
  const char *zSeed = getenv("GPUDS_TEST_SEED");
  uint64_t seed = argc>1 ? strtoull(argv[1], 0, 0) : zSeed ? strtoull(zSeed, 0, 0) : (uint64_t)time(0);
  int nRound = argc>2 ? atoi(argv[2]) : 150, i;
  gR.s = seed;
  printf("seed %llu (GPUDS_TEST_SEED)\n", (unsigned long long)seed);
  testWords();
  printf("words: %d checks, %d failed\n", nCheck, nFail);
  testCheck();
  for(i=0; i<nRound; i++) oneSet((int64_t)agBelow(&gR, i%10==0 ? 3000 : 200), 12);
  for(i=0; i<2; i++) oneSet(70000 + (int64_t)agBelow(&gR, 30000), 3);
  printf("%d checks, %d failed\n", nCheck, nFail);
  return nFail ? 1 : 0;
}
