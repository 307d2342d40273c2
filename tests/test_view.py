#!/usr/bin/python3
"""gpuds_view: aggregates and GROUP BY computed on a table's column set,
differential against SQLite's own evaluation of the same SELECT over an
ordinary table with the same rows.

For each seed: a UTF-8, UTF-16le or UTF-16be database (a third each) with a
gfsl or gpuhash table t and an ordinary table o of the same columns (every
affinity), filled with values of mixed types (NULLs; 1, 1.0 and '1';
integers near the int64 limits, so that sums overflow; text sharing
prefixes; numeric-looking text; blobs; non-ASCII).  Random SELECTs (GROUP BY
zero to three of a column, column / N, column % N, named by expression,
alias or number; count(*), count, count(DISTINCT), sum, total, avg, min, max
of any column; bare columns; WHERE terms of every operator against literals
and named parameters, either side) are made into views and read, their
parameters bound by table-valued-function arguments or by "WHERE p = ?";
every answer must equal SQLite's on o: the same rows (as multisets), values
of the same type, REALs within a relative 1e-12 (plus the error bound of
SQLite's own uncompensated sum: its rounding is not ours), the same error
("integer overflow").  Between queries random writes change both tables,
in transactions that are committed, rolled back (also to savepoints), or
left open while views are read (uncommitted rows).  Some seeds run with a
small GPUDS_FLUSH_ROWS (write buffer flushed into the store mid-transaction)
and some read the view inside the open transaction after thousands of
writes (the column set's skipped keys).

The backend is whatever gpuds picks: the CUDA column set where a GPU is
present, the host one otherwise.

Usage: GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_view.py [--seeds N] [--seed S] [--queries Q]
(longer runs: GPUDS_VIEW_SEEDS=200 GPUDS_VIEW_QUERIES=100; GPUDS_VIEW_SEED=first seed)
"""
import json
import math
import os
import random
import sqlite3
import struct
import sys
import subprocess
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpuds_testlib import Tally, EXT, lit  # noqa: E402

COLS = [("v", "INTEGER"), ("r", "REAL"), ("n", "NUMERIC"), ("s", "TEXT"),
        ("u", ""), ("b", "BLOB")]
ENCODINGS = ("UTF-8", "UTF-16le", "UTF-16be")

BIG = [2**63 - 1, -2**63, 2**62, -2**62, 2**63 - 2, 4611686018427387905]
SMALLINT = list(range(-5, 13)) + [100, 1000, 4242]
# reals with few significant bits: their sums are exact in any order, so
# SQLite's uncompensated sum and ours agree to the last bit
REALS = [0.0, -0.0, 0.5, 1.0, 1.5, 2.0, -7.25, 12.0, 12.5, 99.0, 99.5, 3.0,
         -3.0, 1024.125, 7.0, -0.5]
TEXTS = ["", "a", "ab", "abc", "abcd", "abcde", "abcdf", "abd", "1", "12",
         "12.0", " 12 ", "1e2", "1.5e3", "12abc", "-7.25", "sensor-001",
         "sensor-002", "sensor-010", "sensor-1", "zz", "Abc", "\u00e9t\u00e9",
         "\u00e9ta", "\U0001f600x", "\U0001f600", "a\u0000b", "0x10", "+3", " "]
# (a NUL cannot be in the SQL text: constants of it are parameters)
BLOBS = [b"", b"\x00", b"ab", b"abc", b"\xff", b"12", b"1"]
PATHS = {}      # gpuds_info()'s "where" of each view read: how many


def rnd_value(rng, aff):
    """A random value for a column of affinity aff (before affinity)."""
    x = rng.random()
    if x < 0.08:
        return None
    if aff == "INTEGER":
        if x < 0.12:
            return rng.choice(BIG)
        if x < 0.2:
            return rng.choice(REALS)
        if x < 0.25:
            return rng.choice(TEXTS)
        return rng.choice(SMALLINT)
    if aff == "REAL":
        if x < 0.15:
            return rng.choice(SMALLINT)
        if x < 0.2:
            return rng.choice(TEXTS)
        return rng.choice(REALS)
    if aff == "TEXT":
        if x < 0.15:
            return rng.choice(SMALLINT + REALS)
        if x < 0.2:
            return rng.choice(BLOBS)
        return rng.choice(TEXTS)
    # NUMERIC, BLOB and none: anything
    if x < 0.35:
        return rng.choice(SMALLINT)
    if x < 0.45:
        return rng.choice(REALS)
    if x < 0.5:
        return rng.choice(BIG) if aff != "NUMERIC" else rng.choice(SMALLINT)
    if x < 0.85:
        return rng.choice(TEXTS)
    return rng.choice(BLOBS)


