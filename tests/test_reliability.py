#!/usr/bin/python3
"""Reproductions of defects found against "what an ordinary table
promises", one check each, on both modules, against an ordinary rowid table
where one applies.  Each case names the defect it reproduces.

Usage:
    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_reliability.py [case ...]
The last line is "N passed, M failed"; exit 1 if M > 0, 77 if GPUDS_EXT is
unset (SKIPPED).  GPUDS_BACKEND is left as set (the GPU backend where there
is one), so the GPU machine runs the same cases on its stores.
"""
import json
import os
import sqlite3
import sys

from gpuds_testlib import (EXT, Tally, connect, entries3, entries4, run_cases, set_format,
                           table_format)

MODULES = ("gfsl", "gpuhash")
TMP = None
CASES = []
T = Tally()
check = T.check


def case(fn):
    CASES.append(fn)
    return fn


def fresh(name):
    """A path for a new database file in the test's directory."""
    p = os.path.join(TMP, name)
    for s in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(p + s):
            os.remove(p + s)
    return p


def rows(c, sql, *a):
    return c.execute(sql, a).fetchall()


def err(c, sql, *a):
    """The error message of running sql, or None if it succeeds."""
    try:
        c.execute(sql, a).fetchall()
        return None
    except sqlite3.Error as e:
        return str(e)


def twin(c, mod, decl="k INTEGER PRIMARY KEY, v"):
    c.execute("DROP TABLE IF EXISTS t")
    c.execute("DROP TABLE IF EXISTS r")
    c.execute("CREATE VIRTUAL TABLE t USING %s(%s)" % (mod, decl))
    c.execute("CREATE TABLE r(%s)" % decl)


def both(c, sql, *a):
    """Run sql on t and on r; return (result or error) of each."""
    out = []
    for name in ("t", "r"):
        s = sql.replace("{t}", name)
        try:
            out.append(("ok", c.execute(s, a).fetchall()))
        except sqlite3.Error as e:
            out.append(("error", str(e).replace(".%s." % name, ".T.")
                        .replace(" %s." % name, " T.")))
    return out


def agree(c, sql, what, *a):
    ra, rb = both(c, sql, *a)
    check(ra == rb, what, "gpuds %r vs ordinary %r" % (ra, rb))
    return ra


def contents(c, name):
    return rows(c, "SELECT * FROM %s ORDER BY 1" % name)


# ---------------------------------------------------------------- defect 1
@case
def d01_rollback_to_after_busy_release():
    """ROLLBACK TO after a RELEASE that failed with BUSY (rollback journal, a
    reader holding a lock) must leave a readable table with the right rows."""
    for mod in MODULES:
        p = fresh("d01_%s.db" % mod)
        a = connect(p, timeout=0)
        b = connect(p, timeout=0)
        a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        a.execute("INSERT INTO t VALUES(1,'a'),(2,'b'),(3,'c'),(100,'d')")
        a.execute("SAVEPOINT s")
        a.execute("INSERT INTO t VALUES(5,'x')")
        b.execute("BEGIN")
        b.execute("SELECT count(*) FROM t").fetchall()
        e = err(a, "RELEASE s")
        check(e is not None and "locked" in e, "d01 %s: RELEASE is BUSY" % mod, e)
        a.execute("ROLLBACK TO s")
        b.execute("COMMIT")
        a.execute("RELEASE s")
        c = connect(p)
        got = err(c, "SELECT * FROM t") or sorted(rows(c, "SELECT * FROM t"))
        check(got == [(1, 'a'), (2, 'b'), (3, 'c'), (100, 'd')], "d01 %s: contents" % mod, got)
        got = rows(c, "SELECT gpuds_check('t')")
        check(got == [("ok",)], "d01 %s: gpuds_check" % mod, got)
        for x in (a, b, c):
            x.close()



