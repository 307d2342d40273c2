#!/usr/bin/python3
"""Durable gfsl/gpuhash tables: persistence, rollback, crashes, concurrency.

Every check is differential: a gfsl table `tg` and a gpuhash table `th` get
the same statements as an ordinary rowid table `r` with the same column
declarations (normally in the same database file and the same transaction),
and their full contents (typeof() of every column included) are compared.

Sections
  1 round trips   every storage class and edge value (INT64_MIN/MAX, -0.0,
                  1e308, subnormals, inf, NaN, '', unicode, text with NUL,
                  invalid UTF-8, zero-length and 1 MB blobs, NULL) in columns
                  declared TEXT/REAL/BLOB/none/INTEGER/NUMERIC/FLOATING POINT/
                  STRING; several transactions of inserts, updates, key
                  changes, deletes, replaces; after each, a NEW connection must
                  read exactly the same (bit-exact floats) and gpuds_check()
                  = 'ok'; a connection opened before the writes must see them;
                  VACUUM; a 70k-row transaction (several shadow chunks);
                  done with the default flush size and with GPUDS_FLUSH_ROWS=7.
                  Also: a lowered SQLITE_LIMIT_LENGTH, and that identical
                  contents give identical shadow bytes.
  2 rollback      ROLLBACK, ROLLBACK TO, outer SAVEPOINTs and a failing xSync
                  (a RAISE trigger on a shadow table) with GPUDS_FLUSH_ROWS=100
                  (mid-transaction flushes): the shadow tables are byte-for-byte
                  what they were, contents equal the reference.
  3 crashes       a child process is SIGKILLed inside a big open transaction
                  (with flushes and page-cache spills) and at random moments of
                  a big COMMIT; afterwards the contents are entirely the old or
                  entirely the new state (the same for tg, th and r), for a
                  rollback-journal and a WAL database.
  4 concurrency   two connections of one process and two processes (driven
                  through pipes) apply one random write stream alternately,
                  reading on both after each step; two processes race inserts
                  into the same tables; COMMIT that gets SQLITE_BUSY and is
                  retried or rolled back; DROP/CREATE/RENAME by the other
                  connection.
  5 defensive     with SQLITE_DBCONFIG_DEFENSIVE (Connection.setconfig on
                  Python >= 3.12, else the sqlite3 shell's .dbconfig), writes,
                  DROP and ALTER on the shadow tables are refused, normal use
                  (and RENAME/DROP) of the tables works.
  6 rename/drop   ALTER TABLE RENAME and DROP TABLE leave no orphan shadow
                  tables, data survives the rename and a reopen, inside
                  transactions and rolled back, in main, an ATTACHed database
                  (re-attached under another name) and temp.
  7 corruption    hand-made damage to <t>_run (garbage, truncation, bad
                  lengths, unsorted keys, bad records ...), read in a child
                  process: it must not crash, and must report an error rather
                  than return wrong rows.  Damage that a check cannot see
                  (a deleted run, a deleted t_meta) is reported as NOTE only.
                  gpuds_check() of a connection whose structure disagrees
                  with the shadow tables must not say 'ok'.
  8 write amplification  a transaction that flushes F times must not rewrite
                  each key O(F) times at COMMIT (counted with a TEMP trigger
                  on the shadow table; the design promises O(log n)); a
                  range DELETE after 100 small commits writes its deletions
                  about twice (its run, one merge), not once per level.

Observed in section 7 when this test was written (host backend, 3191791):
  detected with an error: truncated vals, short keys blob, keys not
  ascending (xBulkLoad refuses), NULL keys/vals, negative n, wrong nCol,
  a TEXT cell longer than its record ("bad chunk" / "bad row record", and
  gpuds_check reports the same error); n*8 overflowing int is reported as
  "bad chunk" but valgrind shows heap over-reads before that.
  SIGSEGV: an entry length that is never validated because a newer run
  overrides the key (readerNext), which garbage or text in vals also hit.
  Silent wrong values, gpuds_check 'ok': an INTEGER cell of length 0 (reads
  8 bytes past the record) and a cell with an unknown storage class (NULL).
  Not detectable by design, noted only: a deleted run (rows silently revert
  to older values), an emptied t_meta (other connections never notice later
  commits: stale reads).  gpuds_check of a connection that loaded the table
  before its shadow row changed reports "1 of 100 shadow rows disagree".

Floats are compared bit-exactly except that 0.0 and -0.0 are equal in the
reference comparisons (an ordinary table turns -0.0 into 0.0 in a REAL
column); one dedicated check compares that sign, and the before/after-reopen
comparisons of a gpuds table are fully bit-exact.

Usage:
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
import math
import os
import queue
import random
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

from gpuds_testlib import (chunk_sum, entries4, keys_decode, keys_encode, record4_decode,
                           set_format, table_format, varint_put)

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


def dbpath(name):
    p = os.path.join(TMP, name)
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
    """A child process running this file with --child MODE ARGS; stdout is
    read by a thread into a queue so that reads can time out."""
    def __init__(self, mode, args, env_extra=None, stdin=False):
        env = dict(os.environ)
        env.pop("GPUDS_FLUSH_ROWS", None)
        env.update(env_extra or {})
        self.p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child", mode, json.dumps(args)],
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


# ================================================================ section 1
COLS1 = [("ct", "TEXT"), ("cr", "REAL"), ("cb", "BLOB"), ("cn", ""),
         ("ci", "INTEGER"), ("cm", "NUMERIC"), ("cf", "FLOATING POINT"),
         ("cs", "STRING")]
C1 = [c for c, _ in COLS1]
DECL1 = "k INTEGER PRIMARY KEY, " + ", ".join(("%s %s" % ct).strip() for ct in COLS1)
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


def big_rows(rng):
    """Rows with the extreme values, as (sql, params) INSERTs."""
    big1 = rng.randbytes(1 << 20)
    big2 = rng.randbytes((1 << 20) + 17)
    longtext = "\u00e9\u2603x" * 40000
    cols = ", ".join(C1)
    rows = [
        (MIN, [("?", (longtext,)), ("?", (-0.0,)), ("?", (big1,)), ("?", (1e308,)),
               ("?", (MIN,)), ("?", (MAX,)), ("?", (5e-324,)), ("?", ("",))]),
        (MAX, [("CAST(? AS TEXT)", (b"nul\x00inside",)), ("?", (MAX,)), ("zeroblob(0)", ()),
               ("?", (big2,)), ("?", (-0.0,)), ("?", (-1e308,)), ("?", ("12",)), ("?", (b"",))]),
        (0, [("?", ("",)), ("?", ("3",)), ("?", (b"",)), ("NULL", ()), ("?", ("-0.0",)),
             ("?", ("1e5",)), ("?", (float("inf"),)), ("?", (float("nan"),))]),
        (-1, [("CAST(? AS TEXT)", (b"\xff\xfe\x00",)), ("?", (2.2250738585072014e-308,)),
              ("?", ("\U0001d11e",)), ("?", (-5e-324,)), ("?", (2**53 + 1,)), ("?", (9.5,)),
              ("?", ("0x10",)), ("?", (" 7 ",))]),
    ]
    out = []
    for k, vals in rows:
        out.append(("INSERT OR REPLACE INTO {t}(k, %s) VALUES(?, %s)" % (cols, ", ".join(e for e, _ in vals)),
                    (k,) + tuple(p for _, ps in vals for p in ps)))
    return out


def roundtrip_phase(flush):
    tag = "roundtrip[flush=%s]" % (flush or "default")
    db = dbpath("rt_%s.db" % (flush or "def"))
    rng = random.Random(SEED + (flush or 0))
    keys = key_pool(rng, sz(300, 20))
    n_ops = sz(350, 30)
    with FlushEnv(flush):
        c = connect(db)
        create3(c, DECL1)
        other = connect(db)          # opened before any write
        other.execute("SELECT count(*) FROM tg").fetchall()
        other.execute("SELECT count(*) FROM th").fetchall()
        plans = [{"ins": 70, "rep": 10, "upd": 20},
                 None,
                 {"upd": 30, "key": 30, "del": 10, "ins": 20, "insrep": 10},
                 {"del": 40, "delr": 20, "ins": 10, "key": 10, "rep": 10, "upd": 10}]
        oc = Outcomes()
        prev = None
        for ti, w in enumerate(plans):
            c.execute("BEGIN")
            if ti == 0:
                for sql, params in big_rows(rng):
                    oc.add(sql, params, apply_stmt(c, sql, params, T3))
            for _ in range(n_ops):
                sql, params = rand_stmt(rng, keys, C1, w)
                oc.add(sql, params, apply_stmt(c, sql, params, T3))
            c.execute("COMMIT")
            name = "%s tx%d" % (tag, ti + 1)
            prev = compare3(c, C1, name + " same connection")
            R.same(dump(other, "tg", C1), dump(other, "r", C1), name + ": a connection opened earlier sees it (gfsl)")
            R.same(dump(other, "th", C1), dump(other, "r", C1), name + ": a connection opened earlier sees it (gpuhash)")
            c.close()
            c = connect(db)
            compare3(c, C1, name + " after reopen", strict_prev=prev)
            probe_reads(c, rng, keys, C1, name + " after reopen")
            for t in ("tg", "th"):
                R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s') after reopen" % (name, t))
                R.same(meta(c, t, "rows"), scalar(c, "SELECT count(*) FROM r"),
                       "%s: %s_meta rows = row count" % (name, t))
        oc.check(tag)
        c.execute("VACUUM")
        c.close()
        c = connect(db)
        compare3(c, C1, tag + " after VACUUM and reopen", strict_prev=prev)
        c.close()
        other.close()


def bulk_chunks():
    """More keys in one transaction than one shadow chunk holds (65536)."""
    n = sz(70000, 50)
    db = dbpath("bulk.db")
    c = connect(db)
    create3(c, "k INTEGER PRIMARY KEY, a, b TEXT")
    cte = ("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<%d) "
           "SELECT i*2654435761 %% 4000000007 - 2000000000, i, 'v'||i FROM s" % n)
    c.execute("BEGIN")
    c.execute("INSERT INTO r " + cte)
    c.execute("INSERT INTO tg SELECT * FROM r")
    c.execute("INSERT INTO th SELECT * FROM r")
    c.execute("COMMIT")
    c.close()
    c = connect(db)
    compare3(c, ["a", "b"], "bulk %d rows after reopen" % n)
    c.execute("BEGIN")
    for t in T3:
        c.execute("DELETE FROM %s WHERE a %% 3 = 0" % t)
        c.execute("UPDATE %s SET b = b || '!' WHERE a %% 5 = 0" % t)
    c.execute("COMMIT")
    c.close()
    c = connect(db)
    compare3(c, ["a", "b"], "bulk deletes/updates after reopen")
    for t in ("tg", "th"):
        R.same(check_ok(c, t), "ok", "bulk: gpuds_check('%s')" % t)
    c.close()


def negative_zero():
    """-0.0 in a REAL column reads back as the ordinary table gives it."""
    c = connect(":memory:")
    create3(c, "k INTEGER PRIMARY KEY, cr REAL, cn")
    for t in T3:
        c.execute("INSERT INTO %s VALUES(1, ?, ?)" % t, (-0.0, -0.0))
    ref = dump(c, "r", ["cr", "cn"], strict=True)
    R.same(dump(c, "tg", ["cr", "cn"], strict=True), ref,
           "-0.0 stored in a REAL column reads like the ordinary table (gfsl; sign of zero)")
    R.same(dump(c, "th", ["cr", "cn"], strict=True), ref,
           "-0.0 stored in a REAL column reads like the ordinary table (gpuhash; sign of zero)")
    c.close()


def limit_length():
    """A connection with a lowered SQLITE_LIMIT_LENGTH: every row fits, the
    shadow chunk does not.  The commit must persist or fail, never lose."""
    db = dbpath("limit.db")
    c = connect(db)
    create3(c, "k INTEGER PRIMARY KEY, v")
    c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100000)
    n = sz(300, 120)
    err = None
    try:
        c.execute("BEGIN")
        c.execute("INSERT INTO r WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s "
                  "WHERE i<%d) SELECT i, randomblob(1000) FROM s" % n)
        c.execute("INSERT INTO tg SELECT * FROM r")
        c.execute("INSERT INTO th SELECT * FROM r")
        c.execute("COMMIT")
    except sqlite3.Error as e:
        err = str(e)
        if c.in_transaction:
            c.execute("ROLLBACK")
    c.close()
    c = connect(db)
    for t in ("tg", "th"):
        try:
            got = dump(c, t, ["v"])
        except sqlite3.Error as e:
            got = "ERROR: %s" % e
        R.same(got, dump(c, "r", ["v"]),
               "SQLITE_LIMIT_LENGTH=100000, %d rows of 1000 bytes (commit %s): %s after reopen = ordinary table"
               % (n, "failed: " + err if err else "succeeded", t))
    c.close()


def deterministic_bytes():
    """Identical contents written twice give identical shadow bytes (no
    uninitialized memory reaches the database file)."""
    c = connect(":memory:")
    rows = [(i, i * 3, "v%d" % i, None, 1.5) for i in range(200)]
    for t in ("a", "b"):
        c.execute("CREATE VIRTUAL TABLE %s USING gfsl(k INTEGER PRIMARY KEY, x, y TEXT, z, w REAL)" % t)
        c.executemany("INSERT INTO %s VALUES(?,?,?,?,?)" % t, rows)
        c.execute("UPDATE %s SET x = x + 1 WHERE k %% 3 = 0" % t)
    ra = c.execute("SELECT n, keys, vals FROM a_run ORDER BY id").fetchall()
    rb = c.execute("SELECT n, keys, vals FROM b_run ORDER BY id").fetchall()
    detail = ""
    if ra != rb and ra and rb:
        va, vb = ra[0][2], rb[0][2]
        idx = [i for i in range(min(len(va), len(vb))) if va[i] != vb[i]]
        detail = "first differing byte offsets in vals: %s; a=%s b=%s" % (
            idx[:8], va[:48].hex(), vb[:48].hex())
    R.check(ra == rb, "identical rows give identical shadow bytes (no uninitialized padding written)", detail)
    c.close()


def sec_roundtrip():
    roundtrip_phase(None)
    roundtrip_phase(7)
    bulk_chunks()
    negative_zero()
    limit_length()
    deterministic_bytes()


# ================================================================ section 2
COLS2 = ["a", "b", "c"]
DECL2 = "k INTEGER PRIMARY KEY, a, b TEXT, c REAL"


def writes(conn, rng, keys, n, oc, weights=None):
    for _ in range(n):
        sql, params = rand_stmt(rng, keys, COLS2, weights)
        oc.add(sql, params, apply_stmt(conn, sql, params, T3))


def sec_rollback():
    rng = random.Random(SEED + 2)
    keys = key_pool(rng, sz(3000, 300))
    ins = {"ins": 60, "rep": 10, "upd": 15, "key": 5, "del": 10}
    with FlushEnv(100):
        db = dbpath("rollback.db")
        c = connect(db)
        create3(c, DECL2)
        oc = Outcomes()
        c.execute("BEGIN")
        writes(c, rng, keys, sz(500, 50), oc, ins)
        c.execute("COMMIT")
        s0 = shadow_snapshot(c, ("tg", "th"))
        d0 = [dump(c, t, COLS2, strict=True) for t in T3]

        # ROLLBACK of a transaction that flushed many times
        c.execute("BEGIN")
        writes(c, rng, keys, sz(1500, 150), oc, ins)
        probe_reads(c, rng, keys, COLS2, "rollback: inside the transaction")
        for t in ("tg", "th"):
            b = info_table(c, "main." + t)["batches"]
            R.check(b > 0, "rollback: GPUDS_FLUSH_ROWS=100 flushed %s mid-transaction" % t, "batches=%s" % b)
        R.check(shadow_snapshot(c, ("tg", "th")) == s0, "rollback: shadow tables untouched before COMMIT")
        c.execute("ROLLBACK")
        R.check(shadow_snapshot(c, ("tg", "th")) == s0, "ROLLBACK: shadow tables byte-for-byte unchanged")
        R.same([dump(c, t, COLS2, strict=True) for t in T3], d0, "ROLLBACK: contents as before")
        for t in ("tg", "th"):
            R.same(check_ok(c, t), "ok", "ROLLBACK: gpuds_check('%s')" % t)
        c.close()
        c = connect(db)
        R.same([dump(c, t, COLS2, strict=True) for t in T3], d0, "ROLLBACK: contents as before after reopen")

        # nested savepoints
        c.execute("BEGIN")
        writes(c, rng, keys, 50, oc)
        c.execute("SAVEPOINT a")
        writes(c, rng, keys, sz(300, 60), oc, ins)
        c.execute("SAVEPOINT b")
        writes(c, rng, keys, sz(400, 150), oc, ins)
        c.execute("ROLLBACK TO b")
        compare3(c, COLS2, "ROLLBACK TO b (inside transaction)")
        writes(c, rng, keys, sz(200, 40), oc)
        c.execute("ROLLBACK TO a")
        compare3(c, COLS2, "ROLLBACK TO a (inside transaction)")
        R.check(shadow_snapshot(c, ("tg", "th")) == s0, "savepoints: shadow tables untouched before COMMIT")
        writes(c, rng, keys, sz(150, 30), oc)
        c.execute("RELEASE a")
        c.execute("SAVEPOINT c")
        writes(c, rng, keys, sz(150, 30), oc)
        c.execute("RELEASE c")
        c.execute("COMMIT")
        d1 = compare3(c, COLS2, "savepoints committed")
        c.close()
        c = connect(db)
        compare3(c, COLS2, "savepoints committed, after reopen", strict_prev=d1)
        for t in ("tg", "th"):
            R.same(check_ok(c, t), "ok", "savepoints: gpuds_check('%s') after reopen" % t)

        # a savepoint that is the transaction
        c.execute("SAVEPOINT s")
        writes(c, rng, keys, sz(300, 120), oc, ins)
        c.execute("ROLLBACK TO s")
        writes(c, rng, keys, sz(50, 10), oc)
        c.execute("RELEASE s")
        d2 = compare3(c, COLS2, "outer SAVEPOINT/ROLLBACK TO/RELEASE")
        c.close()
        c = connect(db)
        compare3(c, COLS2, "outer SAVEPOINT, after reopen", strict_prev=d2)

        # xSync fails for one table (a trigger on its shadow table): the whole
        # transaction rolls back, the other table's store too
        s2 = shadow_snapshot(c, ("tg", "th"))
        d2 = [dump(c, t, COLS2, strict=True) for t in T3]
        c.execute("CREATE TRIGGER boom BEFORE INSERT ON th_run BEGIN SELECT RAISE(ABORT, 'boom'); END")
        c.execute("BEGIN")
        writes(c, rng, keys, sz(400, 150), oc, ins)
        err = None
        try:
            c.execute("COMMIT")
        except sqlite3.Error as e:
            err = str(e)
        R.check(err is not None and "boom" in err, "failing xSync makes COMMIT fail", err)
        R.check(not c.in_transaction, "failing xSync: transaction rolled back")
        if c.in_transaction:
            c.execute("ROLLBACK")
        c.execute("DROP TRIGGER boom")
        R.same([dump(c, t, COLS2, strict=True) for t in T3], d2, "failing xSync: every table as before (same connection)")
        R.check(shadow_snapshot(c, ("tg", "th")) == s2, "failing xSync: shadow tables unchanged")
        for t in ("tg", "th"):
            R.same(check_ok(c, t), "ok", "failing xSync: gpuds_check('%s')" % t)
        c.execute("BEGIN")
        writes(c, rng, keys, 30, oc)
        c.execute("COMMIT")
        d3 = compare3(c, COLS2, "commit after the failed one")
        c.close()
        c = connect(db)
        compare3(c, COLS2, "commit after the failed one, after reopen", strict_prev=d3)
        c.close()
        oc.check("rollback section")


# ================================================================ section 3
DECL3 = "k INTEGER PRIMARY KEY, a, b"
COLS3 = ["a", "b"]


def state3(conn):
    """A digest of each of tg, th, r (raw rows: repr() of a float is exact)."""
    return [hashlib.sha1(repr(conn.execute(
        "SELECT k, typeof(a), a, typeof(b), b FROM %s ORDER BY k" % t).fetchall()).encode()).hexdigest()
        for t in T3]


def make_base3(db, mode):
    c = connect(db)
    c.execute("PRAGMA journal_mode=%s" % mode)
    create3(c, DECL3)
    n = sz(2000, 100)
    c.execute("BEGIN")
    c.execute("INSERT INTO r WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s "
              "WHERE i<%d) SELECT i, i, 'base'||i FROM s" % n)
    c.execute("INSERT INTO tg SELECT * FROM r")
    c.execute("INSERT INTO th SELECT * FROM r")
    c.execute("COMMIT")
    st = state3(c)
    c.close()
    return st


def after_crash(db, expect, name, mode):
    """Reopen after a kill: integrity, gpuds_check, and the state."""
    c = connect(db)
    R.same(scalar(c, "PRAGMA integrity_check"), "ok", name + ": integrity_check")
    st = state3(c)
    for t in ("tg", "th"):
        R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s')" % (name, t))
    R.check(st[0] == st[2] and st[1] == st[2], name + ": tg, th and r hold the same rows",
            st)
    R.check(st in expect, name + ": contents are one committed state", (st, expect))
    # still usable
    c.execute("INSERT INTO tg VALUES(-5, 'after', 'crash')")
    c.execute("INSERT INTO th VALUES(-5, 'after', 'crash')")
    c.execute("INSERT INTO r VALUES(-5, 'after', 'crash')")
    c.close()
    c = connect(db)
    st2 = state3(c)
    R.check(st2[0] == st2[2] and st2[1] == st2[2] and st2 != st,
            name + ": a write after recovery survives a reopen")
    c.execute("DELETE FROM tg WHERE k=-5")
    c.execute("DELETE FROM th WHERE k=-5")
    c.execute("DELETE FROM r WHERE k=-5")
    c.close()
    return expect.index(st) if st in expect else -1


def sec_crash():
    n_mid = sz(200000, 2000)
    n_commit = sz(30000, 1000)
    rng = random.Random(SEED + 3)
    for mode in ("delete", "wal"):
        # --- killed inside an open transaction
        db = dbpath("crash_mid_%s.db" % mode)
        base = make_base3(db, mode)
        ch = Child("crash_mid", {"db": db, "n": n_mid}, {"GPUDS_FLUSH_ROWS": "1000"})
        ln = ch.line(timeout=120)
        ok = ln is not None and ln.startswith("READY")
        R.check(ok, "crash[%s]: child reached the open transaction" % mode, ch.stderr()[-2000:])
        if ok:
            b = [int(x) for x in ln.split()[1:3]]
            R.check(b[0] > 0 and b[1] > 0, "crash[%s]: child flushed inside the transaction" % mode, b)
            extra = [s for s in ("-journal", "-wal") if os.path.exists(db + s) and os.path.getsize(db + s) > 0]
        rc = ch.kill()
        R.check(rc == -signal.SIGKILL, "crash[%s]: child killed by SIGKILL" % mode, rc)
        if ok:
            note("crash[%s] mid-transaction: killed with %s present" % (mode, extra or "no journal/wal"))
        after_crash(db, [base], "crash[%s] mid-transaction" % mode, mode)

        # --- killed during COMMIT
        tmpl = dbpath("crash_commit_%s_tmpl.db" % mode)
        old = make_base3(tmpl, mode)
        cal = dbpath("crash_commit_%s_cal.db" % mode)
        shutil.copyfile(tmpl, cal)
        env = {"GPUDS_FLUSH_ROWS": str(max(100, n_commit // 10))}
        rc, out, err = run_child("crash_commit", {"db": cal, "n": n_commit}, env)
        R.check(rc == 0 and "DONE" in out, "crash[%s]: calibration commit" % mode, err[-2000:])
        if rc != 0:
            continue
        dur = float(out.split("DONE")[1].split()[0])
        c = connect(cal)
        new = state3(c)
        c.close()
        R.check(new != old, "crash[%s]: the big transaction changes the contents" % mode)
        outcomes = []
        trials = 5
        for i in range(trials):
            db = dbpath("crash_commit_%s_%d.db" % (mode, i))
            shutil.copyfile(tmpl, db)
            ch = Child("crash_commit", {"db": db, "n": n_commit}, env)
            ln = None
            while True:
                ln = ch.line(timeout=120)
                if ln is None or ln.startswith("COMMIT"):
                    break
            if ln is None:
                R.check(False, "crash[%s]: child reached COMMIT" % mode, ch.stderr()[-2000:])
                ch.kill()
                continue
            delay = dur * (i + rng.random()) / trials * 2.0
            time.sleep(delay)
            ch.kill()
            outcomes.append(after_crash(db, [old, new], "crash[%s] during COMMIT (kill after %.1f ms)"
                                        % (mode, delay * 1000), mode))
        note("crash[%s] during COMMIT (commit takes %.0f ms): outcomes old=%d new=%d other=%d"
             % (mode, dur * 1000, outcomes.count(0), outcomes.count(1), outcomes.count(-1)))


def child_crash_mid(a):
    c = connect(a["db"])
    c.execute("PRAGMA cache_size=20")
    n = a["n"]
    cte = "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<%d) "
    c.execute("BEGIN")
    c.execute("INSERT INTO tg " + cte % n + "SELECT 1000000+i, i, 'mid'||i FROM s")
    c.execute("INSERT INTO th " + cte % (n // 4) + "SELECT 1000000+i, i, 'mid'||i FROM s")
    for t in ("tg", "th"):
        c.execute("UPDATE %s SET a='mid' WHERE k %% 3 = 0 AND k < 1000000" % t)
        c.execute("DELETE FROM %s WHERE k %% 5 = 0 AND k < 1000000" % t)
    c.execute("UPDATE r SET a='mid' WHERE k % 3 = 0")
    c.execute("INSERT INTO r " + cte % max(100, n // 20) + "SELECT 1000000+i, i, randomblob(400) FROM s")
    bg = info_table(c, "main.tg")["batches"]
    bh = info_table(c, "main.th")["batches"]
    print("READY %d %d" % (bg, bh), flush=True)
    time.sleep(300)


def child_crash_commit(a):
    c = connect(a["db"])
    n = a["n"]
    c.execute("BEGIN")
    for t in T3:
        c.execute("INSERT INTO %s WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s "
                  "WHERE i<%d) SELECT 5000000+i, i, printf('%%08d', i*7) FROM s" % (t, n))
        c.execute("UPDATE %s SET b = 'upd'||k WHERE k %% 7 = 0" % t)
        c.execute("DELETE FROM %s WHERE k %% 11 = 0" % t)
    print("COMMIT", flush=True)
    t0 = time.time()
    c.execute("COMMIT")
    print("DONE %.6f" % (time.time() - t0), flush=True)
    c.close()


# ================================================================ section 4
COLS4 = ["a", "b", "c"]
DECL4 = "k INTEGER PRIMARY KEY, a, b TEXT, c BLOB"


def read_queries(rng, keys, full):
    sel = "k, typeof(a), a, typeof(b), b, typeof(c), c"
    qs = []
    k = rng.choice(keys)
    qs.append(["SELECT %s FROM {t} WHERE k=?" % sel, [k]])
    ks = rng.sample(keys, min(5, len(keys)))
    qs.append(["SELECT %s FROM {t} WHERE k IN (%s) ORDER BY k" % (sel, ",".join("?" * len(ks))), ks])
    a, b = sorted(rng.sample(keys, 2))
    qs.append(["SELECT %s FROM {t} WHERE k BETWEEN ? AND ? ORDER BY k" % sel, [a, b]])
    qs.append(["SELECT count(*), total(k % 100000) FROM {t}", []])
    if full:
        qs.append(["SELECT %s FROM {t} ORDER BY k" % sel, []])
    return qs


def run_reads(conn, qs, tables=T3):
    return [[query(conn, sql.format(t=t), params) for t in tables] for sql, params in qs]


def reads_agree(res):
    return all(r[0] == r[2] and r[1] == r[2] for r in res)


def two_connections(mode):
    tag = "2 connections[%s]" % mode
    db = dbpath("two_%s.db" % mode)
    A = connect(db)
    A.execute("PRAGMA journal_mode=%s" % mode)
    create3(A, DECL4)
    B = connect(db)
    rng = random.Random(SEED + 4 + len(mode))
    keys = key_pool(rng, sz(200, 30))
    oc = Outcomes()
    bad = []
    n = sz(250, 30)
    for i in range(n):
        X, Y = (A, B) if i % 2 == 0 else (B, A)
        r = rng.random()
        X.execute("BEGIN IMMEDIATE")
        m = 1 if r < 0.75 else rng.randint(2, 10)
        for _ in range(m):
            sql, params = rand_stmt(rng, keys, COLS4)
            oc.add(sql, params, apply_stmt(X, sql, params, T3))
        if m > 1:
            # the other connection reads while the write transaction is open
            res = run_reads(Y, read_queries(rng, keys, False))
            if not reads_agree(res) and len(bad) < 3:
                bad.append(("during open txn of other", i, res))
        X.execute("ROLLBACK" if r > 0.93 else "COMMIT")
        full = i % 20 == 0 or i == n - 1
        qs = read_queries(rng, keys, full)
        ra, rb = run_reads(A, qs), run_reads(B, qs)
        if (not reads_agree(ra) or not reads_agree(rb) or ra != rb) and len(bad) < 3:
            bad.append(("step", i, "A:", ra, "B:", rb))
    R.check(not bad, tag + ": reads on both connections after every step = ordinary table", bad)
    oc.check(tag)
    for conn, cn in ((A, "A"), (B, "B")):
        for t in ("tg", "th"):
            R.same(check_ok(conn, t), "ok", "%s: gpuds_check('%s') on %s" % (tag, t, cn))

    if mode == "delete":
        busy_commit(db, A)

    # schema changes by the other connection
    A.execute("DROP TABLE tg")
    A.execute("CREATE VIRTUAL TABLE tg USING gfsl(%s)" % DECL4)
    A.execute("INSERT INTO tg SELECT * FROM r")
    A.execute("ALTER TABLE th RENAME TO th2")
    R.same(dump(B, "tg", COLS4), dump(B, "r", COLS4), tag + ": B reads the table A dropped and re-created")
    R.same(dump(B, "th2", COLS4), dump(B, "r", COLS4), tag + ": B reads the table A renamed")
    B.execute("INSERT INTO th2 VALUES(12345678, 'b', 'b', x'bb')")
    B.execute("INSERT INTO tg VALUES(12345678, 'b', 'b', x'bb')")
    B.execute("INSERT INTO r VALUES(12345678, 'b', 'b', x'bb')")
    R.same(dump(A, "th2", COLS4), dump(A, "r", COLS4), tag + ": A sees B's write to the renamed table")
    R.same(dump(A, "tg", COLS4), dump(A, "r", COLS4), tag + ": A sees B's write to the re-created table")
    A.execute("ALTER TABLE th2 RENAME TO th")
    A.close()
    B.close()


def busy_commit(db, A):
    """COMMIT that gets SQLITE_BUSY (a reader holds SHARED): retried, or
    rolled back."""
    tag = "busy COMMIT"
    B = connect(db, timeout=0)
    rng = random.Random(SEED + 44)
    keys = key_pool(rng, 50)
    oc = Outcomes()
    gen0 = [meta(B, t, "generation") for t in ("tg", "th")]
    A.execute("BEGIN")
    A.execute("SELECT * FROM tg").fetchall()
    A.execute("SELECT * FROM r").fetchall()
    B.execute("BEGIN")
    for _ in range(20):
        sql, params = rand_stmt(rng, keys, COLS4, {"ins": 60, "upd": 20, "del": 20})
        oc.add(sql, params, apply_stmt(B, sql, params, T3))
    fails = 0
    for _ in range(2):
        try:
            B.execute("COMMIT")
        except sqlite3.OperationalError:
            fails += 1
    R.check(fails == 2 and B.in_transaction, tag + ": COMMIT is busy while a reader holds the database")
    A.execute("COMMIT")
    B.execute("COMMIT")
    compare3(B, COLS4, tag + " retried: writer")
    compare3(A, COLS4, tag + " retried: reader")
    for t in ("tg", "th"):
        R.same(check_ok(B, t), "ok", tag + " retried: gpuds_check('%s')" % t)
    gen1 = [meta(B, t, "generation") for t in ("tg", "th")]
    R.same([g1 - g0 for g0, g1 in zip(gen0, gen1)], [1, 1],
           tag + " retried twice: 'generation' counts one commit (shadow.c: it counts commits)")

    # busy, then ROLLBACK
    before = [dump(B, t, COLS4, strict=True) for t in T3]
    A.execute("BEGIN")
    A.execute("SELECT * FROM th").fetchall()
    B.execute("BEGIN")
    for _ in range(20):
        sql, params = rand_stmt(rng, keys, COLS4, {"ins": 60, "upd": 20, "del": 20})
        oc.add(sql, params, apply_stmt(B, sql, params, T3))
    try:
        B.execute("COMMIT")
        R.check(False, tag + ": second COMMIT should be busy")
    except sqlite3.OperationalError:
        pass
    B.execute("ROLLBACK")
    A.execute("COMMIT")
    R.same([dump(B, t, COLS4, strict=True) for t in T3], before, tag + " then ROLLBACK: writer as before")
    R.same([dump(A, t, COLS4, strict=True) for t in T3], before, tag + " then ROLLBACK: reader as before")
    B.close()
    C = connect(db)
    R.same([dump(C, t, COLS4, strict=True) for t in T3], before, tag + " then ROLLBACK: after reopen")
    C.close()
    oc.check(tag)


def two_processes(mode):
    tag = "2 processes[%s]" % mode
    db = dbpath("twoproc_%s.db" % mode)
    c = connect(db)
    c.execute("PRAGMA journal_mode=%s" % mode)
    create3(c, DECL4)
    c.close()
    P = [Child("worker", {"db": db}, stdin=True) for _ in range(2)]
    rng = random.Random(SEED + 5 + len(mode))
    keys = key_pool(rng, sz(150, 30))
    bad = []
    nbad = 0
    try:
        n = sz(150, 20)
        for i in range(n):
            X = P[i % 2]
            m = 1 if rng.random() < 0.8 else rng.randint(2, 8)
            stmts = [list(rand_stmt(rng, keys, COLS4, literal_bytes=True)) for _ in range(m)]
            end = "ROLLBACK" if rng.random() < 0.07 else "COMMIT"
            ans = X.ask({"w": stmts, "end": end})
            for (sql, params), outs in zip(stmts, ans["w"]):
                if any(o != outs[-1] for o in outs[:-1]):
                    nbad += 1
                    if len(bad) < 3:
                        bad.append(("outcome", sql, params, outs))
            qs = read_queries(rng, keys, i % 15 == 0 or i == n - 1)
            r1 = P[0].ask({"r": qs})["r"]
            r2 = P[1].ask({"r": qs})["r"]
            if not reads_agree(r1) or not reads_agree(r2) or r1 != r2:
                nbad += 1
                if len(bad) < 3:
                    bad.append(("reads after step", i, "P1:", r1, "P2:", r2))
        R.check(nbad == 0, tag + ": alternating writes, reads in both processes = ordinary table", bad)
        for j, p in enumerate(P):
            chk = p.ask({"check": ["tg", "th"]})["check"]
            R.same(chk, ["ok", "ok"], "%s: gpuds_check in process %d" % (tag, j + 1))
        for p in P:
            p.ask({"quit": 1})
    finally:
        for p in P:
            if p.wait(30) != 0:
                R.check(False, tag + ": worker exit", p.stderr()[-2000:])
    c = connect(db)
    compare3(c, COLS4, tag + ": after both processes ended")
    c.close()


def racing_inserts(mode):
    tag = "racing inserts[%s]" % mode
    db = dbpath("race_%s.db" % mode)
    c = connect(db)
    c.execute("PRAGMA journal_mode=%s" % mode)
    create3(c, DECL4)
    c.close()
    n = sz(300, 20)
    P = [Child("inserter", {"db": db, "parity": p, "n": n}) for p in (0, 1)]
    res = []
    for p in P:
        rc = p.wait(120)
        out = p.line(timeout=5)
        res.append((rc, out))
        R.check(rc == 0 and out, tag + ": inserter exit", p.stderr()[-2000:])
    for rc, out in res:
        if out:
            j = json.loads(out)
            R.check(j["nerr"] == 0, tag + ": no failed insert (busy timeout 10 s)", j)
            R.check(j["mism"] == 0, tag + ": the inserter's reads agree (tg, th, r in one snapshot)", j)
    c = connect(db)
    want = [("i%d" % k,) for k in range(2 * n)]
    for t in T3:
        R.same(query(c, "SELECT k FROM %s ORDER BY k" % t), want, "%s: %s holds every row of both processes" % (tag, t))
    compare3(c, COLS4, tag)
    for t in ("tg", "th"):
        R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s')" % (tag, t))
    c.close()


def sec_concurrency():
    for mode in ("delete", "wal"):
        two_connections(mode)
    for mode in ("delete", "wal"):
        two_processes(mode)
    for mode in ("delete", "wal"):
        racing_inserts(mode)


def child_worker(a):
    c = connect(a["db"])
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if "quit" in req:
                print(json.dumps({"bye": 1}), flush=True)
                break
            if "w" in req:
                c.execute("BEGIN IMMEDIATE")
                out = [apply_stmt(c, sql, tuple(params), T3) for sql, params in req["w"]]
                c.execute(req["end"])
                ans = {"w": out}
            elif "r" in req:
                ans = {"r": [[list(map(list, rows)) for rows in r]
                             for r in run_reads(c, [(s, tuple(p)) for s, p in req["r"]])]}
                # lists, not tuples, as the parent's JSON gives them back
            else:
                ans = {"check": [check_ok(c, t) for t in req["check"]]}
        except Exception:
            ans = {"error": traceback.format_exc()}
        print(json.dumps(ans), flush=True)


def child_inserter(a):
    c = connect(a["db"], timeout=10)
    p, n = a["parity"], a["n"]
    mism = 0
    errs = []
    for i in range(n):
        k = 2 * i + p
        try:
            c.execute("BEGIN IMMEDIATE")
            for t in T3:
                c.execute("INSERT INTO %s VALUES(?, ?, ?, ?)" % t, (k, p, "p%d" % i, bytes([i % 256])))
            c.execute("COMMIT")
        except sqlite3.Error as e:
            errs.append("%d: %s" % (k, e))
            if c.in_transaction:
                c.execute("ROLLBACK")
        if i % 5 == 0:
            c.execute("BEGIN")
            cnt = [c.execute("SELECT count(*), total(k), total(length(b)) FROM %s" % t).fetchone() for t in T3]
            c.execute("COMMIT")
            if cnt[0] != cnt[2] or cnt[1] != cnt[2]:
                mism += 1
    print(json.dumps({"mism": mism, "nerr": len(errs), "errs": errs[:5]}), flush=True)


# ================================================================ section 5
def sec_defensive():
    db = dbpath("defensive.db")
    c = connect(db)
    create3(c, DECL2)
    rng = random.Random(SEED + 6)
    keys = key_pool(rng, 60)
    oc = Outcomes()
    c.execute("BEGIN")
    writes(c, rng, keys, 80, oc, {"ins": 80, "upd": 20})
    c.execute("COMMIT")
    s0 = shadow_snapshot(c, ("tg", "th"))
    c.close()

    forbidden = []
    for t in ("tg", "th"):
        forbidden += [
            ("INSERT INTO %s_meta VALUES('x', 1)" % t, "modified"),
            ("UPDATE %s_meta SET value=value+1 WHERE key='generation'" % t, "modified"),
            ("DELETE FROM %s_meta" % t, "modified"),
            ("REPLACE INTO %s_meta VALUES('rows', 0)" % t, "modified"),
            ("INSERT INTO %s_run(id, n, keys, vals) VALUES(1, 0, x'', x'')" % t, "modified"),
            ("INSERT INTO %s_run SELECT id+1, n, keys, vals FROM %s_run" % (t, t), "modified"),
            ("UPDATE %s_run SET n=n" % t, "modified"),
            ("DELETE FROM %s_run" % t, "modified"),
            ("DROP TABLE %s_run" % t, "dropped"),
            ("INSERT INTO %s_ovfl VALUES(1, x'00')" % t, "modified"),
            ("DROP TABLE %s_ovfl" % t, "dropped"),
            ("ALTER TABLE %s_meta RENAME TO zz" % t, "altered"),
        ]
    py_setconfig = hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE") and hasattr(sqlite3.Connection, "setconfig")
    shell = shutil.which("sqlite3")
    if py_setconfig:
        c = connect(db)
        c.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
        for sql, word in forbidden:
            try:
                c.execute(sql)
                R.check(False, "defensive (setconfig): refused: " + sql)
            except sqlite3.Error as e:
                R.check("may not be " + word in str(e), "defensive (setconfig): refused: " + sql, str(e))
        c.close()
    elif shell:
        note("defensive: Python %s has no Connection.setconfig; using %s" % (sys.version.split()[0], shell))
    if not shell and not py_setconfig:
        note("defensive: SKIPPED (no Connection.setconfig and no sqlite3 shell)")
        return
    if shell:
        pre = ".load %s\n.dbconfig defensive on\n" % EXT
        for sql, word in forbidden:
            p = subprocess.run([shell, "-batch", db], input=pre + sql + ";\n",
                               capture_output=True, text=True, timeout=60)
            R.check(p.returncode != 0 and ("may not be " + word) in p.stderr,
                    "defensive (shell): refused: " + sql, p.stderr.strip())
    c = connect(db)
    R.check(shadow_snapshot(c, ("tg", "th")) == s0, "defensive: shadow tables unchanged by the refused statements")
    c.close()

    # normal use in defensive mode, through the shell (or setconfig)
    lines = []
    for _ in range(60):
        sql, params = rand_stmt(rng, keys, COLS2, literal_bytes=True)
        sql = sql.replace("?", "%s")
        lit = tuple(sqlite_literal(p) for p in params)
        for t in T3:
            lines.append(sql.format(t=t) % lit + ";")
    script = ["BEGIN;"] + lines[:90] + ["COMMIT;"]
    script += ["SAVEPOINT s;"] + lines[90:150] + ["ROLLBACK TO s;", "RELEASE s;"]
    script += lines[150:]
    script += ["SELECT 'CHECK', gpuds_check('tg'), gpuds_check('th');"]
    out, err = run_defensive(db, script, shell, py_setconfig)
    R.check("CHECK|ok|ok" in out, "defensive: writes through the tables work, gpuds_check ok", (out[-500:], err[-1500:]))
    c = connect(db)
    compare3(c, COLS2, "defensive: after normal use")
    c.close()
    out, err = run_defensive(db, ["ALTER TABLE tg RENAME TO ug;", "ALTER TABLE th RENAME TO uh;",
                                  "INSERT INTO ug SELECT -k, a, b, c FROM r WHERE k > 0;",
                                  "INSERT INTO uh SELECT -k, a, b, c FROM r WHERE k > 0;",
                                  "INSERT INTO r SELECT -k, a, b, c FROM r WHERE k > 0;",
                                  "SELECT 'CHECK', gpuds_check('ug'), gpuds_check('uh');"], shell, py_setconfig)
    R.check("CHECK|ok|ok" in out, "defensive: RENAME then writes work", (out[-500:], err[-1500:]))
    c = connect(db)
    R.same(schema_names(c), sorted(["r", "uh", "uh_meta", "uh_run", "uh_ovfl", "ug", "ug_meta", "ug_run", "ug_ovfl"]),
           "defensive: RENAME renames the shadow tables")
    compare3(c, COLS2, "defensive: after RENAME", names=("ug", "uh", "r"))
    c.close()
    out, err = run_defensive(db, ["DROP TABLE ug;", "DROP TABLE uh;", "SELECT 'DONE';"], shell, py_setconfig)
    R.check("DONE" in out and not err.strip(), "defensive: DROP TABLE works", err[-1500:])
    c = connect(db)
    R.same(schema_names(c), ["r"], "defensive: DROP TABLE leaves no shadow tables")
    c.close()


def sqlite_literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "NULL"
        if math.isinf(v):
            return "1e999" if v > 0 else "-1e999"
        return repr(v)
    if isinstance(v, bytes):
        return "x'%s'" % v.hex()
    return "'%s'" % v.replace("'", "''")


def run_defensive(db, script, shell, py_setconfig):
    if shell:
        p = subprocess.run([shell, "-batch", db],
                           input=".load %s\n.dbconfig defensive on\n" % EXT + "\n".join(script) + "\n",
                           capture_output=True, text=True, timeout=120)
        return p.stdout, p.stderr
    c = connect(db)
    c.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
    out, err = [], []
    for s in script:
        try:
            for row in c.execute(s):
                out.append("|".join(x.decode() if isinstance(x, bytes) else str(x) for x in row))
        except sqlite3.Error as e:
            err.append(str(e))
    c.close()
    return "\n".join(out), "\n".join(err)


# ================================================================ section 6
def sec_rename_drop():
    schema_reload_in_txn()
    for where in ("main", "aux", "temp"):
        rename_in_txn(where)
    rng = random.Random(SEED + 7)
    keys = key_pool(rng, 80)
    for where in ("main", "aux", "temp"):
        tag = "rename/drop[%s]" % where
        db = dbpath("rename_%s.db" % where)
        auxdb = dbpath("rename_%s_aux.db" % where)
        c = connect(db)
        if where == "aux":
            c.execute("ATTACH ? AS aux", (auxdb,))
        s = where
        q = lambda n: "%s.%s" % (s, n)
        create3(c, DECL2, schema=s)
        oc = Outcomes()
        tabs = (q("tg"), q("th"), q("r"))
        c.execute("BEGIN")
        for _ in range(120):
            sql, params = rand_stmt(rng, keys, COLS2, {"ins": 70, "upd": 20, "del": 10})
            oc.add(sql, params, apply_stmt(c, sql, params, tabs))
        c.execute("COMMIT")
        before = compare3(c, COLS2, tag + " before", names=tabs)
        c.execute("ALTER TABLE %s RENAME TO ug" % q("tg"))
        c.execute("ALTER TABLE %s RENAME TO uh" % q("th"))
        R.same(schema_names(c, s), sorted(["r", "ug", "ug_meta", "ug_run", "ug_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": RENAME renames the shadow tables, no orphans")
        tabs = (q("ug"), q("uh"), q("r"))
        compare3(c, COLS2, tag + " after RENAME", names=tabs, strict_prev=before)
        for t in tabs[:2]:
            R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s') after RENAME" % (tag, t))
        c.execute("BEGIN")
        for _ in range(40):
            sql, params = rand_stmt(rng, keys, COLS2)
            oc.add(sql, params, apply_stmt(c, sql, params, tabs))
        c.execute("COMMIT")
        d = compare3(c, COLS2, tag + " writes after RENAME", names=tabs)
        if where != "temp":
            c.close()
            c = connect(db)
            if where == "aux":
                s = "aux2"           # re-attached under another name
                c.execute("ATTACH ? AS aux2", (auxdb,))
                tabs = (q("ug"), q("uh"), q("r"))
            for t in tabs[:2]:
                R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s') after reopen, before any other use" % (tag, t))
            compare3(c, COLS2, tag + " after RENAME and reopen", names=tabs, strict_prev=d)
        # RENAME inside a transaction (no writes pending: rename_in_txn()
        # covers those on a database of its own)
        c.execute("BEGIN")
        c.execute("ALTER TABLE %s RENAME TO vg" % q("ug"))
        tabs = (q("vg"), q("uh"), q("r"))
        for _ in range(30):
            sql, params = rand_stmt(rng, keys, COLS2)
            oc.add(sql, params, apply_stmt(c, sql, params, tabs))
        c.execute("COMMIT")
        R.same(schema_names(c, s), sorted(["r", "vg", "vg_meta", "vg_run", "vg_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": RENAME inside a transaction")
        d = compare3(c, COLS2, tag + " RENAME inside a transaction", names=tabs)
        # RENAME and DROP rolled back
        c.execute("BEGIN")
        c.execute("ALTER TABLE %s RENAME TO wg" % q("vg"))
        c.execute("INSERT INTO %s VALUES(77777, 1, 2, 3)" % q("wg"))
        c.execute("DROP TABLE %s" % q("uh"))
        c.execute("ROLLBACK")
        R.same(schema_names(c, s), sorted(["r", "vg", "vg_meta", "vg_run", "vg_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": RENAME and DROP rolled back: schema as before")
        compare3(c, COLS2, tag + " RENAME and DROP rolled back", names=tabs, strict_prev=d)
        for t in tabs[:2]:
            R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s') after rolled-back RENAME/DROP" % (tag, t))
        if where != "temp":
            c.close()
            c = connect(db)
            if where == "aux":
                c.execute("ATTACH ? AS aux2", (auxdb,))
            compare3(c, COLS2, tag + " rolled back, after reopen", names=tabs, strict_prev=d)
        # DROP of a table with writes pending in the transaction, rolled back
        c.execute("BEGIN")
        c.execute("INSERT INTO %s VALUES(88888, 1, 2, 3)" % q("vg"))
        c.execute("DELETE FROM %s WHERE k IN (SELECT k FROM %s LIMIT 3)" % (q("uh"), q("r")))
        c.execute("DROP TABLE %s" % q("vg"))
        c.execute("DROP TABLE %s" % q("uh"))
        c.execute("ROLLBACK")
        compare3(c, COLS2, tag + " DROP of tables with pending writes, rolled back", names=tabs, strict_prev=d)
        # CREATE, write, ROLLBACK: nothing left; CREATE again works
        c.execute("BEGIN")
        c.execute("CREATE VIRTUAL TABLE %s USING gfsl(k INTEGER PRIMARY KEY, v)" % q("zg"))
        c.execute("CREATE VIRTUAL TABLE %s USING gpuhash(k INTEGER PRIMARY KEY, v)" % q("zh"))
        c.execute("INSERT INTO %s VALUES(1, 1)" % q("zg"))
        c.execute("INSERT INTO %s VALUES(1, 1)" % q("zh"))
        c.execute("ROLLBACK")
        R.same(schema_names(c, s), sorted(["r", "vg", "vg_meta", "vg_run", "vg_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": CREATE VIRTUAL TABLE rolled back leaves nothing")
        c.execute("CREATE VIRTUAL TABLE %s USING gfsl(k INTEGER PRIMARY KEY, v)" % q("zg"))
        c.execute("INSERT INTO %s VALUES(2, 2)" % q("zg"))
        R.same(query(c, "SELECT * FROM %s" % q("zg")), [("i2", "i2")], tag + ": CREATE again after a rolled-back CREATE")
        c.execute("DROP TABLE %s" % q("zg"))
        c.execute("DROP TABLE %s" % q("vg"))
        c.execute("DROP TABLE %s" % q("uh"))
        R.same(schema_names(c, s), ["r"], tag + ": DROP TABLE leaves no orphan shadow tables")
        if where == "temp":
            R.same(schema_names(c, "main"), [], tag + ": nothing in main")
        else:
            c.close()
            c = connect(db)
            if where == "aux":
                c.execute("ATTACH ? AS aux2", (auxdb,))
                R.same(schema_names(c, "main"), [], tag + ": nothing in main")
            R.same(schema_names(c, s), ["r"], tag + ": DROP TABLE, after reopen")
        c.close()
        oc.check(tag)


def rename_in_txn(where):
    """RENAME inside a transaction whose earlier statements wrote to the
    renamed table and to another one."""
    tag = "RENAME with pending writes[%s]" % where
    db = dbpath("rename_txn_%s.db" % where)
    c = connect(db)
    if where == "aux":
        c.execute("ATTACH ? AS aux", (dbpath("rename_txn_aux2.db"),))
    q = lambda n: "%s.%s" % (where, n)
    create3(c, DECL2, schema=where)
    tabs = (q("tg"), q("th"), q("r"))
    for i in range(1, 6):
        for t in tabs:
            c.execute("INSERT INTO %s VALUES(?, 'committed', 'c', 1.0)" % t, (i,))
    oc = Outcomes()
    c.execute("BEGIN")
    for sql in ("INSERT INTO {t} VALUES(10, 'pending', 'p', 2.0)", "DELETE FROM {t} WHERE k=1",
                "UPDATE {t} SET a='updated' WHERE k=2"):
        oc.add(sql, (), apply_stmt(c, sql, (), tabs))
    c.execute("ALTER TABLE %s RENAME TO ug" % q("tg"))
    tabs = (q("ug"), q("th"), q("r"))
    compare3(c, COLS2, tag + ": the transaction's writes still visible after the RENAME", names=tabs)
    for sql in ("INSERT INTO {t} VALUES(10, 'dup', 'd', 3.0)", "DELETE FROM {t} WHERE k=10",
                "UPDATE {t} SET a='again' WHERE k=1", "INSERT INTO {t} VALUES(11, 'new', 'n', 4.0)"):
        oc.add(sql, (), apply_stmt(c, sql, (), tabs))
    c.execute("COMMIT")
    oc.check(tag)
    d = compare3(c, COLS2, tag + ": committed", names=tabs)
    if where != "temp":
        c.close()
        c = connect(db)
        if where == "aux":
            c.execute("ATTACH ? AS aux", (os.path.join(TMP, "rename_txn_aux2.db"),))
        compare3(c, COLS2, tag + ": after reopen", names=tabs, strict_prev=d)
    c.close()


def schema_reload_in_txn():
    """An ALTER TABLE of an unrelated ordinary table inside a transaction
    makes SQLite reload the schema (and reconnect the virtual tables) while
    the transaction's writes are still pending."""
    db = dbpath("reload_txn.db")
    c = connect(db)
    create3(c, DECL2)
    c.execute("CREATE TABLE o(x)")
    for t in T3:
        c.execute("INSERT INTO %s VALUES(1, 'committed', 'c', 1.0)" % t)
    c.execute("BEGIN")
    for t in T3:
        c.execute("INSERT INTO %s VALUES(2, 'pending', 'p', 2.0)" % t)
    c.execute("ALTER TABLE o ADD COLUMN y")
    compare3(c, COLS2, "ALTER TABLE of another table inside a transaction: pending writes still visible")
    oc = Outcomes()
    for sql in ("INSERT INTO {t} VALUES(2, 'dup', 'd', 3.0)", "DELETE FROM {t} WHERE k=2",
                "INSERT INTO {t} VALUES(3, 'three', 't', 3.0)"):
        oc.add(sql, (), apply_stmt(c, sql, (), T3))
    c.execute("COMMIT")
    oc.check("ALTER TABLE of another table inside a transaction")
    compare3(c, COLS2, "ALTER TABLE of another table inside a transaction, committed")
    c.close()
    c = connect(db)
    compare3(c, COLS2, "ALTER TABLE of another table inside a transaction, after reopen")
    c.close()


