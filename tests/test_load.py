"""Loading the extension: twice into one connection, and the settings the
environment gives.

A second load into a connection that has gpuds is a no-op: with a statement
open (where SQLite refuses to replace a function) it succeeds, the
statement goes on, and the tables and functions work.  A load into another
connection works as before, with the first connection's statement still
open, and so does one into each of many connections opened and closed in
turn (a closed connection's registration goes with it, so a new one at the
same address is not taken for it).

Every variable the extension reads is checked when it is loaded: a value the
variable does not take fails sqlite3_load_extension() with a message naming
the variable, the value and the values it takes, and the settings in force
stay as they were; a value it takes loads, and takes effect where a query
can see it."""
import json
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuds_testlib as lib  # noqa: E402

T = lib.Tally()

# variable: (values it refuses, values it takes)
SETTINGS = {
    "GPUDS_BACKEND": (["gpu", "cuda", "hosts", "1"], ["host", "auto", "HOST", ""]),
    "GPUDS_FLUSH_ROWS": (["abc", "0", "-5", "1e3", "12x", "99999999999999999999"], ["1", "7", "1048576"]),
    "GPUDS_MIRROR": (["2", "yes", "on"], ["0", "1", "auto"]),
    "GPUDS_HOST_CHUNK": (["-1", "16777217", "big"], ["0", "4096", "16777216"]),
    "GFSL_REBUILD": (["sometimes", "1"], ["never", "always", "auto"]),
    "GPUDS_COLUMN_PLANS": (["yes", "on", "1"], ["off", "always", "auto"]),
    "GPUDS_LAZY_LOAD": (["on", "lazy", "1"], ["off", "always", "hold", "auto"]),
    "GPUDS_HUGE_PAGES": (["no", "2", "off"], ["0", "1"]),
    "GPUDS_GPU_MEMORY": (["abc", "1.5G", "4T", "-1", "12 M"], ["0", "4096", "512M", "2g", ""]),
    "GPUDS_COLUMNS_ON_LOAD": (["yes", "2"], ["0", "1", "auto"]),
}

CHILD = r"""
import json, sqlite3, sys
c = sqlite3.connect(":memory:", isolation_level=None)
c.enable_load_extension(True)
try:
    c.load_extension(sys.argv[1])
except sqlite3.Error as e:
    print(json.dumps({"err": str(e)}))
    sys.exit(0)
c.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, v)")
c.execute("BEGIN")
c.executemany("INSERT INTO g VALUES(?, ?)", [(i, i % 5) for i in range(20)])
c.execute("COMMIT")
info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
plan = " ".join(r[-1] for r in c.execute("EXPLAIN QUERY PLAN SELECT k FROM g WHERE v = 3"))
print(json.dumps({"backend": info["backend"], "batches": info["tables"][0]["batches"], "plan": plan}))
"""


def child(env):
    out = subprocess.run([sys.executable, "-c", CHILD, lib.EXT], env=env, capture_output=True, text=True)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"crash": out.stderr[-600:]}


def case_settings():
    base = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    for var, (bad, good) in SETTINGS.items():
        for val in bad:
            r = child(dict(base, **{var: val}))
            e = r.get("err", "")
            T.check("%s=%s" % (var, val) in e and "takes" in e, "%s=%s refused at load" % (var, val), r)
        for val in good:
            r = child(dict(base, **{var: val}))
            T.check("err" not in r and "crash" not in r, "%s=%s loads" % (var, val), r)
    # where the setting shows
    r = child(dict(base, GPUDS_BACKEND="host"))
    T.check(r.get("backend") == "host", "GPUDS_BACKEND=host serves from the host", r)
    r = child(dict(base, GPUDS_FLUSH_ROWS="7"))
    T.check(r.get("batches", 0) >= 3, "GPUDS_FLUSH_ROWS=7 flushes 20 rows in 3 batches or more", r)
    r = child(dict(base, GPUDS_FLUSH_ROWS="1048576"))
    T.check(r.get("batches") == 1, "GPUDS_FLUSH_ROWS=1048576 flushes 20 rows once", r)
    r = child(dict(base, GPUDS_COLUMN_PLANS="off"))
    T.check("column set" not in r.get("plan", "column set"), "GPUDS_COLUMN_PLANS=off: no column plan", r)
    r = child(dict(base, GPUDS_COLUMN_PLANS="always"))
    T.check("column set" in r.get("plan", ""), "GPUDS_COLUMN_PLANS=always: a column plan", r)


