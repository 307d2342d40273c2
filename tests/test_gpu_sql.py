#!/usr/bin/python3
"""The differential test of test_differential.py on the CUDA backend.

Requires gpuds_info() to report backend "cuda" (GPUDS_BACKEND is removed from
the environment so the default choice is tested); otherwise prints
"SKIPPED: no usable CUDA device" and exits 77, so a machine without a GPU
reports this test as skipped, never as passed.  Every stream's child process
checks the backend again before it runs.

    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_gpu_sql.py [options]

Options and environment variables are those of test_differential.py
(--seed, --mode, --ops, --scale / GPUDS_TEST_SCALE, ...).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_differential  # noqa: E402


if __name__ == "__main__":
    if os.environ.get("GPUDS_BACKEND", "") not in ("", "cuda"):
        print("note: ignoring GPUDS_BACKEND=%s: this test needs the default "
              "(CUDA) backend" % os.environ["GPUDS_BACKEND"])
    os.environ.pop("GPUDS_BACKEND", None)
    sys.exit(test_differential.main(require_backend="cuda"))
