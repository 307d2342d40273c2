"""What the durability tests (tests/test_persist*.py) share: the checks'
tally, connections and dumps, the random statements and values, child
processes, the tables in three kinds, and the driver of a test's sections.

Every check is differential: a gfsl table `tg` and a gpuhash table `th` get
the same statements as an ordinary rowid table `r` with the same column
declarations (normally in the same database file and the same transaction),
and their full contents (typeof() of every column included) are compared.

Floats are compared bit-exactly except that 0.0 and -0.0 are equal in the
reference comparisons (an ordinary table turns -0.0 into 0.0 in a REAL
column); one dedicated check compares that sign, and the before/after-reopen
comparisons of a gpuds table are fully bit-exact.

Usage (every test_persist*.py):
    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_persist.py [section ...]
Environment:
    GPUDS_EXT              path of gpuds.so (exit 77 = SKIPPED if absent)
    GPUDS_PERSIST_SCALE    multiply row/operation counts (default 1; e.g.
                           0.05 for a run under valgrind)
    GPUDS_TEST_SEED        random seed (default 20240607)
    GPUDS_BACKEND          left as is if set; otherwise "host"
    GPUDS_KEEP_TMP=1       keep the temporary directory
The last line is "N passed, M failed"; the exit status is 1 if M > 0.
"""

import hashlib
import json
import os
import queue
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

MIN = -9223372036854775808
MAX = 9223372036854775807

EXT = os.path.abspath(os.environ["GPUDS_EXT"]) if os.environ.get("GPUDS_EXT") else ""
SCALE = float(os.environ.get("GPUDS_PERSIST_SCALE") or 1)
SEED = int(os.environ.get("GPUDS_TEST_SEED") or 20240607)
os.environ.setdefault("GPUDS_BACKEND", "host")
TMP = None


def sz(n, lo=1):
    return max(lo, int(n * SCALE))


# ------------------------------------------------------------------ results
class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, cond, name, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append(name)
            d = str(detail)
            if len(d) > 1500:
                d = d[:1500] + " ..."
            print("FAIL: %s%s" % (name, (" -- " + d) if d else ""), flush=True)
        return bool(cond)

    def same(self, a, b, name):
        if a == b:
            return self.check(True, name)
        return self.check(False, name, first_diff(a, b))


R = Results()


def note(msg):
    print("NOTE: " + msg, flush=True)


def first_diff(a, b):
    if not isinstance(a, list) or not isinstance(b, list):
        return "%r != %r" % (short(a), short(b))
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "row %d: %s != %s (lengths %d, %d)" % (i, short(x), short(y), len(a), len(b))
    return "lengths %d != %d; extra: %s" % (len(a), len(b),
                                             short(a[len(b)] if len(a) > len(b) else b[len(a)]))


def short(x, n=300):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "..."


# ------------------------------------------------------------------ sqlite
def connect(path, timeout=10.0):
    c = sqlite3.connect(path, timeout=timeout, isolation_level=None,
                        check_same_thread=False)
    c.text_factory = bytes          # exact text bytes (NUL, invalid UTF-8)
    c.enable_load_extension(True)
    c.load_extension(EXT)
    c.enable_load_extension(False)
    c.execute("PRAGMA synchronous=OFF")   # process crashes only: still safe
    return c


def raw_connect(path):
    """A connection without the extension (to damage shadow tables)."""
    c = sqlite3.connect(path, isolation_level=None)
    c.text_factory = bytes
    return c


def scalar(conn, sql, params=()):
    v = conn.execute(sql, params).fetchone()[0]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def check_ok(conn, table):
    try:
        return scalar(conn, "SELECT gpuds_check(?)", (table,))
    except sqlite3.Error as e:
        return "ERROR: %s" % e


def info_table(conn, name):
    j = json.loads(scalar(conn, "SELECT gpuds_info()"))
    for t in j["tables"]:
        if t["name"] == name:
            return t
    return None


def enc(v, strict=False):
    """A value as a comparable string; floats by their bits."""
    if v is None:
        return "N"
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return "i%d" % v
    if isinstance(v, float):
        if v != v:
            return "fnan"
        if v == 0.0 and not strict:
            return "f0"
        return "f" + struct.pack(">d", v).hex()
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        if len(b) <= 64:
            return "b" + b.hex()
        return "b%d:%s" % (len(b), hashlib.sha1(b).hexdigest())
    return "?" + repr(v)


def full_sql(table, cols, order=True):
    sel = ", ".join("typeof(%s), %s" % (c, c) for c in cols)
    return "SELECT k, %s FROM %s%s" % (sel, table, " ORDER BY k" if order else "")


