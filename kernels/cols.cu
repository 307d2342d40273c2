// cols.cu -- the CUDA column set: gpudsCudaColsOps (gpuds_backend.h, "column
// sets"), with exactly the results of the host column set (backend/host_cols.c,
// colsQuery): the same rows, in the same order, the same nFirst/ties rule and
// the same sort keys.
//
// DATA (xLoad): on the device, as given: keys (int64), row words (u64) and,
// per column, tags (u8) and values (u64), column-major (column c of row i at
// c*n+i).  One stream per column set; every call leaves nothing in flight.
//
// A QUERY (xQuery), all on the set's stream:
//   1. the terms, the skip list and a small header (Hdr: counters the host
//      reads back) go up in one copy from a pinned buffer;
//   2. key bounds: sorted keys -> one warp per bound does a 33-ary search
//      (kBounds, 5 dependent loads for 10^7 keys) and the host reads [i0,i1);
//      unsorted keys -> every row checks lo <= key <= hi in the predicate;
//   FEW: a filter in key order (terms, no column order, nFirst at most
//      kFewMax) first tries one pass (few()): kAppend evaluates SelPred
//      over i0..i1-1 (bounds found on the device) and appends the matches
//      in no order with one atomic per warp (one term, the common case:
//      each thread loads four rows before comparing, for bytes in flight
//      (H100, 10^7 rows: xQuery 0.118 -> 0.076 ms), and =, IS and IS [NOT]
//      NULL compare words, gpudsColAsPairs); the count and up to kFewMax
//      keys and row words come back in one copy, one wait in all, and the
//      host sorts them.  Twice as fast as steps 2-6 for a selective filter;
//      with more matches than kFewMax, steps 2-6 follow.
//      INDEX: before that pass, a filter with an =, IS, IS [NOT] NULL or
//      short IN term (up to kProbeIn values) whose column has an equality
//      index (ColIdx, built by idxBuild at the column's second such query:
//      row numbers sorted by tag and value) looks the term's (tag, value)
//      pairs up there (kProbe, one block: a warp searches a pair) and checks
//      those few candidates against everything; with no skip list and no
//      IN values its terms go as a kernel argument and its result into the
//      mapped pinned buffer, so nothing is copied either way (H200, 10^7
//      rows: xQuery 0.071 -> 0.020 ms).  Too many candidates: the pass;
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
// MEMORY: the arrays, a small parameter buffer, the equality indexes built
// (8 + sizeof(IdxT) bytes a row each, kept until xFree; none where there
// is no room), and workspaces that grow and are given back after a query
// that left them holding more than a store keeps (trimWorkspace) (sel: the
// matches; sort: the words and the second row-number buffer; out: the
// gathered result; tmp: CUB's temporary storage).
// Running out of device (or pinned) memory returns GPUDS_NOMEM and leaves the
// set usable.  Every CUDA call and launch is checked with kernels/common/check.cuh's
// GPUDS_CK / GPUDS_CK_LAUNCH.
#include "gpuds_backend.h"
#include "gpuds_colval.h"

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

struct CudaCols;
namespace {
int gpudsCudaFail(CudaCols *p, cudaError_t e, const char *zWhat, const char *zFile, int iLine);
}

namespace {

typedef unsigned long long ull;
constexpr uint64_t kSign = 0x8000000000000000ULL;
constexpr int kBlock = gpuds_launch::kBlock;
constexpr int64_t kBitsMin = 1<<16;   // read the varying bits back from here on
constexpr int64_t kTopkMin = 1<<16;   // matches from which top-k pre-selects
static_assert(kTopkMin>=kBitsMin, "top-k needs the varying bits read back");
constexpr int kHdrBytes = 128;        // Hdr's slot at the start of the buffers
constexpr int kHistMax = 2048;        // bins of a top-k pass (11 bits)
constexpr int64_t kFewMax = 2048;     // results the one-pass path returns (few())
constexpr int kTermsShared = 16;      // kAppend keeps up to this many terms in shared memory
constexpr int kTermsArg = 8;          // kProbe takes up to this many terms as an argument
constexpr int kProbeMax = 24;         // kProbe looks up at most this many (tag, value) pairs
constexpr int kProbeIn = 8;           // an IN list of at most this many values is looked up

// One term as the device reads it.
struct DTerm {
  int64_t off;      // iCol*n: the column's first value
  uint64_t cval;    // the constant
  int32_t op;       // GPUDS_CMP_xxx
  uint32_t ctag;    // the constant's tag
};
static_assert(sizeof(DTerm)==24, "DTerm layout");
static_assert(3*kProbeIn<=kProbeMax, "an IN list's pairs fit kProbe's argument");

// Term t of a set of n rows as the device reads it.
inline DTerm dtermOf(const gpuds_term &t, int64_t n){
  DTerm d;
  d.off = (int64_t)t.iCol*n;
  d.cval = t.val;
  d.op = t.op;
  d.ctag = t.tag;
  return d;
}

// Counters and state of one query, on the device (and read back to pinned
// host memory).
struct Hdr {
  int64_t i0, i1;        // sorted keys: the rows within the key bounds
  int64_t nSel;          // matches (DeviceSelect's count)
  int64_t m;             // rows returned after the tie run (kTies)
  ull orv, andv;         // OR and AND of the last words gathered
  ull prefix, mask;      // top-k: the bits of T found so far, which ones
  ull rank;              // top-k: rank (1-based) of T among the candidates
};
static_assert(sizeof(Hdr)<=kHdrBytes, "Hdr too big");

// A device buffer that grows and keeps its allocation (contents not kept).
struct DevBuf {
  void *p = nullptr;
  size_t n = 0;
  size_t used = 0;       // the most the current query asked of it
};

// A column's equality index (built on demand, idxEnsure): the row numbers
// ordered by (tag, value) and the values in that order, tag t's rows at
// [seg[t], seg[t+1]).  The set's arrays never change, so it stays exact for
// the set's life.
struct ColIdx {
  uint64_t *val;         // values in (tag, value) order
  void *row;             // row numbers (IdxT) in that order
  size_t nBytes;         // device bytes of val and row
  int64_t seg[6];        // tag segments (GPUDS_TAG_xxx 0..4)
  int state;             // 0 none yet, 1 built, -1 not built (no room)
  int nAsk;              // queries that could have used it
};

}  // namespace

struct CudaCols {
  int nCol;
  int64_t n;
  int bSorted;
  int64_t *dKey;
  uint64_t *dRow;
  uint8_t *dTag;
  uint64_t *dVal;
  cudaStream_t st;
  int nSM;
  DevBuf par;            // Hdr | terms | skip list | top-k histogram
  DevBuf sel, sort, out, tmp;
  void *hPin;            // pinned: Hdr read back | Hdr, terms, skip list going up
  void *dPin;            // hPin as the device sees it (mapped), or NULL
  size_t nPin;
  gpuds_mem::DevMem mem; // device bytes held, and the test hooks
  int64_t nFewMax;       // few(): most results it returns (kFewMax; tests lower it)
  ColIdx *aIdx;          // per column, its equality index (nCol, calloc()ed)
  char zErr[512];
};

