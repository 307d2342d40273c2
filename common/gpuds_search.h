/*
** gpuds_search.h -- binary searches over ascending arrays of 64-bit words,
** for the host and the device: the one copy of a loop that version
** lists, column sets, skip lists and ambiguity lists all need.
*/
#ifndef GPUDS_SEARCH_H
#define GPUDS_SEARCH_H

#include <stdint.h>

#ifndef GPUDS_HD
# ifdef __CUDACC__
#  define GPUDS_HD __host__ __device__ __forceinline__
# else
#  define GPUDS_HD static inline
# endif
#endif

/* gpudsLowerBound (int64_t keys) and gpudsLowerBoundU (uint64_t words):
** the first index of ascending a[0..n) whose entry is >= k (n if none).
** One body for both types. */
#define GPUDS_LOWER_BOUND(zName, T)                                  \
GPUDS_HD int64_t zName(const T *a, int64_t n, T k){                  \
  int64_t lo = 0, hi = n;                                            \
  while( lo<hi ){                                                    \
    int64_t mid = lo + (hi-lo)/2;                                    \
    if( a[mid]<k ) lo = mid+1; else hi = mid;                        \
  }                                                                  \
  return lo;                                                         \
}
GPUDS_LOWER_BOUND(gpudsLowerBound, int64_t)
GPUDS_LOWER_BOUND(gpudsLowerBoundU, uint64_t)
#undef GPUDS_LOWER_BOUND

/* Is k among ascending a[0..n)? */
GPUDS_HD int gpudsHasKey(const int64_t *a, int64_t n, int64_t k){
  int64_t i = gpudsLowerBound(a, n, k);
  return i<n && a[i]==k;
}

/* Is v among ascending a[0..n)? */
GPUDS_HD int gpudsHasWord(const uint64_t *a, int64_t n, uint64_t v){
  int64_t i = gpudsLowerBoundU(a, n, v);
  return i<n && a[i]==v;
}

#endif /* GPUDS_SEARCH_H */
