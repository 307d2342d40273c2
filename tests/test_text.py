"""Text values as they enter a row, against an ordinary table, in a UTF-8
and in a UTF-16 database: xUpdate reads a value's text bytes as they are,
in the database's encoding (no terminator added in UTF-8: gpudsRowNew).
Parameters bound with their length (Python's sqlite3 does), text read from
another table's pages (INSERT ... SELECT), results of functions, numbers
given to TEXT columns, empty text, text with a NUL inside and non-ASCII
text must read back byte for byte as an ordinary table gives them, with the
same types, through RETURNING too, after COMMIT and after a reopen.

Column plans (GPUDS_COLUMN_PLANS=always) give the ordinary table's answers
in every encoding: SQLite's BINARY collation compares a UTF-16 database's
text by its UTF-16 bytes, another order beyond ASCII (U+0100 before U+00FF
in UTF-16le, U+E000 after an emoji's surrogates in UTF-16be), and the
column set and its exact checks order text as the database's encoding does
(ext/textenc.c), so ranges and ORDER BY a column run on the set in every
encoding (EXPLAIN QUERY PLAN), as equality does."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuds_testlib as lib  # noqa: E402

if not lib.EXT:
    print("GPUDS_EXT not set: skipped")
    sys.exit(77)

T = lib.Tally()

TEXTS = ["", "a", "h\u00e9llo w\u00f6rld", "\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8",
         "nul\x00inside", "x" * 300, "\U0001f600 emoji", "12", " 3.5 ",
         "\u0100x", "\u00ffy", "\ue000z", "\ud7ff"]
DECL = "(k INTEGER PRIMARY KEY, a, t TEXT, n NUMERIC, r REAL, i INTEGER)"
DUMP = ("SELECT k, typeof(a), hex(a), typeof(t), hex(t), typeof(n), quote(n), "
        "typeof(r), quote(r), typeof(i), quote(i) FROM %s ORDER BY k")


def rows():
    """(k, a, t, n, r, i): every text in every column, and numbers too."""
    out = []
    k = 1
    for s in TEXTS:
        out.append((k, s, s, s, s, s))
        k += 1
    for v in (7, -2.5, 10.0):
        out.append((k, v, v, v, v, v))
        k += 1
    return out


def fill(c, t):
    """The same writes into table t of connection c, several ways."""
    c.execute("BEGIN")
    for r in rows():
        c.execute("INSERT INTO %s VALUES(?,?,?,?,?,?)" % t, r)
    # text from another table's pages
    c.execute("INSERT INTO %s SELECT k+1000, a, t, n, r, i FROM src" % t)
    # text made by functions, some not NUL-terminated in their register
    c.execute("INSERT INTO %s SELECT k+2000, substr(a, 2), upper(t), a || 'z', "
              "char(233, 0x1f600), CAST(k AS TEXT) FROM src" % t)
    # UPDATE through the write buffer
    c.execute("UPDATE %s SET a = substr(t, 1, 3) || '\u00e9', t = a WHERE k %% 2 = 0" % t)
    c.execute("COMMIT")


COLQ = [("SELECT k FROM %s ORDER BY t, k", ()), ("SELECT k FROM %s ORDER BY t DESC, k", ()),
        ("SELECT k FROM %s ORDER BY a, k", ()), ("SELECT k FROM %s ORDER BY n DESC, k", ()),
        ("SELECT k FROM %s ORDER BY t, k LIMIT 4", ()),
        ("SELECT k FROM %s WHERE t = ? ORDER BY k", (TEXTS[3],)),
        ("SELECT k FROM %s WHERE t != ? ORDER BY k", (TEXTS[2],)),
        ("SELECT k FROM %s WHERE a IS ? ORDER BY k", (TEXTS[6],))]
for c in ("b", "h\u00e9", "\u65e5", "\U0001f600", "12", 5, 3.5, "\u0100", "\u00ff", "\ue000"):
    for op in ("<", "<=", ">", ">="):
        COLQ.append(("SELECT k FROM %%s WHERE n %s ? ORDER BY k" % op, (c,)))
        COLQ.append(("SELECT k FROM %%s WHERE t %s ? ORDER BY k" % op, (c,)))


def colplans(path, enc, what):
    """The column plan queries on g and plain, GPUDS_COLUMN_PLANS=always."""
    os.environ["GPUDS_COLUMN_PLANS"] = "always"
    try:
        c = lib.connect(path)
        for sql, args in COLQ:
            a = c.execute(sql % "plain", args).fetchall()
            b = c.execute(sql % "g", args).fetchall()
            T.check(a == b, what + ": column plan %s %r" % (sql % "g", args), (a, b))
        plan = lambda q: " ".join(str(r[-1]) for r in c.execute("EXPLAIN QUERY PLAN " + q))
        order = plan("SELECT k FROM g ORDER BY t, k")
        rng = plan("SELECT k FROM g WHERE n < 'b'")
        T.check(lib.uses_column_set(order) and "ORDER BY t" in order,
                what + ": ORDER BY a column on the set", order)
        T.check(lib.uses_column_set(rng) and "n<?" in rng, what + ": a range on the set", rng)
        eq = plan("SELECT k FROM g WHERE t = 'a'")
        T.check(lib.uses_column_set(eq), what + ": equality on the set", eq)
        c.close()
    finally:
        del os.environ["GPUDS_COLUMN_PLANS"]


def loadplans(path, enc, what):
    """The same column plans on a set the background load built (WAL,
    GPUDS_COLUMNS_ON_LOAD=1: the host set too), in a child process: a key
    range installs the load, which brought the set (built once, before any
    column query); then the queries."""
    c = lib.connect(path)
    c.execute("PRAGMA journal_mode=wal")
    c.close()
    child = r"""
