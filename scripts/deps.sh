#!/usr/bin/env bash
# Install what building and testing gpuds needs, if it is missing:
# a C compiler, CMake, the SQLite headers and shell, and a Python 3 whose
# sqlite3 module can load extensions (Debian's).  The CUDA toolkit is
# optional: without nvcc the build is host-only and says so.
#   scripts/deps.sh demo   only what the demo needs (no Python)
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v c++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
[ -f /usr/include/sqlite3.h ] || need+=(libsqlite3-dev)
if [ "${1:-}" != demo ]; then
  [ -x /usr/bin/python3 ] || need+=(python3)
  # a fresh virtual environment with pip (tests/test_install.py: pip install .)
  /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "deps: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
