#!/usr/bin/python3
"""The storage format (ARCHITECTURE.md, "The storage format"): format 5
(format 4's encoding with text as the database encodes it: in a UTF-8
database the two are the same) round trips of every kind of value (integers at every size boundary,
reals, empty and long text and blobs, NULLs, many columns, keys at the
ends of their range), checked against an ordinary twin table after
reopening and byte by byte against the documented encoding (the chunk
checksums seeded with their ids, t_meta's digests, a new stamp a commit);
tables of formats 2, 3 and 4 (as earlier builds wrote them) still loaded
and written in their own format; an unknown format refused by name; and compaction
keeping the runs near the live size after updates and deletes.

The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import os
import shutil
import sqlite3
import struct
import sys
import tempfile

from gpuds_testlib import (EXT, NEW_FORMAT, Tally, chunk_sum, connect, entries3, entries4,
                           keys_decode, record3_decode, record4_decode, run_digests, set_format,
                           table_format, varint_get)

T = Tally()
check = T.check
MODULES = ("gfsl", "gpuhash")

INTS = []
for b in (0, 7, 15, 23, 31, 47, 63):
    for x in (2 ** b - 1, 2 ** b, -(2 ** b), -(2 ** b) - 1):
        if -2 ** 63 <= x < 2 ** 63:
            INTS.append(x)
INTS += [0, 1, 2, -1, 2 ** 63 - 1, -2 ** 63]
REALS = [0.0, -0.0, 1.5, -2.25, 1e308, -1e308, 1.7976931348623157e308, 5e-324, -5e-324,
         2.2250738585072014e-308, 1e-300, 3.0, 2.0 ** 53, float("inf"), float("-inf")]
TEXTS = ["", "a", "héllo wörld", "x" * 100000, "a\x00b"]
BLOBS = [b"", b"\x00", bytes(range(256)), b"\xff" * 70000]
KEYS = [-2 ** 63, -2 ** 63 + 1, -1, 0, 1, 2 ** 62, 2 ** 63 - 2, 2 ** 63 - 1]


def values():
    """Every kind of value once (the text with a NUL made by CAST)."""
    return ([(v,) for v in INTS] + [(v,) for v in REALS] + [(v,) for v in TEXTS]
            + [(v,) for v in BLOBS] + [(None,)])


def dump(c, t, ncol=1):
    cols = ", ".join("typeof(c%d), quote(c%d)" % (i, i) for i in range(ncol))
    return c.execute("SELECT k, %s FROM %s ORDER BY k" % (cols, t)).fetchall()


def serial(v):
    """The serial type SQLite's record gives v (file format 4)."""
    if v is None:
        return 0
    if isinstance(v, int):
        if v in (0, 1):
            return 8 + v
        u = ~v if v < 0 else v
        for s, lim in ((1, 127), (2, 32767), (3, 8388607), (4, 2147483647), (5, 2 ** 47 - 1)):
            if u <= lim:
                return s
        return 6
    if isinstance(v, float):
        return 7
    if isinstance(v, str):
        return len(v.encode()) * 2 + 13
    return len(v) * 2 + 12


def runs_bytes(c, t="t"):
    """(keys blob bytes, vals blob bytes) of every run of t, key order."""
    return c.execute("SELECT n, keys, vals FROM '%s_run' ORDER BY id" % t).fetchall()


def on_disk(c, ncol, t="t"):
    """The newest value of each key as the format-4 bytes say: {k: [values]
    or None (deleted)}, runs oldest first, checking each chunk's layout."""
    got = {}
    for n, keys, vals in runs_bytes(c, t):
        ks = keys_decode(keys, n)
        check(all(b > a for a, b in zip(ks, ks[1:])), "chunk keys ascend")
        ents = entries4(vals[:-8])
        check(len(ents) == n, "a chunk holds n entries", (len(ents), n))
        for k, (off, pay, kind, L) in zip(ks, ents):
            if kind == "rec":
                got[k] = record4_decode(vals[pay:pay + L], ncol)
            elif kind == "del":
                got[k] = None
    return got


def twin(mod, decl, name):
    """A fresh database in a temporary folder holding t USING mod(k INTEGER
    PRIMARY KEY, decl) and its ordinary twin r: (folder, path, connection)."""
    tmp = tempfile.mkdtemp(prefix="gpuds_fmt_")
    p = os.path.join(tmp, name)
    c = connect(p)
    c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, %s)" % (mod, decl))
    c.execute("CREATE TABLE r(k INTEGER PRIMARY KEY, %s)" % decl)
    return tmp, p, c


