"""Pieces the SQL-level tests share: the extension's path, a tally of checks
that prints "N passed, M failed", and a connection with gpuds loaded."""
import os
import re
import sqlite3

EXT = os.path.abspath(os.environ["GPUDS_EXT"]) if os.environ.get("GPUDS_EXT") else ""


class Tally:
    """Counts checks; a failed one prints FAIL and its detail."""
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s %s" % (what, str(detail)[:1500]))
        return ok

    def finish(self):
        """Print the closing line; the exit status (1 if anything failed)."""
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0


def project_version():
    """The version set in CMakeLists.txt's project(), the one place it is
    defined (gpuds_version() and the Python package report it)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        m = re.search(r"^project\(gpuds VERSION ([0-9][0-9.]*)", f.read(), re.M)
    return m.group(1) if m else None


def uses_column_set(plan):
    """True when plan, the text of EXPLAIN QUERY PLAN, has a gfsl or gpuhash
    table read through its column set (ext/plan.c, planText): "gfsl: GPU
    column set: ...", "gpuhash (ordered mirror): host column set: ..."."""
    return re.search(r"\b(gfsl|gpuhash|gpuhash \(ordered mirror\)): (GPU|host) column set: ",
                     plan) is not None


def run_cases(tally, cases, prefix, want, set_tmp):
    """Run the functions cases (those whose names start with one of want,
    if any) in a new temporary directory (given to set_tmp first, removed
    after), each exception a failed check; the closing line and exit status
    (tally.finish()), or 77 without GPUDS_EXT."""
    import shutil
    import tempfile
    import traceback
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    tmp = tempfile.mkdtemp(prefix=prefix)
    set_tmp(tmp)
    try:
        for fn in cases:
            if want and not any(fn.__name__.startswith(w) for w in want):
                continue
            try:
                fn()
            except Exception:
                tally.check(False, "%s raised:" % fn.__name__, traceback.format_exc())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.finish()


def lit(v):
    """v as an SQL literal (a NUL inside text as char(0))."""
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return "x'%s'" % v.hex()
    if isinstance(v, str):
        return "'%s'" % v.replace("'", "''").replace("\u0000", "' || char(0) || '")
    if isinstance(v, float):
        return repr(v) if v == v else "NULL"
    return str(v)


def connect(path, timeout=5.0):
    """A connection to path in autocommit mode with gpuds loaded."""
    c = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    c.enable_load_extension(True)
    c.load_extension(EXT)
    c.enable_load_extension(False)
    return c


# ------------------------------------------------------------ storage format
# The shadow tables' bytes as ARCHITECTURE.md ("The storage format")
# describes them, for tests that read or damage them: format 3 (u32
# lengths, in-memory records) and format 4 (varints, encoded records).
import struct as _struct

_M64 = (1 << 64) - 1


def _mix64(x):
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & _M64
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & _M64
    x ^= x >> 31
    return x


NEW_FORMAT = 5     # the storage format of a new table


def chunk_sum(keys, vals, seed=0):
    """gpudsChunkSum (ext/runfmt.c) of a chunk's keys and vals bytes, as the
    8 little-endian bytes a chunk ends with; seed: the chunk's t_run id in
    format 5 (chunk_seed), else 0."""
    P = 0x9e3779b97f4a7c15
    h = [0x6a09e667f3bcc908 ^ (seed & _M64), 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b,
         0xa54ff53a5f1d36f1]
    for j, a in enumerate((bytes(keys), bytes(vals))):
        n = len(a)
        i = 0
        while i + 32 <= n:
            w = _struct.unpack_from("<4Q", a, i)
            for t in range(4):
                h[t] = ((h[t] ^ w[t]) * P) & _M64
            i += 32
        while i < n:
            h[i & 3] = ((h[i & 3] ^ a[i]) * P) & _M64
            i += 1
        h[0] ^= (n << 1 | j) & _M64
    r = _mix64(_mix64(h[0] ^ _mix64(h[1])) ^ _mix64(h[2] ^ _mix64(h[3])))
    return _struct.pack("<Q", r)


