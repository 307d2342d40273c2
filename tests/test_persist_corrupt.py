#!/usr/bin/python3
"""Durable gfsl/gpuhash tables: damaged shadow tables.

See tests/persist_lib.py for how every check compares (differential
against an ordinary table), the usage and the environment.

Sections
  1 corruption    hand-made damage to <t>_run (garbage, truncation, bad
                  lengths, unsorted keys, bad records ...), read in a child
                  process: it must not crash, and must report an error rather
                  than return wrong rows.  Damage that a check cannot see
                  (a deleted run, a deleted t_meta) is reported as NOTE only.
                  gpuds_check() of a connection whose structure disagrees
                  with the shadow tables must not say 'ok'.

Observed when this test was written (host backend, 3191791):
  detected with an error: truncated vals, short keys blob, keys not
  ascending (xBulkLoad refuses), NULL keys/vals, negative n, wrong nCol,
  a TEXT cell longer than its record ("bad chunk" / "bad row record", and
  gpuds_check reports the same error); n*8 overflowing int is reported as
  "bad chunk" but valgrind shows heap over-reads before that.
  SIGSEGV: an entry length that is never validated because a newer run
  overrides the key (readerNext), which garbage or text in vals also hit.
  Silent wrong values, gpuds_check 'ok': an INTEGER cell of length 0 (reads
  8 bytes past the record) and a cell with an unknown storage class (NULL).
  Not detectable by design, noted only: a deleted run (rows silently revert
  to older values), an emptied t_meta (other connections never notice later
  commits: stale reads).  gpuds_check of a connection that loaded the table
  before its shadow row changed reports "1 of 100 shadow rows disagree".
"""

import json
import random
import shutil
import sqlite3
import struct
import sys

from gpuds_testlib import (NEW_FORMAT, chunk_seed, chunk_sum, entries4, keys_decode, keys_encode, record4_decode,
                           set_format, table_format, varint_put)
from persist_lib import (R, SEED, check_ok, connect, dbpath, enc, main, note,
                         query, raw_connect, run_child, scalar, short)


CORRUPT_QUERIES = [
    ("check", "SELECT gpuds_check('t')", []),
    ("full", "SELECT k, typeof(v), v, typeof(w), w FROM t ORDER BY k", []),
    ("count", "SELECT count(*), total(v) FROM t", []),
    ("point", "SELECT k, typeof(v), v, w FROM t WHERE k IN (1, 2, 3, 50, 99) ORDER BY k", []),
    ("range", "SELECT k, v, w FROM t WHERE k BETWEEN 10 AND 20 ORDER BY k DESC", []),
    ("check2", "SELECT gpuds_check('t')", []),
]


def child_corrupt_read(a):
    c = connect(a["db"])
    out = []
    for name, sql, params in CORRUPT_QUERIES:
        try:
            rows = [[enc(v, True) for v in r] for r in c.execute(sql, params)]
            out.append([name, "ok", rows])
        except sqlite3.Error as e:
            out.append([name, "err", str(e), getattr(e, "sqlite_errorcode", -1)])
    print(json.dumps(out), flush=True)


def build_corrupt_db(path, module, fmt):
    c = connect(path)
    c.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v INTEGER, w TEXT)" % module)
    if fmt != NEW_FORMAT:                                 # as an earlier build wrote it
        set_format(c, fmt)
        c.close()
        c = connect(path)
    c.execute("INSERT INTO t WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s "
              "WHERE i<100) SELECT i, i*10, 'w'||i FROM s")
    c.execute("UPDATE t SET v=-v WHERE k IN (1, 2)")      # a second, newer run
    c.close()


def entries(vals):
    """(offset of L, L) of each entry of a chunk's vals."""
    out, off = [], 0
    while off + 4 <= len(vals):
        L = struct.unpack_from("<I", vals, off)[0]
        out.append((off, L))
        off += 4 + (0 if L == 0xffffffff else L)
    return out


