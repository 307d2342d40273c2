// distinct_keys.h -- shared by the GPU store tests (tests/gpu/test_*.cu).
//
// The backend contract of xBatch: the keys of one batch are distinct.  The
// tests generate random batches and make them keep it with keepFirst.
#ifndef GPUDS_TEST_DISTINCT_KEYS_H
#define GPUDS_TEST_DISTINCT_KEYS_H

#include <cstdint>
#include <unordered_set>
#include <vector>

// Drop every op whose key occurred earlier in the batch (keep the first), so
// the batch keeps the backend contract: distinct keys.
static inline void keepFirst(std::vector<uint8_t> &op, std::vector<int64_t> &key,
                             std::vector<uint64_t> &val){
  std::unordered_set<int64_t> seen;
  size_t j = 0;
  for( size_t i=0; i<key.size(); i++ ){
    if( !seen.insert(key[i]).second ) continue;
    op[j] = op[i]; key[j] = key[i]; val[j] = val[i]; j++;
  }
  op.resize(j); key.resize(j); val.resize(j);
}

#endif  // GPUDS_TEST_DISTINCT_KEYS_H