def rnd_const(rng):
    """A constant of any type, often one the data holds."""
    x = rng.random()
    if x < 0.05:
        return None
    if x < 0.35:
        return rng.choice(SMALLINT + [2**62, -2**63])
    if x < 0.55:
        return rng.choice(REALS + [0.1, 5.5])
    if x < 0.9:
        return rng.choice(TEXTS)
    return rng.choice(BLOBS)


class Query:
    """A random SELECT of the supported subset, with its parameters."""
    def __init__(self, rng, tab):
        self.params = {}
        cols = ["k"] + [c for c, _ in COLS]
        nkey = rng.choice([0, 0, 1, 1, 1, 2, 2, 3])
        keys = []
        for _ in range(nkey):
            c = rng.choice(cols)
            x = rng.random()
            if x < 0.55:
                e = c
            else:
                n = rng.choice([2, 3, 7, 10, 100, -3, 1, -1, 0])
                e = "%s %s %d" % (c, "/" if x < 0.75 else "%", n)
            if e not in keys:
                keys.append(e)
        results = []
        aliases = {}
        for i, e in enumerate(keys):
            if rng.random() < 0.3:
                a = "g%d" % i
                aliases[e] = a
                results.append("%s AS %s" % (e, a))
            elif rng.random() < 0.9:
                results.append(e)
        naggs = rng.choice([1, 1, 2, 2, 3, 4])
        for _ in range(naggs):
            f = rng.choice(["count(*)", "count", "countd", "sum", "total", "avg",
                            "min", "max", "min", "max", "sum"])
            c = rng.choice(cols)
            if f == "count(*)":
                a = "count(*)"
            elif f == "countd":
                a = "count(DISTINCT %s)" % c
            else:
                a = "%s(%s)" % (f, c)
            if rng.random() < 0.2:
                a += " AS a%d" % len(results)
            results.append(a)
        if rng.random() < 0.1:
            results.append(rng.choice(cols))          # a bare column
        rng.shuffle(results)
        self.select = "SELECT %s FROM %s" % (", ".join(results), tab)
        terms = []
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            terms.append(self.term(rng, cols))
        if terms:
            self.select += " WHERE " + " AND ".join(terms)
        if keys:
            gb = []
            for e in keys:
                if e in aliases and rng.random() < 0.5:
                    gb.append(aliases[e])
                else:
                    gb.append(e)
            for i, e in enumerate(keys):
                # by number where the key is a result as it is written
                if e in results and rng.random() < 0.2:
                    gb[i] = str(results.index(e) + 1)
            self.select += " GROUP BY " + ", ".join(gb)

    def param(self, rng):
        name = "p%d" % len(self.params)
        self.params[name] = rnd_const(rng)
        return rng.choice([":", "@", "$"]) + name

    def operand(self, rng):
        v = rnd_const(rng)
        if rng.random() < 0.3 or (isinstance(v, str) and "\x00" in v):
            name = "p%d" % len(self.params)
            self.params[name] = v
            return rng.choice([":", "@", "$"]) + name
        return lit(v)

    def term(self, rng, cols):
        c = rng.choice(cols)
        op = rng.choice(["=", "==", "!=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT",
                         "IS NULL", "IS NOT NULL", "BETWEEN", "IN", "<", ">="])
        if op in ("IS NULL", "IS NOT NULL"):
            return "%s %s" % (c, op)
        if op == "BETWEEN":
            return "%s BETWEEN %s AND %s" % (c, self.operand(rng), self.operand(rng))
        if op == "IN":
            return "%s IN (%s)" % (c, ", ".join(self.operand(rng)
                                                for _ in range(rng.choice([1, 2, 3, 5]))))
        if rng.random() < 0.2 and op not in ("IS", "IS NOT"):
            flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
            return "%s %s %s" % (self.operand(rng), flip.get(op, op), c)
        return "%s %s %s" % (c, op, self.operand(rng))


def typed(v):
    if v is None:
        return (0, 0)
    if isinstance(v, int):
        return (1, v)
    if isinstance(v, float):
        return (2, v)
    if isinstance(v, str):
        return (3, v)
    return (4, bytes(v))


def rows_key(row):
    return tuple((t, repr(x)) for t, x in (typed(v) for v in row))


