/*
** gpuds_mix.h -- the one 64-bit mixer the host side hashes keys with.
*/
#ifndef GPUDS_MIX_H
#define GPUDS_MIX_H
#include <stdint.h>

/* The splitmix64 finalizer: a bijection on 64-bit words whose every output
** bit depends on every input bit, so low or high bits of it index tables. */
static inline uint64_t gpudsMix64(uint64_t x){
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
#endif /* GPUDS_MIX_H */
