// device.cu -- find the CUDA device the kernels run on, once per process;
// the process's device memory (gpudsGpuMemory); and the process-wide
// device-allocation test hook.
#include "gpuds_backend.h"
#include <cuda_runtime.h>
#include "common/devmem.cuh"
#include <mutex>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

#ifndef GPUDS_CUDA_ARCHS
# define GPUDS_CUDA_ARCHS "?"
#endif

namespace {
// Writes a known word: the probe that this binary's kernels run here.
// @param p  out: 0x9d5
__global__ void kProbe(unsigned *p){ *p = 0x9d5u; }

// True if a kernel of this binary runs on the current device; otherwise
// zWhy says why (no kernel image for this architecture, a driver too old
// for this build, a launch refused, ...).
bool kernelsRun(char *zWhy, size_t nWhy){
  unsigned *d = nullptr, h = 0;
  cudaError_t e = cudaMalloc(&d, sizeof(unsigned));
  if( e==cudaSuccess ){
    kProbe<<<1, 1>>>(d);
    e = cudaGetLastError();
    if( e==cudaSuccess ) e = cudaMemcpy(&h, d, sizeof(unsigned), cudaMemcpyDeviceToHost);
  }
  if( d ) cudaFree(d);
  if( e==cudaErrorNoKernelImageForDevice || e==cudaErrorInvalidPtx
   || e==cudaErrorUnsupportedPtxVersion || e==cudaErrorInvalidDeviceFunction ){
    snprintf(zWhy, nWhy, "this build has no code for it (built for %s): %s",
             GPUDS_CUDA_ARCHS, cudaGetErrorString(e));
    cudaGetLastError();
    return false;
  }
  if( e!=cudaSuccess ){
    snprintf(zWhy, nWhy, "%s", cudaGetErrorString(e));
    cudaGetLastError();
    return false;
  }
  if( h!=0x9d5u ){
    snprintf(zWhy, nWhy, "a probe kernel ran but wrote the wrong result");
    return false;
  }
  return true;
}

std::once_flag g_once;
int g_ok = 0;             // 1 when device 0 is usable
pid_t g_pid = 0;          // the process that probed it
char g_name[256];         // device name, or why none is usable

// A CUDA version number (1000*major + 10*minor) as "major.minor".
void cudaVersion(int v, char *z, size_t n){
  snprintf(z, n, "%d.%d", v/1000, (v%1000)/10);
}

// Why no device is usable where cudaGetDeviceCount() gave e (cudaSuccess:
// a count of 0), in z[0..n): the CUDA runtime says "driver version is
// insufficient" where there is no driver at all, so look for one: no
// libcuda.so.1, a driver older than this build's runtime, a driver that
// finds no device, or else what CUDA says.
void noDevice(cudaError_t e, char *z, size_t n){
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  int drv = 0, rt = 0;
  char zDrv[16], zRt[16];
  if( h==nullptr ){
    const char *zDl = dlerror();
    snprintf(z, n, "no NVIDIA driver: libcuda.so.1 not found (%.150s)",
             zDl ? zDl : "dlopen failed");
    return;
  }
  // (left loaded: the runtime holds it too where it found it)
  typedef int (*DriverVersionFn)(int*);
  DriverVersionFn xVersion = (DriverVersionFn)dlsym(h, "cuDriverGetVersion");
  if( xVersion==nullptr || xVersion(&drv)!=0 ) drv = 0;
  if( cudaRuntimeGetVersion(&rt)!=cudaSuccess ){ cudaGetLastError(); rt = 0; }
  cudaVersion(drv, zDrv, sizeof(zDrv));
  cudaVersion(rt, zRt, sizeof(zRt));
  if( e==cudaErrorInsufficientDriver && drv>0 && drv<rt ){
    snprintf(z, n, "NVIDIA driver too old: it supports CUDA %s, this build needs %s",
             zDrv, zRt);
  }else if( e==cudaSuccess || e==cudaErrorNoDevice ){
    snprintf(z, n, "no NVIDIA GPU: the driver (CUDA %s) finds no device%s", zDrv,
             access("/dev/nvidia0", F_OK)==0 ? "" : " (no /dev/nvidia0)");
  }else{
    snprintf(z, n, "no usable CUDA device: %.120s (driver CUDA %s, this build %s)",
             cudaGetErrorString(e), drv ? zDrv : "unknown", zRt);
  }
}

// Probe device 0: a driver, a device of compute capability >= 7.0, a
// context that can be created, and a kernel of this binary that runs (the
// binary may hold no code for this device's architecture).
void probe(){
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if( e!=cudaSuccess || n==0 ){
    cudaGetLastError();
    noDevice(e, g_name, sizeof(g_name));
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
  char zWhy[160];
  if( !kernelsRun(zWhy, sizeof(zWhy)) ){
    snprintf(g_name, sizeof(g_name), "%.80s (sm_%d%d): gpuds kernels cannot run on it: %.140s",
             prop.name, prop.major, prop.minor, zWhy);
    return;
  }
  snprintf(g_name, sizeof(g_name), "%s", prop.name);
  g_pid = getpid();
  g_ok = 1;
}
}  // namespace

extern "C" int gpudsCudaDevice(char *zName, size_t nName, uint64_t *pnFree,
                               uint64_t *pnTotal){
  std::call_once(g_once, probe);
  if( g_ok && getpid()!=g_pid ){
    // CUDA does not survive fork(): a child of a process that started it
    // gets errors from every call, so it uses the host backend.
    if( nName ) snprintf(zName, nName, "CUDA cannot be used in a process forked "
                         "from one that had started it (%s)", g_name);
    if( pnFree ) *pnFree = 0;
    if( pnTotal ) *pnTotal = 0;
    return 0;
  }
  if( nName ) snprintf(zName, nName, "%s", g_name);
  size_t f = 0, t = 0;
  if( g_ok && (pnFree || pnTotal) ){
    if( cudaMemGetInfo(&f, &t)!=cudaSuccess ){ cudaGetLastError(); f = t = 0; }
  }
  if( pnFree ) *pnFree = f;
  if( pnTotal ) *pnTotal = t;
  return g_ok;
}

extern "C" void gpudsGpuMemory(gpuds_gpumem *p){
  gpuds_mem::Account &a = gpuds_mem::account();
  p->nHeld = a.held.load();
  p->nPeak = a.peak.load();
  p->nRefusedCap = a.refusedCap.load();
  p->nRefusedGpu = a.refusedGpu.load();
}

// Test hook (tests/c/faults.c, device mode), exported so a test can find it
// with dlsym(): counting starts again from 0 and the n-th allocation of
// device or pinned memory by any store from now fails, once (n = 0: none,
// count only).  Returns how many allocations were counted since the last
// call.  gpuds itself never calls it.
extern "C" __attribute__((visibility("default")))
uint64_t gpuds_test_device_faults(uint64_t n){
  gpuds_mem::FaultPoint &f = gpuds_mem::faultPoint();
  uint64_t k = f.n.exchange(0);
  f.failAt.store(n);
  return k;
}
