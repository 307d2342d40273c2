#!/usr/bin/python3
"""Seeded shadow-table fuzzer: damage the shadow tables as an attacker
would, with a plain sqlite3 connection (gpuds not loaded), and read them
back with gpuds under every load mode.  Every answer must be the undamaged
table's or an error (SQLITE_CORRUPT_VTAB, or a storage format refused by
name): never a crash, a hang, or another answer.

A database holds a gfsl table g and a gpuhash table h with the same rows
(and an ordinary table r, the reference), written in several commits under
a low length limit: runs of many chunks, updates and deletions in newer
runs, records spilled to t_ovfl.  Each mutation (one per copy of it) is
one of: bits flipped in a chunk's keys or vals, a blob truncated or
extended, a blob replaced by text, NULL or an integer, a chunk's id moved
(within its run, to another run, to 0, below every run), two chunks' ids
or blobs swapped, a chunk repeated or deleted, its count changed, a
garbage chunk added; a t_meta value changed, removed, repeated or given
another type; a t_ovfl piece removed, repeated at a new id, moved,
truncated or flipped.  Each damaged copy is read (point lookups and IN
lists first, so that a background load answers them from disk, then
ranges, a full scan, a count, gpuds_check) by a child process under
GPUDS_LAZY_LOAD=off, always and hold, for a WAL database and a
rollback-journal one.

Environment:
    GPUDS_EXT             gpuds.so (exit 77 = SKIPPED if unset)
    GPUDS_FUZZ_SEED       the seed (default: from the clock, printed)
    GPUDS_FUZZ_MUTATIONS  mutations per journal mode (default 150)
    GPUDS_FUZZ_ONLY       replay only mutation i (with its seed)
The last line is "N passed, M failed".
"""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpuds_testlib import EXT, Tally, connect  # noqa: E402

T = Tally()
LIMIT = 3000               # the length limit the runs are written under
MODES = ("off", "always", "hold")
JOURNALS = ("wal", "delete")
TABS = ("g", "h")
CHILD_TIMEOUT = 300        # seconds for one child's batch: past it, a hang

# Keys: run 1 writes 0..5998 (even); newer runs update, delete, add.
POINTS = [0, 2, 14, 22, 28, 98, 100, 1000, 1001, 3000, 5998, 5999, 7001, 7003, 9005, 9006,
          -1, 10 ** 9, 2 ** 63 - 1]
QUERIES = ([("point %d" % k, "SELECT k, v, w FROM {t} WHERE k = %d" % k) for k in POINTS]
           + [("in", "SELECT k, v, w FROM {t} WHERE k IN (2, 22, 1001, 4444, 7003, 9005, 77777)"
               " ORDER BY k"),
              ("range", "SELECT k, v, w FROM {t} WHERE k BETWEEN 900 AND 1300 ORDER BY k"),
              ("full", "SELECT k, v, w FROM {t} ORDER BY k"),
              ("count", "SELECT count(*), sum(k) FROM {t}"),
              ("check", "SELECT gpuds_check('{t}')")])

CHILD = r'''
import json, sqlite3, sys
ext, queries = sys.argv[1], json.loads(sys.argv[2])
for line in sys.stdin:
    db, tab = json.loads(line)
    out = []
    c = sqlite3.connect(db, isolation_level=None)
    c.enable_load_extension(True)
    c.load_extension(ext)
    for name, sql in queries:
        if tab == "r" and name == "check":         # an ordinary table: nothing to check
            out.append([name, "ok", "[('ok',)]"])
            continue
        try:
            rows = c.execute(sql.replace("{t}", tab)).fetchall()
            out.append([name, "ok", repr(rows)])
        except sqlite3.Error as e:
            out.append([name, "err", str(e), getattr(e, "sqlite_errorcode", -1)])
    c.close()
    print(json.dumps(out), flush=True)
'''


