"""Type names: the same CREATE on an ordinary table and on gfsl and gpuhash,
the same inserts, the same answers.

A column of a gfsl or gpuhash table takes any type name SQLite takes (one or
more words, quoted names and strings, then maybe "(signed-number)" or
"(signed-number, signed-number)") and gets the affinity SQLite gives it
(https://sqlite.org/datatype3.html section 3.1; sqlite3AddColumn and
sqlite3AffinityType in SQLite's source): INT8, FLOAT4, "quoted type",
[bracket type], DECIMAL(10,2), a name of 300 letters, "GENERATED ALWAYS"
at its end.  For many generated type names: where the ordinary table
refuses the CREATE, so do gfsl and gpuhash; where it accepts it, they do
too (but for a type holding the word HIDDEN, which SQLite makes a hidden
column of a virtual table: refused by name), PRAGMA table_info shows the
same type, every value stores with the same typeof() and value, and
comparisons with text and numbers (which use the column's affinity) give
the same rows.  NOT NULL, NULL and CONSTRAINT <name> keep working after any
type name.  Seeded (GPUDS_TEST_SEED); GPUDS_TYPES_N names (default 400).
Then the most columns a virtual table can have (case_columns)."""
import os
import random
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuds_testlib as lib  # noqa: E402

T = lib.Tally()
SEED = int(os.environ.get("GPUDS_TEST_SEED", random.randrange(1 << 30)))
N = int(os.environ.get("GPUDS_TYPES_N", "400"))

FIXED = ["INT8", "INT2", "INT4", "FLOAT4", "FLOAT8", '"quoted type"', "[bracket type]", "`bt`",
         "'str type'", "DECIMAL(10,2)", "DECIMAL(10, 2)", "NUMERIC(+10,-2)", "DEC(1.5e3)", "D(0x10)",
         "REAL" + "X" * 300 + "INT", "REAL " + "x" * 300 + " INT", "X" * 300 + "CHAR", "CHARX" + "x" * 260 + "BLOB",
         "INT GENERATED ALWAYS", "TEXT GENERATED", "GENERATED ALWAYS", "ALWAYS", '"a" b', '""',
         "FOO /* int */ BAR", "INT -- c\n TEXT", "x\thidden", "a$b", "ASC DESC KEY", "int",
         "unsigned big int", "varying character(255)", "native character(70)", "nvarchar(100)",
         "double precision", "boolean", "datetime", "[INT]", '"TEXT"', "'REAL'", '"BLOB"', "BLOBREAL",
         "REALBLOB", "CLOBINT", "FLOATING POINT", "DOUBT", "INTEGER", "ANY", "[a]b", '"x"(5)',
         # refused by the ordinary table too
         "INT SELECT", "x(1) y", "8INT", "X'00'", "DECIMAL(10,2,3)", "DECIMAL()", "DEC(-)", "$x",
         "REAL<" + "x" * 300 + ">INT", "INT ON CONFLICT", "DECIMAL(a)", "[unterminated", '"unterminated']
WORDS = ["INT", "INTEGER", "TINYINT", "BIGINT", "INT8", "CHAR", "VARCHAR", "CLOB", "TEXT", "BLOB",
         "REAL", "FLOAT", "FLOA", "DOUBLE", "DOUB", "NUMERIC", "DECIMAL", "BOOLEAN", "DATE", "FOO",
         "point", "xINTy", "intx", "inT", "Text", "bLoB", "rEaL", "GENERATED", "ALWAYS", "KEY", "ASC",
         "hidden", "HIDDENX", "unsigned", "_x", "x$", "\u00e9t\u00e9", "char8", "blobs", "reals"]
TAILS = ["", "", "", " NOT NULL", " NULL", " CONSTRAINT c NOT NULL", " NOT NULL NULL"]
VALUES = ["'5'", "' 5 '", "'5.0'", "'1e3'", "'abc'", "''", "5", "5.0", "-0.0", "1e300", "x'01'",
          "x''", "NULL", "'0x10'", "9223372036854775807", "'9223372036854775808'"]