# ================================================================ section 7
CORRUPT_QUERIES = [
    ("check", "SELECT gpuds_check('t')", []),
    ("full", "SELECT k, typeof(v), v, typeof(w), w FROM t ORDER BY k", []),
    ("count", "SELECT count(*), total(v) FROM t", []),
    ("point", "SELECT k, typeof(v), v, w FROM t WHERE k IN (1, 2, 3, 50, 99) ORDER BY k", []),
    ("range", "SELECT k, v, w FROM t WHERE k BETWEEN 10 AND 20 ORDER BY k DESC", []),
    ("check2", "SELECT gpuds_check('t')", []),
]


def child_corrupt_read(a):
    c = connect(a["db"])
    out = []
    for name, sql, params in CORRUPT_QUERIES:
        try:
            rows = [[enc(v, True) for v in r] for r in c.execute(sql, params)]
            out.append([name, "ok", rows])
        except sqlite3.Error as e:
            out.append([name, "err", str(e), getattr(e, "sqlite_errorcode", -1)])
    print(json.dumps(out), flush=True)


def build_corrupt_db(path, module, fmt):
    c = connect(path)
    c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v INTEGER, w TEXT)" % module)
    if fmt != 5:                                          # as an earlier build wrote it
        set_format(c, fmt)
        c.close()
        c = connect(path)
    c.execute("INSERT INTO t WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s "
              "WHERE i<100) SELECT i, i*10, 'w'||i FROM s")
    c.execute("UPDATE t SET v=-v WHERE k IN (1, 2)")      # a second, newer run
    c.close()


