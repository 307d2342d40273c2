/* gpuds_sort.h -- the one sort of 64-bit keys (common/sort.c): for ext/
** and the host stores. */
#ifndef GPUDS_SORT_H
#define GPUDS_SORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sort aKey[0..n-1] ascending (signed, or unsigned for gpudsSortU64),
** stably; aVal (NULL, or n values) moves with its key.  GPUDS_OK, or
** GPUDS_NOMEM with the arrays unchanged. */
int gpudsSortKeys(int64_t *aKey, uint64_t *aVal, size_t n);
int gpudsSortU64(uint64_t *aKey, uint64_t *aVal, size_t n);

#ifdef __cplusplus
}
#endif
#endif
