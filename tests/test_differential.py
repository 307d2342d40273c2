#!/usr/bin/python3
"""Randomized differential test: gfsl and gpuhash against an ordinary table.

The same random statement stream runs on three in-memory connections, each
holding a table named t with the same column declarations:

    gfsl     CREATE VIRTUAL TABLE t USING gfsl(k INTEGER PRIMARY KEY, a TEXT, ...)
    gpuhash  CREATE VIRTUAL TABLE t USING gpuhash(...)
    sqlite   CREATE TABLE t(...)                     <- the reference

Every statement's outcome is compared with the reference: rows (exactly when
the query orders by the unique key, as a multiset otherwise), changes(), and
for failures the primary error code and the message.  After every transaction
ends the full contents (typeof() of every column included) are compared.

Usage:
    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_differential.py
        [--seed N [--mode M] [--ops N] [--big N] [--txn-weight F] [--flush N]]
                                          replay one stream (a failure prints the
                                          exact command line)
        [--scale F]                       or env GPUDS_TEST_SCALE=F
        [--engines gfsl,gpuhash]          which virtual tables to test
        [--no-minimize]                   skip shrinking a failing stream
        [--self-test]                     engines are ordinary tables (one with
                                          PRAGMA reverse_unordered_selects): checks
                                          the generator itself is deterministic
Environment:
    GPUDS_EXT         path of gpuds.so (exit 77 = SKIPPED if absent)
    GPUDS_TEST_SCALE  multiply the number of operations (default 1)
    GPUDS_TEST_SEED   replay this seed (same as --seed)
    GPUDS_BACKEND     left as is if set; otherwise this test sets "host" so the
                      host backend is always covered (test_gpu_sql.py covers cuda)
    GPUDS_TEST_CHECK_EVERY=1  compare full contents after every write (slow)

Streams: fixed seeds over four key distributions (dense: -5..60, many
collisions; wide: the full 64-bit range; extreme: the range's edges; mixed),
some with a tiny write-buffer flush threshold (GPUDS_FLUSH_ROWS, so flushes
happen inside transactions before their rollbacks), two with big
transactions (20k-200k rows) rolled back or committed, plus one stream with
a time-based seed (printed; replay it with --seed).  A mismatch prints the
seed, the statement, both results, and a shrunken statement list that still
reproduces it.

Each stream runs in a child process, so a crash of the extension is reported
with the statements that led to it instead of killing the whole test.

File replacement (--replace, run after the streams): a database file holds
a gfsl table g, a gpuhash table h and an ordinary table r with the same
rows; two copies of it take different random commits (the same number, so
g and h are at the same generation in both, with other rows); each is then
put in place of a database a connection has loaded: ATTACHed under the
same schema name after a DETACH, copied onto it by the backup API (by the
connection itself and by another one), and given to sqlite3_deserialize
(twice, and back to the first image).  After each, g and h must read as r
does (every row, point lookups, a count, gpuds_check), through statements
prepared before the replacement too.
"""

import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import json
import re
import shutil

MIN = -9223372036854775808
MAX = 9223372036854775807
COLS = "k INTEGER PRIMARY KEY, a TEXT, b REAL, c BLOB, d"
# --schema notnull: constraint failures inside multi-row statements too
SCHEMAS = {"plain": COLS,
           "notnull": "k INTEGER PRIMARY KEY, a TEXT NOT NULL, b REAL, c BLOB, d"}
VTAB_ENGINES = ("gfsl", "gpuhash")
REF = "sqlite"
FULL = ("SELECT k, typeof(a), a, typeof(b), b, typeof(c), c, typeof(d), d "
        "FROM t ORDER BY k")

# Not used as a bound: -9223372036854775808.0 (the real -2^63).  An ordinary
# table's rowid lookup never matches it (SQLite will not convert that real to
# an integer) although k = -2^63 compares equal to it everywhere else, so
# the ordinary table contradicts itself (IN (SELECT ...) with both forms
# gives plan-dependent results).  test_errors.py reports what gpuds does.
EXTREMES = [MIN, MIN + 1, MIN + 2, -2, -1, 0, 1, 2, MAX - 2, MAX - 1, MAX]
# Bounds of every type and the edges of the 64-bit range.
ODD_BOUNDS = ["2.5", "-2.5", "'7'", "'abc'", "NULL", str(MIN), str(MAX),
              "'-3'", "7.0", "''", "x'01'", "1e19", "-1e19",
              "9223372036854775807.0", "-9.2e18",
              "'9223372036854775807'", "' 5'", "'5x'", "0.5", "-0.5",
              "9223372036854775806.5", "'1e1'", "x''", "-9223372036854775807"]
TEXTS = ["''", "'abc'", "'12'", "'3.5'", "' 4'", "'1e2'", "'0x1F'", "'-0'",
         "'h\u00e9llo \u2603'", "'it''s'", "'NULL'", "'9223372036854775808'",
         "'  '", "'\n'"]
BLOBS = ["x''", "x'00'", "x'deadbeef'", "x'3132'", "zeroblob(0)", "zeroblob(5)"]


# ---------------------------------------------------------------- literals
def lit_real(rng):
    r = rng.random()
    if r < 0.3:
        v = rng.uniform(-1e6, 1e6)
    elif r < 0.5:
        return "%d.0" % rng.randint(-1000, 1000)
    elif r < 0.6:
        return rng.choice(["1e300", "-1e300", "1.5e-300", "0.1", "1e18",
                           "9.2233720368547758e18", "4503599627370497.0",
                           "0.0"])
    else:
        v = rng.uniform(-100, 100)
    if v == 0.0:
        v = 0.25
    return repr(v)


def lit_value(rng):
    r = rng.random()
    if r < 0.12:
        return "NULL"
    if r < 0.32:
        return str(rng.randint(-1000, 1000))
    if r < 0.40:
        return str(rng.randint(MIN, MAX))
    if r < 0.44:
        return str(rng.choice(EXTREMES))
    if r < 0.62:
        return lit_real(rng)
    if r < 0.80:
        if rng.random() < 0.5:
            return "'%s'" % "".join(rng.choice("abcxyz0123 ") for _ in
                                     range(rng.randint(0, 12)))
        return rng.choice(TEXTS)
    if r < 0.83:
        return "replace(hex(zeroblob(%d)),'0','z')" % rng.randint(100, 600)
    return rng.choice(BLOBS) if rng.random() < 0.6 else \
        "x'%s'" % "".join(rng.choice("0123456789abcdef") for _ in
                          range(2 * rng.randint(0, 8)))


def lit_near_max(lit):
    """True if a key literal may name a key near INT64_MAX (then a NULL key
    in the same statement would make an ordinary table pick a random key)."""
    x = lit.strip("'").strip()
    try:
        return int(x) >= MAX - 1000
    except ValueError:
        pass
    try:
        return float(x) >= 9.2e18
    except ValueError:
        return False


