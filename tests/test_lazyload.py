#!/usr/bin/python3
"""Reopen without a full load first: the first use of a table
after opening starts a background build of its store (ext/bgload.c) and
key lookups (=, IN, short gpuhash ranges) are answered from the runs on
disk (ext/diskread.c) until a statement needs the store.

GPUDS_LAZY_LOAD=hold (set here) makes it deterministic: the build takes
its snapshot, then waits until a statement needs the store, so every
lookup before that is certainly answered from disk; gpuds_info() says
"load":"background" meanwhile, which is checked.

Differential throughout: a gfsl table g and a gpuhash table h get the same
statements as an ordinary table r, over several committed transactions
(several runs: newest wins, deletions in newer runs hide older rows,
updates, spilled records under a low length limit).

Sections
  1 lookups before the build   points (present, updated, deleted, absent,
                               spilled, INT64 extremes), IN lists, short
                               gpuhash ranges, DESC; the build still held
  2 the store then             ranges, scans, gpuds_check: the build is
                               installed by the first statement needing it
  3 commits meanwhile          (WAL) another connection commits while the
                               build holds an older snapshot: lookups see
                               the commit at once; the stale build is
                               dropped and the table loaded again
  4 writes                     a write (autocommit and in a transaction with
                               lookups before it) waits for the build
  5 damage                     a damaged chunk: a lookup that reads it fails
                               with SQLITE_CORRUPT, one that does not is
                               right; the failed build is reported by the
                               next statement needing the store, and again
                               after; a deleted chunk (entries != t_meta)
  7 writers                    writers never wait for a build: with the
                               builds held, another connection with no busy
                               timeout commits to g, h and r, and this one
                               (no busy timeout either) to another table;
                               lookups see the commit, the stale builds are
                               dropped; with builds running (=always),
                               another connection's commits never get
                               SQLITE_BUSY; unset, the first lookup is
                               answered from disk in both journal modes
                               (a rollback-journal database's build reads
                               without locks)
  6 lifecycle                  close and DROP TABLE while a build is held;
                               :memory: loads at once; GPUDS_LAZY_LOAD=off
                               loads at once (a subprocess)
Column sets: a build makes the table's column set with its
store, so the first column query after opening finds it (section 2: built
once, before any column query, and not built again); column queries are
compared with r after the builds (2), after another connection's commit
(3: the stale build and its set dropped) and after writes (4);
GPUDS_COLUMNS_ON_LOAD=1 (set here, so that the host backend builds its set
too) builds it; =0 builds none, unset builds the GPU's only (6, subprocesses).
Also run with GPUDS_MIRROR=1 (ctest test_lazyload_mirror): h then has its
ordered host mirror and plans ranges as g does, but a short range while its
build is held must still be answered from disk (section 1's "background").
The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

if os.environ.get("GPUDS_LAZY_LOAD") is None:
    os.environ["GPUDS_LAZY_LOAD"] = "hold"
if os.environ.get("GPUDS_COLUMNS_ON_LOAD") is None:
    os.environ["GPUDS_COLUMNS_ON_LOAD"] = "1"   # the host column set too
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpuds_testlib import EXT, Tally, connect, uses_column_set  # noqa: E402

T = Tally()
BIG = 3000                     # length limit while writing: bigger rows spill
TABS = ("g", "h")


def tinfo(c, field):
    """{table: gpuds_info's field} of connection c."""
    info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
    return {t["name"].split(".")[-1]: t[field] for t in info["tables"]}


def loads(c):
    return tinfo(c, "load")


def build(path, journal):
    """g, h and r with the same rows, written in several transactions."""
    for s in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + s):
            os.remove(path + s)
    c = connect(path)
    c.execute("PRAGMA journal_mode=%s" % journal)
    c.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, v, w)")
    c.execute("CREATE VIRTUAL TABLE h USING gpuhash(k INTEGER PRIMARY KEY, v, w)")
    c.execute("CREATE TABLE r(k INTEGER PRIMARY KEY, v, w)")
    rnd = random.Random(13)

    def each(sql, rows):
        for t in TABS + ("r",):
            c.executemany(sql % t, rows)

    c.execute("BEGIN")           # run 1: 150k rows, several chunks
    each("INSERT INTO %s VALUES(?, ?, ?)",
         [(k, k * 3, "w%d" % k) for k in range(-60000, 240000, 2)])
    each("INSERT INTO %s VALUES(?, ?, ?)",
         [(-(2**63), "min", None), (2**63 - 1, "max", 1.5)])
    c.execute("COMMIT")
    c.execute("BEGIN")           # a smaller run: updates, deletes, new keys
    each("UPDATE %s SET v = ?, w = ? WHERE k = ?",
         [(rnd.random(), None, k) for k in range(0, 240000, 14)])
    each("DELETE FROM %s WHERE k = ?", [(k,) for k in range(-60000, 240000, 22)])
    each("INSERT INTO %s VALUES(?, ?, NULL)", [(k, "new%d" % k) for k in range(1, 3001, 2)])
    c.execute("COMMIT")
    c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, BIG)
    for i in range(3):           # small newest runs: spilled rows, deletions
        c.execute("BEGIN")
        each("INSERT OR REPLACE INTO %s VALUES(?, ?, zeroblob(?))",
             [(k, "big", BIG - 50 - 10 * i) for k in range(5000 + i, 5010, 3)])
        each("DELETE FROM %s WHERE k = ?", [(k,) for k in range(100 + i, 200, 7)])
        each("UPDATE %s SET w = ? WHERE k = ?", [(i, k) for k in range(1001, 1100, 4)])
        c.execute("COMMIT")
    runs = c.execute("SELECT count(DISTINCT id>>20) FROM g_run").fetchone()[0]
    T.check(runs >= 3, "several runs in g_run", runs)
    ovfl = c.execute("SELECT count(*) FROM g_ovfl").fetchone()[0]
    T.check(ovfl > 0, "spilled records in g_ovfl", ovfl)
    c.close()


