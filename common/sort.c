/*
** sort.c -- the one sort of 64-bit keys, for ext/ and the host stores: an
** LSD radix sort, one byte a pass, skipping the byte positions where all
** keys agree (dense or narrow key sets take fewer than 8 passes).  Signed
** keys are sorted with their sign bit flipped (so that unsigned byte order
** is signed key order).  Stable, O(n) per pass, one scratch copy of the
** arrays.  No SQLite dependency.
*/
#include "gpuds_rc.h"
#include "gpuds_sort.h"
#include <stdlib.h>
#include <string.h>

#define SORT_SIGN (1ULL<<63)

/* Sort aKey[0..n-1] ascending by the unsigned order of aKey[i] ^ flip;
** aVal (NULL, or n values) moves with its key, equal keys keeping their
** order.  GPUDS_OK, or GPUDS_NOMEM with the arrays unchanged. */
static int radixSort(uint64_t *aKey, uint64_t *aVal, size_t n, uint64_t flip){
  uint64_t diff = 0, first;
  uint64_t *aK = aKey, *aKeyTmp;         /* aK/aV: where the keys are now */
  uint64_t *aV = aVal, *aValTmp = 0;
  size_t i;
  int b;
  if( n<2 ) return GPUDS_OK;
  first = aKey[0] ^ flip;
  for(i=1; i<n; i++) diff |= (aKey[i] ^ flip) ^ first;
  if( diff==0 ) return GPUDS_OK;
  aKeyTmp = malloc(n*sizeof(uint64_t));
  if( aVal ) aValTmp = malloc(n*sizeof(uint64_t));
  if( aKeyTmp==0 || (aVal && aValTmp==0) ){
    free(aKeyTmp); free(aValTmp);
    return GPUDS_NOMEM;
  }
  for(b=0; b<64; b+=8){
    size_t aCnt[256], j;
    if( ((diff>>b) & 0xff)==0 ) continue;
    memset(aCnt, 0, sizeof(aCnt));
    for(i=0; i<n; i++) aCnt[((aK[i] ^ flip)>>b) & 0xff]++;
    for(i=0, j=0; i<256; i++){ size_t c = aCnt[i]; aCnt[i] = j; j += c; }
    for(i=0; i<n; i++){
      size_t d = aCnt[((aK[i] ^ flip)>>b) & 0xff]++;
      aKeyTmp[d] = aK[i];
      if( aV ) aValTmp[d] = aV[i];
    }
    { uint64_t *t = aK; aK = aKeyTmp; aKeyTmp = t; }      /* ping-pong */
    { uint64_t *t = aV; aV = aValTmp; aValTmp = t; }
  }
  if( aK!=aKey ){                        /* an odd number of passes */
    memcpy(aKey, aK, n*sizeof(uint64_t));
    if( aVal ) memcpy(aVal, aV, n*sizeof(uint64_t));
  }
  free(aK==aKey ? aKeyTmp : aK);
  free(aV==aVal ? aValTmp : aV);
  return GPUDS_OK;
}

/* Sort signed keys aKey[0..n-1] ascending (see radixSort). */
int gpudsSortKeys(int64_t *aKey, uint64_t *aVal, size_t n){
  return radixSort((uint64_t*)aKey, aVal, n, SORT_SIGN);
}

/* Sort unsigned keys aKey[0..n-1] ascending (see radixSort). */
int gpudsSortU64(uint64_t *aKey, uint64_t *aVal, size_t n){
  return radixSort(aKey, aVal, n, 0);
}
