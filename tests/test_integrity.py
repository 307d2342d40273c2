#!/usr/bin/python3
"""Reproductions of issue #25, items 2 and 3 (item 1, a replaced database
file, is in test_differential.py; item 10, reopening in rollback-journal
mode, in test_lazyload.py), on both modules.

  catch_up        gpuds_check after another connection's commit: it reads
                  the snapshot its statement sees, as a read does (WAL and
                  rollback journal; in a read transaction, its own snapshot)
  run_ids         a chunk moved to another run, two runs' ids swapped:
                  every read, gpuds_check and a write report
                  SQLITE_CORRUPT_VTAB under every load mode and journal
                  mode; a connection that loaded the table before the
                  damage keeps answering what it loaded, and its
                  gpuds_check reports the damage
  disk_lookups    two neighbouring chunks' ids swapped in a table whose
                  load runs in the background: a key lookup answered from
                  the runs on disk reports the damage instead of "no row"

Usage: GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_integrity.py [case ...]
The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import json
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpuds_testlib import EXT, Tally, connect, run_cases  # noqa: E402

MODULES = ("gfsl", "gpuhash")
MODES = ("off", "always", "hold")
JOURNALS = ("wal", "delete")
CORRUPT_VTAB = 267
T = Tally()
check = T.check
TMP = None
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def fresh(name, journal=None):
    p = os.path.join(TMP, name)
    for s in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(p + s):
            os.remove(p + s)
    if journal:
        c = sqlite3.connect(p)
        c.execute("PRAGMA journal_mode=%s" % journal)
        c.close()
    return p


CHILD = r'''
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.enable_load_extension(True)
c.load_extension(sys.argv[2])
out = []
for sql in json.loads(sys.argv[3]):
    try:
        out.append(["ok", c.execute(sql).fetchall()])
    except sqlite3.Error as e:
        out.append(["err", str(e), getattr(e, "sqlite_errorcode", -1)])
print(json.dumps(out))
'''


def child(db, statements, lazy=None):
    """Run statements in a fresh process (GPUDS_LAZY_LOAD=lazy, or unset):
    [["ok", rows] or ["err", message, code]] each."""
    env = dict(os.environ)
    env.pop("GPUDS_LAZY_LOAD", None)
    if lazy:
        env["GPUDS_LAZY_LOAD"] = lazy
    r = subprocess.run([sys.executable, "-c", CHILD, db, EXT, json.dumps(statements)],
                       capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0:
        return [["crash", "exit %d: %s" % (r.returncode, r.stderr[-800:])]] * len(statements)
    return json.loads(r.stdout)


def corrupt(res):
    """True if res is an error with SQLITE_CORRUPT_VTAB, or gpuds_check's own
    report of damage."""
    if res[0] == "err":
        return res[2] == CORRUPT_VTAB
    return res[0] == "ok" and len(res[1]) == 1 and isinstance(res[1][0][0], str) \
        and res[1][0][0] != "ok" and "disagree" not in res[1][0][0]


# ------------------------------------------------------------------ item 2
@case
def catch_up():
    for journal in JOURNALS:
        for mod in MODULES:
            tag = "catch_up %s %s" % (journal, mod)
            p = fresh("cu_%s_%s.db" % (journal, mod), journal)
            a, b = connect(p), connect(p)
            a.execute("CREATE VIRTUAL TABLE h USING %s(k INTEGER PRIMARY KEY, w)" % mod)
            a.execute("INSERT INTO h VALUES(0, 'A'), (1, 'x')")
            check(a.execute("SELECT * FROM h ORDER BY k").fetchall() == [(0, 'A'), (1, 'x')], tag + ": a reads")
            b.execute("UPDATE h SET w='B' WHERE k=0")
            got = a.execute("SELECT gpuds_check('h')").fetchall()
            check(got == [("ok",)], tag + ": gpuds_check after b's commit", got)
            got = a.execute("SELECT w FROM h WHERE k=0").fetchall()
            check(got == [("B",)], tag + ": a reads b's commit", got)
            if journal == "wal":
                # in a read transaction: the check sees a's (older) snapshot
                a.execute("BEGIN")
                got = a.execute("SELECT w FROM h WHERE k=0").fetchall()
                b.execute("UPDATE h SET w='C' WHERE k=0")
                got2 = a.execute("SELECT gpuds_check('h')").fetchall()
                got3 = a.execute("SELECT w FROM h WHERE k=0").fetchall()
                a.execute("COMMIT")
                check((got, got2, got3) == ([("B",)], [("ok",)], [("B",)]),
                      tag + ": in a read transaction, its snapshot", (got, got2, got3))
                got = a.execute("SELECT gpuds_check('h'), (SELECT w FROM h WHERE k=0)").fetchall()
                check(got == [("ok", "C")], tag + ": after it", got)
            a.close()
            b.close()


# ------------------------------------------------------------------ item 3
def eight_rows(p, mod):
    """Keys 1-8 'old' in run 1, k=1 'new' in run 2."""
    c = connect(p)
    c.execute("CREATE VIRTUAL TABLE g USING %s(k INTEGER PRIMARY KEY, v)" % mod)
    c.execute("INSERT INTO g VALUES" + ",".join("(%d, 'old')" % i for i in range(1, 9)))
    c.execute("UPDATE g SET v='new' WHERE k=1")
    runs = c.execute("SELECT id FROM g_run ORDER BY id").fetchall()
    c.close()
    return runs


DAMAGE = {
    "moved": ["UPDATE g_run SET id=0 WHERE id=2<<20"],
    "swapped": ["UPDATE g_run SET id=5 WHERE id=1<<20", "UPDATE g_run SET id=1<<20 WHERE id=2<<20",
                "UPDATE g_run SET id=2<<20 WHERE id=5"],
}


@case
def run_ids():
    reads = ["SELECT v FROM g WHERE k=1", "SELECT v FROM g WHERE k IN (1, 2)",
             "SELECT gpuds_check('g')", "SELECT k, v FROM g ORDER BY k", "SELECT count(*) FROM g",
             "UPDATE g SET v='x' WHERE k=5", "SELECT v FROM g WHERE k=1"]
    for mod in MODULES:
        for journal in JOURNALS:
            for what, sqls in DAMAGE.items():
                p = fresh("ids_%s_%s_%s.db" % (mod, journal, what), journal)
                runs = eight_rows(p, mod)
                check(runs == [(1 << 20,), (2 << 20,)], "run_ids %s: two runs" % mod, runs)
                # a connection that loaded the table before the damage
                held = connect(p)
                held.execute("SELECT count(*) FROM g").fetchall()
                raw = sqlite3.connect(p, isolation_level=None)
                for s in sqls:
                    raw.execute(s)
                raw.close()
                for mode in MODES:
                    tag = "run_ids %s %s %s GPUDS_LAZY_LOAD=%s" % (mod, journal, what, mode)
                    res = child(p, reads, mode)
                    bad = [(sql, r) for sql, r in zip(reads, res) if not corrupt(r)]
                    check(not bad, tag + ": every read and the write report the damage", bad[:3])
                tag = "run_ids %s %s %s" % (mod, journal, what)
                got = held.execute("SELECT v FROM g WHERE k=1").fetchall()
                check(got == [("new",)], tag + ": a connection that loaded it before answers "
                      "what it loaded", got)
                try:
                    got = held.execute("SELECT gpuds_check('g')").fetchall()
                    res = ["ok", got]
                except sqlite3.Error as e:
                    res = ["err", str(e), getattr(e, "sqlite_errorcode", -1)]
                check(corrupt(res), tag + ": and its gpuds_check reports the damage", res)
                held.close()


@case
def disk_lookups():
    for mod in MODULES:
        for journal in JOURNALS:
            p = fresh("disk_%s_%s.db" % (mod, journal), journal)
            c = connect(p)
            c.execute("CREATE VIRTUAL TABLE g USING %s(k INTEGER PRIMARY KEY, v)" % mod)
            c.execute("BEGIN")
            c.executemany("INSERT INTO g VALUES(?, ?)", ((k, "v%d" % k) for k in range(1, 70001)))
            c.execute("COMMIT")
            ids = [i for (i,) in c.execute("SELECT id FROM g_run ORDER BY id")]
            c.close()
            check(ids == [1048576, 1048577], "disk_lookups %s: one run of two chunks" % mod, ids)
            res = child(p, ["SELECT * FROM g WHERE k=70000", "SELECT gpuds_info()"])
            loads = [t["load"] for t in json.loads(res[1][1][0][0])["tables"]] if res[1][0] == "ok" else res
            check(res[0] == ["ok", [[70000, "v70000"]]] and loads == ["background"],
                  "disk_lookups %s %s: undamaged, answered from disk" % (mod, journal), (res[0], loads))
            raw = sqlite3.connect(p, isolation_level=None)
            for s in ("UPDATE g_run SET id=5 WHERE id=1048576", "UPDATE g_run SET id=1048576 WHERE id=1048577",
                      "UPDATE g_run SET id=1048577 WHERE id=5"):
                raw.execute(s)
            raw.close()
            for mode in (None, "hold"):
                res = child(p, ["SELECT * FROM g WHERE k=70000", "SELECT * FROM g WHERE k=5",
                                "SELECT * FROM g WHERE k IN (3, 69999)", "SELECT count(*) FROM g"], mode)
                check(all(corrupt(r) for r in res),
                      "disk_lookups %s %s GPUDS_LAZY_LOAD=%s: swapped chunks reported"
                      % (mod, journal, mode), res)


def main():
    def set_tmp(t):
        global TMP
        TMP = t
    return run_cases(T, CASES, "gpuds_integrity_", sys.argv[1:], set_tmp)


if __name__ == "__main__":
    sys.exit(main())
