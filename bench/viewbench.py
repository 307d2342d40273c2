#!/usr/bin/env python3
"""gpuds_view beside SQLite and DuckDB: aggregates over one table.

    viewbench.py --ext build/gpuds --rows N [--module gfsl|gpuhash]
                 [--reps R] [--db PATH] [--no-duckdb] [--gfsl-sql] [--json out.json]

Builds the table (k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT) of N
rows twice in one SQLite database, as an ordinary table `o` and as a gfsl
(or gpuhash) table `t`, and the same rows in an in-memory DuckDB table (all
cores), from one formula that both engines compute alike:

    v = (k * 2654435761) % 1000003 % 100000     (10^5 values)
    r = ((k * 40503 + 12345) % 100000) / 1000.0  (0 <= r < 100, step 0.001)
    s = 's' || ((k * 7919) % 1000) || '-' || ((k * 7919) % 1000 * 37 % 1009)
                                                 (1,000 texts)

Then each query runs as a gpuds_view over t (the view read with
SELECT * FROM view), as the same SELECT on the ordinary table through
SQLite (page cache holding the database: cache_size, mmap_size), optionally
as the same SELECT on t through SQLite (--gfsl-sql: what SQLite makes of the
virtual table without the view), and on DuckDB.  Each is timed R times
after one untimed run; the median is printed with the ratios.  Answers are
compared: the view's must equal SQLite's exactly (REALs within 1e-9
relative), DuckDB's within 1e-6 relative (it sums differently); a
difference prints MISMATCH and the script exits 1.

DuckDB is skipped, with a message, where its Python package is missing
(pip install duckdb; on a machine without network, a wheel taken along).
"""
import argparse
import json
import math
import os
import sqlite3
import statistics
import sys
import time

QUERIES = [
    ("filter_1pct", "SELECT count(*), sum(v) FROM {t} WHERE r > 99"),
    ("filter_50pct", "SELECT count(*), sum(v) FROM {t} WHERE r > 50"),
    ("group_bucket100", "SELECT v % 100 AS b, count(*), avg(r) FROM {t} GROUP BY b"),
    ("group_text1000", "SELECT s, count(*), avg(r) FROM {t} WHERE v < 50000 GROUP BY s"),
    ("group_1e6", "SELECT k % 1000000 AS g, count(*), sum(v) FROM {t} GROUP BY g"),
    ("count_distinct", "SELECT count(DISTINCT v) FROM {t}"),
    ("sum_half_keys", "SELECT sum(r) FROM {t} WHERE k <= {half}"),
    ("selective_one_row", "SELECT count(*), sum(r) FROM {t} WHERE v = 4242"),
]

V_EXPR = "(k * 2654435761) % 1000003 % 100000"
R_EXPR = "((k * 40503 + 12345) % 100000) / 1000.0"
S_EXPR = "'s' || ((k * 7919) % 1000) || '-' || ((k * 7919) % 1000 * 37 % 1009)"


def connect(path, ext):
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(ext)
    return con


def build_sqlite(con, n, module, ordinary=True):
    """The gpuds table t and (ordinary) the ordinary table o, of n rows."""
    t0 = time.time()
    con.execute("DROP TABLE IF EXISTS o")
    con.execute("DROP TABLE IF EXISTS t")
    con.execute("CREATE VIRTUAL TABLE t USING %s(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT)" % module)
    gen = ("WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k+1 FROM c WHERE k<%d) "
           "SELECT k, %s, %s, %s FROM c" % (n, V_EXPR, R_EXPR, S_EXPR))
    if ordinary:
        con.execute("CREATE TABLE o(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT)")
        con.execute("BEGIN")
        con.execute("INSERT INTO o " + gen)
        con.execute("COMMIT")
        con.execute("BEGIN")
        con.execute("INSERT INTO t SELECT * FROM o")
        con.execute("COMMIT")
    else:
        con.execute("BEGIN")
        con.execute("INSERT INTO t " + gen)
        con.execute("COMMIT")
    return time.time() - t0


def build_duckdb(n, threads):
    try:
        import duckdb
    except ImportError:
        return None, "duckdb not installed (pip install duckdb): DuckDB skipped"
    con = duckdb.connect(":memory:")
    if threads:
        con.execute("SET threads TO %d" % threads)
    con.execute("CREATE TABLE t AS SELECT k::BIGINT AS k, (%s)::BIGINT AS v, %s AS r, %s AS s "
                "FROM range(1, %d) tbl(k) ORDER BY k" % (V_EXPR, R_EXPR, S_EXPR, n + 1))
    return con, "DuckDB %s" % duckdb.__version__


def timed(fn, reps):
    fn()                                     # untimed: caches, builds
    ts = []
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def norm(rows):
    return sorted((tuple(r) for r in rows), key=repr)


