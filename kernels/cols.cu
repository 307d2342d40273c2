// cols.cu -- the CUDA column set: gpudsCudaColsOps (gpuds_backend.h, "column
// sets"), with exactly the results of the host column set (backend/host_cols.c,
// colsQuery): the same rows, in the same order, the same nFirst/ties rule and
// the same sort keys.
//
// DATA (xLoad): on the device, as given: keys (int64), row words (u64) and,
// per column, tags (u8) and values (u64), column-major (column c of row i at
// c*n+i).  Calls may run on one set from several threads at once: each
// runs on a context of its own (ColsCtx: a stream, the workspaces, a
// pinned buffer, the error text), taken from the set's pool and given back
// after it, so the GPU work of several connections overlaps.  The arrays
// are only read; the equality indexes are built once each and published
// complete (kernels/cols/store.cuh says what makes each shared field
// safe).  Every call leaves nothing in flight on its stream.
//
// A QUERY (xQuery), all on its context's stream:
//   1. the terms, the skip list and a small header (Hdr: counters the host
//      reads back) go up in one copy from a pinned buffer;
//   2. key bounds: sorted keys -> one warp per bound does a 33-ary search
//      (kBounds, 5 dependent loads for 10^7 keys) and the host reads [i0,i1);
//      unsorted keys -> every row checks lo <= key <= hi in the predicate;
//   FEW: a filter in key order (terms, no column order, nFirst at most
//      kFewMax) first tries one pass (few()): kAppend evaluates SelPred
//      over i0..i1-1 (bounds found on the device) and appends the matches
//      in no order with one atomic per warp (one term, the common case:
//      each thread loads four rows before comparing, for bytes in flight,
//      and =, IS and IS [NOT] NULL compare words, gpudsColAsPairs); the
//      count and up to kFewMax keys and row words come back in one copy,
//      one wait in all, and the host sorts them: no ordered select and
//      fewer read-backs than steps 2-6 for a selective filter; with more
//      matches than kFewMax, steps 2-6 follow.
//      INDEX: before that pass, a filter with an =, IS, IS [NOT] NULL or
//      short IN term (up to kProbeIn values) whose column has an equality
//      index (ColIdx, built by idxBuild at the column's second such query:
//      row numbers sorted by tag and value) looks the term's (tag, value)
//      pairs up there (kProbe, one block: a warp searches a pair) and checks
//      those few candidates against everything; with no skip list and no
//      IN values its terms go as a kernel argument and its result into the
//      mapped pinned buffer, so nothing is copied either way.  Too many
//      candidates: the pass;
//   3. cub::DeviceSelect::If over the row numbers i0..i1-1 with SelPred (the
//      terms by gpudsColMatch, short-circuit, then the skip list by binary
//      search, only for rows that passed) writes the matching row numbers in
//      ascending order, and their count, which the host reads back;
//   4. order, as host_cols.c does it: unsorted keys -> a stable radix sort of
//      the matches by key ^ sign bit; a column -> a stable radix sort of
//      (bDesc ? ~sortkey : sortkey) over the key-ordered matches; descending
//      key order -> reversal while gathering the output.  Sorts use only the
//      bits that vary (the OR and AND of all words, read back, for 2^16 or
//      more items);
//   5. TOP-K: with nFirst > 0, a sort ahead and at least 2^16 matches and 8
//      nFirst or fewer of them, a radix select first finds the nFirst-th
//      smallest sort word T (histogram passes of 11 bits, kHist/kChoose, all
//      on the device; windows with no varying bit skipped) and keeps only the
//      matches with word <= T (in their order).  Those are exactly the rows
//      the host returns: the first nFirst and every tie of the last.  Steps 4
//      and 6 then run on them alone;
//   6. nFirst: the tie run past the first nFirst is found by a warp search in
//      the sorted words (kTies); only the rows returned are gathered (kOut)
//      and copied back.
// Row numbers are 32-bit (IdxT = uint32_t) when the set has fewer than 2^32
// rows, 64-bit otherwise: queryT is instantiated for both.
//
// AGGREGATION (xAgg, kernels/cols/agg.cuh), exactly host_agg.c's result.
// Every rule (a row's class, canonical keys, the words that order groups,
// the aggregate states, their step and merge, what they report) is a
// function of backend/gpuds_aggrules.h, which tests/test_agg_rules.c runs
// on the host against host_agg.c.  The kernels fix the order of every
// merge by the data's sizes, never by timing: no atomic touches a REAL sum,
// and a run repeats bit for bit.  On its context's stream:
//   1. one copy up: counters (AggHdr), the request (AggReq), terms, skip
//      list, IN values, ambiguous values; sorted keys: kAggBounds finds
//      [i0, i1) on the device;
//   2. kAggClass: each row's class (not read, filtered, leftover, counted)
//      into a byte a row, and the counts;
//   NO KEY, NO COUNTD (the fast path: nothing is waited for until the
//      end): one group, dense number 0; with at most one aggregate besides
//      count(*), one pass (kAggOne) classifies the rows and steps the
//      states, lanes in registers, no class array (written only where
//      leftover rows must be found), then kAggW2 and kAggFinal;
//   otherwise kAggStats finds, over the counted rows, the least and
//      greatest of each key's three words and of each COUNTD's canonical
//      tag and value, and the host reads the counters (one wait);
//   3W. DENSE (no key, or every key's words 0 and 2 constant and the words
//      1 spanning at most 128 tuples in all, e.g. v % 100): group g is the
//      mixed-radix number of the words 1 (aggGid).  kAggW1: a warp takes a
//      contiguous share of the rows, a lane keeps its current group's state
//      in registers and merges it into its warp's state of that group
//      (shared memory) when the group changes, lanes of one group in lane
//      order (aggFlush); the 4 warps' states merge in order into one
//      state a block and group; kAggW2: a block a group merges the blocks'
//      states (fixed tree) and reports (aggEmitFn).  One pass over the
//      columns an aggregate reads (grid: blocks x aggregates);
//   3L. SORTED (more groups): the counted rows (DeviceSelect, ascending)
//      sorted stably by the words that vary (radix sorts of only their
//      varying bits, the last key's last word first: kAggKeyWord), groups
//      are the runs of equal tuples (kAggSegFlags, an inclusive scan,
//      kAggSegStart; the group count read back), in canonical order.
//      Chunks of at most 256 positions of one group: kAggL1, a warp a
//      chunk, lanes stepping every 32nd row, merged in a fixed tree;
//      kAggL2 merges a group's chunks (a block a group up to 4096 groups,
//      else a warp) and reports;
//   4. COUNTD: the counted rows' (group, canonical tag, value) sorted
//      (radix sorts of the varying bits), the first of each run of equal
//      ones with a non-NULL value counts for its group (kAggCdCount);
//   5. kAggFinal: each group's rows, representative row, key tuple,
//      COUNTSTAR and COUNTD; one copy down of the counters and the result
//      (pinned up to 1 MiB), one wait; the host keeps the dense numbers
//      that have rows;
//   6. leftover rows, where there are any: DeviceSelect, sorted by key
//      (unsorted keys), copied down.
// Memory (xAgg): a byte a row (classes); path L and COUNTD 3-4 row
// numbers and 2 words a counted row; the states (48 B) of at most 64 MiB
// a launch (more aggregates: more launches); the result.  The workspaces
// are the context's, given back as the query's are.
//
// MEMORY: the arrays, the equality indexes built (8 + sizeof(IdxT) bytes a
// row each, kept until xFree; none where there is no room), and per
// context a small parameter buffer and workspaces that grow and are given
// back after a call that left them holding more than a store keeps
// (trimWorkspace) (sel: the matches; sort: the words and the second
// row-number buffer; out: the gathered result; tmp: CUB's temporary
// storage).  All of it is counted in the set's DevMem (atomics: contexts
// allocate at once), which xBytes reports.
// Running out of device (or pinned) memory returns GPUDS_NOMEM and leaves the
// set usable.  Every CUDA call and launch is checked with kernels/common/check.cuh's
// GPUDS_CK / GPUDS_CK_LAUNCH.
//
// FILES.  One translation unit, in layers (each file includes nothing of a
// layer above it, and each header compiles on its own):
//   kernels/cols/layout.cuh   limits, DTerm, Hdr, kProbe's arguments, ColIdx
//   kernels/cols/kernels.cuh  the query kernels (bounds, predicate, words,
//                             top-k, ties, output, the one-pass filter)
//   kernels/cols/store.cuh    the set CudaCols, a call's context ColsCtx, the
//                             pool, the memory helpers
//   kernels/cols/index.cuh    the equality index: build and probe
//   kernels/cols.cu (this file) the query (queryT, few()) and its steps
//   kernels/cols/agg_kernels.cuh  the aggregation's kernels (AggHdr)
//   kernels/cols/agg.cuh      the aggregation (aggRun) and its steps
//   kernels/cols/ops.cuh      gpudsCudaColsOps and its entry points
//   kernels/cols/hooks.cuh    the test hooks (kernels/cols.cuh)
#include "gpuds_backend.h"
#include "gpuds_colval.h"
#include "cols.cuh"

