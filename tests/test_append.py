"""Keys written in ascending order, against an ordinary table: the paths that
skip work for them (an INSERT past the largest key needs no existence check;
a flush of new keys past the store's largest key is bulk-loaded) must give
exactly an ordinary table's answers, including duplicates of the largest
key, deletes of it, savepoints rolled back across such flushes, and full
rollbacks.  GPUDS_FLUSH_ROWS is set small so that a transaction flushes
several times; each flush here holds at least 65536 keys (the bulk path's
threshold).  Run with and without GPUDS_MIRROR=1."""
import os
import random
import sqlite3
import sys
import tempfile

FLUSH = 70000
os.environ["GPUDS_FLUSH_ROWS"] = str(FLUSH)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuds_testlib as lib  # noqa: E402

if not lib.EXT:
    print("GPUDS_EXT not set: skipped")
    sys.exit(77)

T = lib.Tally()


def run(db, sql, args=()):
    """The rows of sql, or the error class and message."""
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        return ("error", type(e).__name__, str(e))


def both(dbs, sql, args=(), what=None):
    """Run sql on the ordinary table and the gpuds one; they must agree."""
    a = run(dbs[0], sql, args)
    b = run(dbs[1], sql, args)
    T.check(a == b, what or sql, (a if len(str(a)) < 300 else str(a)[:300], b if len(str(b)) < 300 else str(b)[:300]))
    return a


def same(dbs, what):
    both(dbs, "SELECT count(*), total(k), total(v), min(k), max(k) FROM t", what=what + ": sums")
    both(dbs, "SELECT k, v FROM t WHERE k %% 997 = 3 ORDER BY k", what=what + ": sample")
    r = dbs[1].execute("SELECT gpuds_check('t')").fetchone()[0]
    T.check(r == "ok", what + ": gpuds_check", r)


def main():
    rnd = random.Random(13)
    for mod in ("gfsl", "gpuhash"):
        d = tempfile.mkdtemp()
        plain = lib.connect(os.path.join(d, "plain.db"))
        gp = lib.connect(os.path.join(d, "gp.db"))
        plain.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v)")
        gp.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
        dbs = (plain, gp)
        k = 0
        # 1. one transaction of ascending keys over several flushes, with
        #    duplicates of the largest key and of older keys on the way
        both(dbs, "BEGIN")
        for i in range(3 * FLUSH + 123):
            k += rnd.randint(1, 3)
            both(dbs, "INSERT INTO t VALUES(?, ?)", (k, i), what="%s insert in order" % mod) if i % 5000 == 0 else \
                [db.execute("INSERT INTO t VALUES(?, ?)", (k, i)) for db in dbs]
            if i % 20011 == 7:
                both(dbs, "INSERT INTO t VALUES(?, 0)", (k,), what="%s duplicate of the largest key" % mod)
                both(dbs, "INSERT INTO t VALUES(?, 0)", (k - rnd.randint(0, k - 1),), what="%s duplicate of an older key" % mod)
                both(dbs, "INSERT OR REPLACE INTO t VALUES(?, -1)", (k,), what="%s replace of the largest key" % mod)
        both(dbs, "COMMIT")
        same(dbs, "%s after ascending inserts" % mod)
        # 2. delete the largest keys, insert at and below the old largest key
        both(dbs, "BEGIN")
        both(dbs, "DELETE FROM t WHERE k > ?", (k - 50,))
        for j in range(60):
            both(dbs, "INSERT INTO t VALUES(?, ?)", (k - 60 + j, j), what="%s insert after deleting the largest" % mod)
        both(dbs, "INSERT INTO t VALUES(NULL, 'auto')")
        both(dbs, "COMMIT")
        same(dbs, "%s after deleting the largest keys" % mod)
        k = both(dbs, "SELECT max(k) FROM t")[0][0]
        # 3. savepoints: a flush of appended keys rolled back, then the same
        #    keys (and others) appended again
        both(dbs, "BEGIN")
        both(dbs, "SAVEPOINT a")
        # the store's largest key rewritten in the same flush: not all new
        both(dbs, "INSERT OR REPLACE INTO t VALUES(?, 'r')", (k,))
        for i in range(FLUSH + 10):
            for db in dbs:
                db.execute("INSERT INTO t VALUES(?, ?)", (k + 1 + i, i))
        both(dbs, "INSERT INTO t VALUES(?, 0)", (k + 1,), what="%s duplicate inside the savepoint" % mod)
        both(dbs, "ROLLBACK TO a")
        same(dbs, "%s after ROLLBACK TO across a flush" % mod)
        for i in range(FLUSH + 10):
            for db in dbs:
                db.execute("INSERT INTO t VALUES(?, ?)", (k + 1 + 2 * i, -i))
        both(dbs, "INSERT INTO t VALUES(?, 0)", (k + 1,), what="%s duplicate after the savepoint" % mod)
        both(dbs, "RELEASE a")
        both(dbs, "COMMIT")
        same(dbs, "%s after appends past a rolled-back flush" % mod)
        k = both(dbs, "SELECT max(k) FROM t")[0][0]
        # 4. a full rollback of a transaction that flushed appended keys
        both(dbs, "BEGIN")
        for i in range(FLUSH + 10):
            for db in dbs:
                db.execute("INSERT INTO t VALUES(?, ?)", (k + 1 + i, i))
        both(dbs, "ROLLBACK")
        same(dbs, "%s after ROLLBACK of appended keys" % mod)
        both(dbs, "INSERT INTO t VALUES(?, 1)", (k,), what="%s duplicate of the largest after ROLLBACK" % mod)
        both(dbs, "INSERT INTO t VALUES(?, 1)", (k + 1,), what="%s the next key after ROLLBACK" % mod)
        # 5. reopen: the loaded table's largest key
        gp.close()
        gp = lib.connect(os.path.join(d, "gp.db"))
        dbs = (plain, gp)
        both(dbs, "INSERT INTO t VALUES(?, 1)", (k + 1,), what="%s duplicate of the largest after reopening" % mod)
        both(dbs, "INSERT INTO t VALUES(?, 1)", (k + 2,), what="%s a new largest after reopening" % mod)
        same(dbs, "%s after reopening" % mod)
        plain.close()
        gp.close()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
