// kernels/cols/agg.cuh -- xAgg of the CUDA column set: the host side that
// checks the request, sends it, runs the kernels of
// kernels/cols/agg_kernels.cuh in order on its context's stream and
// assembles the result (kernels/cols.cu describes the design).
//
// Part of the CUDA column set's one translation unit: included by
// kernels/cols.cu after the query.
#pragma once

#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpuds_backend.h"
#include "gpuds_aggrules.h"
#include "common/check.cuh"
#include "cols/layout.cuh"
#include "cols/store.cuh"
#include "cols/select.cuh"
#include "cols/index.cuh"
#include "cols/agg_kernels.cuh"

namespace {

constexpr size_t kAggPinRes = (size_t)1<<20;   // results up to this come back pinned
constexpr int64_t kAggLaneRows = 8;             // path L: rows a lane steps in a chunk
constexpr int64_t kAggR2BlockMax = 4096;        // path L: up to this many groups, a block merges a group
constexpr size_t kAggPartBytes = (size_t)64<<20;// partial states of one launch, at most (unless one state)

// Bits needed for values 0..x.
inline int aggBits(uint64_t x){ return x ? 64 - __builtin_clzll(x) : 0; }

// What one xAgg knows on the host.
struct AggRun {
  const gpuds_agg *a;
  AggReq req;            // as sent (device pointers)
  int bSum, bMM;
  char *hUp;             // pinned: the parameters going up
  size_t nUp, oReq;      // their bytes; where AggReq is among them
  AggHdr *hH;            // pinned: the counters coming back
  char *hRes;            // pinned: a small result coming back
  AggHdr *dH;
  AggReq *dR;
  uint8_t *dSt;          // the rows' classes
  int64_t m;             // counted rows
  int64_t S;             // groups (path L) or dense numbers (path W)
  bool bDense;           // path W
  gpuds_aggres out;      // the result's arrays on the device (stride S)
  size_t nResBytes;
  AggSt *keep;           // BASE states, then the representative's (2S)
  ull *cnt;              // COUNTD counts (nCd*S)
};

// Copy the device counters into the pinned slot and wait.
int aggReadHdr(CudaCols *p, ColsCtx *cx, AggRun &R){
  GPUDS_CK(cx, cudaMemcpyAsync(R.hH, R.dH, sizeof(AggHdr), cudaMemcpyDeviceToHost, cx->st));
  GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
  return GPUDS_OK;
}

// The parameters into pinned memory and up (one copy): AggHdr | AggReq |
// terms | skip list | IN values | IN tags | ambiguous values, pointers set
// to where they land.
int aggSend(CudaCols *p, ColsCtx *cx, AggRun &R){
  const gpuds_agg *a = R.a;
  const gpuds_query *q = &a->q;
  const int nTerm = q->nTerm>0 ? q->nTerm : 0;
  const int64_t nSkip = q->nSkip>0 && q->aSkip ? q->nSkip : 0;
  const int64_t nIn = q->nIn>0 && q->aInVal && q->aInTag ? q->nIn : 0;
  const int64_t nAmb = aggAmbTotal(a);
  if( (uint64_t)nSkip > ((uint64_t)1<<56) || (uint64_t)nIn > ((uint64_t)1<<31) ){
    return colsSetErr(cx, GPUDS_NOMEM, "aggregation request too large");
  }
  const size_t oH = 0, oR = alignUp(sizeof(AggHdr)), oT = oR + alignUp(sizeof(AggReq));
  const size_t oS = oT + alignUp((size_t)nTerm*sizeof(AggTermD));
  const size_t oIV = oS + alignUp((size_t)nSkip*8), oIT = oIV + alignUp((size_t)nIn*8);
  const size_t oA = oIT + alignUp((size_t)nIn), nUp = oA + alignUp((size_t)nAmb*8);
  // pinned: the parameters | the counters coming back | a small result
  const size_t oDown = alignUp(nUp), oRes = oDown + alignUp(sizeof(AggHdr));
  int rc = ensurePin(cx, oRes + kAggPinRes);
  if( rc ) return rc;
  if( (rc = ensure(cx, cx->par, nUp))!=0 ) return rc;
  char *h = (char*)cx->hPin, *d = (char*)cx->par.p;
  R.hUp = h; R.nUp = nUp; R.oReq = oR;
  R.hH = (AggHdr*)(h + oDown);
  R.hRes = h + oRes;
  R.dH = (AggHdr*)(d + oH);
  R.dR = (AggReq*)(d + oR);
  AggHdr h0;
  memset(&h0, 0, sizeof(h0));
  h0.i0 = 0; h0.i1 = p->n;
  for(int s=0; s<AGG_STAT_MAX; s++){ h0.mn[s] = ~0ULL; h0.mx[s] = 0; }
  memcpy(h + oH, &h0, sizeof(h0));
  aggReqFill(a, p->n, p->bSorted, &R.req, (AggTermD*)(h + oT), (uint64_t*)(h + oA));
  if( nSkip ) memcpy(h + oS, q->aSkip, (size_t)nSkip*8);
  if( nIn ){
    memcpy(h + oIV, q->aInVal, (size_t)nIn*8);
    memcpy(h + oIT, q->aInTag, (size_t)nIn);
  }
  AggReq &r = R.req;
  r.key = p->dKey; r.row = p->dRow; r.tag = p->dTag; r.val = p->dVal;
  r.term = (const AggTermD*)(d + oT);
  r.skip = (const int64_t*)(d + oS);
  r.nSkip = nSkip;
  r.inVal = (const uint64_t*)(d + oIV);
  r.inTag = (const uint8_t*)(d + oIT);
  r.amb = (const uint64_t*)(d + oA);
  memcpy(h + oR, &r, sizeof(r));
  GPUDS_CK(cx, cudaMemcpyAsync(d, h, nUp, cudaMemcpyHostToDevice, cx->st));
  return GPUDS_OK;
}

// The result's arrays on the device for S groups (res), and keep and cnt
// (in cx->aP after off bytes).  *pnP: bytes of aP taken.
int aggResAlloc(CudaCols *p, ColsCtx *cx, AggRun &R, size_t off, size_t *pnP){
  const AggReq &r = R.req;
  R.nResBytes = aggResLayout(R.S, r.nKey, r.nFn, R.bSum, R.bMM, nullptr, &R.out);
  int rc = ensure(cx, cx->res, R.nResBytes<1 ? 1 : R.nResBytes);
  if( rc ) return rc;
  aggResLayout(R.S, r.nKey, r.nFn, R.bSum, R.bMM, (char*)cx->res.p, &R.out);
  GPUDS_CK(cx, cudaMemsetAsync(cx->res.p, 0, R.nResBytes, cx->st));
  R.keep = (AggSt*)((char*)cx->aP.p + off);
  R.cnt = (ull*)((char*)cx->aP.p + off + alignUp((size_t)2*R.S*sizeof(AggSt)));
  *pnP = off + alignUp((size_t)2*R.S*sizeof(AggSt)) + alignUp((size_t)r.nCd*R.S*8);
  GPUDS_CK(cx, cudaMemsetAsync(R.keep, 0, (size_t)2*R.S*sizeof(AggSt), cx->st));
  if( r.nCd ) GPUDS_CK(cx, cudaMemsetAsync(R.cnt, 0, (size_t)r.nCd*R.S*8, cx->st));
  return GPUDS_OK;
}

// Bytes of keep and cnt for S groups (aggResAlloc's share of aP).
size_t aggKeepBytes(const AggRun &R){
  return alignUp((size_t)2*R.S*sizeof(AggSt)) + alignUp((size_t)R.req.nCd*R.S*8);
}

// State aggregates a launch takes so that its partial states (nPer each)
// stay within kAggPartBytes (at least one).
int aggBatch(const CudaCols *p, const AggRun &R, int64_t nPer){
  int64_t b = (int64_t)(kAggPartBytes/sizeof(AggSt))/(nPer>0 ? nPer : 1);
  if( p->aggYBatch>0 && b>p->aggYBatch ) b = p->aggYBatch;
  if( b<1 ) b = 1;
  return b>R.req.nSt ? R.req.nSt : (int)b;
}

// Path W: dense group numbers (R.S of them).  Blocks of kAggW1 take
// contiguous shares of the rows (as many blocks as the set's size calls
// for, at most 16 an SM: the order of merges is fixed by n alone).  bOne:
// kAggOne instead (no key, no COUNTD, few aggregates; R.S is 1).
int aggDense(CudaCols *p, ColsCtx *cx, AggRun &R, bool bOne){
  const int64_t nBlk64 = (p->n + 1023)/1024;
  const int nBlk = (int)(nBlk64<1 ? 1 : nBlk64>(int64_t)p->nSM*16 ? (int64_t)p->nSM*16 : nBlk64);
  const int nSlot = (int)R.S;
  const int yb = bOne ? R.req.nSt : aggBatch(p, R, (int64_t)nBlk*nSlot);
  const size_t nPart = alignUp((size_t)yb*nBlk*nSlot*sizeof(AggSt));
  int rc = ensure(cx, cx->aP, nPart + aggKeepBytes(R));
  size_t nP = 0;
  if( rc || (rc = aggResAlloc(p, cx, R, nPart, &nP))!=0 ) return rc;
  AggSt *part = (AggSt*)cx->aP.p;
  const size_t smem = (size_t)kAggWW*nSlot*sizeof(AggSt);
  if( bOne ){
    kAggOne<<<nBlk, kAggWT, 0, cx->st>>>(R.dR, R.dH, part);
    GPUDS_CK_LAUNCH(cx, "kAggOne");
    kAggW2<<<dim3(1, R.req.nSt), kAggRT, 0, cx->st>>>(R.dR, part, nBlk, 1, 0, R.keep, R.out);
    GPUDS_CK_LAUNCH(cx, "kAggW2");
    return GPUDS_OK;
  }
  for(int y0=0; y0<R.req.nSt; y0+=yb){
    const int ny = R.req.nSt-y0<yb ? R.req.nSt-y0 : yb;
    kAggW1<<<dim3(nBlk, ny), kAggWT, smem, cx->st>>>(R.dR, R.dH, R.dSt, nSlot, y0, part);
    GPUDS_CK_LAUNCH(cx, "kAggW1");
    kAggW2<<<dim3(nSlot, ny), kAggRT, 0, cx->st>>>(R.dR, part, nBlk, nSlot, y0, R.keep, R.out);
    GPUDS_CK_LAUNCH(cx, "kAggW2");
  }
  return GPUDS_OK;
}

// Stable sort of the m pairs by their words' low `bits` bits (0: none).
template<typename IdxT>
int aggSortBits(CudaCols *p, ColsCtx *cx, cub::DoubleBuffer<uint64_t> &keys, cub::DoubleBuffer<IdxT> &vals,
                int64_t m, int bits){
  if( bits==0 ) return GPUDS_OK;
  return sortPairs<IdxT>(p, cx, keys, vals, m, bits>=64 ? ~0ULL : ((1ULL<<bits) - 1));
}

// Path L: the counted rows sorted by their key tuples (stable radix sorts
// of the words that vary, last key first), grouped; R.S groups.  Leaves
// the rows in group order in aW's perm, each one's group number + 1 in
// gidp1, and the groups' first positions in segStart.
template<typename IdxT>
int aggSorted(CudaCols *p, ColsCtx *cx, AggRun &R, IdxT *perm, IdxT *flags, IdxT *gidp1, IdxT *segStart,
              uint64_t *kA, uint64_t *kB, IdxT *payB){
  const int64_t m = R.m;
  const AggReq &r = R.req;
  const AggHdr &H = *R.hH;
  cub::DoubleBuffer<uint64_t> keys(kA, kB);
  cub::DoubleBuffer<IdxT> vals(perm, payB);
  int nVar = 0, rc;
  for(int k=r.nKey-1; k>=0; k--){
    for(int w=2; w>=0; w--){
      const int s = 3*k + w;
      if( H.mn[s]>=H.mx[s] ) continue;
      nVar++;
      kAggKeyWord<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(R.dR, vals.Current(), m, k, w,
                                                              H.mn[s], keys.Current());
      GPUDS_CK_LAUNCH(cx, "kAggKeyWord");
      if( (rc = aggSortBits<IdxT>(p, cx, keys, vals, m, aggBits(H.mx[s]-H.mn[s])))!=0 ) return rc;
    }
  }
  if( vals.Current()!=perm ){
    GPUDS_CK(cx, cudaMemcpyAsync(perm, vals.Current(), (size_t)m*sizeof(IdxT),
                                cudaMemcpyDeviceToDevice, cx->st));
  }
  kAggSegFlags<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(R.dR, perm, m,
                                                          nVar==1 ? keys.Current() : nullptr, flags);
  GPUDS_CK_LAUNCH(cx, "kAggSegFlags");
  size_t nTmp = 0;
  GPUDS_CK(cx, cub::DeviceScan::InclusiveSum(nullptr, nTmp, flags, gidp1, m, cx->st));
  if( (rc = ensure(cx, cx->tmp, nTmp<1 ? 1 : nTmp))!=0 ) return rc;
  nTmp = cx->tmp.n;
  GPUDS_CK(cx, cub::DeviceScan::InclusiveSum(cx->tmp.p, nTmp, flags, gidp1, m, cx->st));
  kAggSegStart<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(flags, gidp1, m, segStart, R.dH);
  GPUDS_CK_LAUNCH(cx, "kAggSegStart");
  GPUDS_CK(cx, cudaMemcpyAsync(&R.hH->nSeg, &R.dH->nSeg, 8, cudaMemcpyDeviceToHost, cx->st));
  GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
  if( R.hH->nSeg<1 || R.hH->nSeg>m ) return colsSetErr(cx, GPUDS_ERROR, "internal error: group count out of range");
  R.S = R.hH->nSeg;
  return GPUDS_OK;
}

// Path L's states: chunks of at most ch positions of a group (a warp each,
// kAggL1), then each group's chunks merged (kAggL2).
template<typename IdxT>
int aggSortedStates(CudaCols *p, ColsCtx *cx, AggRun &R, const IdxT *perm, const IdxT *segStart){
  const int64_t m = R.m, nSeg = R.S;
  const int64_t ch = 32*(p->aggLaneRows>0 ? p->aggLaneRows : kAggLaneRows);
  const int64_t cMax = nSeg + (m + ch - 1)/ch;
  const int yb = aggBatch(p, R, cMax);
  const size_t oC = alignUp((size_t)(nSeg+1)*8), oP = 2*oC;
  const size_t nPart = alignUp((size_t)yb*cMax*sizeof(AggSt));
  int rc = ensure(cx, cx->aP, oP + nPart + aggKeepBytes(R));
  size_t nP = 0;
  if( rc || (rc = aggResAlloc(p, cx, R, oP + nPart, &nP))!=0 ) return rc;
  int64_t *nch = (int64_t*)cx->aP.p, *chunkFirst = (int64_t*)((char*)cx->aP.p + oC);
  AggSt *part = (AggSt*)((char*)cx->aP.p + oP);
  kAggChunks<IdxT><<<gridFor(p, nSeg+1), kBlock, 0, cx->st>>>(segStart, nSeg, ch, nch);
  GPUDS_CK_LAUNCH(cx, "kAggChunks");
  size_t nTmp = 0;
  GPUDS_CK(cx, cub::DeviceScan::ExclusiveSum(nullptr, nTmp, nch, chunkFirst, nSeg+1, cx->st));
  if( (rc = ensure(cx, cx->tmp, nTmp<1 ? 1 : nTmp))!=0 ) return rc;
  nTmp = cx->tmp.n;
  GPUDS_CK(cx, cub::DeviceScan::ExclusiveSum(cx->tmp.p, nTmp, nch, chunkFirst, nSeg+1, cx->st));
  const int64_t r2Max = p->aggR2BlockMax>0 ? p->aggR2BlockMax : kAggR2BlockMax;
  const unsigned nB1 = (unsigned)((cMax + (kBlock/32) - 1)/(kBlock/32));
  for(int y0=0; y0<R.req.nSt; y0+=yb){
    const int ny = R.req.nSt-y0<yb ? R.req.nSt-y0 : yb;
    kAggL1<IdxT><<<dim3(nB1, ny), kBlock, 0, cx->st>>>(R.dR, perm, segStart, chunkFirst, nSeg, cMax,
                                                     ch, y0, part);
    GPUDS_CK_LAUNCH(cx, "kAggL1");
    if( nSeg<=r2Max ){
      kAggL2<kAggRT><<<dim3((unsigned)nSeg, ny), kAggRT, 0, cx->st>>>(R.dR, part, chunkFirst, nSeg,
                                                                    cMax, y0, R.keep, R.out);
    }else{
      kAggL2<32><<<dim3((unsigned)((nSeg + 7)/8), ny), kAggRT, 0, cx->st>>>(R.dR, part, chunkFirst,
                                                                          nSeg, cMax, y0, R.keep, R.out);
    }
    GPUDS_CK_LAUNCH(cx, "kAggL2");
  }
  return GPUDS_OK;
}

// COUNTD d over the m counted rows rows[j] (group gidp1[j]-1 on path L,
// aggGid on path W): the items sorted by (group, tag, value), the distinct
// ones counted into R.cnt + d*S.
template<typename IdxT>
int aggCountD(CudaCols *p, ColsCtx *cx, AggRun &R, int d, const IdxT *rows, const IdxT *gidp1,
              uint64_t *kA, uint64_t *kB, IdxT *payA, IdxT *payB){
  const int64_t m = R.m;
  const AggHdr &H = *R.hH;
  const int sT = 3*R.req.nKey + 2*d, sV = sT + 1;
  const ull mn[3] = {0, H.mn[sT], H.mn[sV]};
  const ull mx[3] = {(ull)(R.S-1), H.mx[sT], H.mx[sV]};
  cub::DoubleBuffer<uint64_t> keys(kA, kB);
  cub::DoubleBuffer<IdxT> vals(payA, payB);
  int nVar = 0, vs = -1, rc;
  kIota<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(payA, m);
  GPUDS_CK_LAUNCH(cx, "kIota");
  for(int spec=2; spec>=0; spec--){
    if( mn[spec]>=mx[spec] ) continue;
    nVar++; vs = spec;
    kAggCdWord<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(R.dR, vals.Current(), m, rows, gidp1, d,
                                                           spec, mn[spec], keys.Current());
    GPUDS_CK_LAUNCH(cx, "kAggCdWord");
    if( (rc = aggSortBits<IdxT>(p, cx, keys, vals, m, aggBits(mx[spec]-mn[spec])))!=0 ) return rc;
  }
  const bool fast = nVar==1;
  kAggCdCount<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(R.dR, vals.Current(), m, rows, gidp1, d,
                                                          fast ? keys.Current() : nullptr, vs,
                                                          fast ? mn[vs] : 0, 0, mn[1],
                                                          R.cnt + (size_t)d*R.S);
  GPUDS_CK_LAUNCH(cx, "kAggCdCount");
  return GPUDS_OK;
}

// The leftover rows (R.hH->nLeft of them), ascending key, into *pR.
template<typename IdxT>
int aggLeftovers(CudaCols *p, ColsCtx *cx, AggRun &R, gpuds_aggres *pR){
  const int64_t m = R.hH->nLeft, i0 = R.hH->i0, i1 = R.hH->i1;
  const size_t nI = alignUp((size_t)m*sizeof(IdxT)), n8 = alignUp((size_t)m*8);
  int rc = ensure(cx, cx->out, 2*nI + 4*n8);
  if( rc ) return rc;
  char *o = (char*)cx->out.p;
  IdxT *idx = (IdxT*)o, *idxB = (IdxT*)(o + nI);
  uint64_t *wA = (uint64_t*)(o + 2*nI), *wB = (uint64_t*)(o + 2*nI + n8);
  int64_t *oK = (int64_t*)(o + 2*nI + 2*n8);
  uint64_t *oR = (uint64_t*)(o + 2*nI + 3*n8);
  AggIs pred{R.dSt, i0, (uint8_t)AGG_ST_LEFT};
  if( (rc = selectTo<IdxT>(p, cx, i0, i1-i0, pred, idx, &R.dH->nSel))!=0 ) return rc;
  if( !p->bSorted && m>1 ){
    kAggLeft<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(idx, m, p->dKey, p->dRow, wA, nullptr, nullptr);
    GPUDS_CK_LAUNCH(cx, "kAggLeft");
    cub::DoubleBuffer<uint64_t> keys(wA, wB);
    cub::DoubleBuffer<IdxT> vals(idx, idxB);
    if( (rc = aggSortBits<IdxT>(p, cx, keys, vals, m, 64))!=0 ) return rc;
    idx = vals.Current();
  }
  kAggLeft<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(idx, m, p->dKey, p->dRow, nullptr, oK, oR);
  GPUDS_CK_LAUNCH(cx, "kAggLeft");
  pR->aLeftKey = (int64_t*)malloc((size_t)m*8);
  pR->aLeftRow = (uint64_t*)malloc((size_t)m*8);
  if( !pR->aLeftKey || !pR->aLeftRow ) return colsSetErr(cx, GPUDS_NOMEM, "out of memory");
  GPUDS_CK(cx, cudaMemcpyAsync(pR->aLeftKey, oK, (size_t)m*8, cudaMemcpyDeviceToHost, cx->st));
  GPUDS_CK(cx, cudaMemcpyAsync(pR->aLeftRow, oR, (size_t)m*8, cudaMemcpyDeviceToHost, cx->st));
  GPUDS_CK(cx, cudaMemcpyAsync(&R.hH->nSel, &R.dH->nSel, 8, cudaMemcpyDeviceToHost, cx->st));
  GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
  if( R.hH->nSel!=m ) return colsSetErr(cx, GPUDS_ERROR, "internal error: leftover count differs");
  pR->nLeft = m;
  return GPUDS_OK;
}

// Dense group numbers for path W where every key's words 0 and 2 are one
// value among the counted rows and the words 1 span few values: sets R.S
// and the request's nDirect, dMin, dMul (true), else false.
bool aggDenseFits(CudaCols *p, AggRun &R){
  AggReq &r = R.req;
  const AggHdr &H = *R.hH;
  uint64_t prod = 1;
  if( r.nKey==0 ){ R.S = 1; return true; }
  if( p->aggForceL || R.m==0 ) return false;
  for(int k=r.nKey-1; k>=0; k--){
    const uint64_t span = H.mx[3*k+1] - H.mn[3*k+1];
    if( H.mn[3*k]!=H.mx[3*k] || H.mn[3*k+2]!=H.mx[3*k+2] || span>=(uint64_t)kAggSlotMax
     || prod*(span+1)>(uint64_t)kAggSlotMax ) return false;
    r.dMin[k] = H.mn[3*k+1];
    r.dMul[k] = prod;
    prod *= span+1;
  }
  r.nDirect = r.nKey;
  R.S = (int64_t)prod;
  return true;
}

// The result of R's device arrays (stride R.S) into *pR: every group of
// path L, the numbers with rows of path W (the one group of no key).  A
// small result came back pinned with the counters; a big one of path L
// (every group, stride nGroup) is copied array by array into pR's.
int aggCollect(CudaCols *p, ColsCtx *cx, AggRun &R, gpuds_aggres *pR){
  const AggReq &r = R.req;
  const bool bAll = !R.bDense || r.nKey==0;
  if( R.nResBytes>kAggPinRes && bAll ){
    gpuds_aggres d = R.out;
    void **aps[AGG_RES_NARR], **apd[AGG_RES_NARR];
    aggResArrays(&d, aps);
    aggResArrays(pR, apd);
    pR->nGroup = R.S;
    for(int i=0; i<AGG_RES_NARR; i++){
      const int nRow = aggResKind[i]==0 ? r.nKey : aggResKind[i]==1 ? 1 : r.nFn;
      const size_t nb = (size_t)nRow*(size_t)R.S*aggResElem[i];
      if( *aps[i]==nullptr || nb==0 ) continue;
      if( (*apd[i] = malloc(nb))==nullptr ) return colsSetErr(cx, GPUDS_NOMEM, "out of memory");
      GPUDS_CK(cx, cudaMemcpyAsync(*apd[i], *aps[i], nb, cudaMemcpyDeviceToHost, cx->st));
    }
    GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
    return GPUDS_OK;
  }
  char *hB = R.hRes, *zBig = nullptr;
  if( R.nResBytes>kAggPinRes ){
    if( (zBig = (char*)malloc(R.nResBytes))==nullptr ) return colsSetErr(cx, GPUDS_NOMEM, "out of memory");
    hB = zBig;
    cudaError_t e = cudaMemcpyAsync(hB, cx->res.p, R.nResBytes, cudaMemcpyDeviceToHost, cx->st);
    if( e==cudaSuccess ) e = cudaStreamSynchronize(cx->st);
    if( e!=cudaSuccess ){
      free(zBig);
      return gpudsCudaFail(cx, e, "copy of the result to the host", __FILE__, __LINE__);
    }
  }
  gpuds_aggres h;
  aggResLayout(R.S, r.nKey, r.nFn, R.bSum, R.bMM, hB, &h);
  std::vector<int64_t> slot;
  const int64_t *aSlot = nullptr;
  int64_t nG = R.S;
  if( !bAll ){
    for(int64_t g=0; g<R.S; g++) if( h.aRows[g]>0 ) slot.push_back(g);
    aSlot = slot.data();
    nG = (int64_t)slot.size();
  }
  int rc = aggResFromSlots(&h, R.S, aSlot, nG, r.nKey, r.nFn, pR);
  free(zBig);
  return rc ? colsSetErr(cx, GPUDS_NOMEM, "out of memory") : GPUDS_OK;
}

// True if cx has the events that time xAgg (made on first use; false,
// nothing timed, where they cannot be made).
bool aggTimer(ColsCtx *cx){
  if( cx->aggEv[1] ) return true;
  if( !cx->aggEv[0] && cudaEventCreate(&cx->aggEv[0])!=cudaSuccess ) cx->aggEv[0] = nullptr;
  if( cx->aggEv[0] && cudaEventCreate(&cx->aggEv[1])!=cudaSuccess ) cx->aggEv[1] = nullptr;
  (void)cudaGetLastError();
  return cx->aggEv[1]!=nullptr;
}

// xAgg for a set whose row numbers fit IdxT (a checked, p->n > 0).
template<typename IdxT>
int aggT(CudaCols *p, ColsCtx *cx, const gpuds_agg *a, gpuds_aggres *pR){
  AggRun R;
  memset(&R, 0, sizeof(R));
  R.a = a;
  int rc = aggSend(p, cx, R);
  if( rc ) return rc;
  AggReq &r = R.req;
  for(int f=0; f<r.nFn; f++){
    if( r.aFn[f].fn==GPUDS_AGG_SUM ) R.bSum = 1;
    if( r.aFn[f].fn==GPUDS_AGG_MIN || r.aFn[f].fn==GPUDS_AGG_MAX ) R.bMM = 1;
  }
  const bool bTime = p->aggTime.load() && aggTimer(cx);
  if( bTime ) GPUDS_CK(cx, cudaEventRecord(cx->aggEv[0], cx->st));
  const bool fullRange = a->q.lo==INT64_MIN && a->q.hi==INT64_MAX;
  if( p->bSorted && !fullRange ){
    kAggBounds<<<1, 64, 0, cx->st>>>(p->dKey, p->n, a->q.lo, a->q.hi, R.dH);
    GPUDS_CK_LAUNCH(cx, "kAggBounds");
  }
  if( (rc = ensure(cx, cx->aSt, (size_t)p->n))!=0 ) return rc;
  R.dSt = (uint8_t*)cx->aSt.p;
  // no key and no COUNTD: dense number 0 for all, nothing to wait for;
  // with few aggregates, one pass classifies and aggregates (kAggOne)
  const bool fast = r.nKey==0 && r.nCd==0;
  const bool one = fast && r.nSt<=kAggOneMax && !p->aggForceL;
  if( !one ){
    kAggClass<<<gridFor(p, p->n), kBlock, 0, cx->st>>>(R.dR, R.dH, R.dSt, 1);
    GPUDS_CK_LAUNCH(cx, "kAggClass");
  }
  if( !fast ){
    if( r.nKey + r.nCd>0 ){
      kAggStats<<<dim3(gridFor(p, p->n), r.nKey + r.nCd), kBlock, 0, cx->st>>>(R.dR, R.dH, R.dSt);
      GPUDS_CK_LAUNCH(cx, "kAggStats");
    }
    if( (rc = aggReadHdr(p, cx, R))!=0 ) return rc;
    R.m = R.hH->nCounted;
    if( R.m<0 || R.m>p->n ) return colsSetErr(cx, GPUDS_ERROR, "internal error: counted rows out of range");
  }
  R.bDense = aggDenseFits(p, R);        // (no key: always, one number)
  if( R.bDense && r.nDirect ){
    // the dense numbers' parameters go up (the first copy is done)
    memcpy(R.hUp + R.oReq, &r, sizeof(r));
    GPUDS_CK(cx, cudaMemcpyAsync(R.dR, R.hUp + R.oReq, sizeof(r), cudaMemcpyHostToDevice, cx->st));
  }
  IdxT *perm = nullptr, *flags = nullptr, *gidp1 = nullptr, *segStart = nullptr;
  uint64_t *kA = nullptr, *kB = nullptr;
  IdxT *payA = nullptr, *payB = nullptr;
  const bool bSort = !R.bDense && R.m>0;
  if( !fast && R.m>0 && (bSort || r.nCd>0) ){
    // the counted rows, ascending (perm), and the sort buffers
    const int64_t m = R.m;
    const size_t nI = alignUp((size_t)m*sizeof(IdxT)), n8 = alignUp((size_t)m*8);
    if( (rc = ensure(cx, cx->aW, bSort ? 3*nI + alignUp((size_t)(m+1)*sizeof(IdxT)) : nI))!=0 ) return rc;
    if( (rc = ensure(cx, cx->sort, 2*n8 + 2*nI))!=0 ) return rc;
    char *w = (char*)cx->aW.p, *s = (char*)cx->sort.p;
    perm = (IdxT*)w;
    if( bSort ){ flags = (IdxT*)(w + nI); gidp1 = (IdxT*)(w + 2*nI); segStart = (IdxT*)(w + 3*nI); }
    kA = (uint64_t*)s; kB = (uint64_t*)(s + n8);
    payA = (IdxT*)(s + 2*n8); payB = (IdxT*)(s + 2*n8 + nI);
    AggIs pred{R.dSt, R.hH->i0, (uint8_t)AGG_ST_COUNTED};
    if( (rc = selectTo<IdxT>(p, cx, R.hH->i0, R.hH->i1 - R.hH->i0, pred, perm, &R.dH->nSel))!=0 ) return rc;
  }
  if( R.bDense ){
    if( (rc = aggDense(p, cx, R, one))!=0 ) return rc;
  }else if( bSort ){
    if( (rc = aggSorted<IdxT>(p, cx, R, perm, flags, gidp1, segStart, kA, kB, payB))!=0 ) return rc;
    if( (rc = aggSortedStates<IdxT>(p, cx, R, perm, segStart))!=0 ) return rc;
  }
  if( R.S>0 ){
    for(int d=0; d<r.nCd && R.m>0; d++){
      rc = aggCountD<IdxT>(p, cx, R, d, perm, R.bDense ? nullptr : gidp1, kA, kB, payA, payB);
      if( rc ) return rc;
    }
    kAggFinal<<<gridFor(p, R.S), kBlock, 0, cx->st>>>(R.dR, R.keep, R.cnt, R.S, R.out);
    GPUDS_CK_LAUNCH(cx, "kAggFinal");
  }
  // back: the counters (and a small result) in one wait
  GPUDS_CK(cx, cudaMemcpyAsync(R.hH, R.dH, sizeof(AggHdr), cudaMemcpyDeviceToHost, cx->st));
  if( R.S>0 && R.nResBytes<=kAggPinRes ){
    GPUDS_CK(cx, cudaMemcpyAsync(R.hRes, cx->res.p, R.nResBytes, cudaMemcpyDeviceToHost, cx->st));
  }
  if( bTime ) GPUDS_CK(cx, cudaEventRecord(cx->aggEv[1], cx->st));
  GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
  const AggHdr &H = *R.hH;
  if( H.nRead<0 || H.nRead>p->n || H.nLeft<0 || H.nLeft>H.nRead || H.nCounted+H.nLeft>H.nRead
   || (!fast && H.nCounted!=R.m) || ((bSort || (r.nCd && R.m>0)) && H.nSel!=R.m) ){
    return colsSetErr(cx, GPUDS_ERROR, "internal error: row counts do not add up");
  }
  if( R.S>0 && (rc = aggCollect(p, cx, R, pR))!=0 ) return rc;
  pR->nRead = H.nRead;
  if( H.nLeft>0 && one ){
    // the rows' classes, which kAggOne did not keep
    kAggClass<<<gridFor(p, p->n), kBlock, 0, cx->st>>>(R.dR, R.dH, R.dSt, 0);
    GPUDS_CK_LAUNCH(cx, "kAggClass");
  }
  if( H.nLeft>0 && (rc = aggLeftovers<IdxT>(p, cx, R, pR))!=0 ) return rc;
  if( bTime ){
    float ms = 0;
    if( cudaEventElapsedTime(&ms, cx->aggEv[0], cx->aggEv[1])==cudaSuccess ) p->aggMs = ms;
    (void)cudaGetLastError();
  }
  return GPUDS_OK;
}

// xAgg's work (see gpuds_backend.h; colsAgg gives the workspaces back):
// *pR filled, or freed and zero on error.
int aggRun(CudaCols *p, ColsCtx *cx, const gpuds_agg *a, gpuds_aggres *pR){
  memset(pR, 0, sizeof(*pR));
  if( aggReqCheck(a, p->nCol) ) return colsSetErr(cx, GPUDS_MISUSE, "aggregation request not valid for this column set");
  int rc = GPUDS_OK;
  if( p->n==0 ){
    // no rows: the one group of no key, empty (all zero), or no group
    if( a->nKey==0 ){
      int bSum = 0, bMM = 0;
      for(int f=0; f<a->nFn; f++){
        bSum |= a->aFn[f].fn==GPUDS_AGG_SUM;
        bMM |= a->aFn[f].fn==GPUDS_AGG_MIN || a->aFn[f].fn==GPUDS_AGG_MAX;
      }
      gpuds_aggres h;
      std::vector<uint64_t> blk(aggResLayout(1, 0, a->nFn, bSum, bMM, nullptr, &h)/8 + 1, 0);
      aggResLayout(1, 0, a->nFn, bSum, bMM, (char*)blk.data(), &h);
      if( aggResFromSlots(&h, 1, nullptr, 1, 0, a->nFn, pR) ) rc = colsSetErr(cx, GPUDS_NOMEM, "out of memory");
    }
  }else{
    rc = (uint64_t)p->n <= (uint64_t)UINT32_MAX ? aggT<uint32_t>(p, cx, a, pR) : aggT<uint64_t>(p, cx, a, pR);
    if( rc && cx->st ) (void)cudaStreamSynchronize(cx->st);
  }
  if( rc ) gpudsAggResFree(pR);
  return rc;
}

}  // namespace
