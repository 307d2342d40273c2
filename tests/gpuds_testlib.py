"""Pieces the SQL-level tests share: the extension's path, a tally of checks
that prints "N passed, M failed", and a connection with gpuds loaded."""
import os
import sqlite3

EXT = os.path.abspath(os.environ["GPUDS_EXT"]) if os.environ.get("GPUDS_EXT") else ""


class Tally:
    """Counts checks; a failed one prints FAIL and its detail."""
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s %s" % (what, str(detail)[:1500]))
        return ok

    def finish(self):
        """Print the closing line; the exit status (1 if anything failed)."""
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0


def connect(path, timeout=5.0):
    """A connection to path in autocommit mode with gpuds loaded."""
    c = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    c.enable_load_extension(True)
    c.load_extension(EXT)
    c.enable_load_extension(False)
    return c
