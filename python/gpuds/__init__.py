"""gpuds: GPU data structures behind ordinary SQL, as a SQLite extension.

    import sqlite3, gpuds
    conn = sqlite3.connect("my.db")
    gpuds.load(conn)
    conn.execute("CREATE VIRTUAL TABLE t USING gfsl(k INTEGER PRIMARY KEY, v)")

The package holds the compiled extension (gpuds.so); loadable_path() names it
for any client that loads SQLite extensions by path.
"""
import os
import sys

__all__ = ["loadable_path", "load", "LoadError"]


class LoadError(RuntimeError):
    """gpuds cannot be loaded into the connection given to load()."""


def loadable_path():
    """The path of the gpuds extension without its file suffix, as
    sqlite3_load_extension() and Connection.load_extension() take it."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpuds")


def _no_extensions_message():
    return (
        "gpuds.load: the sqlite3 module of this Python (%s) cannot load SQLite "
        "extensions: it was built without them (its Connection has no "
        "enable_load_extension), as pyenv's and some macOS builds of Python are. "
        "Use a Python whose sqlite3 can: the system's /usr/bin/python3 on "
        "Debian and Ubuntu, Homebrew's on macOS, or this version rebuilt with "
        "PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions pyenv install "
        "<version>; or the apsw package, whose connections gpuds.load also "
        "takes; or the sqlite3 shell: .load %s" % (sys.executable, loadable_path()))


def load(conn):
    """Load gpuds into the connection conn (sqlite3's, or apsw's): extension
    loading is enabled for the call and disabled again.  Raises LoadError
    where the connection cannot load extensions at all."""
    if not hasattr(conn, "enable_load_extension"):
        raise LoadError(_no_extensions_message())
    conn.enable_load_extension(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)
