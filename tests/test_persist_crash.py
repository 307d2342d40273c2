#!/usr/bin/python3
"""Durable gfsl/gpuhash tables: a process killed in a transaction or a COMMIT.

See tests/persist_lib.py for how every check compares (differential
against an ordinary table), the usage and the environment.

Sections
  1 crashes       a child process is SIGKILLed inside a big open transaction
                  (with flushes and page-cache spills) and at random moments of
                  a big COMMIT; afterwards the contents are entirely the old or
                  entirely the new state (the same for tg, th and r), for a
                  rollback-journal and a WAL database.
"""

import hashlib
import os
import random
import shutil
import signal
import sys
import time

from persist_lib import (Child, R, SEED, T3, check_ok, connect, create3, dbpath,
                         info_table, main, note, run_child, scalar, sz)


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


# ================================================================== main
SECTIONS = [
    ("1 crashes", sec_crash),
]

CHILDREN = {
    "crash_mid": child_crash_mid,
    "crash_commit": child_crash_commit,
}


if __name__ == "__main__":
    sys.exit(main("test_persist_crash", SECTIONS, CHILDREN, sys.argv[1:]))
