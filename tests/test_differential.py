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
import shutil

from differential_gen import COLS, SCHEMAS, VTAB_ENGINES, REF, FULL, Gen


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