namespace {

CudaCols *cc(gpuds_cols *p){ return (CudaCols*)p; }

// Record the failed CUDA call on p and return its GPUDS_* code: GPUDS_NOMEM
// for an allocation failure, GPUDS_ERROR otherwise.  Waits for p's stream
// so that nothing is left in flight, and clears the runtime's last error.
int gpudsCudaFail(CudaCols *p, cudaError_t e, const char *zWhat, const char *zFile, int iLine){
  int rc = gpudsCudaCode(e);
  gpudsCudaMessage(p->zErr, sizeof(p->zErr), "cudacols", e, zWhat, zFile, iLine);
  (void)cudaGetLastError();
  if( p->st ) (void)cudaStreamSynchronize(p->st);
  (void)cudaGetLastError();
  return rc;
}

// Record message z with code rc on p; returns rc.
int colsSetErr(CudaCols *p, int rc, const char *z){
  snprintf(p->zErr, sizeof(p->zErr), "cudacols: %s", z);
  return rc;
}

// Device memory through the shared accountant (kernels/common/devmem.cuh).
cudaError_t devAlloc(CudaCols *p, void **pp, size_t n){
  *pp = nullptr;
  if( n==0 ) return cudaSuccess;
  return gpuds_mem::alloc(p->mem, pp, n);
}

// Free memory from devAlloc (NULL is a no-op).
void devFree(CudaCols *p, void *ptr, size_t n){
  gpuds_mem::release(p->mem, ptr, n);
}

// Make b at least n bytes (contents not kept; grows by 1.25x at least, to
// 2 MiB steps).  On failure b is empty and the code is returned.
int ensure(CudaCols *p, DevBuf &b, size_t n){
  if( n>b.used ) b.used = n;
  if( b.n>=n ) return GPUDS_OK;
  size_t want = n + n/4;
  if( want<n ) want = n;
  want = (want + ((size_t)2<<20) - 1) & ~(((size_t)2<<20) - 1);
  if( want<n ) want = n;
  devFree(p, b.p, b.n);
  b.p = nullptr; b.n = 0;
  cudaError_t e = devAlloc(p, &b.p, want);
  if( e!=cudaSuccess && want>n ){
    (void)cudaGetLastError();
    e = devAlloc(p, &b.p, n);
    want = n;
  }
  if( e!=cudaSuccess ) return gpudsCudaFail(p, e, "device workspace", __FILE__, __LINE__);
  b.n = want;
  return GPUDS_OK;
}

// Make the pinned buffer at least n bytes (nothing may be in flight on it).
int ensurePin(CudaCols *p, size_t n){
  if( p->nPin>=n ) return GPUDS_OK;
  if( p->hPin ){ (void)cudaFreeHost(p->hPin); p->hPin = nullptr; p->dPin = nullptr; p->nPin = 0; }
  size_t want = n<4096 ? 4096 : n + n/4;
  GPUDS_CK(p, gpuds_mem::allocPinned(&p->hPin, want));
  p->nPin = want;
  // kernels may write results straight into it (kProbe), where it is mapped
  if( cudaHostGetDevicePointer(&p->dPin, p->hPin, 0)!=cudaSuccess ){
    p->dPin = nullptr;
    (void)cudaGetLastError();
  }
  return GPUDS_OK;
}

size_t alignUp(size_t x){ return (x+255) & ~(size_t)255; }

// Blocks for a grid-stride kernel over n items (8 resident blocks an SM).
unsigned gridFor(const CudaCols *p, int64_t n){
  return gpuds_launch::gridBlocks(p->nSM>0 ? p->nSM : 1, 8, n>0 ? (size_t)n : 0);
}

// ---------------------------------------------------------------- device --

// One warp: the first index i of ascending a[0..n-1] with a[i] > k (upper)
// or a[i] >= k (!upper); n if none.  Each step probes 32 evenly spaced
// positions and narrows the range to 1/33.  All lanes return the answer.
template<typename T>
__device__ int64_t warpBound(const T *a, int64_t n, T k, bool upper){
  const unsigned full = 0xffffffffu;
  int lane = threadIdx.x & 31;
  int64_t lo = 0, hi = n;
  while( lo<hi ){
    int64_t len = hi-lo;
    int64_t pos = lo + (len/33)*(lane+1) + ((len%33)*(lane+1))/33;   // < hi
    T v = a[pos];
    bool below = upper ? !(k<v) : (v<k);
    unsigned b = __ballot_sync(full, below);
    int c = __popc(b);
    int64_t pLast = __shfl_sync(full, pos, c>0 ? c-1 : 0);
    int64_t pNext = __shfl_sync(full, pos, c<32 ? c : 31);
    if( c>0 ) lo = pLast+1;
    if( c<32 ) hi = pNext;
  }
  return lo;
}

// Sorted keys: h->i0 = first row with key >= lo (warp 0), h->i1 = first row
// with key > hi (warp 1).  Launch: 1 block of 64 threads.
__global__ void kBounds(const int64_t *key, int64_t n, int64_t lo, int64_t hi, Hdr *h){
  int w = threadIdx.x >> 5;
  int64_t r = warpBound<int64_t>(key, n, w==0 ? lo : hi, w==1);
  if( (threadIdx.x & 31)==0 ){
    if( w==0 ) h->i0 = r; else h->i1 = r;
  }
}

// The selection predicate of row i: key bounds (unsorted keys only), every
// term ("maybe" passes), then not in the skip list.
struct SelPred {
  const int64_t *key;
  const uint8_t *tag;
  const uint64_t *val;
  const DTerm *term;
  const int64_t *skip;
  int64_t nSkip;
  const uint64_t *inVal;   // the IN terms' values ...
  const uint8_t *inTag;    // ... and their tags
  int64_t lo, hi;
  int nTerm;
  int checkKey;
  // term pairTerm as words (gpudsColAsPairs; the first term that can be,
  // for kAppend's one-term pass and kProbe): nPair < 0 if none; tags with
  // their bit in pairAny match, and values equal to a pair
  int pairTerm;
  int nPair;
  uint32_t pairAny;
  uint8_t pairT[3];
  uint64_t pairV[3];
  __device__ __forceinline__ bool operator()(int64_t i) const {
    if( checkKey ){
      int64_t k = key[i];
      if( k<lo || k>hi ) return false;
    }
    for(int t=0; t<nTerm; t++){
      const DTerm *T = &term[t];
      int64_t o = T->off + i;
      if( T->op==GPUDS_CMP_IN ){
        uint32_t i0 = (uint32_t)(T->cval>>32);
        if( gpudsColMatchIn(tag[o], val[o], (uint8_t)T->ctag, inTag + i0, inVal + i0,
                            (uint32_t)T->cval)==0 ) return false;
      }else if( gpudsColMatch(tag[o], val[o], T->op, (uint8_t)T->ctag, T->cval)==0 ){
        return false;
      }
    }
    if( nSkip>0 ){
      int64_t k = key[i], a = 0, b = nSkip;
      while( a<b ){
        int64_t mid = a + (b-a)/2;
        if( skip[mid]<k ) a = mid+1; else b = mid;
      }
      if( a<nSkip && skip[a]==k ) return false;
    }
    return true;
  }
};

// OR and AND of v over the block's threads into *pOr, *pAnd (atomics, one
// per warp).
__device__ __forceinline__ void orAndReduce(ull o, ull a, ull *pOr, ull *pAnd){
  for(int s=16; s>0; s>>=1){
    o |= __shfl_xor_sync(0xffffffffu, o, s);
    a &= __shfl_xor_sync(0xffffffffu, a, s);
  }
  if( (threadIdx.x & 31)==0 ){
    atomicOr(pOr, o);
    atomicAnd(pAnd, a);
  }
}

// The sort word of each match j < m: key ^ sign bit (mode 0) or the
// column's gpudsColSortKey (mode 1; tag, val point at the column), inverted
// if inv; into out[j], with their OR and AND into h->orv, h->andv (which the
// caller reset to 0 and ~0).
template<typename IdxT>
__global__ void kWords(const IdxT *idx, int64_t m, const int64_t *key,
                       const uint8_t *tag, const uint64_t *val, int mode, int inv,
                       uint64_t *out, Hdr *h){
  ull o = 0, a = ~0ULL;
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<m; j+=stride){
    int64_t i = (int64_t)idx[j];
    uint64_t w = mode==0 ? ((uint64_t)key[i] ^ kSign) : gpudsColSortKey(tag[i], val[i]);
    if( inv ) w = ~w;
    out[j] = w;
    o |= w; a &= w;
  }
  orAndReduce(o, a, &h->orv, &h->andv);
}

// Top-k pass: histogram of bits [shift, shift+w) of the words whose bits
// already decided (h->mask) equal h->prefix, added into hist (2^w bins,
// zeroed by the caller).  Lanes with the same bin add once (__match_any).
__global__ void kHist(const uint64_t *s, int64_t m, const Hdr *h, int shift, int w,
                      ull *hist){
  __shared__ unsigned sh[kHistMax];
  const int bins = 1<<w;
  for(int i=threadIdx.x; i<bins; i+=blockDim.x) sh[i] = 0;
  __syncthreads();
  const ull mask = h->mask, prefix = h->prefix;
  const int lane = threadIdx.x & 31;
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  // b is the same for every lane of a warp: the loop stays converged
  for(int64_t b=(int64_t)blockIdx.x*blockDim.x + (threadIdx.x & ~31); b<m; b+=stride){
    int64_t j = b + lane;
    uint64_t v = j<m ? s[j] : 0;
    bool ok = j<m && (v & mask)==prefix;
    unsigned act = __ballot_sync(0xffffffffu, ok);
    if( ok ){
      unsigned bin = (unsigned)(v>>shift) & (unsigned)(bins-1);
      unsigned peers = __match_any_sync(act, bin);
      if( lane==__ffs(peers)-1 ) atomicAdd(&sh[bin], (unsigned)__popc(peers));
    }
  }
  __syncthreads();
  for(int i=threadIdx.x; i<bins; i+=blockDim.x){
    if( sh[i] ) atomicAdd(&hist[i], (ull)sh[i]);
  }
}