def probe_keys(rnd, n):
    ks = [-(2**63), 2**63 - 1, 0, 1, 2, 14, 22, 5000, 5003, 5006, 5009, 101, 107,
          1001, 1005, 239998, 240000, -60000, -59998, 3001, 3000]
    ks += [rnd.randrange(-61000, 241000) for _ in range(n)]
    return ks


def same(c, sql, args, what):
    """sql on g and h (as %s) gives what it gives on r."""
    want = c.execute(sql % "r", args).fetchall()
    for t in TABS:
        got = c.execute(sql % t, args).fetchall()
        if not T.check(got == want, what + " " + t, "%s %s: %r != %r" % (sql % t, args, got[:5], want[:5])):
            return


def lookups(c, rnd, n=300):
    """Points, IN lists, short hash ranges, compared with r."""
    for k in probe_keys(rnd, n):
        same(c, "SELECT k, v, typeof(v), w, typeof(w) FROM %s WHERE k = ?", (k,), "point")
    for _ in range(30):
        ks = probe_keys(rnd, 20)
        rnd.shuffle(ks)
        q = ",".join("?" * len(ks))
        same(c, "SELECT k, v, w FROM %%s WHERE k IN (%s) ORDER BY k" % q, ks, "IN")
        same(c, "SELECT k, v, w FROM %%s WHERE k IN (%s) ORDER BY k DESC" % q, ks, "IN desc")
    for _ in range(20):
        a = rnd.randrange(-61000, 241000)
        want = c.execute("SELECT k, v, w FROM r WHERE k BETWEEN ? AND ? ORDER BY k", (a, a + 20)).fetchall()
        got = c.execute("SELECT k, v, w FROM h WHERE k BETWEEN ? AND ? ORDER BY k", (a, a + 20)).fetchall()
        T.check(got == want, "short hash range", (a, got[:3], want[:3]))


