"""gpuds: GPU data structures behind ordinary SQL, as a SQLite extension.

    import sqlite3, gpuds
    conn = sqlite3.connect("my.db")
    gpuds.load(conn)
    conn.execute("CREATE VIRTUAL TABLE t USING gfsl(k INTEGER PRIMARY KEY, v)")

The package holds the compiled extension (gpuds.so); loadable_path() names it
for any client that loads SQLite extensions by path.
"""
import os

__all__ = ["loadable_path", "load"]


def loadable_path():
    """The path of the gpuds extension without its file suffix, as
    sqlite3_load_extension() and Connection.load_extension() take it."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpuds")


def load(conn):
    """Load gpuds into the sqlite3 connection conn (extension loading is
    enabled for the call and disabled again)."""
    conn.enable_load_extension(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)