def cell_same(a, b, tol):
    ta, tb = typed(a), typed(b)
    if ta[0] != tb[0]:
        return False
    if ta[0] != 2:
        return ta[1] == tb[1]
    x, y = ta[1], tb[1]
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= 1e-12 * max(abs(x), abs(y)) + tol


def rows_same(a, b, tol):
    """Multisets of rows equal, reals within tolerance: rows bucketed by
    their cells but the reals, matched greedily within a bucket."""
    if len(a) != len(b):
        return False

    def coarse(row):
        return tuple((t, repr(x) if t != 2 else "") for t, x in (typed(v) for v in row))
    buckets = {}
    for r in b:
        buckets.setdefault(coarse(r), []).append(r)
    for r in a:
        cand = buckets.get(coarse(r))
        if not cand:
            return False
        for i, rb in enumerate(cand):
            if all(cell_same(x, y, tol) for x, y in zip(r, rb)):
                del cand[i]
                break
        else:
            return False
    return True


def run(con, sql, params=()):
    try:
        return ("ok", con.execute(sql, params).fetchall())
    except sqlite3.Error as e:
        return ("error", str(e))


def one_seed(seed, tally, nquery, verbose=False):
    rng = random.Random(seed)
    enc = ENCODINGS[seed % 3]
    module = "gfsl" if seed % 2 == 0 else "gpuhash"
    d = tempfile.mkdtemp(prefix="gpuds_view_")
    path = os.path.join(d, "db")
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.execute("PRAGMA encoding='%s'" % enc)
    decl = ", ".join("%s %s" % (c, t) for c, t in COLS)
    con.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, %s)" % (module, decl))
    con.execute("CREATE TABLE o(k INTEGER PRIMARY KEY, %s)" % decl)
    nrow = 70000 if seed % 10 == 7 else rng.choice([0, 5, 60, 400, 1500, 3000])
    keys = rng.sample(range(-50, max(20000, 2 * nrow)), nrow)

    def rnd_row(k):
        return (k,) + tuple(rnd_value(rng, t) for _, t in COLS)
    rows = [rnd_row(k) for k in keys]
    con.execute("BEGIN")
    con.executemany("INSERT INTO t VALUES(?,?,?,?,?,?,?)", rows)
    con.executemany("INSERT INTO o VALUES(?,?,?,?,?,?,?)", rows)
    con.execute("COMMIT")
    # a bound on any group's sum of magnitudes, per column: SQLite's own
    # uncompensated sums may be off by n * 2^-52 of it
    def col_tol():
        tol = 0.0
        for c, _ in COLS + [("k", "")]:
            m, n = con.execute("SELECT total(abs(CAST(%s AS REAL))), count(*) FROM o" % c).fetchone()
            try:
                tol = max(tol, (m or 0.0) * (n + 1) * 2.0**-52)
            except OverflowError:
                tol = float("inf")
        return tol
    tol = col_tol()
    in_txn = False
    for qi in range(nquery):
        # writes between queries
        x = rng.random()
        if x < 0.35:
            if not in_txn:
                con.execute("BEGIN")
                in_txn = True
            con.execute("SAVEPOINT sp")
            nw = rng.choice([1, 3, 20, 200])
            for _ in range(nw):
                y = rng.random()
                if y < 0.4:
                    r = rnd_row(rng.randrange(-50, 20000))
                    con.execute("INSERT OR REPLACE INTO t VALUES(?,?,?,?,?,?,?)", r)
                    con.execute("INSERT OR REPLACE INTO o VALUES(?,?,?,?,?,?,?)", r)
                elif y < 0.7:
                    k = rng.randrange(-50, 20000)
                    c, t = rng.choice(COLS)
                    v = rnd_value(rng, t)
                    con.execute("UPDATE t SET %s=? WHERE k=?" % c, (v, k))
                    con.execute("UPDATE o SET %s=? WHERE k=?" % c, (v, k))
                else:
                    k = rng.randrange(-50, 20000)
                    con.execute("DELETE FROM t WHERE k=?", (k,))
                    con.execute("DELETE FROM o WHERE k=?", (k,))
            if rng.random() < 0.3:
                con.execute("ROLLBACK TO sp")
            con.execute("RELEASE sp")
            z = rng.random()
            if z < 0.4:
                con.execute("COMMIT")
                in_txn = False
            elif z < 0.6:
                con.execute("ROLLBACK")
                in_txn = False
            tol = col_tol()
        q = Query(rng, "t")
        sql_t = q.select
        sql_o = q.select.replace(" FROM t", " FROM o", 1)
        con.execute("DROP TABLE IF EXISTS temp.v")
        try:
            con.execute("CREATE VIRTUAL TABLE temp.v USING gpuds_view(%s)" % sql_t)
        except sqlite3.Error as e:
            tally.check(False, "seed %d: CREATE of a supported SELECT" % seed, "%s: %s" % (sql_t, e))
            continue
        # the view's parameters: positional arguments or WHERE p = ?
        pnames = list(q.params.keys())
        vals = [q.params[p] for p in pnames]
        if pnames and rng.random() < 0.5:
            got = run(con, "SELECT * FROM v(%s)" % ", ".join("?" for _ in pnames), vals)
        elif pnames:
            got = run(con, "SELECT * FROM v WHERE " + " AND ".join("%s = ?" % p for p in pnames), vals)
        else:
            got = run(con, "SELECT * FROM v")
        want = run(con, sql_o, q.params)
        if want[0] == "error" or got[0] == "error":
            ok = want[0] == got[0] and ("integer overflow" in want[1]) == ("integer overflow" in got[1])
            tally.check(ok, "seed %d query %d: errors" % (seed, qi),
                        "%s\n params %r\n view %r\n sqlite %r" % (sql_t, q.params, got, want))
            continue
        # the view's rows carry its parameters' hidden columns only if asked
        ok = rows_same(got[1], want[1], tol)
        if not ok:
            ka = set(map(rows_key, got[1]))
            kb = set(map(rows_key, want[1]))
            only_v = [r for r in got[1] if rows_key(r) not in kb][:6]
            only_s = [r for r in want[1] if rows_key(r) not in ka][:6]
        tally.check(ok, "seed %d (%s %s) query %d" % (seed, module, enc, qi),
                    "%s\n params %r\n %d rows, sqlite %d\n only in view   %r\n only in sqlite %r"
                    % (sql_t, q.params, len(got[1]), len(want[1]), only_v, only_s) if not ok else "")
        where = con.execute("SELECT value FROM json_each(gpuds_info(), '$.views') "
                            "WHERE json_extract(value, '$.name') = 'temp.v'").fetchone()
        where = json.loads(where[0])["last"]["where"] if where else "?"
        PATHS[where] = PATHS.get(where, 0) + 1
        if verbose:
            print(sql_t, len(got[1]), where)
    if in_txn:
        con.execute("ROLLBACK")
    con.close()
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT not set")
        return 77
    if "GPUDS_FLUSH_ROWS" not in os.environ:
        # children: the default write buffer, then one flushed into the store
        # every 7 keys (mid-transaction) with a host mirror over host stores
        rc = 0
        for flush, mirror, seeds in (("1048576", None, None), ("7", "1", "5")):
            env = dict(os.environ, GPUDS_FLUSH_ROWS=flush)
            if mirror:
                env["GPUDS_MIRROR"] = mirror
            if seeds and "GPUDS_VIEW_SEEDS" not in os.environ:
                env["GPUDS_VIEW_SEEDS"] = seeds
                env["GPUDS_VIEW_SEED"] = "101"
            print("== GPUDS_FLUSH_ROWS=%s GPUDS_MIRROR=%s" % (flush, mirror or "default"), flush=True)
            r = subprocess.call([sys.executable, __file__] + sys.argv[1:], env=env)
            rc = rc or r
        return rc
    args = sys.argv[1:]
    nseed = int(os.environ.get("GPUDS_VIEW_SEEDS", "16"))
    nquery = int(os.environ.get("GPUDS_VIEW_QUERIES", "60"))
    seeds = None
    verbose = False
    i = 0
    while i < len(args):
        if args[i] == "--seeds":
            nseed = int(args[i + 1]); i += 2
        elif args[i] == "--seed":
            seeds = [int(args[i + 1])]; i += 2
        elif args[i] == "--queries":
            nquery = int(args[i + 1]); i += 2
        elif args[i] == "-v":
            verbose = True; i += 1
        else:
            print("unknown argument", args[i]); return 2
    tally = Tally()
    base = int(os.environ.get("GPUDS_VIEW_SEED", "1"))
    for seed in (seeds or range(base, base + nseed)):
        one_seed(seed, tally, nquery, verbose)
    print("paths: " + ", ".join("%s %d" % kv for kv in sorted(PATHS.items())))
    if nseed * nquery >= 300 and not seeds:
        # a selective equality takes the set's rows; others its aggregation
        tally.check(sum(n for w, n in PATHS.items() if w.endswith(" index")) > 0
                    and sum(n for w, n in PATHS.items() if w in ("host", "cuda")) > 0,
                    "both the index path and the aggregation ran", PATHS)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