def colsets(c):
    return tinfo(c, "column_set")


COLQ = (("SELECT k, v, w FROM %s WHERE w = ? ORDER BY k", ("w1000",)),
        ("SELECT k, v, w FROM %s WHERE w = ? ORDER BY k", ("x",)),
        ("SELECT k, v, typeof(v) FROM %s WHERE v > ? AND v < ? ORDER BY k", (3000, 3600)),
        ("SELECT k, v FROM %s WHERE v >= ? AND v < ? ORDER BY k", ("new1", "new3")),
        ("SELECT count(*), sum(k) FROM %s WHERE w IS NULL", ()),
        ("SELECT k, w FROM %s WHERE v = ? ORDER BY k", ("w1",)),
        ("SELECT k, w FROM %s WHERE v = ? ORDER BY k", ("changed",)))


def columns(c, what):
    """Filters on non-key columns, on g and h as on r; g's first one is a
    column plan."""
    eqp = " ".join(str(r[-1]) for r in c.execute("EXPLAIN QUERY PLAN " + COLQ[0][0] % "g", COLQ[0][1]))
    T.check(uses_column_set(eqp), what + ": a column plan", eqp)
    for sql, args in COLQ:
        same(c, sql, args, what + ": column filter")


def everything(c, what):
    want = c.execute("SELECT k, v, typeof(v), w, typeof(w) FROM r ORDER BY k").fetchall()
    for t in TABS:
        got = c.execute("SELECT k, v, typeof(v), w, typeof(w) FROM %s ORDER BY k" % t).fetchall()
        T.check(got == want, what + ": all rows of " + t, (len(got), len(want)))
        T.check(c.execute("SELECT gpuds_check(?)", (t,)).fetchone()[0] == "ok", what + ": gpuds_check " + t)


def section1_2(path):
    c = connect(path)
    rnd = random.Random(1)
    lookups(c, rnd)
    T.check(loads(c) == {"g": "background", "h": "background"},
            "lookups were answered with the builds held", loads(c))
    # ranges on g need the store: g's build is installed, h's still held
    same(c, "SELECT k, v, w FROM %s WHERE k BETWEEN 990 AND 1200 ORDER BY k", (), "range")
    st = loads(c)
    T.check(st == {"g": "loaded", "h": "background"},
            "a range installs g's build; h's short range is lookups", st)
    same(c, "SELECT k, v, w FROM %s WHERE k BETWEEN -100000 AND 300000 ORDER BY k", (), "long range")
    T.check(loads(c) == {"g": "loaded", "h": "loaded"}, "a long range installs h's build", loads(c))
    cs = colsets(c)
    n = c.execute("SELECT count(*) FROM r").fetchone()[0]
    T.check(all(cs[t]["built"] and cs[t]["builds"] == 1 and cs[t]["rows"] == n for t in TABS),
            "the builds made the column sets with the stores", cs)
    columns(c, "after the builds")
    cs = colsets(c)
    T.check(all(cs[t]["builds"] == 1 and cs[t]["queries"] > 0 for t in TABS),
            "column queries used the sets the builds made", cs)
    lookups(c, rnd, 100)
    everything(c, "after the builds")
    c.close()


def section3(path):
    c = connect(path)
    rnd = random.Random(3)
    same(c, "SELECT k, v, w FROM %s WHERE k = ?", (22,), "point before the commit")
    T.check(loads(c) == {"g": "background", "h": "background"}, "held", loads(c))
    o = connect(path)
    o.execute("BEGIN")
    for t in TABS + ("r",):
        o.execute("INSERT OR REPLACE INTO %s VALUES(22, 'again', 'x')" % t)
        o.execute("UPDATE %s SET v = 'changed' WHERE k = 14" % t)
        o.execute("DELETE FROM %s WHERE k = 16" % t)
        o.execute("INSERT INTO %s VALUES(7777777, 'far', NULL)" % t)
    o.execute("COMMIT")
    o.close()
    for k in (22, 14, 16, 7777777, 18):
        same(c, "SELECT k, v, w FROM %s WHERE k = ?", (k,), "point after another connection's commit")
    lookups(c, rnd, 100)
    T.check(loads(c) == {"g": "background", "h": "background"}, "still held after the commit", loads(c))
    everything(c, "stale build dropped, loaded again")
    columns(c, "after another connection's commit")
    c.close()


