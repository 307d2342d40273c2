// device.cu -- find the CUDA device the kernels run on, once per process.
#include "gpuds_backend.h"
#include <cuda_runtime.h>
#include <mutex>
#include <cstdio>
#include <cstring>

namespace {
std::once_flag g_once;
int g_ok = 0;             // 1 when device 0 is usable
char g_name[256];         // device name, or why none is usable

// Probe device 0: a driver, a device of compute capability >= 7.0, and a
// context that can be created.
void probe(){
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if( e!=cudaSuccess || n==0 ){
    snprintf(g_name, sizeof(g_name), "no CUDA device (%s)",
             e!=cudaSuccess ? cudaGetErrorString(e) : "count is 0");
    cudaGetLastError();
    return;
  }
  cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, 0);
  if( e!=cudaSuccess ){
    snprintf(g_name, sizeof(g_name), "no CUDA device (%s)", cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  if( prop.major<7 ){
    snprintf(g_name, sizeof(g_name), "%.200s: compute capability %d.%d < 7.0",
             prop.name, prop.major, prop.minor);
    return;
  }
  e = cudaFree(0);
  if( e!=cudaSuccess ){
    snprintf(g_name, sizeof(g_name), "%.120s: %.120s", prop.name, cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  snprintf(g_name, sizeof(g_name), "%s", prop.name);
  g_ok = 1;
}
}  // namespace

extern "C" int gpudsCudaDevice(char *zName, size_t nName, uint64_t *pnFree,
                               uint64_t *pnTotal){
  std::call_once(g_once, probe);
  if( nName ) snprintf(zName, nName, "%s", g_name);
  size_t f = 0, t = 0;
  if( g_ok && (pnFree || pnTotal) ){
    if( cudaMemGetInfo(&f, &t)!=cudaSuccess ){ cudaGetLastError(); f = t = 0; }
  }
  if( pnFree ) *pnFree = f;
  if( pnTotal ) *pnTotal = t;
  return g_ok;
}
