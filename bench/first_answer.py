#!/usr/bin/env python3
"""Time to the first answer after reopening a database, in both journal
modes: what a process that opens a database and asks one key waits.

    python3 bench/first_answer.py EXT [--rows N] [--runs R] [--dir DIR]

For each journal mode (the rollback journal, SQLite's default, and WAL) a
database DIR/first_<mode>_<N>.db holds a gfsl table g, a gpuhash table h
and an ordinary table r of N rows (k, v) written in one transaction (kept
and reused by later runs).  Then, R times per table, a fresh process
opens it, loads EXT, calls gpuds_info() once (so that a GPU's start is not
counted), and times the prepare and the first step of
SELECT v FROM <table> WHERE k = ?; it also says how the table's load
stood then (gpuds_info()'s "load": "background" while a build runs and
the key was read from the runs on disk).  Prints the median and the range
in ms.  GPUDS_LAZY_LOAD and the other settings are taken from the
environment as they are.
"""
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r'''
import json, sqlite3, sys, time
db, ext, tab, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = sqlite3.connect(db, isolation_level=None)
c.enable_load_extension(True)
c.load_extension(ext)
c.execute("SELECT gpuds_info()").fetchone()
t0 = time.perf_counter()
row = c.execute("SELECT v FROM %s WHERE k = ?" % tab, (k,)).fetchall()
dt = time.perf_counter() - t0
load = [t["load"] for t in json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])["tables"]]
print(json.dumps([dt, row, load]))
'''


def build(path, ext, journal, n):
    import sqlite3
    for s in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + s):
            os.remove(path + s)
    c = sqlite3.connect(path, isolation_level=None)
    c.enable_load_extension(True)
    c.load_extension(ext)
    c.execute("PRAGMA journal_mode=%s" % journal)
    c.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, v)")
    c.execute("CREATE VIRTUAL TABLE h USING gpuhash(k INTEGER PRIMARY KEY, v)")
    c.execute("CREATE TABLE r(k INTEGER PRIMARY KEY, v)")
    for t in ("g", "h", "r"):
        c.execute("INSERT INTO %s WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s"
                  " WHERE i<?) SELECT i, i*3 FROM s" % t, (n,))
    c.close()


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__)
        return 2
    ext = os.path.abspath(argv[1])
    opts = {"--rows": "1000000", "--runs": "7", "--dir": "."}
    i = 2
    while i < len(argv):
        if argv[i] not in opts or i + 1 >= len(argv):
            print(__doc__)
            return 2
        opts[argv[i]] = argv[i + 1]
        i += 2
    n, runs = int(opts["--rows"]), int(opts["--runs"])
    key = (n * 7) // 9 + 1
    for journal in ("delete", "wal"):
        path = os.path.join(opts["--dir"], "first_%s_%d.db" % (journal, n))
        if not os.path.exists(path):
            t0 = time.time()
            build(path, ext, journal, n)
            print("wrote %s (%.1f s)" % (path, time.time() - t0), flush=True)
        for tab in ("g", "h", "r"):
            times, loads = [], set()
            for _ in range(runs):
                out = subprocess.run([sys.executable, "-c", CHILD, path, ext, tab, str(key)],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    print(out.stderr)
                    return 1
                dt, row, load = json.loads(out.stdout)
                if row != [[key * 3]]:
                    print("wrong answer %r for k=%d in %s" % (row, key, tab))
                    return 1
                times.append(dt * 1e3)
                loads.update(load)
            print("%-8s %s (%s) %d rows: first SELECT v WHERE k=? median %.2f ms "
                  "(%.2f to %.2f, %d runs), load: %s"
                  % ("rollback" if journal == "delete" else "wal", tab,
                     {"g": "gfsl", "h": "gpuhash", "r": "ordinary"}[tab], n,
                     statistics.median(times), min(times), max(times), runs,
                     ",".join(sorted(loads)) or "-"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