// Top-k: pick the bin of the pass holding the h->rank-th candidate, make its
// digit part of h->prefix and the rank relative to it.  Launch: one warp.
__global__ void kChoose(const ull *hist, int shift, int w, Hdr *h){
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int bins = 1<<w, per = bins/32;
  ull sum = 0;
  for(int i=0; i<per; i++) sum += hist[lane*per+i];
  ull incl = sum;
  for(int o=1; o<32; o<<=1){
    ull t = __shfl_up_sync(full, incl, o);
    if( lane>=o ) incl += t;
  }
  ull rank = h->rank;
  unsigned b = __ballot_sync(full, incl>=rank);
  int L = b ? __ffs(b)-1 : 31;     // b is never 0: rank <= candidates
  if( lane==L ){
    ull c = incl - sum;
    int d = lane*per + per - 1;
    for(int i=0; i<per; i++){
      ull x = hist[lane*per+i];
      if( c+x>=rank ){ d = lane*per+i; break; }
      c += x;
    }
    h->rank = rank - c;
    h->prefix |= (ull)d << shift;
    h->mask |= (ull)(bins-1) << shift;
  }
}

// Top-k candidate test of position j: word <= T, T = h->prefix | fixed.
struct LeThr {
  const uint64_t *s;
  const Hdr *h;
  ull fixed;
  __device__ __forceinline__ bool operator()(int64_t j) const {
    return s[j] <= (h->prefix | fixed);
  }
};

// out[t] = in[pos[t]] for t < c.
template<typename IdxT>
__global__ void kGatherIdx(const IdxT *pos, int64_t c, const IdxT *in, IdxT *out){
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t t=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; t<c; t+=stride){
    out[t] = in[(int64_t)pos[t]];
  }
}

// The end of the run of words equal to s[nFirst-1] from nFirst on (s sorted
// ascending, nFirst < m): h->m.  Launch: one warp.
__global__ void kTies(const uint64_t *s, int64_t m, int64_t nFirst, Hdr *h){
  uint64_t v = s[nFirst-1];
  int64_t r = warpBound<uint64_t>(s+nFirst, m-nFirst, v, true);
  if( threadIdx.x==0 ) h->m = nFirst + r;
}

// The output rows j < m: row idx[j] (idx[nAll-1-j] if rev): its key, row word
// and (if oS) the sort word s[j] (inverted back if inv).
template<typename IdxT>
__global__ void kOut(const IdxT *idx, int64_t nAll, int64_t m, int rev,
                     const int64_t *key, const uint64_t *row, const uint64_t *s,
                     int inv, int64_t *oK, uint64_t *oR, uint64_t *oS){
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<m; j+=stride){
    int64_t i = (int64_t)idx[rev ? nAll-1-j : j];
    oK[j] = key[i];
    oR[j] = row[i];
    if( oS ) oS[j] = inv ? ~s[j] : s[j];
  }
}

// The matches of pred among rows h->i0..h->i1-1, unordered: their count
// added to h->nSel (zero before) and the first cap of them (in no order)
// in out.  One pass for a selective filter: DeviceSelect keeps the matches
// in order, at twice this kernel's time on 10^7 rows (H100: 102 vs 54 us),
// which a result of a few rows, sorted afterwards, does not need.  Each
// warp reserves its matches' slots with one atomic.  blockDim.x: a
// multiple of 32.
template<typename IdxT>
__global__ void kAppend(SelPred pred, Hdr *h, IdxT *out, int64_t cap){
  // the terms in shared memory: every row reads them (from global memory
  // they cost H100 8 us of 62 on 10^7 rows)
  __shared__ DTerm sT[kTermsShared];
  if( pred.nTerm<=kTermsShared ){
    for(int t=threadIdx.x; t<pred.nTerm; t+=blockDim.x) sT[t] = pred.term[t];
    __syncthreads();
    pred.term = sT;
  }
  const int64_t i0 = h->i0, i1 = h->i1;
  const int lane = threadIdx.x & 31;
  // one warp's slots for its matches m (one atomic); m's row i to out
  auto append = [&](bool m, int64_t i){
    unsigned b = __ballot_sync(0xffffffffu, m);
    if( b==0 ) return;
    ull pos = 0;
    if( lane==0 ) pos = atomicAdd((ull*)&h->nSel, (ull)__popc(b));
    pos = __shfl_sync(0xffffffffu, pos, 0) + (ull)__popc(b & ((1u<<lane)-1));
    if( m && pos<(ull)cap ) out[pos] = (IdxT)i;
  };
  if( pred.nTerm==1 && !pred.checkKey && pred.nSkip==0 && pred.term[0].op!=GPUDS_CMP_IN ){
    // one comparison (the common case, e.g. v = ?): each thread loads the
    // tags and values of kUnroll rows before it compares any, so that
    // enough bytes are in flight to keep HBM busy (one row a thread per
    // step left the H100 at half its bandwidth)
    constexpr int kUnroll = 4;
    const DTerm T = pred.term[0];
    const uint8_t *tag = pred.tag + T.off;
    const uint64_t *val = pred.val + T.off;
    const int64_t stride = (int64_t)gridDim.x*blockDim.x*kUnroll;
    for(int64_t base=i0 + (int64_t)blockIdx.x*blockDim.x*kUnroll; base<i1; base+=stride){
      uint8_t tg[kUnroll];
      uint64_t vl[kUnroll];
#pragma unroll
      for(int u=0; u<kUnroll; u++){
        int64_t i = base + (int64_t)u*blockDim.x + threadIdx.x;
        tg[u] = GPUDS_TAG_NULL; vl[u] = 0;
        if( i<i1 ){ tg[u] = __ldg(tag + i); vl[u] = __ldg((const ull*)val + i); }
      }
#pragma unroll
      for(int u=0; u<kUnroll; u++){
        int64_t i = base + (int64_t)u*blockDim.x + threadIdx.x;
        bool m;
        if( pred.nPair>=0 ){
          // words, not values: a third less time than gpudsColMatch's
          // branches on 10^7 rows (H200: 45 vs 64 us)
          m = ((pred.pairAny>>tg[u]) & 1u)!=0;
#pragma unroll
          for(int k=0; k<3; k++) m |= k<pred.nPair && tg[u]==pred.pairT[k] && vl[u]==pred.pairV[k];
        }else{
          m = gpudsColMatch(tg[u], vl[u], T.op, (uint8_t)T.ctag, T.cval)!=0;
        }
        append(i<i1 && m, i);
      }
    }
    return;
  }
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t base=i0 + (int64_t)blockIdx.x*blockDim.x; base<i1; base+=stride){
    int64_t i = base + threadIdx.x;
    append(i<i1 && pred(i), i);
  }
}

// The read-back area of few(): the count h->nSel, then the keys, row words
// and row numbers of the first min(count, cap) matches idx[] (cap of each
// slot; the row numbers order equal keys as the ordered path does).
template<typename IdxT>
__global__ void kFewOut(const IdxT *idx, const Hdr *h, int64_t cap, const int64_t *key,
                        const uint64_t *row, int64_t *out){
  const int64_t m = h->nSel<cap ? h->nSel : cap;
  const int64_t stride = (int64_t)gridDim.x*blockDim.x;
  int64_t j = (int64_t)blockIdx.x*blockDim.x + threadIdx.x;
  if( j==0 ) out[0] = h->nSel;
  for(; j<m; j+=stride){
    int64_t i = (int64_t)idx[j];
    out[1 + j] = key[i];
    out[1 + cap + j] = (int64_t)row[i];
    out[1 + 2*cap + j] = i;
  }
}

// Equality index build (idxBuild): out[j] = j.
template<typename IdxT>
__global__ void kIota(IdxT *out, int64_t n){
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<n; j+=stride) out[j] = (IdxT)j;
}

// Equality index build: the tag (oT) or the value (oV) of row idx[j], and
// the rows of each tag counted into cnt[0..4].
template<typename IdxT>
__global__ void kIdxGather(const IdxT *idx, int64_t n, const uint8_t *tag, const uint64_t *val,
                           uint8_t *oT, uint64_t *oV, ull *cnt){
  __shared__ unsigned sh[5];
  if( threadIdx.x<5 ) sh[threadIdx.x] = 0;
  __syncthreads();
  int64_t stride = (int64_t)gridDim.x*blockDim.x;
  for(int64_t j=(int64_t)blockIdx.x*blockDim.x + threadIdx.x; j<n; j+=stride){
    int64_t i = (int64_t)idx[j];
    if( oT ){
      uint8_t t = tag[i];
      oT[j] = t;
      if( cnt && t<5 ) atomicAdd(&sh[t], 1u);
    }
    if( oV ) oV[j] = val[i];
  }
  __syncthreads();
  if( cnt && threadIdx.x<5 && sh[threadIdx.x] ) atomicAdd(&cnt[threadIdx.x], (ull)sh[threadIdx.x]);
}

