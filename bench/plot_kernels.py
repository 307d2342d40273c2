#!/usr/bin/env python3
"""Plots of the kernel benchmarks' CSV output, like Fig. 9/10 of the GFSL
paper: throughput against key range (GFSL) or table size (hash), one line
per workload, log-scaled axes.

    python3 bench/plot_kernels.py --gfsl bench/results/bench_gfsl-h200.csv \
        --hash bench/results/bench_hash-h200.csv -o bench/results [--title T]

Needs matplotlib (Debian: python3-matplotlib).  Reads only what the
benchmarks wrote; every point is a measured figure.
"""
import argparse
import csv
import os
import sys
from collections import defaultdict


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_gfsl(path):
    """bench_gfsl's CSV: workload,range,ops,seconds,rate_per_s,unit, where the
    workload name itself may hold commas (mix[10,10,80]), unquoted: split
    from the right."""
    rows = []
    with open(path) as f:
        names = f.readline().strip().split(",")
        for line in f:
            parts = line.strip().rsplit(",", len(names) - 1)
            if len(parts) == len(names):
                parts[0] = parts[0].strip('"')     # quoted by later versions
                rows.append(dict(zip(names, parts)))
    return rows


def draw_lines(ax, series, order=sorted, xmap=lambda x: x):
    """One line per series name: its (x, y) points sorted by x."""
    for name in order(series):
        pts = sorted(series[name])
        ax.plot([xmap(p[0]) for p in pts], [p[1] for p in pts], marker="o", label=name)


def save(fig, out, name):
    """Write the figure to out/name; return the path."""
    fig.tight_layout()
    path = os.path.join(out, name)
    fig.savefig(path, dpi=120)
    return path


def plot_gfsl(rows, out, title, plt):
    """Mops/s against key range for the mixes and the single-op workloads."""
    series = defaultdict(list)
    for r in rows:
        w = r["workload"]
        if w.startswith("mix[") or w in ("insert-only", "delete-only", "contains-only"):
            series[w].append((int(r["range"]), float(r["rate_per_s"]) / 1e6))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    draw_lines(ax, series, order=lambda d: sorted(d, key=lambda s: (not s.startswith("mix"), s)))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("key range (prefilled to half)")
    ax.set_ylabel("M operations / s")
    ax.set_title(title + ": GFSL, batches of 10M device-resident operations")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out, "bench_gfsl.png")


def plot_hash(rows, out, title, plt):
    """G ops/s against table size, one panel per load factor."""
    loads = sorted({r["load_target"] for r in rows if r["load_target"] not in ("0.00",)})
    fig, axes = plt.subplots(1, len(loads), figsize=(6 * len(loads), 4.5), squeeze=False)
    for ax, load in zip(axes[0], loads):
        series = defaultdict(list)
        for r in rows:
            if r["load_target"] != load:
                continue
            series[r["op"]].append((int(r["log2n"]), float(r["gops"])))
        draw_lines(ax, series, xmap=lambda lg: 2 ** lg)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("keys in the table")
        ax.set_ylabel("G operations / s")
        ax.set_title("%s: GPU hash, load %s" % (title, load))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return save(fig, out, "bench_hash.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gfsl", help="bench_gfsl CSV")
    ap.add_argument("--hash", help="bench_hash CSV")
    ap.add_argument("-o", "--out", default=".", help="directory for the PNGs")
    ap.add_argument("--title", default="NVIDIA H200")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_kernels: matplotlib is needed (apt-get install python3-matplotlib)")
    os.makedirs(a.out, exist_ok=True)
    if a.gfsl:
        print("plot_kernels: wrote", plot_gfsl(read_gfsl(a.gfsl), a.out, a.title, plt))
    if a.hash:
        print("plot_kernels: wrote", plot_hash(read_rows(a.hash), a.out, a.title, plt))


if __name__ == "__main__":
    main()
