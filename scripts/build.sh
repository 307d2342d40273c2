#!/usr/bin/env bash
# Configure and build gpuds into ${BUILD_DIR:-build}.
#   scripts/build.sh              everything: gpuds.so, the tests, the benchmarks
#   scripts/build.sh gpuds        only the targets named (gpuds: the extension)
# CUDA kernels are built when nvcc is found (/usr/local/cuda/bin is tried
# too); GPUDS_CUDA=OFF in the environment makes a host-only build,
# GPUDS_CUDA_ARCH=native builds the kernels for this machine's GPU only
# (default: every generation), and CMAKE_ARGS adds CMake options.
# The configure lines that say what is built (CUDA found or not) are shown;
# the whole configure output is in $BUILD_DIR/configure.log.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
mkdir -p "$BUILD_DIR"
# GPUDS_CUDA and GPUDS_CUDA_ARCH are passed every time: the cache would
# otherwise keep the last run's choice (scripts/demo.sh's, in this folder)
if ! cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
      -DGPUDS_CUDA="${GPUDS_CUDA:-ON}" -DGPUDS_CUDA_ARCH="${GPUDS_CUDA_ARCH:-all}" \
      ${CMAKE_ARGS:-} > "$BUILD_DIR/configure.log" 2>&1; then
  cat "$BUILD_DIR/configure.log"
  exit 1
fi
grep -E "^-- gpuds:|CMake Warning" "$BUILD_DIR/configure.log" || true
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j"$(nproc)" "${targets[@]}"