def entries(vals):
    """(offset of L, L) of each entry of a chunk's vals."""
    out, off = [], 0
    while off + 4 <= len(vals):
        L = struct.unpack_from("<I", vals, off)[0]
        out.append((off, L))
        off += 4 + (0 if L == 0xffffffff else L)
    return out


def corrupt_cases(fmt):
    def old_run(c):
        return c.execute("SELECT id, n, keys, vals FROM t_run ORDER BY id LIMIT 1").fetchone()

    def upd(c, sql, params=()):
        c.execute(sql, params)

    def garbage(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (random.Random(SEED).randbytes(len(v)), i))

    def truncated(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (v[:len(v) // 2], i))

    def keys_short(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET keys=? WHERE id=?", (k[:-3], i))

    def keys_unsorted(c):
        i, n, k, v = old_run(c)
        ks = list(struct.unpack("<%dq" % n, k)) if fmt < 4 else keys_decode(k, n)
        ks[10], ks[50] = ks[50], ks[10]
        upd(c, "UPDATE t_run SET keys=? WHERE id=?",
            (struct.pack("<%dq" % n, *ks) if fmt < 4 else keys_encode(ks), i))

    def null_blobs(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET keys=NULL, vals=NULL WHERE id=?", (i,))

    def text_vals(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET vals='garbage' WHERE id=?", (i,))

    def n_negative(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET n=-1 WHERE id=?", (i,))

    def n_overflow(c):
        # n*8 overflows a 32-bit int to 8 = the length of the keys blob
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET n=?, keys=? WHERE id=?", (2**29 + 1, k[:8], i))

    def len_shadowed(c):
        # the length of an entry that a newer run overrides (key 1)
        i, n, k, v = old_run(c)
        v = bytearray(v)
        struct.pack_into("<I", v, 0, 0x7ffffff0)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (bytes(v), i))

    def cell(c, fn):
        # the record of key 3 (entry 2 of the oldest run): u32 nCol, u32 nByte,
        # then per column {u8 type, 3 pad, u32 offset, u32 length}
        i, n, k, v = old_run(c)
        v = bytearray(v)
        off, L = entries(v)[2]
        fn(v, off + 4, L)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (bytes(v), i))

    def int_len0(c):
        cell(c, lambda v, rec, L: struct.pack_into("<III", v, rec + 8, 1, L - 1, 0))

    def bad_type(c):
        cell(c, lambda v, rec, L: struct.pack_into("<B", v, rec + 8, 9))

    def ncol(c):
        cell(c, lambda v, rec, L: struct.pack_into("<I", v, rec, 7))

    def text_len_big(c):
        # column w (TEXT) claims more bytes than the record holds
        cell(c, lambda v, rec, L: struct.pack_into("<I", v, rec + 8 + 12 + 8, 1000))

    common = [("garbage vals", garbage), ("truncated vals", truncated), ("keys blob 3 bytes short", keys_short),
              ("keys not ascending", keys_unsorted), ("keys and vals NULL", null_blobs),
              ("vals is text", text_vals), ("n negative", n_negative), ("n*8 overflows int", n_overflow)]
    if fmt < 4:
        return common + [
            ("bad length of an entry a newer run overrides", len_shadowed),
            ("INTEGER cell with length 0 at the record's end", int_len0),
            ("cell with storage class 9", bad_type), ("record nCol wrong", ncol),
            ("TEXT cell longer than the record", text_len_big)]

    # Format 4: each damage is sealed with a correct checksum, so that the
    # decoder's own checks must find it (the oldest run: keys 1..100, v = 10k,
    # w = 'w<k>'; entry j is key j+1).
    def sealed(c, fk=None, fv=None):
        i, n, k, v = old_run(c)
        k, v = bytearray(k), bytearray(v[:-8])
        k = fk(k) if fk else k
        v = fv(v) if fv else v
        upd(c, "UPDATE t_run SET keys=?, vals=? WHERE id=?", (bytes(k), bytes(v) + chunk_sum(k, v), i))

    def rec_edit(j, fn):
        # fn(v, payload offset, record bytes) edits entry j's record in place
        def f(c):
            def fv(v):
                off, pay, kind, L = entries4(v)[j]
                fn(v, pay, L)
                return v
            sealed(c, fv=fv)
        return f

    def entry_hdr(j, hdr):
        # entry j's header E replaced by the bytes hdr
        def f(c):
            def fv(v):
                off, pay, kind, L = entries4(v)[j]
                return v[:off] + hdr + v[pay:]
            sealed(c, fv=fv)
        return f

    def set_byte(at, b):
        def fn(v, pay, L):
            v[pay + at] = b
        return fn

    def keys_with(fn):
        def f(c):
            def fk(k):
                ks = keys_decode(k, old_run(c)[1])
                return bytearray(fn(ks))
            sealed(c, fk=fk)
        return f

    def varint_cut(c):                  # the last entry's header: a varint cut off
        sealed(c, fv=lambda v: v[:entries4(v)[-1][0]] + b"\x81")

    def keys_cut(c):                    # the keys blob ends inside a varint
        sealed(c, fk=lambda k: k + b"\x80")

    return common + [
        ("sealed: serial type 10", rec_edit(2, set_byte(0, 10))),
        ("sealed: serial type 11", rec_edit(2, set_byte(1, 11))),
        ("sealed: integer serial type wider than the record", rec_edit(2, set_byte(0, 6))),
        ("sealed: text length past the record", rec_edit(2, set_byte(1, 13 + 2 * 100))),
        ("sealed: text shorter than the record", rec_edit(2, set_byte(1, 13))),
        ("sealed: serial type varint past the record", rec_edit(2, set_byte(1, 0x85))),
        ("sealed: entry length past the end of vals", entry_hdr(5, b"\x7f")),
        ("sealed: entry length huge", entry_hdr(5, b"\xff" * 8 + b"\x01")),
        ("sealed: entry marked spilled with no reference", entry_hdr(99, b"\x01")),
        ("sealed: entry header varint truncated at the end", varint_cut),
        ("sealed: bytes after the last entry", lambda c: sealed(c, fv=lambda v: v + b"\x00")),
        ("sealed: a deletion turned into an empty record", entry_hdr(0, b"\x02")),
        ("sealed: keys blob ends inside a varint", keys_cut),
        ("sealed: key difference 0", keys_with(lambda ks: keys_encode(ks[:1]) + b"\x00" + b"".join(
            varint_put(ks[j] - ks[j - 1]) for j in range(2, len(ks))))),
        ("sealed: keys past INT64_MAX", keys_with(lambda ks: varint_put(((2**63 - 2) << 1)) + b"\x05" + b"\x01" * (len(ks) - 2))),
        ("sealed: keys not ascending", keys_with(lambda ks: keys_encode(ks[:10] + [ks[50]] + ks[11:50] + [ks[10]] + ks[51:]))),
    ]


def sec_corruption():
    for module, fmt in (("gfsl", 5), ("gpuhash", 5), ("gfsl", 3), ("gpuhash", 3)):
        _sec_corruption(module, fmt)


def _sec_corruption(module, fmt):
    if True:
        pristine = dbpath("corrupt_%s_pristine.db" % module)
        build_corrupt_db(pristine, module, fmt)
        c = raw_connect(pristine)
        R.check(table_format(c) == fmt, "corruption[%s]: format %d" % (module, fmt), table_format(c))
        c.close()
        module = "%s format %d" % (module, fmt)
        rc, out, err = run_child("corrupt_read", {"db": pristine})
        if not R.check(rc == 0, "corruption[%s]: pristine read" % module, err[-2000:]):
            return
        expect = {q[0]: q for q in json.loads(out)}
        R.check(all(q[1] == "ok" for q in expect.values()) and expect["check"][2] == [["b" + b"ok".hex()]],
                "corruption[%s]: pristine database reads fine" % module, expect)
        for name, fn in corrupt_cases(fmt):
            tag = "corruption[%s] %s" % (module, name)
            db = dbpath("corrupt_%s_x.db" % module)
            shutil.copyfile(pristine, db)
            c = raw_connect(db)
            fn(c)
            c.close()
            rc, out, err = run_child("corrupt_read", {"db": db})
            if not R.check(rc == 0, tag + ": no crash",
                           "exit status %s%s; stderr: %s" % (rc, " (signal %d)" % -rc if rc < 0 else "", err[-800:])):
                continue
            res = json.loads(out)
            reported = any(r[1] == "err" for r in res) or any(
                r[0].startswith("check") and r[1] == "ok" and r[2] != expect["check"][2] for r in res)
            wrong = [(r[0], r[2]) for r in res
                     if r[1] == "ok" and not r[0].startswith("check") and r[2] != expect[r[0]][2]]
            R.check(not wrong, tag + ": no wrong rows returned without an error", wrong[:2])
            R.check(reported, tag + ": reported (an error or gpuds_check not 'ok')",
                    [(r[0], r[1], short(r[2], 120)) for r in res])
            if name.startswith("sealed"):
                # only the decoder can find it: SQLITE_CORRUPT_VTAB (267) naming the damage
                bad = [r for r in res if r[1] == "err" and (r[3] != 267 or not (
                       "damaged" in r[2] or "bad row record" in r[2]))]
                R.check(any(r[1] == "err" for r in res) and not bad,
                        tag + ": SQLITE_CORRUPT_VTAB", [(r[0], r[2:]) for r in res][:3])
                R.check(not any("checksum" in r[2] for r in res if r[1] == "err"),
                        tag + ": the checksum still matches", res[:2])
            errs = sorted(set(r[2] for r in res if r[1] == "err"))
            chk = [r[2] for r in res if r[0] == "check"]
            note("%s: errors %s; gpuds_check -> %s" % (tag, errs or "none", short(chk, 150)))

        # damage to the shadow tables' agreement with each other: t_meta
        # counts the rows and the run entries, so a new reader reports it
        for name, sql in (("newest run deleted", "DELETE FROM t_run WHERE id = (SELECT max(id) FROM t_run)"),
                          ("t_meta emptied", "DELETE FROM t_meta")):
            db = dbpath("corrupt_%s_x.db" % module)
            shutil.copyfile(pristine, db)
            c = raw_connect(db)
            c.execute(sql)
            c.close()
            rc, out, err = run_child("corrupt_read", {"db": db})
            if rc != 0:
                R.check(False, "corruption[%s] %s: no crash" % (module, name), rc)
                continue
            res = json.loads(out)
            wrong = [r[0] for r in res if r[1] == "ok" and not r[0].startswith("check")
                     and r[2] != expect[r[0]][2]]
            R.check(not wrong and all(r[1] == "err" for r in res if not r[0].startswith("check")),
                    "corruption[%s] %s: every read reports it, none returns other rows" % (module, name),
                    res[:3])

        # t_meta emptied under an open connection: no stale reads after it
        db = dbpath("corrupt_%s_meta.db" % module)
        shutil.copyfile(pristine, db)
        A, B = connect(db), connect(db)
        before = query(B, "SELECT count(*) FROM t")
        c = raw_connect(db)
        c.execute("DELETE FROM t_meta")
        c.close()
        for who, conn in (("the other connection", B), ("a writer", A)):
            try:
                query(conn, "SELECT count(*) FROM t")
                R.check(False, "corruption[%s] t_meta emptied: %s reports it" % (module, who))
            except sqlite3.DatabaseError as e:
                R.check("t_meta is damaged" in str(e),
                        "corruption[%s] t_meta emptied: %s reports it" % (module, who), str(e))
        A.close()
        B.close()

        # a connection whose structure no longer matches the shadow tables
        db = dbpath("corrupt_%s_live.db" % module)
        shutil.copyfile(pristine, db)
        A = connect(db)
        A.execute("SELECT count(*) FROM t").fetchall()
        c = raw_connect(db)
        i, n, k, v = c.execute("SELECT id, n, keys, vals FROM t_run ORDER BY id LIMIT 1").fetchone()
        v = bytearray(v)
        if fmt < 4:
            off, L = entries(v)[49]               # key 50, v = 500
            rec = off + 4
            voff = struct.unpack_from("<I", v, rec + 8 + 4)[0]
            struct.pack_into("<q", v, rec + voff, 5001)
        else:                                     # serial types 2 (v = 500), 19 ('w50')
            off, rec, kind, L = entries4(v[:-8])[49]
            R.check(record4_decode(v[rec:rec + L], 2) == [500, "w50"], "corruption: key 50's record",
                    record4_decode(v[rec:rec + L], 2))
            struct.pack_into(">h", v, rec + 2, 5001)
        c.execute("UPDATE t_run SET vals=? WHERE id=?", (bytes(v), i))
        c.close()
        res = check_ok(A, "t")
        R.check(res != "ok", "corruption[%s]: gpuds_check of a loaded connection sees a changed shadow row" % module, res)
        note("corruption[%s] shadow row changed under a loaded connection: gpuds_check -> %s" % (module, res))
        A.close()
        B = connect(db)
        try:       # a value changed inside its record: the chunk's checksum says so
            got = scalar(B, "SELECT v FROM t WHERE k=50")
            R.check(False, "corruption[%s]: a new connection reports a changed value" % module, got)
        except sqlite3.DatabaseError as e:
            R.check("checksum mismatch" in str(e),
                    "corruption[%s]: a new connection reports a changed value" % module, str(e))
        B.close()


# ================================================================ section 8
def sec_amplification():
    flush = 200
    n = sz(20000, 2000)
    F = n // flush
    db = dbpath("amp.db")
    with FlushEnv(flush):
        c = connect(db)
        c.execute("CREATE VIRTUAL TABLE tg USING gfsl(k INTEGER PRIMARY KEY, a)")
        c.execute("CREATE VIRTUAL TABLE th USING gpuhash(k INTEGER PRIMARY KEY, a)")
        c.execute("CREATE TEMP TABLE written(t TEXT PRIMARY KEY, n INTEGER)")
        for t in ("tg", "th"):
            c.execute("INSERT INTO written VALUES(?, 0)", (t,))
            c.execute("CREATE TEMP TRIGGER w_%s AFTER INSERT ON main.%s_run BEGIN "
                      "UPDATE written SET n = n + new.n WHERE t='%s'; END" % (t, t, t))
        c.execute("BEGIN")
        for t in ("tg", "th"):
            c.execute("INSERT INTO %s WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s "
                      "WHERE i<%d) SELECT i, i FROM s" % (t, n))
        t0 = time.time()
        c.execute("COMMIT")
        dt = time.time() - t0
        bound = 2 * math.log2(max(2, F)) + 2
        for t in ("tg", "th"):
            w = scalar(c, "SELECT n FROM written WHERE t=?", (t,))
            R.check(w <= bound * n,
                    "write amplification: %s, %d rows in %d flushes: shadow entries written at COMMIT <= %.1f per row"
                    % (t, n, F, bound), "%.1f per row (%d entries; COMMIT took %.2f s)" % (w / n, w, dt))
        c.close()

    # A range DELETE after many small commits (a log of runs, each at most
    # half the one before): the compaction after it merges the cascade of
    # runs in one pass, so its deletions are written about twice (their run,
    # then the merge), not once per level of the cascade.
    db = dbpath("amp2.db")
    base, small, nsmall = sz(4000, 400), 5, 100
    c = connect(db)
    c.execute("CREATE TABLE r(k INTEGER PRIMARY KEY, a)")
    c.execute("CREATE VIRTUAL TABLE tg USING gfsl(k INTEGER PRIMARY KEY, a)")
    c.execute("CREATE VIRTUAL TABLE th USING gpuhash(k INTEGER PRIMARY KEY, a)")
    c.execute("CREATE TEMP TABLE written(t TEXT PRIMARY KEY, n INTEGER)")
    for t in ("r", "tg", "th"):
        c.execute("INSERT INTO %s WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s "
                  "WHERE i<%d) SELECT i, i FROM s" % (t, base))
    for j in range(nsmall):
        for t in ("r", "tg", "th"):
            c.executemany("INSERT INTO %s VALUES(?, 'x')" % t,
                          [(base + 1 + j * small + i,) for i in range(small)])
    for t in ("tg", "th"):
        c.execute("INSERT INTO written VALUES(?, 0)", (t,))
        c.execute("CREATE TEMP TRIGGER w2_%s AFTER INSERT ON main.%s_run BEGIN "
                  "UPDATE written SET n = n + new.n WHERE t='%s'; END" % (t, t, t))
    lo, hi = base // 4, base // 4 + base // 2 - 1
    d = hi - lo + 1
    for t in ("r", "tg", "th"):
        c.execute("DELETE FROM %s WHERE k BETWEEN ? AND ?" % t, (lo, hi))
    bound = 2 * d + base + small * nsmall
    for t in ("tg", "th"):
        w = scalar(c, "SELECT n FROM written WHERE t=?", (t,))
        R.check(w <= bound,
                "write amplification: %s, a range DELETE of %d rows after %d small commits: "
                "shadow entries written <= %d" % (t, d, nsmall, bound), "%d entries" % w)
    c.close()
    c = connect(db)
    want = dump(c, "r", ["k", "a"])
    for t in ("tg", "th"):
        R.check(dump(c, t, ["k", "a"]) == want,
                "write amplification: %s after the range DELETE and a reopen equals the ordinary table" % t)
        R.check(check_ok(c, t) == "ok", "write amplification: gpuds_check(%s) after the range DELETE" % t)
    c.close()


# ================================================================== main
SECTIONS = [
    ("1 round trips", sec_roundtrip),
    ("2 rollback", sec_rollback),
    ("3 crashes", sec_crash),
    ("4 concurrency", sec_concurrency),
    ("5 defensive", sec_defensive),
    ("6 rename/drop", sec_rename_drop),
    ("7 corruption", sec_corruption),
    ("8 write amplification", sec_amplification),
]

CHILDREN = {
    "crash_mid": child_crash_mid,
    "crash_commit": child_crash_commit,
    "worker": child_worker,
    "inserter": child_inserter,
    "corrupt_read": child_corrupt_read,
}


def main(argv):
    global TMP
    if len(argv) >= 3 and argv[0] == "--child":
        CHILDREN[argv[1]](json.loads(argv[2]))
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
    print("test_persist: seed %d, scale %g, backend %s, sqlite %s, tmp %s"
          % (SEED, SCALE, os.environ.get("GPUDS_BACKEND"), sqlite3.sqlite_version, TMP), flush=True)
    t_all = time.time()
    try:
        for name, fn in SECTIONS:
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
