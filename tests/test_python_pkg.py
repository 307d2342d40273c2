#!/usr/bin/python3
"""The Python package (python/gpuds) from a checkout, without pip: its
__init__.py beside a copy of the built gpuds.so in a temporary folder.

  load     gpuds.load(conn) loads the extension into a sqlite3 connection
           and leaves extension loading off afterwards; loadable_path()
           names the copy;
  no-ext   where Python's sqlite3 cannot load extensions (built without
           them, as pyenv's and some macOS builds are: its Connection has no
           enable_load_extension), gpuds.load raises gpuds.LoadError saying
           why and what to use instead, not an AttributeError: with a
           connection that lacks the method here, and with every python3 on
           PATH or under ~/.pyenv whose sqlite3 is built that way (skipped
           where there is none).

The last line is "N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import glob
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from gpuds_testlib import EXT, Tally

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T = Tally()
check = T.check

# Run in the Python under test with the package's folder first on sys.path:
# load() on a connection, or on an object without enable_load_extension.
PROBE = r"""
import sqlite3, sys
sys.path.insert(0, sys.argv[1])
import gpuds
conn = sqlite3.connect(":memory:") if sys.argv[2] == "real" else object()
try:
    gpuds.load(conn)
except gpuds.LoadError as e:
    print("LoadError: " + str(e))
except Exception as e:
    print("other: %s: %s" % (type(e).__name__, e))
else:
    print("loaded " + conn.execute("SELECT gpuds_version()").fetchone()[0])
"""


def package(tmp):
    """The package in tmp/pkg/gpuds with the built extension in it."""
    pkg = os.path.join(tmp, "pkg", "gpuds")
    os.makedirs(pkg)
    shutil.copy(os.path.join(ROOT, "python", "gpuds", "__init__.py"), pkg)
    shutil.copy(EXT if EXT.endswith(".so") else EXT + ".so", os.path.join(pkg, "gpuds.so"))
    return os.path.dirname(pkg)


def explains(text):
    """True when LoadError's message says why and what to use instead."""
    return (text.startswith("LoadError: gpuds.load: the sqlite3 module of this Python")
            and "cannot load SQLite extensions" in text and "enable_load_extension" in text
            and "/usr/bin/python3" in text and "--enable-loadable-sqlite-extensions" in text
            and "apsw" in text and ".load " in text)


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    tmp = tempfile.mkdtemp(prefix="gpuds_pkg_")
    try:
        where = package(tmp)
        sys.path.insert(0, where)
        import gpuds
        conn = sqlite3.connect(":memory:")
        gpuds.load(conn)
        v = conn.execute("SELECT gpuds_version()").fetchone()[0]
        check(bool(v), "gpuds.load(conn) loads the extension", v)
        check(gpuds.loadable_path() == os.path.join(where, "gpuds", "gpuds"),
              "loadable_path() names the package's copy", gpuds.loadable_path())
        try:
            conn.execute("SELECT load_extension(?)", (gpuds.loadable_path(),)).fetchall()
            check(False, "extension loading is off again after gpuds.load")
        except sqlite3.OperationalError as e:
            check("not authorized" in str(e), "extension loading is off again after gpuds.load", str(e))
        # a connection without enable_load_extension, in this Python
        r = subprocess.run([sys.executable, "-c", PROBE, where, "fake"],
                           capture_output=True, text=True, timeout=120)
        check(explains(r.stdout.strip()), "no enable_load_extension: LoadError says why and what instead",
              r.stdout + r.stderr)
        # Pythons built without extension loading, as they are found here
        seen, found = set(), 0
        cands = [shutil.which("python3")] + sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3*/bin/python3")))
        for py in cands:
            if not py or os.path.realpath(py) in seen:
                continue
            seen.add(os.path.realpath(py))
            r = subprocess.run([py, "-c", "import sqlite3, sys; sys.exit(0 if hasattr("
                                "sqlite3.Connection, 'enable_load_extension') else 3)"],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 3:
                continue
            found += 1
            r = subprocess.run([py, "-c", PROBE, where, "real"], capture_output=True, text=True, timeout=120)
            check(explains(r.stdout.strip()),
                  "%s (sqlite3 without extension loading): gpuds.load raises LoadError" % py,
                  r.stdout + r.stderr)
        if found == 0:
            print("SKIP no python3 here whose sqlite3 lacks extension loading")
        else:
            print("%d Python(s) without extension loading tried" % found)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
