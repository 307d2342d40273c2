#!/usr/bin/python3
"""How users install gpuds, tried for real:

  pip    `pip install .` of this checkout into a fresh virtual environment
         (host-only build, GPUDS_CUDA=OFF, to keep the test quick), then
         gpuds.load(conn) and a query through it, from that environment; the
         wheel is tagged py3-none-<platform> (no Python extension module in
         it) and its version is gpuds_version()'s;
  cmake  the project's default install directory (a fresh configure) is one
         the dynamic loader searches with no setting (`ld.so
         --list-diagnostics`, or `ld.so --help`), so that `.load gpuds`
         finds gpuds.so there as it finds Debian's mod_spatialite; then
         `DESTDIR=... cmake --install` of the build, the copy loaded by its
         absolute path (without the suffix, as `.load` takes it) through
         Python and the sqlite3 shell, and by its short name, `.load gpuds`,
         from that folder.

GPUDS_EXT names build/gpuds.so (its folder is the build).  Exit 77 (SKIPPED)
only where a tool is missing (no venv module, no sqlite3 shell, no package
index to fetch the build backend from, as on the GPU machine); a failed
install or query fails.  The last line is "N passed, M failed".
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from gpuds_testlib import EXT, Tally, project_version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T = Tally()
check = T.check
skipped = 0


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def cache_value(build, name):
    """A value of CMakeCache.txt in folder build, or None."""
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return None


def loader_dirs():
    """The folders the dynamic loader searches for a name without a slash
    when neither LD_LIBRARY_PATH nor its cache has it, or None where ld.so
    cannot say."""
    ldso = shutil.which("ld.so")
    if not ldso:
        return None
    r = run([ldso, "--list-diagnostics"])
    dirs = re.findall(r'^path\.system_dirs\[0x[0-9a-f]+\]="([^"]*)"', r.stdout, re.M)
    if not dirs:
        r = run([ldso, "--help"])
        dirs = re.findall(r"^\s+(/\S*) \(system search path\)", r.stdout, re.M)
    return [os.path.normpath(d) for d in dirs] or None


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
    check(out[1:2] == [project_version()], "the package's gpuds.so is this version", out)
    wheel = glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "gpuds-*.dist-info", "WHEEL"))
    if check(len(wheel) == 1, "the installed package has its WHEEL file", wheel):
        with open(wheel[0]) as f:
            tags = re.findall(r"^Tag: (\S+)", f.read(), re.M)
        check(len(tags) == 1 and tags[0].startswith("py3-none-") and tags[0] != "py3-none-any",
              "the wheel is tagged py3-none-<platform>", tags)
        check(os.path.basename(os.path.dirname(wheel[0])) == "gpuds-%s.dist-info" % project_version(),
              "the package's version is CMakeLists.txt's", wheel[0])


def cmake_case(tmp):
    global skipped
    build = os.path.dirname(os.path.abspath(EXT))
    # the project's default install folder, from a fresh configure
    cfg = os.path.join(tmp, "cfg")
    r = run(["cmake", "-S", ROOT, "-B", cfg, "-DGPUDS_CUDA=OFF"])
    if not check(r.returncode == 0, "a fresh configure", r.stdout[-2000:] + r.stderr[-2000:]):
        return
    default_dir = os.path.normpath(os.path.join(cache_value(cfg, "CMAKE_INSTALL_PREFIX"),
                                                cache_value(cfg, "CMAKE_INSTALL_LIBDIR")))
    dirs = loader_dirs()
    if dirs is None:
        print("SKIP cmake: ld.so cannot list its default folders here")
        skipped += 1
    else:
        check(default_dir in dirs, "cmake --install's default folder %s is one the loader searches "
              "with no setting (%s)" % (default_dir, ", ".join(dirs)), default_dir)
    # the real install, into DESTDIR
    dest = os.path.join(tmp, "dest")
    r = run(["cmake", "--install", build], env=dict(os.environ, DESTDIR=dest))
    if not check(r.returncode == 0, "DESTDIR=... cmake --install", r.stdout + r.stderr):
        return
    libs = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "gpuds.so"]
    if not check(len(libs) == 1, "cmake --install installs one gpuds.so", libs):
        return
    installed = os.path.dirname(libs[0])[len(dest):]
    build_dir = os.path.normpath(os.path.join(cache_value(build, "CMAKE_INSTALL_PREFIX"),
                                              cache_value(build, "CMAKE_INSTALL_LIBDIR")))
    check(installed == build_dir, "gpuds.so lands in <prefix>/<libdir>", (installed, build_dir))
    if build_dir == default_dir and dirs is not None:
        check(installed in dirs, "installed where `.load gpuds` finds it with no setting", installed)
    want = project_version()
    script = ("import sqlite3, sys\n"
              "c = sqlite3.connect(':memory:')\n"
              "c.enable_load_extension(True)\n"
              "c.load_extension(sys.argv[1])\n"
              "print(c.execute('SELECT gpuds_version()').fetchone()[0])\n")
    path = libs[0][:-len(".so")]
    r = run([sys.executable, "-c", script, path], cwd=tmp)
    check(r.returncode == 0 and r.stdout.strip() == want, "the installed copy loads by its path",
          r.stdout + r.stderr)
    # the short name, as `.load gpuds` gives it, from the folder it is in (a
    # process whose library path holds it: the sqlite3 shell of some
    # machines is a wrapper script that replaces LD_LIBRARY_PATH)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(libs[0]))
    r = run([sys.executable, "-c", script, "gpuds"], env=env, cwd=tmp)
    check(r.returncode == 0 and r.stdout.strip() == want, "load_extension('gpuds') by its short name",
          r.stdout + r.stderr)
    shell = shutil.which("sqlite3")
    if shell is None:
        print("SKIP cmake: no sqlite3 shell")
        skipped += 1
        return
    r = run([shell, ":memory:", ".load " + path, "SELECT gpuds_version();"], cwd=tmp)
    check(r.returncode == 0 and r.stdout.strip() == want, "the sqlite3 shell: .load <installed path>",
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
