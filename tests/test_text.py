"""Text values as they enter a row, against an ordinary table, in a UTF-8
and in a UTF-16 database: xUpdate reads a UTF-8 database's text bytes as
they are (no terminator added: gpudsRowNew), a UTF-16 one's converted.
Parameters bound with their length (Python's sqlite3 does), text read from
another table's pages (INSERT ... SELECT), results of functions, numbers
given to TEXT columns, empty text, text with a NUL inside and non-ASCII
text must read back byte for byte as an ordinary table gives them, with the
same types, through RETURNING too, after COMMIT and after a reopen."""
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuds_testlib as lib  # noqa: E402

if not lib.EXT:
    print("GPUDS_EXT not set: skipped")
    sys.exit(77)

T = lib.Tally()

TEXTS = ["", "a", "h\u00e9llo w\u00f6rld", "\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8",
         "nul\x00inside", "x" * 300, "\U0001f600 emoji", "12", " 3.5 "]
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
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
