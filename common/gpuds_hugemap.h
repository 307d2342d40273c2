/*
** gpuds_hugemap.h -- aligned mappings that may be huge pages (hugemap.c),
** shared by the row arenas (ext/arena.c) and the B+tree's leaf slabs
** (backend/host_ordered.c).
*/
#ifndef GPUDS_HUGEMAP_H
#define GPUDS_HUGEMAP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A fresh anonymous mapping of n bytes (a power of two, a multiple of the
** page size) aligned to n, or NULL if the system has none; with bHuge, and
** GPUDS_HUGE_PAGES not 0, advised as transparent huge pages before anything
** touches it.  Given back with munmap(p, n). */
void *gpudsMapAligned(size_t n, int bHuge);

#ifdef __cplusplus
}
#endif

#endif /* GPUDS_HUGEMAP_H */