def close(a, b, rel):
    if len(a) != len(b):
        return False
    for ra, rb in zip(norm(a), norm(b)):
        for x, y in zip(ra, rb):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or abs(float(x) - float(y)) > rel * max(abs(float(x)), abs(float(y)), 1e-300):
                    return False
            elif x != y and not (isinstance(x, (int, float)) and isinstance(y, (int, float)) and float(x) == float(y)):
                return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ext", required=True, help="path of gpuds.so (without .so is fine)")
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--module", default="gfsl", choices=["gfsl", "gpuhash"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--db", default="/tmp/viewbench.db")
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: all)")
    ap.add_argument("--no-duckdb", action="store_true")
    ap.add_argument("--no-sqlite", action="store_true",
                    help="no ordinary table (sizes where SQLite would take too long): "
                         "the view's answers are checked against DuckDB's")
    ap.add_argument("--gfsl-sql", action="store_true", help="also time SQLite's own evaluation on t")
    ap.add_argument("--only", default="", help="comma-separated query names")
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    n = a.rows
    for f in (a.db, a.db + "-wal", a.db + "-journal"):
        if os.path.exists(f):
            os.unlink(f)
    con = connect(a.db, a.ext)
    tb = build_sqlite(con, n, a.module, not a.no_sqlite)
    # the ordinary table's page cache holds the database
    con.execute("PRAGMA cache_size=%d" % -max(2000, n * 2))
    con.execute("PRAGMA mmap_size=34359738368")
    info = json.loads(con.execute("SELECT gpuds_info()").fetchone()[0])
    print("rows %d, module %s, backend %s (%s), SQLite %s; built in %.1f s"
          % (n, a.module, info["backend"], info["device"], sqlite3.sqlite_version, tb))
    duck, dmsg = (None, "DuckDB skipped (--no-duckdb)") if a.no_duckdb else build_duckdb(n, a.threads)
    print(dmsg)
    only = set(a.only.split(",")) if a.only else None
    results = []
    bad = 0
    hdr = "%-18s %11s %11s %11s" % ("query", "view ms", "sqlite ms", "duckdb ms")
    if a.gfsl_sql:
        hdr += " %11s" % ("%s-sql ms" % a.module)
    print(hdr + "  view/sqlite view/duckdb")
    for name, q in QUERIES:
        if only and name not in only:
            continue
        sel_t = q.format(t="t", half=n // 2)
        sel_o = q.format(t="o", half=n // 2)
        con.execute("DROP TABLE IF EXISTS temp.vb")
        con.execute("CREATE VIRTUAL TABLE temp.vb USING gpuds_view(%s)" % sel_t)
        tv, rv = timed(lambda: con.execute("SELECT * FROM vb").fetchall(), a.reps)
        row = {"query": name, "sql": sel_t, "view_ms": tv * 1e3}
        if not a.no_sqlite:
            ts, rs = timed(lambda: con.execute(sel_o).fetchall(), a.reps)
            row["sqlite_ms"] = ts * 1e3
            if not close(rv, rs, 1e-9):
                print("MISMATCH %s: view %r sqlite %r" % (name, norm(rv)[:3], norm(rs)[:3]))
                bad += 1
        if a.gfsl_sql:
            tg, rg = timed(lambda: con.execute(sel_t).fetchall(), a.reps)
            row["gfsl_sql_ms"] = tg * 1e3
        if duck is not None:
            td, rd = timed(lambda: duck.execute(sel_o.replace(" FROM o", " FROM t")).fetchall(), a.reps)
            row["duckdb_ms"] = td * 1e3
            if not close(rv, rd, 1e-6):
                print("MISMATCH %s: view %r duckdb %r" % (name, norm(rv)[:3], norm(rd)[:3]))
                bad += 1
        v = json.loads(con.execute("SELECT gpuds_info()").fetchone()[0])["views"]
        last = [x for x in v if x["name"].endswith(".vb")][0]["last"]
        row["where"] = last["where"]
        line = "%-18s %11.3f %11s %11s" % (name, row["view_ms"],
                                           "%.3f" % row["sqlite_ms"] if "sqlite_ms" in row else "-",
                                           "%.3f" % row["duckdb_ms"] if "duckdb_ms" in row else "-")
        if a.gfsl_sql:
            line += " %11.3f" % row["gfsl_sql_ms"]
        line += "  %10s %10s  (%s)" % ("%.1fx" % (row["sqlite_ms"] / row["view_ms"]) if "sqlite_ms" in row else "-",
                                          "%.2fx" % (row["duckdb_ms"] / row["view_ms"]) if "duckdb_ms" in row else "-",
                                          row["where"])
        print(line)
        results.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": n, "module": a.module, "backend": info["backend"],
                       "device": info["device"], "sqlite": sqlite3.sqlite_version,
                       "duckdb": dmsg, "results": results}, f, indent=1)
    con.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