import json, sys
sys.path.insert(0, %r)
import gpuds_testlib as lib
import test_text as tt
c = lib.connect(%r)
c.execute("SELECT k, a FROM g WHERE k BETWEEN 1 AND 100000 ORDER BY k").fetchall()
info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
cs = [t for t in info["tables"] if t["name"].endswith(".g")][0]["column_set"]
bad = [sql for sql, args in tt.COLQ
       if c.execute(sql %% "plain", args).fetchall() != c.execute(sql %% "g", args).fetchall()]
print(json.dumps({"built": cs.get("built"), "builds": cs.get("builds"), "bad": bad, "load": [t for t in info["tables"] if t["name"].endswith(".g")][0].get("load")}))
""" % (os.path.dirname(os.path.abspath(__file__)), path)
    env = dict(os.environ, GPUDS_COLUMNS_ON_LOAD="1", GPUDS_COLUMN_PLANS="always",
               GPUDS_LAZY_LOAD="always")
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True)
    try:
        r = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        T.check(False, what + ": background load child", out.stderr[-800:])
        return
    T.check(r["built"] and r["builds"] == 1, what + ": the background load built the column set", r)
    T.check(not r["bad"], what + ": column plans on the set the load built", r["bad"][:3])


def main():
    for enc in ("UTF-8", "UTF-16le", "UTF-16be"):
        for mod in ("gfsl", "gpuhash"):
            d = tempfile.mkdtemp()
            path = os.path.join(d, "x.db")
            c = lib.connect(path)
            c.execute("PRAGMA encoding='%s'" % enc)
            c.execute("CREATE TABLE src" + DECL)
            c.executemany("INSERT INTO src VALUES(?,?,?,?,?,?)", rows())
            c.execute("CREATE TABLE plain" + DECL)
            c.execute("CREATE VIRTUAL TABLE g USING %s%s" % (mod, DECL))
            T.check(c.execute("PRAGMA encoding").fetchone()[0] == enc, "%s encoding" % enc)
            fill(c, "plain")
            fill(c, "g")
            what = "%s %s" % (enc, mod)
            exp = c.execute(DUMP % "plain").fetchall()
            T.check(len(exp) == 3 * len(rows()), what + ": rows", len(exp))
            T.check(c.execute(DUMP % "g").fetchall() == exp, what + ": as written",
                    (exp[:3], c.execute(DUMP % "g").fetchall()[:3]))
            for s in TEXTS[:5]:
                a = c.execute("INSERT INTO plain(k, a, t) VALUES(5000, ?, ?) "
                              "RETURNING typeof(a), hex(a), typeof(t), hex(t)", (s, s)).fetchall()
                b = c.execute("INSERT INTO g(k, a, t) VALUES(5000, ?, ?) "
                              "RETURNING typeof(a), hex(a), typeof(t), hex(t)", (s, s)).fetchall()
                T.check(a == b, what + ": RETURNING %r" % s, (a, b))
                c.execute("DELETE FROM plain WHERE k = 5000")
                c.execute("DELETE FROM g WHERE k = 5000")
            c.close()
            c = lib.connect(path)
            T.check(c.execute(DUMP % "g").fetchall() == exp, what + ": reopened")
            T.check(c.execute("SELECT count(*) FROM g JOIN plain USING(k) "
                              "WHERE g.a IS plain.a AND g.t IS plain.t").fetchone()[0] == len(exp),
                    what + ": compared by value")
            r = c.execute("SELECT gpuds_check('g')").fetchone()[0]
            T.check(r == "ok", what + ": gpuds_check", r)
            c.close()
            colplans(path, enc, what)
            loadplans(path, enc, what)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