def corrupt_cases(fmt):
    def old_run(c):
        return c.execute("SELECT id, n, keys, vals FROM t_run ORDER BY id LIMIT 1").fetchone()

    def upd(c, sql, params=()):
        c.execute(sql, params)

    def garbage(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (random.Random(SEED).randbytes(len(v)), i))

    def truncated(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (v[:len(v) // 2], i))

    def keys_short(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET keys=? WHERE id=?", (k[:-3], i))

    def keys_unsorted(c):
        i, n, k, v = old_run(c)
        ks = list(struct.unpack("<%dq" % n, k)) if fmt < 4 else keys_decode(k, n)
        ks[10], ks[50] = ks[50], ks[10]
        upd(c, "UPDATE t_run SET keys=? WHERE id=?",
            (struct.pack("<%dq" % n, *ks) if fmt < 4 else keys_encode(ks), i))

    def null_blobs(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET keys=NULL, vals=NULL WHERE id=?", (i,))

    def text_vals(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET vals='garbage' WHERE id=?", (i,))

    def n_negative(c):
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET n=-1 WHERE id=?", (i,))

    def n_overflow(c):
        # n*8 overflows a 32-bit int to 8 = the length of the keys blob
        i, n, k, v = old_run(c)
        upd(c, "UPDATE t_run SET n=?, keys=? WHERE id=?", (2**29 + 1, k[:8], i))

    def len_shadowed(c):
        # the length of an entry that a newer run overrides (key 1)
        i, n, k, v = old_run(c)
        v = bytearray(v)
        struct.pack_into("<I", v, 0, 0x7ffffff0)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (bytes(v), i))

    def cell(c, fn):
        # the record of key 3 (entry 2 of the oldest run): u32 nCol, u32 nByte,
        # then per column {u8 type, 3 pad, u32 offset, u32 length}
        i, n, k, v = old_run(c)
        v = bytearray(v)
        off, L = entries(v)[2]
        fn(v, off + 4, L)
        upd(c, "UPDATE t_run SET vals=? WHERE id=?", (bytes(v), i))

    def int_len0(c):
        cell(c, lambda v, rec, L: struct.pack_into("<III", v, rec + 8, 1, L - 1, 0))

    def bad_type(c):
        cell(c, lambda v, rec, L: struct.pack_into("<B", v, rec + 8, 9))

    def ncol(c):
        cell(c, lambda v, rec, L: struct.pack_into("<I", v, rec, 7))

    def text_len_big(c):
        # column w (TEXT) claims more bytes than the record holds
        cell(c, lambda v, rec, L: struct.pack_into("<I", v, rec + 8 + 12 + 8, 1000))

    common = [("garbage vals", garbage), ("truncated vals", truncated), ("keys blob 3 bytes short", keys_short),
              ("keys not ascending", keys_unsorted), ("keys and vals NULL", null_blobs),
              ("vals is text", text_vals), ("n negative", n_negative), ("n*8 overflows int", n_overflow)]
    if fmt < 4:
        return common + [
            ("bad length of an entry a newer run overrides", len_shadowed),
            ("INTEGER cell with length 0 at the record's end", int_len0),
            ("cell with storage class 9", bad_type), ("record nCol wrong", ncol),
            ("TEXT cell longer than the record", text_len_big)]

    # Format 4: each damage is sealed with a correct checksum, so that the
    # decoder's own checks must find it (the oldest run: keys 1..100, v = 10k,
    # w = 'w<k>'; entry j is key j+1).
    def sealed(c, fk=None, fv=None):
        i, n, k, v = old_run(c)
        k, v = bytearray(k), bytearray(v[:-8])
        k = fk(k) if fk else k
        v = fv(v) if fv else v
        upd(c, "UPDATE t_run SET keys=?, vals=? WHERE id=?",
            (bytes(k), bytes(v) + chunk_sum(k, v, chunk_seed(fmt, i)), i))

    def rec_edit(j, fn):
        # fn(v, payload offset, record bytes) edits entry j's record in place
        def f(c):
            def fv(v):
                off, pay, kind, L = entries4(v)[j]
                fn(v, pay, L)
                return v
            sealed(c, fv=fv)
        return f

    def entry_hdr(j, hdr):
        # entry j's header E replaced by the bytes hdr
        def f(c):
            def fv(v):
                off, pay, kind, L = entries4(v)[j]
                return v[:off] + hdr + v[pay:]
            sealed(c, fv=fv)
        return f

    def set_byte(at, b):
        def fn(v, pay, L):
            v[pay + at] = b
        return fn

    def keys_with(fn):
        def f(c):
            def fk(k):
                ks = keys_decode(k, old_run(c)[1])
                return bytearray(fn(ks))
            sealed(c, fk=fk)
        return f

    def varint_cut(c):                  # the last entry's header: a varint cut off
        sealed(c, fv=lambda v: v[:entries4(v)[-1][0]] + b"\x81")

    def keys_cut(c):                    # the keys blob ends inside a varint
        sealed(c, fk=lambda k: k + b"\x80")

    return common + [
        ("sealed: serial type 10", rec_edit(2, set_byte(0, 10))),
        ("sealed: serial type 11", rec_edit(2, set_byte(1, 11))),
        ("sealed: integer serial type wider than the record", rec_edit(2, set_byte(0, 6))),
        ("sealed: text length past the record", rec_edit(2, set_byte(1, 13 + 2 * 100))),
        ("sealed: text shorter than the record", rec_edit(2, set_byte(1, 13))),
        ("sealed: serial type varint past the record", rec_edit(2, set_byte(1, 0x85))),
        ("sealed: entry length past the end of vals", entry_hdr(5, b"\x7f")),
        ("sealed: entry length huge", entry_hdr(5, b"\xff" * 8 + b"\x01")),
        ("sealed: entry marked spilled with no reference", entry_hdr(99, b"\x01")),
        ("sealed: entry header varint truncated at the end", varint_cut),
        ("sealed: bytes after the last entry", lambda c: sealed(c, fv=lambda v: v + b"\x00")),
        ("sealed: a deletion turned into an empty record", entry_hdr(0, b"\x02")),
        ("sealed: keys blob ends inside a varint", keys_cut),
        ("sealed: key difference 0", keys_with(lambda ks: keys_encode(ks[:1]) + b"\x00" + b"".join(
            varint_put(ks[j] - ks[j - 1]) for j in range(2, len(ks))))),
        ("sealed: keys past INT64_MAX", keys_with(lambda ks: varint_put(((2**63 - 2) << 1)) + b"\x05" + b"\x01" * (len(ks) - 2))),
        ("sealed: keys not ascending", keys_with(lambda ks: keys_encode(ks[:10] + [ks[50]] + ks[11:50] + [ks[10]] + ks[51:]))),
    ]


def sec_corruption():
    for module, fmt in (("gfsl", 5), ("gpuhash", 5), ("gfsl", 4), ("gpuhash", 4),
                        ("gfsl", 3), ("gpuhash", 3)):
        _sec_corruption(module, fmt)


def _sec_corruption(module, fmt):
    if True:
        pristine = dbpath("corrupt_%s_pristine.db" % module)
        build_corrupt_db(pristine, module, fmt)
        c = raw_connect(pristine)
        R.check(table_format(c) == fmt, "corruption[%s]: format %d" % (module, fmt), table_format(c))
        c.close()
        module = "%s format %d" % (module, fmt)
        rc, out, err = run_child("corrupt_read", {"db": pristine})
        if not R.check(rc == 0, "corruption[%s]: pristine read" % module, err[-2000:]):
            return
        expect = {q[0]: q for q in json.loads(out)}
        R.check(all(q[1] == "ok" for q in expect.values()) and expect["check"][2] == [["b" + b"ok".hex()]],
                "corruption[%s]: pristine database reads fine" % module, expect)
        for name, fn in corrupt_cases(fmt):
            tag = "corruption[%s] %s" % (module, name)
            db = dbpath("corrupt_%s_x.db" % module)
            shutil.copyfile(pristine, db)
            c = raw_connect(db)
            fn(c)
            c.close()
            rc, out, err = run_child("corrupt_read", {"db": db})
            if not R.check(rc == 0, tag + ": no crash",
                           "exit status %s%s; stderr: %s" % (rc, " (signal %d)" % -rc if rc < 0 else "", err[-800:])):
                continue
            res = json.loads(out)
            reported = any(r[1] == "err" for r in res) or any(
                r[0].startswith("check") and r[1] == "ok" and r[2] != expect["check"][2] for r in res)
            wrong = [(r[0], r[2]) for r in res
                     if r[1] == "ok" and not r[0].startswith("check") and r[2] != expect[r[0]][2]]
            R.check(not wrong, tag + ": no wrong rows returned without an error", wrong[:2])
            R.check(reported, tag + ": reported (an error or gpuds_check not 'ok')",
                    [(r[0], r[1], short(r[2], 120)) for r in res])
            if name.startswith("sealed"):
                # only the decoder can find it: SQLITE_CORRUPT_VTAB (267) naming the damage
                bad = [r for r in res if r[1] == "err" and (r[3] != 267 or not (
                       "damaged" in r[2] or "bad row record" in r[2]))]
                R.check(any(r[1] == "err" for r in res) and not bad,
                        tag + ": SQLITE_CORRUPT_VTAB", [(r[0], r[2:]) for r in res][:3])
                R.check(not any("checksum" in r[2] for r in res if r[1] == "err"),
                        tag + ": the checksum still matches", res[:2])
            errs = sorted(set(r[2] for r in res if r[1] == "err"))
            chk = [r[2] for r in res if r[0] == "check"]
            note("%s: errors %s; gpuds_check -> %s" % (tag, errs or "none", short(chk, 150)))

        # damage to the shadow tables' agreement with each other: t_meta
        # counts the rows and the run entries, so a new reader reports it
        for name, sql in (("newest run deleted", "DELETE FROM t_run WHERE id = (SELECT max(id) FROM t_run)"),
                          ("t_meta emptied", "DELETE FROM t_meta")):
            db = dbpath("corrupt_%s_x.db" % module)
            shutil.copyfile(pristine, db)
            c = raw_connect(db)
            c.execute(sql)
            c.close()
            rc, out, err = run_child("corrupt_read", {"db": db})
            if rc != 0:
                R.check(False, "corruption[%s] %s: no crash" % (module, name), rc)
                continue
            res = json.loads(out)
            wrong = [r[0] for r in res if r[1] == "ok" and not r[0].startswith("check")
                     and r[2] != expect[r[0]][2]]
            R.check(not wrong and all(r[1] == "err" for r in res if not r[0].startswith("check")),
                    "corruption[%s] %s: every read reports it, none returns other rows" % (module, name),
                    res[:3])

        # t_meta emptied under an open connection: no stale reads after it
        db = dbpath("corrupt_%s_meta.db" % module)
        shutil.copyfile(pristine, db)
        A, B = connect(db), connect(db)
        before = query(B, "SELECT count(*) FROM t")
        c = raw_connect(db)
        c.execute("DELETE FROM t_meta")
        c.close()
        for who, conn in (("the other connection", B), ("a writer", A)):
            try:
                query(conn, "SELECT count(*) FROM t")
                R.check(False, "corruption[%s] t_meta emptied: %s reports it" % (module, who))
            except sqlite3.DatabaseError as e:
                R.check("t_meta is damaged" in str(e),
                        "corruption[%s] t_meta emptied: %s reports it" % (module, who), str(e))
        A.close()
        B.close()

        # a connection whose structure no longer matches the shadow tables
        db = dbpath("corrupt_%s_live.db" % module)
        shutil.copyfile(pristine, db)
        A = connect(db)
        A.execute("SELECT count(*) FROM t").fetchall()
        c = raw_connect(db)
        i, n, k, v = c.execute("SELECT id, n, keys, vals FROM t_run ORDER BY id LIMIT 1").fetchone()
        v = bytearray(v)
        if fmt < 4:
            off, L = entries(v)[49]               # key 50, v = 500
            rec = off + 4
            voff = struct.unpack_from("<I", v, rec + 8 + 4)[0]
            struct.pack_into("<q", v, rec + voff, 5001)
        else:                                     # serial types 2 (v = 500), 19 ('w50')
            off, rec, kind, L = entries4(v[:-8])[49]
            R.check(record4_decode(v[rec:rec + L], 2) == [500, "w50"], "corruption: key 50's record",
                    record4_decode(v[rec:rec + L], 2))
            struct.pack_into(">h", v, rec + 2, 5001)
        c.execute("UPDATE t_run SET vals=? WHERE id=?", (bytes(v), i))
        c.close()
        res = check_ok(A, "t")
        R.check(res != "ok", "corruption[%s]: gpuds_check of a loaded connection sees a changed shadow row" % module, res)
        note("corruption[%s] shadow row changed under a loaded connection: gpuds_check -> %s" % (module, res))
        A.close()
        B = connect(db)
        try:       # a value changed inside its record: the chunk's checksum says so
            got = scalar(B, "SELECT v FROM t WHERE k=50")
            R.check(False, "corruption[%s]: a new connection reports a changed value" % module, got)
        except sqlite3.DatabaseError as e:
            R.check("checksum mismatch" in str(e),
                    "corruption[%s]: a new connection reports a changed value" % module, str(e))
        B.close()


# ================================================================== main
SECTIONS = [
    ("1 corruption", sec_corruption),
]

CHILDREN = {
    "corrupt_read": child_corrupt_read,
}


if __name__ == "__main__":
    sys.exit(main("test_persist_corrupt", SECTIONS, CHILDREN, sys.argv[1:]))