def lit_bad_key(lit):
    """True unless the literal is a plain integer: such a key may raise a
    datatype mismatch.  Statements under OR IGNORE / OR REPLACE must not
    fail half way: an ordinary table keeps the rows done before the error
    (no statement journal under those conflict modes)."""
    try:
        int(lit)
        return False
    except ValueError:
        return lit != "NULL"


# --------------------------------------------------------------- generator
class Gen:
    """Produces a list of (sql, ordered) pairs, one operation at a time.

    ordered: True when the result order is defined (compared exactly),
    False when rows are compared as a multiset.

    Statements whose outcome depends on the order in which rows are visited
    are never generated (e.g. several rows moved onto one key under OR
    IGNORE, NULL keys assigned from a scan of t): for those an ordinary
    table and a virtual table may legitimately differ.
    """

    def __init__(self, rng, mode, ref, big_rows=0, txn_weight=1.0):
        self.rng = rng
        self.mode = mode
        self.ref = ref            # reference connection (read-only use)
        self.pool = [0, 1, 2]
        self.txn = False          # explicit BEGIN open
        self.sp = []              # savepoint stack
        self.spn = 0
        self.big_rows = big_rows
        self.big_left = 2 if big_rows else 0
        self.nops = 0
        self.opno = 0
        self.txn_weight = txn_weight

    # ---- keys
    def fresh_key(self):
        rng = self.rng
        m = self.mode
        if m == "mixed":
            m = rng.choice(["dense", "dense", "wide", "extreme"])
        if m == "dense":
            k = rng.randint(-5, 60)
        elif m == "wide":
            k = rng.randint(MIN, MAX)
        else:
            k = rng.choice(EXTREMES) + rng.choice([0, 0, 0, 1, -1, 3, -3])
            k = max(MIN, min(MAX, k))
        return k

    def remember(self, k):
        if len(self.pool) < 3000:
            self.pool.append(k)
        else:
            self.pool[self.rng.randrange(len(self.pool))] = k

    def key(self):
        """A key: mostly one seen before (hits), else a fresh one."""
        if self.rng.random() < 0.6:
            return self.rng.choice(self.pool)
        k = self.fresh_key()
        self.remember(k)
        return k

    def key_lit(self, allow_bad=True):
        """Key literal for a write: usually an integer, sometimes another
        type that an INTEGER PRIMARY KEY accepts or rejects."""
        rng = self.rng
        k = self.key()
        r = rng.random()
        if r < 0.86 or not allow_bad:
            return str(k)
        if r < 0.90:
            return "'%d'" % k
        if r < 0.93 and abs(k) < 2 ** 52:
            return "%d.0" % k
        return rng.choice(["'abc'", "2.5", "x'01'", "''", "'1e3'", "' 7'",
                           "'12abc'", "1e19", "9223372036854775807.0",
                           "'9223372036854775808'", "-0.0"])

    def bound(self):
        rng = self.rng
        if rng.random() < 0.25:
            return rng.choice(ODD_BOUNDS)
        k = rng.choice(self.pool) + rng.choice([0, 0, 0, 1, -1, 2, -7])
        k = max(MIN, min(MAX, k))
        if rng.random() < 0.1:
            return "'%d'" % k
        return str(k)

    def max_key(self):
        return self.ref.execute("SELECT max(k) FROM t").fetchone()[0]

    def null_key_ok(self, n=1):
        m = self.max_key()
        return m is None or m < MAX - n - 2

    # ---- predicates
    def in_list(self):
        rng = self.rng
        items = []
        for _ in range(rng.randint(0, 8)):
            x = rng.random()
            if x < 0.6:
                items.append(str(rng.choice(self.pool)))
            elif x < 0.8:
                items.append(str(self.fresh_key()))
            else:
                items.append(rng.choice(ODD_BOUNDS))
        if items and rng.random() < 0.4:
            items.append(rng.choice(items))   # duplicate
        if not items:
            return "()"
        return "(" + ", ".join(items) + ")"

    def keypred(self, indexable_only=False):
        rng = self.rng
        ops = ["=", "<", "<=", ">", ">="]
        r = rng.random()
        if r < 0.20:
            return "k = %s" % self.bound()
        if r < 0.32:
            return "k IN %s" % self.in_list()
        if r < 0.38:
            return "k IN (SELECT x FROM probe)"
        if r < 0.50:
            return "k BETWEEN %s AND %s" % (self.bound(), self.bound())
        if r < 0.62:
            return "k %s %s" % (rng.choice(ops[1:]), self.bound())
        if r < 0.72:
            return "k %s %s AND k %s %s" % (rng.choice(ops[1:3]), self.bound(),
                                            rng.choice(ops[3:]), self.bound())
        if r < 0.76:
            return "%s %s k" % (self.bound(), rng.choice(ops))
        if r < 0.79:
            return "k > %s AND k > %s AND k <= %s" % (self.bound(), self.bound(),
                                                     self.bound())
        if r < 0.81:
            return "k = %s AND k >= %s" % (self.bound(), self.bound())
        if indexable_only:
            return "k >= %s" % self.bound()
        if r < 0.84:
            return "(k = %s OR k = %s)" % (self.bound(), self.bound())
        if r < 0.86:
            return "k IS %s" % self.bound()
        if r < 0.88:
            return rng.choice(["k IS NULL", "k IS NOT NULL", "k NOT NULL"])
        if r < 0.91:
            return "k NOT IN %s" % self.in_list()
        if r < 0.93:
            return "k + 0 = %s" % self.bound()
        if r < 0.95:
            return "k NOT BETWEEN %s AND %s" % (self.bound(), self.bound())
        return rng.choice(["typeof(a) = 'text'", "a IS NULL", "b > 0",
                           "typeof(c) = 'blob'", "d = k", "length(a) > 3"])

    def where(self):
        r = self.rng.random()
        if r < 0.08:
            return ""
        return " WHERE " + self.keypred()

    # ---- operations: each returns a list of (sql, ordered)
    def op_insert(self):
        rng = self.rng
        verb = rng.choice(["INSERT", "INSERT", "INSERT OR IGNORE",
                           "INSERT OR REPLACE", "REPLACE"])
        nrow = 1 if rng.random() < 0.6 else rng.randint(2, 6)
        rows = []
        nnull = 0
        dup = rng.random() < 0.2
        for i in range(nrow):
            if rng.random() < 0.08:
                kl = "NULL"
                nnull += 1
            elif dup and rows:
                kl = rows[-1][0]
            else:
                kl = self.key_lit()
            rows.append([kl] + [lit_value(rng) for _ in range(4)])
        nnull = sum(1 for r_ in rows if r_[0] == "NULL")
        if nrow > 1 and verb != "INSERT":
            for r_ in rows:
                if lit_bad_key(r_[0]):
                    r_[0] = str(self.key())
        if nnull and (not self.null_key_ok(nnull) or
                      any(lit_near_max(r_[0]) for r_ in rows)):
            for r_ in rows:
                if r_[0] == "NULL" or lit_near_max(r_[0]):
                    r_[0] = str(rng.randint(-100, 100))
        vals = ", ".join("(" + ", ".join(r_) + ")" for r_ in rows)
        cols = "" if rng.random() < 0.3 else "(k, a, b, c, d)"
        return [("%s INTO t%s VALUES %s" % (verb, cols, vals), False)]

    def op_insert_partial(self):
        rng = self.rng
        if not self.null_key_ok(3):
            return self.op_insert()
        r = rng.random()
        if r < 0.3:
            return [("INSERT INTO t DEFAULT VALUES", False)]
        if r < 0.6:
            return [("INSERT INTO t(a, c) VALUES (%s, %s)" %
                     (lit_value(rng), lit_value(rng)), False)]
        return [("INSERT INTO t(d, b) VALUES (%s, %s), (%s, %s)" %
                 (lit_value(rng), lit_value(rng), lit_value(rng),
                  lit_value(rng)), False)]

    def op_insert_select(self):
        """Refill the helper table src, then INSERT ... SELECT from it (in
        id order, so duplicates resolve the same way everywhere)."""
        rng = self.rng
        n = rng.randint(1, 12)
        verb = rng.choice(["INSERT", "INSERT", "INSERT OR IGNORE",
                           "INSERT OR REPLACE", "REPLACE"])
        keys = []
        for _ in range(n):
            if rng.random() < 0.1:
                keys.append("NULL")
            else:
                keys.append(self.key_lit(allow_bad=(verb == "INSERT")))
        if "NULL" in keys and (not self.null_key_ok(len(keys)) or
                               any(lit_near_max(x) for x in keys)):
            keys = [str(rng.randint(-100, 100)) if x == "NULL" or lit_near_max(x)
                    else x for x in keys]
        rows = ["(%s, %s, %s, %s, %s)" % (kl, lit_value(rng), lit_value(rng),
                                          lit_value(rng), lit_value(rng))
                for kl in keys]
        out = [("DELETE FROM src", False),
               ("INSERT INTO src(k, a, b, c, d) VALUES " + ", ".join(rows), False)]
        out.append(("%s INTO t(k, a, b, c, d) SELECT k, a, b, c, d FROM src "
                    "ORDER BY id" % verb, False))
        return out

    def op_insert_self(self):
        """INSERT ... SELECT from t itself, keys shifted by an offset: the
        SELECT is materialized first and the shift is injective, so the
        outcome does not depend on the scan order."""
        rng = self.rng
        off = rng.choice([1, -1, 7, 1000, 2 ** 40, -(2 ** 40), 2 ** 62])
        verb = rng.choice(["INSERT", "INSERT OR IGNORE", "INSERT OR REPLACE"])
        # No overflow (datatype mismatch) half way: under OR IGNORE/REPLACE an
        # ordinary table would keep the rows done before it (see lit_bad_key);
        # under plain INSERT which error comes first (UNIQUE or mismatch)
        # would depend on the scan order.
        guard = (" AND k <= %d" % (MAX - off)) if off > 0 else \
            (" AND k >= %d" % (MIN - off))
        return [("%s INTO t(k, a, b, c, d) SELECT k + %d, a, b, c, d FROM t "
                 "WHERE (%s)%s" % (verb, off, self.keypred(), guard), False)]

    def op_insert_cte(self):
        rng = self.rng
        n = rng.randint(1, 300)
        base = self.key()
        step = rng.choice([1, 1, 2, 3, -1, 1000, 2 ** 50])
        verb = rng.choice(["INSERT", "INSERT OR IGNORE", "INSERT OR REPLACE"])
        if verb != "INSERT":   # no overflow half way (see lit_bad_key)
            last = base + (n - 1) * step
            if last > MAX:
                base = MAX - (n - 1) * step
            elif last < MIN:
                base = MIN - (n - 1) * step
        return [("WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c "
                 "WHERE x < %d) %s INTO t(k, a, b, c, d) SELECT %d + x * %d, "
                 "'c' || x, x * 0.5, CASE x %% 3 WHEN 0 THEN x'' WHEN 1 THEN "
                 "zeroblob(x %% 4) ELSE NULL END, x FROM c"
                 % (n - 1, verb, base, step), False)]

    def op_update_cols(self):
        rng = self.rng
        verb = rng.choice(["UPDATE", "UPDATE", "UPDATE OR IGNORE",
                           "UPDATE OR REPLACE"])
        r = rng.random()
        if r < 0.5:
            sets = ", ".join("%s = %s" % (c, lit_value(rng)) for c in
                             rng.sample(["a", "b", "c", "d"], rng.randint(1, 4)))
        else:
            sets = rng.choice(["b = b * 2", "a = a || 'x'", "d = k", "c = a",
                               "a = b, b = a", "d = NULL", "a = typeof(c)",
                               "b = k % 97", "d = d + 1"])
        return [("%s t SET %s%s" % (verb, sets, self.where()), False)]

    def op_update_key(self):
        rng = self.rng
        r = rng.random()
        verb = rng.choice(["UPDATE", "UPDATE", "UPDATE OR IGNORE",
                           "UPDATE OR REPLACE"])
        if r < 0.55:
            # one row onto a (maybe existing) key
            x = self.key()
            y = self.key_lit()
            extra = ", a = %s" % lit_value(rng) if rng.random() < 0.3 else ""
            if rng.random() < 0.1:
                y = rng.choice(["NULL", "k", "'%d'" % x, "k + 0", "k + 1", "k - 1",
                                "k + 4611686018427387904", "-k", "k * 2",
                                "k || ''", "k + 0.5"])
            return [("%s t SET k = %s%s WHERE k = %d" % (verb, y, extra, x), False)]
        if r < 0.80:
            # several rows shifted past the end of their range: injective and
            # the targets never hit a row that is itself moving
            lo = rng.choice(self.pool)
            span = rng.choice([0, 1, 5, 50, 10 ** 6, 10 ** 12])
            hi = min(MAX, lo + span)
            off = rng.choice([1, 2 ** 20, 2 ** 40, 2 ** 62]) + (hi - lo)
            if rng.random() < 0.5:
                off = -off
            # no overflow half way (see op_insert_self)
            if off > 0:
                hi = min(hi, MAX - off)
            else:
                lo = max(lo, MIN - off)
            return [("%s t SET k = k + %d WHERE k BETWEEN %d AND %d"
                     % (verb, off, lo, hi), False)]
        if r < 0.90:
            # reflection of positive keys onto negatives (disjoint ranges)
            c = rng.choice([0, 1, 100])
            hi = min(rng.choice(self.pool + [MAX]), MAX - c + 1)
            return [("%s t SET k = -k - %d WHERE k > 0 AND k <= %d"
                     % (verb, c, hi), False)]
        # several rows onto one key: plain UPDATE only (fails whatever the order
        # when two rows move; OR IGNORE/REPLACE would be order-dependent)
        return [("UPDATE t SET k = %s WHERE %s" % (self.key_lit(False),
                                                   self.keypred()), False)]

    def op_delete(self):
        rng = self.rng
        r = rng.random()
        if r < 0.03:
            return [("DELETE FROM t", False)]
        if r < 0.10:
            return [("DELETE FROM t WHERE k IN (SELECT k FROM t WHERE %s ORDER BY "
                     "k %s LIMIT %d)" % (self.keypred(), rng.choice(["", "DESC"]),
                                         rng.randint(0, 5)), False)]
        return [("DELETE FROM t WHERE %s" % self.keypred(), False)]

    def op_probe(self):
        rng = self.rng
        items = []
        for _ in range(rng.randint(0, 10)):
            x = rng.random()
            if x < 0.6:
                items.append(str(rng.choice(self.pool)))
            elif x < 0.75:
                items.append(str(self.fresh_key()))
            else:
                items.append(rng.choice(ODD_BOUNDS))
        out = [("DELETE FROM probe", False)]
        if items:
            if rng.random() < 0.3:
                items.append(items[0])
            out.append(("INSERT INTO probe(x) VALUES " +
                        ", ".join("(%s)" % i for i in items), False))
        return out

    def select_list(self):
        return self.rng.choice([
            "*", "k", "k, typeof(a), a", "k, a, b, c, d",
            "k, typeof(b), b, typeof(c), c, typeof(d), d",
            "k, typeof(a), typeof(b), typeof(c), typeof(d)",
            "k, length(a), hex(c), d"])

    def op_query(self):
        rng = self.rng
        r = rng.random()
        sl = self.select_list()
        if r < 0.40:
            order = rng.random()
            q = "SELECT %s FROM t%s" % (sl, self.where())
            if order < 0.4:
                return [(q, False)]
            q += " ORDER BY k %s" % rng.choice(["", "ASC", "DESC"])
            if order < 0.8:
                q += " LIMIT %d" % rng.choice([0, 1, 2, 3, 10, 100, -1])
                if rng.random() < 0.5:
                    q += " OFFSET %d" % rng.choice([0, 1, 2, 5, 50, -1])
            return [(q, True)]
        if r < 0.50:
            return [("SELECT count(*), count(a), count(b), count(c), count(d), "
                     "sum(k %% 1000), min(k), max(k), max(b), min(a), "
                     "sum(length(c)) FROM t%s" % self.where(), True)]
        if r < 0.58:
            return [("SELECT %s FROM t WHERE k = %s" % (sl, self.bound()), False)]
        if r < 0.64:
            return [("SELECT %s FROM t WHERE k IN %s" % (sl, self.in_list()),
                     False)]
        if r < 0.80:
            return [(rng.choice([
                "SELECT p.x, t.k, t.a FROM probe p JOIN t ON t.k = p.x",
                "SELECT p.x, t.k, typeof(t.b) FROM probe p LEFT JOIN t ON t.k = p.x",
                "SELECT t.k, p.x FROM t JOIN probe p ON p.x = t.k",
                "SELECT count(*) FROM probe p, t WHERE t.k = p.x AND t.k > %s"
                % self.bound(),
                "SELECT p.x, (SELECT a FROM t WHERE k = p.x) FROM probe p",
                "SELECT k FROM t WHERE EXISTS (SELECT 1 FROM probe WHERE x = t.k)",
                "SELECT p.x, t.k FROM probe p JOIN t ON t.k BETWEEN p.x AND p.x + 3",
                "SELECT p.x, t.k FROM probe p JOIN t ON t.k > p.x AND t.k < p.x + 10",
                "SELECT t1.k, t2.k FROM t t1 JOIN t t2 ON t2.k = t1.k + 1",
                "SELECT t1.k, t2.k FROM t t1, t t2 WHERE t2.k = t1.k AND t1.k %s"
                % rng.choice(["> 0", "< 0", "= 1", "IN (1, 2)"]),
                "SELECT k, x FROM t, probe WHERE k IN (x, x + 1)",
            ]), False)]
        if r < 0.86:
            return [(FULL, True)]
        if r < 0.92:
            lim = rng.choice([1, 2, 5, 20])
            off = rng.choice([0, 0, 1, 3])
            return [("SELECT k, a FROM t%s ORDER BY k %s LIMIT %d OFFSET %d"
                     % (self.where(), rng.choice(["ASC", "DESC"]), lim, off), True)]
        if r < 0.96:
            return [("SELECT (SELECT count(*) FROM t WHERE %s), "
                     "(SELECT k FROM t WHERE %s ORDER BY k DESC LIMIT 1)"
                     % (self.keypred(), self.keypred()), True)]
        return [("SELECT k FROM t WHERE k > %s ORDER BY k LIMIT 1"
                 % self.bound(), True),
                ("SELECT k FROM t WHERE k < %s ORDER BY k DESC LIMIT 1"
                 % self.bound(), True)]

    def op_txn(self):
        """Transaction control; returns [] if nothing suitable now."""
        rng = self.rng
        out = []
        in_txn = self.txn or bool(self.sp)
        r = rng.random()
        if not in_txn:
            if r < 0.6:
                self.txn = True
                out.append(("BEGIN", False))
            else:
                self.spn += 1
                self.sp.append("s%d" % self.spn)
                out.append(("SAVEPOINT s%d" % self.spn, False))
            return out
        if r < 0.35:
            self.spn += 1
            self.sp.append("s%d" % self.spn)
            return [("SAVEPOINT s%d" % self.spn, False)]
        if r < 0.55 and self.sp:
            i = rng.randrange(len(self.sp))
            del self.sp[i + 1:]
            return [("ROLLBACK TO s%s" % self.sp[i][1:], False)]
        if r < 0.72 and self.sp:
            i = rng.randrange(len(self.sp))
            name = self.sp[i]
            del self.sp[i:]
            out = [("RELEASE %s" % name, False)]
            if not self.sp and not self.txn:
                out.append((FULL, True))
            return out
        if r < 0.86:
            self.txn = False
            self.sp = []
            return [("COMMIT", False), (FULL, True)]
        self.txn = False
        self.sp = []
        return [("ROLLBACK", False), (FULL, True)]

    def op_big(self):
        """A big write inside a transaction (enough rows to make the write
        buffer flush in a build with a small flush threshold), queries, then
        rollback (mostly) or commit followed by a delete of the range."""
        rng = self.rng
        self.big_left -= 1
        n = self.big_rows
        base = rng.choice([self.key(), rng.randint(-10 ** 6, 10 ** 6)])
        step = rng.choice([1, 1, 3, 2 ** 32])
        last = base + (n - 1) * step
        if last > MAX:
            base = MAX - (n - 1) * step
            last = MAX
        name = None
        out = []
        if self.txn or self.sp:
            self.spn += 1
            name = "s%d" % self.spn
            out.append(("SAVEPOINT %s" % name, False))
        else:
            out.append(("BEGIN", False))
        ins = ("WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c "
               "WHERE x < %d) @VERB@ INTO t(k, a, b, c, d) SELECT %d + x * %d, "
               "'big' || x, x * 0.25, CASE x %% 3 WHEN 0 THEN x'' WHEN 1 THEN "
               "zeroblob(x %% 5) ELSE NULL END, x FROM c" % (n - 1, base, step))
        out.append((ins.replace("@VERB@", "INSERT OR REPLACE"), False))
        rng2 = rng.random()
        probe_keys = [base + rng.randrange(n) * step for _ in range(5)]
        out += [
            ("SELECT count(*), sum(k % 1000), min(k), max(k) FROM t", True),
            ("SELECT k, a, b, typeof(c), d FROM t WHERE k IN (%s)"
             % ", ".join(map(str, probe_keys)), False),
            ("SELECT k, a FROM t WHERE k >= %d ORDER BY k LIMIT 20" % probe_keys[0],
             True),
            ("SELECT k, a FROM t WHERE k <= %d ORDER BY k DESC LIMIT 20"
             % probe_keys[1], True),
            ("UPDATE t SET a = 'upd', b = NULL WHERE k BETWEEN %d AND %d"
             % (base, base + (n // 2) * step), False),
            ("DELETE FROM t WHERE k %% 7 = 3 AND k BETWEEN %d AND %d"
             % (base, last), False),
            # plain INSERT of many rows whose last one collides: the whole
            # statement must be undone, the transaction kept
            ("WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE "
             "x < %d) INSERT INTO t(k, a) SELECT CASE WHEN x = %d THEN %d ELSE "
             "%d - x END, 'dup' FROM c" % (n // 2, n // 2, probe_keys[2],
                                           min(base, 0) - 10 ** 7), False),
            ("SELECT count(*), sum(k % 1000), min(k), max(k), count(a), count(b) "
             "FROM t", True),
        ]
        if name and rng2 < 0.5:
            out.append(("ROLLBACK TO %s" % name, False))
            out.append(("RELEASE %s" % name, False))
        elif name:
            out.append(("RELEASE %s" % name, False))
            out.append(("DELETE FROM t WHERE k BETWEEN %d AND %d" % (base, last),
                        False))
        elif rng2 < 0.75:
            out.append(("ROLLBACK", False))
        else:
            out.append(("COMMIT", False))
            out.append(("SELECT count(*), sum(k % 1000) FROM t", True))
            out.append(("DELETE FROM t WHERE k BETWEEN %d AND %d" % (base, last),
                        False))
        out.append(("SELECT count(*), sum(k % 1000), min(k), max(k) FROM t", True))
        out.append((FULL, True))
        return out

    def next_op(self):
        ops = self.next_op_k()
        if self.rng.random() < 0.06:
            # the hidden rowid is an alias of the key, as in a rowid table
            # (reads, predicates, INSERT column lists; "UPDATE ... SET rowid ="
            # is checked by test_errors.py, where it fails today)
            ops = [(re.sub(r"\bk\b", "rowid", sql).replace("SET rowid =", "SET k ="),
                    o) for sql, o in ops]
        return ops

    def next_op_k(self):
        rng = self.rng
        in_txn = self.txn or bool(self.sp)
        self.opno += 1
        if self.big_left > 0 and (self.opno * 3 >= self.nops * (3 - self.big_left)
                                  or rng.random() < 0.004):
            return self.op_big()
        r = rng.random()
        if r < 0.06 * self.txn_weight or (in_txn and r < 0.1 * self.txn_weight):
            ops = self.op_txn()
            if ops:
                return ops
        r = rng.random()
        if r < 0.20:
            return self.op_insert()
        if r < 0.23:
            return self.op_insert_partial()
        if r < 0.28:
            return self.op_insert_select()
        if r < 0.31:
            return self.op_insert_self()
        if r < 0.34:
            return self.op_insert_cte()
        if r < 0.41:
            return self.op_update_cols()
        if r < 0.50:
            return self.op_update_key()
        if r < 0.57:
            return self.op_delete()
        if r < 0.60:
            return self.op_probe()
        return self.op_query()

    def finish(self):
        out = []
        if self.txn or self.sp:
            out.append(("COMMIT", False))
        out.append((FULL, True))
        return out


# ------------------------------------------------------------------ engines
def load_ext(conn, path):
    conn.enable_load_extension(True)
    try:
        conn.load_extension(path)
    finally:
        conn.enable_load_extension(False)


def open_engine(name, ext):
    conn = sqlite3.connect(":memory:", isolation_level=None)
    # text that is not UTF-8 (a blob cast by ||) must not make Python fail
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    if name in VTAB_ENGINES:
        load_ext(conn, ext)
        conn.execute("CREATE VIRTUAL TABLE t USING %s(%s)" % (name, SCHEMAS[SCHEMA[0]]))
    elif name == "sqlite_rev":      # --self-test stand-in
        conn.execute("PRAGMA reverse_unordered_selects = 1")
        conn.execute("CREATE TABLE t(%s)" % SCHEMAS[SCHEMA[0]])
    else:
        conn.execute("CREATE TABLE t(%s)" % SCHEMAS[SCHEMA[0]])
    conn.execute("CREATE TABLE probe(x)")
    conn.execute("CREATE TABLE src(id INTEGER PRIMARY KEY, k, a, b, c, d)")
    return conn


def norm_value(v):
    return (type(v).__name__, v)


def run_stmt(conn, sql):
    """Outcome of one statement: ('ok', rows, changes) or
    ('err', primary_code, message, extended_code)."""
    try:
        cur = conn.execute(sql)
        rows = [tuple(norm_value(v) for v in row) for row in cur.fetchall()]
        return ("ok", rows, cur.rowcount)
    except sqlite3.Error as e:
        code = getattr(e, "sqlite_errorcode", None)
        return ("err", None if code is None else code & 0xFF, str(e), code)


def same(ref, got, ordered):
    if ref[0] != got[0]:
        return False
    if ref[0] == "err":
        return ref[1] == got[1] and ref[2] == got[2]
    if ref[2] != got[2]:
        return False
    if ordered:
        return ref[1] == got[1]
    return sorted(map(repr, ref[1])) == sorted(map(repr, got[1]))


def describe(res, ordered, other=None, limit=12):
    if res[0] == "err":
        return "ERROR code=%s (extended %s): %s" % (res[1], res[3], res[2])
    rows = res[1]
    s = "%d row(s), changes=%s" % (len(rows), res[2])
    if other is not None and other[0] == "ok":
        if ordered:
            for i, (x, y) in enumerate(zip(rows, other[1])):
                if x != y:
                    s += "; first difference at row %d: %r (other: %r)" % (i, x, y)
                    break
        else:
            a = sorted(map(repr, rows))
            b = sorted(map(repr, other[1]))
            extra = [r for r in a if r not in set(b)]
            if extra:
                s += "; rows not in the other (%d): %s" % (
                    len(extra), "; ".join(extra[:limit]))
    show = rows if ordered else sorted(rows, key=repr)
    if len(show) <= limit:
        s += "\n      " + repr([tuple(v for _, v in r) for r in show])
    return s


def replay(stmts, engines, ext, stop_at=None, trace=None):
    """Run stmts on the reference and each engine.  Returns None when all
    agree, else (index, engine, ref_result, engine_result)."""
    conns = {REF: open_engine(REF, ext)}
    for e in engines:
        conns[e] = open_engine(e, ext)
    try:
        for i, (sql, ordered) in enumerate(stmts):
            if trace is not None:
                os.write(trace, (sql + ";\n").encode())
            r = CHECK_OK if sql == CHECK else run_stmt(conns[REF], sql)
            for e in engines:
                g = run_stmt(conns[e], sql)
                if not same(r, g, ordered):
                    return (i, e, r, g)
            if stop_at is not None and i >= stop_at:
                break
        return None
    finally:
        for c in conns.values():
            c.close()


# -------------------------------------------------------------- minimizer
def minimize(stmts, fail_idx, engine, ext, budget_s):
    """Delta-debug the statements before the failing one, keeping the
    failing statement itself, so that the same statement still mismatches."""
    target = stmts[fail_idx]
    prefix = list(stmts[:fail_idx])
    deadline = time.time() + budget_s

    def fails(pre):
        res = replay(pre + [target], [engine], ext)
        return res is not None and res[0] == len(pre)

    n = 2
    while len(prefix) >= 1 and time.time() < deadline:
        chunk = max(1, len(prefix) // n)
        reduced = False
        for start in range(0, len(prefix), chunk):
            if time.time() > deadline:
                break
            cand = prefix[:start] + prefix[start + chunk:]
            if fails(cand):
                prefix = cand
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(prefix), n * 2)
    return prefix + [target], time.time() < deadline


# ----------------------------------------------------------------- streams
def build_and_run(seed, mode, nops, engines, ext, big_rows, txn_weight,
                  trace=None):
    """Generate and run one stream, statement by statement, against all
    engines.  Returns (stmts, mismatch or None)."""
    rng = random.Random(seed)
    conns = {REF: open_engine(REF, ext)}
    for e in engines:
        conns[e] = open_engine(e, ext)
    gen = Gen(rng, mode, conns[REF], big_rows=big_rows, txn_weight=txn_weight)
    gen.nops = nops
    check_fn = [True]
    stmts = []
    try:
        for opno in range(nops + 1):
            ops = gen.next_op() if opno < nops else gen.finish()
            if CHECK_EVERY and ops and not ops[0][0].startswith("SELECT"):
                ops = ops + [(FULL, True)]
            for sql, ordered in ops:
                stmts.append((sql, ordered))
                if trace is not None:
                    os.write(trace, (sql + ";\n").encode())
                r = run_stmt(conns[REF], sql)
                for e in engines:
                    g = run_stmt(conns[e], sql)
                    if not same(r, g, ordered):
                        return stmts, (len(stmts) - 1, e, r, g)
                    if sql == FULL and e in VTAB_ENGINES and check_fn[0] \
                            and not conns[e].in_transaction:
                        # the structure's own invariants (gpuds_check() compares
                        # it with the committed shadow tables: outside a
                        # transaction only), when the build has the function
                        c = run_stmt(conns[e], CHECK)
                        if c[0] == "err" and "no such function" in c[2]:
                            check_fn[0] = False
                        elif c != CHECK_OK:
                            stmts.append((CHECK, True))
                            return stmts, (len(stmts) - 1, e, CHECK_OK, c)
                    if r[0] == "err" and r[3] != g[3]:
                        WARN.add("extended error code differs on %s: sqlite %s, "
                                 "%s %s (%s)" % (e, r[3], e, g[3], r[2]))
        for name, c in conns.items():
            ic = c.execute("PRAGMA integrity_check").fetchall()
            if ic != [("ok",)]:
                return stmts, (len(stmts) - 1, name,
                               ("ok", [], -1), ("err", 0, "integrity_check: %r" % ic, 0))
        return stmts, None
    finally:
        for c in conns.values():
            c.close()


WARN = set()
SCHEMA = ["plain"]
CHECK = "SELECT gpuds_check('t')"
CHECK_OK = ("ok", [(("str", "ok"),)], -1)
# GPUDS_TEST_CHECK_EVERY=1: compare the full contents after every write
# operation (slow; pinpoints the statement that first makes them differ).
CHECK_EVERY = os.environ.get("GPUDS_TEST_CHECK_EVERY", "") not in ("", "0")


def child_main(args):
    ext = args["ext"]
    SCHEMA[0] = args.get("schema") or "plain"
    if args.get("flush"):
        os.environ["GPUDS_FLUSH_ROWS"] = str(args["flush"])
    engines = args["engines"]
    if args.get("self_test"):
        engines = ["sqlite_rev"]
    if args.get("backend"):
        c = sqlite3.connect(":memory:")
        load_ext(c, ext)
        info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
        c.close()
        if info.get("backend") != args["backend"]:
            print("backend is %r, %r required" % (info.get("backend"),
                                                  args["backend"]))
            return 1
    trace = None
    if args.get("trace"):
        trace = os.open(args["trace"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    t0 = time.time()
    stmts, bad = build_and_run(args["seed"], args["mode"], args["ops"], engines,
                               ext, args["big"], args["txn_weight"], trace)
    dt = time.time() - t0
    for w in sorted(WARN):
        print("  warning: " + w)
    if bad is None:
        print("  seed=%d mode=%s ops=%d big=%d flush=%s schema=%s: %d statements "
              "agree on %s (%.1fs)" % (args["seed"], args["mode"], args["ops"],
                                       args["big"], args.get("flush") or "default",
                                       SCHEMA[0], len(stmts), ",".join(engines), dt))
        return 0
    idx, eng, r, g = bad
    sql, ordered = stmts[idx]
    print("MISMATCH seed=%d mode=%s ops=%d big=%d engine=%s statement #%d "
          "(replay: %s --seed %d --mode %s --ops %d --big %d --txn-weight %g "
          "--flush %d --schema %s --engines %s)"
          % (args["seed"], args["mode"], args["ops"], args["big"], eng, idx,
             os.path.basename(__file__), args["seed"], args["mode"], args["ops"],
             args["big"], args["txn_weight"], args.get("flush") or 0, SCHEMA[0],
             eng))
    for j in range(max(0, idx - 3), idx):
        print("  preceded by: %s" % stmts[j][0][:1500])
    print("  statement: %s" % sql)
    if args.get("flush"):
        print("  (with GPUDS_FLUSH_ROWS=%d; replay with --flush %d)"
              % (args["flush"], args["flush"]))
    print("  sqlite : %s" % describe(r, ordered, g))
    print("  %-7s: %s" % (eng, describe(g, ordered, r)))
    if args.get("minimize", True) and eng != REF and eng != "sqlite_rev" or \
            (args.get("minimize", True) and args.get("self_test")):
        small, complete = minimize(stmts, idx, eng, ext, args.get("min_budget", 40))
        res = replay(small, [eng], ext)
        print("  minimized to %d statement(s)%s:" % (
            len(small), "" if complete else " (time budget ran out)"))
        for s, _ in small:
            print("    %s;" % s)
        if res is not None:
            print("  -> sqlite : %s" % describe(res[2], small[-1][1], res[3]))
            print("  -> %-7s: %s" % (eng, describe(res[3], small[-1][1], res[2])))
    return 1


def default_streams(scale, time_seed):
    def n(x):
        return max(10, int(x * scale))
    big = max(2000, int(20000 * min(scale, 10)))
    # flush: GPUDS_FLUSH_ROWS for the stream (the write buffer of a
    # transaction is applied to the store once it holds that many keys; a
    # small value makes flushes happen inside transactions, before rollbacks).
    return [
        dict(seed=1, mode="dense", ops=n(4000), big=0, txn_weight=1.0, flush=0),
        dict(seed=2, mode="wide", ops=n(3000), big=0, txn_weight=1.0, flush=0),
        dict(seed=3, mode="extreme", ops=n(3000), big=0, txn_weight=1.0, flush=0),
        dict(seed=4, mode="mixed", ops=n(4000), big=0, txn_weight=3.0, flush=0),
        dict(seed=7, mode="dense", ops=n(4000), big=0, txn_weight=3.0, flush=3),
        dict(seed=8, mode="mixed", ops=n(4000), big=0, txn_weight=3.0, flush=17),
        dict(seed=10, mode="dense", ops=n(3000), big=0, txn_weight=2.0, flush=0,
             schema="notnull"),
        dict(seed=5, mode="dense", ops=n(300), big=big, txn_weight=2.0, flush=4096),
        dict(seed=6, mode="mixed", ops=n(300), big=big * 10 if scale >= 1 else big,
             txn_weight=1.0, flush=0),
        dict(seed=9, mode="wide", ops=n(300), big=big * 5 if scale >= 1 else big,
             txn_weight=1.0, flush=30000),
        dict(seed=time_seed, mode=random.Random(time_seed).choice(
            ["dense", "wide", "extreme", "mixed"]), ops=n(4000), big=0,
            txn_weight=1.5, flush=random.Random(time_seed).choice([0, 5, 100])),
    ]


# ------------------------------------------------------------ file replacement
REPL_TABS = ("g", "h")


def repl_build(path, ext, rng):
    """g (gfsl), h (gpuhash) and r (ordinary): the same rows, three commits."""
    c = sqlite3.connect(path, isolation_level=None)
    load_ext(c, ext)
    c.execute("CREATE VIRTUAL TABLE g USING gfsl(%s)" % COLS)
    c.execute("CREATE VIRTUAL TABLE h USING gpuhash(%s)" % COLS)
    c.execute("CREATE TABLE r(%s)" % COLS)
    for _ in range(3):
        repl_commit(c, rng, 120)
    c.close()


def repl_commit(c, rng, n):
    """One transaction of n random writes, the same on g, h and r (each
    written at least once, so the generations move together)."""
    c.execute("BEGIN")
    for i in range(n):
        k = rng.randrange(-400, 400)
        op = rng.random() if i else 0.0
        row = (k, "a%d" % rng.randrange(1000), rng.random(), bytes([rng.randrange(256)]),
               rng.choice([None, 7, "d", 2.5]))
        span = rng.randrange(30)
        for t in REPL_TABS + ("r",):
            if op < 0.6:
                c.execute("INSERT OR REPLACE INTO %s VALUES(?, ?, ?, ?, ?)" % t, row)
            elif op < 0.8:
                c.execute("UPDATE %s SET a = ?, d = ? WHERE k = ?" % t, (row[1], row[4], k))
            else:
                c.execute("DELETE FROM %s WHERE k BETWEEN ? AND ?" % t, (k, k + span))
    c.execute("COMMIT")


def repl_compare(c, schema, what, keys, fails):
    """g and h of schema read as r does; the same SQL texts every time (the
    statement cache keeps them prepared across a replacement)."""
    full = FULL.replace("FROM t", "FROM %s.{t}" % schema)
    want = c.execute(full.replace("{t}", "r")).fetchall()
    for t in REPL_TABS:
        tag = "%s: %s.%s" % (what, schema, t)
        try:
            got = c.execute(full.replace("{t}", t)).fetchall()
            if got != want:
                fails.append("%s: every row (%d rows, r has %d)" % (tag, len(got), len(want)))
            for k in keys:
                q = "SELECT k, a, b, c, d FROM %s.%%s WHERE k = ?" % schema
                a, b = c.execute(q % t, (k,)).fetchall(), c.execute(q % "r", (k,)).fetchall()
                if a != b:
                    fails.append("%s: k = %d gives %r, r %r" % (tag, k, a, b))
            q = "SELECT count(*), sum(k) FROM %s.%%s" % schema
            a, b = c.execute(q % t).fetchall(), c.execute(q % "r").fetchall()
            if a != b:
                fails.append("%s: count %r, r %r" % (tag, a, b))
            chk = c.execute("SELECT gpuds_check(?)", ("%s.%s" % (schema, t),)).fetchall()
            if chk != [("ok",)]:
                fails.append("%s: gpuds_check %r" % (tag, chk))
        except sqlite3.Error as e:
            fails.append("%s: %s" % (tag, e))


def replace_main(args):
    """The file replacement checks (see the docstring); 0 if all agree."""
    ext, seed = args["ext"], args["seed"]
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="gpuds_repl_")
    fails, checks = [], [0]
    keys = [rng.randrange(-400, 400) for _ in range(25)]

    def compare(c, schema, what):
        checks[0] += 1
        repl_compare(c, schema, what, keys, fails)

    def path(name):
        return os.path.join(tmp, name)

    def copy(src, dst):
        with open(src, "rb") as f, open(path(dst), "wb") as g:
            g.write(f.read())
        return path(dst)

    def gpuds(p):
        c = sqlite3.connect(p, isolation_level=None)
        load_ext(c, ext)
        return c

    try:
        repl_build(path("base.db"), ext, rng)
        for name, nwrite in (("a.db", 60), ("b.db", 90)):
            c = gpuds(copy(path("base.db"), name))
            for _ in range(2):            # the same number of commits: same generations
                repl_commit(c, rng, nwrite)
            c.close()
        img = {}
        for name in ("a.db", "b.db"):
            with open(path(name), "rb") as f:
                img[name] = f.read()
        # ATTACH under the same schema name, after a DETACH
        c = gpuds(":memory:")
        for name in ("a.db", "b.db", "a.db"):
            c.execute("ATTACH ? AS aux", (path(name),))
            compare(c, "aux", "ATTACH %s" % name)
            c.execute("DETACH aux")
        c.close()
        # the backup API onto a loaded database: by its own connection, then
        # by another connection onto its file
        c = gpuds(copy(path("a.db"), "dest.db"))
        compare(c, "main", "before a backup")
        src = sqlite3.connect(path("b.db"))
        src.backup(c)
        src.close()
        compare(c, "main", "the backup API copied b.db onto it")
        src, dst = sqlite3.connect(path("a.db")), sqlite3.connect(path("dest.db"))
        src.backup(dst)
        src.close()
        dst.close()
        compare(c, "main", "another connection's backup copied a.db onto it")
        c.close()
        # sqlite3_deserialize, twice and back, into :memory: and a file's main
        for start in (":memory:", "file"):
            c = gpuds(":memory:" if start == ":memory:" else copy(path("base.db"), "deser.db"))
            if start == "file":
                compare(c, "main", "a file before deserialize")
            for name in ("a.db", "b.db", "a.db"):
                c.deserialize(img[name])
                compare(c, "main", "%s, deserialized %s" % (start, name))
            c.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in fails:
        print("MISMATCH file replacement (seed=%d): %s" % (seed, f))
    if not fails:
        print("  file replacement seed=%d: %d comparisons agree" % (seed, checks[0]))
    return 1 if fails else 0


def parse_args(argv):
    a = {"engines": list(VTAB_ENGINES), "minimize": True}
    i = 0
    while i < len(argv):
        x = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if x == "--seed":
            a["seed"] = int(nxt); i += 1
        elif x == "--mode":
            a["mode"] = nxt; i += 1
        elif x == "--ops":
            a["ops"] = int(nxt); i += 1
        elif x == "--big":
            a["big"] = int(nxt); i += 1
        elif x == "--txn-weight":
            a["txn_weight"] = float(nxt); i += 1
        elif x == "--scale":
            a["scale"] = float(nxt); i += 1
        elif x == "--engines":
            a["engines"] = nxt.split(","); i += 1
        elif x == "--ext":
            a["ext"] = nxt; i += 1
        elif x == "--schema":
            a["schema"] = nxt; i += 1
        elif x == "--flush":
            a["flush"] = int(nxt); i += 1
        elif x == "--trace":
            a["trace"] = nxt; i += 1
        elif x == "--backend":
            a["backend"] = nxt; i += 1
        elif x == "--min-budget":
            a["min_budget"] = float(nxt); i += 1
        elif x == "--no-minimize":
            a["minimize"] = False
        elif x == "--self-test":
            a["self_test"] = True
        elif x == "--child":
            a["child"] = True
        elif x == "--replace":
            a["replace"] = True
        elif x in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        else:
            print("unknown argument %r" % x)
            sys.exit(2)
        i += 1
    return a


def child_argv(s, a, trace):
    if s.get("replace"):
        return [sys.executable, os.path.abspath(__file__), "--child", "--replace",
                "--seed", str(s["seed"]), "--ext", a["ext"]]
    v = [sys.executable, os.path.abspath(__file__), "--child",
         "--seed", str(s["seed"]), "--mode", s["mode"], "--ops", str(s["ops"]),
         "--big", str(s["big"]), "--txn-weight", str(s["txn_weight"]),
         "--engines", ",".join(a["engines"]), "--ext", a["ext"],
         "--trace", trace]
    if s.get("flush"):
        v += ["--flush", str(s["flush"])]
    if s.get("schema"):
        v += ["--schema", s["schema"]]
    if not a["minimize"]:
        v.append("--no-minimize")
    if a.get("self_test"):
        v.append("--self-test")
    if a.get("backend"):
        v += ["--backend", a["backend"]]
    if a.get("min_budget"):
        v += ["--min-budget", str(a["min_budget"])]
    return v


def check_loadable(ext):
    """77 if this Python cannot load extensions, None if fine; raises if the
    extension itself fails to load (that is a failure, not a skip)."""
    c = sqlite3.connect(":memory:")
    if not hasattr(c, "enable_load_extension"):
        print("SKIPPED: this Python's sqlite3 cannot load extensions "
              "(use /usr/bin/python3)")
        return 77
    load_ext(c, ext)
    info = c.execute("SELECT gpuds_info()").fetchone()[0]
    c.close()
    return json.loads(info)


def main(argv=None, require_backend=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if a.get("child") and a.get("replace"):
        return replace_main(a)
    if a.get("child"):
        a.setdefault("big", 0)
        a.setdefault("txn_weight", 1.0)
        return child_main(a)
    ext = a.get("ext") or os.environ.get("GPUDS_EXT")
    if a.get("self_test"):
        ext = ext or os.devnull
        a["ext"] = ext
        info = {"backend": "(self-test: no extension used)"}
    elif not ext or not os.path.exists(ext):
        print("SKIPPED: gpuds.so not found (set GPUDS_EXT)")
        return 77
    if require_backend:
        a["backend"] = require_backend
    else:
        os.environ.setdefault("GPUDS_BACKEND", "host")
    if not a.get("self_test"):
        a["ext"] = os.path.abspath(ext)
        info = check_loadable(a["ext"])
        if info == 77:
            return 77
    print("gpuds_info(): %s" % json.dumps(info))
    if require_backend and info.get("backend") != require_backend:
        print("SKIPPED: no usable CUDA device (gpuds_info() backend=%r, device=%r)"
              % (info.get("backend"), info.get("device")))
        return 77
    scale = a.get("scale") or float(os.environ.get("GPUDS_TEST_SCALE", "1") or 1)
    seed = a.get("seed")
    if seed is None and os.environ.get("GPUDS_TEST_SEED"):
        seed = int(os.environ["GPUDS_TEST_SEED"])
    if seed is not None:
        streams = [dict(seed=seed, mode=a.get("mode", "mixed"),
                        ops=a.get("ops", max(10, int(2500 * scale))),
                        big=a.get("big", 0), txn_weight=a.get("txn_weight", 1.5),
                        flush=a.get("flush", 0), schema=a.get("schema"))]
    else:
        time_seed = int(time.time() * 1000) % 1000000007
        streams = default_streams(scale, time_seed)
    print("backend %s; engines %s; scale %g; streams: %s" % (
        os.environ.get("GPUDS_BACKEND", "(default)"), ",".join(a["engines"]),
        scale, ", ".join("seed=%d/%s" % (s["seed"], s["mode"]) for s in streams)))
    sys.stdout.flush()
    passed = failed = 0
    t0 = time.time()
    if seed is None and not a.get("self_test"):
        streams.append(dict(replace=True, seed=time_seed, mode="file replacement"))
    for s in streams:
        fd, trace = tempfile.mkstemp(prefix="gpuds_diff_", suffix=".sql")
        os.close(fd)
        try:
            p = subprocess.run(child_argv(s, a, trace), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            sys.stdout.write(p.stdout)
            if p.returncode == 0:
                passed += 1
            else:
                failed += 1
                if p.returncode < 0 or "Traceback" in p.stdout:
                    with open(trace) as f:
                        lines = f.read().splitlines()
                    print("CRASH/ABORT (exit %d) seed=%d mode=%s: last statements "
                          "(of %d) before it:" % (p.returncode, s["seed"], s["mode"],
                                                  len(lines)))
                    for ln in lines[-25:]:
                        print("    " + ln[:400])
        finally:
            os.unlink(trace)
        sys.stdout.flush()
    print("%d passed, %d failed (%.1fs)" % (passed, failed, time.time() - t0))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
