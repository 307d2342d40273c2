/*
** test_filter.c -- the key filter (ext/filter.c): no key that was added is
** ever answered "certainly absent", the false "maybe" rate stays near what
** its sizing promises, and "full" is reported once more keys were added
** than it was sized for, whether keys come by Fill, one by one or as a
** selection of a batch (gpudsFilterAddIf).  Sizes that give block counts
** that are not powers of two, and the sizing a load uses (a quarter to
** spare).
*/
#include "gpuds_int.h"
#include "gpuds_mix.h"
#include <stdio.h>
#include <stdlib.h>

const sqlite3_api_routines *sqlite3_api = 0;   /* filter.c calls no SQLite routine */

static int nFail = 0;
#define CHECK(c, ...) do{ if( !(c) ){ nFail++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
                          printf(__VA_ARGS__); printf("\n"); } }while(0)

static uint64_t gSeed = 0x9e3779b97f4a7c15ULL;
static int64_t rnd(void){ gSeed = gpudsMix64(gSeed + 0x9e3779b97f4a7c15ULL); return (int64_t)gSeed; }

/* n distinct-ish random keys added (half by Fill, half by Add), then
** checked; absent keys are the odd ones (added keys are made even). */
static void testSize(int64_t n, int64_t nCap){
  GpudsFilter f;
  int64_t i, nFalse = 0, nAbsent = n>20000 ? n : 20000;
  int64_t *a = malloc((size_t)(n ? n : 1)*8);
  int bFull = 0;
  memset(&f, 0, sizeof(f));
  for(i=0; i<n; i++) a[i] = rnd() & ~(int64_t)1;
  CHECK(gpudsFilterAlloc(&f, nCap)==SQLITE_OK, "alloc %lld", (long long)nCap);
  CHECK(f.nCap>=nCap, "sized for %lld, asked %lld", (long long)f.nCap, (long long)nCap);
  gpudsFilterFill(&f, a, n/2);
  {
    /* the second half: two thirds through gpudsFilterAddIf (a batch's
    ** upserts), the rest one by one */
    int64_t m = n - n/2;
    uint64_t *aSel = malloc((size_t)(m ? m : 1)*8);
    for(i=0; i<m; i++) aSel[i] = (i%3!=0) ? (uint64_t)i+1 : 0;
    bFull |= gpudsFilterAddIf(&f, a+n/2, aSel, m);
    for(i=0; i<m; i++) if( !aSel[i] ) bFull |= gpudsFilterAdd(&f, a[n/2+i]);
    free(aSel);
  }
  CHECK(f.nAdded==n, "n=%lld: %lld keys counted added", (long long)n, (long long)f.nAdded);
  CHECK(bFull==(n>f.nCap), "full %d after %lld keys, cap %lld", bFull, (long long)n, (long long)f.nCap);
  for(i=0; i<n; i++){
    if( !gpudsFilterMaybe(&f, a[i]) ){
      CHECK(0, "n=%lld: added key %lld answered absent", (long long)n, (long long)a[i]);
      break;
    }
  }
  for(i=0; i<nAbsent; i++) nFalse += gpudsFilterMaybe(&f, rnd() | 1);
  /* 16 bits a key at capacity: ~0.3%; at 12.8 (cap = 1.25 n): ~0.8% */
  if( n>=1000 && n<=f.nCap ){
    double r = (double)nFalse/(double)nAbsent;
    CHECK(r < 0.02, "n=%lld cap=%lld blocks=%llu: false maybe rate %.4f", (long long)n,
          (long long)f.nCap, (unsigned long long)f.nBlock, r);
    printf("n=%lld cap=%lld blocks=%llu bytes/key=%.2f false-maybe %.4f\n", (long long)n,
           (long long)f.nCap, (unsigned long long)f.nBlock, (double)f.nBlock*64/(double)n, r);
  }
  gpudsFilterFree(&f);
  CHECK(gpudsFilterMaybe(&f, 12345)==1, "a freed filter answers maybe");
  free(a);
}

int main(void){
  static const int64_t aN[] = {0, 1, 1000, 4097, 100000, 777777, 3000001};
  size_t i;
  for(i=0; i<sizeof(aN)/sizeof(aN[0]); i++){
    int64_t n = aN[i];
    testSize(n, n + n/4);          /* a load's sizing */
    testSize(n, n*2);              /* a rebuild's */
    if( n>=4 ) testSize(n, n/2);   /* overfull: "full" must be said */
  }
  printf("%s\n", nFail ? "FAILED" : "ok");
  return nFail ? 1 : 0;
}
