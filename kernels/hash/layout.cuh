// kernels/hash/layout.cuh -- device layout: buckets of four (key, value)
// slots, the table, the counters and side slots (Meta).
//
// Part of the GPU hash store's one translation unit: included by
// kernels/hash.cu only (the design is described at its top).
#pragma once

#include <cooperative_groups.h>
#include <cstddef>
#include <cstdint>
#include "hash.cuh"

namespace {

namespace cg = cooperative_groups;
using namespace gpuds_hash;
typedef unsigned long long ull;


constexpr int TS = kSlotsPerBucket;     // tile size = slots per bucket
constexpr ull NONE = ~0ull;
constexpr size_t kMaxBatch = 0x7fffffffu;   // op indices are 32-bit

struct Slot {
  ull key;
  ull val;
};
struct alignas(64) Bucket {
  Slot s[TS];
};
static_assert(sizeof(Bucket)==64, "a bucket is 64 bytes");

struct Table {
  Bucket *b;
  ull nb;          // number of buckets (any value >= 1)
};

// Counters and side slots, on the device (kernels update them) and mirrored
// on the host after every call.
struct Meta {
  ull count;            // keys held, side slots included
  ull used;             // table slots that are not EMPTY (keys + tombstones)
  ull sidePresent[2];   // side slot 0 holds user key kEmptyKey, 1 kTombKey
  ull sideVal[2];
  ull err;              // nonzero: a kernel could not place a key (a bug)
};

enum { M_LOOKUP = 0, M_MIXED = 1 };

using Tile = cg::thread_block_tile<TS, cg::thread_block>;

}  // namespace
