"""The workload of the GPU memory tests (test_gpumem.py: a GPU memory cap;
test_gpumem_host.py: a store that runs out of memory, through the test
hook): a gfsl table t, a gpuhash table h and an ordinary table o with the
same rows in one database, the same statements on each, every answer and
every statement's outcome compared.  A statement that fails on a gpuds
table where it succeeds on the ordinary one is a failure: no statement may
fail for lack of GPU memory.

Also: reading gpuds_info() placements and calling the store hook."""
import ctypes
import json
import os
import random
import sqlite3

from gpuds_testlib import EXT

COLS = "k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT"
GPUDS = ("t", "h")
ALL = ("t", "h", "o")
# The store hook's words for why a store is on the host (ext/store.c).
HOOK_WHY = "a test failed this call to the store as a full GPU would"


def create(c):
    """The three tables, empty: None, or the error of the statement that
    failed."""
    try:
        c.execute("CREATE VIRTUAL TABLE t USING gfsl(%s)" % COLS)
        c.execute("CREATE VIRTUAL TABLE h USING gpuhash(%s)" % COLS)
        c.execute("CREATE TABLE o(%s)" % COLS)
    except (sqlite3.Error, MemoryError) as e:
        return "%s: %s" % (type(e).__name__, e)
    return None


def info(c):
    """gpuds_info() of connection c, parsed."""
    return json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])


def placements(c):
    """{table: its placement object} for t and h."""
    return {t["name"].split(".")[-1]: t["placement"] for t in info(c)["tables"]}