def dump(conn, table, cols, strict=False, order=True):
    rows = conn.execute(full_sql(table, cols, order)).fetchall()
    if not order:
        rows.sort(key=lambda r: r[0])
    return [tuple(enc(v, strict) for v in r) for r in rows]


def query(conn, sql, params=(), strict=False):
    return [tuple(enc(v, strict) for v in r) for r in conn.execute(sql, params)]


def schema_names(conn, schema="main"):
    tab = "sqlite_temp_schema" if schema == "temp" else "%s.sqlite_schema" % schema
    return sorted(n.decode() for (n,) in conn.execute(
        "SELECT name FROM %s WHERE type='table'" % tab))


def shadow_snapshot(conn, tables, schema="main"):
    out = {}
    for t in tables:
        out[t] = (conn.execute("SELECT id, n, keys, vals FROM %s.'%s_run' ORDER BY id" % (schema, t)).fetchall(),
                  conn.execute("SELECT key, value FROM %s.'%s_meta' ORDER BY key" % (schema, t)).fetchall())
    return out


def meta(conn, table, key):
    return scalar(conn, "SELECT value FROM '%s_meta' WHERE key=?" % table, (key,))


def remove_db(path):
    for s in ("", "-journal", "-wal", "-shm"):
        try:
            os.remove(path + s)
        except FileNotFoundError:
            pass


def tmp_path(name):
    """name in this run's temporary directory."""
    return os.path.join(TMP, name)


def dbpath(name):
    """A database file name in the temporary directory, removed first."""
    p = tmp_path(name)
    remove_db(p)
    return p


class FlushEnv:
    """GPUDS_FLUSH_ROWS for the tables connected while it is active (the
    extension reads the variable when a table is created or connected)."""
    def __init__(self, n):
        self.n = n

    def __enter__(self):
        if self.n is None:
            os.environ.pop("GPUDS_FLUSH_ROWS", None)
        else:
            os.environ["GPUDS_FLUSH_ROWS"] = str(self.n)

    def __exit__(self, *a):
        os.environ.pop("GPUDS_FLUSH_ROWS", None)


# ------------------------------------------------------------- generators
INTS = [0, 1, -1, MIN, MAX, MIN + 1, MAX - 1, 2**53 + 1, -(2**53 + 1), 42, -7]
REALS = [0.0, -0.0, 1e308, -1e308, 5e-324, -5e-324, 2.2250738585072014e-308,
         1.5, 3.0, -7.0, 1e19, -1e19, 9.223372036854775807e18, float("inf"),
         float("-inf"), float("nan"), 0.1, 1e-300, 123456789.125]
TEXTS = ["", "abc", "12", " 12 ", "3.5", "1e5", "-0", "0x1F",
         "9223372036854775808", "NULL", "h\u00e9llo \u2603 \U0001d11e",
         "\u00e9" * 50, "  ", "\n", "-0.0", "1e400"]
BLOBS = [b"", b"\x00", b"\x00\xff\x00", b"12", b"3.5", bytes(range(256))]
CASTTEXT = [b"a\x00b", b"\x00", b"\xff\xfe", b"x\x00\x00y", b"\xc3", b""]


def rand_val(rng, literal_bytes=False):
    """(sql expression, params) of a random value."""
    r = rng.random()
    if r < 0.07:
        return ("NULL", ())
    if r < 0.22:
        return ("?", (rng.choice(INTS),))
    if r < 0.30:
        return ("?", (rng.randint(MIN, MAX),))
    if r < 0.45:
        return ("?", (rng.choice(REALS),))
    if r < 0.50:
        return ("?", (rng.uniform(-1e6, 1e6),))
    if r < 0.70:
        return ("?", (rng.choice(TEXTS),))
    if r < 0.85:
        b = rng.choice(BLOBS)
        if literal_bytes:
            return ("x'%s'" % b.hex(), ())
        return ("?", (b,))
    if r < 0.93:
        b = rng.choice(CASTTEXT)
        if literal_bytes:
            return ("CAST(x'%s' AS TEXT)" % b.hex(), ())
        return ("CAST(? AS TEXT)", (b,))
    if r < 0.97:
        return ("zeroblob(?)", (rng.choice([0, 1, 17]),))
    return ("?", ("t%d" % rng.randint(0, 10**6),))


def key_pool(rng, n):
    ks = {MIN, MIN + 1, -1, 0, 1, MAX - 1, MAX}
    while len(ks) < n:
        ks.add(rng.randint(MIN, MAX) if rng.random() < 0.5 else rng.randint(-3 * n, 3 * n))
    return sorted(ks)


