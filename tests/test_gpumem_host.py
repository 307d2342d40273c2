#!/usr/bin/python3
"""GPUDS_GPU_MEMORY and the move of a store to the host, where no GPU is
needed (test_gpumem.py is the same on the GPU, under a real cap).

1. The setting: a whole number of bytes, optionally followed by K, M or G,
   loads and is what gpuds_info()'s gpu_memory.cap says; anything else
   fails the load with a message naming GPUDS_GPU_MEMORY and what it takes,
   and the cap in force stays as it was.
2. A store that runs out of memory moves to the host, and the statement
   goes on there: the store hook (gpuds_test_store_nomem, ext/store.c)
   fails the N-th call to a table's main store as a full GPU fails it, for
   N over every call of the workload of gpumem_lib.py (every one of the
   first 40, then a stride), with GPUDS_MIRROR=1 (the host mirror takes
   over, as a GPU store's does) and with no mirror (the store is copied).
   Each run: no statement fails, every answer is an ordinary table's, the
   moved table's gpuds_info() says its store is on the host and why, and
   after reopening (the table loaded again) it is not on the host for
   that reason any more.  On a machine with a GPU the stores are the GPU's.
3. The one statement a move may fail: without a mirror, a gpuhash store
   that moves in the middle of a scan of it.

    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_gpumem_host.py [runs]
GPUDS_TEST_SCALE multiplies the runs (default about 60 per mode).
The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpuds_testlib import EXT, Tally, connect  # noqa: E402
import gpumem_lib as G  # noqa: E402

T = Tally()
check = T.check

# value: the cap in bytes it sets (None: no cap)
GOOD = {"0": 0, "1": 1, "4096": 4096, "4K": 4096, "4k": 4096, "512M": 512 << 20,
        "512m": 512 << 20, "2G": 2 << 30, "3g": 3 << 30, "": None,
        "18446744073709551615": 2**64 - 1, "17179869183G": 17179869183 << 30,
        "007M": 7 << 20}
BAD = ["abc", "-1", "1.5G", "4KB", "4KiB", "4 M", " 4M", "4M ", "4T", "M", "+4",
       "0x10", "1e9", "18446744073709551616", "17179869184G", "4MM", "123456789012345678901234"]


def load(c):
    """Load gpuds into c: None, or the error's text."""
    c.enable_load_extension(True)
    try:
        c.load_extension(EXT)
        return None
    except sqlite3.Error as e:
        return str(e)
    finally:
        c.enable_load_extension(False)


def setting():
    """GPUDS_GPU_MEMORY's values taken and refused."""
    keep = sqlite3.connect(":memory:", isolation_level=None)
    for value, cap in GOOD.items():
        os.environ["GPUDS_GPU_MEMORY"] = value
        c = sqlite3.connect(":memory:", isolation_level=None)
        err = load(c)
        if not check(err is None, "GPUDS_GPU_MEMORY=%r loads" % value, err):
            continue
        m = G.info(c)["gpu_memory"]
        check(m["cap"] == cap and m["cap_setting"] == (value if cap is not None else None),
              "GPUDS_GPU_MEMORY=%r: the cap is %r" % (value, cap), m)
        c.close()
    os.environ["GPUDS_GPU_MEMORY"] = "64M"
    check(load(keep) is None, "GPUDS_GPU_MEMORY=64M loads")
    for value in BAD:
        os.environ["GPUDS_GPU_MEMORY"] = value
        c = sqlite3.connect(":memory:", isolation_level=None)
        err = load(c)
        check(err is not None and "GPUDS_GPU_MEMORY=" in err and "is refused" in err
              and "K, M or G" in err, "GPUDS_GPU_MEMORY=%r is refused, naming it" % value, err)
        check(G.info(keep)["gpu_memory"]["cap"] == 64 << 20,
              "GPUDS_GPU_MEMORY=%r refused: the cap in force stays" % value,
              G.info(keep)["gpu_memory"])
        c.close()
    keep.close()
    del os.environ["GPUDS_GPU_MEMORY"]
    c = connect(":memory:")
    check(G.info(c)["gpu_memory"]["cap"] is None, "unset: no cap", G.info(c)["gpu_memory"])
    c.close()