def case_round_trip():
    """Each value in a one-column table without affinity, and again in
    several commits (runs merged), both modules; reopened and compared with
    an ordinary table; the bytes on disk decoded by the documented format."""
    for mod in MODULES:
        tmp, p, c = twin(mod, "c0", "a.db")
        check(table_format(c) == NEW_FORMAT, "%s: a new table is format %d" % (mod, NEW_FORMAT),
              table_format(c))
        vals = values()
        keys = KEYS + list(range(100, 100 + len(vals) - len(KEYS)))
        for i, (v,) in enumerate(vals):
            for t in ("t", "r"):
                if isinstance(v, str) and "\x00" in v:
                    c.execute("INSERT INTO %s VALUES(?, CAST(? AS TEXT))" % t, (keys[i], v.encode()))
                else:
                    c.execute("INSERT INTO %s VALUES(?, ?)" % t, (keys[i], v))
        c.close()
        c = connect(p)
        check(dump(c, "t") == dump(c, "r"), "%s: every value after reopen" % mod,
              [a for a, b in zip(dump(c, "t"), dump(c, "r")) if a != b][:3])
        check(c.execute("SELECT gpuds_check('t')").fetchone()[0] == "ok", "%s: gpuds_check" % mod)
        disk = on_disk(c, 1)
        want = {k: [v] for k, v in c.execute("SELECT k, c0 FROM r")}
        live = {k: v for k, v in disk.items() if v is not None}
        check(live == want, "%s: the bytes decode to the values" % mod,
              [(k, live.get(k), want.get(k)) for k in want if live.get(k) != want[k]][:3])
        # serial types: SQLite's choice, integers in the fewest bytes
        bad = []
        for n, keys_b, vals_b in runs_bytes(c):
            for k, (off, pay, kind, L) in zip(keys_decode(keys_b, n), entries4(vals_b[:-8])):
                if kind != "rec":
                    continue
                s, _ = varint_get(vals_b, pay)
                v = c.execute("SELECT c0 FROM r WHERE k=?", (k,)).fetchone()[0]
                if isinstance(v, str) and c.execute("SELECT instr(c0, char(0)) FROM r WHERE k=?", (k,)).fetchone()[0]:
                    continue
                if s != serial(v):
                    bad.append((k, v if not isinstance(v, (str, bytes)) else len(v), s, serial(v)))
        check(not bad, "%s: serial types as SQLite's" % mod, bad[:5])
        # updates and deletes over several commits, then reopen
        for rnd in range(6):
            c.execute("BEGIN")
            for i, k in enumerate(keys):
                if (i + rnd) % 5 == 0:
                    v = vals[(i * 7 + rnd) % len(vals)][0]
                    for t in ("t", "r"):
                        c.execute("UPDATE %s SET c0=? WHERE k=?" % t, (v, k))
                elif (i + rnd) % 11 == 0:
                    for t in ("t", "r"):
                        c.execute("DELETE FROM %s WHERE k=?" % t, (k,))
            c.execute("COMMIT")
        c.close()
        c = connect(p)
        check(dump(c, "t") == dump(c, "r"), "%s: after updates, deletes and merges" % mod)
        check(c.execute("SELECT gpuds_check('t')").fetchone()[0] == "ok", "%s: gpuds_check after merges" % mod)
        # format 5: each chunk's checksum seeded with its id; t_meta's
        # digests are the documented sums over the chunks
        bad = [i for i, k, v in c.execute("SELECT id, keys, vals FROM t_run")
               if v[-8:] != chunk_sum(k, v[:-8], i)]
        check(not bad, "%s: chunk checksums seeded with their ids" % mod, bad[:3])
        meta = dict(c.execute("SELECT key, value FROM t_meta WHERE key IN ('digest', 'layout')"))
        check((meta.get("digest"), meta.get("layout")) == run_digests(c),
              "%s: t_meta's digests are the chunks'" % mod, (meta, run_digests(c)))
        stamps = set()
        for i in range(3):
            c.execute("INSERT OR REPLACE INTO t VALUES(?, ?)", (10 ** 6 + i, i))
            stamps.add(c.execute("SELECT value FROM t_meta WHERE key='stamp'").fetchone()[0])
        check(len(stamps) == 3 and 0 not in stamps, "%s: every commit a new stamp" % mod, stamps)
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)


def case_many_columns():
    """200 columns of mixed kinds and affinities, every value kind in turn."""
    ncol = 200
    affs = ["", "INTEGER", "REAL", "TEXT", "BLOB", "NUMERIC"]
    decl = ", ".join("c%d %s" % (i, affs[i % len(affs)]) for i in range(ncol))
    vals = [v for (v,) in values() if not (isinstance(v, (str, bytes)) and len(v) > 1000)]
    for mod in MODULES:
        tmp, p, c = twin(mod, decl, "m.db")
        q = "INSERT INTO %%s VALUES(?%s)" % (",?" * ncol)
        c.execute("BEGIN")
        for k in range(60):
            row = [vals[(k * 13 + i * 7) % len(vals)] for i in range(ncol)]
            for t in ("t", "r"):
                c.execute(q % t, [k] + row)
        c.execute("COMMIT")
        c.execute("DELETE FROM t WHERE k % 9 = 4")
        c.execute("DELETE FROM r WHERE k % 9 = 4")
        c.close()
        c = connect(p)                      # loaded from the shadow tables
        check(dump(c, "t", ncol) == dump(c, "r", ncol), "%s: 200 columns" % mod)
        check(c.execute("SELECT gpuds_check('t')").fetchone()[0] == "ok", "%s: 200 columns, gpuds_check" % mod)
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)


