// kernels/cols/hooks.cuh -- the column set's test hooks, declared in
// kernels/cols.cuh.  Those that steer a set are called while no other call
// runs on it (kernels/cols/store.cuh: the calls read their fields
// unguarded).
//
// Part of the CUDA column set's one translation unit: included by
// kernels/cols.cu.
#pragma once

#include <cstdint>
#include <mutex>

#include "gpuds_backend.h"
#include "cols.cuh"
#include "common/devmem.cuh"
#include "cols/store.cuh"

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
  for(int c=0; p && p->aIdx && c<p->nCol; c++) n += p->aIdx[c].state.load()==1;
  return n;
}

// Test hook: the contexts the set has made (as many as calls ran at once).
extern "C" int gpudsCudaColsContexts(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  if( !p ) return 0;
  std::lock_guard<std::mutex> g(p->muPool);
  return p->nCtx;
}

// Test hook: while bOn, every device allocation the calling thread makes
// (for any store or set) fails as one the full GPU refuses: a test fails
// one thread's call among several running on one set.
extern "C" void gpudsCudaColsFailThread(int bOn){
  gpuds_mem::threadFails() = bOn!=0;
}

// Test hook: steer xAgg's paths.  bSorted: groups always sorted (path L),
// never dense numbers, and no fused pass (kAggOne); laneRows: rows a lane steps in a chunk of path L
// (0: the default); r2BlockMax: groups up to which a block, not a warp,
// merges a group's chunks (0: the default); yBatch: most aggregates one
// launch computes (0: as memory allows).
extern "C" void gpudsCudaColsAggTune(gpuds_cols *pCols, int bSorted, int64_t laneRows,
                                     int64_t r2BlockMax, int yBatch){
  CudaCols *p = cc(pCols);
  if( !p ) return;
  p->aggForceL = bSorted;
  p->aggLaneRows = laneRows>0 ? laneRows : 0;
  p->aggR2BlockMax = r2BlockMax>0 ? r2BlockMax : 0;
  p->aggYBatch = yBatch>0 ? yBatch : 0;
}

// Test hook: time xAgg on its context's stream (CUDA events, from the
// first launch to the last copy back) from now on; returns the last timed
// xAgg's time in ms (-1 where none was timed).
extern "C" double gpudsCudaColsAggTime(gpuds_cols *pCols){
  CudaCols *p = cc(pCols);
  if( !p ) return -1;
  p->aggTime = true;
  return p->aggMs.load();
}
