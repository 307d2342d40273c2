#!/usr/bin/env python3
"""Reload rate of a gpuds table in a fresh process: open the database, load
the extension, touch the GPU once (gpuds_info(), so CUDA's one-time start is
not counted), then time the first point query, which loads the table from
its shadow tables.  Prints rows/s, and the time with CUDA's start included.

    python3 bench/reload_fresh.py DB EXT TABLE [TABLE...]

Each TABLE is measured in its own child process.  A benchmark, not a test:
the database comes from e.g. `sqlbench --only reload_kv --db DB` (tables
kv_gfsl, kv_gpuhash).
"""
import json
import sqlite3
import subprocess
import sys
import time


def measure(db, ext, table):
    t0 = time.time()
    conn = sqlite3.connect(db)
    conn.enable_load_extension(True)
    conn.load_extension(ext)
    info = json.loads(conn.execute("SELECT gpuds_info()").fetchone()[0])
    t1 = time.time()
    conn.execute("SELECT * FROM %s WHERE k = 0" % table).fetchall()
    t2 = time.time()
    n = conn.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
    print("%s: %d rows, backend %s, device %s: first query %.3f s = %.1f M rows/s;"
          " with open, load and the GPU's start %.3f s = %.1f M rows/s"
          % (table, n, info.get("backend"), info.get("device"), t2 - t1,
             n / (t2 - t1) / 1e6, t2 - t0, n / (t2 - t0) / 1e6), flush=True)


def main(argv):
    if len(argv) >= 5 and argv[1] == "--child":
        measure(argv[2], argv[3], argv[4])
        return 0
    if len(argv) < 4:
        print(__doc__)
        return 2
    db, ext = argv[1], argv[2]
    rc = 0
    for table in argv[3:]:
        rc |= subprocess.call([sys.executable, argv[0], "--child", db, ext, table])
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