# ---------------------------------------------------------------- defect 2
@case
def d02_table_recreated_by_another_connection():
    """A connection must never serve a table object made for a table that
    another connection dropped (or renamed away) and created again: same
    columns, other columns, fewer columns (a write used to crash)."""
    for mod in MODULES:
        for how in ("drop", "rename"):
            p = fresh("d02_%s_%s.db" % (mod, how))
            a, b = connect(p), connect(p)
            a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
            a.execute("INSERT INTO t VALUES(1,'old')")
            check(rows(b, "SELECT * FROM t") == [(1, 'old')], "d02 %s %s: b reads" % (mod, how))
            gone = "DROP TABLE t" if how == "drop" else "ALTER TABLE t RENAME TO t_old"
            a.execute(gone)
            a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
            a.execute("INSERT INTO t VALUES(2,'new')")
            got = err(b, "SELECT * FROM t") or rows(b, "SELECT * FROM t")
            check(got == [(2, 'new')], "d02 %s %s: same columns, b sees the new table" % (mod, how), got)
            # more columns
            a.execute("DROP TABLE t")
            a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v, w, x, y, z)" % mod)
            a.execute("INSERT INTO t VALUES(1,2,3,4,5,6)")
            got = err(b, "SELECT * FROM t") or rows(b, "SELECT * FROM t")
            check(got == [(1, 2, 3, 4, 5, 6)], "d02 %s %s: more columns" % (mod, how), got)
            # fewer columns, then a write from b
            a.execute("DROP TABLE t")
            a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
            got = err(b, "SELECT * FROM t") or rows(b, "SELECT * FROM t")
            check(got == [], "d02 %s %s: fewer columns, empty" % (mod, how), got)
            e = err(b, "INSERT INTO t VALUES(7, 8)")
            check(e is None, "d02 %s %s: b writes" % (mod, how), e)
            for c in (a, b, connect(p)):
                got = err(c, "SELECT * FROM t") or rows(c, "SELECT * FROM t")
                check(got == [(7, 8)], "d02 %s %s: every connection reads b's row" % (mod, how), got)
                got = rows(c, "SELECT gpuds_check('t')")
                check(got == [("ok",)], "d02 %s %s: gpuds_check" % (mod, how), got)
            a.close()
            b.close()


# ---------------------------------------------------------------- defect 4
@case
def d04_last_insert_rowid_and_changes():
    """last_insert_rowid(), lastrowid and changes() are the user's, not the
    shadow tables' (the ordinary table is the reference)."""
    for mod in MODULES:
        p = fresh("d04_%s.db" % mod)
        c = connect(p)
        c.execute("CREATE TABLE r(k INTEGER PRIMARY KEY, v)")
        c.execute("INSERT INTO r VALUES(1,'a'),(2,'b')")
        c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        check(rows(c, "SELECT changes()") == [(2,)], "d04 %s: changes() after CREATE" % mod,
              rows(c, "SELECT changes()"))
        for name in ("t", "r"):
            cur = c.execute("INSERT INTO %s VALUES(5,'x')" % name)
            got = (cur.lastrowid, rows(c, "SELECT last_insert_rowid(), changes()"))
            check(got == (5, [(5, 1)]), "d04 %s: autocommit INSERT into %s" % (mod, name), got)
        res = {}
        for name in ("t", "r"):
            c.execute("BEGIN")
            c.execute("INSERT INTO %s(v) VALUES('y')" % name)
            c.execute("INSERT INTO %s VALUES(40,'z'),(41,'w'),(42,'u')" % name)
            c.execute("COMMIT")
            res[name] = rows(c, "SELECT last_insert_rowid()")
        check(res["t"] == res["r"] == [(42,)], "d04 %s: last_insert_rowid after COMMIT" % mod, res)
        for name in ("t", "r"):
            c.execute("BEGIN")
            c.execute("UPDATE %s SET v='q' WHERE k>=40" % name)
            res[name] = rows(c, "SELECT changes()")
            c.execute("COMMIT")
        check(res["t"] == res["r"] == [(3,)], "d04 %s: changes() before COMMIT" % mod, res)
        # changes() after an explicit COMMIT counts the shadow writes of xSync
        # (README, Known differences): SQLite counts every nested INSERT/UPDATE
        # and has no sqlite3_set_changes().
        c.close()


# --------------------------------------------------------------- defect 11
@case
def d11_damaged_meta():
    """A damaged t_meta is an error, never silently stale answers; a format
    this build does not know is refused by name."""
    for mod in MODULES:
        for what, sql in (("generation deleted", "DELETE FROM t_meta WHERE key='generation'"),
                          ("format 99", "UPDATE t_meta SET value=99 WHERE key='format'"),
                          ("rows wrong", "UPDATE t_meta SET value=value+1 WHERE key='rows'"),
                          ("generation text", "UPDATE t_meta SET value='x' WHERE key='generation'"),
                          ("emptied", "DELETE FROM t_meta"),
                          ("newest run deleted", "DELETE FROM t_run WHERE id=(SELECT max(id) FROM t_run)"),
                          ("generation twice", "INSERT INTO t_meta SELECT key, value FROM t_meta WHERE key='generation'")):
            p = fresh("d11_%s.db" % mod)
            a = connect(p)
            a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
            for i in range(4):
                a.execute("INSERT INTO t VALUES(?, ?)", (i, "v%d" % i))
            b = connect(p)
            check(len(rows(b, "SELECT * FROM t")) == 4, "d11 %s %s: b reads" % (mod, what))
            raw = sqlite3.connect(p, isolation_level=None)
            try:
                raw.execute(sql)
            except sqlite3.Error as e:          # the PRIMARY KEY of an old-made t_meta
                check(False, "d11 %s %s: damage applied" % (mod, what), e)
            raw.close()
            for c, who in ((b, "open connection"), (connect(p), "new connection")):
                e = err(c, "SELECT * FROM t")
                # b loaded the table before the damage: its answer may be
                # the committed contents (damage no commit made) or an error
                ok = e is not None and ("damaged" in e or "format 99" in e)
                if who == "open connection" and e is None:
                    ok = sorted(rows(c, "SELECT * FROM t")) == [(i, "v%d" % i) for i in range(4)]
                check(ok, "d11 %s %s: %s reports it" % (mod, what, who), e)
            a.close()
            b.close()