PROBES = ["v = '5'", "v = 5", "v < '6'", "v > 4", "v = '5.0'", "v IS NULL", "v = x'01'", "v >= 'a'"]


def word(rng):
    w = rng.choice(WORDS)
    r = rng.random()
    if r < 0.12:
        return '"%s"' % w.replace('"', '""')
    if r < 0.2:
        return "[%s]" % w
    if r < 0.25:
        return "'%s'" % w
    if r < 0.3:
        return w + rng.choice(WORDS)
    return w


def gen_type(rng):
    words = [word(rng) for _ in range(rng.choice((1, 1, 1, 2, 2, 3)))]
    t = " ".join(words)
    r = rng.random()
    if r < 0.25:
        t += "(%s%d)" % (rng.choice(("", "+", "-")), rng.randrange(100))
    elif r < 0.4:
        t += "(%d, %s%d)" % (rng.randrange(100), rng.choice(("", "-")), rng.randrange(10))
    elif r < 0.45:
        t += "(%s)" % rng.choice(("1.5", "0x1F", "1e3", "a", "", "1,2,3"))
    return t


def outcome(c, sql, args=()):
    try:
        return ("ok", c.execute(sql, args).fetchall())
    except sqlite3.Error as e:
        return ("err", str(e))


def one(c, decl, what):
    """The ordinary table o and gfsl/gpuhash tables with column v of decl."""
    ro = outcome(c, "CREATE TABLE o(k INTEGER PRIMARY KEY, v %s)" % decl)
    if ro[0] == "ok":
        ins = [outcome(c, "INSERT INTO o VALUES(%d, %s)" % (i, v))[0] for i, v in enumerate(VALUES)]
    for mod in ("gfsl", "gpuhash"):
        rg = outcome(c, "CREATE VIRTUAL TABLE g USING %s(k INTEGER PRIMARY KEY, v %s)" % (mod, decl))
        tag = "%s %s %r" % (what, mod, decl)
        if ro[0] == "err":
            T.check(rg[0] == "err", tag + ": refused as the ordinary table refuses it", ro[1])
            if rg[0] == "ok":
                c.execute("DROP TABLE g")
            continue
        if rg[0] == "err":
            hidden = any(w.lower() == "hidden" for w in
                         (c.execute("SELECT type FROM pragma_table_info('o') WHERE name='v'")
                          .fetchone()[0] or "").split(" "))
            T.check(hidden and "HIDDEN" in rg[1], tag + ": accepted", rg[1])
            continue
        ty = [c.execute("SELECT type, \"notnull\" FROM pragma_table_info('%s') WHERE name='v'" % t)
              .fetchall() for t in ("o", "g")]
        T.check(ty[0] == ty[1], tag + ": the same declared type", ty)
        for i, v in enumerate(VALUES):
            b = outcome(c, "INSERT INTO g VALUES(%d, %s)" % (i, v))
            if ins[i] != b[0]:
                T.check(False, tag + ": insert %s" % v, (ins[i], b))
        dump = "SELECT k, typeof(v), quote(v) FROM %s ORDER BY k"
        a, b = c.execute(dump % "o").fetchall(), c.execute(dump % "g").fetchall()
        T.check(a == b, tag + ": the same values and types", [(x, y) for x, y in zip(a, b) if x != y][:3])
        for p in PROBES:
            q = "SELECT k FROM %s WHERE " + p + " ORDER BY k"
            a, b = c.execute(q % "o").fetchall(), c.execute(q % "g").fetchall()
            T.check(a == b, tag + ": WHERE " + p, (a, b))
        c.execute("DROP TABLE g")
    if ro[0] == "ok":
        c.execute("DROP TABLE o")


