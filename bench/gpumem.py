#!/usr/bin/env python3
"""Throughput under a GPU memory cap (GPUDS_GPU_MEMORY) against the uncapped
run, side by side: sqlbench twice on the same rows and queries.

1. sqlbench without a cap: the point, range and column workloads (and the
   load that always comes first), every answer checked against the
   ordinary table.  What the tables need of the GPU is gpuds_info()'s
   gpu_memory.held at its end (stores, column sets and the workspaces they
   keep; the peak is printed too).
2. sqlbench again with GPUDS_GPU_MEMORY at --fraction (default 0.5) of
   that: the parts that do not fit live on the host.
3. Per workload and table: both rates and their ratio; then where each
   part of each table lived in the capped run and why.

    python3 bench/gpumem.py --sqlbench build/sqlbench --ext build/gpuds \\
        --rows 10000000 --queries 100000 --budget 2 [--fraction 0.5]
        [--only point,range,column] [--json out.json] [--md out.md]

Options after "--" go to both sqlbench runs as they are.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def sqlbench(args, extra, cap, path):
    """Run sqlbench once (cap: GPUDS_GPU_MEMORY, None: unset); its JSON."""
    env = dict(os.environ)
    env.pop("GPUDS_GPU_MEMORY", None)
    if cap is not None:
        env["GPUDS_GPU_MEMORY"] = str(cap)
    cmd = [args.sqlbench, "--ext", args.ext, "--rows", str(args.rows),
           "--queries", str(args.queries), "--budget", str(args.budget),
           "--only", args.only, "--tables", "sqlite,gfsl,gpuhash",
           "--baseline", "tuned", "--json", path] + extra
    print("$ %s%s" % ("GPUDS_GPU_MEMORY=%s " % cap if cap is not None else "", " ".join(cmd)),
          file=sys.stderr, flush=True)
    r = subprocess.run(cmd, env=env)
    if r.returncode != 0:
        sys.exit("sqlbench failed (status %d)%s" % (r.returncode, " under the cap" if cap else ""))
    with open(path) as f:
        return json.load(f)


def mib(n):
    return "%.1f MiB" % (n / 1048576.0)


def rates(run):
    """{(workload, table): (rate, unit)}."""
    out = {}
    for w in run["workloads"]:
        for t, r in w["results"].items():
            if r.get("rate") is not None:
                out[(w["name"], t)] = (r["rate"], w["unit"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sqlbench", default="build/sqlbench")
    ap.add_argument("--ext", default="build/gpuds")
    ap.add_argument("--rows", type=int, default=10000000)
    ap.add_argument("--queries", type=int, default=100000)
    ap.add_argument("--budget", type=float, default=2)
    ap.add_argument("--fraction", type=float, default=0.5)
    ap.add_argument("--only", default="point,range,column")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args, extra = ap.parse_known_args()
    extra = [x for x in extra if x != "--"]
    with tempfile.TemporaryDirectory() as d:
        base = sqlbench(args, extra, None, os.path.join(d, "base.json"))
        info = base["meta"].get("gpuds_info_end") or {}
        if info.get("backend") != "cuda":
            sys.exit("the uncapped run used the %s backend: no GPU to cap" % info.get("backend"))
        mem = info["gpu_memory"]
        need = mem["held"]
        cap = int(need * args.fraction)
        capped = sqlbench(args, extra, cap, os.path.join(d, "capped.json"))
    rb, rc = rates(base), rates(capped)
    lines = []
    lines.append("# Throughput under GPUDS_GPU_MEMORY=%d (%.2f of what the tables need) against no cap"
                 % (cap, args.fraction))
    lines.append("")
    lines.append("%s, %d rows, %d queries, budget %g s; %s" % (
        base["meta"]["device"], args.rows, args.queries, args.budget, " ".join(sys.argv)))
    lines.append("The tables need %s of GPU memory at the end of the uncapped run (peak %s); cap %s."
                 % (mib(need), mib(mem["peak"]), mib(cap)))
    lines.append("")
    lines.append("The ordinary table (sqlite) takes nothing of the GPU: its ratio is the "
                 "run-to-run noise.")
    lines.append("")
    lines.append("| workload | table | no cap | capped | capped / no cap | unit |")
    lines.append("| --- | --- | --: | --: | --: | --- |")
    rows = []
    for (w, t), (r0, unit) in rb.items():
        r1 = rc.get((w, t), (None, unit))[0]
        ratio = r1 / r0 if r1 and r0 else None
        rows.append({"workload": w, "table": t, "rate": r0, "rate_capped": r1,
                     "ratio": ratio, "unit": unit})
        lines.append("| %s | %s | %.4g | %s | %s | %s |" % (
            w, t, r0, "%.4g" % r1 if r1 else "-", "%.2f" % ratio if ratio else "-", unit))
    lines.append("")
    cinfo = capped["meta"].get("gpuds_info_end") or {}
    lines.append("Capped run: gpuds held %s of GPU memory at its end (peak %s); "
                 "allocations refused by the cap: %d." % (
                     mib(cinfo["gpu_memory"]["held"]), mib(cinfo["gpu_memory"]["peak"]),
                     cinfo["gpu_memory"]["refused_by_cap"]))
    lines.append("")
    lines.append("| table | store | column set | why on the host |")
    lines.append("| --- | --- | --- | --- |")
    for t in cinfo.get("tables", []):
        p = t["placement"]
        why = "; ".join("%s: %s" % (k, p[k + "_why"]) for k in ("store", "column_set")
                        if p[k] == "host")
        lines.append("| %s | %s | %s | %s |" % (t["name"], p["store"], p["column_set"], why))
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cap": cap, "fraction": args.fraction, "need": need, "peak": mem["peak"],
                       "device": base["meta"]["device"], "rows": rows,
                       "placement": [{"name": t["name"], **t["placement"]}
                                     for t in cinfo.get("tables", [])],
                       "gpu_memory_capped": cinfo.get("gpu_memory"),
                       "runs": {"uncapped": base, "capped": capped}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