#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/check.cuh"
#include "common/devmem.cuh"
#include "common/launch.cuh"
#include "cols/layout.cuh"
#include "cols/kernels.cuh"
#include "cols/store.cuh"
#include "cols/index.cuh"
#include "cols/select.cuh"

namespace {

// Copy the device Hdr to the pinned read-back slot and wait: returns it.
int readHdr(CudaCols *p, ColsCtx *cx, Hdr *pOut){
  Hdr *hDown = (Hdr*)cx->hPin;
  GPUDS_CK(cx, cudaMemcpyAsync(hDown, cx->par.p, sizeof(Hdr), cudaMemcpyDeviceToHost, cx->st));
  GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
  *pOut = *hDown;
  return GPUDS_OK;
}

// Reset h->orv to 0 and h->andv to ~0 (before kWords).
int resetOrAnd(ColsCtx *cx){
  Hdr *d = (Hdr*)cx->par.p;
  GPUDS_CK(cx, cudaMemsetAsync(&d->orv, 0, sizeof(ull), cx->st));
  GPUDS_CK(cx, cudaMemsetAsync(&d->andv, 0xff, sizeof(ull), cx->st));
  return GPUDS_OK;
}

// The sort words of the m matches idx[] into out (see kWords) and, for m >=
// kBitsMin, their varying bits in *pDiff (read back); ~0 otherwise (all bits
// taken as varying).  *pAnd: their AND (valid when *pDiff was read).
template<typename IdxT>
int words(CudaCols *p, ColsCtx *cx, const IdxT *idx, int64_t m, int col, int inv, uint64_t *out,
          uint64_t *pDiff, uint64_t *pAnd){
  const uint8_t *tag = nullptr;
  const uint64_t *val = nullptr;
  if( col>=0 ){
    tag = p->dTag + (size_t)col*(size_t)p->n;
    val = p->dVal + (size_t)col*(size_t)p->n;
  }
  int rc = resetOrAnd(cx);
  if( rc ) return rc;
  kWords<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(idx, m, p->dKey, tag, val,
                                                    col>=0 ? 1 : 0, inv, out,
                                                    (Hdr*)cx->par.p);
  GPUDS_CK_LAUNCH(cx, "kWords");
  *pDiff = ~0ULL;
  *pAnd = 0;
  if( m>=kBitsMin ){
    Hdr h;
    rc = readHdr(p, cx, &h);
    if( rc ) return rc;
    *pDiff = h.orv ^ h.andv;
    *pAnd = h.andv;
  }
  return GPUDS_OK;
}

// selectTo with the count into the device Hdr's nSel, then read back into
// *pnSel.
template<typename IdxT, typename Pred>
int selectIf(CudaCols *p, ColsCtx *cx, int64_t first, int64_t nItems, Pred pred, IdxT *out,
             int64_t *pnSel){
  int rc = selectTo<IdxT>(p, cx, first, nItems, pred, out, &((Hdr*)cx->par.p)->nSel);
  if( rc ) return rc;
  Hdr h;
  rc = readHdr(p, cx, &h);
  if( rc ) return rc;
  if( h.nSel<0 || h.nSel>nItems ) return colsSetErr(cx, GPUDS_ERROR, "internal error: select count out of range");
  *pnSel = h.nSel;
  return GPUDS_OK;
}

// Top-k: of the nOut matches idx[] (words of their order in s, varying bits
// diff, AND andv), keep those whose word is <= the nFirst-th smallest, in
// their order, in idxOut; their count in *pc.  pos: scratch of nOut IdxT.
template<typename IdxT>
int topk(CudaCols *p, ColsCtx *cx, const IdxT *idx, int64_t nOut, const uint64_t *s, uint64_t diff,
         uint64_t andv, int64_t nFirst, IdxT *pos, IdxT *idxOut, int64_t *pc){
  static const int aShift[] = {53, 42, 31, 20, 9, 0};
  static const int aW[] = {11, 11, 11, 11, 11, 9};
  Hdr *d = (Hdr*)cx->par.p;
  ull *hist = (ull*)((char*)cx->par.p + cx->par.n - kHistMax*sizeof(ull));
  ull init[3] = {0, 0, (ull)nFirst};       // prefix, mask, rank
  ull mask = 0;
  int rc;
  // the pinned upload area is idle here (the query's upload finished at the
  // first read-back), so it carries the state's initial values
  memcpy((char*)cx->hPin + kHdrBytes, init, sizeof(init));
  GPUDS_CK(cx, cudaMemcpyAsync(&d->prefix, (char*)cx->hPin + kHdrBytes, sizeof(init),
                          cudaMemcpyHostToDevice, cx->st));
  for(int k=0; k<6; k++){
    ull win = ((1ULL<<aW[k])-1) << aShift[k];
    if( (diff & win)==0 ) continue;      // the same bits in every word
    GPUDS_CK(cx, cudaMemsetAsync(hist, 0, kHistMax*sizeof(ull), cx->st));
    kHist<<<gridFor(p, nOut), kBlock, 0, cx->st>>>(s, nOut, d, aShift[k], aW[k], hist);
    GPUDS_CK_LAUNCH(cx, "kHist");
    kChoose<<<1, 32, 0, cx->st>>>(hist, aShift[k], aW[k], d);
    GPUDS_CK_LAUNCH(cx, "kChoose");
    mask |= win;
  }
  LeThr pred{s, d, (ull)(andv & ~mask)};
  int64_t c = 0;
  rc = selectIf<IdxT>(p, cx, 0, nOut, pred, pos, &c);
  if( rc ) return rc;
  if( c<nFirst || c>nOut ) return colsSetErr(cx, GPUDS_ERROR, "internal error: top-k candidates out of range");
  if( c>0 ){
    kGatherIdx<IdxT><<<gridFor(p, c), kBlock, 0, cx->st>>>(pos, c, idx, idxOut);
    GPUDS_CK_LAUNCH(cx, "kGatherIdx");
  }
  *pc = c;
  return GPUDS_OK;
}

// The parameters of a query going up (Up; queryT fills it): made once, sent
// at most once (a query through kProbe with its terms as an argument
// sends none).
struct Up {
  const char *h;         // in pinned memory
  size_t n;
  bool bSent;
};

// Send the query's parameters (Hdr, terms, skip list, IN values) if not
// yet sent; with bBounds, the key bounds again after them (the Hdr going
// up resets them).
int upSend(CudaCols *p, ColsCtx *cx, Up &u, const gpuds_query *q, int bBounds){
  if( u.bSent ) return GPUDS_OK;
  GPUDS_CK(cx, cudaMemcpyAsync(cx->par.p, u.h, u.n, cudaMemcpyHostToDevice, cx->st));
  u.bSent = true;
  if( bBounds ){
    kBounds<<<1, 64, 0, cx->st>>>(p->dKey, p->n, q->lo, q->hi, (Hdr*)cx->par.p);
    GPUDS_CK_LAUNCH(cx, "kBounds");
  }
  return GPUDS_OK;
}

// The one-pass path: x, the equality index of term pred.pairTerm's column
// (NULL: none), gives the candidates of pa (kProbe) unless they are too many;
// else kAppend scans.  With bDirect (terms as kProbe's argument, results
// written into mapped pinned memory at oDirect) nothing is copied until a
// scan needs the parameters (u).  *pbDone: the result is complete.
template<typename IdxT>
int few(CudaCols *p, ColsCtx *cx, const gpuds_query *q, const SelPred &pred, ColIdx *x, const ProbeArg &pa,
        bool bDirect, size_t oDirect, Up &u, int bBounds, int64_t *pn, int64_t **paKey,
        uint64_t **paRow, int *pbDone){
  const int64_t cap = p->nFewMax;
  const size_t nStage = (size_t)(1 + 3*cap)*8;
  Hdr *dH = (Hdr*)cx->par.p;
  int rc;
  *pbDone = 0;
  if( (rc = ensure(cx, cx->sel, (size_t)cap*sizeof(IdxT)))!=0 ) return rc;
  if( (rc = ensure(cx, cx->out, nStage))!=0 ) return rc;
  if( bBounds ){
    kBounds<<<1, 64, 0, cx->st>>>(p->dKey, p->n, q->lo, q->hi, dH);
    GPUDS_CK_LAUNCH(cx, "kBounds");
  }
  // lands over the upload area: the copy going up came first on the stream
  // (queryT made the pinned area big enough for both)
  int64_t *hStage = (int64_t*)cx->hPin;
  if( x ){
    // an equality term with an index: its few candidates, checked
    TermArg ta;
    ta.n = 0;
    if( bDirect ){
      ta.n = q->nTerm;
      for(int t=0; t<q->nTerm; t++) ta.t[t] = dtermOf(q->aTerm[t], p->n);
      hStage = (int64_t*)((char*)cx->hPin + oDirect);
    }
    int64_t *dOut = bDirect ? (int64_t*)((char*)cx->dPin + oDirect) : (int64_t*)cx->out.p;
    kProbe<IdxT><<<1, kBlock, 0, cx->st>>>(pred, ta, pa, (u.bSent || bBounds) ? dH : nullptr, p->n,
                                          x->val, (const IdxT*)x->row, *(const Segs*)x->seg,
                                          cap, p->dKey, p->dRow, dOut);
    GPUDS_CK_LAUNCH(cx, "kProbe");
    if( !bDirect ){
      GPUDS_CK(cx, cudaMemcpyAsync(hStage, cx->out.p, nStage, cudaMemcpyDeviceToHost, cx->st));
    }
    GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
    if( hStage[0]==-2 ){                      // more candidates than cap: scan
      x = nullptr;
      hStage = (int64_t*)cx->hPin;
    }
  }
  if( !x ){
    if( (rc = upSend(p, cx, u, q, bBounds))!=0 ) return rc;
    kAppend<IdxT><<<gridFor(p, p->n), kBlock, 0, cx->st>>>(pred, dH, (IdxT*)cx->sel.p, cap);
    GPUDS_CK_LAUNCH(cx, "kAppend");
    kFewOut<IdxT><<<gridFor(p, cap), kBlock, 0, cx->st>>>((const IdxT*)cx->sel.p, dH, cap,
                                                        p->dKey, p->dRow, (int64_t*)cx->out.p);
    GPUDS_CK_LAUNCH(cx, "kFewOut");
    GPUDS_CK(cx, cudaMemcpyAsync(hStage, cx->out.p, nStage, cudaMemcpyDeviceToHost, cx->st));
    GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
  }
  const int64_t nSel = hStage[0];
  if( nSel<0 || nSel>p->n ) return colsSetErr(cx, GPUDS_ERROR, "internal error: select count out of range");
  if( q->nMost>0 && nSel>q->nMost ){ *pbDone = 1; *pn = -1; return GPUDS_OK; }   // the caller scans
  if( nSel>cap ) return GPUDS_OK;
  *pbDone = 1;
  if( nSel==0 ) return GPUDS_OK;
  // key order, equal keys (a set may hold them) by row number, as steps 3-4
  // leave them; descending: all of it reversed, as kOut reverses
  std::vector<int64_t> ord((size_t)nSel);
  for(int64_t j=0; j<nSel; j++) ord[(size_t)j] = j;
  const int64_t *sK = hStage + 1, *sI = hStage + 1 + 2*cap;
  std::sort(ord.begin(), ord.end(), [sK, sI](int64_t a, int64_t b){
    return sK[a]!=sK[b] ? sK[a]<sK[b] : sI[a]<sI[b];
  });
  if( q->bDesc ) std::reverse(ord.begin(), ord.end());
  int64_t m = q->nFirst>0 && nSel>q->nFirst ? q->nFirst : nSel;
  int64_t *aK = (int64_t*)malloc((size_t)m*8);
  uint64_t *aR = (uint64_t*)malloc((size_t)m*8);
  if( !aK || !aR ){ free(aK); free(aR); return colsSetErr(cx, GPUDS_NOMEM, "out of memory"); }
  for(int64_t j=0; j<m; j++){
    aK[j] = sK[ord[(size_t)j]];
    aR[j] = (uint64_t)hStage[1 + cap + ord[(size_t)j]];
  }
  *paKey = aK; *paRow = aR; *pn = m;
  return GPUDS_OK;
}

// xQuery for a set whose row numbers fit IdxT (q validated, p->n > 0).
template<typename IdxT>
int queryT(CudaCols *p, ColsCtx *cx, const gpuds_query *q, int64_t *pn, int64_t **paKey,
           uint64_t **paRow, uint64_t **paSort){
  const int64_t n = p->n;
  const int nTerm = q->nTerm>0 ? q->nTerm : 0;
  const int64_t nSkip = q->nSkip>0 && q->aSkip ? q->nSkip : 0;
  const bool byCol = q->iOrderCol>=0;
  const bool fullRange = q->lo==INT64_MIN && q->hi==INT64_MAX;
  int rc;

  if( q->lo>q->hi ) return GPUDS_OK;                    // no key qualifies

  // 1. parameters: Hdr | terms | skip list, one upload; histogram at the end
  if( (uint64_t)nSkip > ((uint64_t)1<<56) ) return colsSetErr(cx, GPUDS_NOMEM, "skip list too large");
  const int64_t nIn = q->nIn>0 && q->aInVal && q->aInTag ? q->nIn : 0;
  if( (uint64_t)nIn > ((uint64_t)1<<31) ) return colsSetErr(cx, GPUDS_NOMEM, "IN list too large");
  for(int t=0; t<nTerm; t++){
    const gpuds_term *pT = &q->aTerm[t];
    if( pT->op==GPUDS_CMP_IN && (pT->val>>32) + (uint32_t)pT->val > (uint64_t)nIn ){
      return colsSetErr(cx, GPUDS_MISUSE, "IN term past the query's IN values");
    }
  }
  // Hdr | terms | skip list | IN values | IN tags
  size_t nUp = kHdrBytes + (size_t)nTerm*sizeof(DTerm) + (size_t)nSkip*8 + (size_t)nIn*9;
  size_t nPar = alignUp(nUp) + kHistMax*sizeof(ull);
  // few(): a filter in key order whose result may be small
  const bool bFew = nTerm>0 && !byCol && p->nFewMax>0 && (q->nFirst<=0 || q->nFirst<=p->nFewMax);
  const size_t nFewStage = bFew ? (size_t)(1 + 3*p->nFewMax)*8 : 0;
  const size_t oDirect = kHdrBytes + alignUp(nUp);      // kProbe's results, mapped
  if( (rc = ensurePin(cx, oDirect + nFewStage))!=0 ) return rc;
  if( cx->par.n<nPar ){
    if( (rc = ensure(cx, cx->par, nPar))!=0 ) return rc;
  }
  char *hUp = (char*)cx->hPin + kHdrBytes;
  {
    Hdr h0;
    memset(&h0, 0, sizeof(h0));
    h0.i0 = 0; h0.i1 = n; h0.andv = ~0ULL;
    memset(hUp, 0, kHdrBytes);
    memcpy(hUp, &h0, sizeof(h0));
    DTerm *aT = (DTerm*)(hUp + kHdrBytes);
    for(int t=0; t<nTerm; t++) aT[t] = dtermOf(q->aTerm[t], n);
    if( nSkip ) memcpy(hUp + kHdrBytes + (size_t)nTerm*sizeof(DTerm), q->aSkip, (size_t)nSkip*8);
    if( nIn ){
      char *zIn = hUp + kHdrBytes + (size_t)nTerm*sizeof(DTerm) + (size_t)nSkip*8;
      memcpy(zIn, q->aInVal, (size_t)nIn*8);
      memcpy(zIn + (size_t)nIn*8, q->aInTag, (size_t)nIn);
    }
  }
  Hdr *dH = (Hdr*)cx->par.p;
  const DTerm *dTerm = (const DTerm*)((char*)cx->par.p + kHdrBytes);
  const int64_t *dSkip = (const int64_t*)((char*)cx->par.p + kHdrBytes + (size_t)nTerm*sizeof(DTerm));
  const uint64_t *dInVal = (const uint64_t*)(dSkip + nSkip);
  const uint8_t *dInTag = (const uint8_t*)(dInVal + nIn);

  SelPred pred;
  pred.key = p->dKey; pred.tag = p->dTag; pred.val = p->dVal;
  pred.term = dTerm; pred.skip = dSkip; pred.nSkip = nSkip;
  pred.inVal = dInVal; pred.inTag = dInTag;
  pred.lo = q->lo; pred.hi = q->hi; pred.nTerm = nTerm;
  pred.checkKey = !p->bSorted && !fullRange;
  pred.nPair = -1;
  pred.pairTerm = 0;
  for(int t=0; t<nTerm && pred.nPair<0; t++){
    int np = 0;
    if( gpudsColAsPairs(q->aTerm[t].op, q->aTerm[t].tag, q->aTerm[t].val, &pred.pairAny,
                        pred.pairT, pred.pairV, &np) ){
      pred.nPair = np;
      pred.pairTerm = t;
    }
  }
  // what few() may look up in an equality index: that term's pairs, or
  // else a short IN list's (each value's pairs; its flags' tags whole)
  ProbeArg pa;
  int iProbe = -1;
  memset(&pa, 0, sizeof(pa));
  if( pred.nPair>=0 ){
    iProbe = pred.pairTerm;
    pa.n = pred.nPair; pa.any = pred.pairAny;
    for(int k=0; k<pred.nPair; k++){ pa.t[k] = pred.pairT[k]; pa.v[k] = pred.pairV[k]; }
  }else{
    for(int t=0; t<nTerm && iProbe<0; t++){
      const gpuds_term *pT = &q->aTerm[t];
      const uint32_t i0 = (uint32_t)(pT->val>>32), nv = (uint32_t)pT->val;
      if( pT->op!=GPUDS_CMP_IN || nv>kProbeIn ) continue;
      iProbe = t;
      if( pT->tag & GPUDS_IN_TEXT ) pa.any |= 1u<<GPUDS_TAG_TEXT;
      if( pT->tag & GPUDS_IN_NUM ) pa.any |= (1u<<GPUDS_TAG_INT)|(1u<<GPUDS_TAG_REAL);
      for(uint32_t j=0; j<nv; j++){
        uint32_t any = 0;
        uint8_t aT[3];
        uint64_t aV[3];
        int np = 0;
        gpudsColAsPairs(GPUDS_CMP_EQ, q->aInTag[i0+j], q->aInVal[i0+j], &any, aT, aV, &np);
        for(int k=0; k<np; k++){ pa.t[pa.n] = aT[k]; pa.v[pa.n++] = aV[k]; }
      }
    }
  }
  {
    // pairs whose tag is taken whole are left out, and so are repeats (a
    // list may hold a value twice, or 1 and 1.0, which share their pairs):
    // each row is a candidate once
    int k, j, m = 0;
    for(k=0; k<pa.n; k++){
      if( (pa.any>>pa.t[k]) & 1u ) continue;
      for(j=0; j<m && (pa.t[j]!=pa.t[k] || pa.v[j]!=pa.v[k]); j++){}
      if( j==m ){ pa.t[m] = pa.t[k]; pa.v[m++] = pa.v[k]; }
    }
    pa.n = m;
  }
  // the equality index of that term's column, for few()
  ColIdx *x = nullptr;
  if( bFew && iProbe>=0 ){
    x = idxEnsure<IdxT>(p, cx, q->aTerm[iProbe].iCol, &rc);
    if( rc ) return rc;
  }
  const bool bDirect = x && cx->dPin && nSkip==0 && nIn==0 && nTerm<=kTermsArg;
  Up up = { hUp, nUp, false };
  if( !bDirect && (rc = upSend(p, cx, up, q, 0))!=0 ) return rc;
  if( bFew ){
    int bDone = 0;
    rc = few<IdxT>(p, cx, q, pred, x, pa, bDirect, oDirect, up, p->bSorted && !fullRange,
                   pn, paKey, paRow, &bDone);
    if( rc || bDone ) return rc;
    // too many matches for few(): the ordered path, from nSel = 0 again
    GPUDS_CK(cx, cudaMemsetAsync(&dH->nSel, 0, sizeof(int64_t), cx->st));
  }
  if( (rc = upSend(p, cx, up, q, 0))!=0 ) return rc;

  // 2. key bounds
  int64_t i0 = 0, i1 = n;
  if( p->bSorted && !fullRange ){
    kBounds<<<1, 64, 0, cx->st>>>(p->dKey, n, q->lo, q->hi, dH);
    GPUDS_CK_LAUNCH(cx, "kBounds");
    Hdr h;
    if( (rc = readHdr(p, cx, &h))!=0 ) return rc;
    i0 = h.i0; i1 = h.i1;
    if( i0<0 || i1>n ) return colsSetErr(cx, GPUDS_ERROR, "internal error: key bounds out of range");
  }
  if( i1<=i0 ){
    GPUDS_CK(cx, cudaStreamSynchronize(cx->st));
    return GPUDS_OK;
  }
  const int64_t nRange = i1-i0;

  // 3. the matches, ascending row numbers
  if( (rc = ensure(cx, cx->sel, (size_t)nRange*sizeof(IdxT)))!=0 ) return rc;
  int64_t nOut = 0;
  if( (rc = selectIf<IdxT>(p, cx, i0, nRange, pred, (IdxT*)cx->sel.p, &nOut))!=0 ) return rc;
  if( nOut==0 ) return GPUDS_OK;
  if( q->nMost>0 && nOut>q->nMost ){ *pn = -1; return GPUDS_OK; }   // the caller scans

  // 4./5. order (and the top-k pre-selection)
  const bool needSort = byCol || !p->bSorted;
  const size_t oA = 0, oB = alignUp((size_t)nOut*8), oI = 2*oB;
  if( needSort ){
    if( (rc = ensure(cx, cx->sort, oI + alignUp((size_t)nOut*sizeof(IdxT))))!=0 ) return rc;
  }
  uint64_t *wA = needSort ? (uint64_t*)((char*)cx->sort.p + oA) : nullptr;
  uint64_t *wB = needSort ? (uint64_t*)((char*)cx->sort.p + oB) : nullptr;
  IdxT *idx = (IdxT*)cx->sel.p;
  IdxT *idxAlt = needSort ? (IdxT*)((char*)cx->sort.p + oI) : nullptr;
  uint64_t diff = 0, andv = 0;
  if( needSort && q->nFirst>0 && nOut>=kTopkMin && q->nFirst<=nOut/8 ){
    // words of the final order: the column's, else the key (descending:
    // the largest keys come first after the reversal)
    if( (rc = words<IdxT>(p, cx, idx, nOut, byCol ? q->iOrderCol : -1, q->bDesc ? 1 : 0,
                          wA, &diff, &andv))!=0 ) return rc;
    int64_t c = 0;
    if( (rc = topk<IdxT>(p, cx, idx, nOut, wA, diff, andv, q->nFirst, (IdxT*)wB, idxAlt, &c))!=0 ) return rc;
    IdxT *x = idx; idx = idxAlt; idxAlt = x;
    nOut = c;
  }
  if( !p->bSorted && nOut>1 ){
    if( (rc = words<IdxT>(p, cx, idx, nOut, -1, 0, wA, &diff, &andv))!=0 ) return rc;
    cub::DoubleBuffer<uint64_t> keys(wA, wB);
    cub::DoubleBuffer<IdxT> vals(idx, idxAlt);
    if( (rc = sortPairs<IdxT>(p, cx, keys, vals, nOut, diff))!=0 ) return rc;
    idx = vals.Current(); idxAlt = vals.Alternate();
  }
  const uint64_t *sk = nullptr;
  if( byCol ){
    if( (rc = words<IdxT>(p, cx, idx, nOut, q->iOrderCol, q->bDesc ? 1 : 0, wA, &diff, &andv))!=0 ) return rc;
    cub::DoubleBuffer<uint64_t> keys(wA, wB);
    cub::DoubleBuffer<IdxT> vals(idx, idxAlt);
    if( (rc = sortPairs<IdxT>(p, cx, keys, vals, nOut, diff))!=0 ) return rc;
    idx = vals.Current(); idxAlt = vals.Alternate();
    sk = keys.Current();
  }

  // 6. the rows returned
  int64_t m = nOut;
  if( q->nFirst>0 && nOut>q->nFirst ){
    m = q->nFirst;
    if( byCol ){
      kTies<<<1, 32, 0, cx->st>>>(sk, nOut, q->nFirst, dH);
      GPUDS_CK_LAUNCH(cx, "kTies");
      Hdr h;
      if( (rc = readHdr(p, cx, &h))!=0 ) return rc;
      if( h.m<q->nFirst || h.m>nOut ) return colsSetErr(cx, GPUDS_ERROR, "internal error: tie run out of range");
      m = h.m;
    }
  }
  const bool wantSort = paSort && byCol;
  const size_t nA = alignUp((size_t)m*8);
  if( (rc = ensure(cx, cx->out, nA*(wantSort ? 3 : 2)))!=0 ) return rc;
  int64_t *oK = (int64_t*)cx->out.p;
  uint64_t *oR = (uint64_t*)((char*)cx->out.p + nA);
  uint64_t *oS = wantSort ? (uint64_t*)((char*)cx->out.p + 2*nA) : nullptr;
  kOut<IdxT><<<gridFor(p, m), kBlock, 0, cx->st>>>(idx, nOut, m, (!byCol && q->bDesc) ? 1 : 0,
                                                 p->dKey, p->dRow, sk, q->bDesc ? 1 : 0,
                                                 oK, oR, oS);
  GPUDS_CK_LAUNCH(cx, "kOut");
  int64_t *aK = (int64_t*)malloc((size_t)m*8);
  uint64_t *aR = (uint64_t*)malloc((size_t)m*8);
  uint64_t *aS = wantSort ? (uint64_t*)malloc((size_t)m*8) : nullptr;
  if( !aK || !aR || (wantSort && !aS) ){
    (void)cudaStreamSynchronize(cx->st);
    free(aK); free(aR); free(aS);
    return colsSetErr(cx, GPUDS_NOMEM, "out of memory");
  }
  cudaError_t e = cudaMemcpyAsync(aK, oK, (size_t)m*8, cudaMemcpyDeviceToHost, cx->st);
  if( e==cudaSuccess ) e = cudaMemcpyAsync(aR, oR, (size_t)m*8, cudaMemcpyDeviceToHost, cx->st);
  if( e==cudaSuccess && aS ) e = cudaMemcpyAsync(aS, oS, (size_t)m*8, cudaMemcpyDeviceToHost, cx->st);
  if( e==cudaSuccess ) e = cudaStreamSynchronize(cx->st);
  if( e!=cudaSuccess ){
    rc = gpudsCudaFail(cx, e, "copy of the result to the host", __FILE__, __LINE__);   // waits for the stream
    free(aK); free(aR); free(aS);
    return rc;
  }
  *paKey = aK; *paRow = aR;
  if( wantSort ) *paSort = aS;
  *pn = m;
  return GPUDS_OK;
}

}  // namespace

#include "cols/agg.cuh"
#include "cols/ops.cuh"
#include "cols/hooks.cuh"