def rand_stmt(rng, keys, cols, weights=None, literal_bytes=False):
    """A random write statement: (sql with {t}, params)."""
    w = weights or {"ins": 30, "insrep": 8, "upd": 22, "key": 10, "del": 15,
                    "delr": 5, "rep": 10}
    kinds = list(w)
    kind = rng.choices(kinds, [w[x] for x in kinds])[0]
    k = rng.choice(keys)
    if kind in ("ins", "insrep", "rep"):
        vals = [rand_val(rng, literal_bytes) for _ in cols]
        verb = {"ins": "INSERT", "insrep": "INSERT OR REPLACE", "rep": "REPLACE"}[kind]
        sql = "%s INTO {t}(k, %s) VALUES(?, %s)" % (verb, ", ".join(cols),
                                                   ", ".join(e for e, _ in vals))
        params = (k,) + tuple(p for _, ps in vals for p in ps)
    elif kind == "upd":
        cs = rng.sample(cols, rng.randint(1, min(3, len(cols))))
        vals = [rand_val(rng, literal_bytes) for _ in cs]
        sql = "UPDATE {t} SET %s WHERE k=?" % ", ".join(
            "%s=%s" % (c, e) for c, (e, _) in zip(cs, vals))
        params = tuple(p for _, ps in vals for p in ps) + (k,)
    elif kind == "key":
        verb = "UPDATE OR REPLACE" if rng.random() < 0.3 else "UPDATE"
        col = "rowid" if rng.random() < 0.2 else "k"
        sql = "%s {t} SET %s=? WHERE k=?" % (verb, col)
        params = (rng.choice(keys), k)
    elif kind == "del":
        sql = "DELETE FROM {t} WHERE k=?"
        params = (k,)
    else:
        lo = k
        hi = min(MAX, k + rng.choice([1, 10, 1000]))
        sql = "DELETE FROM {t} WHERE k BETWEEN ? AND ?"
        params = (lo, hi)
    return sql, params


def apply_stmt(conn, sql, params, tables):
    """Run one statement on each table; outcome per table."""
    outs = []
    for tb in tables:
        try:
            cur = conn.execute(sql.format(t=tb), params)
            outs.append(["ok", cur.rowcount])
        except sqlite3.Error as e:
            outs.append(["err", type(e).__name__])
    return outs


class Outcomes:
    """Collects statement outcomes that differ between a vtab and r."""
    def __init__(self):
        self.n = 0
        self.bad = []

    def add(self, sql, params, outs):
        self.n += 1
        ref = outs[-1]
        if any(o != ref for o in outs[:-1]) and len(self.bad) < 5:
            self.bad.append((sql, short(params, 200), outs))

    def check(self, name):
        R.check(not self.bad, "%s: statement outcomes (%d statements) like the ordinary table" % (name, self.n),
                self.bad)


