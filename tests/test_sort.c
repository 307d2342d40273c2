/*
** test_sort.c -- common/sort.c's radix sort (signed keys, and unsigned:
** gpudsSortU64) against qsort() on random arrays:
** keys spread over all 64 bits, over one byte, negative and positive, all
** equal, n from 0 up; the values must travel with their keys and equal keys
** keep their order (the values are the original positions).
** Usage: test_sort [seed]
*/
#include "gpuds_sort.h"
#include "gpuds_mix.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rngState;
/* splitmix64: the state steps by the golden ratio, gpudsMix64 finalizes. */
static uint64_t rnd(void){
  return gpudsMix64(rngState += 0x9e3779b97f4a7c15ULL);
}

/* Reference order: by key, then by original position (a stable sort). */
typedef struct Pair { int64_t k; uint64_t v; } Pair;
static int pairCmp(const void *a, const void *b){
  const Pair *x = (const Pair*)a, *y = (const Pair*)b;
  if( x->k!=y->k ) return x->k<y->k ? -1 : 1;
  return x->v<y->v ? -1 : x->v>y->v;
}

/* The same order with the keys taken as unsigned. */
static int pairCmpU(const void *a, const void *b){
  const Pair *x = (const Pair*)a, *y = (const Pair*)b;
  if( x->k!=y->k ) return (uint64_t)x->k<(uint64_t)y->k ? -1 : 1;
  return x->v<y->v ? -1 : x->v>y->v;
}

/* One case: n keys drawn by mode; returns the number of failures. */
static int oneCase(size_t n, int mode){
  int64_t *aK = malloc((n ? n : 1)*sizeof(int64_t));
  int64_t *aK2 = malloc((n ? n : 1)*sizeof(int64_t));
  uint64_t *aV = malloc((n ? n : 1)*sizeof(uint64_t));
  Pair *aRef = malloc((n ? n : 1)*sizeof(Pair));
  Pair *aRefU = malloc((n ? n : 1)*sizeof(Pair));
  uint64_t *aU = malloc((n ? n : 1)*sizeof(uint64_t));
  uint64_t *aVU = malloc((n ? n : 1)*sizeof(uint64_t));
  size_t i;
  int nFail = 0;
  if( !aK || !aK2 || !aV || !aRef || !aRefU || !aU || !aVU ){ fprintf(stderr, "out of memory\n"); exit(1); }
  for(i=0; i<n; i++){
    uint64_t r = rnd();
    switch( mode ){
      case 0:  aK[i] = (int64_t)r; break;                    /* all 64 bits */
      case 1:  aK[i] = (int64_t)(r & 0xff) - 128; break;     /* one byte, signed */
      case 2:  aK[i] = 42; break;                            /* all equal */
      case 3:  aK[i] = (int64_t)(r % 1000) << 40; break;     /* high bytes only */
      default: aK[i] = (r & 1) ? INT64_MIN + (int64_t)(r>>60) : INT64_MAX - (int64_t)(r>>60);
    }
    aV[i] = i;
    aK2[i] = aK[i];
    aRef[i].k = aK[i];
    aRef[i].v = i;
    aRefU[i] = aRef[i];
    aU[i] = (uint64_t)aK[i];
    aVU[i] = i;
  }
  qsort(aRef, n, sizeof(Pair), pairCmp);
  qsort(aRefU, n, sizeof(Pair), pairCmpU);
  if( gpudsSortKeys(aK, aV, n) || gpudsSortKeys(aK2, 0, n) || gpudsSortU64(aU, aVU, n) ){
    fprintf(stderr, "n=%zu mode=%d: out of memory\n", n, mode);
    nFail++;
  }
  for(i=0; i<n && nFail==0; i++){
    if( aK[i]!=aRef[i].k || aV[i]!=aRef[i].v || aK2[i]!=aRef[i].k ){
      fprintf(stderr, "n=%zu mode=%d: position %zu holds (%lld, %llu), expected (%lld, %llu)\n",
              n, mode, i, (long long)aK[i], (unsigned long long)aV[i],
              (long long)aRef[i].k, (unsigned long long)aRef[i].v);
      nFail++;
    }
  }
  for(i=0; i<n && nFail==0; i++){
    if( aU[i]!=(uint64_t)aRefU[i].k || aVU[i]!=aRefU[i].v ){
      fprintf(stderr, "n=%zu mode=%d: unsigned position %zu holds (%llu, %llu), expected (%llu, %llu)\n",
              n, mode, i, (unsigned long long)aU[i], (unsigned long long)aVU[i],
              (unsigned long long)aRefU[i].k, (unsigned long long)aRefU[i].v);
      nFail++;
    }
  }
  free(aK); free(aK2); free(aV); free(aRef); free(aRefU); free(aU); free(aVU);
  return nFail;
}

int main(int argc, char **argv){
  static const size_t aN[] = { 0, 1, 2, 3, 17, 256, 1000, 65537, 300000 };
  unsigned long long seed = argc>1 ? strtoull(argv[1], 0, 10) : (unsigned long long)time(0);
  size_t iN;
  int mode, nFail = 0;
  rngState = seed;
  printf("test_sort: seed %llu\n", seed);
  for(iN=0; iN<sizeof(aN)/sizeof(aN[0]); iN++){
    for(mode=0; mode<5; mode++) nFail += oneCase(aN[iN], mode);
  }
  printf("test_sort: %s\n", nFail ? "FAILED" : "ok");
  return nFail ? 1 : 0;
}
