#!/usr/bin/python3
"""Damaged shadow tables: an error or the right answer, never a crash and
never a wrong answer without an error.

For both modules a table gets several runs (commits of inserts, updates,
deletes); then, in a copy of the database each time, one damage: random
byte flips in a chunk's keys or vals (many seeds), truncated blobs, a
deleted chunk, a repeated chunk, two keys swapped, a wrong entry count, a
blob replaced by text or NULL; and to the pieces of spilled records (rows
too big for a chunk, in t_ovfl): flipped bytes, truncated, deleted,
repeated, replaced by text or NULL, the whole of t_ovfl dropped (the
first PIECE_SEEDS seeds); and damage sealed with a correct checksum
(flipped bytes, truncated blobs, a bad entry header or serial type in the
format-4 encoding), which only the decoder can find: its errors must be
SQLITE_CORRUPT_VTAB, and it must never crash.  A child process opens the copy and reads
everything (full scan, count, ranges, point and IN lookups, gpuds_check);
each read must fail with an error or give what the undamaged table gives.

Run it under AddressSanitizer with a build made with -fsanitize=address:
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
    GPUDS_EXT=build-asan/gpuds.so /usr/bin/python3 tests/test_damage.py
(the children inherit both; an ASan report fails the case).

The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from gpuds_testlib import EXT, Tally, chunk_seed, chunk_sum, connect, entries4, table_format, varint_put

SEEDS = int(os.environ.get("GPUDS_DAMAGE_SEEDS") or 12)
PIECE_SEEDS = 6
T = Tally()
check = T.check

READS = [
    ("full", "SELECT * FROM t ORDER BY k"),
    ("count", "SELECT count(*), sum(k) FROM t"),
    ("range", "SELECT k, v FROM t WHERE k BETWEEN 100 AND 400 ORDER BY k"),
    ("point", "SELECT v FROM t WHERE k = 250"),
    ("in", "SELECT k, v FROM t WHERE k IN (1, 77, 250, 599, 1200) ORDER BY k"),
    ("big", "SELECT k, length(v), hex(substr(v, 1, 8)), hex(substr(v, -8)) FROM t WHERE k >= 1300"),
    ("bigpoint", "SELECT hex(v) FROM t WHERE k = 1302"),
    ("check", "SELECT gpuds_check('t')"),
]

BIG = 5000      # the length limit the big rows are written under

CHILD = r'''
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.enable_load_extension(True)
c.load_extension(sys.argv[2])
out = []
for name, sql in json.loads(sys.argv[3]):
    try:
        out.append([name, "ok", repr(c.execute(sql).fetchall())])
    except sqlite3.Error as e:
        out.append([name, "err", str(e), getattr(e, "sqlite_errorcode", -1)])
print(json.dumps(out))
'''


def read_child(db):
    r = subprocess.run([sys.executable, "-c", CHILD, db, EXT, json.dumps(READS)],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def build(db, mod):
    c = connect(db)
    c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v)" % mod)
    rnd = random.Random(7)
    c.executemany("INSERT INTO t VALUES(?, ?)", [(i, "v%d" % i) for i in range(600)])
    c.execute("BEGIN")
    c.executemany("UPDATE t SET v = ? WHERE k = ?", [(rnd.random(), i) for i in range(0, 600, 3)])
    c.execute("COMMIT")
    c.execute("DELETE FROM t WHERE k % 7 = 0")
    c.execute("INSERT INTO t VALUES(1200, x'00ff10'), (1201, NULL), (1202, 12.5)")
    # rows too big for a chunk under a low length limit: spilled to t_ovfl
    # in pieces, some of them overridden by later commits
    c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, BIG)
    for r in range(3):
        c.execute("BEGIN")
        for k in range(1300 + r, 1306):
            c.execute("INSERT OR REPLACE INTO t VALUES(?, ?)",
                      (k, bytes(rnd.randrange(256) for _ in range(BIG - 10 - k % 3))))
        c.execute("COMMIT")
    c.close()


def damages(rnd):
    """(name, function(raw connection)) for every kind of damage."""
    def pick(c):
        return c.execute("SELECT id, n, keys, vals FROM t_run ORDER BY random() LIMIT 1").fetchone()

    def flip(col):
        def f(c):
            i, n, k, v = pick(c)
            b = bytearray(k if col == "keys" else v)
            if not b:
                return
            for _ in range(rnd.randint(1, 3)):
                j = rnd.randrange(len(b))
                b[j] ^= 1 << rnd.randrange(8)
            c.execute("UPDATE t_run SET %s=? WHERE id=?" % col, (bytes(b), i))
        return f

    def truncate(col):
        def f(c):
            i, n, k, v = pick(c)
            b = k if col == "keys" else v
            c.execute("UPDATE t_run SET %s=? WHERE id=?" % col, (b[:rnd.randrange(max(1, len(b)))], i))
        return f

    def delete(c):
        i = pick(c)[0]
        c.execute("DELETE FROM t_run WHERE id=?", (i,))

    def repeat(c):
        i, n, k, v = pick(c)
        c.execute("INSERT INTO t_run VALUES(?, ?, ?, ?)", (i + 4096, n, k, v))

    def swap(c):
        i, n, k, v = pick(c)
        if n < 2:
            return
        b = bytearray(k)
        a, z = 0, 8 * (n - 1)
        b[a:a + 8], b[z:z + 8] = b[z:z + 8], b[a:a + 8]
        c.execute("UPDATE t_run SET keys=? WHERE id=?", (bytes(b), i))

    def count(c):
        i, n, k, v = pick(c)
        c.execute("UPDATE t_run SET n=? WHERE id=?", (n + rnd.choice([-1, 1, 1000, -n - 1]), i))

    def kind(c):
        i = pick(c)[0]
        c.execute("UPDATE t_run SET %s=? WHERE id=?" % rnd.choice(["keys", "vals"]),
                  (rnd.choice(["text", None, 12]), i))

    def piece(c):
        return c.execute("SELECT id, data FROM t_ovfl ORDER BY random() LIMIT 1").fetchone()

    def piece_flip(c):
        i, d = piece(c)
        b = bytearray(d)
        for _ in range(rnd.randint(1, 3)):
            j = rnd.randrange(len(b))
            b[j] ^= 1 << rnd.randrange(8)
        c.execute("UPDATE t_ovfl SET data=? WHERE id=?", (bytes(b), i))

    def piece_truncate(c):
        i, d = piece(c)
        c.execute("UPDATE t_ovfl SET data=? WHERE id=?", (d[:rnd.randrange(len(d))], i))

    def piece_delete(c):
        c.execute("DELETE FROM t_ovfl WHERE id=?", (piece(c)[0],))

    def piece_repeat(c):
        i, d = piece(c)
        c.execute("INSERT INTO t_ovfl VALUES((SELECT max(id) FROM t_ovfl) + 1, ?)", (d,))

    def piece_kind(c):
        c.execute("UPDATE t_ovfl SET data=? WHERE id=?", (rnd.choice(["text", None, 12]), piece(c)[0]))

    def ovfl_drop(c):
        c.execute("DROP TABLE t_ovfl")

    # Format 4: damage sealed with a correct checksum, so that only the
    # decoder can find it (truncated varints, bad serial types, lengths past
    # the end, keys out of order): SQLITE_CORRUPT_VTAB, never a crash.
    def seal(c, i, k, v):
        seed = chunk_seed(table_format(c), i)
        c.execute("UPDATE t_run SET keys=?, vals=? WHERE id=?",
                  (bytes(k), bytes(v) + chunk_sum(k, v, seed), i))

    def sealed_flip(col):
        def f(c):
            i, n, k, v = pick(c)
            k, v = bytearray(k), bytearray(v[:-8])
            b = k if col == "keys" else v
            for _ in range(rnd.randint(1, 3)):
                j = rnd.randrange(len(b))
                b[j] ^= 1 << rnd.randrange(8)
            seal(c, i, k, v)
        return f

    def sealed_truncate(col):
        def f(c):
            i, n, k, v = pick(c)
            k, v = bytearray(k), bytearray(v[:-8])
            if col == "keys":
                k = k[:rnd.randrange(len(k))]
            else:
                v = v[:rnd.randrange(len(v))]
            seal(c, i, k, v)
        return f

    def sealed_entry(c):
        # one entry's header or one of its record's serial types replaced
        i, n, k, v = pick(c)
        k, v = bytearray(k), bytearray(v[:-8])
        off, pay, kind, L = rnd.choice(entries4(v))
        if kind == "rec" and L > 0 and rnd.random() < 0.6:
            v[pay + rnd.randrange(min(L, 2))] = rnd.choice([10, 11, 6, 7, 0x80, 0xff, 13 + 2 * L, 12 + 2 * L])
        else:
            v[off:pay] = rnd.choice([b"\x00", b"\x01", varint_put(rnd.randrange(2, 2 ** 40)), b"\x80", b"\xff" * 9])
        seal(c, i, k, v)

    sealed = [("sealed flip keys", sealed_flip("keys")), ("sealed flip vals", sealed_flip("vals")),
              ("sealed truncate keys", sealed_truncate("keys")),
              ("sealed truncate vals", sealed_truncate("vals")), ("sealed entry", sealed_entry)]

    return [("flip keys", flip("keys")), ("flip vals", flip("vals")),
            ("truncate keys", truncate("keys")), ("truncate vals", truncate("vals")),
            ("delete chunk", delete), ("repeat chunk", repeat), ("swap keys", swap),
            ("wrong n", count), ("blob replaced", kind),
            ("flip piece", piece_flip), ("truncate piece", piece_truncate),
            ("delete piece", piece_delete), ("repeat piece", piece_repeat),
            ("piece replaced", piece_kind), ("drop t_ovfl", ovfl_drop)] + sealed


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    tmp = tempfile.mkdtemp(prefix="gpuds_damage_")
    try:
        for mod in ("gfsl", "gpuhash"):
            pristine = os.path.join(tmp, "pristine_%s.db" % mod)
            build(pristine, mod)
            rc, out, err = read_child(pristine)
            if not check(rc == 0, "%s: pristine read" % mod, err[-1500:]):
                continue
            expect = {r[0]: r for r in json.loads(out)}
            check(all(r[1] == "ok" for r in expect.values()) and expect["check"][2] == "[('ok',)]",
                  "%s: pristine answers" % mod, expect)
            raw = sqlite3.connect(pristine)
            npieces = raw.execute("SELECT count(*) FROM t_ovfl").fetchone()[0]
            raw.close()
            check(npieces >= 12, "%s: the big rows are spilled" % mod, npieces)
            for seed in range(SEEDS):
                rnd = random.Random(seed)
                for name, fn in damages(rnd):
                    if seed >= PIECE_SEEDS and ("piece" in name or "ovfl" in name):
                        continue
                    db = os.path.join(tmp, "d.db")
                    shutil.copyfile(pristine, db)
                    raw = sqlite3.connect(db, isolation_level=None)
                    fn(raw)
                    raw.close()
                    tag = "%s seed %d %s" % (mod, seed, name)
                    rc, out, err = read_child(db)
                    if not check(rc == 0 and "AddressSanitizer" not in err, tag + ": no crash",
                                 "exit %s: %s" % (rc, err[-1500:])):
                        continue
                    # gpuds_check may answer with its finding: a report, not a wrong answer
                    wrong = [r for r in json.loads(out)
                             if r[1] == "ok" and r[2] != expect[r[0]][2]
                             and not (r[0] == "check" and r[2] != "[('ok',)]")]
                    # (sealed damage that still decodes is other valid data: a
                    # forgery, which the checksum does not claim to find)
                    check(not wrong or name.startswith("sealed"),
                          tag + ": no wrong answer without an error", wrong[:2])
                    if name.startswith("sealed"):
                        # (-1: Python's own error, e.g. text that is not UTF-8)
                        errs = [r for r in json.loads(out) if r[1] == "err" and r[3] != -1]
                        check(all(r[3] == 267 for r in errs),
                              tag + ": errors are SQLITE_CORRUPT_VTAB", errs[:2])
                    if name == "drop t_ovfl":
                        errs = [r for r in json.loads(out) if r[1] == "err"]
                        check(len(errs) == len(READS) and all("damaged" in r[2] for r in errs),
                              tag + ": every read reports the damage", errs[:2])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
