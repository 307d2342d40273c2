#!/usr/bin/env python3
"""DuckDB beside sqlbench: the same rows, the same column queries.

    sqlbench --ext build/gpuds --rows N --only insert_random,column \\
             --index-columns --dump DIR --json out.json
    duckdb_bench.py DIR [--sqlbench out.json] [--merge merged.json] [--json duck.json]
                        [--threads T] [--budget S] [--queries M]

`sqlbench --dump DIR` writes DIR/rows.csv (the N rows (k, v, r, s) of its
tables, in key order, exactly as its generator makes them; r = w/1024
printed exactly) and DIR/queries.json (each column workload: its SQL on a
table `t`, the parameters of the queries the reference table ran and their
answers).  This script loads rows.csv into an in-memory DuckDB table
`t(k BIGINT, v BIGINT, r DOUBLE, s VARCHAR)` (rows in key order, no index,
all cores), checks the rows (count; r*1024 is a permutation of 0..N-1, as
the generator makes it), then runs each workload's queries through the
Python client (`con.execute(sql, params)`, the result fetched), cycling
through the dumped queries until --budget seconds or --queries queries, after
one untimed query; every answer is summed as sqlbench sums it and compared
with the reference table's: a difference prints MISMATCH and exits 1.

It reports, per workload, DuckDB's median and p99 latency (ms) and
queries/s, and the client's own floor (the median of a trivial
`SELECT $1::BIGINT`), which every DuckDB figure includes.  With --sqlbench
(the same run's --json), the median latencies of every table sit side by
side with DuckDB's; with --merge, that JSON is written again with a
"duckdb" entry in each matching workload (ratio: its rate over sqlite's,
like every other table's), for plot_sqlbench.py.

Needs only the duckdb package (on the GPU machine, which has no network:
`pip install --no-index --find-links .wheels duckdb`).
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
import time

TABLES = ("sqlite", "gfsl", "gpuhash", "sqlite_index", "sqlite_default")
LABELS = {"sqlite": "sqlite", "gfsl": "gfsl", "gpuhash": "gpuhash",
          "sqlite_index": "sq-index", "sqlite_default": "sq-default", "duckdb": "duckdb"}


def to_duckdb_sql(sql):
    """SQLite's numbered parameters ?N become DuckDB's $N."""
    return re.sub(r"\?(\d+)", r"$\1", sql)


def answer(mode, rows):
    """The answer (n, a, b) summed as sqlbench's runQueries sums it."""
    n = a = b = 0
    if mode == "agg":                    # SELECT count(*), sum(x)
        for row in rows:
            n += row[0]
            a += row[1] or 0
    elif mode == "rows":                 # SELECT k, v, r, s
        for k, v, r, s in rows:
            n += 1
            b += k
            a += v
            b += int(r * 1024.0)
            b += len(s.encode()) if s is not None else 0
    elif mode == "desc":                 # SELECT k, v
        for k, v in rows:
            n += 1
            b += k
            a += v
    elif mode == "point":                # SELECT v
        for (v,) in rows:
            n += 1
            a += v
    else:
        sys.exit("duckdb_bench: unknown answer mode %r" % mode)
    return [n, a, b]


def load_rows(con, path, nrows):
    """CREATE TABLE t from rows.csv; checks; returns seconds."""
    t0 = time.perf_counter()
    con.execute("CREATE TABLE t AS SELECT * FROM read_csv(?, header = true, "
                "columns = {'k': 'BIGINT', 'v': 'BIGINT', 'r': 'DOUBLE', 's': 'VARCHAR'})",
                [path])
    sec = time.perf_counter() - t0
    n, nw, sw, bad = con.execute(
        "SELECT count(*), count(DISTINCT r), sum(CAST(r * 1024 AS BIGINT)), "
        "count(*) FILTER (WHERE r * 1024 <> floor(r * 1024)) FROM t").fetchone()
    if n != nrows:
        sys.exit("duckdb_bench: %s holds %d rows, queries.json says %d" % (path, n, nrows))
    if nw != n or bad or sw != n * (n - 1) // 2:
        sys.exit("duckdb_bench: r*1024 in %s is not a permutation of 0..N-1 "
                 "(distinct %d, non-integer %d, sum %d): not sqlbench's rows?" % (path, nw, bad, sw))
    return sec


