#!/usr/bin/python3
"""The reproductions of issue #11 ("what an ordinary table promises"), one
check each, on both modules, against an ordinary rowid table where one
applies.  Each case names the defect it reproduces.

Usage:
    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_reliability.py [case ...]
The last line is "N passed, M failed"; exit 1 if M > 0, 77 if GPUDS_EXT is
unset (SKIPPED).  GPUDS_BACKEND is left as set (the GPU backend where there
is one), so the GPU machine runs the same cases on its stores.
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import traceback

EXT = os.path.abspath(os.environ["GPUDS_EXT"]) if os.environ.get("GPUDS_EXT") else ""
MODULES = ("gfsl", "gpuhash")
TMP = None
CASES = []
passed = failed = 0


def case(fn):
    CASES.append(fn)
    return fn


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (what, detail))


def connect(path, timeout=5.0):
    c = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    c.enable_load_extension(True)
    c.load_extension(EXT)
    c.enable_load_extension(False)
    return c


def fresh(name):
    """A path for a new database file in the test's directory."""
    p = os.path.join(TMP, name)
    for s in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(p + s):
            os.remove(p + s)
    return p


def rows(c, sql, *a):
    return c.execute(sql, a).fetchall()


def err(c, sql, *a):
    """The error message of running sql, or None if it succeeds."""
    try:
        c.execute(sql, a).fetchall()
        return None
    except sqlite3.Error as e:
        return str(e)


def twin(c, mod, decl="k INTEGER PRIMARY KEY, v"):
    c.execute("DROP TABLE IF EXISTS t")
    c.execute("DROP TABLE IF EXISTS r")
    c.execute("CREATE VIRTUAL TABLE t USING %s(%s)" % (mod, decl))
    c.execute("CREATE TABLE r(%s)" % decl)


def both(c, sql, *a):
    """Run sql on t and on r; return (result or error) of each."""
    out = []
    for name in ("t", "r"):
        s = sql.replace("{t}", name)
        try:
            out.append(("ok", c.execute(s, a).fetchall()))
        except sqlite3.Error as e:
            out.append(("error", str(e).replace(".%s." % name, ".T.")
                        .replace(" %s." % name, " T.")))
    return out


def agree(c, sql, what, *a):
    ra, rb = both(c, sql, *a)
    check(ra == rb, what, "gpuds %r vs ordinary %r" % (ra, rb))
    return ra


def contents(c, name):
    return rows(c, "SELECT * FROM %s ORDER BY 1" % name)


# ---------------------------------------------------------------- defect 1
@case
def d01_rollback_to_after_busy_release():
    """ROLLBACK TO after a RELEASE that failed with BUSY (rollback journal, a
    reader holding a lock) must leave a readable table with the right rows."""
    for mod in MODULES:
        p = fresh("d01_%s.db" % mod)
        a = connect(p, timeout=0)
        b = connect(p, timeout=0)
        a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        a.execute("INSERT INTO t VALUES(1,'a'),(2,'b'),(3,'c'),(100,'d')")
        a.execute("SAVEPOINT s")
        a.execute("INSERT INTO t VALUES(5,'x')")
        b.execute("BEGIN")
        b.execute("SELECT count(*) FROM t").fetchall()
        e = err(a, "RELEASE s")
        check(e is not None and "locked" in e, "d01 %s: RELEASE is BUSY" % mod, e)
        a.execute("ROLLBACK TO s")
        b.execute("COMMIT")
        a.execute("RELEASE s")
        c = connect(p)
        got = err(c, "SELECT * FROM t") or sorted(rows(c, "SELECT * FROM t"))
        check(got == [(1, 'a'), (2, 'b'), (3, 'c'), (100, 'd')], "d01 %s: contents" % mod, got)
        got = rows(c, "SELECT gpuds_check('t')")
        check(got == [("ok",)], "d01 %s: gpuds_check" % mod, got)
        for x in (a, b, c):
            x.close()


def main():
    global TMP
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    TMP = tempfile.mkdtemp(prefix="gpuds_rel_")
    want = set(sys.argv[1:])
    try:
        for fn in CASES:
            if want and not any(fn.__name__.startswith(w) for w in want):
                continue
            try:
                fn()
            except Exception:
                global failed
                failed += 1
                print("FAIL %s raised:" % fn.__name__)
                traceback.print_exc()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
