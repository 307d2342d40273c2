"""Text kept byte for byte in a UTF-16 database, against an ordinary table.

SQLite keeps a UTF-16 database's text as the bytes it was given in that
encoding: a lone surrogate (CAST(X'00D8' AS TEXT)), a reversed surrogate
pair, a leading byte order mark (FF FE or FE FF, which SQLite's result
functions would otherwise drop) and the other bytes a conversion to UTF-8
and back would change.  A gfsl or gpuhash table of storage format 5 holds
its text in the database's encoding too, so every answer matches the
ordinary table's: hex(), length(), ORDER BY, =, <, <=, >, >=, BETWEEN,
IN, IS, != (with and without column plans: GPUDS_COLUMN_PLANS=always runs
them on the column set, EXPLAIN QUERY PLAN shows it), after UPDATE, after
COMMIT and a reopen, in UTF-16le and UTF-16be; the runs on disk hold the
database's bytes.  An odd byte count is cut to even by SQLite's CAST
already: both tables agree on what it keeps.

A table of storage format 4 (made by earlier builds) keeps its records'
UTF-8 (what SQLite's conversion made of the text) and is read and written
as it was: valid text reads back as the ordinary table's, ordered as
UTF-16."""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuds_testlib as lib  # noqa: E402

T = lib.Tally()
SEED = int(os.environ.get("GPUDS_TEST_SEED", random.randrange(1 << 30)))
NRANDOM = int(os.environ.get("GPUDS_TEXT_RANDOM", "60"))

# Byte strings given as text (CAST(X'..' AS TEXT)): the same bytes in both
# encodings (their characters differ, their bytes must not).
FIXED = ["00D8", "00DC00D8", "00D800DC", "3DD800DE", "D83DDE00", "FFFE4100", "FEFF4100",
         "FFFE", "FEFF", "4100FFFE", "41004200", "0041", "4100D800", "", "00000000", "D800",
         "DC00", "FFFF", "E000", "00E0", "0001", "0100", "FF00", "00FF", "414243", "41",
         "4100420043", "DFFFDBFF"]
DECL = "(k INTEGER PRIMARY KEY, t, s TEXT, n NUMERIC)"


def random_hexes(rng, n):
    """n byte strings of 0 to 12 bytes, mostly of the bytes that matter in
    UTF-16 (surrogates, zero, the byte order marks' bytes, ASCII)."""
    pool = [0x00, 0xd8, 0xdb, 0xdc, 0xdf, 0xff, 0xfe, 0x41, 0x7a, 0x20, 0x31, 0xe0, 0x01]
    out = []
    for _ in range(n):
        m = rng.randrange(0, 7) * 2 + (1 if rng.random() < 0.1 else 0)
        out.append("".join("%02X" % (rng.choice(pool) if rng.random() < 0.8 else rng.randrange(256))
                           for _ in range(m)))
    return out


def lit(h):
    return "CAST(X'%s' AS TEXT)" % h


def fill(c, t, hexes):
    """The same writes into t: casts, text from another table's pages, an
    UPDATE through the write buffer, rows deleted."""
    c.execute("BEGIN")
    for i, h in enumerate(hexes):
        c.execute("INSERT INTO %s VALUES(?, %s, %s, %s)" % (t, lit(h), lit(h), lit(h)), (i + 1,))
    c.execute("INSERT INTO %s SELECT k + 1000, s, t, n FROM src" % t)
    c.execute("UPDATE %s SET s = s || %s, t = %s || t WHERE k %% 3 = 0" % (t, lit("00D8"), lit("FFFE")))
    c.execute("DELETE FROM %s WHERE k %% 7 = 5" % t)
    c.execute("COMMIT")


DUMP = "SELECT k, typeof(t), hex(t), length(t), typeof(s), hex(s), typeof(n), hex(n) FROM %s ORDER BY k"


def queries(hexes):
    """(sql with %s for the table, args): orders and filters on the text."""
    q = [("SELECT k FROM %s ORDER BY t, k", ()), ("SELECT k FROM %s ORDER BY t DESC, k", ()),
         ("SELECT k FROM %s ORDER BY s, k", ()), ("SELECT k FROM %s ORDER BY s DESC, k LIMIT 5", ()),
         ("SELECT k, hex(s) FROM %s ORDER BY s, k", ()),
         ("SELECT k FROM %s WHERE t IS NULL OR t != " + lit("00D8") + " ORDER BY k", ()),
         ("SELECT k FROM %s WHERE s IN (" + ",".join(lit(h) for h in hexes[:6]) + ") ORDER BY k", ()),
         ("SELECT k FROM %s WHERE t IN (?, ?, ?) ORDER BY k", ("a", "\u00e9", "\U0001f600"))]
    for h in ["00D8", "00DC00D8", "FFFE4100", "FEFF", "4100", "", "E000", "DC00"] + hexes[:4]:
        for col in ("t", "s", "n"):
            for op in ("=", "<", "<=", ">", ">=", "IS"):
                q.append(("SELECT k FROM %%s WHERE %s %s %s ORDER BY k" % (col, op, lit(h)), ()))
        q.append(("SELECT k FROM %%s WHERE s BETWEEN %s AND %s ORDER BY k" % (lit(h), lit("FFFF")), ()))
    return q


