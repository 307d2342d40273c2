#!/usr/bin/env bash
# Quick start 2: install dependencies, build, run every test with ctest.
# GPU tests report SKIPPED where no GPU is usable (never passed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure "$@"