@case
def d02_drop_recreate_in_one_transaction():
    """Writes to a table, a schema change (so SQLite connects the table
    again), DROP and CREATE of the same name, a write, COMMIT, all in one
    transaction: the dropped table's pending writes must not land in the new
    table's shadow tables (found by test_concurrency: "t_meta is damaged: it
    says 1 rows, t_run holds 2")."""
    for mod in MODULES:
        p = fresh("d02r_%s.db" % mod)
        a = connect(p)
        b = connect(p)
        a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        a.execute("CREATE TABLE other(x)")
        a.execute("BEGIN")
        a.execute("INSERT INTO t VALUES(28, 'old')")
        a.execute("ALTER TABLE other RENAME TO other2")
        a.execute("DROP TABLE t")
        a.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        a.execute("INSERT INTO t VALUES(32, 'new')")
        a.execute("COMMIT")
        for who, c in (("same", a), ("other", b)):
            got = err(c, "SELECT 1") or rows(c, "SELECT * FROM t")
            check(got == [(32, "new")], "d02 %s: %s connection reads the new table only" % (mod, who), got)
        check(rows(b, "SELECT gpuds_check('t')") == [("ok",)], "d02 %s: gpuds_check" % mod,
              rows(b, "SELECT gpuds_check('t')"))
        a.close()
        b.close()


@case
def d02_drop_recreate_rolled_back():
    """DROP and CREATE of the same name undone by ROLLBACK or ROLLBACK TO
    (no writes before the savepoint): the old table's rows are read again,
    inside the transaction and after, and a later write is kept (found by
    test_concurrency: the table object of the undone CREATE kept serving an
    empty table, and a write after it was lost)."""
    for mod in MODULES:
        for undo in ("ROLLBACK", "ROLLBACK TO s"):
            c = connect(":memory:")
            creates = (("t", "CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod),
                       ("r", "CREATE TABLE r(k INTEGER PRIMARY KEY, v)"))
            for name, create in creates:
                c.execute(create)
                c.execute("INSERT INTO %s VALUES(5, 'five')" % name)
            c.execute("BEGIN")
            c.execute("SAVEPOINT s")
            for name, create in creates:
                c.execute("DROP TABLE %s" % name)
                c.execute(create)
                rows(c, "SELECT * FROM %s" % name)
            c.execute(undo)
            tag = "d02 %s %s" % (mod, undo)
            agree(c, "SELECT * FROM {t}", tag + ": the old rows")
            if c.in_transaction:
                c.execute("COMMIT")
            agree(c, "INSERT OR REPLACE INTO {t} VALUES(18, NULL)", tag + ": a write after it")
            agree(c, "SELECT * FROM {t} ORDER BY k", tag + ": kept")
            check(rows(c, "SELECT gpuds_check('t')") == [("ok",)], tag + ": gpuds_check",
                  rows(c, "SELECT gpuds_check('t')"))
            c.close()


# ---------------------------------------------------------------- defect 5
@case
def d05_row_size_limit():
    """A row over SQLITE_LIMIT_LENGTH fails its own INSERT, not the COMMIT,
    and the transaction's other rows survive; big rows within it are kept."""
    for mod in MODULES:
        p = fresh("d05_%s.db" % mod)
        c = connect(p)
        twin(c, mod)
        if not hasattr(c, "setlimit"):      # Python < 3.11
            continue
        c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)
        for name in ("t", "r"):
            c.execute("BEGIN")
            c.execute("INSERT INTO %s VALUES(1, 'small')" % name)
            e = err(c, "INSERT INTO %s VALUES(2, ?)" % name, "x" * 1001)
            res = (e, err(c, "COMMIT"))
            if name == "t":
                got_t = res
            else:
                got_r = res
        check(got_t[0] is not None and "too big" in got_t[0] and got_t[1] is None,
              "d05 %s: the too-big INSERT fails, COMMIT works" % mod, (got_t, got_r))
        check(contents(c, "t") == contents(c, "r"), "d05 %s: contents" % mod,
              (contents(c, "t"), contents(c, "r")))
        c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000000)
        big = "y" * 900000
        c.execute("INSERT INTO t VALUES(3, ?)", (big,))
        c.close()
        c = connect(p)
        check(rows(c, "SELECT length(v) FROM t WHERE k=3") == [(900000,)], "d05 %s: big row kept" % mod)
        c.close()