// The tag segments of an index, by value, for kProbe.
struct Segs { int64_t s[6]; };

// A query's terms by value (n of them; 0: SelPred's, on the device).
struct TermArg { DTerm t[kTermsArg]; int n; };

// What kProbe looks up in an index: n (tag, value) pairs and the tags with
// their bit in any (whole segments), none of the pairs' tags among them.
struct ProbeArg { uint64_t v[kProbeMax]; uint8_t t[kProbeMax]; int n; uint32_t any; };

// few() through a column's equality index: the rows whose value equals one
// of pa's pairs or has a tag of pa.any (ranges of the index: a warp
// searches a pair) are the candidates;
// if there are more than cap, out[0] = -2 and nothing else (the caller
// scans instead); otherwise those within rows h->i0..h->i1-1 (h NULL: all
// n) that satisfy pred (its terms from ta if ta.n > 0) are written as
// kFewOut writes them (count, keys, row words, row numbers, in no order).
// out may be mapped host memory: with the terms as an argument, a query
// makes no copy either way.  Launch: one block of kBlock threads.
template<typename IdxT>
__global__ void kProbe(SelPred pred, TermArg ta, ProbeArg pa, const Hdr *h, int64_t n,
                       const uint64_t *iv, const IdxT *ir, Segs g, int64_t cap,
                       const int64_t *key, const uint64_t *row, int64_t *out){
  constexpr int kR = kProbeMax + 5;       // ranges: the pairs', then the tags'
  __shared__ int64_t ra[kR], rb[kR];
  __shared__ ull cnt;
  __shared__ DTerm sT[kTermsArg];
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nW = blockDim.x >> 5;
  if( ta.n>0 ){
    for(int t=threadIdx.x; t<ta.n; t+=blockDim.x) sT[t] = ta.t[t];
    pred.term = sT;       // (read after the __syncthreads below)
  }
  for(int k=w; k<pa.n; k+=nW){
    int64_t a = 0, b = 0;
    const int t = pa.t[k];
    if( t<5 ){
      const int64_t s0 = g.s[t], m = g.s[t+1] - s0;
      a = s0 + warpBound<uint64_t>(iv + s0, m, pa.v[k], false);
      b = s0 + warpBound<uint64_t>(iv + s0, m, pa.v[k], true);
    }
    if( lane==0 ){ ra[k] = a; rb[k] = b; }
  }
  if( (int)threadIdx.x>=pa.n && threadIdx.x<kProbeMax ){
    ra[threadIdx.x] = rb[threadIdx.x] = 0;
  }else if( threadIdx.x>=kProbeMax && threadIdx.x<kR ){
    const int t = threadIdx.x - kProbeMax;
    const bool on = ((pa.any>>t) & 1u)!=0;
    ra[threadIdx.x] = on ? g.s[t] : 0;
    rb[threadIdx.x] = on ? g.s[t+1] : 0;
  }
  if( threadIdx.x==0 ) cnt = 0;
  __syncthreads();
  int64_t total = 0;
  for(int k=0; k<kR; k++) total += rb[k] - ra[k];
  if( total>cap ){
    if( threadIdx.x==0 ) out[0] = -2;
    return;
  }
  const int64_t i0 = h ? h->i0 : 0, i1 = h ? h->i1 : n;
  for(int64_t t=threadIdx.x; t<total; t+=blockDim.x){
    int k = 0;
    int64_t off = t;
    while( off>=rb[k]-ra[k] ){ off -= rb[k]-ra[k]; k++; }
    int64_t i = (int64_t)ir[ra[k]+off];
    if( i<i0 || i>=i1 || !pred(i) ) continue;
    ull j = atomicAdd(&cnt, 1ULL);
    out[1 + j] = key[i];
    out[1 + cap + j] = (int64_t)row[i];
    out[1 + 2*cap + j] = i;
  }
  __syncthreads();
  if( threadIdx.x==0 ) out[0] = (int64_t)cnt;
}

// ------------------------------------------------------------------ host --

// Copy the device Hdr to the pinned read-back slot and wait: returns it.
int readHdr(CudaCols *p, Hdr *pOut){
  Hdr *hDown = (Hdr*)p->hPin;
  GPUDS_CK(p, cudaMemcpyAsync(hDown, p->par.p, sizeof(Hdr), cudaMemcpyDeviceToHost, p->st));
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  *pOut = *hDown;
  return GPUDS_OK;
}

// Reset h->orv to 0 and h->andv to ~0 (before kWords).
int resetOrAnd(CudaCols *p){
  Hdr *d = (Hdr*)p->par.p;
  GPUDS_CK(p, cudaMemsetAsync(&d->orv, 0, sizeof(ull), p->st));
  GPUDS_CK(p, cudaMemsetAsync(&d->andv, 0xff, sizeof(ull), p->st));
  return GPUDS_OK;
}

// The sort words of the m matches idx[] into out (see kWords) and, for m >=
// kBitsMin, their varying bits in *pDiff (read back); ~0 otherwise (all bits
// taken as varying).  *pAnd: their AND (valid when *pDiff was read).
template<typename IdxT>
int words(CudaCols *p, const IdxT *idx, int64_t m, int col, int inv, uint64_t *out,
          uint64_t *pDiff, uint64_t *pAnd){
  const uint8_t *tag = nullptr;
  const uint64_t *val = nullptr;
  if( col>=0 ){
    tag = p->dTag + (size_t)col*(size_t)p->n;
    val = p->dVal + (size_t)col*(size_t)p->n;
  }
  int rc = resetOrAnd(p);
  if( rc ) return rc;
  kWords<IdxT><<<gridFor(p, m), kBlock, 0, p->st>>>(idx, m, p->dKey, tag, val,
                                                    col>=0 ? 1 : 0, inv, out,
                                                    (Hdr*)p->par.p);
  GPUDS_CK_LAUNCH(p, "kWords");
  *pDiff = ~0ULL;
  *pAnd = 0;
  if( m>=kBitsMin ){
    Hdr h;
    rc = readHdr(p, &h);
    if( rc ) return rc;
    *pDiff = h.orv ^ h.andv;
    *pAnd = h.andv;
  }
  return GPUDS_OK;
}

// Stable sort of the m pairs (keys.Current(), vals.Current()) by the bits of
// the words that vary (diff; 0: nothing to do).
template<typename IdxT>
int sortPairs(CudaCols *p, cub::DoubleBuffer<uint64_t> &keys,
              cub::DoubleBuffer<IdxT> &vals, int64_t m, uint64_t diff){
  if( m<2 || diff==0 ) return GPUDS_OK;
  int b0 = __builtin_ctzll(diff), b1 = 64 - __builtin_clzll(diff);
  size_t nTmp = 0;
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(nullptr, nTmp, keys, vals, (IdxT)m, b0, b1, p->st));
  int rc = ensure(p, p->tmp, nTmp<1 ? 1 : nTmp);
  if( rc ) return rc;
  nTmp = p->tmp.n;
  GPUDS_CK(p, cub::DeviceRadixSort::SortPairs(p->tmp.p, nTmp, keys, vals, (IdxT)m, b0, b1, p->st));
  return GPUDS_OK;
}

// DeviceSelect::If of the positions first..first+nItems-1 with pred into
// out, the count into the device Hdr's nSel, then read back into *pnSel.
template<typename IdxT, typename Pred>
int selectIf(CudaCols *p, int64_t first, int64_t nItems, Pred pred, IdxT *out,
             int64_t *pnSel){
  thrust::counting_iterator<int64_t> it(first);
  int64_t *dCount = &((Hdr*)p->par.p)->nSel;
  size_t nTmp = 0;
  GPUDS_CK(p, cub::DeviceSelect::If(nullptr, nTmp, it, out, dCount, nItems, pred, p->st));
  int rc = ensure(p, p->tmp, nTmp<1 ? 1 : nTmp);
  if( rc ) return rc;
  nTmp = p->tmp.n;
  GPUDS_CK(p, cub::DeviceSelect::If(p->tmp.p, nTmp, it, out, dCount, nItems, pred, p->st));
  Hdr h;
  rc = readHdr(p, &h);
  if( rc ) return rc;
  if( h.nSel<0 || h.nSel>nItems ) return colsSetErr(p, GPUDS_ERROR, "internal error: select count out of range");
  *pnSel = h.nSel;
  return GPUDS_OK;
}

