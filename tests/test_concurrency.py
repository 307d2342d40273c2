#!/usr/bin/python3
"""Two connections on one database, randomized, against ordinary tables.

Each seed drives connection A (this process) and connection B (this process,
or a child process for odd seeds) through a random stream: writes in
autocommit or in transactions (BEGIN, BEGIN IMMEDIATE, BEGIN EXCLUSIVE),
savepoints, ROLLBACK TO and RELEASE, COMMIT and RELEASE that fail with
"database is locked" because the other connection holds a read (then
retried or rolled back), reads with open cursors while the same connection
writes, and DDL (RENAME away and back, DROP and CREATE with other columns or
another module) while the other connection is idle, or keeps its
transaction (reads, writes, savepoints, a stale schema) and meets the change
or the lock afterwards; the DDL in autocommit or inside the connection's
own transaction, and its outcome compared with the same DDL on the twin.
Rollback-journal mode for even seeds' halves, WAL for the others.  With
GPUDS_CONC_LOG=file a failing seed writes its whole statement log there.

Every gpuds table has an ordinary twin with the same columns in the same
database, and every statement is applied to both inside one savepoint of
the same connection, so locks, BUSY failures and rollbacks hit both alike.
After each step both connections read every table and its twin; they must
agree, and gpuds_check() must say ok at the end of each seed.

    GPUDS_EXT=build/gpuds.so /usr/bin/python3 tests/test_concurrency.py [--seeds N] [--seed S] [--steps K]

The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import multiprocessing as mp
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import traceback

from gpuds_testlib import EXT, Tally, connect

MODULES = ("gfsl", "gpuhash")
SCHEMAS = ("k INTEGER PRIMARY KEY, v", "k INTEGER PRIMARY KEY, v TEXT, w REAL",
           "k INTEGER PRIMARY KEY, a, b, c")
T = Tally()
check = T.check


class Local:
    """A connection in this process."""
    def __init__(self, path):
        self.c = connect(path, timeout=0)
        try:
            self.c.execute("PRAGMA synchronous=OFF")  # the test needs no fsync
        except sqlite3.OperationalError:            # locked while the schema loads
            pass
        self.cur = None

    def sql(self, s, args=()):
        try:
            return ("ok", self.c.execute(s, args).fetchall())
        except sqlite3.Error as e:
            return ("error", str(e))

    def open_cursor(self, s):
        self.cur = self.c.cursor()
        try:
            self.cur.execute(s)
        except sqlite3.Error as e:
            return ("error", str(e))
        return ("ok", None)

    def step(self):
        try:
            return ("ok", self.cur.fetchone())
        except sqlite3.Error as e:
            return ("error", str(e))

    def close_cursor(self):
        self.cur.close()
        self.cur = None
        return ("ok", None)

    def in_txn(self):
        return ("ok", self.c.in_transaction)

    def close(self):
        self.c.close()


def child_main(path, pipe):
    conn = Local(path)
    while True:
        msg = pipe.recv()
        if msg is None:
            conn.close()
            pipe.send(("ok", None))
            return
        name, args = msg
        try:
            pipe.send(getattr(conn, name)(*args))
        except Exception as e:          # a Python-level error: report it
            pipe.send(("error", "raised %r" % e))


class Remote:
    """A connection in a child process, driven through a pipe."""
    def __init__(self, path):
        ctx = mp.get_context("spawn")     # CUDA does not survive fork()
        self.pipe, child = ctx.Pipe()
        self.proc = ctx.Process(target=child_main, args=(path, child))
        self.proc.start()

    def _call(self, name, *args):
        self.pipe.send((name, args))
        if not self.pipe.poll(60):
            raise RuntimeError("child did not answer %s" % name)
        return self.pipe.recv()

    def sql(self, s, args=()):
        return self._call("sql", s, args)

    def open_cursor(self, s):
        return self._call("open_cursor", s)

    def step(self):
        return self._call("step")

    def close_cursor(self):
        return self._call("close_cursor")

    def in_txn(self):
        return self._call("in_txn")

    def close(self):
        self.pipe.send(None)
        self.pipe.recv()
        self.proc.join(10)
        if self.proc.exitcode not in (0, None):
            check(False, "child exit status", self.proc.exitcode)


class Stream:
    def __init__(self, seed, path, steps):
        self.rnd = random.Random(seed)
        self.seed = seed
        self.steps = steps
        self.path = path
        self.A = Local(path)
        self.B = Remote(path) if seed % 2 else Local(path)
        self.conns = {"A": self.A, "B": self.B}
        self.sp = {"A": [], "B": []}       # the user savepoints open, oldest first
        self.tables = {}                   # gpuds table -> (module, schema)
        self.log = []
        wal = (seed // 2) % 2 == 1
        self.run("A", "PRAGMA journal_mode=%s" % ("wal" if wal else "delete"))
        for i, mod in enumerate(MODULES):
            self.create("A", "g%d" % i, mod, SCHEMAS[0])

    def run(self, who, s, args=()):
        r = self.conns[who].sql(s, args)
        self.log.append("%s: %s %r -> %s" % (who, s, args, r[0] if r[0] == "ok" else r))
        return r

    def create(self, who, name, mod, schema):
        self.run(who, "CREATE VIRTUAL TABLE %s USING %s(%s)" % (name, mod, schema))
        self.run(who, "CREATE TABLE %s_ref(%s)" % (name, schema))
        self.tables[name] = (mod, schema)

    def ncols(self, name):
        return self.tables[name][1].count(",")

    def both(self, who, sql, args=(), name=None):
        """sql on a gpuds table ({t}; a random one unless named) and its
        twin, as one unit: both or neither; they must succeed or fail alike."""
        name = name or self.rnd.choice(sorted(self.tables))
        r0 = self.run(who, "SAVEPOINT u")
        if r0[0] != "ok":
            return
        ra = self.run(who, sql.replace("{t}", name), args)
        rb = self.run(who, sql.replace("{t}", name + "_ref"), args)
        if ra[0] != rb[0] or (ra[0] == "error" and ra[1].replace(name + "_ref", name) != rb[1].replace(name + "_ref", name)):
            # the same statement must fail (or not) the same way on both
            if not ("locked" in str(ra[1]) and "locked" in str(rb[1])):
                check(False, "seed %d: same statement, different outcome" % self.seed,
                      "%s\n  gpuds %r\n  ordinary %r\n%s" % (sql, ra, rb, "\n".join(self.log[-12:])))
        if ra[0] == "ok" and rb[0] == "ok":
            self.run(who, "RELEASE u")
        else:
            self.run(who, "ROLLBACK TO u")
            self.run(who, "RELEASE u")

    def write(self, who):
        name_cols = 3
        k = self.rnd.randint(1, 40)
        op = self.rnd.random()
        vals = lambda: [self.rnd.choice([None, self.rnd.randint(-5, 5), "s%d" % self.rnd.randint(0, 9),
                                         self.rnd.random()]) for _ in range(name_cols)]
        if op < 0.35:
            self.both_cols(who, "INSERT OR REPLACE INTO {t} VALUES(?%s)", k, vals)
        elif op < 0.5:
            self.both(who, "DELETE FROM {t} WHERE k BETWEEN ? AND ?", (k, k + self.rnd.randint(0, 5)))
        elif op < 0.65:
            self.both(who, "UPDATE {t} SET k = k + ? WHERE k = ?", (self.rnd.randint(-3, 3), k))
        elif op < 0.8:
            self.both_cols(who, "INSERT INTO {t} VALUES(?%s)", k, vals)   # may be a duplicate
        else:
            self.both(who, "UPDATE OR IGNORE {t} SET k = k + 1 WHERE k > ?", (k,))

    def both_cols(self, who, sql, k, vals):
        """An INSERT of key k and random values into every column."""
        name = self.rnd.choice(sorted(self.tables))
        n = self.ncols(name)
        v = vals()[:n] + [None] * max(0, n - 3)
        self.both(who, sql % (",?" * n), [k] + v, name)

    def compare(self, who, where):
        for name in sorted(self.tables):
            ra = self.run(who, "SELECT * FROM %s ORDER BY k" % name)
            rb = self.run(who, "SELECT * FROM %s_ref ORDER BY k" % name)
            if ra[0] == "error" and "locked" in ra[1] and rb[0] == "error":
                continue
            if not check(ra == rb, "seed %d %s: %s reads %s like its twin" % (self.seed, where, who, name),
                         "gpuds %r\nordinary %r\n%s" % (ra, rb, "\n".join(self.log[-15:]))):
                if os.environ.get("GPUDS_CONC_LOG"):
                    with open(os.environ["GPUDS_CONC_LOG"], "w") as f:
                        f.write("\n".join(self.log))
                raise RuntimeError("stop this seed")

    def cursor_walk(self, who):
        """Step through a gpuds table and its twin in lockstep, deleting
        and updating ahead of the cursors between steps."""
        if not self.in_txn(who) and self.run(who, "BEGIN")[0] != "ok":
            return
        name = self.rnd.choice(sorted(self.tables))
        conn = self.conns[who]
        seen = {}
        for suffix in ("", "_ref"):
            self.log.append("%s: #open SELECT k FROM %s%s ORDER BY k" % (who, name, suffix))
            if conn.open_cursor("SELECT k FROM %s%s ORDER BY k" % (name, suffix))[0] != "ok":
                conn.close_cursor()
                self.log.append("%s: #close" % who)
                return              # locked by the other connection
            got = []
            for _ in range(6):
                self.log.append("%s: #step" % who)
                r = conn.step()
                if r[0] != "ok" or r[1] is None:
                    break
                got.append(r[1][0])
                self.run(who, "DELETE FROM %s%s WHERE k = ?" % (name, suffix), (r[1][0] + 2,))
            conn.close_cursor()
            self.log.append("%s: #close" % who)
            seen[suffix] = got
        check(seen[""] == seen["_ref"], "seed %d: %s open cursor on %s" % (self.seed, who, name), seen)

    def in_txn(self, who):
        txn = self.conns[who].in_txn()[1]
        if not txn:
            self.sp[who] = []
        return txn

    def txn_step(self, who):
        other = "B" if who == "A" else "A"
        op = self.rnd.random()
        sp = self.sp[who]
        if not self.in_txn(who):
            if op < 0.4:
                self.run(who, "BEGIN")
            elif op < 0.6:
                # a write lock at once: fails "locked" while the other writes
                # (or, in rollback-journal mode, while it reads)
                self.run(who, self.rnd.choice(["BEGIN IMMEDIATE", "BEGIN EXCLUSIVE"]))
            elif self.run(who, "SAVEPOINT s0")[0] == "ok":
                sp.append("s0")
            return
        if op < 0.25 and len(sp) < 4:
            name = "s%d" % len(sp)
            if self.run(who, "SAVEPOINT " + name)[0] == "ok":
                sp.append(name)
        elif op < 0.45 and sp:
            self.run(who, "ROLLBACK TO " + sp[-1])
        elif op < 0.6 and sp:
            r = self.run(who, "RELEASE " + sp[-1])
            if r[0] == "ok":
                sp.pop()
            elif "locked" in r[1]:
                self.after_busy(who, other)
        elif op < 0.8:
            self.finish(who, other, "COMMIT")
        else:
            self.run(who, "ROLLBACK")
        self.in_txn(who)

    def after_busy(self, who, other):
        """A RELEASE failed (locked: the other connection holds a read): the
        other ends its transaction; this one rolls back to the savepoint or
        not, then retries."""
        self.end(other)
        if self.rnd.random() < 0.5 and self.sp[who]:
            self.run(who, "ROLLBACK TO " + self.sp[who][-1])
        r = self.run(who, "RELEASE " + self.sp[who][-1])
        if r[0] == "ok":
            self.sp[who].pop()
        self.in_txn(who)

    def end(self, who):
        """Leave any transaction: COMMIT, or ROLLBACK if that fails."""
        if self.in_txn(who):
            if self.run(who, "COMMIT" if self.rnd.random() < 0.7 else "ROLLBACK")[0] != "ok":
                self.run(who, "ROLLBACK")
            self.in_txn(who)

    def finish(self, who, other, verb):
        """COMMIT; where it is BUSY, the other connection ends its
        transaction and this one retries (or rolls back)."""
        r = self.run(who, verb)
        if r[0] != "ok" and ("locked" in r[1] or "busy" in r[1].lower()):
            self.end(other)
            r = self.run(who, verb if self.rnd.random() < 0.8 else "ROLLBACK")
        if r[0] != "ok" and self.in_txn(who):
            self.run(who, "ROLLBACK")
        self.in_txn(who)

    def ddl_pair(self, who, sql, name):
        """DDL on a gpuds table ({t}) and then on its twin, each its own
        autocommit statement: they must succeed or fail alike (the other
        connection, which may hold a read or a write, is the same for both).
        True if both succeeded."""
        ra = self.run(who, sql.replace("{t}", name))
        rb = self.run(who, sql.replace("{t}", name + "_ref"))
        same = ra[0] == rb[0] and (ra[0] == "ok" or ra[1].replace(name + "_ref", name)
                                   == rb[1].replace(name + "_ref", name))
        if not check(same, "seed %d: %s DDL, different outcome" % (self.seed, who),
                     "%s\n  gpuds %r\n  ordinary %r\n%s" % (sql, ra, rb, "\n".join(self.log[-12:]))):
            raise RuntimeError("stop this seed")
        return ra[0] == "ok"

    def ddl(self, who):
        """Rename a table away and back, or drop it and create it again with
        other columns (or another module).  Half the time both connections
        leave their transactions first; otherwise the other connection keeps
        its transaction (reads, writes, savepoints, open schema) and meets
        the change, or the lock, afterwards.  `who` runs it in autocommit or
        inside a transaction it began without a savepoint."""
        x = self.rnd.random()
        if x < 0.4:
            for w in ("A", "B"):
                self.end(w)
        elif x < 0.7 or self.sp[who]:
            self.end(who)
        # else: inside who's own transaction (BEGIN, no savepoint: a ROLLBACK
        # TO that undid the DDL would be README's documented loss)
        if self.sp[who]:
            return
        name = self.rnd.choice(sorted(self.tables))
        if self.rnd.random() < 0.5:
            if self.ddl_pair(who, "ALTER TABLE {t} RENAME TO {t}_x", name):
                # the twin is now <name>_ref_x: rename both back by hand
                ra = self.run(who, "ALTER TABLE %s_x RENAME TO %s" % (name, name))
                rb = self.run(who, "ALTER TABLE %s_ref_x RENAME TO %s_ref" % (name, name))
                check(ra[0] == rb[0] == "ok", "seed %d: rename back" % self.seed, (ra, rb))
        elif self.ddl_pair(who, "DROP TABLE {t}", name):
            del self.tables[name]
            mod, schema = self.rnd.choice(MODULES), self.rnd.choice(SCHEMAS)
            r = self.run(who, "CREATE VIRTUAL TABLE %s USING %s(%s)" % (name, mod, schema))
            rr = self.run(who, "CREATE TABLE %s_ref(%s)" % (name, schema))
            if not check(r[0] == rr[0] == "ok", "seed %d: %s re-creates %s" % (self.seed, who, name),
                         (r, rr, "\n".join(self.log[-8:]))):
                raise RuntimeError("stop this seed")
            self.tables[name] = (mod, schema)

    def go(self):
        try:
            for i in range(self.steps):
                who = self.rnd.choice("AB")
                x = self.rnd.random()
                if x < 0.5:
                    self.write(who)
                elif x < 0.7:
                    self.txn_step(who)
                elif x < 0.78:
                    self.cursor_walk(who)
                elif x < 0.85:
                    self.ddl(who)
                else:
                    self.compare(who, "step %d" % i)
            for w in ("A", "B"):
                self.end(w)
            for w in ("A", "B"):
                self.compare(w, "end")
            fresh = Local(self.path)
            for name in sorted(self.tables):
                r = fresh.sql("SELECT gpuds_check('%s')" % name)
                check(r == ("ok", [("ok",)]), "seed %d: gpuds_check(%s)" % (self.seed, name), r)
                ra = fresh.sql("SELECT * FROM %s ORDER BY k" % name)
                rb = fresh.sql("SELECT * FROM %s_ref ORDER BY k" % name)
                check(ra == rb, "seed %d: a new connection reads %s like its twin" % (self.seed, name),
                      (ra, rb))
            fresh.close()
        except RuntimeError:
            pass
        finally:
            self.A.close()
            self.B.close()


def main(argv):
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    seeds, steps, first = 100, 150, 1
    i = 0
    while i < len(argv):
        if argv[i] == "--seeds":
            seeds = int(argv[i + 1]); i += 1
        elif argv[i] == "--seed":
            first = int(argv[i + 1]); seeds = 1; i += 1
        elif argv[i] == "--steps":
            steps = int(argv[i + 1]); i += 1
        i += 1
    tmp = tempfile.mkdtemp(prefix="gpuds_conc_")
    try:
        for seed in range(first, first + seeds):
            path = os.path.join(tmp, "s%d.db" % seed)
            try:
                Stream(seed, path, steps).go()
            except Exception:
                check(False, "seed %d raised" % seed, traceback.format_exc())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