def build(path, journal):
    """g, h and r with the same rows, in several commits."""
    c = connect(path)
    c.execute("PRAGMA journal_mode=%s" % journal)
    c.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, v, w)")
    c.execute("CREATE VIRTUAL TABLE h USING gpuhash(k INTEGER PRIMARY KEY, v, w)")
    c.execute("CREATE TABLE r(k INTEGER PRIMARY KEY, v, w)")
    c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, LIMIT)
    rnd = random.Random(25)

    def each(sql, rows):
        for t in TABS + ("r",):
            c.executemany(sql % t, rows)

    c.execute("BEGIN")
    each("INSERT INTO %s VALUES(?, ?, ?)", [(k, k * 3, "w%d" % k) for k in range(0, 6000, 2)])
    c.execute("COMMIT")
    c.execute("BEGIN")
    each("UPDATE %s SET v = ?, w = NULL WHERE k = ?", [(rnd.random(), k) for k in range(0, 6000, 14)])
    each("DELETE FROM %s WHERE k = ?", [(k,) for k in range(0, 6000, 22)])
    each("INSERT INTO %s VALUES(?, ?, NULL)", [(k, "new%d" % k) for k in range(1, 2001, 2)])
    c.execute("COMMIT")
    for i in range(3):
        c.execute("BEGIN")
        each("INSERT OR REPLACE INTO %s VALUES(?, ?, ?)",
             [(k, "big%d" % i, bytes(rnd.randrange(256) for _ in range(LIMIT - 40 - k % 50)))
              for k in range(7001 + i, 7030, 3)])
        each("DELETE FROM %s WHERE k = ?", [(k,) for k in range(100 + i, 300, 7)])
        each("INSERT OR REPLACE INTO %s VALUES(?, ?, ?)", [(k, i, "n%d" % k) for k in range(9000 + i, 9012)])
        c.execute("COMMIT")
    c.close()


