#!/usr/bin/python3
"""A GPU memory cap (GPUDS_GPU_MEMORY) and a full GPU: no statement fails,
every answer is an ordinary table's, and gpuds_info() says where each part
of a table lives and why.  SKIPPED without a usable GPU.

1. Uncapped, the workload of gpumem_lib.py (a gfsl, a gpuhash and an
   ordinary table with the same rows: bulk loads, updates that move keys,
   deletes, transactions and savepoints rolled back, point, IN, range,
   descending and column queries) measures what the tables take of the GPU
   (gpu_memory.held, peak); closing the connection gives all of it back.
2. A sweep of caps, from 0 to three quarters of that: after every
   statement gpuds holds no more than the cap; where the cap is below what
   the tables need, a part is on the host with the cap as its reason
   (gpuds_info() and gpuds_info('t')); with a cap of 0 every part is.
3. The table loaded again (a new connection, no cap) is on the GPU again.
4. Two threads, each with its own connection and database, under one cap:
   the account is the process's, shared.
5. A GPU that other work has filled (libcuda's cuMemAlloc leaves half of
   what the tables need free; skipped without libcuda.so.1): no cap, and
   the parts that do not fit say "the GPU is out of memory".

    GPUDS_EXT=build/gpuds.so python3 tests/test_gpumem.py [rows]
The seed of each run is printed; GPUDS_TEST_SCALE multiplies the rows
(default 200,000).  The last line is "N passed, M failed"; exit 77 =
SKIPPED.
"""
import ctypes
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpuds_testlib import EXT, Tally, connect  # noqa: E402
import gpumem_lib as G  # noqa: E402

T = Tally()
check = T.check


def fresh(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)


def set_cap(value):
    """GPUDS_GPU_MEMORY for the next load (None: unset)."""
    if value is None:
        os.environ.pop("GPUDS_GPU_MEMORY", None)
    else:
        os.environ["GPUDS_GPU_MEMORY"] = str(value)


def held_at_most(cap, tally, label):
    """An after-statement check: gpuds holds at most cap bytes of GPU memory."""
    worst = [0]

    def after(w):
        m = G.info(w.c)["gpu_memory"]
        if m["held"] > worst[0]:
            worst[0] = m["held"]
        if m["held"] > cap:
            tally.check(False, "%s: gpuds holds %d bytes, past the cap of %d" % (label, m["held"], cap))
    return after, worst


def run_workload(path, rows, seed, label, tally=T, after=None):
    """The workload on a fresh database at path; its connection, open."""
    fresh(path)
    c = connect(path)
    c.execute("PRAGMA synchronous=OFF")
    err = G.create(c)
    tally.check(err is None, "%s: the tables are created" % label, err)
    print("%s: seed %d, %d rows" % (label, seed, rows))
    G.Workload(c, tally, seed, rows, label, after=after).run()
    return c