def compare(c, what, qs):
    bad = []
    for sql, args in qs:
        a = c.execute(sql % "plain", args).fetchall()
        b = c.execute(sql % "g", args).fetchall()
        if a != b:
            bad.append((sql % "g", a[:6], b[:6]))
    T.check(not bad, what + ": %d queries" % len(qs), bad[:3])


def child_colplans(path, qs, what, plans=True):
    """The queries again with column plans forced, in a child process (the
    setting is read when the extension is loaded); plans: also check that
    ORDER BY, a range and an equality on the text run on the column set."""
    code = r"""
import json, sys
sys.path.insert(0, %r)
import gpuds_testlib as lib
qs = json.loads(sys.argv[1])
c = lib.connect(%r)
# key lookups first: answered from the runs on disk while the load waits
# (GPUDS_LAZY_LOAD=hold)
look = "SELECT k, hex(t), hex(s), hex(n) FROM %%s WHERE k = ?"
keys = [k for (k,) in c.execute("SELECT k FROM plain ORDER BY k")]
bad = ["lookup %%d" %% k for k in keys
       if c.execute(look %% "plain", (k,)).fetchall() != c.execute(look %% "g", (k,)).fetchall()]
info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
disk = [t for t in info["tables"] if t["name"].endswith(".g")][0].get("load")
bad += [sql %% "g" for sql, args in qs
       if c.execute(sql %% "plain", args).fetchall() != c.execute(sql %% "g", args).fetchall()]
plan = lambda q: " ".join(str(r[-1]) for r in c.execute("EXPLAIN QUERY PLAN " + q))
print(json.dumps({"bad": bad, "disk": disk, "order": plan("SELECT k FROM g ORDER BY s, k"),
                  "range": plan("SELECT k FROM g WHERE s < CAST(X'00D8' AS TEXT)"),
                  "eq": plan("SELECT k FROM g WHERE t = CAST(X'00D8' AS TEXT)")}))
""" % (os.path.dirname(os.path.abspath(__file__)), path)
    env = dict(os.environ, GPUDS_COLUMN_PLANS="always", GPUDS_LAZY_LOAD="hold")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(qs)], env=env,
                         capture_output=True, text=True)
    try:
        r = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        T.check(False, what + ": column plan child", out.stderr[-800:])
        return
    T.check(not r["bad"], what + ": key lookups from disk, then column plans", r["bad"][:3])
    T.check(r["disk"] == "background", what + ": the lookups were answered from disk", r["disk"])
    if plans:
        T.check("column set" in r["order"] and "ORDER BY s" in r["order"], what + ": ORDER BY s on the set",
                r["order"])
        T.check("column set" in r["range"] and "s<?" in r["range"], what + ": a range on the set",
                r["range"])
        T.check("column set" in r["eq"], what + ": equality on the set", r["eq"])


def disk_texts(c, text=None):
    """{k: column t} of g's runs on disk (newest wins): text decoded from
    encoding text, or as its bytes (None)."""
    out = {}
    for n, keys, vals in c.execute("SELECT n, keys, vals FROM g_run ORDER BY id"):
        ks = lib.keys_decode(keys, n)
        for k, (_, p, kind, m) in zip(ks, lib.entries4(vals[:-8])):
            if kind == "rec":
                out[k] = lib.record4_decode(vals[p:p + m], 3, text=text)[0]
            elif kind == "del":
                out.pop(k, None)
    return out


