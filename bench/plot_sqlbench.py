#!/usr/bin/env python3
"""Charts and a README table from sqlbench JSON results.

    plot_sqlbench.py RESULT.json [MORE.json ...] [-o DIR] [--md FILE]

For each run (a JSON file written by `sqlbench --json`), the ratio of every
workload's rate on gfsl and gpuhash to its rate on the ordinary SQLite table
(>1 = faster than SQLite).  The ordinary table is the tuned one (a page cache
that holds the database, mmap) where the run says so (meta.baseline "both" or
"tuned"); with "both", the same ordinary table run with SQLite's default cache
("sqlite_default") is shown beside it, as its ratio to the tuned one.  The
indexed ordinary table ("sqlite_index", sqlbench --index-columns) and DuckDB
("duckdb", added by bench/duckdb_bench.py --merge) are shown where the run has
them; the column workloads (group "column") get a table of their own:
median latency per table and the gpuds tables against the ordinary table
(with the targets set for them, TARGETS), the indexed one and DuckDB.  Writes:

  DIR/sqlbench_ratios.png        every workload, log scale (needs matplotlib)
  DIR/sqlbench_<group>.png       one chart per workload group
  DIR/sqlbench_bytes_per_row.png     bytes per row of each table (runs with a footprint)
  DIR/sqlbench_column_latency.png    median latency of the column workloads, every table
  a markdown table               to stdout, or to FILE with --md, with the
                                 footprint table after it

Only the standard library is required; without matplotlib the charts are
skipped (with a note on stderr) and the markdown is still written.
"""
import argparse
import json
import math
import os
import sys

MODULES = ("gfsl", "gpuhash")
DEFAULT = "sqlite_default"      # the ordinary table with SQLite's default cache
INDEX = "sqlite_index"          # the ordinary table with indexes on v, r, s
DUCK = "duckdb"                 # DuckDB on the same rows (duckdb_bench.py --merge)
FLOOR = "floor"                 # sqlbench's array-backed virtual table: SQLite's own cost
TABLES = ("sqlite", "gfsl", "gpuhash", FLOOR, INDEX, DUCK, DEFAULT)
LABELS = {"sqlite": "sqlite", "gfsl": "gfsl", "gpuhash": "gpuhash",
          FLOOR: "floor (any virtual table)",
          INDEX: "sqlite, indexed", DUCK: "DuckDB", DEFAULT: "sqlite, default cache"}
# The column workloads' targets: a gpuds table's rate over the ordinary table's (no index)
TARGETS = {"col_eq": 100, "col_range_1pct": 20, "col_range_10pct": 3, "col_and": 50,
           "col_top_desc": 100, "col_key_and": 10, "col_text_eq": 20}
# footprint rows: (JSON key, title); per-row figures in bytes
FOOTPRINT = (
    ("rss_bytes_per_row", "process memory added by loading (RSS), B/row"),
    ("rss_anon_bytes_per_row", "  of which anonymous (RssAnon), B/row"),
    ("gpu_bytes_per_row", "GPU memory added (free before − after), B/row"),
    ("gpu_store_bytes_per_row", "GPU memory of the store (device_bytes), B/row"),
    ("file_bytes_per_row", "database file (the table's b-trees), B/row"),
    ("column_set_bytes_per_row", "column set, built with the store (GPU or host), B/row"),
)


def load(path):
    with open(path) as f:
        d = json.load(f)
    if "meta" not in d or "workloads" not in d:
        sys.exit("%s: not a sqlbench JSON file" % path)
    return d


def run_label(d, short=False):
    m = d["meta"]
    dev = m.get("device") or "?"
    backend = m.get("backend", "?")
    if dev in ("none", "?"):
        dev = "no GPU"
    rows = m.get("rows", 0)
    if short:
        return "%s (%s), %s rows" % (dev, backend, fmt_count(rows))
    return "%s, %s backend, %s rows" % (dev, backend, fmt_count(rows))