def case_columns():
    """As many columns as SQLite lets a virtual table have: it counts the
    module's name, the database's and the table's among the module
    arguments and refuses the argument that brings them to
    SQLITE_LIMIT_COLUMN (vtab.c, addModuleArgument), so a virtual table
    takes 1994 columns where an ordinary table takes 2000.  1994 work (the
    last one written, read, updated and reopened, gpuds_check); from 1995
    on SQLite refuses the statement before any module sees it (a module
    that does not exist says the same)."""
    import tempfile
    import shutil
    d = tempfile.mkdtemp(prefix="gpuds_cols_")
    try:
        for mod in ("gfsl", "gpuhash"):
            path = os.path.join(d, mod + ".db")
            c = lib.connect(path)
            n = 1994
            cols = ", ".join("c%d %s" % (i, ("INT", "TEXT", "REAL", "")[i % 4]) for i in range(1, n))
            r = outcome(c, "CREATE VIRTUAL TABLE g USING %s(k INTEGER PRIMARY KEY, %s)" % (mod, cols))
            T.check(r[0] == "ok", "%s: %d columns" % (mod, n), r)
            if r[0] != "ok":
                continue
            c.execute("CREATE TABLE o(k INTEGER PRIMARY KEY, %s)" % cols)
            vals = ", ".join("'%d'" % i for i in range(1, n))
            for t in ("o", "g"):
                c.execute("INSERT INTO %s VALUES(1, %s)" % (t, vals))
                c.execute("INSERT INTO %s(k, c%d) VALUES(2, 'last')" % (t, n - 1))
                c.execute("UPDATE %s SET c%d = c%d || '!', c1 = 7 WHERE k = 1" % (t, n - 1, n - 1))
            q = "SELECT * FROM %s ORDER BY k"
            T.check(c.execute(q % "g").fetchall() == c.execute(q % "o").fetchall(),
                    "%s: %d columns written and read" % (mod, n))
            c.close()
            c = lib.connect(path)
            T.check(c.execute(q % "g").fetchall() == c.execute(q % "o").fetchall(),
                    "%s: %d columns reopened" % (mod, n))
            T.check(c.execute("SELECT gpuds_check('g')").fetchone()[0] == "ok", "%s: gpuds_check" % mod)
            for m in (1995, 2000, 2001):
                cols = ", ".join("c%d" % i for i in range(1, m))
                r = outcome(c, "CREATE VIRTUAL TABLE h USING %s(k INTEGER PRIMARY KEY, %s)" % (mod, cols))
                x = outcome(c, "CREATE VIRTUAL TABLE h USING nosuchmodule(k INTEGER PRIMARY KEY, %s)" % cols)
                T.check(r == ("err", "too many columns on h") and r == x,
                        "%s: %d columns refused by SQLite itself" % (mod, m), (r, x))
                o = outcome(c, "CREATE TABLE p(k INTEGER PRIMARY KEY, %s)" % cols)
                T.check((o[0] == "ok") == (m <= 2000), "ordinary table with %d columns" % m, o)
                if o[0] == "ok":
                    c.execute("DROP TABLE p")
            x = outcome(c, "CREATE VIRTUAL TABLE h USING nosuchmodule(k INTEGER PRIMARY KEY, %s)"
                        % ", ".join("c%d" % i for i in range(1, 1994)))
            T.check(x == ("err", "no such module: nosuchmodule"), "1994 module arguments pass SQLite", x)
            c.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    if not lib.EXT:
        print("GPUDS_EXT not set: skipped")
        return 77
    print("seed %d (GPUDS_TEST_SEED)" % SEED)
    rng = random.Random(SEED)
    c = lib.connect(":memory:")
    # (SQLite keeps a type whose first and last bytes it took for quotes
    # without them, which may cut a character in two)
    c.text_factory = lambda b: b.decode("utf-8", "backslashreplace")
    for decl in FIXED:
        one(c, decl, "fixed")
    for _ in range(N):
        one(c, gen_type(rng) + rng.choice(TAILS), "generated")
    c.close()
    case_columns()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