def case_bytes(enc, mod, hexes):
    what = "%s %s" % (enc, mod)
    d = tempfile.mkdtemp(prefix="gpuds_txt_")
    path = os.path.join(d, "x.db")
    c = lib.connect(path)
    c.execute("PRAGMA encoding='%s'" % enc)
    c.execute("CREATE TABLE src" + DECL)
    for i, h in enumerate(hexes):
        c.execute("INSERT INTO src VALUES(?, %s, %s, %s)" % (lit(h), lit(h), lit(h)), (i + 1,))
    c.execute("CREATE TABLE plain" + DECL)
    c.execute("CREATE VIRTUAL TABLE g USING %s%s" % (mod, DECL))
    T.check(lib.table_format(c, "g") == 5, what + ": a new table is format 5", lib.table_format(c, "g"))
    fill(c, "plain", hexes)
    fill(c, "g", hexes)
    exp = c.execute(DUMP % "plain").fetchall()
    got = c.execute(DUMP % "g").fetchall()
    T.check(got == exp, what + ": hex round trip",
            [(a, b) for a, b in zip(exp, got) if a != b][:3])
    for h in ("00D8", "FFFE4100", "FEFF"):
        a = c.execute("INSERT INTO plain(k, t) VALUES(9999, %s) RETURNING hex(t)" % lit(h)).fetchall()
        b = c.execute("INSERT INTO g(k, t) VALUES(9999, %s) RETURNING hex(t)" % lit(h)).fetchall()
        T.check(a == b, what + ": RETURNING %s" % h, (a, b))
        c.execute("DELETE FROM plain WHERE k = 9999")
        c.execute("DELETE FROM g WHERE k = 9999")
    qs = queries(hexes)
    compare(c, what, qs)
    raw = {k: bytes.fromhex(h) for k, h in c.execute("SELECT k, hex(t) FROM plain WHERE typeof(t)='text'")}
    disk = disk_texts(c)
    T.check(disk == raw, what + ": the runs hold the database's bytes",
            [(k, raw.get(k), disk.get(k)) for k in sorted(set(raw) | set(disk)) if raw.get(k) != disk.get(k)][:3])
    c.close()
    c = lib.connect(path)
    T.check(c.execute(DUMP % "g").fetchall() == exp, what + ": reopened")
    compare(c, what + " reopened", qs)
    T.check(c.execute("SELECT gpuds_check('g')").fetchone()[0] == "ok", what + ": gpuds_check")
    c.close()
    child_colplans(path, qs, what)
    shutil.rmtree(d, ignore_errors=True)


def case_old_format(enc, mod):
    """A format-4 table in a UTF-16 database: UTF-8 records, read, written
    and ordered as before."""
    what = "%s %s format 4" % (enc, mod)
    d = tempfile.mkdtemp(prefix="gpuds_txt_")
    path = os.path.join(d, "o.db")
    c = lib.connect(path)
    c.execute("PRAGMA encoding='%s'" % enc)
    c.execute("CREATE VIRTUAL TABLE g USING %s%s" % (mod, DECL))
    lib.set_format(c, 4, "g")
    c.execute("CREATE TABLE plain" + DECL)
    c.close()
    texts = ["", "a", "h\u00e9llo", "\u65e5\u672c", "\U0001f600", "\ue000z", "\u0100", "\u00ff",
             "nul\x00in", "12", "\ufeffbom"]
    c = lib.connect(path)
    for t in ("plain", "g"):
        c.executemany("INSERT INTO %s VALUES(?, ?, ?, ?)" % t,
                      [(i + 1, s, s, s) for i, s in enumerate(texts)])
    T.check(lib.table_format(c, "g") == 4, what + ": still format 4")
    exp = c.execute(DUMP % "plain").fetchall()
    T.check(c.execute(DUMP % "g").fetchall() == exp, what + ": as written")
    disk = disk_texts(c, "utf-8")
    T.check(disk == {i + 1: s for i, s in enumerate(texts)}, what + ": UTF-8 records", disk)
    qs = [("SELECT k FROM %s ORDER BY t, k", ()), ("SELECT k FROM %s ORDER BY s DESC, k", ())]
    for s in texts[1:]:
        for op in ("=", "<", ">="):
            qs.append(("SELECT k FROM %%s WHERE s %s ? ORDER BY k" % op, (s,)))
    compare(c, what, qs)
    c.close()
    c = lib.connect(path)
    T.check(c.execute(DUMP % "g").fetchall() == exp, what + ": reopened")
    T.check(c.execute("SELECT gpuds_check('g')").fetchone()[0] == "ok", what + ": gpuds_check")
    c.close()
    child_colplans(path, qs, what, plans=False)
    shutil.rmtree(d, ignore_errors=True)


def main():
    if not lib.EXT:
        print("GPUDS_EXT not set: skipped")
        return 77
    print("seed %d (GPUDS_TEST_SEED)" % SEED)
    rng = random.Random(SEED)
    hexes = FIXED + random_hexes(rng, NRANDOM)
    for enc in ("UTF-16le", "UTF-16be"):
        for mod in ("gfsl", "gpuhash"):
            case_bytes(enc, mod, hexes)
            case_old_format(enc, mod)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