def mutations():
    """(name, function(raw connection, rnd, table)) of every kind."""
    def chunk(c, t, rnd):
        return c.execute("SELECT id, n, keys, vals FROM %s_run ORDER BY random() LIMIT 1" % t).fetchone()

    def ids(c, t):
        return [i for (i,) in c.execute("SELECT id FROM %s_run ORDER BY id" % t)]

    def free_id(c, t, want):
        have = set(ids(c, t))
        while want in have:
            want += 1
        return want

    def flip(c, rnd, t):
        i, n, k, v = chunk(c, t, rnd)
        col = rnd.choice(["keys", "vals"])
        b = bytearray(k if col == "keys" else v)
        for _ in range(rnd.randint(1, 3)):
            j = rnd.randrange(len(b))
            b[j] ^= 1 << rnd.randrange(8)
        c.execute("UPDATE %s_run SET %s=? WHERE id=?" % (t, col), (bytes(b), i))

    def truncate(c, rnd, t):
        i, n, k, v = chunk(c, t, rnd)
        col = rnd.choice(["keys", "vals"])
        b = k if col == "keys" else v
        c.execute("UPDATE %s_run SET %s=? WHERE id=?" % (t, col), (b[:rnd.randrange(len(b))], i))

    def extend(c, rnd, t):
        i, n, k, v = chunk(c, t, rnd)
        col = rnd.choice(["keys", "vals"])
        b = (k if col == "keys" else v) + bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 20)))
        c.execute("UPDATE %s_run SET %s=? WHERE id=?" % (t, col), (b, i))

    def retype(c, rnd, t):
        i = chunk(c, t, rnd)[0]
        c.execute("UPDATE %s_run SET %s=? WHERE id=?" % (t, rnd.choice(["keys", "vals", "n"])),
                  (rnd.choice(["text", None, 12, 1.5, b""]), i))

    def move(c, rnd, t):
        i = chunk(c, t, rnd)[0]
        run, ch = i >> 20, i & 0xfffff
        to = rnd.choice([0, -5, (run - 1) << 20, (run + 1) << 20, ((run + 50) << 20) | ch,
                         i + 1, i - 1, (run << 20) | (ch + 7), ((run - 1) << 20) | ch])
        c.execute("UPDATE %s_run SET id=? WHERE id=?" % t, (free_id(c, t, to), i))

    def swap_ids(c, rnd, t):
        a = ids(c, t)
        x, y = rnd.sample(a, 2)
        if rnd.random() < 0.5:          # neighbours: the case a binary search misses
            j = rnd.randrange(len(a) - 1)
            x, y = a[j], a[j + 1]
        tmp = free_id(c, t, 1 << 50)
        c.execute("UPDATE %s_run SET id=? WHERE id=?" % t, (tmp, x))
        c.execute("UPDATE %s_run SET id=? WHERE id=?" % t, (x, y))
        c.execute("UPDATE %s_run SET id=? WHERE id=?" % t, (y, tmp))

    def swap_blobs(c, rnd, t):
        x, y = rnd.sample(ids(c, t), 2)
        col = rnd.choice(["keys, vals", "vals", "n, keys, vals"])
        cols = [s.strip() for s in col.split(",")]
        rx = c.execute("SELECT %s FROM %s_run WHERE id=?" % (col, t), (x,)).fetchone()
        ry = c.execute("SELECT %s FROM %s_run WHERE id=?" % (col, t), (y,)).fetchone()
        sets = ", ".join("%s=?" % s for s in cols)
        c.execute("UPDATE %s_run SET %s WHERE id=?" % (t, sets), tuple(ry) + (x,))
        c.execute("UPDATE %s_run SET %s WHERE id=?" % (t, sets), tuple(rx) + (y,))

    def repeat(c, rnd, t):
        i, n, k, v = chunk(c, t, rnd)
        to = rnd.choice([i + 1, i + (1 << 20), 0, ((i >> 20) + 9) << 20])
        c.execute("INSERT INTO %s_run VALUES(?, ?, ?, ?)" % t, (free_id(c, t, to), n, k, v))

    def delete(c, rnd, t):
        c.execute("DELETE FROM %s_run WHERE id=?" % t, (chunk(c, t, rnd)[0],))

    def count(c, rnd, t):
        i, n, k, v = chunk(c, t, rnd)
        c.execute("UPDATE %s_run SET n=? WHERE id=?" % t, (n + rnd.choice([-1, 1, 2, -n, 10 ** 6]), i))

    def garbage(c, rnd, t):
        to = free_id(c, t, rnd.choice([1, (rnd.randrange(1, 40) << 20) | rnd.randrange(5)]))
        n = rnd.randint(0, 5)
        c.execute("INSERT INTO %s_run VALUES(?, ?, ?, ?)" % t,
                  (to, n, bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 12))),
                   bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40)))))

    def meta(c, rnd, t):
        keys = [k for (k,) in c.execute("SELECT key FROM %s_meta" % t)]
        key = rnd.choice(keys)
        what = rnd.choice(["delta", "delta", "value", "delete", "repeat", "type"])
        if what == "delta":
            c.execute("UPDATE %s_meta SET value=value+? WHERE key=?" % t, (rnd.choice([-1, 1, 2]), key))
        elif what == "value":
            c.execute("UPDATE %s_meta SET value=? WHERE key=?" % t,
                      (rnd.choice([0, 3, 4, 6, -1, 2 ** 62, rnd.getrandbits(63)]), key))
        elif what == "delete":
            c.execute("DELETE FROM %s_meta WHERE key=?" % t, (key,))
        elif what == "repeat":
            c.execute("INSERT INTO %s_meta SELECT key, value FROM %s_meta WHERE key=?" % (t, t), (key,))
        else:
            c.execute("UPDATE %s_meta SET value=? WHERE key=?" % t, (rnd.choice(["5", 5.0, None, b"\x05"]), key))

    def piece(c, t):
        return c.execute("SELECT id, data FROM %s_ovfl ORDER BY random() LIMIT 1" % t).fetchone()

    def ovfl(c, rnd, t):
        i, d = piece(c, t)
        what = rnd.choice(["delete", "repeat", "move", "truncate", "flip", "swap"])
        top = c.execute("SELECT max(id) FROM %s_ovfl" % t).fetchone()[0]
        if what == "delete":
            c.execute("DELETE FROM %s_ovfl WHERE id=?" % t, (i,))
        elif what == "repeat":
            c.execute("INSERT INTO %s_ovfl VALUES(?, ?)" % t, (top + 1, d))
        elif what == "move":
            c.execute("UPDATE %s_ovfl SET id=? WHERE id=?" % t, (top + rnd.randint(1, 3), i))
        elif what == "truncate":
            c.execute("UPDATE %s_ovfl SET data=? WHERE id=?" % t, (d[:rnd.randrange(len(d))], i))
        elif what == "flip":
            b = bytearray(d)
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
            c.execute("UPDATE %s_ovfl SET data=? WHERE id=?" % t, (bytes(b), i))
        else:
            j, e = piece(c, t)
            c.execute("UPDATE %s_ovfl SET data=? WHERE id=?" % t, (e, i))
            c.execute("UPDATE %s_ovfl SET data=? WHERE id=?" % t, (d, j))

    return [("flip bits", flip), ("truncate blob", truncate), ("extend blob", extend),
            ("retype a column", retype), ("move a chunk's id", move), ("swap two ids", swap_ids),
            ("swap two chunks' blobs", swap_blobs), ("repeat a chunk", repeat),
            ("delete a chunk", delete), ("change a count", count), ("add a garbage chunk", garbage),
            ("t_meta", meta), ("t_ovfl", ovfl)]


