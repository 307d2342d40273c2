// kernels/cols/layout.cuh -- what the column set's kernels and host code
// share: the size limits, a term as the device reads it (DTerm), the
// counters a query reads back (Hdr), the arguments of kProbe, the
// growing device buffer (DevBuf) and a column's equality index (ColIdx).
//
// Part of the CUDA column set's one translation unit (kernels/cols.cu,
// where the design is described).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gpuds_backend.h"
#include "common/launch.cuh"

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
// the set's life.  val, row, nBytes and seg are written once, by the call
// that builds it, before the release store of state 1; a call reads them
// only after loading state 1 with acquire.
struct ColIdx {
  uint64_t *val;         // values in (tag, value) order
  void *row;             // row numbers (IdxT) in that order
  size_t nBytes;         // device bytes of val and row
  int64_t seg[6];        // tag segments (GPUDS_TAG_xxx 0..4)
  std::atomic<int> state{0};  // 0 none yet, 1 built, -1 not built (no room)
  std::atomic<int> nAsk{0};   // queries that could have used it
};

// The tag segments of an index, by value, for kProbe.
struct Segs { int64_t s[6]; };

// A query's terms by value (n of them; 0: SelPred's, on the device).
struct TermArg { DTerm t[kTermsArg]; int n; };

// What kProbe looks up in an index: n (tag, value) pairs and the tags with
// their bit in any (whole segments), none of the pairs' tags among them.
struct ProbeArg { uint64_t v[kProbeMax]; uint8_t t[kProbeMax]; int n; uint32_t any; };

}  // namespace
