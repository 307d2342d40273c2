#!/usr/bin/python3
"""What gpuds shows people: gpuds_version(), gpuds_info('t') and the plan
text of EXPLAIN QUERY PLAN.

  version  gpuds_version() is the project version of CMakeLists.txt, the one
           place it is defined, and gpuds_info()'s JSON says the same;
  info     gpuds_info('t') describes table t in a few lines (module, rows,
           load state, store, mirror, column set, uncommitted writes) for
           each module, before and after its column set is built, inside a
           transaction and after reopening; an unknown table is an error;
  plans    EXPLAIN QUERY PLAN reads as words with the table's column names
           (never the plan's internal encoding), for key plans and column
           plans, and says when a plan would change once the column set is
           built; column plans on columns whose names hold spaces, quotes,
           braces and digits answer as an ordinary table does (the plan's
           terms reach xFilter apart from its words).

Runs on either backend (the texts name the one in use).  The last line is
"N passed, M failed"; exit 77 without GPUDS_EXT.
"""
import json
import os
import re
import sqlite3
import sys
import tempfile

from gpuds_testlib import EXT, Tally, connect, project_version, uses_column_set

T = Tally()
check = T.check


def plan(c, sql, params=()):
    return " | ".join(str(r[-1]) for r in c.execute("EXPLAIN QUERY PLAN " + sql, params))


def t_version():
    c = connect(":memory:")
    v = c.execute("SELECT gpuds_version()").fetchone()[0]
    check(v == project_version(), "gpuds_version() is CMakeLists.txt's project version",
          (v, project_version()))
    info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
    check(info["version"] == v, "gpuds_info()'s version is gpuds_version()", (info["version"], v))
    c.close()


def fill(c, name, n):
    c.execute("INSERT INTO %s WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s "
              "WHERE x<%d) SELECT x, x%%7, 's'||x, x*0.5 FROM s" % (name, n))


def t_info():
    tmp = tempfile.mkdtemp(prefix="gpuds_readable_")
    path = os.path.join(tmp, "t.db")
    c = connect(path)
    for mod in ("gfsl", "gpuhash"):
        c.execute("CREATE VIRTUAL TABLE %s_t USING %s(k INTEGER PRIMARY KEY, v INTEGER, s TEXT, r REAL)"
                  % (mod, mod))
        fill(c, mod + "_t", 3000)
    info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
    for mod in ("gfsl", "gpuhash"):
        tab = [t for t in info["tables"] if t["name"] == "main.%s_t" % mod][0]
        gpu = tab["backend"] == "cuda"
        text = c.execute("SELECT gpuds_info(?)", (mod + "_t",)).fetchone()[0]
        lines = text.split("\n")
        check(lines[0] == "main.%s_t: %s table, 3000 committed rows, loaded" % (mod, mod),
              "%s: first line names the table, module, rows and state" % mod, text)
        store = "hash table" if mod == "gpuhash" else ("skiplist (GFSL)" if gpu else "B+tree")
        where = " on the GPU, " if gpu else " on the host, "
        check(lines[1].startswith("store: " + store + where), "%s: the store line" % mod, text)
        if gpu:
            check(lines[1].endswith(" of GPU memory (%s)" % info["device"]), "%s: the GPU named" % mod, text)
        else:
            why = "GPUDS_BACKEND=host" if os.environ.get("GPUDS_BACKEND") == "host" and \
                info["device"] != "none" else info.get("why_no_gpu", "")
            check(lines[1].endswith("; the GPU is not used: " + why), "%s: a host store says why" % mod,
                  (lines[1], why))
        check(re.match(r"store: [^,]+, [0-9.]+ (B|KiB|MiB|GiB)", lines[1]) is not None,
              "%s: the store's size, readable" % mod, lines[1])
        check(("host mirror: B+tree" in text) == tab["host_mirror"],
              "%s: a mirror line where there is a mirror" % mod, (text, tab["host_mirror"]))
        cs_lines = [l for l in lines if l.startswith("column set (")]
        check(len(cs_lines) == 1 and "not built" in cs_lines[0],
              "%s: the column set not built yet" % mod, text)
        check(len(lines) <= 6 and "{" not in text and "hint_slots" not in text,
              "%s: a few lines, no JSON" % mod, text)
        # a column query builds the set; the text says how big it is
        c.execute("SELECT count(*) FROM %s_t WHERE v = 3" % mod).fetchone()
        text = c.execute("SELECT gpuds_info('main.%s_t')" % mod).fetchone()[0]
        check(re.search(r"column set \((GPU|host)\): built over 3000 rows, [0-9.]+ (B|KiB|MiB); "
                        r"queries: 1; keys changed since the build: 0", text) is not None,
              "%s: the built column set" % mod, text)
        # uncommitted writes
        c.execute("BEGIN")
        c.execute("INSERT INTO %s_t VALUES (100000, 1, 'x', 1.0), (100001, 2, 'y', 2.0)" % mod)
        text = c.execute("SELECT gpuds_info(?)", (mod + "_t",)).fetchone()[0]
        check("this transaction: 2 keys written, not yet applied to the store" in text,
              "%s: the transaction's writes" % mod, text)
        c.execute("ROLLBACK")
    for bad, msg in (("nope", "gpuds_info: no gfsl or gpuhash table named nope"),
                     (None, "gpuds_info: table name expected")):
        try:
            c.execute("SELECT gpuds_info(?)", (bad,)).fetchone()
            check(False, "gpuds_info(%r) is an error" % bad)
        except sqlite3.Error as e:
            check(str(e) == msg, "gpuds_info(%r): its message" % bad, str(e))
    c.execute("CREATE TABLE plain(k INTEGER PRIMARY KEY)")
    try:
        c.execute("SELECT gpuds_info('plain')").fetchone()
        check(False, "gpuds_info of an ordinary table is an error")
    except sqlite3.Error as e:
        check("no gfsl or gpuhash table named plain" in str(e), "gpuds_info of an ordinary table", str(e))
    c.close()
    # after reopening, the table is connected by the call and not loaded
    os.environ["GPUDS_LAZY_LOAD"] = "off"
    c = connect(path)
    text = c.execute("SELECT gpuds_info('gfsl_t')").fetchone()[0]
    check(text.startswith("main.gfsl_t: gfsl table, not loaded yet"),
          "after reopening: not loaded until its first statement", text)
    c.execute("SELECT * FROM gfsl_t WHERE k = 5").fetchall()
    text = c.execute("SELECT gpuds_info('gfsl_t')").fetchone()[0]
    check(text.startswith("main.gfsl_t: gfsl table, 3000 committed rows, loaded"), "loaded by a statement", text)
    c.close()
    del os.environ["GPUDS_LAZY_LOAD"]
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