def section4(path):
    c = connect(path)
    same(c, "SELECT k, v FROM %s WHERE k = ?", (24,), "point before a write")
    for t in TABS + ("r",):
        c.execute("UPDATE %s SET v = 'w1' WHERE k = 24" % t)
    T.check(loads(c).get("g") == "loaded", "a write waits for the build", loads(c))
    same(c, "SELECT k, v FROM %s WHERE k = ?", (24,), "point after a write")
    c.close()
    c = connect(path)
    c.execute("BEGIN")
    same(c, "SELECT k, v FROM %s WHERE k IN (24, 26, 28)", (), "IN inside a transaction")
    T.check(loads(c).get("h") == "background", "held inside a read transaction", loads(c))
    for t in TABS + ("r",):
        c.execute("INSERT OR IGNORE INTO %s VALUES(26, 'dup', 0)" % t)
        c.execute("INSERT OR REPLACE INTO %s VALUES(28, 'txn', 1)" % t)
        c.execute("DELETE FROM %s WHERE k = 30" % t)
    same(c, "SELECT k, v, w FROM %s WHERE k BETWEEN 20 AND 40 ORDER BY k", (), "read own writes")
    columns(c, "inside a transaction with writes")
    c.execute("COMMIT")
    everything(c, "after writes")
    columns(c, "after writes")
    c.close()


