/* sort.h -- the one key sort of ext/ (sort.c). */
#ifndef GPUDS_SORT_H
#define GPUDS_SORT_H

#include <stddef.h>
#include <stdint.h>

int gpudsSortKeys(int64_t *aKey, uint64_t *aVal, size_t n);

#endif