def store_hook():
    """gpuds_test_store_nomem of the loaded gpuds.so (ext/store.c), or None.
    A connection with gpuds loaded must be open (the handle then keeps the
    library loaded while connections close)."""
    try:
        lib = ctypes.CDLL(EXT, mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
        f = lib.gpuds_test_store_nomem
    except (OSError, AttributeError):
        return None
    f.restype = ctypes.c_uint64
    f.argtypes = [ctypes.c_int64]
    return f


def series(a, b):
    """The integers a..b as a common table expression c(x)."""
    return ("WITH RECURSIVE c(x) AS (SELECT %d UNION ALL SELECT x+1 FROM c "
            "WHERE x<%d) " % (a, b))


class Workload:
    """Runs the statements on t, h and o of connection c, comparing."""

    def __init__(self, c, tally, seed, rows, label, after=None, scan_retry=False):
        self.c = c
        # GPUDS_MIRROR=0: a gpuhash store that moves to the host in the
        # middle of a scan of it fails that statement (ARCHITECTURE.md,
        # "GPU memory"); it is then run again, once, on the moved store.
        self.scan_retry = scan_retry
        self.nRetry = 0
        self.T = tally
        self.rng = random.Random(seed)
        self.n = rows
        self.label = label
        self.after = after          # called after every statement (checks)
        self.nStmt = 0
        self.failed = False

    def _one(self, sql, params):
        try:
            return ("ok", self.c.execute(sql, params).fetchall())
        except (sqlite3.Error, MemoryError) as e:   # SQLITE_NOMEM: MemoryError
            return ("error", type(e).__name__, str(e))

    def each(self, fmt, params=(), ordered=True):
        """fmt ("%(t)s" in it: the table) on t, h and o: the same outcome
        on each."""
        out = {}
        for tab in ALL:
            got = self._one(fmt.replace("%(t)s", tab), params)
            if (self.scan_retry and tab in GPUDS and got[0] == "error"
                    and "in the middle of a scan" in got[2]):
                self.nRetry += 1
                print("  %s: %s on %s: %s; run again" % (self.label, fmt[:60], tab, got[2][:200]))
                got = self._one(fmt.replace("%(t)s", tab), params)
            if got[0] == "ok" and not ordered:
                got = ("ok", sorted(got[1], key=repr))
            out[tab] = got
            self.nStmt += 1
            if self.after:
                self.after(self)
        for tab in GPUDS:
            ok = out[tab] == out["o"]
            if not ok and not self.failed:
                self.failed = True
                print("  %s: %s on %s: %r, ordinary table: %r" % (
                    self.label, fmt.replace("%(t)s", tab), tab, str(out[tab])[:300],
                    str(out["o"])[:300]))
            self.T.check(ok, "%s: %s on %s as on an ordinary table" % (
                self.label, fmt.replace("%(t)s", tab)[:80], tab))
        return out["o"]

    def tx(self, sql):
        """A transaction statement (once: the three share the connection);
        it must succeed."""
        got = self._one(sql, ())
        self.T.check(got[0] == "ok", "%s: %s" % (self.label, sql), got)
        if self.after:
            self.after(self)

    def bulk(self, a, b, key="x*2", prefix="s"):
        """INSERT OR REPLACE of rows a..b, key given as an SQL expression of x."""
        self.each(series(a, b) + "INSERT OR REPLACE INTO %%(t)s SELECT %s, x %% 97, "
                  "x * 0.25, '%s' || (x %% 1000) FROM c" % (key, prefix))

    def queries(self):
        """Point, IN, range, descending, column and whole-table queries."""
        rng, n = self.rng, self.n
        kmax = 4 * n
        for _ in range(20):
            self.each("SELECT k, v, r, s FROM %(t)s WHERE k = ?", (rng.randrange(kmax),))
        keys = ",".join(str(rng.randrange(kmax)) for _ in range(3000))
        self.each("SELECT count(*), sum(v), total(r) FROM %%(t)s WHERE k IN (%s)" % keys)
        few = ",".join(str(rng.randrange(kmax)) for _ in range(50))
        self.each("SELECT k, v FROM %%(t)s WHERE k IN (%s) ORDER BY k" % few)
        a = rng.randrange(kmax)
        self.each("SELECT k, v, s FROM %(t)s WHERE k BETWEEN ? AND ? ORDER BY k", (a, a + 400))
        self.each("SELECT count(*), sum(v) FROM %(t)s WHERE k BETWEEN ? AND ?", (a, a + kmax // 2))
        self.each("SELECT k FROM %(t)s WHERE k <= ? ORDER BY k DESC LIMIT 10", (a,))
        self.each("SELECT count(*), sum(k) FROM %(t)s WHERE v = ?", (rng.randrange(97),))
        self.each("SELECT k, s FROM %(t)s WHERE s = ?", ("s%d" % rng.randrange(1000),), ordered=False)
        self.each("SELECT count(*), sum(k) FROM %(t)s WHERE v BETWEEN ? AND ? AND r > ?",
                  (10, 40, rng.randrange(n) * 0.25))
        self.each("SELECT k, r FROM %(t)s WHERE r > ? ORDER BY r DESC, k LIMIT 10",
                  (rng.randrange(n) * 0.25,))
        self.each("SELECT k, v FROM %(t)s WHERE v < 3 ORDER BY v, k LIMIT 20")
        self.each("SELECT count(*), sum(k), sum(v), total(r) FROM %(t)s")

    def contents(self):
        """Every row of each table alike; gpuds_check says ok."""
        self.each("SELECT k, typeof(v), v, typeof(r), r, s FROM %(t)s ORDER BY k")
        for tab in GPUDS:
            got = self._one("SELECT gpuds_check('%s')" % tab, ())
            self.T.check(got == ("ok", [("ok",)]), "%s: gpuds_check('%s')" % (self.label, tab), got)

    def run(self):
        """The whole workload: bulk loads, transactions that commit and roll
        back (savepoints), updates that move keys, deletes, and the queries
        between them."""
        n = self.n
        self.bulk(0, n // 2 - 1)                              # in key order
        self.bulk(0, n // 2 - 1, key="(x * 7919) %% %d" % (4 * n), prefix="q")
        self.queries()
        self.tx("BEGIN")
        self.each("UPDATE %(t)s SET v = v + 1, s = s || 'u' WHERE k % 5 = 0")
        a = self.rng.randrange(4 * n)
        self.each("DELETE FROM %(t)s WHERE k BETWEEN ? AND ?", (a, a + n // 3))
        self.tx("SAVEPOINT sp")
        self.bulk(n, n + n // 4, key="x * 3")
        self.each("DELETE FROM %(t)s WHERE v = 7")
        self.queries()
        self.tx("ROLLBACK TO sp")
        self.tx("RELEASE sp")
        self.each("INSERT OR REPLACE INTO %(t)s VALUES(?, 1, 1.5, 'one')", (a + 1,))
        self.tx("COMMIT")
        self.queries()
        self.tx("BEGIN")
        self.each("DELETE FROM %(t)s WHERE v < 50")
        self.bulk(2 * n, 2 * n + n // 2, key="x * 5 + 1")
        self.queries()
        self.tx("ROLLBACK")
        self.each("UPDATE %%(t)s SET k = k + %d WHERE k %% 11 = 0" % (10 * n))
        self.bulk(3 * n, 3 * n + n // 2, key="x * 2 + 1")
        self.queries()
        self.contents()
