#!/usr/bin/python3
"""Durable gfsl/gpuhash tables: round trips, rollback, write amplification.

See tests/persist_lib.py for how every check compares (differential
against an ordinary table), the usage and the environment.

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
  3 write amplification  a transaction that flushes F times must not rewrite
                  each key O(F) times at COMMIT (counted with a TEMP trigger
                  on the shadow table; the design promises O(log n)); a
                  range DELETE after 100 small commits writes its deletions
                  about twice (its run, one merge), not once per level.
  8 bytes past the record) and a cell with an unknown storage class (NULL).
"""

import math
import random
import sqlite3
import sys
import time

from persist_lib import (COLS2, DECL2, FlushEnv, MAX, MIN, Outcomes, R, SEED,
                         T3, apply_stmt, check_ok, compare3, connect, create3,
                         dbpath, dump, info_table, key_pool, main, meta,
                         probe_reads, rand_stmt, scalar, shadow_snapshot, sz,
                         writes)


COLS1 = [("ct", "TEXT"), ("cr", "REAL"), ("cb", "BLOB"), ("cn", ""),
         ("ci", "INTEGER"), ("cm", "NUMERIC"), ("cf", "FLOATING POINT"),
         ("cs", "STRING")]
C1 = [c for c, _ in COLS1]
DECL1 = "k INTEGER PRIMARY KEY, " + ", ".join(("%s %s" % ct).strip() for ct in COLS1)


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
    ("3 write amplification", sec_amplification),
]

CHILDREN = {}


if __name__ == "__main__":
    sys.exit(main("test_persist", SECTIONS, CHILDREN, sys.argv[1:]))