def spill_refs(c, t):
    """The spilled-record references of every entry of t_run (format 3:
    L = 0xfffffffe, format 4: E = 1; then i64 first piece, u32 bytes, u32
    pieces, u64 sum) as (first, pieces) pairs, and the ids t_ovfl holds."""
    import struct
    fmt = table_format(c, t)
    refs = []
    for n, vals in rows(c, "SELECT n, vals FROM '%s_run'" % t):
        ents = (entries4 if fmt >= 4 else entries3)(vals[:-8])
        check(len(ents) == n, "spill_refs: %d entries, n = %d" % (len(ents), n))
        for _off, pay, kind, _L in ents:
            if kind == "ovfl":
                first, nrec, npiece, _sum = struct.unpack_from("<qIIQ", vals, pay)
                refs.append((first, npiece))
    ids = [i for (i,) in rows(c, "SELECT id FROM '%s_ovfl' ORDER BY id" % t)]
    return refs, ids


def no_orphans(c, t, what):
    """Every t_ovfl row belongs to exactly one run entry, and every entry's
    pieces are there."""
    refs, ids = spill_refs(c, t)
    want = sorted(f + i for f, n in refs for i in range(n))
    check(want == ids, what, "referenced %d pieces, t_ovfl holds %d" % (len(want), len(ids)))
    return len(refs)


