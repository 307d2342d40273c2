"""The random statement stream of test_differential.py: the columns and
literals it draws from, and Gen, which produces the statements one operation
at a time (deterministic for a seed, so that a failing stream replays)."""

import re

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
