// check.h -- shared by the GPU tests (tests/gpu/test_*.cu): the failure
// count, the "small" mode flag and CHECK, which prints a failure with its
// place and stops the test after 20.
#ifndef GPUDS_TEST_CHECK_H
#define GPUDS_TEST_CHECK_H

#include <cstdio>
#include <cstdlib>

static int gFail = 0;
static bool gSmall = false;

#define CHECK(cond, ...) do{                                                  \
    if( !(cond) ){                                                            \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                    \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
      if( ++gFail>=20 ){ fprintf(stderr, "too many failures\n"); exit(1); }   \
    }                                                                         \
  }while(0)

#endif