def part_sweep(d, rows, need, peak):
    """Caps from 0 to three quarters of what the tables need."""
    caps = [0, 1 << 20, 4 << 20, need // 4, need // 2, need * 3 // 4]
    for i, cap in enumerate(caps):
        setting = "%dK" % (cap >> 10) if cap % 1024 == 0 else str(cap)
        set_cap(setting)
        label = "cap %s" % setting
        after, worst = held_at_most(cap, T, label)
        c = run_workload(os.path.join(d, "s.db"), rows, 100 + i, label, after=after)
        inf = G.info(c)
        check(inf["gpu_memory"]["cap"] == cap and inf["gpu_memory"]["held"] <= cap,
              "%s: gpu_memory reports the cap and holds at most it" % label, inf["gpu_memory"])
        pl = G.placements(c)
        reasons = [p[k] for p in pl.values() for k in ("store_why", "column_set_why") if p[k]]
        capped = [r for r in reasons if ("GPUDS_GPU_MEMORY=%s" % setting) in r and "would be exceeded" in r]
        if cap < need:
            check(len(capped) >= 1, "%s: a part is on the host, the cap its reason" % label, pl)
        if cap == 0:
            check(all(p["store"] == "host" and p["column_set"] == "host" for p in pl.values())
                  and len(capped) == 4, "cap 0: every part on the host, the cap its reason", pl)
        for t in G.GPUDS:
            text = c.execute("SELECT gpuds_info('%s')" % t).fetchone()[0]
            if pl[t]["store"] == "host":
                check("store: " in text and "on the host" in text and
                      ("the GPU could not hold it: " + pl[t]["store_why"]) in text,
                      "%s: gpuds_info('%s') says the store is on the host and why" % (label, t), text)
            check("of a cap of" in text and ("GPUDS_GPU_MEMORY=%s" % setting) in text,
                  "%s: gpuds_info('%s') gives the GPU memory held and the cap" % (label, t), text)
        print("  %s: held at most %d bytes; %s" % (label, worst[0], {
            t: (p["store"], p["column_set"]) for t, p in pl.items()}))
        c.close()
        # 3. loaded again with no cap: on the GPU again
        if cap < need and cap > 0:
            set_cap(None)
            c = connect(os.path.join(d, "s.db"))
            w = G.Workload(c, T, 200 + i, rows, label + " reopened without a cap")
            w.queries()
            w.contents()
            pl = G.placements(c)
            check(all(p["store"] == "gpu" for p in pl.values()),
                  "%s: loaded again without a cap, every store is on the GPU" % label, pl)
            c.close()


def part_threads(d, rows, need):
    """Two connections on two threads under one cap of half the need of one."""
    cap = need // 2
    set_cap(cap)
    tallies = [Tally(), Tally()]
    worsts = []

    def work(i):
        after, worst = held_at_most(cap, tallies[i], "thread %d" % i)
        worsts.append(worst)
        c = run_workload(os.path.join(d, "th%d.db" % i), rows, 300 + i, "thread %d" % i,
                         tally=tallies[i], after=after)
        c.close()
    th = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    for t in tallies:
        T.passed += t.passed
        T.failed += t.failed
    print("  two threads under a cap of %d bytes: held at most %s" % (cap, [w[0] for w in worsts]))


class Filler:
    """GPU memory taken through the driver (libcuda), as other work would."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.ptrs = []
        dev = ctypes.c_int()
        ctx = ctypes.c_void_p()
        ok = (self.cu.cuInit(0) == 0 and self.cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
              and self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
              and self.cu.cuCtxSetCurrent(ctx) == 0)
        if not ok:
            raise OSError("libcuda: no context")

    def free_bytes(self):
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        self.cu.cuMemGetInfo_v2(ctypes.byref(f), ctypes.byref(t))
        return f.value

    def fill(self, leave):
        """Allocate until about `leave` bytes are free."""
        chunk = 1 << 30
        while chunk >= (1 << 20):
            if self.free_bytes() - chunk < leave:
                chunk //= 2
                continue
            p = ctypes.c_uint64()
            if self.cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(chunk)) != 0:
                chunk //= 2
                continue
            self.ptrs.append(p)

    def release(self):
        for p in self.ptrs:
            self.cu.cuMemFree_v2(p)
        self.ptrs = []


def part_full(d, rows, need):
    """No cap; the GPU filled by other work to half of what the tables need."""
    try:
        f = Filler()
    except OSError as e:
        print("  (a full GPU: skipped: %s)" % e)
        return
    set_cap(None)
    try:
        f.fill(need // 2)
        print("  a full GPU: %d bytes left free" % f.free_bytes())
        c = run_workload(os.path.join(d, "f.db"), rows, 400, "a full GPU")
        pl = G.placements(c)
        full = [p[k] for p in pl.values() for k in ("store_why", "column_set_why")
                if p[k] and "the GPU is out of memory" in p[k]]
        check(len(full) >= 1, "a full GPU: a part is on the host, the full GPU its reason", pl)
        print("  a full GPU: %s" % {t: (p["store"], p["column_set"]) for t, p in pl.items()})
        c.close()
    finally:
        f.release()


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    for v in ("GPUDS_BACKEND", "GPUDS_GPU_MEMORY", "GPUDS_MIRROR"):
        os.environ.pop(v, None)
    os.environ["GPUDS_FLUSH_ROWS"] = "16384"
    os.environ["GPUDS_COLUMN_PLANS"] = "always"
    pin = connect(":memory:")          # gpuds.so stays loaded throughout
    inf = G.info(pin)
    if inf["backend"] != "cuda":
        print("SKIPPED: no usable GPU (%s)" % inf.get("why_no_gpu", inf["backend"]))
        return 77
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    rows = int(rows * float(os.environ.get("GPUDS_TEST_SCALE", "1")))
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        # 1. what the tables need
        c = run_workload(os.path.join(d, "u.db"), rows, 1, "no cap")
        m = G.info(c)["gpu_memory"]
        pl = G.placements(c)
        check(all(p["store"] == "gpu" and p["column_set"] == "gpu" for p in pl.values()),
              "no cap: every part on the GPU", pl)
        need, peak = m["held"], m["peak"]
        check(need > 4 << 20, "no cap: the tables take more than 4 MiB of the GPU", m)
        print("no cap: the tables hold %d bytes of GPU memory (peak %d)" % (need, peak))
        c.close()
        check(G.info(pin)["gpu_memory"]["held"] == 0,
              "the connection closed, gpuds holds no GPU memory", G.info(pin)["gpu_memory"])
        part_sweep(d, rows, need, peak)
        part_threads(d, rows, need)
        part_full(d, rows, need)
        set_cap(None)
    print("%.1f s" % (time.time() - t0))
    pin.close()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