def case_format4():
    """A table of format 4 (as earlier builds wrote it: no digests, checksums
    not seeded) loads and is written in its own format, reopened, merged,
    checked."""
    for mod in MODULES:
        tmp, p, c = twin(mod, "a, b TEXT", "f4.db")
        set_format(c, 4)
        c.close()
        c = connect(p)
        for rnd in range(6):
            c.execute("BEGIN")
            for i in range(200):
                k = (i * 37 + rnd * 11) % 300
                for t in ("t", "r"):
                    if (i + rnd) % 7 == 0:
                        c.execute("DELETE FROM %s WHERE k=?" % t, (k,))
                    else:
                        c.execute("INSERT OR REPLACE INTO %s VALUES(?,?,?)" % t, (k, i * rnd, "b%d" % i))
            c.execute("COMMIT")
        c.close()
        c = connect(p)
        tag = "format 4 %s" % mod
        q = "SELECT k, quote(a), quote(b) FROM %s ORDER BY k"
        check(c.execute(q % "t").fetchall() == c.execute(q % "r").fetchall(), tag + ": contents")
        check(table_format(c) == 4, tag + ": still its format", table_format(c))
        check(c.execute("SELECT gpuds_check('t')").fetchone()[0] == "ok", tag + ": gpuds_check")
        bad = [i for i, k, v in c.execute("SELECT id, keys, vals FROM t_run")
               if v[-8:] != chunk_sum(k, v[:-8])]
        check(not bad, tag + ": checksums not seeded", bad[:3])
        keys = [k for (k,) in c.execute("SELECT key FROM t_meta WHERE key IN ('digest', 'layout')")]
        check(keys == [], tag + ": no digests", keys)
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)


def case_old_formats():
    """Tables of formats 2 and 3 load and are written in their own format:
    fixed 8-byte keys, u32 lengths and in-memory records; their contents
    after commits, merges and a reopen are the ordinary twin's."""
    for fmt in (2, 3):
        for mod in MODULES:
            tmp, p, c = twin(mod, "a, b TEXT, c REAL", "o.db")
            set_format(c, fmt)
            c.close()
            c = connect(p)
            vals = [v for (v,) in values() if not (isinstance(v, (str, bytes)) and len(v) > 1000)]
            for rnd in range(8):
                c.execute("BEGIN")
                for i in range(300):
                    k = (i * 37 + rnd * 11) % 500 - 250
                    row = (k, vals[(i + rnd) % len(vals)], "b%d" % i, i / 3)
                    for t in ("t", "r"):
                        if (i + rnd) % 7 == 0:
                            c.execute("DELETE FROM %s WHERE k=?" % t, (k,))
                        else:
                            c.execute("INSERT OR REPLACE INTO %s VALUES(?,?,?,?)" % t, row)
                c.execute("COMMIT")
            c.close()
            c = connect(p)
            tag = "format %d %s" % (fmt, mod)
            q = "SELECT k, typeof(a), quote(a), quote(b), quote(c) FROM %s ORDER BY k"
            got, want = c.execute(q % "t").fetchall(), c.execute(q % "r").fetchall()
            check(got == want and len(got) > 100, tag + ": contents", (len(got), len(want)))
            check(table_format(c) == fmt, tag + ": still its format", table_format(c))
            check(c.execute("SELECT gpuds_check('t')").fetchone()[0] == "ok", tag + ": gpuds_check")
            shape = all(len(k) == 8 * n and len(entries3(v[:-8])) == n for n, k, v in runs_bytes(c))
            check(shape, tag + ": chunks of 8-byte keys and u32 lengths")
            # Every record, byte by byte in the documented layout, holds the
            # twin's values (types included) for its key's newest entry.
            newest, bad = {}, None
            for n, k, v in runs_bytes(c):
                ks = struct.unpack("<%dq" % n, k)
                for key, (s, e, kind, ln) in zip(ks, entries3(v[:-8])):
                    if kind == "rec":
                        try:
                            newest[key] = record3_decode(v[e:e + ln], 3)
                        except ValueError as ex:
                            bad = bad or (key, str(ex))
                    else:
                        newest[key] = None
            typed = lambda row: [(type(x), x) for x in row]
            disk = sorted((key, typed(vs)) for key, vs in newest.items() if vs is not None)
            twin_rows = [(r[0], typed(r[1:])) for r in c.execute("SELECT k, a, b, c FROM r ORDER BY k")]
            check(bad is None and disk == twin_rows, tag + ": records in the documented layout hold the twin's values",
                  bad or (len(disk), len(twin_rows)))
            c.close()
            shutil.rmtree(tmp, ignore_errors=True)


