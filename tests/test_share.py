#!/usr/bin/python3
"""Connections of one process share one copy of each table (ext/copy.c), each
seeing its own snapshot: randomized threads and targeted cases, against
ordinary tables.

Threads: one writer and 15 readers, each with its own connection to one
database file holding a gfsl and a gpuhash table and an ordinary twin of
each.  The writer applies every change to a table and its twin in one
transaction (flushing its write buffer every few keys, GPUDS_FLUSH_ROWS, so
that its batches reach the shared copy before it commits; savepoints rolled
back, transactions rolled back).  Readers read a table and its twin in one
snapshot: one statement in autocommit, or several in a read transaction,
each read repeated there: no lost row, no phantom, no torn snapshot.  In WAL
mode readers and the writer run at once; in rollback-journal mode they take
turns (SQLite's locks, a busy timeout).  The CUDA backend is used where one
is usable, as everywhere.

    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_share.py [--seed S]
        [--seconds T] [--threads N] [--cases] [--threads-only]

GPUDS_SHARE_SECONDS sets the seconds per journal mode (default 6).  The last
line is "N passed, M failed"; exit 77 without GPUDS_EXT.

A shared copy's store that moves to the host (the store hook of
gpumem_lib.py fails a call as a full GPU does) moves for every connection:
each one's gpuds_info says why, all still read one copy, and a connection
opened afterwards shares it.
"""
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
import traceback

# A flush every few keys: the writer's batches reach the shared store
# mid-transaction (set before the extension reads its settings).
os.environ.setdefault("GPUDS_FLUSH_ROWS", "5")

from gpuds_testlib import EXT, Tally, connect  # noqa: E402
import gpumem_lib as G  # noqa: E402

T = Tally()
check = T.check
MODULES = ("gfsl", "gpuhash")
KEYS = 400


def fresh(d, name, journal):
    p = os.path.join(d, name)
    for s in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(p + s):
            os.remove(p + s)
    c = sqlite3.connect(p)
    c.execute("PRAGMA journal_mode=%s" % journal)
    c.close()
    return p


def info(c, t):
    for x in json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])["tables"]:
        if x["name"] == "main." + t:
            return x
    return None


# ------------------------------------------------------------ the threads
def setup(p):
    c = connect(p)
    for mod in MODULES:
        t = {"gfsl": "g", "gpuhash": "h"}[mod]
        c.execute("CREATE VIRTUAL TABLE %s USING %s(k INTEGER PRIMARY KEY, v INTEGER, w TEXT)" % (t, mod))
        c.execute("CREATE TABLE %s_o(k INTEGER PRIMARY KEY, v INTEGER, w TEXT)" % t)
        c.execute("BEGIN")
        for k in range(0, KEYS, 2):
            for tab in (t, t + "_o"):
                c.execute("INSERT INTO %s VALUES(?, ?, ?)" % tab, (k, k % 37, "w%d" % (k % 11)))
        c.execute("COMMIT")
    c.close()


def write_ops(rng, t):
    """A few random statements on table t (applied to its twin too)."""
    out = []
    for _ in range(rng.randint(1, 12)):
        k = rng.randrange(KEYS)
        x = rng.random()
        if x < 0.35:
            out.append(("INSERT OR REPLACE INTO %s VALUES(?, ?, ?)", (k, rng.randrange(40), "w%d" % rng.randrange(12))))
        elif x < 0.55:
            out.append(("DELETE FROM %s WHERE k=?", (k,)))
        elif x < 0.7:
            out.append(("DELETE FROM %s WHERE k BETWEEN ? AND ?", (k, k + rng.randrange(6))))
        elif x < 0.9:
            out.append(("UPDATE %s SET v=v+1, w=w||'x' WHERE k BETWEEN ? AND ?", (k, k + rng.randrange(10))))
        else:
            out.append(("UPDATE %s SET v=? WHERE v=?", (rng.randrange(40), rng.randrange(40))))
    return out


def write_both(c, rng, t):
    """A few writes (write_ops) to table t and the same to its twin."""
    for sql, args in write_ops(rng, t):
        c.execute(sql % t, args)
        c.execute(sql % (t + "_o"), args)


