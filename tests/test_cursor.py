#!/usr/bin/python3
"""Open cursors and the same connection's writes; visiting order.

1. An open cursor sees what its own connection changes between its steps, as
   an ordinary table's does: while a query steps over t, the same connection
   deletes and updates rows ahead of it.  Every query shape (full scan,
   range, ORDER BY both ways, LIMIT/OFFSET, IN lists, point lookups in a
   join) is run on gfsl, gpuhash and an ordinary table with the same writes
   at the same steps, and the rows returned must be equal.  The writes come
   at steps around the page sizes of the scans (pages start at 16 or 256 rows
   and double; the host mirror serves pages up to 4096 entries) and after the
   first rows, in autocommit mode (every write commits, flushing the write
   buffer under the open cursor) and inside a transaction.
2. Multi-row statements visit rows in key order on gpuhash too: UPDATE t
   SET k=k-19 over keys 26 and 45 and its kin.
3. Prepared statements run again and again (a table keeps one
   closed cursor for its next xOpen, a cursor keeps its scan's page buffers
   of up to 4096 entries across xFilter, a scan hands the cursor the rest of
   a page at once): ranges of every width (pages kept, dropped, reused by
   narrower ones), point reads, IN lists, ORDER BY ... DESC LIMIT, in a
   seeded random order, with two statements open on t at once (a cursor
   parked, another freed), writes between them in and out of transactions
   (runs of one row while the write buffer holds keys in range), ROLLBACK,
   and writes while a statement is half stepped; every answer equal to an
   ordinary table's.

Run twice: with the default configuration and with GPUDS_MIRROR=1 (the host
store gets a host mirror, so pages are served the way a GPU table's are).

Usage: GPUDS_EXT=build/gpuds /usr/bin/python3 tests/test_cursor.py
"""

import os
import sqlite3
import subprocess
import sys

EXT = os.environ.get("GPUDS_EXT", "")
ENGINES = ("gfsl", "gpuhash")

# Steps at which the connection writes: the first rows and around page ends.
BOUNDS = (16, 32, 48, 112, 240, 255, 256, 257, 496, 768, 1008, 1024, 1025,
          1792, 2032, 3840, 4080, 4096, 4097)
STEPS = set(range(0, 4)) | {b + d for b in BOUNDS for d in (-2, -1, 0, 1)}


def connect(engine):
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    if engine == "sqlite":
        db.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v)")
    else:
        db.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)"
                   % engine)
    db.execute("CREATE TABLE probe(k INTEGER PRIMARY KEY)")
    return db


def fill(db, keys):
    db.execute("BEGIN")
    db.execute("DELETE FROM t")
    db.executemany("INSERT INTO t VALUES(?, ?)", [(k, "v%d" % k) for k in keys])
    db.execute("COMMIT")


def walk(engine, keys, sql, args, step_dir, in_txn):
    """Step through sql, writing ahead of the cursor at the STEPS; returns the
    rows read and the table's contents after."""
    db = connect(engine)
    fill(db, keys)
    db.executemany("INSERT INTO probe VALUES(?)", [(k,) for k in keys])
    w = db.cursor()
    if in_txn:
        w.execute("BEGIN")
    out = []
    for i, row in enumerate(db.execute(sql, args)):
        out.append(tuple(row))
        if i in STEPS:
            k = row[0]
            d = step_dir
            w.execute("DELETE FROM t WHERE k = ?", (k + 2 * d,))
            w.execute("UPDATE t SET v = ? WHERE k = ?", ("new%d" % i, k + d))
            w.execute("UPDATE t SET v = ? WHERE k = ?", ("far%d" % i, k + 300 * d))
            w.execute("DELETE FROM t WHERE k = ?", (k + 257 * d,))
    if in_txn:
        w.execute("COMMIT")
    after = db.execute("SELECT k, v FROM t ORDER BY k").fetchall()
    db.close()
    return out, after


def queries(n):
    inlist = ",".join(str(k) for k in range(1, n + 1))
    return [
        ("SELECT k, v FROM t ORDER BY k", (), 1),
        ("SELECT k, v FROM t ORDER BY k DESC", (), -1),
        ("SELECT k, v FROM t", (), 1),
        ("SELECT k, v FROM t WHERE k >= 2 AND k <= ? ORDER BY k", (n - 1,), 1),
        ("SELECT k, v FROM t WHERE k > 1 ORDER BY k DESC", (), -1),
        ("SELECT k, v FROM t ORDER BY k LIMIT ? OFFSET 1", (n,), 1),
        ("SELECT k, v FROM t ORDER BY k DESC LIMIT 300", (), -1),
        ("SELECT k, v FROM t WHERE k IN (%s) ORDER BY k" % inlist, (), 1),
        ("SELECT k, v FROM t WHERE k IN (%s) ORDER BY k DESC" % inlist, (), -1),
        ("SELECT k, v FROM t WHERE k IN (SELECT k FROM probe)", (), 1),
        # point lookups, one xFilter per probe row (CROSS JOIN: probe outside)
        ("SELECT t.k, t.v FROM probe CROSS JOIN t ON t.k = probe.k", (), 1),
    ]


