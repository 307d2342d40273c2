#!/usr/bin/python3
"""Durable gfsl/gpuhash tables: two connections and two processes.

See tests/persist_lib.py for how every check compares (differential
against an ordinary table), the usage and the environment.

Sections
  1 concurrency   two connections of one process and two processes (driven
                  through pipes) apply one random write stream alternately,
                  reading on both after each step; two processes race inserts
                  into the same tables; COMMIT that gets SQLITE_BUSY and is
                  retried or rolled back; DROP/CREATE/RENAME by the other
                  connection.
"""

import json
import random
import sqlite3
import sys
import traceback

from persist_lib import (Child, Outcomes, R, SEED, T3, apply_stmt, check_ok,
                         compare3, connect, create3, dbpath, dump, key_pool,
                         main, meta, query, rand_stmt, sz)


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


# ================================================================== main
SECTIONS = [
    ("1 concurrency", sec_concurrency),
]

CHILDREN = {
    "worker": child_worker,
    "inserter": child_inserter,
}


if __name__ == "__main__":
    sys.exit(main("test_persist_concurrency", SECTIONS, CHILDREN, sys.argv[1:]))