def damage(path, table, which):
    """Flip a byte in the middle of the vals of chunk `which` (a SQL
    expression over g_run) of table's run table."""
    raw = sqlite3.connect(path, isolation_level=None)
    i, v = raw.execute("SELECT id, vals FROM %s_run WHERE id = (%s)" % (table, which)).fetchone()
    b = bytearray(v)
    b[len(b) // 2] ^= 0x40
    raw.execute("UPDATE %s_run SET vals = ? WHERE id = ?" % table, (bytes(b), i))
    raw.close()
    return i


def first_key(path, table, rowid):
    """The keys of chunk rowid of table (format 4), decoded."""
    raw = sqlite3.connect(path)
    kb = raw.execute("SELECT keys FROM %s_run WHERE id = ?" % table, (rowid,)).fetchone()[0]
    raw.close()
    u, s, off = 0, 0, 0
    ks = []
    prev = None
    while off < len(kb):
        u = 0
        for j in range(9):
            byte = kb[off]
            off += 1
            if j == 8:
                u = (u << 8) | byte
                break
            u = (u << 7) | (byte & 0x7f)
            if byte < 0x80:
                break
        if prev is None:
            prev = (u >> 1) ^ -(u & 1)
        else:
            prev += u
        ks.append(prev)
    return ks


def expect_error(c, sql, args, what):
    try:
        rows = c.execute(sql, args).fetchall()
        T.check(False, what + ": an error", "got %r" % rows[:3])
    except sqlite3.DatabaseError as e:
        T.check("damaged" in str(e) or "malformed" in str(e), what + ": says damaged", str(e))


def section5(path, tmp):
    d = os.path.join(tmp, "damaged.db")
    for s in ("", "-wal", "-shm"):
        if os.path.exists(path + s):
            shutil.copy(path + s, d + s)
    # damage the oldest run's first chunk of g: keys there that newer runs
    # do not hold need it; keys of newer runs do not
    rowid = damage(d, "g", "SELECT min(id) FROM g_run")
    ks = first_key(d, "g", rowid)
    c = connect(d)
    expect_error(c, "SELECT v FROM g WHERE k = ?", (ks[10],), "lookup in the damaged chunk")
    same(c, "SELECT k, v, w FROM %s WHERE k = ?", (5003,), "lookup answered by a newer run")
    T.check(loads(c).get("g") == "background", "g still held", loads(c))
    expect_error(c, "SELECT count(*) FROM g", (), "the failed build, next statement needing the store")
    expect_error(c, "SELECT count(*) FROM g", (), "and the one after")
    expect_error(c, "SELECT gpuds_check('g')", (), "gpuds_check")
    got = c.execute("SELECT count(*) FROM h").fetchone()[0]
    T.check(got == c.execute("SELECT count(*) FROM r").fetchone()[0], "h undamaged", got)
    c.close()
    # a deleted chunk: entries no longer add up to t_meta's
    for s in ("", "-wal", "-shm"):
        if os.path.exists(d + s):
            os.remove(d + s)
        if os.path.exists(path + s):
            shutil.copy(path + s, d + s)
    raw = sqlite3.connect(d, isolation_level=None)
    raw.execute("DELETE FROM h_run WHERE id = (SELECT min(id) FROM h_run)")
    raw.close()
    c = connect(d)
    expect_error(c, "SELECT v FROM h WHERE k = ?", (5003,), "lookup with a chunk deleted")
    expect_error(c, "SELECT count(*) FROM h", (), "scan with a chunk deleted")
    c.close()


WRITER = r'''
import json, os, sqlite3, sys, time
sys.path.insert(0, os.path.dirname(sys.argv[2]))
from gpuds_testlib import connect
c = connect(sys.argv[1], timeout=0)
t0 = time.time()
c.execute("SELECT v FROM g WHERE k = 40").fetchall()
first = time.time() - t0
load = [t["load"] for t in json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])["tables"]]
o = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
busy = []
for i in range(40):
    try:
        o.execute("INSERT INTO x VALUES(?)", (i,))
    except sqlite3.OperationalError as e:
        busy.append(str(e))
    time.sleep(0.002)
try:
    c.execute("INSERT INTO x VALUES(-1)")
except sqlite3.OperationalError as e:
    busy.append("this connection: " + str(e))
n = c.execute("SELECT count(*) FROM g").fetchone()[0]
print(json.dumps([load, busy, n, first]))
'''


def section7(path, journal):
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("CREATE TABLE IF NOT EXISTS x(a)")
    raw.close()
    c = connect(path, timeout=0)
    same(c, "SELECT k, v, w FROM %s WHERE k = ?", (40,), "point before the writers")
    T.check(loads(c) == {"g": "background", "h": "background"}, "held before the writers", loads(c))
    o = connect(path, timeout=0)
    err = []
    for sql in ["INSERT OR REPLACE INTO %s VALUES(42, 'writer', 1)" % t for t in TABS + ("r",)]:
        try:
            o.execute(sql)
        except sqlite3.OperationalError as e:
            err.append((sql, str(e)))
    try:
        c.execute("INSERT INTO x VALUES(1)")
    except sqlite3.OperationalError as e:
        err.append(("this connection", str(e)))
    T.check(not err, "no writer waits for the held builds", err)
    o.close()
    same(c, "SELECT k, v, w FROM %s WHERE k = ?", (42,), "a lookup sees the writer's commit")
    T.check(loads(c) == {"g": "background", "h": "background"}, "still held after the writers", loads(c))
    everything(c, "the stale builds dropped, loaded again")
    c.close()
    n = sqlite3.connect(path).execute("SELECT count(*) FROM r").fetchone()[0]
    for lazy in ("always", None):
        e = dict(os.environ)
        e.pop("GPUDS_LAZY_LOAD", None)
        if lazy:
            e["GPUDS_LAZY_LOAD"] = lazy
        out = subprocess.run([sys.executable, "-c", WRITER, path, os.path.abspath(__file__)],
                             capture_output=True, text=True, env=e)
        try:
            load, busy, got, first = json.loads(out.stdout)
        except ValueError:
            T.check(False, "writer child (%s)" % lazy, out.stdout + out.stderr)
            continue
        tag = "GPUDS_LAZY_LOAD=%s %s" % (lazy, journal)
        T.check(load == ["background"], tag + ": the first lookup is answered "
                "while the builds run", load)
        T.check(not busy, tag + ": no SQLITE_BUSY while the builds run", busy[:3])
        T.check(got == n, tag + ": then the table", (got, n))


def section6(path):
    c = connect(path)
    same(c, "SELECT v FROM %s WHERE k = ?", (40,), "point, then close with the builds held")
    t0 = time.time()
    c.close()
    T.check(time.time() - t0 < 5, "close does not wait for a held build", time.time() - t0)
    c = connect(path)
    same(c, "SELECT v FROM %s WHERE k = ?", (40,), "point, then DROP with the build held")
    c.execute("DROP TABLE h")
    left = c.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'h\\_%' ESCAPE '\\'").fetchone()[0]
    T.check(left == 0, "DROP with a held build leaves no shadow tables", left)
    c.close()
    m = connect(":memory:")
    m.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, v)")
    m.execute("INSERT INTO g VALUES(1, 2)")
    T.check(m.execute("SELECT v FROM g WHERE k = 1").fetchone() == (2,), ":memory: lookup")
    T.check(loads(m).get("g") == "loaded", ":memory: loads at once", loads(m))
    m.close()
    code = ("import sys, json; sys.path.insert(0, %r); from gpuds_testlib import connect;"
            "c = connect(%r); c.execute('SELECT v FROM g WHERE k = 40').fetchall();"
            "print(json.loads(c.execute('SELECT gpuds_info()').fetchone()[0])['tables'][0]['load'])"
            % (os.path.dirname(os.path.abspath(__file__)), path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, GPUDS_LAZY_LOAD="off"))
    T.check(out.stdout.strip() == "loaded", "GPUDS_LAZY_LOAD=off loads at once", out.stdout + out.stderr)
    code = ("import sys, json; sys.path.insert(0, %r); from gpuds_testlib import connect;"
            "c = connect(%r); c.execute('SELECT v FROM g WHERE k = 40').fetchall();"
            "c.execute('SELECT count(*) FROM g WHERE k BETWEEN 0 AND 99').fetchall();"
            "t = json.loads(c.execute('SELECT gpuds_info()').fetchone()[0])['tables'][0];"
            "print(t['load'], t['column_set']['built'], t['column_set']['builds'])"
            % (os.path.dirname(os.path.abspath(__file__)), path))
    onGpu = fresh_colsets(path)["g"]["backend"] != "host"
    for env, want in (("0", "loaded False 0"), ("1", "loaded True 1"),
                      (None, "loaded True 1" if onGpu else "loaded False 0")):
        e = dict(os.environ)
        e.pop("GPUDS_COLUMNS_ON_LOAD", None)
        if env is not None:
            e["GPUDS_COLUMNS_ON_LOAD"] = env
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)
        T.check(out.stdout.strip() == want, "GPUDS_COLUMNS_ON_LOAD=%s: %s" % (env, want),
                out.stdout + out.stderr)


def fresh_colsets(path):
    """colsets() of a fresh connection to path, after a lookup."""
    c = connect(path)
    c.execute("SELECT v FROM g WHERE k = 40").fetchall()
    r = colsets(c)
    c.close()
    return r


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    tmp = tempfile.mkdtemp(prefix="gpuds-lazy-")
    try:
        for journal in ("wal", "delete"):
            path = os.path.join(tmp, "t-%s.db" % journal)
            print("== journal_mode=%s" % journal, flush=True)
            build(path, journal)
            section1_2(path)
            if journal == "wal":
                section3(path)
            section4(path)
            section7(path, journal)
            section5(path, tmp)
            section6(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