def chunk_seed(fmt, rowid):
    """The seed of the checksum of chunk rowid in a table of format fmt."""
    return rowid if fmt >= 5 else 0


def layout_term(rowid, n, k0):
    """gpudsChunkLayout (ext/runfmt.c): a chunk's term of t_meta's 'layout'."""
    h = _mix64((rowid ^ 0x243f6a8885a308d3) & _M64)
    h = _mix64(h ^ (n & _M64))
    return _mix64(h ^ (k0 & _M64))


def digest_term(rowid, n, k0, csum):
    """gpudsChunkDigest (ext/runfmt.c): a chunk's term of t_meta's 'digest'
    (csum: the checksum its vals end with, as an integer)."""
    return _mix64(layout_term(rowid, n, k0) ^ _mix64(csum ^ 0x13198a2e03707344))


def run_digests(c, t="t"):
    """(digest, layout) of table t's chunks as t_meta stores them (signed
    64-bit integers), computed from t_run as ARCHITECTURE.md says."""
    d = lay = 0
    for rowid, n, k, v in c.execute("SELECT id, n, keys, vals FROM '%s_run'" % t):
        k0 = keys_decode(k, 1)[0] if n > 0 else 0
        csum = _struct.unpack("<Q", v[-8:])[0]
        d = (d + digest_term(rowid, n, k0, csum)) & _M64
        lay = (lay + layout_term(rowid, n, k0)) & _M64
    signed = lambda x: x - (1 << 64) if x >= 1 << 63 else x
    return signed(d), signed(lay)


def varint_put(v):
    """SQLite's varint of the unsigned 64-bit v."""
    v &= _M64
    if v >= 1 << 56:
        out = [v & 0xff]
        v >>= 8
        for _ in range(8):
            out.append((v & 0x7f) | 0x80)
            v >>= 7
        return bytes(reversed(out))
    out = [v & 0x7f]
    v >>= 7
    while v:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    return bytes(reversed(out))


def varint_get(a, off):
    """(value, new offset) of the varint at a[off]; ValueError if truncated."""
    v = 0
    for i in range(8):
        if off + i >= len(a):
            raise ValueError("truncated varint")
        b = a[off + i]
        v = (v << 7) | (b & 0x7f)
        if b < 0x80:
            return v, off + i + 1
    if off + 8 >= len(a):
        raise ValueError("truncated varint")
    return (v << 8) | a[off + 8], off + 9


def keys_encode(ks):
    """A format-4 keys blob: the first key zigzag, then differences."""
    out = []
    for i, k in enumerate(ks):
        if i == 0:
            out.append(varint_put((k << 1) ^ (k >> 63)))
        else:
            out.append(varint_put(k - ks[i - 1]))
    return b"".join(out)


def keys_decode(a, n):
    """The n keys of a format-4 keys blob (no checks beyond the varints)."""
    ks, off = [], 0
    for i in range(n):
        u, off = varint_get(a, off)
        if i == 0:
            k = (u >> 1) ^ -(u & 1)
        else:
            k = ks[-1] + u
        ks.append(k)
    return ks


def entries4(vals):
    """The entries of a format-4 vals blob (checksum excluded): a list of
    (offset of the entry, offset of its payload, kind, payload bytes), kind
    'del', 'ovfl' (payload: the 24-byte reference) or 'rec'."""
    out, off = [], 0
    while off < len(vals):
        e, p = varint_get(vals, off)
        if e == 0:
            out.append((off, p, "del", 0))
            off = p
        elif e == 1:
            out.append((off, p, "ovfl", 24))
            off = p + 24
        else:
            out.append((off, p, "rec", e - 2))
            off = p + e - 2
    return out


def entries3(vals):
    """The entries of a format-3 vals blob (checksum excluded), as entries4."""
    out, off = [], 0
    while off + 4 <= len(vals):
        (L,) = _struct.unpack_from("<I", vals, off)
        if L == 0xffffffff:
            out.append((off, off + 4, "del", 0))
            off += 4
        elif L == 0xfffffffe:
            out.append((off, off + 4, "ovfl", 24))
            off += 28
        else:
            out.append((off, off + 4, "rec", L))
            off += 4 + L
    return out