def run_workload(con, w, budget, max_q):
    """Run workload w (from queries.json); returns its figures."""
    sql = to_duckdb_sql(w["sql"])
    params, answers = w["params"], w["answers"]
    if not params:
        return None
    exp = w.get("expect_rows")

    def one(i):
        p = params[i % len(params)]
        t0 = time.perf_counter()
        rows = con.execute(sql, p).fetchall()
        dt = time.perf_counter() - t0
        got = answer(w["mode"], rows)
        ref = answers[i % len(params)]
        if got != ref or (exp is not None and got[0] != exp):
            print("\nMISMATCH in %s, query %d %r: duckdb gives %r, %s gives %r%s\n  %s"
                  % (w["name"], i % len(params), p, got, w.get("reference", "the reference"), ref,
                     "" if exp is None else " (expected %d rows)" % exp, sql), file=sys.stderr)
            sys.exit(1)
        return dt

    one(0)                               # untimed: the first query of the kind
    lat = []
    t0 = time.perf_counter()
    while len(lat) < max_q and (not lat or time.perf_counter() - t0 < budget):
        lat.append(one(len(lat)))
    total = time.perf_counter() - t0
    lat.sort()
    return {"seconds": total, "queries": len(lat), "rate": len(lat) / total if total > 0 else None,
            "median_s": lat[len(lat) // 2], "p99_s": lat[int((len(lat) - 1) * 0.99)],
            "queries_run": len(lat), "distinct_queries": min(len(lat), len(params)),
            "check": answers[0], "plan": "duckdb: " + sql}


def client_floor(con, n=2000):
    """Median seconds of a trivial parameterised query through the client."""
    lat = []
    for i in range(n):
        t0 = time.perf_counter()
        con.execute("SELECT $1::BIGINT", [i]).fetchall()
        lat.append(time.perf_counter() - t0)
    return statistics.median(lat)


def fmt_ms(s):
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    ms = s * 1e3
    return "%.3g" % ms if ms < 100 else "%.0f" % ms


def side_by_side(sq, duck):
    """Median latency (ms) per table and DuckDB, and each table against DuckDB."""
    tabs = [t for t in TABLES if any(t in w["results"] for w in sq["workloads"]
                                     if w["name"] in duck)]
    lines = ["", "median latency, ms (sqlbench %s rows on %s, %s backend; DuckDB %s, %d threads)"
             % ("{:,}".format(sq["meta"]["rows"]),
                sq["meta"].get("device", "?") if sq["meta"].get("device") not in (None, "none") else "no GPU",
                sq["meta"].get("backend", "?"), duck["_meta"]["duckdb_version"], duck["_meta"]["threads"]),
             "ratio: DuckDB's median / the table's (>1x: the table answers faster than DuckDB)", ""]
    head = "%-42s" % "workload" + "".join(" %10s" % LABELS[t] for t in tabs) + " %10s" % "duckdb"
    rat = [t for t in ("gfsl", "gpuhash", "sqlite", "sqlite_index") if t in tabs]
    head += "".join(" %10s" % ("%s/dk" % {"sqlite_index": "idx", "gpuhash": "hash",
                                          "sqlite": "sq"}.get(t, t)) for t in rat)
    lines.append(head)
    lines.append("-" * len(head))
    for w in sq["workloads"]:
        d = duck.get(w["name"])
        if d is None:
            continue
        row = "%-42s" % w["title"][:42]
        for t in tabs:
            row += " %10s" % fmt_ms((w["results"].get(t) or {}).get("median_s"))
        row += " %10s" % fmt_ms(d["median_s"])
        for t in rat:
            m = (w["results"].get(t) or {}).get("median_s")
            row += " %10s" % ("%.3gx" % (d["median_s"] / m) if m else "-")
        lines.append(row)
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", help="the directory sqlbench --dump wrote (rows.csv, queries.json)")
    ap.add_argument("--sqlbench", help="sqlbench --json output of the same run: side by side")
    ap.add_argument("--merge", help="write the --sqlbench JSON again here, with DuckDB's figures")
    ap.add_argument("--json", help="write DuckDB's figures here")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="DuckDB threads (default: every core, %(default)s)")
    ap.add_argument("--budget", type=float, default=3.0, help="seconds per workload (default 3)")
    ap.add_argument("--queries", type=int, default=100000, help="at most this many per workload")
    ap.add_argument("--only", help="comma-separated workload names")
    a = ap.parse_args()
    if a.merge and not a.sqlbench:
        ap.error("--merge needs --sqlbench")
    import duckdb

    with open(os.path.join(a.dump, "queries.json")) as f:
        qj = json.load(f)
    sq = None
    if a.sqlbench:
        with open(a.sqlbench) as f:
            sq = json.load(f)
        if sq["meta"]["rows"] != qj["rows"] or sq["meta"].get("seed") != qj.get("seed"):
            sys.exit("duckdb_bench: %s (%d rows, seed %s) is not the run that dumped %s (%d rows, seed %s)"
                     % (a.sqlbench, sq["meta"]["rows"], sq["meta"].get("seed"), a.dump,
                        qj["rows"], qj.get("seed")))
    con = duckdb.connect()
    con.execute("SET threads = %d" % a.threads)
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    print("duckdb_bench: DuckDB %s, %s threads (%s cores), %s rows from %s"
          % (duckdb.__version__, threads, os.cpu_count(), "{:,}".format(qj["rows"]),
             os.path.join(a.dump, qj.get("rows_file", "rows.csv"))), file=sys.stderr)
    load_s = load_rows(con, os.path.join(a.dump, qj.get("rows_file", "rows.csv")), qj["rows"])
    print("  load (read_csv into t): %.2f s, %.3g M rows/s" % (load_s, qj["rows"] / load_s / 1e6),
          file=sys.stderr)
    floor = client_floor(con)
    print("  client floor (SELECT $1::BIGINT through the Python client): %.3f ms median"
          % (floor * 1e3), file=sys.stderr)
    only = set(a.only.split(",")) if a.only else None
    res = {}
    for w in qj["workloads"]:
        if only and w["name"] not in only:
            continue
        r = run_workload(con, w, a.budget, a.queries)
        if r is None:
            print("  %-42s no queries dumped (the reference ran none)" % w["title"], file=sys.stderr)
            continue
        res[w["name"]] = r
        print("  %-42s median %8s ms, p99 %8s ms, %9.1f queries/s (%d queries, %d distinct)"
              % (w["title"], fmt_ms(r["median_s"]), fmt_ms(r["p99_s"]), r["rate"],
                 r["queries"], r["distinct_queries"]), file=sys.stderr)
    meta = {"duckdb_version": duckdb.__version__, "threads": int(threads), "cpus": os.cpu_count(),
            "rows": qj["rows"], "load_s": load_s, "client_floor_s": floor,
            "budget_s": a.budget, "max_queries": a.queries, "dump": a.dump,
            "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])}
    print("\nDuckDB %s, %s threads, %s rows: median ms per query (client floor %.3f ms included)"
          % (duckdb.__version__, threads, "{:,}".format(qj["rows"]), floor * 1e3))
    for w in qj["workloads"]:
        if w["name"] in res:
            r = res[w["name"]]
            print("  %-42s %10s ms %12.1f queries/s" % (w["title"], fmt_ms(r["median_s"]), r["rate"]))
    if sq:
        res["_meta"] = meta
        print(side_by_side(sq, res))
        del res["_meta"]
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "results": res}, f, indent=1)
        print("duckdb_bench: wrote %s" % a.json, file=sys.stderr)
    if a.merge:
        for w in sq["workloads"]:
            r = res.get(w["name"])
            if r is None:
                continue
            s = w["results"].get("sqlite")
            e = dict(r)
            e["ratio"] = (r["rate"] / s["rate"]) if s and s.get("rate") else None
            e["timeout"] = False
            w["results"]["duckdb"] = e
        sq["meta"]["duckdb"] = meta
        with open(a.merge, "w") as f:
            json.dump(sq, f, indent=1)
        print("duckdb_bench: wrote %s" % a.merge, file=sys.stderr)


if __name__ == "__main__":
    main()
