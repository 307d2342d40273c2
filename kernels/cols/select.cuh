// kernels/cols/select.cuh -- the CUB steps the column set's query and its
// aggregation share: a stable radix sort of pairs by the bits that vary, and
// a select of row positions by a predicate, both in a call's context's
// workspace on its stream.
//
// Part of the CUDA column set's one translation unit: included by
// kernels/cols.cu and kernels/cols/agg.cuh.
#pragma once

#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>

#include "gpuds_backend.h"
#include "common/check.cuh"
#include "cols/store.cuh"

namespace {

// Stable sort of the m pairs (keys.Current(), vals.Current()) by the bits of
// the words that vary (diff; 0: nothing to do).
template<typename IdxT>
int sortPairs(CudaCols *p, ColsCtx *cx, cub::DoubleBuffer<uint64_t> &keys,
              cub::DoubleBuffer<IdxT> &vals, int64_t m, uint64_t diff){
  if( m<2 || diff==0 ) return GPUDS_OK;
  int b0 = __builtin_ctzll(diff), b1 = 64 - __builtin_clzll(diff);
  size_t nTmp = 0;
  GPUDS_CK(cx, cub::DeviceRadixSort::SortPairs(nullptr, nTmp, keys, vals, (IdxT)m, b0, b1, cx->st));
  int rc = ensure(cx, cx->tmp, nTmp<1 ? 1 : nTmp);
  if( rc ) return rc;
  nTmp = cx->tmp.n;
  GPUDS_CK(cx, cub::DeviceRadixSort::SortPairs(cx->tmp.p, nTmp, keys, vals, (IdxT)m, b0, b1, cx->st));
  return GPUDS_OK;
}

// DeviceSelect::If of the positions first..first+nItems-1 with pred into
// out, the count into *dCount on the device (nothing waited for).
template<typename IdxT, typename Pred>
int selectTo(CudaCols *p, ColsCtx *cx, int64_t first, int64_t nItems, Pred pred, IdxT *out, int64_t *dCount){
  thrust::counting_iterator<int64_t> it(first);
  size_t nTmp = 0;
  GPUDS_CK(cx, cub::DeviceSelect::If(nullptr, nTmp, it, out, dCount, nItems, pred, cx->st));
  int rc = ensure(cx, cx->tmp, nTmp<1 ? 1 : nTmp);
  if( rc ) return rc;
  nTmp = cx->tmp.n;
  GPUDS_CK(cx, cub::DeviceSelect::If(cx->tmp.p, nTmp, it, out, dCount, nItems, pred, cx->st));
  return GPUDS_OK;
}

}  // namespace