_SIZES = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8, 8: 0, 9: 0}


def record4_decode(a, ncol, text="utf-8"):
    """The values of a format-4 record of ncol columns (int, float, str,
    bytes or None); text decoded from that encoding (None: text as bytes,
    as format 5 holds it in a UTF-16 database)."""
    types, off = [], 0
    for _ in range(ncol):
        s, off = varint_get(a, off)
        types.append(s)
    vals = []
    for s in types:
        if s in (8, 9):
            vals.append(s - 8)
        elif s == 0:
            vals.append(None)
        elif s <= 6:
            n = _SIZES[s]
            vals.append(int.from_bytes(a[off:off + n], "big", signed=True))
            off += n
        elif s == 7:
            vals.append(_struct.unpack(">d", a[off:off + 8])[0])
            off += 8
        elif s >= 12:
            n = (s - 12) // 2
            b = bytes(a[off:off + n])
            vals.append(b.decode(text) if s & 1 and text else b)
            off += n
        else:
            raise ValueError("serial type %d" % s)
    if off != len(a):
        raise ValueError("record of %d bytes, %d used" % (len(a), off))
    return vals


def record3_decode(a, ncol):
    """The values of a record of formats 1 to 3 (ARCHITECTURE.md: u32 nCol,
    u32 bytes, nCol cells of {u8 type, 3 zero bytes, u32 offset, u32
    length}, then the payloads in column order, back to back: integers and
    reals as 8 little-endian bytes, text with a NUL after it (type | 0x80
    exactly when the text holds no NUL), blobs as they are), checking every
    byte of that layout; ValueError if one is off."""
    nc, nb = _struct.unpack_from("<II", a, 0)
    if nc != ncol or nb != len(a):
        raise ValueError("header %d columns, %d bytes" % (nc, nb))
    off, vals = 8 + 12 * ncol, []
    for i in range(ncol):
        t, pad, o, n = _struct.unpack_from("<B3sII", a, 8 + 12 * i)
        if pad != b"\0\0\0" or o != off:
            raise ValueError("cell %d: padding %r, offset %d (want %d)" % (i, pad, o, off))
        base = t & 0x7f
        if base in (1, 2) and n == 8:
            vals.append(_struct.unpack_from("<q" if base == 1 else "<d", a, o)[0])
        elif base == 3 and a[o + n] == 0 and (t & 0x80 != 0) == (b"\0" not in a[o:o + n]):
            vals.append(bytes(a[o:o + n]).decode("utf-8"))
            off += 1
        elif base == 4 and t == 4:
            vals.append(bytes(a[o:o + n]))
        elif t == 5 and n == 0:
            vals.append(None)
        else:
            raise ValueError("cell %d: type %d, %d bytes" % (i, t, n))
        off += n
    if off != len(a):
        raise ValueError("record of %d bytes, %d used" % (len(a), off))
    return vals


def table_format(c, t="t"):
    """t_meta's 'format' of table t."""
    return c.execute("SELECT value FROM '%s_meta' WHERE key='format'" % t).fetchone()[0]


def set_format(c, fmt, t="t"):
    """Make the new, empty table t one of storage format fmt (2, 3 or 4: as
    tables written by earlier builds, without the t_meta keys of later
    formats; format 2 has no t_ovfl); it is then written in that format by
    connections that open the database after this (one that has the table
    loaded keeps its format)."""
    assert c.execute("SELECT count(*) FROM '%s_run'" % t).fetchone()[0] == 0
    c.execute("UPDATE '%s_meta' SET value=? WHERE key='format'" % t, (fmt,))
    if fmt < 5:
        c.execute("DELETE FROM '%s_meta' WHERE key IN ('stamp', 'digest', 'layout', 'entries')" % t)
    if fmt < 3:
        c.execute("DROP TABLE IF EXISTS '%s_ovfl'" % t)