// Top-k: of the nOut matches idx[] (words of their order in s, varying bits
// diff, AND andv), keep those whose word is <= the nFirst-th smallest, in
// their order, in idxOut; their count in *pc.  pos: scratch of nOut IdxT.
template<typename IdxT>
int topk(CudaCols *p, const IdxT *idx, int64_t nOut, const uint64_t *s, uint64_t diff,
         uint64_t andv, int64_t nFirst, IdxT *pos, IdxT *idxOut, int64_t *pc){
  static const int aShift[] = {53, 42, 31, 20, 9, 0};
  static const int aW[] = {11, 11, 11, 11, 11, 9};
  Hdr *d = (Hdr*)p->par.p;
  ull *hist = (ull*)((char*)p->par.p + p->par.n - kHistMax*sizeof(ull));
  ull init[3] = {0, 0, (ull)nFirst};       // prefix, mask, rank
  ull mask = 0;
  int rc;
  // the pinned upload area is idle here (the query's upload finished at the
  // first read-back), so it carries the state's initial values
  memcpy((char*)p->hPin + kHdrBytes, init, sizeof(init));
  GPUDS_CK(p, cudaMemcpyAsync(&d->prefix, (char*)p->hPin + kHdrBytes, sizeof(init),
                          cudaMemcpyHostToDevice, p->st));
  for(int k=0; k<6; k++){
    ull win = ((1ULL<<aW[k])-1) << aShift[k];
    if( (diff & win)==0 ) continue;      // the same bits in every word
    GPUDS_CK(p, cudaMemsetAsync(hist, 0, kHistMax*sizeof(ull), p->st));
    kHist<<<gridFor(p, nOut), kBlock, 0, p->st>>>(s, nOut, d, aShift[k], aW[k], hist);
    GPUDS_CK_LAUNCH(p, "kHist");
    kChoose<<<1, 32, 0, p->st>>>(hist, aShift[k], aW[k], d);
    GPUDS_CK_LAUNCH(p, "kChoose");
    mask |= win;
  }
  LeThr pred{s, d, (ull)(andv & ~mask)};
  int64_t c = 0;
  rc = selectIf<IdxT>(p, 0, nOut, pred, pos, &c);
  if( rc ) return rc;
  if( c<nFirst || c>nOut ) return colsSetErr(p, GPUDS_ERROR, "internal error: top-k candidates out of range");
  if( c>0 ){
    kGatherIdx<IdxT><<<gridFor(p, c), kBlock, 0, p->st>>>(pos, c, idx, idxOut);
    GPUDS_CK_LAUNCH(p, "kGatherIdx");
  }
  *pc = c;
  return GPUDS_OK;
}

// The one-pass path of queryT for a filter in key order (no column order):
// kAppend, then the count and up to p->nFewMax rows copied back at once,
// one wait in all.  *pbDone is 0 when more rows match than it returns (the
// caller takes the ordered path); else the result is in *pn, *paKey,
// *paRow, ordered on the host (it is small).  The device Hdr's i0, i1 are
// set (upload, kBounds) and its nSel is 0.
// Drop column c's equality index (if any).
void idxDrop(CudaCols *p, int c){
  ColIdx *x = &p->aIdx[c];
  if( x->val ) devFree(p, x->val, (size_t)p->n*8);
  if( x->row ) devFree(p, x->row, x->nBytes - (size_t)p->n*8);
  x->val = nullptr; x->row = nullptr; x->nBytes = 0;
}

// Build column c's equality index (ColIdx): the row numbers sorted by value
// (a radix sort of all 64 bits), then stably by tag (3 bits), then the
// values gathered in that order.  Temporary buffers are freed before it
// returns; the index holds 8 + sizeof(IdxT) bytes a row.
template<typename IdxT>
int idxBuild(CudaCols *p, int c){
  const int64_t n = p->n;
  const size_t nn = (size_t)n;
  const uint8_t *tag = p->dTag + (size_t)c*nn;
  const uint64_t *val = p->dVal + (size_t)c*nn;
  ColIdx *x = &p->aIdx[c];
  void *aBuf[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  IdxT *r0 = nullptr, *r1 = nullptr;
  int rc = GPUDS_OK;
  size_t nTmp = 0;
  ull hCnt[5];
  cudaError_t e;
#define IDX_CK(call) do{ e = (call); if( e!=cudaSuccess ){ \
    rc = gpudsCudaFail(p, e, "equality index", __FILE__, __LINE__); goto idx_out; } }while(0)
  // 1. rows by value: keys (a copy of the values) and rows, double buffers
  IDX_CK(devAlloc(p, &aBuf[0], nn*8 + 512));    // (+ the tag counts, step 2)
  IDX_CK(devAlloc(p, &aBuf[1], nn*8));
  IDX_CK(devAlloc(p, &aBuf[2], nn*sizeof(IdxT)));
  IDX_CK(devAlloc(p, &aBuf[3], nn*sizeof(IdxT)));
  r0 = (IdxT*)aBuf[2]; r1 = (IdxT*)aBuf[3];
  IDX_CK(cudaMemcpyAsync(aBuf[0], val, nn*8, cudaMemcpyDeviceToDevice, p->st));
  kIota<IdxT><<<gridFor(p, n), kBlock, 0, p->st>>>(r0, n);
  IDX_CK(cudaGetLastError());
  {
    cub::DoubleBuffer<uint64_t> k((uint64_t*)aBuf[0], (uint64_t*)aBuf[1]);
    cub::DoubleBuffer<IdxT> v(r0, r1);
    IDX_CK(cub::DeviceRadixSort::SortPairs(nullptr, nTmp, k, v, (IdxT)n, 0, 64, p->st));
    if( (rc = ensure(p, p->tmp, nTmp<1 ? 1 : nTmp))!=0 ) goto idx_out;
    nTmp = p->tmp.n;
    IDX_CK(cub::DeviceRadixSort::SortPairs(p->tmp.p, nTmp, k, v, (IdxT)n, 0, 64, p->st));
    r0 = v.Current(); r1 = v.Alternate();
  }
  // 2. stably by tag: the keys' buffers hold the tags now (and the counts)
  {
    uint8_t *t0 = (uint8_t*)aBuf[0], *t1 = (uint8_t*)aBuf[1];
    ull *dCnt = (ull*)((char*)aBuf[0] + ((nn + 255) & ~(size_t)255));
    IDX_CK(cudaMemsetAsync(dCnt, 0, 5*sizeof(ull), p->st));
    kIdxGather<IdxT><<<gridFor(p, n), kBlock, 0, p->st>>>(r0, n, tag, nullptr, t0, nullptr, dCnt);
    IDX_CK(cudaGetLastError());
    IDX_CK(cudaMemcpyAsync(hCnt, dCnt, sizeof(hCnt), cudaMemcpyDeviceToHost, p->st));
    cub::DoubleBuffer<uint8_t> k(t0, t1);
    cub::DoubleBuffer<IdxT> v(r0, r1);
    nTmp = 0;
    IDX_CK(cub::DeviceRadixSort::SortPairs(nullptr, nTmp, k, v, (IdxT)n, 0, 3, p->st));
    if( (rc = ensure(p, p->tmp, nTmp<1 ? 1 : nTmp))!=0 ) goto idx_out;
    nTmp = p->tmp.n;
    IDX_CK(cub::DeviceRadixSort::SortPairs(p->tmp.p, nTmp, k, v, (IdxT)n, 0, 3, p->st));
    r0 = v.Current(); r1 = v.Alternate();
  }
  // 3. the values in that order; the index keeps r0 and them
  IDX_CK(devAlloc(p, &aBuf[4], nn*8));
  kIdxGather<IdxT><<<gridFor(p, n), kBlock, 0, p->st>>>(r0, n, nullptr, val, nullptr,
                                                      (uint64_t*)aBuf[4], nullptr);
  IDX_CK(cudaGetLastError());
  IDX_CK(cudaStreamSynchronize(p->st));
  x->seg[0] = 0;
  for(int t=0; t<5; t++) x->seg[t+1] = x->seg[t] + (int64_t)hCnt[t];
  if( x->seg[5]!=n ){ rc = colsSetErr(p, GPUDS_ERROR, "internal error: index tags do not add up"); goto idx_out; }
  x->val = (uint64_t*)aBuf[4]; aBuf[4] = nullptr;
  x->row = r0;
  if( r0==(IdxT*)aBuf[2] ) aBuf[2] = nullptr; else aBuf[3] = nullptr;
  x->nBytes = nn*(8 + sizeof(IdxT));
  x->state = 1;