def load_error(c):
    """Load gpuds into connection c: None, or the error's message."""
    c.enable_load_extension(True)
    try:
        c.load_extension(lib.EXT)
        return None
    except sqlite3.Error as ex:
        return str(ex)


def plan(c):
    return " ".join(r[-1] for r in c.execute("EXPLAIN QUERY PLAN SELECT k FROM g WHERE v = 3"))


def case_refused_keeps_settings():
    """A refused load leaves the settings in force as they were."""
    saved = {k: os.environ.get(k) for k in ("GPUDS_COLUMN_PLANS", "GPUDS_FLUSH_ROWS")}
    try:
        os.environ["GPUDS_COLUMN_PLANS"] = "always"
        os.environ.pop("GPUDS_FLUSH_ROWS", None)
        c = lib.connect(":memory:")
        c.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, v)")
        before = plan(c)
        os.environ["GPUDS_COLUMN_PLANS"] = "never"
        c2 = sqlite3.connect(":memory:")
        e = load_error(c2)
        T.check(e and "GPUDS_COLUMN_PLANS=never" in e, "a bad value refused in-process", e)
        c.execute("CREATE VIRTUAL TABLE h USING gfsl(k INTEGER PRIMARY KEY, v)")
        T.check("column set" in before and plan(c) == before, "the settings in force unchanged",
                (before, plan(c)))
        c.close()
        c2.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def case_load_twice():
    for mod in ("gfsl", "gpuhash"):
        c = lib.connect(":memory:")
        c.execute("CREATE VIRTUAL TABLE g USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        c.executemany("INSERT INTO g VALUES(?, ?)", [(i, i * i) for i in range(100)])
        cur = c.execute("SELECT k, v FROM g ORDER BY k")
        first = cur.fetchmany(10)
        e = load_error(c)
        T.check(e is None, "%s: a second load with a statement open" % mod, e)
        rest = cur.fetchall()
        T.check(first + rest == [(i, i * i) for i in range(100)], "%s: the open statement goes on" % mod)
        # another connection loads while this one has a statement open
        cur = c.execute("SELECT k FROM g ORDER BY k")
        cur.fetchone()
        d = lib.connect(":memory:")
        d.execute("CREATE VIRTUAL TABLE g USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        d.execute("INSERT INTO g VALUES(1, 'd')")
        T.check(d.execute("SELECT * FROM g").fetchall() == [(1, "d")], "%s: a new connection's load" % mod)
        d.close()
        cur.fetchall()
        e = load_error(c)                       # no statement open now
        T.check(e is None, "%s: a third load" % mod, e)
        c.execute("CREATE VIRTUAL TABLE h USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        c.execute("INSERT INTO h SELECT * FROM g")
        T.check(c.execute("SELECT count(*), sum(v) FROM h").fetchone() == (100, sum(i * i for i in range(100))),
                "%s: the tables work after loading again" % mod)
        T.check(c.execute("SELECT gpuds_check('h')").fetchone()[0] == "ok", "%s: gpuds_check" % mod)
        info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
        T.check(len(info["tables"]) == 2, "%s: gpuds_info sees both tables" % mod, info["tables"])
        c.close()


def case_many_connections():
    """Connections opened, loaded and closed in turn (the allocator hands a
    new connection a closed one's address): each one has the modules."""
    bad = []
    for i in range(200):
        c = lib.connect(":memory:")
        try:
            c.execute("CREATE VIRTUAL TABLE g USING gpuhash(k INTEGER PRIMARY KEY, v)")
            c.execute("INSERT INTO g VALUES(1, 2)")
        except sqlite3.Error as ex:
            bad.append((i, str(ex)))
        c.close()
    T.check(not bad, "200 connections in turn each load gpuds", bad[:3])


def main():
    if not lib.EXT:
        print("GPUDS_EXT not set: skipped")
        return 77
    case_load_twice()
    case_many_connections()
    case_refused_keeps_settings()
    case_settings()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