def writer(p, seed, stop, errors, stats, timeout):
    rng = random.Random(seed)
    c = connect(p, timeout=timeout)
    try:
        while not stop.is_set():
            t = rng.choice("gh")
            try:
                c.execute("BEGIN IMMEDIATE" if rng.random() < 0.5 else "BEGIN")
                write_both(c, rng, t)
                if rng.random() < 0.2:
                    c.execute("SAVEPOINT s")
                    write_both(c, rng, t)
                    c.execute("ROLLBACK TO s" if rng.random() < 0.5 else "RELEASE s")
                if rng.random() < 0.15:
                    c.execute("ROLLBACK")
                    stats["rollbacks"] += 1
                else:
                    c.execute("COMMIT")
                    stats["commits"] += 1
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                if c.in_transaction:
                    c.execute("ROLLBACK")
            time.sleep(rng.random() * 0.002)
    except Exception:
        errors.append("writer: " + traceback.format_exc())
    finally:
        c.close()


def reads(rng, t):
    """(gpuds query, twin query, args) pairs reading table t."""
    k = rng.randrange(KEYS)
    keys = tuple(rng.randrange(KEYS) for _ in range(rng.randint(1, 6)))
    qs = [
        ("SELECT k, v, w FROM %s ORDER BY k", ()),
        ("SELECT k, v, w FROM %s WHERE k=?", (k,)),
        ("SELECT k, v, w FROM %s WHERE k IN (%s) ORDER BY k" % ("%s", ",".join("?" * len(keys))), keys),
        ("SELECT k, v FROM %s WHERE k BETWEEN ? AND ? ORDER BY k DESC", (k, k + 30)),
        ("SELECT k, v FROM %s WHERE k >= ? ORDER BY k LIMIT 7", (k,)),
        ("SELECT k, v, w FROM %s WHERE v = ? ORDER BY k", (k % 40,)),
        ("SELECT k FROM %s WHERE v > ? AND w >= 'w5' ORDER BY v, k", (k % 40,)),
        ("SELECT k, v FROM %s WHERE v < ? ORDER BY v DESC, k LIMIT 5", (k % 40,)),
        ("SELECT count(*), sum(v), max(k) FROM %s", ()),
        ("SELECT w, count(*) FROM %s WHERE v >= ? GROUP BY w ORDER BY w", (k % 40,)),
    ]
    return [rng.choice(qs) for _ in range(rng.randint(1, 4))]


def reader(p, seed, stop, errors, stats, timeout, wal):
    rng = random.Random(seed)
    c = connect(p, timeout=timeout)
    try:
        while not stop.is_set():
            t = rng.choice("gh")
            try:
                if rng.random() < 0.5:
                    # one statement: the table and its twin in one snapshot
                    sql, args = rng.choice(reads(rng, t))
                    both = ("SELECT (SELECT json_group_array(json_array(*)) FROM (%s)), "
                            "(SELECT json_group_array(json_array(*)) FROM (%s))"
                            % (sql % t, sql % (t + "_o")))
                    a, b = c.execute(both, args + args).fetchone()
                    if json.loads(a) != json.loads(b):
                        errors.append("autocommit %s %r: %s != %s" % (sql % t, args, a[:300], b[:300]))
                    stats["reads"] += 1
                else:
                    # a read transaction: every read there sees one snapshot
                    c.execute("BEGIN")
                    qs = reads(rng, t)
                    first = {}
                    for rep in range(rng.randint(1, 3)):
                        for sql, args in qs:
                            a = c.execute(sql % t, args).fetchall()
                            b = c.execute(sql % (t + "_o"), args).fetchall()
                            if a != b:
                                errors.append("txn %s %r: %s != %s" % (sql % t, args, str(a)[:300], str(b)[:300]))
                            key = (sql, args)
                            if key in first and first[key] != a:
                                errors.append("torn snapshot %s %r" % (sql % t, args))
                            first[key] = a
                            stats["reads"] += 1
                        if wal:
                            time.sleep(rng.random() * 0.003)   # let commits pass by
                    c.execute("COMMIT")
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                if c.in_transaction:
                    c.execute("ROLLBACK")
                stats["busy"] += 1
    except Exception:
        errors.append("reader: " + traceback.format_exc())
    finally:
        c.close()


