#!/usr/bin/env bash
# Quick start 1: install what the build needs, build the extension alone,
# run sql/demo.sql in the sqlite3 shell.  Without an NVIDIA driver the GPU
# could not be used anyway, so the build is host-only (GPUDS_CUDA=OFF: no
# CUDA compile, gpuds runs on its host backend) and says so; with one, the
# kernels are built for this machine's GPU only (GPUDS_CUDA_ARCH=native).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh demo
if [ -z "${GPUDS_CUDA:-}" ]; then
  if [ -e /proc/driver/nvidia/version ] || nvidia-smi -L >/dev/null 2>&1; then
    export GPUDS_CUDA=ON GPUDS_CUDA_ARCH=${GPUDS_CUDA_ARCH:-native}
  else
    echo "demo: no NVIDIA driver on this machine: building host-only (GPUDS_CUDA=OFF);" \
         "gpuds runs on its host backend"
    export GPUDS_CUDA=OFF
  fi
fi
scripts/build.sh gpuds
BUILD_DIR=${BUILD_DIR:-build}
if [ "$BUILD_DIR" = build ]; then
  sqlite3 :memory: < sql/demo.sql
else
  sed "s|^\.load \./build/gpuds|.load $BUILD_DIR/gpuds|" sql/demo.sql | sqlite3 :memory:
fi
