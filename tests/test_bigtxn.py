#!/usr/bin/env python3
"""Big transactions in random key order, differential against an ordinary
table: the write buffer flushes in the middle of them (GPUDS_FLUSH_ROWS),
gfsl copies each big flush's rows into key-ordered arenas on several
threads, and savepoint rollbacks, full rollbacks, commits and a reopen must
all leave exactly what the ordinary table holds.

    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_bigtxn.py

Exit 0 all passed, 1 some failed, 77 skipped (no extension).
"""

import os
import random
import sqlite3
import sys
import tempfile

FLUSH = 140000          # rows; a flush this big is split among threads
COLS = "k INTEGER PRIMARY KEY, v INTEGER, s TEXT"
QUERIES = [
    "SELECT count(*), sum(k), sum(v), count(s) FROM {t}",
    "SELECT count(*), sum(v) FROM {t} WHERE k BETWEEN 100000 AND 400000",
    "SELECT k, v, s FROM {t} WHERE k >= 250000 ORDER BY k LIMIT 50",
    "SELECT k, v, s FROM {t} WHERE k <= 250000 ORDER BY k DESC LIMIT 50",
    "SELECT k, v, s FROM {t} WHERE k IN (7, 77, 777, 7777, 77777, 177777, 377777)",
    "SELECT total(v) FROM (SELECT v FROM {t} WHERE k BETWEEN 0 AND 600000 ORDER BY k)",
]

failures = 0
checks = 0


def connect(path, ext):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(ext)
    return conn


def compare(conn, kinds, label):
    """Every query gives the same rows on each table as on the ordinary one;
    outside a transaction, gpuds_check() also finds the structure equal to
    the shadow tables (inside one it holds uncommitted flushes)."""
    global failures, checks
    for q in QUERIES:
        want = conn.execute(q.format(t="ref")).fetchall()
        for kind in kinds:
            got = conn.execute(q.format(t=kind)).fetchall()
            checks += 1
            if got != want:
                failures += 1
                print("FAIL %s: %s on %s\n  want %r\n  got  %r"
                      % (label, q.format(t=kind), kind, want[:5], got[:5]))
    for kind in kinds if not conn.in_transaction else []:
        checks += 1
        r = conn.execute("SELECT gpuds_check(?)", (kind,)).fetchone()[0]
        if r != "ok":
            failures += 1
            print("FAIL %s: gpuds_check(%s) = %s" % (label, kind, r))


def write_all(conn, tables, sql, rows):
    for t in tables:
        conn.executemany(sql.format(t=t), rows)


def main():
    ext = os.environ.get("GPUDS_EXT")
    if not ext or not os.path.exists(ext):
        print("SKIPPED: gpuds.so not found (set GPUDS_EXT)")
        return 77
    os.environ["GPUDS_FLUSH_ROWS"] = str(FLUSH)
    kinds = ["gfsl", "gpuhash"]
    tables = ["ref"] + kinds
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "big.db")
        conn = connect(path, ext)
        conn.execute("CREATE TABLE ref(%s)" % COLS)
        for kind in kinds:
            conn.execute("CREATE VIRTUAL TABLE %s USING %s(%s)" % (kind, kind, COLS))
        ins = "INSERT INTO {t} VALUES(?, ?, ?)"

        # 1. 300k rows in random order: two flushes of 140k inside the
        #    transaction, then a savepoint whose 150k more rows (another
        #    flush) and updates are rolled back; then commit.
        keys = list(range(0, 600000, 2))
        rng.shuffle(keys)
        conn.execute("BEGIN")
        write_all(conn, tables, ins, [(k, k * 3, "r%d" % k) for k in keys])
        compare(conn, kinds, "after 300k random inserts")
        conn.execute("SAVEPOINT a")
        more = list(range(1, 300001, 2))
        rng.shuffle(more)
        write_all(conn, tables, ins, [(k, -k, None) for k in more])
        write_all(conn, tables, "UPDATE {t} SET v = v + 1, s = 'u' WHERE k = ?",
                  [(k,) for k in keys[:20000]])
        compare(conn, kinds, "inside the savepoint")
        conn.execute("ROLLBACK TO a")
        conn.execute("RELEASE a")
        compare(conn, kinds, "after ROLLBACK TO")
        conn.execute("COMMIT")
        compare(conn, kinds, "after COMMIT")

        # 2. A transaction that deletes a range, writes 200k random new rows
        #    and updates old ones (a flush in the middle), rolled back.
        conn.execute("BEGIN")
        for t in tables:
            conn.execute("DELETE FROM %s WHERE k BETWEEN 100000 AND 200000" % t)
        fresh = list(range(600001, 1000001, 2))
        rng.shuffle(fresh)
        write_all(conn, tables, ins, [(k, k, "n") for k in fresh])
        write_all(conn, tables, "UPDATE {t} SET s = 'x' WHERE k = ?",
                  [(k,) for k in keys[50000:60000]])
        compare(conn, kinds, "before ROLLBACK")
        conn.execute("ROLLBACK")
        compare(conn, kinds, "after ROLLBACK")

        # 3. Again, committed; then a fresh connection reloads everything.
        conn.execute("BEGIN")
        write_all(conn, tables, ins, [(k, k, "n") for k in fresh])
        write_all(conn, tables, "DELETE FROM {t} WHERE k = ?",
                  [(k,) for k in keys[:30000]])
        conn.execute("COMMIT")
        compare(conn, kinds, "after the second COMMIT")
        conn.close()
        conn = connect(path, ext)
        compare(conn, kinds, "after reopening")
        conn.close()
    print("%d passed, %d failed" % (checks - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
