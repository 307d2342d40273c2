// kernels/cols/hooks.cuh -- the column set's test hooks, declared in
// kernels/cols.cuh.
//
// Part of the CUDA column set's one translation unit: included by
// kernels/cols.cu.
#pragma once

#include <cstdint>

#include "gpuds_backend.h"
#include "cols.cuh"
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
  for(int c=0; p && p->aIdx && c<p->nCol; c++) n += p->aIdx[c].state==1;
  return n;
}