def fmt_count(n):
    n = int(n)
    for div, suf in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, suf)
    if n >= 10**6:
        return "%.1fM" % (n / 1e6)
    return "{:,}".format(n)


def fmt_rate(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    for div, suf in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if x >= div:
            x /= div
            break
    else:
        suf = ""
    if x >= 100:
        return "%.0f%s" % (x, suf)
    if x >= 10:
        return "%.1f%s" % (x, suf)
    return "%.2f%s" % (x, suf)


def fmt_ratio(x):
    if x is None:
        return "-"
    if x >= 100:
        return "%.0f×" % x
    if x >= 10:
        return "%.1f×" % x
    if x >= 0.01:
        return "%.2f×" % x
    return "%.2g×" % x


def baseline(d):
    """Which ordinary table the ratios are against, in words."""
    b = d["meta"].get("baseline")
    pc = d["meta"].get("page_cache", {}).get("tuned", {})
    if b in ("both", "tuned"):
        return ("an ordinary SQLite rowid table with a page cache that holds the database "
                "(cache_size=%s, mmap_size=%s)" % (pc.get("cache_size", "?"), pc.get("mmap_size", "?")))
    if b == "default":
        return "an ordinary SQLite rowid table with SQLite's default page cache"
    return "an ordinary SQLite rowid table (run before --baseline: SQLite's default cache unless --pragma said otherwise)"


def has_default(d):
    return any(DEFAULT in w["results"] for w in d["workloads"])


def present(d, t):
    return any(t in w["results"] for w in d["workloads"])


def partial(r):
    return bool(r.get("queries_planned")) and r.get("queries_run", 0) < r["queries_planned"]


def cell_rate(r, unit=None):
    if r is None:
        return "-"
    if r.get("timeout"):
        return "timeout"
    if unit == "ms":
        return "%.3g" % (1e3 * r["seconds"]) if r.get("seconds") is not None else "-"
    return fmt_rate(r.get("rate")) + ("\\*" if partial(r) else "")


def ratio(w, mod):
    r = w["results"].get(mod)
    if r is None or r.get("timeout"):
        return None
    return r.get("ratio")


def latency_rows(w):
    """(title, {table: seconds}) for the median and p99 of a latency workload."""
    out = []
    for key, name in (("median_s", "median"), ("p99_s", "p99")):
        vals = {t: r.get(key) for t, r in w["results"].items() if r.get(key)}
        if vals:
            out.append(("%s: latency %s (µs)" % (w["title"], name), vals))
    return out


def markdown(runs):
    lines = []
    if len(runs) == 1:
        d = runs[0]
        m = d["meta"]
        lines.append("sqlbench on **%s**: %s rows, %s queries; SQLite %s; %s; %s (%s cores)."
                     % (run_label(d), "{:,}".format(m["rows"]), "{:,}".format(m["queries"]),
                        m.get("sqlite_version", "?"), m.get("date", "?")[:10],
                        m.get("hostname", "?"), m.get("cpus", "?")))
        bdef = has_default(d)
        tabs = tuple(t for t in TABLES if t in TABLES[:3] or present(d, t))
        rats = MODULES + tuple(t for t in (FLOOR, INDEX, DUCK, DEFAULT) if t in tabs)
        lines.append("Ratios are the rate on the table over the rate on %s, in the same run "
                     "(>1× is faster; a time in ms: its inverse)." % baseline(d))
        if bdef:
            lines.append("*sqlite, default cache*: the same ordinary table, its own copy of the "
                         "rows, run with SQLite's default page cache; its ratio column is it "
                         "against the tuned one.")
        if FLOOR in tabs:
            lines.append("*floor*: sqlbench's own virtual table over a plain array of the rows "
                         "(writes dropped): SQLite's own cost of the workload through the "
                         "virtual-table interface; its ratio bounds what any virtual table can "
                         "gain there (\"-\": not run on it).")
        if INDEX in tabs:
            lines.append("*sqlite, indexed*: the same ordinary table, its own copy of the rows, "
                         "with an index on each of v, r and s (tuned cache).")
        if DUCK in tabs:
            dm = m.get("duckdb", {})
            lines.append("*DuckDB*: DuckDB %s, %s threads, the same rows in an in-memory table, "
                         "queries through its Python client (floor %.3g ms a query); column "
                         "workloads only." % (dm.get("duckdb_version", "?"), dm.get("threads", "?"),
                                              1e3 * (dm.get("client_floor_s") or 0)))
        lines.append("")
        lines.append("| workload | unit | " + " | ".join(LABELS[t] for t in tabs) + " | "
                     + " | ".join("%s / sqlite" % {DEFAULT: "default cache", INDEX: "indexed",
                                                   DUCK: "DuckDB", FLOOR: "floor"}.get(t, t)
                                  for t in rats) + " |")
        lines.append("|---|---|" + "--:|" * (len(tabs) + len(rats)))
        anypartial = False
        for w in d["workloads"]:
            res = w["results"]
            anypartial |= any(partial(r) for r in res.values())
            lines.append("| %s | %s | %s | %s |" % (
                w["title"], w["unit"],
                " | ".join(cell_rate(res.get(t), w["unit"]) for t in tabs),
                " | ".join(fmt_ratio(ratio(w, t)) for t in rats)))
            if w["name"] == "point":
                for title, vals in latency_rows(w):
                    sq = vals.get("sqlite")
                    cells = ["%.1f" % (vals[t] * 1e6) if t in vals else "-" for t in tabs]
                    rat = [fmt_ratio(sq / vals[t]) if sq and t in vals else "-"
                           for t in rats]
                    lines.append("| %s | µs | %s | %s |"
                                 % (title.split(": ", 1)[1].replace(" (µs)", ""),
                                    " | ".join(cells), " | ".join(rat)))
        if anypartial:
            lines.append("")
            lines.append("\\* stopped by the time budget (`--budget`); the rate is "
                         "over the queries run, every answer checked.")
        lines.append("")
        lines.append("Command: `%s`" % m.get("command", "?"))
        if DUCK in tabs:
            lines.append("DuckDB: `%s`" % m.get("duckdb", {}).get("command", "?"))
        lines.extend(column_md(d))
        lines.extend(footprint_md(d))
    else:
        lines.append("sqlbench: rate on gfsl / gpuhash over the rate on an ordinary "
                     "SQLite rowid table, tuned or not as each run says (>1× is faster).")
        lines.append("")
        for i, d in enumerate(runs):
            m = d["meta"]
            lines.append("- run %d: %s; %s queries; %s; against %s; `%s`"
                         % (i + 1, run_label(d), "{:,}".format(m["queries"]),
                            m.get("date", "?")[:10], baseline(d), m.get("command", "?")))
        lines.append("")
        head = ["workload"]
        for i, d in enumerate(runs):
            for mod in MODULES:
                head.append("%s (run %d: %s)" % (mod, i + 1, run_label(d, short=True)))
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|---" + "|--:" * (len(head) - 1) + "|")
        order = []
        titles = {}
        for d in runs:
            for w in d["workloads"]:
                if w["name"] not in titles:
                    order.append(w["name"])
                    titles[w["name"]] = w["title"]
        for name in order:
            row = [titles[name]]
            for d in runs:
                w = next((x for x in d["workloads"] if x["name"] == name), None)
                for mod in MODULES:
                    row.append(fmt_ratio(ratio(w, mod)) if w else "-")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def fmt_ms(s):
    if s is None:
        return "-"
    ms = s * 1e3
    if ms >= 100:
        return "%.0f" % ms
    return "%.3g" % ms


def column_md(d):
    """The column workloads of one run: median latency (ms) per
    table, and each gpuds table's speed against the ordinary table (rate
    ratio, with its target), the indexed one and DuckDB (median
    latency ratios); the bulk insert against the indexed table after it."""
    cols = [w for w in d["workloads"] if w.get("group") == "column"]
    if not cols:
        return []
    tabs = [t for t in TABLES if t != DEFAULT and any(t in w["results"] for w in cols)]
    mods = [t for t in MODULES if t in tabs]
    refs = [t for t in ("sqlite", INDEX, DUCK) if t in tabs]
    head = ["query"] + ["%s, ms" % LABELS[t] for t in tabs]
    for mod in mods:
        for ref in refs:
            head.append("%s / %s" % (mod, {"sqlite": "sqlite", INDEX: "indexed", DUCK: "DuckDB"}[ref]))
    if "sqlite" in refs:
        head.append("target / sqlite")
    out = ["", "Column filters and ORDER BY (issue #12), median latency per query in ms; "
           "ratios: against sqlite, the rate ratio (as above), against the indexed table and "
           "DuckDB, their median over the table's (>1× is faster). The target is the issue's, "
           "for both modules against sqlite (no index).", ""]
    out.append("| " + " | ".join(head) + " |")
    out.append("|---" + "|--:" * (len(head) - 1) + "|")
    for w in cols:
        res = w["results"]
        cells = [w["title"]]
        for t in tabs:
            r = res.get(t)
            cells.append(fmt_ms(r.get("median_s")) + ("\\*" if r and partial(r) else "") if r else "-")
        for mod in mods:
            for ref in refs:
                a, b = res.get(mod), res.get(ref)
                if ref == "sqlite":
                    cells.append(fmt_ratio(ratio(w, mod)))
                elif a and b and a.get("median_s") and b.get("median_s"):
                    cells.append(fmt_ratio(b["median_s"] / a["median_s"]))
                else:
                    cells.append("-")
        if "sqlite" in refs:
            tg = TARGETS.get(w["name"])
            cells.append("≥ %d×" % tg if tg else "≥ 1×")
        out.append("| " + " | ".join(cells) + " |")
    ins = next((w for w in d["workloads"] if w["name"] == "insert_random"), None)
    if ins and INDEX in ins["results"]:
        r = ins["results"]
        parts = []
        for mod in mods:
            if mod in r and r[INDEX].get("rate") and r[mod].get("rate"):
                parts.append("%s %s rows/s, %s the indexed table's"
                             % (mod, fmt_rate(r[mod]["rate"]), fmt_ratio(r[mod]["rate"] / r[INDEX]["rate"])))
        out.append("")
        out.append("Bulk insert of the N rows in random key order, one transaction, into the "
                   "ordinary table carrying indexes on v, r and s: %s rows/s; %s (target ≥ 5×)."
                   % (fmt_rate(r[INDEX].get("rate")), "; ".join(parts) or "-"))
    return out


def fmt_per_row(x):
    return "n/a" if x is None else "%.1f" % x


def footprint_md(d):
    """The footprint table of one run (empty if it has none)."""
    fp = d.get("footprint")
    if not fp or not fp.get("tables"):
        return []
    tt = fp["tables"]
    tabs = [t for t in TABLES if t in tt]
    out = ["", "Footprint, %s rows, each table loaded fresh after a reopen by its first "
           "query (ordinary tables then read in full through their cache); file: %s. "
           "Ratios: the table's / sqlite's (<1× is leaner)."
           % ("{:,}".format(fp.get("rows", 0)),
              "pages of the table's b-trees by dbstat" if fp.get("file_method") == "dbstat"
              else "not measured"), ""]
    rats = [t for t in tabs if t != "sqlite"] if "sqlite" in tt else []
    out.append("| | " + " | ".join(LABELS[t] for t in tabs) + "".join(
        " | %s / sqlite" % LABELS[t] for t in rats) + " |")
    out.append("|---|" + "--:|" * (len(tabs) + len(rats)))
    rows = [("first `SELECT v WHERE k=?` after reopening, ms",
             {t: (tt[t].get("first_answer_s") or 0) * 1e3 for t in tabs}, False)]
    rows += [(title, {t: tt[t].get(key) for t in tabs}, True) for key, title in FOOTPRINT]
    for title, vals, bytes_ in rows:
        cells = [fmt_per_row(vals[t]) if bytes_ else "%.3g" % vals[t] for t in tabs]
        rc = []
        for t in rats:
            s, x = vals.get("sqlite"), vals.get(t)
            rc.append(fmt_ratio(x / s) if s and x is not None and bytes_ else
                      (fmt_ratio(x / s) if s and x else "-"))
        out.append("| %s | %s |" % (title, " | ".join(cells + rc)))
    return out


def footprint_chart(runs, outdir, plt):
    """Bytes per row of each table: process memory, GPU memory, file."""
    keys = (("rss_bytes_per_row", "process memory (RSS)"),
            ("gpu_bytes_per_row", "GPU memory"),
            ("file_bytes_per_row", "database file"))
    bars = []            # (label, [value per key])
    for d in runs:
        tt = (d.get("footprint") or {}).get("tables") or {}
        for t in TABLES:
            if t in tt:
                lab = LABELS[t] if len(runs) == 1 else "%s — %s" % (LABELS[t], run_label(d, short=True))
                bars.append((lab, [tt[t].get(k) for k, _ in keys]))
    if not bars:
        return None
    fig, ax = plt.subplots(figsize=(10, 3 + 0.3 * len(bars)))
    k = len(bars)
    w = 0.8 / k
    for j, (lab, vals) in enumerate(bars):
        ys = [i + (j - (k - 1) / 2) * w for i in range(len(keys))]
        xs = [v if v is not None else 0 for v in vals]
        ax.barh(ys, xs, height=w * 0.9, label=lab)
        for y, v in zip(ys, vals):
            ax.text((v or 0) + 1, y, "n/a" if v is None else "%.0f" % v, va="center", fontsize=7)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([t for _, t in keys], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bytes per row (n/a: no GPU / not measured)")
    ax.set_title("sqlbench footprint: " + "; ".join(run_label(d) for d in runs), fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(outdir, "sqlbench_bytes_per_row.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def charts(runs, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_sqlbench: matplotlib not available: no charts "
              "(apt-get install python3-matplotlib)", file=sys.stderr)
        return []
    os.makedirs(outdir, exist_ok=True)
    order, titles, groups = [], {}, {}
    for d in runs:
        for w in d["workloads"]:
            if w["name"] not in titles:
                order.append(w["name"])
                titles[w["name"]] = w["title"]
                groups.setdefault(w["group"], []).append(w["name"])
    series = []          # (label, {workload: ratio})
    for i, d in enumerate(runs):
        for mod in MODULES + (FLOOR, INDEX, DUCK, DEFAULT):
            vals = {}
            for w in d["workloads"]:
                x = ratio(w, mod)
                if x is not None and x > 0:
                    vals[w["name"]] = x
            if vals:
                label = LABELS[mod] if len(runs) == 1 else "%s — %s" % (LABELS[mod], run_label(d, short=True))
                series.append((label, vals))
    if not series:
        print("plot_sqlbench: no ratios to plot (was the sqlite table run?)", file=sys.stderr)
        return []
    written = []

    def one(names, fname, title):
        n, k = len(names), len(series)
        height = max(2.5, 0.32 * n * max(k, 2) + 1.2)
        fig, ax = plt.subplots(figsize=(10, height))
        bar = 0.8 / k
        allv = [v for _, vals in series for nm, v in vals.items() if nm in names]
        for j, (label, vals) in enumerate(series):
            ys, xs = [], []
            for i, nm in enumerate(names):
                if nm in vals:
                    ys.append(i + (j - (k - 1) / 2) * bar)
                    xs.append(vals[nm])
            bars = ax.barh(ys, xs, height=bar * 0.9, label=label)
            for y, x in zip(ys, xs):
                ax.text(x * 1.05, y, fmt_ratio(x), va="center", fontsize=7)
            del bars
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=0.8)
        lo = min(allv) if allv else 0.1
        hi = max(allv) if allv else 10
        ax.set_xlim(min(lo / 2, 0.5), max(hi * 3, 2))
        ax.set_yticks(range(n))
        ax.set_yticklabels([titles[nm] for nm in names], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("rate / rate on the ordinary SQLite table%s (log scale; >1 = faster)"
                      % (", tuned cache" if all(d["meta"].get("baseline") in ("both", "tuned")
                                                for d in runs) else ""))
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(axis="x", which="both", alpha=0.3)
        fig.tight_layout()
        path = os.path.join(outdir, fname)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)

    head = "sqlbench: " + "; ".join(run_label(d) for d in runs)
    one(order, "sqlbench_ratios.png", head)
    for grp, names in groups.items():
        one(names, "sqlbench_%s.png" % grp, "%s — %s" % (head, grp))
    p = footprint_chart(runs, outdir, plt)
    if p:
        written.append(p)
    p = column_chart(runs, outdir, plt)
    if p:
        written.append(p)
    return written


def column_chart(runs, outdir, plt):
    """Median latency (ms, log scale) of the column workloads on every table."""
    bars = []            # (label, {workload: seconds})
    names, titles = [], {}
    for d in runs:
        for w in d["workloads"]:
            if w.get("group") == "column" and w["name"] not in titles:
                names.append(w["name"])
                titles[w["name"]] = w["title"]
        for t in (x for x in TABLES if x != DEFAULT):
            vals = {w["name"]: w["results"][t]["median_s"] for w in d["workloads"]
                    if w.get("group") == "column" and t in w["results"]
                    and w["results"][t].get("median_s")}
            if vals:
                bars.append((LABELS[t] if len(runs) == 1 else "%s — %s" % (LABELS[t], run_label(d, short=True)),
                             vals))
    if not bars:
        return None
    n, k = len(names), len(bars)
    fig, ax = plt.subplots(figsize=(10, max(3, 0.3 * n * k + 1.5)))
    bw = 0.8 / k
    for j, (lab, vals) in enumerate(bars):
        ys = [i + (j - (k - 1) / 2) * bw for i, nm in enumerate(names) if nm in vals]
        xs = [vals[nm] * 1e3 for nm in names if nm in vals]
        ax.barh(ys, xs, height=bw * 0.9, label=lab)
        for y, x in zip(ys, xs):
            ax.text(x * 1.08, y, "%.3g" % x, va="center", fontsize=6)
    ax.set_xscale("log")
    ax.set_yticks(range(n))
    ax.set_yticklabels([titles[nm] for nm in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("median latency per query, ms (log scale; shorter = faster)")
    ax.set_title("sqlbench column filters: " + "; ".join(run_label(d) for d in runs), fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(outdir, "sqlbench_column_latency.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+", help="sqlbench --json output file(s)")
    ap.add_argument("-o", "--out-dir", default=".",
                    help="directory for the PNG charts (default: .)")
    ap.add_argument("--md", help="write the markdown table here instead of stdout")
    ap.add_argument("--no-charts", action="store_true", help="markdown only")
    a = ap.parse_args()
    runs = [load(p) for p in a.json]
    md = markdown(runs)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
        print("plot_sqlbench: wrote %s" % a.md, file=sys.stderr)
    else:
        sys.stdout.write(md)
    if not a.no_charts:
        for p in charts(runs, a.out_dir):
            print("plot_sqlbench: wrote %s" % p, file=sys.stderr)


if __name__ == "__main__":
    main()