def threads_run(d, journal, seed, seconds, nThread):
    p = fresh(d, "share_%s.db" % journal, journal)
    setup(p)
    stop = threading.Event()
    errors = []
    stats = {"commits": 0, "rollbacks": 0, "reads": 0, "busy": 0}
    wal = journal == "wal"
    timeout = 30.0
    ths = [threading.Thread(target=writer, args=(p, seed, stop, errors, stats, timeout))]
    for i in range(nThread - 1):
        ths.append(threading.Thread(target=reader, args=(p, seed * 1000 + i + 1, stop, errors, stats,
                                                          timeout, wal)))
    for th in ths:
        th.start()
    t0 = time.time()
    while time.time() - t0 < seconds and not errors:
        time.sleep(0.1)
    stop.set()
    for th in ths:
        th.join()
    tag = "threads %s seed %d" % (journal, seed)
    check(not errors, tag + ": every answer is the twin's, in one snapshot", errors[:5])
    check(stats["commits"] > 0 and stats["reads"] > 0, tag + ": work was done", stats)
    c = connect(p)
    for t in "gh":
        a = c.execute("SELECT * FROM %s ORDER BY k" % t).fetchall()
        b = c.execute("SELECT * FROM %s_o ORDER BY k" % t).fetchall()
        check(a == b, tag + ": %s at the end" % t, (len(a), len(b)))
        check(c.execute("SELECT gpuds_check(?)", (t,)).fetchone()[0] == "ok", tag + ": gpuds_check(%s)" % t)
    c.close()
    print("%s: %s" % (tag, stats))