idx_out:
#undef IDX_CK
  if( rc && p->st ) (void)cudaStreamSynchronize(p->st);
  devFree(p, aBuf[0], nn*8 + 512); devFree(p, aBuf[1], nn*8);
  devFree(p, aBuf[2], nn*sizeof(IdxT)); devFree(p, aBuf[3], nn*sizeof(IdxT));
  devFree(p, aBuf[4], nn*8);
  (void)cudaGetLastError();
  return rc;
}

// Column c's equality index for a query that can use it: built at the
// second such query (a one-off query does not pay for it), never where
// there was no room (the query scans; the message is dropped).  NULL if
// none; a code other than GPUDS_NOMEM from the build is returned in *pRc.
template<typename IdxT>
ColIdx *idxEnsure(CudaCols *p, int c, int *pRc){
  ColIdx *x = &p->aIdx[c];
  *pRc = GPUDS_OK;
  if( x->state==0 && ++x->nAsk>=2 ){
    int rc = idxBuild<IdxT>(p, c);
    if( rc ){
      idxDrop(p, c);
      x->state = -1;
      p->zErr[0] = 0;
      if( rc!=GPUDS_NOMEM ){ *pRc = rc; return nullptr; }
    }
  }
  return x->state==1 ? x : nullptr;
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
int upSend(CudaCols *p, Up &u, const gpuds_query *q, int bBounds){
  if( u.bSent ) return GPUDS_OK;
  GPUDS_CK(p, cudaMemcpyAsync(p->par.p, u.h, u.n, cudaMemcpyHostToDevice, p->st));
  u.bSent = true;
  if( bBounds ){
    kBounds<<<1, 64, 0, p->st>>>(p->dKey, p->n, q->lo, q->hi, (Hdr*)p->par.p);
    GPUDS_CK_LAUNCH(p, "kBounds");
  }
  return GPUDS_OK;
}

// The one-pass path: x, the equality index of term pred.pairTerm's column
// (NULL: none), gives the candidates of pa (kProbe) unless they are too many;
// else kAppend scans.  With bDirect (terms as kProbe's argument, results
// written into mapped pinned memory at oDirect) nothing is copied until a
// scan needs the parameters (u).  *pbDone: the result is complete.
template<typename IdxT>
int few(CudaCols *p, const gpuds_query *q, const SelPred &pred, ColIdx *x, const ProbeArg &pa,
        bool bDirect, size_t oDirect, Up &u, int bBounds, int64_t *pn, int64_t **paKey,
        uint64_t **paRow, int *pbDone){
  const int64_t cap = p->nFewMax;
  const size_t nStage = (size_t)(1 + 3*cap)*8;
  Hdr *dH = (Hdr*)p->par.p;
  int rc;
  *pbDone = 0;
  if( (rc = ensure(p, p->sel, (size_t)cap*sizeof(IdxT)))!=0 ) return rc;
  if( (rc = ensure(p, p->out, nStage))!=0 ) return rc;
  if( bBounds ){
    kBounds<<<1, 64, 0, p->st>>>(p->dKey, p->n, q->lo, q->hi, dH);
    GPUDS_CK_LAUNCH(p, "kBounds");
  }
  // lands over the upload area: the copy going up came first on the stream
  // (queryT made the pinned area big enough for both)
  int64_t *hStage = (int64_t*)p->hPin;
  if( x ){
    // an equality term with an index: its few candidates, checked
    TermArg ta;
    ta.n = 0;
    if( bDirect ){
      ta.n = q->nTerm;
      for(int t=0; t<q->nTerm; t++) ta.t[t] = dtermOf(q->aTerm[t], p->n);
      hStage = (int64_t*)((char*)p->hPin + oDirect);
    }
    int64_t *dOut = bDirect ? (int64_t*)((char*)p->dPin + oDirect) : (int64_t*)p->out.p;
    kProbe<IdxT><<<1, kBlock, 0, p->st>>>(pred, ta, pa, (u.bSent || bBounds) ? dH : nullptr, p->n,
                                          x->val, (const IdxT*)x->row, *(const Segs*)x->seg,
                                          cap, p->dKey, p->dRow, dOut);
    GPUDS_CK_LAUNCH(p, "kProbe");
    if( !bDirect ){
      GPUDS_CK(p, cudaMemcpyAsync(hStage, p->out.p, nStage, cudaMemcpyDeviceToHost, p->st));
    }
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
    if( hStage[0]==-2 ){                      // more candidates than cap: scan
      x = nullptr;
      hStage = (int64_t*)p->hPin;
    }
  }
  if( !x ){
    if( (rc = upSend(p, u, q, bBounds))!=0 ) return rc;
    kAppend<IdxT><<<gridFor(p, p->n), kBlock, 0, p->st>>>(pred, dH, (IdxT*)p->sel.p, cap);
    GPUDS_CK_LAUNCH(p, "kAppend");
    kFewOut<IdxT><<<gridFor(p, cap), kBlock, 0, p->st>>>((const IdxT*)p->sel.p, dH, cap,
                                                        p->dKey, p->dRow, (int64_t*)p->out.p);
    GPUDS_CK_LAUNCH(p, "kFewOut");
    GPUDS_CK(p, cudaMemcpyAsync(hStage, p->out.p, nStage, cudaMemcpyDeviceToHost, p->st));
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
  }
  const int64_t nSel = hStage[0];
  if( nSel<0 || nSel>p->n ) return colsSetErr(p, GPUDS_ERROR, "internal error: select count out of range");
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
  if( !aK || !aR ){ free(aK); free(aR); return colsSetErr(p, GPUDS_NOMEM, "out of memory"); }
  for(int64_t j=0; j<m; j++){
    aK[j] = sK[ord[(size_t)j]];
    aR[j] = (uint64_t)hStage[1 + cap + ord[(size_t)j]];
  }
  *paKey = aK; *paRow = aR; *pn = m;
  return GPUDS_OK;
}

// xQuery for a set whose row numbers fit IdxT (q validated, p->n > 0).
template<typename IdxT>
int queryT(CudaCols *p, const gpuds_query *q, int64_t *pn, int64_t **paKey,
           uint64_t **paRow, uint64_t **paSort){
  const int64_t n = p->n;
  const int nTerm = q->nTerm>0 ? q->nTerm : 0;
  const int64_t nSkip = q->nSkip>0 && q->aSkip ? q->nSkip : 0;
  const bool byCol = q->iOrderCol>=0;
  const bool fullRange = q->lo==INT64_MIN && q->hi==INT64_MAX;
  int rc;

  if( q->lo>q->hi ) return GPUDS_OK;                    // no key qualifies

  // 1. parameters: Hdr | terms | skip list, one upload; histogram at the end
  if( (uint64_t)nSkip > ((uint64_t)1<<56) ) return colsSetErr(p, GPUDS_NOMEM, "skip list too large");
  const int64_t nIn = q->nIn>0 && q->aInVal && q->aInTag ? q->nIn : 0;
  if( (uint64_t)nIn > ((uint64_t)1<<31) ) return colsSetErr(p, GPUDS_NOMEM, "IN list too large");
  for(int t=0; t<nTerm; t++){
    const gpuds_term *pT = &q->aTerm[t];
    if( pT->op==GPUDS_CMP_IN && (pT->val>>32) + (uint32_t)pT->val > (uint64_t)nIn ){
      return colsSetErr(p, GPUDS_MISUSE, "IN term past the query's IN values");
    }
  }
  // Hdr | terms | skip list | IN values | IN tags
  size_t nUp = kHdrBytes + (size_t)nTerm*sizeof(DTerm) + (size_t)nSkip*8 + (size_t)nIn*9;
  size_t nPar = alignUp(nUp) + kHistMax*sizeof(ull);
  // few(): a filter in key order whose result may be small
  const bool bFew = nTerm>0 && !byCol && p->nFewMax>0 && (q->nFirst<=0 || q->nFirst<=p->nFewMax);
  const size_t nFewStage = bFew ? (size_t)(1 + 3*p->nFewMax)*8 : 0;
  const size_t oDirect = kHdrBytes + alignUp(nUp);      // kProbe's results, mapped
  if( (rc = ensurePin(p, oDirect + nFewStage))!=0 ) return rc;
  if( p->par.n<nPar ){
    if( (rc = ensure(p, p->par, nPar))!=0 ) return rc;
  }
  char *hUp = (char*)p->hPin + kHdrBytes;
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
  Hdr *dH = (Hdr*)p->par.p;
  const DTerm *dTerm = (const DTerm*)((char*)p->par.p + kHdrBytes);
  const int64_t *dSkip = (const int64_t*)((char*)p->par.p + kHdrBytes + (size_t)nTerm*sizeof(DTerm));
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
    x = idxEnsure<IdxT>(p, q->aTerm[iProbe].iCol, &rc);
    if( rc ) return rc;
  }
  const bool bDirect = x && p->dPin && nSkip==0 && nIn==0 && nTerm<=kTermsArg;
  Up up = { hUp, nUp, false };
  if( !bDirect && (rc = upSend(p, up, q, 0))!=0 ) return rc;
  if( bFew ){
    int bDone = 0;
    rc = few<IdxT>(p, q, pred, x, pa, bDirect, oDirect, up, p->bSorted && !fullRange,
                   pn, paKey, paRow, &bDone);
    if( rc || bDone ) return rc;
    // too many matches for few(): the ordered path, from nSel = 0 again
    GPUDS_CK(p, cudaMemsetAsync(&dH->nSel, 0, sizeof(int64_t), p->st));
  }
  if( (rc = upSend(p, up, q, 0))!=0 ) return rc;

  // 2. key bounds
  int64_t i0 = 0, i1 = n;
  if( p->bSorted && !fullRange ){
    kBounds<<<1, 64, 0, p->st>>>(p->dKey, n, q->lo, q->hi, dH);
    GPUDS_CK_LAUNCH(p, "kBounds");
    Hdr h;
    if( (rc = readHdr(p, &h))!=0 ) return rc;
    i0 = h.i0; i1 = h.i1;
    if( i0<0 || i1>n ) return colsSetErr(p, GPUDS_ERROR, "internal error: key bounds out of range");
  }
  if( i1<=i0 ){
    GPUDS_CK(p, cudaStreamSynchronize(p->st));
    return GPUDS_OK;
  }
  const int64_t nRange = i1-i0;

  // 3. the matches, ascending row numbers
  if( (rc = ensure(p, p->sel, (size_t)nRange*sizeof(IdxT)))!=0 ) return rc;
  int64_t nOut = 0;
  if( (rc = selectIf<IdxT>(p, i0, nRange, pred, (IdxT*)p->sel.p, &nOut))!=0 ) return rc;
  if( nOut==0 ) return GPUDS_OK;
  if( q->nMost>0 && nOut>q->nMost ){ *pn = -1; return GPUDS_OK; }   // the caller scans

  // 4./5. order (and the top-k pre-selection)
  const bool needSort = byCol || !p->bSorted;
  const size_t oA = 0, oB = alignUp((size_t)nOut*8), oI = 2*oB;
  if( needSort ){
    if( (rc = ensure(p, p->sort, oI + alignUp((size_t)nOut*sizeof(IdxT))))!=0 ) return rc;
  }
  uint64_t *wA = needSort ? (uint64_t*)((char*)p->sort.p + oA) : nullptr;
  uint64_t *wB = needSort ? (uint64_t*)((char*)p->sort.p + oB) : nullptr;
  IdxT *idx = (IdxT*)p->sel.p;
  IdxT *idxAlt = needSort ? (IdxT*)((char*)p->sort.p + oI) : nullptr;
  uint64_t diff = 0, andv = 0;
  if( needSort && q->nFirst>0 && nOut>=kTopkMin && q->nFirst<=nOut/8 ){
    // words of the final order: the column's, else the key (descending:
    // the largest keys come first after the reversal)
    if( (rc = words<IdxT>(p, idx, nOut, byCol ? q->iOrderCol : -1, q->bDesc ? 1 : 0,
                          wA, &diff, &andv))!=0 ) return rc;
    int64_t c = 0;
    if( (rc = topk<IdxT>(p, idx, nOut, wA, diff, andv, q->nFirst, (IdxT*)wB, idxAlt, &c))!=0 ) return rc;
    IdxT *x = idx; idx = idxAlt; idxAlt = x;
    nOut = c;
  }
  if( !p->bSorted && nOut>1 ){
    if( (rc = words<IdxT>(p, idx, nOut, -1, 0, wA, &diff, &andv))!=0 ) return rc;
    cub::DoubleBuffer<uint64_t> keys(wA, wB);
    cub::DoubleBuffer<IdxT> vals(idx, idxAlt);
    if( (rc = sortPairs<IdxT>(p, keys, vals, nOut, diff))!=0 ) return rc;
    idx = vals.Current(); idxAlt = vals.Alternate();
  }
  const uint64_t *sk = nullptr;
  if( byCol ){
    if( (rc = words<IdxT>(p, idx, nOut, q->iOrderCol, q->bDesc ? 1 : 0, wA, &diff, &andv))!=0 ) return rc;
    cub::DoubleBuffer<uint64_t> keys(wA, wB);
    cub::DoubleBuffer<IdxT> vals(idx, idxAlt);
    if( (rc = sortPairs<IdxT>(p, keys, vals, nOut, diff))!=0 ) return rc;
    idx = vals.Current(); idxAlt = vals.Alternate();
    sk = keys.Current();
  }

  // 6. the rows returned
  int64_t m = nOut;
  if( q->nFirst>0 && nOut>q->nFirst ){
    m = q->nFirst;
    if( byCol ){
      kTies<<<1, 32, 0, p->st>>>(sk, nOut, q->nFirst, dH);
      GPUDS_CK_LAUNCH(p, "kTies");
      Hdr h;
      if( (rc = readHdr(p, &h))!=0 ) return rc;
      if( h.m<q->nFirst || h.m>nOut ) return colsSetErr(p, GPUDS_ERROR, "internal error: tie run out of range");
      m = h.m;
    }
  }
  const bool wantSort = paSort && byCol;
  const size_t nA = alignUp((size_t)m*8);
  if( (rc = ensure(p, p->out, nA*(wantSort ? 3 : 2)))!=0 ) return rc;
  int64_t *oK = (int64_t*)p->out.p;
  uint64_t *oR = (uint64_t*)((char*)p->out.p + nA);
  uint64_t *oS = wantSort ? (uint64_t*)((char*)p->out.p + 2*nA) : nullptr;
  kOut<IdxT><<<gridFor(p, m), kBlock, 0, p->st>>>(idx, nOut, m, (!byCol && q->bDesc) ? 1 : 0,
                                                 p->dKey, p->dRow, sk, q->bDesc ? 1 : 0,
                                                 oK, oR, oS);
  GPUDS_CK_LAUNCH(p, "kOut");
  int64_t *aK = (int64_t*)malloc((size_t)m*8);
  uint64_t *aR = (uint64_t*)malloc((size_t)m*8);
  uint64_t *aS = wantSort ? (uint64_t*)malloc((size_t)m*8) : nullptr;
  if( !aK || !aR || (wantSort && !aS) ){
    (void)cudaStreamSynchronize(p->st);
    free(aK); free(aR); free(aS);
    return colsSetErr(p, GPUDS_NOMEM, "out of memory");
  }
  cudaError_t e = cudaMemcpyAsync(aK, oK, (size_t)m*8, cudaMemcpyDeviceToHost, p->st);
  if( e==cudaSuccess ) e = cudaMemcpyAsync(aR, oR, (size_t)m*8, cudaMemcpyDeviceToHost, p->st);
  if( e==cudaSuccess && aS ) e = cudaMemcpyAsync(aS, oS, (size_t)m*8, cudaMemcpyDeviceToHost, p->st);
  if( e==cudaSuccess ) e = cudaStreamSynchronize(p->st);
  if( e!=cudaSuccess ){
    rc = gpudsCudaFail(p, e, "copy of the result to the host", __FILE__, __LINE__);   // waits for the stream
    free(aK); free(aR); free(aS);
    return rc;
  }
  *paKey = aK; *paRow = aR;
  if( wantSort ) *paSort = aS;
  *pn = m;
  return GPUDS_OK;
}