def t_plans():
    c = connect(":memory:")
    c.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, v INTEGER, s TEXT, r REAL, u)")
    c.execute("CREATE VIRTUAL TABLE h USING gpuhash(k INTEGER PRIMARY KEY, v INTEGER, s TEXT, r REAL, u)")
    for t in ("g", "h"):
        c.execute("INSERT INTO %s WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s "
                  "WHERE x<20000) SELECT x, x%%7, 's'||x, x*0.5, x FROM s" % t)
    info = json.loads(c.execute("SELECT gpuds_info()").fetchone()[0])
    tabs = {t["name"]: t for t in info["tables"]}
    cs = "GPU" if tabs["main.g"]["backend"] == "cuda" else "host"
    hmir = tabs["main.h"]["host_mirror"]
    hname = "gpuhash (ordered mirror)" if hmir else "gpuhash"
    expect = [
        ("SELECT * FROM g WHERE k = 5", "gfsl: k=?"),
        ("SELECT * FROM g WHERE k IN (1, 2, 3)", "gfsl: k IN (...) as one batch"),
        ("SELECT * FROM g WHERE k > 5 AND k <= 10", "gfsl: k>? AND k<=?"),
        ("SELECT * FROM g WHERE k > 5 ORDER BY k DESC LIMIT 3", "gfsl: k>? ORDER BY k DESC LIMIT ?"),
        ("SELECT * FROM g LIMIT 3 OFFSET 2", "gfsl: full scan LIMIT ? OFFSET ?"),
        ("SELECT * FROM g", "gfsl: full scan"),
        ("SELECT * FROM h WHERE k = 5", hname + ": k=?"),
        # column plans, the set not built yet
        ("SELECT k FROM g WHERE v = 3 AND r > 9 ORDER BY r DESC LIMIT 5",
         "gfsl: %s column set: v=? AND r>? ORDER BY r DESC LIMIT ? "
         "(the column set is not built yet: the first run builds it)" % cs),
        ("SELECT k FROM g WHERE s = 'a' AND u >= 3",
         "gfsl: %s column set: s=? (checked again by SQLite) AND u>=? (checked again by SQLite) "
         "(the column set is not built yet: the first run builds it)" % cs),
        ("SELECT k FROM g WHERE k < 100 AND v IN (1, 2) AND s IS NULL",
         "gfsl: %s column set: k<? AND v IN (...) AND s IS NULL "
         "(the column set is not built yet: the first run builds it)" % cs),
        ("SELECT k FROM g ORDER BY r",
         "gfsl: %s column set: every row ORDER BY r "
         "(the column set is not built yet: the first run builds it)" % cs),
    ]
    if hmir:
        expect.append(("SELECT * FROM h WHERE k BETWEEN 300 AND 9000", "gpuhash (ordered mirror): k>=? AND k<=?"))
    else:
        # a key range on a hash table without its ordered mirror: a scan of
        # its keys while no set is built, the set once one is (say so)
        expect.append(("SELECT * FROM h WHERE k BETWEEN 300 AND 9000",
                       "gpuhash: k>=? AND k<=? (a column-set plan once the column set is built)"))
    for sql, want in expect:
        got = plan(c, sql)
        check(got.endswith(":" + want), "plan of %s" % sql, (got, want))
        check("{" not in got, "no internal encoding in the plan of %s" % sql, got)
    for t in ("g", "h"):
        c.execute("SELECT count(*) FROM %s WHERE v = 1" % t).fetchone()   # builds the sets
    # (other SQL text: Python's statement cache would return the old plan)
    got = plan(c, "SELECT k FROM g WHERE v = 3 AND r > 9  ORDER BY r DESC LIMIT 5")
    check(got.endswith(":gfsl: %s column set: v=? AND r>? ORDER BY r DESC LIMIT ?" % cs),
          "a column plan on a built set says nothing of building", got)
    got = plan(c, "SELECT * FROM h WHERE k BETWEEN 300 AND 9001")
    if hmir:
        check(got.endswith(":gpuhash (ordered mirror): k>=? AND k<=?"), "gpuhash range, mirror", got)
    else:
        check(got.endswith(":gpuhash: %s column set: k>=? AND k<=?" % cs),
              "gpuhash range once the set is built: the column set", got)
    check(uses_column_set(plan(c, "SELECT k FROM g WHERE v = 3")), "uses_column_set sees a column plan")
    check(not uses_column_set(plan(c, "SELECT k FROM g WHERE k = 3")), "uses_column_set: a key plan")
    c.close()


