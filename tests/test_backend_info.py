#!/usr/bin/python3
"""gpuds_info() says which backend serves and, where it is the host one,
why no GPU is used; tables work either way.

GPUDS_EXPECT_FALLBACK=1 (the GPU machine's check of a build for another GPU
generation, scripts/device-run.sh arch) requires the host backend with the
reason that the kernels cannot run on the device.
The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
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
        check(info["backend"] == "host" and "cannot run" in info.get("why_no_gpu", ""),
              "a binary without code for this GPU falls back to the host backend", info)
    for mod in ("gfsl", "gpuhash"):
        c.execute("CREATE VIRTUAL TABLE t_%s USING %s(k INTEGER PRIMARY KEY, v)" % (mod, mod))
        c.executemany("INSERT INTO t_%s VALUES(?, ?)" % mod, [(i, i * i) for i in range(1000)])
        got = c.execute("SELECT count(*), sum(v) FROM t_%s WHERE k IN (3, 4, 999, 5000)" % mod).fetchall()
        check(got == [(3, 9 + 16 + 998001)], "%s works on the %s backend" % (mod, info["backend"]), got)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
