#!/usr/bin/python3
"""How users install gpuds, tried for real:

  pip    `pip install .` of this checkout into a fresh virtual environment
         (host-only build, GPUDS_CUDA=OFF, to keep the test quick), then
         gpuds.load(conn) and a query through it, from that environment;
  cmake  `cmake --install` of the build into a temporary prefix, then a
         client loads it by its short name, load_extension('gpuds') (what
         `.load gpuds` does), with the prefix's lib folder on LD_LIBRARY_PATH
         (where ldconfig would put a system install).

GPUDS_EXT names build/gpuds.so (its folder is the build).  Exit 77 (SKIPPED)
only where a tool is missing (no venv module, no sqlite3 shell, no package
index to fetch the build backend from, as on the GPU machine); a failed
install or query fails.  The last line is "N passed, M failed".
"""
import os
import shutil
import subprocess
import sys
import tempfile

from gpuds_testlib import EXT, Tally

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T = Tally()
check = T.check
skipped = 0


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def pip_case(tmp):
    global skipped
    venv = os.path.join(tmp, "venv")
    r = run([sys.executable, "-m", "venv", venv])
    if r.returncode != 0:
        print("SKIP pip: no venv module (%s)" % r.stderr.strip()[-200:])
        skipped += 1
        return
    py = os.path.join(venv, "bin", "python")
    r = run([py, "-m", "pip", "install", "-q", ROOT,
             "--config-settings=cmake.define.GPUDS_CUDA=OFF",
             "--config-settings=build-dir=" + os.path.join(tmp, "pipbuild")])
    if r.returncode != 0 and "scikit-build-core" in r.stderr and (
            "Failed to establish a new connection" in r.stderr or "No matching distribution" in r.stderr):
        # the build backend cannot be fetched: a machine with no package index
        print("SKIP pip: scikit-build-core cannot be fetched here (no package index)")
        skipped += 1
        return
    if not check(r.returncode == 0, "pip install . into a fresh venv", r.stdout[-2000:] + r.stderr[-3000:]):
        return
    script = ("import json, sqlite3, gpuds\n"
              "c = sqlite3.connect(':memory:')\n"
              "gpuds.load(c)\n"
              "c.execute('CREATE VIRTUAL TABLE t USING gfsl(k INTEGER PRIMARY KEY, v)')\n"
              "c.execute('INSERT INTO t VALUES(1, 10), (2, 20)')\n"
              "print(c.execute('SELECT sum(v) FROM t WHERE k >= 1').fetchone()[0])\n"
              "print(json.loads(c.execute('SELECT gpuds_info()').fetchone()[0])['version'])\n"
              "print(gpuds.loadable_path())\n")
    r = run([py, "-c", script], cwd=tmp)
    out = r.stdout.split()
    check(r.returncode == 0 and out[:1] == ["30"], "gpuds.load(conn) answers a query", r.stdout + r.stderr)
    check(len(out) == 3 and out[2].startswith(venv), "loadable_path() is inside the environment", out)


def cmake_case(tmp):
    global skipped
    prefix = os.path.join(tmp, "prefix")
    r = run(["cmake", "--install", os.path.dirname(os.path.abspath(EXT)), "--prefix", prefix])
    if not check(r.returncode == 0, "cmake --install", r.stdout + r.stderr):
        return
    libs = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs if f == "gpuds.so"]
    if not check(len(libs) == 1, "cmake --install puts gpuds.so under <prefix>/lib*", libs):
        return
    # the short name, as `.load gpuds` gives it: through load_extension() in a
    # process whose library path holds the folder (the sqlite3 shell of some
    # machines is a wrapper script that replaces LD_LIBRARY_PATH)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(libs[0]))
    script = ("import sqlite3\n"
              "c = sqlite3.connect(':memory:')\n"
              "c.enable_load_extension(True)\n"
              "c.load_extension('gpuds')\n"
              "print(c.execute(\"SELECT json_extract(gpuds_info(), '$.version') IS NOT NULL\").fetchone()[0])\n")
    r = run([sys.executable, "-c", script], env=env, cwd=tmp)
    check(r.returncode == 0 and r.stdout.strip() == "1", "load_extension('gpuds') by its short name",
          r.stdout + r.stderr)


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    tmp = tempfile.mkdtemp(prefix="gpuds_install_")
    try:
        pip_case(tmp)
        cmake_case(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rc = T.finish()
    return 77 if rc == 0 and T.passed == 0 else rc


if __name__ == "__main__":
    sys.exit(main())
