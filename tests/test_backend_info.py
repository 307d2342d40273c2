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
import sqlite3
import sys

EXT = os.environ.get("GPUDS_EXT", "")
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (what, detail))


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    c = sqlite3.connect(":memory:")
    c.enable_load_extension(True)
    c.load_extension(os.path.abspath(EXT))
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
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