def check(label, got, want):
    if got != want:
        diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                    min(len(got), len(want)))
        print("FAIL %s: %d rows vs %d (ordinary), first difference at %d:\n"
              "  got  %r\n  want %r" % (label, len(got), len(want), diff,
                                        got[diff:diff + 3], want[diff:diff + 3]))
        return 1
    return 0


REUSE_SQL = (
    "SELECT k, v FROM t WHERE k BETWEEN ? AND ?",
    "SELECT count(*), sum(k) FROM t WHERE k BETWEEN ? AND ?",
    "SELECT k, v FROM t WHERE k <= ? ORDER BY k DESC LIMIT 10",
    "SELECT v FROM t WHERE k = ?",
    "SELECT k, v FROM t WHERE k IN (?, ?, ?, ?) ORDER BY k",
)


def reuse_run(engine, seed, n_ops):
    """One connection, the statements of REUSE_SQL run n_ops times in a seeded
    order with writes between them; returns every answer."""
    import random
    rnd = random.Random(seed)
    db = connect(engine)
    fill(db, range(0, 20000, 2))
    out = []
    in_txn = False
    for _ in range(n_ops):
        op = rnd.randrange(10)
        a = rnd.randrange(-50, 20050)
        w = rnd.choice((0, 1, 5, 30, 300, 5000, 20000))
        if op <= 4:
            sql = REUSE_SQL[op]
            if op <= 1:
                args = (a, a + w)
            elif op <= 3:
                args = (a,)
            else:
                args = tuple(a + rnd.randrange(-3, 40) for _ in range(4))
            out.append((sql, args, db.execute(sql, args).fetchall()))
        elif op == 5:
            # two statements on t at once: the inner one runs to its end while
            # the outer is half stepped, then the outer is left unfinished
            outer = db.execute(REUSE_SQL[0], (a, a + w))
            part = outer.fetchmany(rnd.randrange(1, 20))
            inner = db.execute(REUSE_SQL[2], (a + w // 2,)).fetchall()
            out.append(("nested", (a, w), part, inner))
            outer.close()
        elif op == 6:
            # a write while a range is half stepped: the rest shows it
            cur = db.execute(REUSE_SQL[0], (a, a + w))
            part = cur.fetchmany(3)
            if part:
                db.execute("DELETE FROM t WHERE k = ?", (part[-1][0] + 2,))
                db.execute("UPDATE t SET v = 'h' || v WHERE k = ?", (part[-1][0] + 4,))
            out.append(("half", (a, w), part, cur.fetchall()))
        elif op == 7:
            db.execute("INSERT OR REPLACE INTO t VALUES(?, ?)", (a, "w%d" % a))
            db.execute("DELETE FROM t WHERE k BETWEEN ? AND ?", (a + 7, a + 7 + w // 50))
        elif op == 8:
            if in_txn:
                db.execute(rnd.choice(("COMMIT", "ROLLBACK")))
            else:
                db.execute("BEGIN")
            in_txn = not in_txn
        else:
            db.execute("UPDATE t SET v = v || 'u' WHERE k BETWEEN ? AND ?", (a, a + w // 20))
    if in_txn:
        db.execute("COMMIT")
    out.append(db.execute("SELECT k, v FROM t ORDER BY k").fetchall())
    db.close()
    return out


def test_reused_statements():
    fails = 0
    for seed in range(6):
        want = reuse_run("sqlite", seed, 600)
        for e in ENGINES:
            got = reuse_run(e, seed, 600)
            for i, (g, w) in enumerate(zip(got, want)):
                if g != w:
                    print("FAIL reused statements %s seed %d, step %d:\n  got  %.300r\n"
                          "  want %.300r" % (e, seed, i, g, w))
                    fails += 1
                    break
            if len(got) != len(want):
                print("FAIL reused statements %s seed %d: %d answers vs %d"
                      % (e, seed, len(got), len(want)))
                fails += 1
    return fails


def test_cursors():
    fails = 0
    sizes = [1, 2, 3, 255, 256, 257, 1024, 1025, 4096, 4097]
    for n in sizes:
        keys = list(range(1, n + 1))
        for sql, args, d in queries(n):
            for in_txn in (False, True):
                want = walk("sqlite", keys, sql, args, d, in_txn)
                for e in ENGINES:
                    got = walk(e, keys, sql, args, d, in_txn)
                    label = "%s n=%d txn=%d %s" % (e, n, in_txn, sql[:70])
                    fails += check(label + " (rows)", got[0], want[0])
                    fails += check(label + " (after)", got[1], want[1])
    return fails


def test_issue_reproduction():
    """The reported case: keys 1..6, delete k+2 and update k+1 at every step."""
    fails = 0
    res = {}
    for e in ("sqlite",) + ENGINES:
        db = connect(e)
        fill(db, range(1, 7))
        w = db.cursor()
        out = []
        for k, v in db.execute("SELECT k, v FROM t ORDER BY k"):
            out.append((k, v))
            w.execute("DELETE FROM t WHERE k = ?", (k + 2,))
            w.execute("UPDATE t SET v = 'upd' WHERE k = ?", (k + 1,))
        res[e] = out
        db.close()
    if [k for k, _ in res["sqlite"]] != [1, 2, 4, 5]:
        print("FAIL: the ordinary table visited %r" % (res["sqlite"],))
        fails += 1
    for e in ENGINES:
        fails += check("%s issue reproduction" % e, res[e], res["sqlite"])
    return fails


def test_key_order_statements():
    """Defect 6: multi-row statements see rows in key order."""
    fails = 0
    cases = [
        ([26, 45], "UPDATE t SET k = k - 19"),
        ([26, 45], "UPDATE OR IGNORE t SET k = 59 WHERE k > 20"),
        ([26, 45], "INSERT INTO t SELECT NULL, v FROM t"),
        (list(range(1, 200, 3)), "UPDATE t SET k = k - 3 WHERE k > 1"),
        (list(range(1, 200, 3)), "UPDATE OR IGNORE t SET k = 100 WHERE k > 50"),
        (list(range(1, 3000, 7)), "INSERT INTO t SELECT NULL, v FROM t"),
        (list(range(1, 3000, 7)), "UPDATE t SET k = k + 7 WHERE k > 1000 AND 0"),
    ]
    for keys, stmt in cases:
        res = {}
        for e in ("sqlite",) + ENGINES:
            db = connect(e)
            fill(db, keys)
            try:
                db.execute(stmt)
                res[e] = db.execute("SELECT k, v FROM t ORDER BY k").fetchall()
            except sqlite3.Error as ex:
                res[e] = "error: %s" % ex
            db.close()
        for e in ENGINES:
            fails += check("%s %s over %d keys" % (e, stmt, len(keys)),
                           res[e], res["sqlite"])
    # A scan of a gpuhash table without ORDER BY comes in key order, and
    # ORDER BY the key is consumed by the table (no sorter), both ways.
    db = connect("gpuhash")
    keys = [(k * 7919) % 10007 - 5000 for k in range(3000)]
    fill(db, keys)
    got = [r[0] for r in db.execute("SELECT k FROM t")]
    fails += check("gpuhash scan order", got, sorted(keys))
    for q in ("SELECT k FROM t ORDER BY k", "SELECT k FROM t ORDER BY k DESC",
              "SELECT k FROM t WHERE k > 10 ORDER BY k DESC"):
        plan = " ".join(r[-1] for r in db.execute("EXPLAIN QUERY PLAN " + q))
        if "TEMP B-TREE" in plan or "ORDER BY k" not in plan:
            print("FAIL: %s is planned as %r" % (q, plan))
            fails += 1
    db.close()
    return fails


def main():
    if not EXT or not (os.path.exists(EXT) or os.path.exists(EXT + ".so")):
        print("GPUDS_EXT not set or missing: skipped")
        return 77
    if os.environ.get("GPUDS_TEST_CURSOR_CHILD") is None:
        rc = 0
        for mirror in ("", "1"):
            env = dict(os.environ, GPUDS_TEST_CURSOR_CHILD="1")
            env.setdefault("GPUDS_BACKEND", "host")
            if mirror:
                env["GPUDS_MIRROR"] = mirror
            print("== GPUDS_MIRROR=%s" % (mirror or "default"), flush=True)
            r = subprocess.call([sys.executable, __file__], env=env)
            if r != 0:
                print("FAILED (exit %d) with GPUDS_MIRROR=%s" % (r, mirror or "default"))
                rc = 1
        return rc
    fails = test_issue_reproduction()
    fails += test_key_order_statements()
    fails += test_reused_statements()
    fails += test_cursors()
    print("%s: %d failures" % ("FAIL" if fails else "ok", fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
