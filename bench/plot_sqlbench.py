#!/usr/bin/env python3
"""Charts and a README table from sqlbench JSON results.

    plot_sqlbench.py RESULT.json [MORE.json ...] [-o DIR] [--md FILE]

For each run (a JSON file written by `sqlbench --json`), the ratio of every
workload's rate on gfsl and gpuhash to its rate on the ordinary SQLite table
(>1 = faster than SQLite).  Writes:

  DIR/sqlbench_ratios.png        every workload, log scale (needs matplotlib)
  DIR/sqlbench_<group>.png       one chart per workload group
  a markdown table               to stdout, or to FILE with --md

Only the standard library is required; without matplotlib the charts are
skipped (with a note on stderr) and the markdown is still written.
"""
import argparse
import json
import math
import os
import sys

MODULES = ("gfsl", "gpuhash")


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


def partial(r):
    return bool(r.get("queries_planned")) and r.get("queries_run", 0) < r["queries_planned"]


def cell_rate(r):
    if r is None:
        return "-"
    if r.get("timeout"):
        return "timeout"
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
        lines.append("Ratios are the rate on the table over the rate on an ordinary "
                     "SQLite rowid table (>1× is faster).")
        lines.append("")
        lines.append("| workload | unit | sqlite | gfsl | gpuhash | gfsl / sqlite | gpuhash / sqlite |")
        lines.append("|---|---|--:|--:|--:|--:|--:|")
        anypartial = False
        for w in d["workloads"]:
            res = w["results"]
            anypartial |= any(partial(r) for r in res.values())
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                w["title"], w["unit"], cell_rate(res.get("sqlite")),
                cell_rate(res.get("gfsl")), cell_rate(res.get("gpuhash")),
                fmt_ratio(ratio(w, "gfsl")), fmt_ratio(ratio(w, "gpuhash"))))
            if w["name"] == "point":
                for title, vals in latency_rows(w):
                    sq = vals.get("sqlite")
                    cells = ["%.1f" % (vals[t] * 1e6) if t in vals else "-"
                             for t in ("sqlite", "gfsl", "gpuhash")]
                    rat = [fmt_ratio(sq / vals[t]) if sq and t in vals else "-"
                           for t in MODULES]
                    lines.append("| %s | µs | %s | %s | %s | %s | %s |"
                                 % (title.split(": ", 1)[1].replace(" (µs)", ""),
                                    cells[0], cells[1], cells[2], rat[0], rat[1]))
        if anypartial:
            lines.append("")
            lines.append("\\* stopped by the time budget (`--budget`); the rate is "
                         "over the queries run, every answer checked.")
        lines.append("")
        lines.append("Command: `%s`" % m.get("command", "?"))
    else:
        lines.append("sqlbench: rate on gfsl / gpuhash over the rate on an ordinary "
                     "SQLite rowid table (>1× is faster).")
        lines.append("")
        for i, d in enumerate(runs):
            m = d["meta"]
            lines.append("- run %d: %s; %s queries; %s; `%s`"
                         % (i + 1, run_label(d), "{:,}".format(m["queries"]),
                            m.get("date", "?")[:10], m.get("command", "?")))
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
        for mod in MODULES:
            vals = {}
            for w in d["workloads"]:
                x = ratio(w, mod)
                if x is not None and x > 0:
                    vals[w["name"]] = x
            if vals:
                label = mod if len(runs) == 1 else "%s — %s" % (mod, run_label(d, short=True))
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
        ax.set_xlabel("rate / rate on an ordinary SQLite table (log scale; >1 = faster)")
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
    return written


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
