// cols.cuh -- the CUDA column set's test hooks (kernels/cols/hooks.cuh).
//
// The SQLite side only sees gpudsCudaColsOps (gpuds_backend.h).  Tests
// (tests/gpu/test_cols.cu) also steer the set through these, while no
// other call runs on it.
#pragma once

#include <cstdint>
#include "gpuds_backend.h"

// Simulate a device holding only `limit` bytes for this set's allocations
// (0: no limit).
extern "C" void gpudsCudaColsSetDeviceLimit(gpuds_cols *pCols, uint64_t limit);

// The one-pass path of filters (few()) returns at most n rows, else the
// ordered path runs (0: never taken).
extern "C" void gpudsCudaColsSetFewMax(gpuds_cols *pCols, int64_t n);

// The number of columns whose equality index is built.
extern "C" int gpudsCudaColsIndexed(gpuds_cols *pCols);

// Steer xAgg's paths: groups always sorted (never dense numbers; no fused
// pass for no key), rows a
// lane steps in a chunk, groups up to which a block merges a group, most
// aggregates a launch computes (0: defaults).
extern "C" void gpudsCudaColsAggTune(gpuds_cols *pCols, int bSorted, int64_t laneRows,
                                     int64_t r2BlockMax, int yBatch);

// Time xAgg on its stream from now on; the last timed xAgg's time in ms
// (-1: none timed yet).
extern "C" double gpudsCudaColsAggTime(gpuds_cols *pCols);

// The contexts the set has made (as many as its calls ran at once).
extern "C" int gpudsCudaColsContexts(gpuds_cols *pCols);

// While bOn, every device allocation the calling thread makes fails as one
// the full GPU refuses (any store or set).
extern "C" void gpudsCudaColsFailThread(int bOn);