def case_unknown_format():
    """A format this build does not know is refused by name."""
    for fmt in (0, NEW_FORMAT + 1, 99):
        for mod in MODULES:
            tmp = tempfile.mkdtemp(prefix="gpuds_fmt_")
            p = os.path.join(tmp, "u.db")
            c = connect(p)
            c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
            c.execute("INSERT INTO t VALUES(1, 2)")
            c.execute("UPDATE t_meta SET value=? WHERE key='format'", (fmt,))
            c.close()
            c = connect(p)
            e = None
            try:
                c.execute("SELECT * FROM t").fetchall()
            except sqlite3.Error as ex:
                e = str(ex)
            check(e is not None and ("storage format %d" % fmt) in e,
                  "%s: format %d refused by name" % (mod, fmt), e)
            c.close()
            shutil.rmtree(tmp, ignore_errors=True)


def case_compaction():
    """After many commits of updates and deletes, the runs hold not much
    more than the live rows would written afresh, in formats 3, 4 and 5;
    and format 4's runs are smaller than format 3's."""
    sizes = {}
    for fmt in (3, 4, NEW_FORMAT):
        for mod in MODULES:
            tmp = tempfile.mkdtemp(prefix="gpuds_fmt_")
            p = os.path.join(tmp, "c.db")
            c = connect(p)
            for t in ("t", "f"):
                c.execute("CREATE VIRTUAL TABLE %s USING %s(k INTEGER PRIMARY KEY, v INTEGER, s TEXT)" % (t, mod))
                if fmt != NEW_FORMAT:
                    set_format(c, fmt, t)
            c.close()
            c = connect(p)
            c.execute("PRAGMA synchronous=OFF")
            c.execute("INSERT INTO t SELECT k, k*3, 'row ' || k FROM (WITH RECURSIVE s(k) AS"
                      " (SELECT 1 UNION ALL SELECT k+1 FROM s WHERE k<20000) SELECT k FROM s)")
            worst = 0
            for rnd in range(40):
                c.execute("BEGIN")
                c.execute("UPDATE t SET v = v + 1, s = s || 'x' WHERE (k + ?) % 13 = 0", (rnd,))
                c.execute("DELETE FROM t WHERE (k + ?) % 97 = 0", (rnd,))
                c.execute("INSERT OR REPLACE INTO t SELECT k + 20000 + ? * 50, k, 'new' FROM t WHERE k <= 50",
                          (rnd,))
                c.execute("COMMIT")
                ent, nrow = [c.execute("SELECT value FROM t_meta WHERE key=?", (key,)).fetchone()[0]
                             for key in ("entries", "rows")]
                worst = max(worst, ent / nrow)
            check(worst <= 2.5, "format %d %s: the runs hold at most 2.5 entries a live row after "
                  "every commit" % (fmt, mod), worst)
            c.execute("INSERT INTO f SELECT * FROM t")
            used = {}
            for t in ("t", "f"):
                used[t] = c.execute("SELECT sum(length(keys) + length(vals)) FROM '%s_run'" % t).fetchone()[0]
            tag = "format %d %s" % (fmt, mod)
            check(used["t"] <= 2.0 * used["f"], tag + ": runs within 2x of the live rows written afresh",
                  (used["t"], used["f"]))
            c.execute("VACUUM")
            pages = c.execute("PRAGMA page_count").fetchone()[0] * c.execute("PRAGMA page_size").fetchone()[0]
            check(pages <= 2.5 * used["f"] + 200000, tag + ": the file near the live size after VACUUM",
                  (pages, used["f"]))
            check(c.execute("SELECT gpuds_check('t')").fetchone()[0] == "ok", tag + ": gpuds_check")
            sizes[(fmt, mod)] = used["f"]
            c.close()
            shutil.rmtree(tmp, ignore_errors=True)
    for mod in MODULES:
        check(sizes[(4, mod)] < 0.6 * sizes[(3, mod)], "%s: format 4 at most 0.6x format 3's bytes" % mod,
              (sizes[(4, mod)], sizes[(3, mod)]))


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    for fn in (case_round_trip, case_many_columns, case_format4, case_old_formats, case_unknown_format,
               case_compaction):
        try:
            fn()
        except Exception:
            import traceback
            check(False, fn.__name__ + " raised", traceback.format_exc())
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
