// check.h -- shared by the GPU tests (tests/gpu/test_*.cu): the failure
// count, the "small" mode flag and CHECK, which prints a failure with its
// place and stops the test after 20.  CHECK may be used from several
// threads at once (the count is an atomic, a failure prints whole).
#ifndef GPUDS_TEST_CHECK_H
#define GPUDS_TEST_CHECK_H

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include "gpuds_backend.h"

static std::atomic<int> gFail{0};
static std::mutex gFailPrint;
static bool gSmall = false;

#define CHECK(cond, ...) do{                                                  \
    if( !(cond) ){                                                            \
      std::lock_guard<std::mutex> lk_(gFailPrint);                            \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                    \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
      if( ++gFail>=20 ){ fprintf(stderr, "too many failures\n"); exit(1); }   \
    }                                                                         \
  }while(0)

// The start of a GPU test: "small" as the first argument sets gSmall; the
// device's name and free memory, or false when there is none usable (the
// test then prints SKIPPED and exits 77).
static bool gpuTestStart(int argc, char **argv, char *zDev, size_t nDev,
                         uint64_t *pnFree){
  uint64_t nTotal = 0;
  if( argc>1 && strcmp(argv[1], "small")==0 ) gSmall = true;
  if( !gpudsCudaDevice(zDev, nDev, pnFree, &nTotal) ){
    printf("SKIPPED: no usable CUDA device (%s)\n", zDev);
    return false;
  }
  return true;
}

#endif
