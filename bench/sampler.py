#!/usr/bin/env python3
"""Read the samples of bench/sampler.c (see its header for the workflow).

  sampler.py resolve OUT          one line a sample: seconds, function, caller
                                  (addr2line on the machine that ran it, since
                                  the libraries must be the same files)
  sampler.py bins OUT.sym [W]     the top functions of each W-second slice
                                  (default 0.5): find a phase's window
  sampler.py top OUT.sym T0 T1 [N]  the N functions (default 30) with most
                                  samples in [T0, T1), and the top
                                  function <- caller pairs

Names come from each object's symbol table; a stripped library's static
functions take the name of the nearest symbol it exports (or 'lib.so?'),
so compare such names between runs, not with the source.
"""
import bisect
import collections
import signal
import subprocess
import sys


def resolve(out):
    maps = set()
    for line in open(out + ".maps"):
        f = line.split()
        if len(f) < 6 or "x" not in f[1]:
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.add((lo, hi, int(f[2], 16), f[5]))
    maps = sorted(maps)
    starts = [m[0] for m in maps]

    def where(pc):
        i = bisect.bisect_right(starts, pc) - 1
        if i < 0 or pc >= maps[i][1]:
            return None
        lo, _, off, path = maps[i]
        return path, pc - lo + off

    raw = [line.split() for line in open(out)]
    wanted = collections.defaultdict(set)
    for pc, ret, _ in raw:
        for x in (int(pc, 16), int(ret, 16)):
            w = where(x)
            if w:
                wanted[w[0]].add(w[1])
    names = {}
    for path, offs in wanted.items():
        offs = sorted(offs)
        try:
            res = subprocess.run(["addr2line", "-f", "-e", path] + [hex(o) for o in offs],
                                 capture_output=True, text=True).stdout.split("\n")
        except OSError:
            res = []
        for j, o in enumerate(offs):
            fn = res[2 * j] if 2 * j < len(res) else "??"
            names[(path, o)] = fn if fn != "??" else path.rsplit("/", 1)[-1] + "?"

    def name(x):
        if x == 0:
            return "-"
        w = where(x)
        return names.get(w, "?") if w else "[kernel]"

    for pc, ret, t in raw:
        print(t, name(int(pc, 16)), name(int(ret, 16)), sep="\t")


def load(sym):
    rows = []
    for line in open(sym):
        t, fn, caller = line.rstrip("\n").split("\t")
        rows.append((float(t), fn, caller))
    return rows


def bins(sym, width):
    per = collections.defaultdict(collections.Counter)
    for t, fn, _ in load(sym):
        per[round(int(t / width) * width, 3)][fn] += 1
    for b in sorted(per):
        c = per[b]
        print(b, sum(c.values()), " | ".join("%s %d" % kv for kv in c.most_common(4)))


def top(sym, t0, t1, n):
    sel = [(fn, caller) for t, fn, caller in load(sym) if t0 <= t < t1]
    if not sel:
        print("no samples in [%g, %g)" % (t0, t1))
        return
    print("%d samples in [%g, %g)" % (len(sel), t0, t1))
    for fn, k in collections.Counter(fn for fn, _ in sel).most_common(n):
        print("%5.1f%% %s" % (100.0 * k / len(sel), fn))
    print("-- function <- caller")
    for (fn, caller), k in collections.Counter(sel).most_common(20):
        print("%5.1f%% %s <- %s" % (100.0 * k / len(sel), fn, caller))


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet under | head
    if len(argv) >= 3 and argv[1] == "resolve":
        resolve(argv[2])
    elif len(argv) >= 3 and argv[1] == "bins":
        bins(argv[2], float(argv[3]) if len(argv) > 3 else 0.5)
    elif len(argv) >= 5 and argv[1] == "top":
        top(argv[2], float(argv[3]), float(argv[4]), int(argv[5]) if len(argv) > 5 else 30)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
