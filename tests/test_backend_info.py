#!/usr/bin/python3
"""gpuds_info() says which backend serves and, where it is the host one,
why no GPU is used; tables work either way.

GPUDS_EXPECT_FALLBACK=1 (the GPU machine's check of a build for another GPU
generation, scripts/device-run.sh arch) requires the host backend with the
reason that the kernels cannot run on the device, and that the build has no
code for it.

The reason names the real cause where this test can tell it: a host-only
build says so; a CUDA build on a machine without the NVIDIA driver's
libcuda.so.1 says there is no driver (not that the driver is too old, which
is what the CUDA runtime reports then); with a driver but no /dev/nvidia0,
that there is no GPU or no usable device.  Where a GPU serves, there is no
reason to check.
The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import ctypes
import json
import os
import sys

from gpuds_testlib import EXT, Tally, connect

T = Tally()
check = T.check


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    c = connect(":memory:")
    info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
    print("backend %s, device %r, why %r" % (info["backend"], info["device"], info.get("why_no_gpu")))
    if info["backend"] == "host":
        check(info["device"] == "none" and info.get("why_no_gpu"), "host backend says why", info)
    else:
        check(info["device"] != "none" and "why_no_gpu" not in info, "cuda backend names its device", info)
    if os.environ.get("GPUDS_EXPECT_FALLBACK") == "1":
        check(info["backend"] == "host" and "cannot run" in info.get("why_no_gpu", "")
              and "no code for it" in info.get("why_no_gpu", ""),
              "a binary without code for this GPU falls back to the host backend", info)
    why = info.get("why_no_gpu")
    if why and why != "built without CUDA":
        try:
            ctypes.CDLL("libcuda.so.1")
            driver = True
        except OSError:
            driver = False
        if not driver:
            check(why.startswith("no NVIDIA driver") and "libcuda.so.1" in why
                  and "insufficient" not in why, "no driver: why_no_gpu says so", why)
        elif not os.path.exists("/dev/nvidia0"):
            check(why.startswith("no NVIDIA GPU") or why.startswith("no usable CUDA device")
                  or why.startswith("NVIDIA driver too old"), "a driver, no device: why_no_gpu says which", why)
        else:
            print("note: a driver and /dev/nvidia0, yet the host backend: %s" % why)
    for mod in ("gfsl", "gpuhash"):
        c.execute("CREATE VIRTUAL TABLE t_%s USING %s(k INTEGER PRIMARY KEY, v)" % (mod, mod))
        c.executemany("INSERT INTO t_%s VALUES(?, ?)" % mod, [(i, i * i) for i in range(1000)])
        got = c.execute("SELECT count(*), sum(v) FROM t_%s WHERE k IN (3, 4, 999, 5000)" % mod).fetchall()
        check(got == [(3, 9 + 16 + 998001)], "%s works on the %s backend" % (mod, info["backend"]), got)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