# ------------------------------------------------------------ child plumbing
class Child:
    """A child process running the test's script with --child MODE ARGS; stdout is
    read by a thread into a queue so that reads can time out."""
    def __init__(self, mode, args, env_extra=None, stdin=False):
        env = dict(os.environ)
        env.pop("GPUDS_FLUSH_ROWS", None)
        env.update(env_extra or {})
        self.p = subprocess.Popen(
            [sys.executable, os.path.abspath(sys.argv[0]), "--child", mode, json.dumps(args)],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, bufsize=1)
        self.q = queue.Queue()
        self.err = []
        threading.Thread(target=self._pump, args=(self.p.stdout, self.q), daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    @staticmethod
    def _pump(f, q):
        for line in f:
            q.put(line)
        q.put(None)

    def _pump_err(self):
        for line in self.p.stderr:
            self.err.append(line)

    def line(self, timeout=60):
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return None

    def ask(self, req, timeout=120):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        ln = self.line(timeout)
        if ln is None:
            raise RuntimeError("child gave no answer to %s; stderr: %s" % (short(req), "".join(self.err)[-2000:]))
        ans = json.loads(ln)
        if "error" in ans:
            raise RuntimeError("child error: " + ans["error"])
        return ans

    def kill(self):
        try:
            os.kill(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.wait()

    def wait(self, timeout=120):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.p.pid, signal.SIGKILL)
            rc = self.p.wait()
        time.sleep(0.01)
        return rc

    def stderr(self):
        return "".join(self.err)


def run_child(mode, args, env_extra=None, timeout=120):
    ch = Child(mode, args, env_extra)
    rc = ch.wait(timeout)
    lines = []
    while True:
        ln = ch.line(timeout=5)
        if ln is None:
            break
        lines.append(ln)
    return rc, "".join(lines), ch.stderr()


T3 = ("tg", "th", "r")


def create3(conn, decl, names=T3, schema="main"):
    conn.execute("CREATE VIRTUAL TABLE %s.%s USING gfsl(%s)" % (schema, names[0], decl))
    conn.execute("CREATE VIRTUAL TABLE %s.%s USING gpuhash(%s)" % (schema, names[1], decl))
    conn.execute("CREATE TABLE %s.%s(%s)" % (schema, names[2], decl))


def compare3(conn, cols, name, names=T3, strict_prev=None):
    """tg and th against r (ordered and unordered scans); returns the strict
    dumps of tg and th."""
    ref = dump(conn, names[2], cols)
    R.same(dump(conn, names[0], cols), ref, name + ": gfsl = ordinary table")
    R.same(dump(conn, names[1], cols, order=False), ref, name + ": gpuhash (scan) = ordinary table")
    strict = (dump(conn, names[0], cols, strict=True), dump(conn, names[1], cols, strict=True))
    if strict_prev is not None:
        R.same(strict[0], strict_prev[0], name + ": gfsl bit-exact as before the reopen")
        R.same(strict[1], strict_prev[1], name + ": gpuhash bit-exact as before the reopen")
    return strict


def probe_reads(conn, rng, keys, cols, name, names=T3):
    """Point, IN, range and ORDER BY DESC reads, vtabs against r."""
    bad = []
    sel = ", ".join("typeof(%s), %s" % (c, c) for c in cols)
    for _ in range(8):
        qs = []
        k = rng.choice(keys)
        qs.append(("SELECT k, %s FROM {t} WHERE k=?" % sel, (k,)))
        ks = rng.sample(keys, min(len(keys), 7))
        qs.append(("SELECT k, %s FROM {t} WHERE k IN (%s) ORDER BY k" % (sel, ",".join("?" * len(ks))), tuple(ks)))
        a, b = sorted(rng.sample(keys, 2))
        qs.append(("SELECT k, %s FROM {t} WHERE k BETWEEN ? AND ? ORDER BY k DESC LIMIT 20" % sel, (a, b)))
        qs.append(("SELECT count(*), sum(k % 1000) FROM {t} WHERE k > ?", (k,)))
        for sql, params in qs:
            res = [query(conn, sql.format(t=t), params) for t in names]
            if (res[0] != res[2] or res[1] != res[2]) and len(bad) < 3:
                bad.append((sql, params, res))
    R.check(not bad, name + ": point/IN/range reads = ordinary table", bad)


COLS2 = ["a", "b", "c"]
DECL2 = "k INTEGER PRIMARY KEY, a, b TEXT, c REAL"


def writes(conn, rng, keys, n, oc, weights=None):
    for _ in range(n):
        sql, params = rand_stmt(rng, keys, COLS2, weights)
        oc.add(sql, params, apply_stmt(conn, sql, params, T3))


def main(title, sections, children, argv):
    """Run a test's sections (or those argv names, by number or first word),
    or, with --child MODE ARGS, one of its children; the exit status."""
    global TMP
    if len(argv) >= 3 and argv[0] == "--child":
        children[argv[1]](json.loads(argv[2]))
        return 0
    os.environ.pop("GPUDS_FLUSH_ROWS", None)    # sections set it where wanted
    if not EXT or not os.path.exists(EXT):
        print("SKIPPED: gpuds.so not found (set GPUDS_EXT)")
        return 77
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        print("SKIPPED: this Python's sqlite3 cannot load extensions")
        return 77
    want = set(argv)
    TMP = tempfile.mkdtemp(prefix="gpuds_persist_")
    print("%s: seed %d, scale %g, backend %s, sqlite %s, tmp %s"
          % (title, SEED, SCALE, os.environ.get("GPUDS_BACKEND"), sqlite3.sqlite_version, TMP), flush=True)
    t_all = time.time()
    try:
        for name, fn in sections:
            if want and not any(name.startswith(w) or name.split()[1].startswith(w) for w in want):
                continue
            t0 = time.time()
            print("== %s" % name, flush=True)
            try:
                fn()
            except Exception:
                R.check(False, name + ": raised", traceback.format_exc())
            print("   %s: %.1f s" % (name, time.time() - t0), flush=True)
    finally:
        if os.environ.get("GPUDS_KEEP_TMP"):
            print("kept " + TMP)
        else:
            shutil.rmtree(TMP, ignore_errors=True)
    print("total %.1f s" % (time.time() - t_all))
    if R.failures:
        print("failed checks:")
        for f in R.failures:
            print("  - " + f)
    print("%d passed, %d failed" % (R.passed, R.failed), flush=True)
    return 1 if R.failed else 0