class Child:
    """A child process reading (db, table) pairs under one load mode."""
    def __init__(self, mode):
        env = dict(os.environ, GPUDS_LAZY_LOAD=mode)
        self.p = subprocess.Popen([sys.executable, "-c", CHILD, EXT, json.dumps(QUERIES)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)

    def read_all(self, items):
        """The answers for each item; None for the one it crashed or hung on
        (the child is then gone), with the reason."""
        inp = "".join(json.dumps(x) + "\n" for x in items)
        try:
            out, err = self.p.communicate(inp, timeout=CHILD_TIMEOUT)
            why = "exit %d: %s" % (self.p.returncode, err[-800:])
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
            why = "hang (more than %d s)" % CHILD_TIMEOUT
        res = [json.loads(line) for line in out.splitlines() if line.strip()]
        return res, why


def read_many(mode, items):
    """Answers for every item under mode; a crash or hang is reported for
    the item it happened on, and the rest are read by a new child."""
    out, i = [], 0
    while i < len(items):
        res, why = Child(mode).read_all(items[i:])
        out += res
        i += len(res)
        if i < len(items):
            out.append(("crash", why))
            i += 1
    return out


def judge(tag, got, want):
    """Each answer the undamaged one or an error of the right kind."""
    if isinstance(got, tuple):
        T.check(False, tag + ": no crash or hang", got[1])
        return
    bad = []
    for g, w in zip(got, want):
        name = g[0]
        if g[1] == "ok":
            if g[2] == w[2]:
                continue
            if name == "check" and g[2] != "[('ok',)]":
                continue            # gpuds_check's own report of the damage
            bad.append(("another answer", name, g[2][:200], w[2][:200]))
        elif not (g[3] == 267 or (g[3] == 1 and "storage format" in g[2])):
            bad.append(("not SQLITE_CORRUPT_VTAB", name, g[2], g[3]))
    T.check(not bad, tag + ": the undamaged answers or SQLITE_CORRUPT_VTAB", bad[:3])


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    seed = int(os.environ.get("GPUDS_FUZZ_SEED") or int(time.time() * 1000) % 1000000007)
    nmut = int(os.environ.get("GPUDS_FUZZ_MUTATIONS") or 150)
    only = os.environ.get("GPUDS_FUZZ_ONLY")
    print("seed %d, %d mutations per journal mode (replay: GPUDS_FUZZ_SEED=%d"
          " GPUDS_FUZZ_ONLY=i)" % (seed, nmut, seed), flush=True)
    tmp = tempfile.mkdtemp(prefix="gpuds_fuzz_")
    kinds = mutations()
    try:
        for journal in JOURNALS:
            pristine = os.path.join(tmp, "pristine_%s.db" % journal)
            build(pristine, journal)
            want = {}
            for mode in MODES:
                res = read_many(mode, [[pristine, t] for t in TABS + ("r",)])
                for t, r in zip(TABS + ("r",), res):
                    if isinstance(r, tuple) or any(q[1] != "ok" for q in r):
                        T.check(False, "%s %s: pristine %s reads" % (journal, mode, t), r)
                        return T.finish()
                    want[(mode, t)] = r
                for t in TABS:
                    same = [a for a, b in zip(want[(mode, t)], want[("off", "r")])
                            if a[0] != "check" and a[2] != b[2]]
                    T.check(not same and want[(mode, t)][-1][2] == "[('ok',)]",
                            "%s %s: pristine %s is r" % (journal, mode, t), same[:2])
            items, names = [], []
            for i in range(nmut):
                if only is not None and i != int(only):
                    continue
                rnd = random.Random("%d %s %d" % (seed, journal, i))
                name, fn = rnd.choice(kinds)
                t = rnd.choice(TABS)
                db = os.path.join(tmp, "m_%s_%d.db" % (journal, i))
                shutil.copyfile(pristine, db)
                raw = sqlite3.connect(db, isolation_level=None)
                try:
                    fn(raw, rnd, t)
                except (sqlite3.Error, ValueError, TypeError, IndexError) as e:
                    name += " (not applied: %s)" % e       # e.g. a key already there
                raw.close()
                items.append([db, t])
                names.append("%s mutation %d (%s of %s)" % (journal, i, name, t))
            for mode in MODES:
                for (db, t), tag, got in zip(items, names, read_many(mode, items)):
                    judge("%s, GPUDS_LAZY_LOAD=%s" % (tag, mode), got, want[(mode, t)])
            for db, t in items:
                os.remove(db)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