// ------------------------------------------------------------------- ops --

// xFree: everything p holds, and p (after its stream is idle).  NULL: no-op.
void colsFree(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  if( !p ) return;
  if( p->st ) (void)cudaStreamSynchronize(p->st);
  devFree(p, p->dKey, 0); devFree(p, p->dRow, 0);
  devFree(p, p->dTag, 0); devFree(p, p->dVal, 0);
  devFree(p, p->par.p, 0); devFree(p, p->sel.p, 0); devFree(p, p->sort.p, 0);
  devFree(p, p->out.p, 0); devFree(p, p->tmp.p, 0);
  if( p->aIdx ){
    for(int c=0; c<p->nCol; c++) idxDrop(p, c);
    free(p->aIdx);
  }
  if( p->hPin ) (void)cudaFreeHost(p->hPin);
  if( p->st ) (void)cudaStreamDestroy(p->st);
  (void)cudaGetLastError();
  free(p);
}

// xLoad's work on a zeroed p: stream, arrays, upload.  GPUDS_OK or a code
// with p->zErr set (the caller frees p).
int loadInto(CudaCols *p, int64_t n, int nc, const int64_t *aKey, const uint64_t *aRow,
             const uint8_t *aTag, const uint64_t *aVal){
  GPUDS_CK(p, cudaDeviceGetAttribute(&p->nSM, cudaDevAttrMultiProcessorCount, 0));
  GPUDS_CK(p, cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
  if( n==0 ) return GPUDS_OK;
  if( (uint64_t)n > (uint64_t)SIZE_MAX/8/(uint64_t)(nc>0 ? nc : 1)/2 ){
    return colsSetErr(p, GPUDS_NOMEM, "column set too large");
  }
  size_t nn = (size_t)n, nv = (size_t)n*(size_t)nc;
  GPUDS_CK(p, devAlloc(p, (void**)&p->dKey, nn*8));
  GPUDS_CK(p, devAlloc(p, (void**)&p->dRow, nn*8));
  if( nc>0 ){
    GPUDS_CK(p, devAlloc(p, (void**)&p->dTag, nv));
    GPUDS_CK(p, devAlloc(p, (void**)&p->dVal, nv*8));
  }
  GPUDS_CK(p, cudaMemcpyAsync(p->dKey, aKey, nn*8, cudaMemcpyHostToDevice, p->st));
  GPUDS_CK(p, cudaMemcpyAsync(p->dRow, aRow, nn*8, cudaMemcpyHostToDevice, p->st));
  if( nc>0 ){
    GPUDS_CK(p, cudaMemcpyAsync(p->dTag, aTag, nv, cudaMemcpyHostToDevice, p->st));
    GPUDS_CK(p, cudaMemcpyAsync(p->dVal, aVal, nv*8, cudaMemcpyHostToDevice, p->st));
  }
  GPUDS_CK(p, cudaStreamSynchronize(p->st));
  return GPUDS_OK;
}

// A malloc()ed copy of z (NULL if out of memory).
char *dupStr(const char *z){
  size_t k = strlen(z)+1;
  char *r = (char*)malloc(k);
  if( r ) memcpy(r, z, k);
  return r;
}

// xLoad (see gpuds_backend.h).
int colsLoad(gpuds_cols **pp, int nCol, int64_t n, int bSorted, const int64_t *aKey,
             const uint64_t *aRow, const uint8_t *aTag, const uint64_t *aVal, char **pzErr){
  char zDev[256];
  *pp = nullptr;
  if( pzErr ) *pzErr = nullptr;
  if( !gpudsCudaDevice(zDev, sizeof(zDev), nullptr, nullptr) ){
    if( pzErr ){
      *pzErr = (char*)malloc(300);
      if( *pzErr ) snprintf(*pzErr, 300, "cudacols: no usable CUDA device: %s", zDev);
    }
    return GPUDS_ERROR;
  }
  CudaCols *p = (CudaCols*)calloc(1, sizeof(CudaCols));
  if( !p ){
    if( pzErr ) *pzErr = dupStr("cudacols: out of memory");
    return GPUDS_NOMEM;
  }
  p->nCol = nCol;
  p->n = n>0 ? n : 0;
  p->bSorted = bSorted;
  p->nFewMax = kFewMax;
  p->aIdx = (ColIdx*)calloc(nCol>0 ? (size_t)nCol : 1, sizeof(ColIdx));
  if( !p->aIdx ){
    if( pzErr ) *pzErr = dupStr("cudacols: out of memory");
    free(p);
    return GPUDS_NOMEM;
  }
  int rc = loadInto(p, p->n, nCol>0 ? nCol : 0, aKey, aRow, aTag, aVal);
  if( rc!=GPUDS_OK ){
    if( pzErr ) *pzErr = dupStr(p->zErr);
    colsFree((gpuds_cols*)p);
    return rc;
  }
  *pp = (gpuds_cols*)p;
  return GPUDS_OK;
}

// After a query: the workspaces go back when they hold more than a store
// keeps (gpuds_mem::workspaceOverKeep: 32 MiB, or a quarter of the set's
// arrays if that is more) and this query needed no more than that, so that
// the set holds what its columns take, not its largest query's workspace
// (on an H200 at 10^7 rows the queries of a sqlbench run left 327 MB of
// workspace beside 430 MB of arrays, for good).  A query that needed more
// leaves it to the next one: a top-10 over 10^7 rows needs ~240 MB, and
// taking and giving that back each time doubled its 0.5 ms.
void trimWorkspace(CudaCols *p){
  DevBuf *a[] = {&p->sel, &p->sort, &p->out, &p->tmp};
  uint64_t ws = 0, used = 0, fixed, arrays;
  for(DevBuf *b : a){
    ws += b->n;
    used += b->used;
    b->used = 0;
  }
  fixed = ws + p->par.n;
  arrays = p->mem.bytes>fixed ? p->mem.bytes-fixed : 0;
  if( gpuds_mem::workspaceOverKeep(used, arrays) ) return;
  if( !gpuds_mem::workspaceOverKeep(ws, arrays) ) return;
  (void)cudaStreamSynchronize(p->st);   // nothing may still use them
  for(DevBuf *b : a){
    devFree(p, b->p, b->n);
    b->p = nullptr; b->n = 0;
  }
  (void)cudaGetLastError();
}

// xQuery (see gpuds_backend.h).
int colsQuery(gpuds_cols *pCols, const gpuds_query *q, int64_t *pn, int64_t **paKey,
              uint64_t **paRow, uint64_t **paSort){
  CudaCols *p = cc(pCols);
  *pn = 0; *paKey = nullptr; *paRow = nullptr;
  if( paSort ) *paSort = nullptr;
  for(int t=0; t<q->nTerm; t++){
    if( q->aTerm[t].iCol<0 || q->aTerm[t].iCol>=p->nCol ){
      return colsSetErr(p, GPUDS_MISUSE, "term on a column the set does not have");
    }
  }
  if( q->iOrderCol>=p->nCol ) return colsSetErr(p, GPUDS_MISUSE, "order by a column the set does not have");
  if( p->n==0 ) return GPUDS_OK;
  int rc = (uint64_t)p->n <= (uint64_t)UINT32_MAX
         ? queryT<uint32_t>(p, q, pn, paKey, paRow, paSort)
         : queryT<uint64_t>(p, q, pn, paKey, paRow, paSort);
  trimWorkspace(p);
  return rc;
}

// xBytes: device bytes held (arrays and workspaces).
int64_t colsBytes(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  return p ? (int64_t)p->mem.bytes : 0;
}

// xErrmsg
const char *colsErrmsg(gpuds_cols *pCols){
  return pCols ? cc(pCols)->zErr : "";
}

// xAgg: not on the GPU yet.  GPUDS_MISUSE, which the SQLite side answers
// by aggregating the rows of an xQuery itself.
int colsAgg(gpuds_cols *pCols, const gpuds_agg *pAgg, gpuds_aggres *pRes){
  (void)pAgg;
  memset(pRes, 0, sizeof(*pRes));
  if( pCols ) snprintf(cc(pCols)->zErr, sizeof(cc(pCols)->zErr), "no aggregation on the GPU");
  return GPUDS_MISUSE;
}

}  // namespace

extern "C" const gpuds_cols_ops gpudsCudaColsOps = {
  "cuda", colsLoad, colsFree, colsQuery, colsBytes, colsErrmsg, colsAgg
};

// Test hook: simulate a device holding only `limit` bytes for this set's
// allocations (0: no limit).
extern "C" void gpudsCudaColsSetDeviceLimit(gpuds_cols *pCols, uint64_t limit){
  if( pCols ) cc(pCols)->mem.limit = limit;
}

// Test hook: the one-pass path of filters (few()) returns at most n rows,
// else the ordered path runs (0: never taken).
extern "C" void gpudsCudaColsSetFewMax(gpuds_cols *pCols, int64_t n){
  if( pCols ) cc(pCols)->nFewMax = n>0 ? n : 0;
}

// Test hook: the columns whose equality index is built.
extern "C" int gpudsCudaColsIndexed(gpuds_cols *pCols){
  int n = 0;
  CudaCols *p = cc(pCols);
  for(int c=0; p && p->aIdx && c<p->nCol; c++) n += p->aIdx[c].state==1;
  return n;
}