@case
def d05_limit_boundary():
    """Every row an ordinary table accepts under SQLITE_LIMIT_LENGTH is
    stored (records too big for a chunk are spilled to t_ovfl), and exactly
    the rows it refuses are refused: byte by byte around the limit, for
    several column layouts."""
    LIM = 100000
    layouts = [
        ("k INTEGER PRIMARY KEY, v", lambda n: (b"\x01" * n,)),
        ("k INTEGER PRIMARY KEY, v TEXT", lambda n: ("t" * n,)),
        ("k INTEGER PRIMARY KEY, a INTEGER, b REAL, c TEXT, d BLOB, e",
         lambda n: (123456789, 3.0, "c" * (n // 2), b"\x02" * (n - n // 2), None)),
        ("k INTEGER PRIMARY KEY, a, b, c", lambda n: (b"a" * (n // 2), b"b" * (n - n // 2 - 10), 2.5)),
    ]
    for mod in MODULES:
        for li, (decl, mk) in enumerate(layouts):
            p = fresh("d05b_%s_%d.db" % (mod, li))
            c = connect(p)
            if not hasattr(c, "setlimit"):
                return
            twin(c, mod, decl)
            c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, LIM)
            ncol = decl.count(",") + 1
            q = "INSERT INTO {t} VALUES(?%s)" % (",?" * (ncol - 1))
            c.execute("PRAGMA synchronous=OFF")
            bad = []
            nok = 0
            c.execute("BEGIN")              # refused rows leave the transaction going
            for n in range(LIM - 40, LIM + 3):
                ra, rb = both(c, q, n, *mk(n))
                if ra != rb:
                    bad.append((n, ra, rb))
                nok += ra[0] == "ok"
            c.execute("COMMIT")
            check(not bad and nok > 0, "d05 %s layout %d: accepted and refused as the ordinary table" % (mod, li),
                  bad[:3])
            # rows moved to a new key, one per statement (a multi-row UPDATE
            # of a virtual table passes each row through an ephemeral table
            # whose record is bigger: README, Known differences), in one
            # transaction; then a multi-row UPDATE of the rows it can take
            c.execute("BEGIN")
            for n in range(LIM - 40, LIM + 3, 2):
                agree(c, "UPDATE {t} SET k=k+1000000 WHERE k=?", "d05 %s layout %d: update" % (mod, li), n)
            c.execute("COMMIT")
            for i, n in enumerate(range(LIM - 120, LIM - 60, 3)):
                agree(c, q, "d05 %s layout %d: rows 60 bytes under" % (mod, li), 10 + i, *mk(n))
            agree(c, "UPDATE {t} SET k=k+1 WHERE k<1000", "d05 %s layout %d: multi-row update" % (mod, li))
            ra, rb = both(c, "UPDATE {t} SET k=k+2000000 WHERE k BETWEEN ? AND ?", LIM - 40, LIM + 2)
            check(rb[0] == "ok" and ra == ("error", "string or blob too big"),
                  "d05 %s layout %d: a multi-row UPDATE of rows within bytes of the limit fails whole" % (mod, li),
                  (ra, rb))
            c.execute("UPDATE r SET k=k-2000000 WHERE k>2000000")
            agree(c, "SELECT * FROM {t} ORDER BY k", "d05 %s layout %d: contents" % (mod, li))
            nspill = no_orphans(c, "t", "d05 %s layout %d: t_ovfl is what t_run refers to" % (mod, li))
            check(nspill > 0, "d05 %s layout %d: some records were spilled" % (mod, li), nspill)
            c.close()
            c = connect(p)                  # persistence: a fresh load
            c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, LIM)
            agree(c, "SELECT * FROM {t} ORDER BY k", "d05 %s layout %d: after reopen" % (mod, li))
            check(rows(c, "SELECT gpuds_check('t')") == [("ok",)], "d05 %s layout %d: gpuds_check" % (mod, li),
                  rows(c, "SELECT gpuds_check('t')"))
            c.close()


@case
def d05_spill_compaction():
    """Big rows updated, deleted and re-inserted over many commits: the
    spilled records of overridden rows go with the runs a merge replaces
    (t_ovfl holds exactly what t_run refers to after every commit), the file
    stops growing, and a second connection, a reopen and a BUSY-failed
    COMMIT followed by ROLLBACK TO (the rewrite) all see the ordinary
    table's rows."""
    import random
    LIM = 50000
    for mod in MODULES:
        p = fresh("d05c_%s.db" % mod)
        c = connect(p, timeout=0)
        if not hasattr(c, "setlimit"):
            return
        twin(c, mod, "k INTEGER PRIMARY KEY, v, w")
        c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, LIM)
        c.execute("PRAGMA synchronous=OFF")
        b = connect(p, timeout=0)
        rnd = random.Random(5)
        pages = []
        for rnd_i in range(60):
            c.execute("BEGIN")
            for _ in range(rnd.randint(1, 6)):
                k = rnd.randint(1, 12)
                op = rnd.random()
                big = bytes([rnd_i % 256]) * rnd.choice((10, 30000, LIM - 100))
                if op < 0.5:
                    agree(c, "INSERT OR REPLACE INTO {t} VALUES(?, ?, ?)", "d05c %s: replace" % mod,
                          k, big, rnd_i)
                elif op < 0.8:
                    agree(c, "UPDATE {t} SET v=?, w=w+1 WHERE k=?", "d05c %s: update" % mod, big, k)
                else:
                    agree(c, "DELETE FROM {t} WHERE k=?", "d05c %s: delete" % mod, k)
            c.execute("COMMIT")
            no_orphans(c, "t", "d05c %s round %d: t_ovfl is what t_run refers to" % (mod, rnd_i))
            if rnd_i % 10 == 9:
                got = rows(b, "SELECT k, length(v), hex(substr(v, 1, 1)), w FROM t ORDER BY k")
                want = rows(b, "SELECT k, length(v), hex(substr(v, 1, 1)), w FROM r ORDER BY k")
                check(got == want, "d05c %s round %d: the other connection" % (mod, rnd_i), (got, want))
                pages.append(rows(c, "PRAGMA page_count")[0][0])
        check(max(pages[2:]) <= 2 * pages[1] + 50, "d05c %s: the file stops growing" % mod, pages)
        # COMMIT fails with BUSY (b reads), ROLLBACK TO, then COMMIT: the rewrite
        c.execute("BEGIN")
        c.execute("SAVEPOINT s")
        agree(c, "INSERT OR REPLACE INTO {t} VALUES(100, ?, 0)", "d05c %s: big row in savepoint" % mod,
              b"z" * (LIM - 100))
        b.execute("BEGIN")
        rows(b, "SELECT count(*) FROM t")
        e = err(c, "COMMIT")
        check(e is not None and "locked" in e, "d05c %s: COMMIT is BUSY" % mod, e)
        c.execute("ROLLBACK TO s")
        b.execute("COMMIT")
        agree(c, "INSERT OR REPLACE INTO {t} VALUES(101, ?, 1)", "d05c %s: another big row" % mod,
              b"y" * (LIM - 100))
        c.execute("COMMIT")
        no_orphans(c, "t", "d05c %s: after the rewrite" % mod)
        agree(c, "SELECT * FROM {t} ORDER BY k", "d05c %s: contents after the rewrite" % mod)
        b.close()
        c.close()
        c = connect(p)
        agree(c, "SELECT * FROM {t} ORDER BY k", "d05c %s: after reopen" % mod)
        check(rows(c, "SELECT gpuds_check('t')") == [("ok",)], "d05c %s: gpuds_check" % mod)
        c.execute("ALTER TABLE t RENAME TO t2")
        names = sorted(n for (n,) in rows(c, "SELECT name FROM sqlite_schema WHERE name LIKE 't%'"))
        check(names == ["t2", "t2_meta", "t2_ovfl", "t2_run"], "d05c %s: RENAME takes t_ovfl along" % mod, names)
        c.execute("DROP TABLE t2")
        names = sorted(n for (n,) in rows(c, "SELECT name FROM sqlite_schema WHERE name LIKE 't%'"))
        check(names == [], "d05c %s: DROP takes t_ovfl along" % mod, names)
        c.close()


@case
def d05_format2_table():
    """A table of format 2 (no t_ovfl, written by earlier builds) is read and
    written as before: rows that fit in a chunk are kept, a bigger one fails
    its own INSERT, and RENAME works without t_ovfl."""
    for mod in MODULES:
        p = fresh("d05f_%s.db" % mod)
        c = connect(p)
        if not hasattr(c, "setlimit"):
            return
        twin(c, mod)
        set_format(c, 2)
        c.close()
        c = connect(p)
        c.execute("INSERT INTO t VALUES(1, 'a')")
        c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 10000)
        check(err(c, "INSERT INTO t VALUES(2, ?)", b"x" * 9000) is None, "d05f %s: a row within a chunk" % mod)
        e = err(c, "INSERT INTO t VALUES(3, ?)", b"x" * 9990)
        check(e is not None and "too big" in e, "d05f %s: a row past a chunk fails its INSERT" % mod, e)
        c.execute("ALTER TABLE t RENAME TO u")
        c.close()
        c = connect(p)
        got = rows(c, "SELECT k, length(v) FROM u ORDER BY k")
        check(got == [(1, 1), (2, 9000)], "d05f %s: contents" % mod, got)
        check(rows(c, "SELECT value FROM u_meta WHERE key='format'") == [(2,)], "d05f %s: still format 2" % mod)
        c.close()


@case
def d05_zeroblob_1e9():
    """The reported row: zeroblob(999999980) under the default limit (1e9).
    Slow (about 4 GB moved, 60 s on the 2-core machine, 3 GB of memory): runs
    only with GPUDS_BIG=1."""
    if os.environ.get("GPUDS_BIG") != "1":
        return
    for mod in MODULES:
        p = fresh("d05z_%s.db" % mod)
        c = connect(p)
        twin(c, mod)
        agree(c, "INSERT INTO {t} VALUES(1, zeroblob(999999980))", "d05z %s: insert" % mod)
        agree(c, "INSERT INTO {t} VALUES(2, zeroblob(1000000000))", "d05z %s: one past" % mod)
        c.close()
        c = connect(p)
        agree(c, "SELECT k, length(v) FROM {t}", "d05z %s: after reopen" % mod)
        c.close()
        os.remove(p)


# ---------------------------------------------------------------- defect 9
@case
def d09_null_constraint_and_table_info():
    """'v NULL' is the NULL constraint (no type, no affinity); NOT NULL shows
    in PRAGMA table_info."""
    for mod in MODULES:
        c = connect(":memory:")
        decl = "k INTEGER PRIMARY KEY, v NULL, w TEXT NOT NULL, x NULL NOT NULL, y INT"
        twin(c, mod, decl)
        check(rows(c, "PRAGMA table_info(t)") == rows(c, "PRAGMA table_info(r)"),
              "d09 %s: table_info" % mod, (rows(c, "PRAGMA table_info(t)"), rows(c, "PRAGMA table_info(r)")))
        agree(c, "INSERT INTO {t} VALUES(1, '12', 3, '4', '5')", "d09 %s: insert" % mod)
        agree(c, "SELECT typeof(v), typeof(w), typeof(x), typeof(y) FROM {t}", "d09 %s: affinities" % mod)
        agree(c, "INSERT INTO {t} VALUES(2, 1, NULL, 1, 1)", "d09 %s: NOT NULL" % mod)
        c.close()


# --------------------------------------------------------------- defect 10
@case
def d10_info_is_json():
    """gpuds_info() is valid JSON whatever the table names hold."""
    c = connect(":memory:")
    names = ['q"uote', 'back\\slash', 'tab\there', 'nl\nx', "a.b"]
    for i, n in enumerate(names):
        c.execute('CREATE VIRTUAL TABLE "%s" USING %s(k INTEGER PRIMARY KEY, v)'
                  % (n.replace('"', '""'), MODULES[i % 2]))
    try:
        info = json.loads(rows(c, "SELECT gpuds_info()")[0][0])
        got = sorted(t["name"] for t in info["tables"])
        check(got == sorted("main." + n for n in names), "d10: table names round-trip", got)
    except ValueError as e:
        check(False, "d10: gpuds_info() parses as JSON", e)
    c.close()


# --------------------------------------------------------------- defect 12
@case
def d12_check_in_transaction_and_dotted_name():
    """gpuds_check inside a transaction that flushed is 'ok'; it can name a
    table called "a.b".  (That it still reports a real disagreement is
    test_persist_corrupt.py's.)"""
    for mod in MODULES:
        p = fresh("d12_%s.db" % mod)
        os.environ["GPUDS_FLUSH_ROWS"] = "2"
        try:
            c = connect(p)
        finally:
            del os.environ["GPUDS_FLUSH_ROWS"]
        c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        c.execute("INSERT INTO t VALUES(1,'a'),(2,'b'),(3,'c')")
        c.execute("BEGIN")
        for i in range(1, 8):
            c.execute("INSERT OR REPLACE INTO t VALUES(?, 'x')", (i,))
        c.execute("DELETE FROM t WHERE k=2")
        got = rows(c, "SELECT gpuds_check('t')")
        check(got == [("ok",)], "d12 %s: gpuds_check in a flushed transaction" % mod, got)
        c.execute("COMMIT")
        check(rows(c, "SELECT gpuds_check('t')") == [("ok",)], "d12 %s: after COMMIT" % mod)
        c.execute('CREATE VIRTUAL TABLE "a.b" USING %s(k INTEGER PRIMARY KEY, v)' % mod)
        c.execute('INSERT INTO "a.b" VALUES(1, 1)')
        got = err(c, "SELECT gpuds_check('a.b')") or rows(c, "SELECT gpuds_check('a.b')")
        check(got == [("ok",)], "d12 %s: gpuds_check('a.b')" % mod, got)
        got = err(c, "SELECT gpuds_check('main.a.b')") or rows(c, "SELECT gpuds_check('main.a.b')")
        check(got == [("ok",)], "d12 %s: gpuds_check('main.a.b')" % mod, got)
        c.close()


# --------------------------------------------------------------- defect 13
@case
def d13_rowid_and_key_both_given():
    """Where a statement names both the rowid and the key, the reported two
    statements give what an ordinary table gives (README: the order of the
    names is not visible to a virtual table)."""
    for mod in MODULES:
        c = connect(":memory:")
        twin(c, mod)
        agree(c, "INSERT INTO {t}(k, rowid, v) VALUES(34, 35, 'a')", "d13 %s: insert" % mod)
        agree(c, "SELECT k, rowid, v FROM {t}", "d13 %s: insert result" % mod)
        agree(c, "UPDATE {t} SET rowid=40, k=41", "d13 %s: update" % mod)
        agree(c, "SELECT k, rowid, v FROM {t}", "d13 %s: update result" % mod)
        agree(c, "UPDATE {t} SET rowid=50", "d13 %s: rowid alone" % mod)
        agree(c, "UPDATE {t} SET k='60'", "d13 %s: key alone, as text" % mod)
        agree(c, "INSERT INTO {t}(rowid, v) VALUES(70, 'b')", "d13 %s: rowid alone" % mod)
        agree(c, "SELECT k, rowid, v FROM {t} ORDER BY k", "d13 %s: final" % mod)
        c.close()



# ------------------------------------------------------- defects 7 and 8
@case
def d07_d08_documented_interface_limits():
    """What README's Known differences says of UPDATE OR REPLACE onto moved
    keys and of INSERT ... RETURNING, held to it."""
    for mod in MODULES:
        c = connect(":memory:")
        twin(c, mod)
        agree(c, "INSERT INTO {t} VALUES(1,'a'),(2,'b'),(3,'c')", "d07 %s: rows" % mod)
        c.execute("UPDATE OR REPLACE t SET k=k+1")
        got = rows(c, "SELECT * FROM t")
        check(got == [(4, 'c')], "d07 %s: UPDATE OR REPLACE t SET k=k+1 as documented" % mod, got)
        got = rows(c, "INSERT INTO t VALUES(7,'x') RETURNING k, v")
        check(got == [(7, 'x')], "d08 %s: RETURNING a given key" % mod, got)
        got = rows(c, "INSERT INTO t(v) VALUES('y') RETURNING k, rowid, v")
        check(got == [(None, -1, 'y')], "d08 %s: RETURNING an assigned key, as documented" % mod, got)
        check(rows(c, "SELECT last_insert_rowid()") == [(8,)], "d08 %s: last_insert_rowid" % mod)
        c.close()



# ------------------------------------------------- PRAGMA integrity_check
@case
def x_integrity_check():
    """Where SQLite >= 3.44 runs PRAGMA integrity_check, it reaches gpuds'
    own check (xIntegrity): 'ok' when sound, the finding when damaged.
    Uses Python's sqlite3 if its SQLite is new enough, else apsw if
    installed; otherwise says SKIP (counted neither way)."""
    if sqlite3.sqlite_version_info >= (3, 44, 0):
        def open_db(path):
            return connect(path)
    else:
        try:
            import apsw
        except ImportError:
            print("SKIP x_integrity_check: SQLite %s < 3.44 and no apsw" % sqlite3.sqlite_version)
            return

        class Wrap:
            def __init__(self, path):
                self.c = apsw.Connection(path)
                self.c.enable_load_extension(True)
                self.c.load_extension(EXT)

            def execute(self, sql, a=()):
                return self.c.execute(sql, a)

            def close(self):
                self.c.close()
        open_db = Wrap
    for mod in MODULES:
        p = fresh("xi_%s.db" % mod)
        c = open_db(p)
        c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        c.execute("INSERT INTO t VALUES(1,'a'),(2,'b'),(3,'c')")
        got = list(c.execute("PRAGMA integrity_check"))
        check(got == [("ok",)], "xIntegrity %s: sound table" % mod, got)
        c.execute("UPDATE t_meta SET value=value+1 WHERE key='rows'")
        c.close()
        c = open_db(p)
        for pragma in ("integrity_check", "quick_check"):
            got = list(c.execute("PRAGMA %s" % pragma))
            check(len(got) == 1 and "t_meta is damaged" in str(got[0][0]),
                  "xIntegrity %s: %s reports the damage" % (mod, pragma), got)
        c.close()



# ------------------------------------------------------------ defects 3, 6
def iterate_changing(c, name, sql, n):
    """Step through sql; at each row k, delete k+2 and update k+1 (the same
    connection, between steps).  Returns the rows seen."""
    seen = []
    cur = c.cursor()
    cur.execute(sql.replace("{t}", name))
    while True:
        r = cur.fetchone()
        if r is None:
            break
        seen.append(r)
        k = r[0]
        c.execute("DELETE FROM %s WHERE k=?" % name, (k + 2,))
        c.execute("UPDATE %s SET v='new' || k WHERE k=?" % name, (k + 1,))
    return seen


@case
def d03_open_cursor_sees_own_changes():
    """An open cursor skips a row this connection deleted ahead of it and
    shows the new values of a row updated ahead of it, like an ordinary
    table; pages and IN batches at their sizes' boundaries."""
    for mod in MODULES:
        for n in (6, 255, 256, 257, 1025, 4097):
            for sql in ("SELECT k, v FROM {t} ORDER BY k",
                        "SELECT k, v FROM {t} WHERE k BETWEEN 2 AND %d ORDER BY k" % (n - 1),
                        "SELECT k, v FROM {t} WHERE k IN (%s) ORDER BY k"
                        % ",".join(str(i) for i in range(1, min(n, 1200) + 1))):
                for txn in (False, True):
                    c = connect(":memory:")
                    c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
                    c.execute("CREATE TABLE r(k INTEGER PRIMARY KEY, v)")
                    for name in ("t", "r"):
                        c.executemany("INSERT INTO %s VALUES(?, ?)" % name,
                                      [(i, "v%d" % i) for i in range(1, n + 1)])
                    res = {}
                    for name in ("t", "r"):
                        if txn:
                            c.execute("BEGIN")
                        res[name] = iterate_changing(c, name, sql, n)
                        if txn:
                            c.execute("COMMIT")
                    check(res["t"] == res["r"], "d03 %s n=%d txn=%s %s" % (mod, n, txn, sql[:40]),
                          "gpuds %r... vs ordinary %r..." % (res["t"][:6], res["r"][:6]))
                    check(contents(c, "t") == contents(c, "r"), "d03 %s n=%d: contents" % (mod, n))
                    c.close()


@case
def d06_multirow_updates_in_key_order():
    """Multi-row statements visit a gpuhash table in key order, as an
    ordinary table does."""
    for mod in MODULES:
        c = connect(":memory:")
        twin(c, mod)
        agree(c, "INSERT INTO {t} VALUES(26, 'a'), (45, 'b')", "d06 %s: rows" % mod)
        agree(c, "UPDATE {t} SET k=k-19", "d06 %s: UPDATE SET k=k-19" % mod)
        agree(c, "SELECT * FROM {t} ORDER BY k", "d06 %s: after" % mod)
        agree(c, "INSERT INTO {t} VALUES(30, 'c'), (31, 'd'), (2, 'e')", "d06 %s: more rows" % mod)
        agree(c, "UPDATE OR IGNORE {t} SET k=59 WHERE k>20", "d06 %s: UPDATE OR IGNORE" % mod)
        agree(c, "SELECT * FROM {t} ORDER BY k", "d06 %s: after OR IGNORE" % mod)
        agree(c, "INSERT INTO {t} SELECT NULL, v || '+' FROM {t}", "d06 %s: INSERT SELECT NULL" % mod)
        agree(c, "SELECT * FROM {t} ORDER BY k", "d06 %s: after INSERT SELECT" % mod)
        agree(c, "SELECT k FROM {t}", "d06 %s: a scan is in key order" % mod)
        agree(c, "SELECT k FROM {t} ORDER BY k DESC LIMIT 2", "d06 %s: ORDER BY k DESC" % mod)
        plan = rows(c, "EXPLAIN QUERY PLAN SELECT * FROM t ORDER BY k DESC")
        check(not any("TEMP B-TREE" in str(r) for r in plan), "d06 %s: ORDER BY k consumed" % mod, plan)
        c.close()


def main():
    def set_tmp(t):
        global TMP
        TMP = t
    return run_cases(T, CASES, "gpuds_rel_", sys.argv[1:], set_tmp)


if __name__ == "__main__":
    sys.exit(main())
