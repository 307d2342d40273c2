#!/usr/bin/env bash
# Quick start 2: install what building and testing needs, build everything
# (the extension, every test and benchmark; the CUDA kernels for every GPU
# generation where nvcc is found), run every test with ctest.  GPU tests
# report SKIPPED where no GPU is usable (never passed).  Extra arguments go
# to ctest (e.g. -L sql, -R test_columns).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure "$@"