# ------------------------------------------------------------ cases
def cases(d):
    for mod in MODULES:
        tag = "cases " + mod
        p = fresh(d, "case_%s.db" % mod, "wal")
        a = connect(p)
        a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        a.execute("INSERT INTO t VALUES(1, 'a'), (2, 'b'), (3, 'c')")
        b = connect(p)
        check(b.execute("SELECT * FROM t ORDER BY k").fetchall() == [(1, 'a'), (2, 'b'), (3, 'c')],
              tag + ": b reads")
        ia, ib = info(a, "t"), info(b, "t")
        check(ia["copy"]["tables"] == 2 and ib["copy"]["tables"] == 2, tag + ": one copy, two tables",
              (ia["copy"], ib["copy"]))
        # b's snapshot stays while a commits, its column plans too
        b.execute("BEGIN")
        check(b.execute("SELECT v FROM t WHERE k=2").fetchall() == [('b',)], tag + ": b in a transaction")
        a.execute("UPDATE t SET v='B' WHERE k=2")
        a.execute("DELETE FROM t WHERE k=1")
        a.execute("INSERT INTO t VALUES(4, 'd')")
        got = (b.execute("SELECT * FROM t ORDER BY k").fetchall(),
               b.execute("SELECT k FROM t WHERE v >= 'b' ORDER BY v").fetchall(),
               b.execute("SELECT * FROM t WHERE k IN (1, 2, 4)").fetchall(),
               b.execute("SELECT count(*) FROM t").fetchall())
        check(got == ([(1, 'a'), (2, 'b'), (3, 'c')], [(2,), (3,)], [(1, 'a'), (2, 'b')], [(3,)]),
              tag + ": b keeps its snapshot", got)
        check(info(b, "t")["copy"]["versions"] > 0, tag + ": versions kept for b", info(b, "t")["copy"])
        b.execute("COMMIT")
        got = b.execute("SELECT * FROM t ORDER BY k").fetchall()
        check(got == [(2, 'B'), (3, 'c'), (4, 'd')], tag + ": b after its transaction", got)
        check(info(b, "t")["copy"]["versions"] == 0, tag + ": versions released", info(b, "t")["copy"])
        # a's uncommitted batches: b does not see them; a's rollback
        a.execute("BEGIN")
        for k in range(10, 40):
            a.execute("INSERT INTO t VALUES(?, ?)", (k, "n%d" % k))
        a.execute("DELETE FROM t WHERE k=3")
        got = (b.execute("SELECT count(*) FROM t").fetchall(), b.execute("SELECT * FROM t WHERE k=3").fetchall(),
               b.execute("SELECT k FROM t WHERE v > 'm' ORDER BY k").fetchall(),
               a.execute("SELECT count(*) FROM t").fetchall())
        check(got == ([(3,)], [(3, 'c')], [], [(32,)]), tag + ": b does not see a's writes", got)
        a.execute("ROLLBACK")
        got = (a.execute("SELECT * FROM t ORDER BY k").fetchall(), b.execute("SELECT * FROM t ORDER BY k").fetchall())
        check(got[0] == got[1] == [(2, 'B'), (3, 'c'), (4, 'd')], tag + ": after a's rollback", got)
        # a reader idle in its read transaction while big versions pile up:
        # its pin goes (the versions are released), its snapshot stays
        b.execute("BEGIN")
        before = b.execute("SELECT count(*), sum(k), max(v) FROM t").fetchall()
        a.execute("BEGIN")
        a.executemany("INSERT INTO t VALUES(?, 'big')", ((k,) for k in range(1000, 71000)))
        a.execute("UPDATE t SET v='B2' WHERE k=2")
        a.execute("COMMIT")
        a.execute("SELECT count(*) FROM t").fetchall()
        vers = info(a, "t")["copy"]["versions"]
        got = (b.execute("SELECT count(*), sum(k), max(v) FROM t").fetchall(),
               b.execute("SELECT * FROM t WHERE k IN (2, 1000)").fetchall())
        check(vers == 0 and got == (before, [(2, 'B')]), tag + ": an idle reader's pin goes, "
              "its snapshot stays", (vers, before, got))
        b.execute("COMMIT")
        a.execute("DELETE FROM t WHERE k>=1000")
        a.execute("UPDATE t SET v='B' WHERE k=2")
        got = b.execute("SELECT * FROM t ORDER BY k").fetchall()
        check(got == [(2, 'B'), (3, 'c'), (4, 'd')] and info(b, "t")["copy"]["tables"] == 2,
              tag + ": b back on the shared copy", (got, info(b, "t")["copy"]))
        # a transaction whose batches a ROLLBACK TO took back commits
        # nothing to the table: the copy stays shared
        a.execute("BEGIN")
        a.execute("SAVEPOINT s")
        a.executemany("INSERT INTO t VALUES(?, 'gone')", ((k,) for k in range(100, 140)))
        a.execute("ROLLBACK TO s")
        a.execute("COMMIT")
        got = (a.execute("SELECT count(*) FROM t").fetchall(), b.execute("SELECT count(*) FROM t").fetchall(),
               info(b, "t")["copy"]["tables"])
        check(got == ([(3,)], [(3,)], 2), tag + ": after a commit with nothing of the table", got)
        # a third connection: no load, the copy as it is
        c3 = connect(p)
        check(c3.execute("SELECT * FROM t ORDER BY k").fetchall() == [(2, 'B'), (3, 'c'), (4, 'd')],
              tag + ": a new connection reads")
        check(info(c3, "t")["copy"]["tables"] == 3, tag + ": three tables, one copy", info(c3, "t")["copy"])
        # DDL: renamed, dropped and made again by one connection
        a.execute("ALTER TABLE t RENAME TO t2")
        check(b.execute("SELECT * FROM t2 ORDER BY k").fetchall() == [(2, 'B'), (3, 'c'), (4, 'd')],
              tag + ": b reads the renamed table")
        a.execute("DROP TABLE t2")
        a.execute("CREATE VIRTUAL TABLE t2 USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        a.execute("INSERT INTO t2 VALUES(9, 'z')")
        check(b.execute("SELECT * FROM t2").fetchall() == [(9, 'z')], tag + ": b reads the new table")
        check(c3.execute("SELECT * FROM t2").fetchall() == [(9, 'z')], tag + ": c3 reads the new table")
        # the backup API puts another file's contents in place: never shared
        q = fresh(d, "case_%s_other.db" % mod, "wal")
        o = connect(q)
        o.execute("CREATE VIRTUAL TABLE t2 USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        o.execute("INSERT INTO t2 VALUES(7, 'other')")
        o.backup(a)
        o.close()
        got = [x.execute("SELECT * FROM t2").fetchall() for x in (a, b, c3, connect(p))]
        check(all(g == [(7, 'other')] for g in got), tag + ": after the backup API", got)
        for x in (a, b, c3):
            x.close()
        # GPUDS_SHARE=0 keeps copies private; a memdb database is never shared
        m = connect("file:/share_%s?vfs=memdb" % mod)
        m2 = connect("file:/share_%s?vfs=memdb" % mod)
        m.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        m.execute("INSERT INTO t VALUES(1, 'm')")
        got = (m2.execute("SELECT * FROM t").fetchall(), info(m, "t")["copy"]["tables"],
               info(m2, "t")["copy"]["tables"])
        check(got == ([(1, 'm')], 1, 1), tag + ": memdb: each connection its own copy", got)
        m.close()
        m2.close()


def moved(d):
    """One connection's call moves the shared store to the host: for all."""
    hook = G.store_hook()
    if not check(hook is not None, "gpuds.so exports gpuds_test_store_nomem"):
        return
    n = 3000
    want = [(n, n * (n + 1) // 2)]
    for mirror in ("1", "0"):
        for mod in MODULES:
            os.environ["GPUDS_MIRROR"] = mirror
            tag = "moved %s mirror=%s" % (mod, mirror)
            p = fresh(d, "moved_%s_%s.db" % (mod, mirror), "wal")
            a, b = connect(p), connect(p)
            a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
            a.execute(G.series(1, n) + "INSERT INTO t SELECT x, x FROM c")
            q = "SELECT count(*), sum(v) FROM t WHERE k IN (%s)" % ",".join(str(k) for k in range(1, n + 1))
            check(b.execute(q).fetchall() == want, tag + ": b reads a's rows")
            hook(1)                       # the next call to the main store fails
            got = b.execute(q).fetchall()
            hook(-1)
            check(got == want, tag + ": b's statement goes on on the host", got)
            ia, ib = info(a, "t"), info(b, "t")
            check(ia["placement"]["store_why"] == G.HOOK_WHY
                  and ib["placement"]["store_why"] == G.HOOK_WHY,
                  tag + ": both connections say why the store is on the host",
                  (ia["placement"], ib["placement"]))
            check(ia["copy"]["tables"] == 2, tag + ": still one copy", ia["copy"])
            a.execute("INSERT INTO t VALUES(%d, 1)" % (n + 1))
            check(b.execute("SELECT count(*), sum(v) FROM t").fetchall() == [(n + 1, want[0][1] + 1)],
                  tag + ": a's write after the move, read by b")
            c3 = connect(p)
            check(c3.execute("SELECT count(*) FROM t").fetchall() == [(n + 1,)]
                  and info(c3, "t")["copy"]["tables"] == 3
                  and info(c3, "t")["placement"]["store_why"] == G.HOOK_WHY,
                  tag + ": a new connection shares the moved copy", info(c3, "t"))
            for x in (a, b, c3):
                x.close()
            c = connect(p)
            check(c.execute("SELECT count(*) FROM t").fetchall() == [(n + 1,)]
                  and info(c, "t")["placement"]["store_why"] != G.HOOK_WHY,
                  tag + ": reopened, a new copy is not on the host for the hook",
                  info(c, "t")["placement"])
            c.close()
    del os.environ["GPUDS_MIRROR"]


def main(argv):
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    seed = int(time.time()) % 100000
    seconds = float(os.environ.get("GPUDS_SHARE_SECONDS", "6"))
    nThread = 16
    do_cases = do_threads = True
    i = 0
    while i < len(argv):
        if argv[i] == "--seed":
            seed = int(argv[i + 1]); i += 1
        elif argv[i] == "--seconds":
            seconds = float(argv[i + 1]); i += 1
        elif argv[i] == "--threads":
            nThread = int(argv[i + 1]); i += 1
        elif argv[i] == "--cases":
            do_threads = False
        elif argv[i] == "--threads-only":
            do_cases = False
        i += 1
    print("seed %d (--seed %d repeats it), %g s per journal mode, %d threads" % (seed, seed, seconds, nThread))
    d = tempfile.mkdtemp(prefix="gpuds_share_")
    pin = connect(":memory:")             # gpuds.so stays loaded (the hook's state)
    try:
        print("backend: %s" % json.loads(pin.execute("SELECT gpuds_info()").fetchone()[0])["backend"])
        if do_cases:
            try:
                cases(d)
                moved(d)
            except Exception:
                check(False, "cases raised", traceback.format_exc())
        if do_threads:
            for journal in ("wal", "delete"):
                threads_run(d, journal, seed, seconds, nThread)
    finally:
        pin.close()
        shutil.rmtree(d, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