def t_odd_names():
    """Column names that look like plan text: the words show them, the
    answers come from the plan's own terms."""
    c = connect(":memory:")
    cols = ['"a b"', '"x?}{1e;o2d"', '"3"', '"q""uote"']
    decl = ", ".join("%s %s" % (n, ty) for n, ty in zip(cols, ("INTEGER", "TEXT", "REAL", "")))
    c.execute("CREATE VIRTUAL TABLE g USING gfsl(k INTEGER PRIMARY KEY, %s)" % decl)
    c.execute("CREATE TABLE o(k INTEGER PRIMARY KEY, %s)" % decl)
    os.environ.pop("GPUDS_COLUMN_PLANS", None)
    for t in ("g", "o"):
        c.execute("INSERT INTO %s WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s "
                  "WHERE x<5000) SELECT x, x%%11, 'k'||(x%%13), x*0.25, x%%5 FROM s" % t)
    queries = [
        ('SELECT k FROM {t} WHERE "a b" = 3 AND "x?}}{{1e;o2d" > \'k5\' ORDER BY "3" DESC LIMIT 7', ()),
        ('SELECT k, "q""uote" FROM {t} WHERE "3" BETWEEN 10 AND 20 AND "q""uote" IN (1, 2)', ()),
        ('SELECT count(*) FROM {t} WHERE "x?}}{{1e;o2d" = ? AND "a b" < ?', ("k7", 9)),
    ]
    for q, params in queries:
        a = c.execute(q.format(t="g"), params).fetchall()
        b = c.execute(q.format(t="o"), params).fetchall()
        check(a == b and len(b) > 0, "odd column names: %s" % q, (a[:5], b[:5]))
        p = plan(c, q.format(t="g"), params)
        check(uses_column_set(p) and "{" not in p.replace("x?}{1e;o2d", ""),
              "odd column names: a column plan in words: %s" % q, p)
    check('a b=? AND x?}{1e;o2d>? (checked again by SQLite) ORDER BY 3 DESC' in
          plan(c, queries[0][0].format(t="g")), "odd names appear as the table names them",
          plan(c, queries[0][0].format(t="g")))
    c.close()


def main():
    if not EXT:
        print("SKIPPED: GPUDS_EXT is not set")
        return 77
    t_version()
    t_info()
    t_plans()
    t_odd_names()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