def one_run(hook, path, n, mirror, rows, counting=False):
    """The workload with the n-th call to a main store failed (0: none);
    the calls counted."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    c = connect(path)
    c.execute("PRAGMA synchronous=OFF")
    hook(n)
    err = G.create(c)
    label = "mirror=%s run %d" % (mirror, n)
    if not check(err is None, "%s: the tables are created" % label, err):
        hook(-1)
        c.close()
        return 0
    w = G.Workload(c, T, seed=n, rows=rows, label=label, scan_retry=mirror == "0")
    w.run()
    calls = hook(-1)
    if counting:
        c.close()
        return calls
    pl = G.placements(c)
    moved = [t for t in G.GPUDS if pl[t]["store_why"] == G.HOOK_WHY]
    if n <= calls:
        check(len(moved) == 1, "%s: one table's store moved to the host, saying why" % label, pl)
        for t in moved:
            check(pl[t]["store"] == "host", "%s: %s's store is on the host" % (label, t), pl)
            text = c.execute("SELECT gpuds_info('%s')" % t).fetchone()[0]
            check("the GPU could not hold it: " + G.HOOK_WHY in text,
                  "%s: gpuds_info('%s') says why the store is on the host" % (label, t), text)
    c.close()
    c = connect(path)                  # loaded again: a new store, wherever it goes
    w = G.Workload(c, T, seed=n + 1, rows=rows, label=label + " reopened")
    w.queries()
    w.contents()
    pl = G.placements(c)
    check(all(pl[t]["store_why"] != G.HOOK_WHY for t in G.GPUDS),
          "%s: reloaded, no store is on the host for the failure" % label, pl)
    c.close()
    return calls


def moves(runs):
    """Every call of the workload failed in turn (a stride past the first 40)."""
    pin = connect(":memory:")          # gpuds.so stays loaded (the hook's state)
    hook = G.store_hook()
    if not check(hook is not None, "gpuds.so exports gpuds_test_store_nomem"):
        return
    rows = 2000
    os.environ["GPUDS_FLUSH_ROWS"] = "256"
    os.environ["GPUDS_COLUMN_PLANS"] = "always"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.db")
        for mirror in ("1", "0"):
            os.environ["GPUDS_MIRROR"] = mirror
            total = one_run(hook, path, 0, mirror, rows, counting=True)
            check(total > 50, "mirror=%s: the workload calls the stores (%d calls)" % (mirror, total))
            stride = max(1, (total - 40) // max(1, runs - 40))
            ns = list(range(1, min(total, 40) + 1)) + list(range(41, total + 1, stride))
            print("GPUDS_MIRROR=%s: %d calls to the main stores; failing %d of them in turn"
                  % (mirror, total, len(ns)))
            for n in ns:
                one_run(hook, path, n, mirror, rows)
    for v in ("GPUDS_FLUSH_ROWS", "GPUDS_COLUMN_PLANS", "GPUDS_MIRROR"):
        del os.environ[v]
    pin.close()


def scan_limit():
    """GPUDS_MIRROR=0: a gpuhash store that moves in the middle of a scan of
    it (past its first page of 65,536 entries) fails that statement, saying
    so; run again, it is answered from the moved store."""
    pin = connect(":memory:")
    hook = G.store_hook()
    os.environ["GPUDS_MIRROR"] = "0"
    q = "SELECT count(*), sum(v) FROM h WHERE k > 5"
    want = [(149995, sum(range(6, 150001)))]
    for n in (1, 2):
        c = connect(":memory:")
        c.execute("CREATE VIRTUAL TABLE h USING gpuhash(k INTEGER PRIMARY KEY, v)")
        c.execute(G.series(1, 150000) + "INSERT INTO h SELECT x, x FROM c")
        hook(n)
        try:
            got, err = c.execute(q).fetchall(), None
        except sqlite3.Error as e:
            got, err = None, str(e)
        hook(-1)
        if n == 1:
            check(got == want, "a move at a scan's first page: the scan goes on", (got, err))
        else:
            check(err is not None and "in the middle of a scan" in err and "run the statement again" in err,
                  "a move past a hash scan's first page fails the statement, saying so", (got, err))
        check(c.execute(q).fetchall() == want, "run again after the move (call %d)" % n)
        check(G.placements(c)["h"]["store_why"] == G.HOOK_WHY, "the store is on the host (call %d)" % n)
        c.close()
    del os.environ["GPUDS_MIRROR"]
    pin.close()


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    runs = int(runs * float(os.environ.get("GPUDS_TEST_SCALE", "1")))
    for v in ("GPUDS_GPU_MEMORY", "GPUDS_MIRROR", "GPUDS_FLUSH_ROWS"):
        os.environ.pop(v, None)
    setting()
    moves(runs)
    scan_limit()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
