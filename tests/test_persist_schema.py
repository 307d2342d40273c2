#!/usr/bin/python3
"""Durable gfsl/gpuhash tables: the shadow tables under DEFENSIVE, RENAME and DROP.

See tests/persist_lib.py for how every check compares (differential
against an ordinary table), the usage and the environment.

Sections
  1 defensive     with SQLITE_DBCONFIG_DEFENSIVE (Connection.setconfig on
                  Python >= 3.12, else the sqlite3 shell's .dbconfig), writes,
                  DROP and ALTER on the shadow tables are refused, normal use
                  (and RENAME/DROP) of the tables works.
  2 rename/drop   ALTER TABLE RENAME and DROP TABLE leave no orphan shadow
                  tables, data survives the rename and a reopen, inside
                  transactions and rolled back, in main, an ATTACHed database
                  (re-attached under another name) and temp.
"""

import math
import random
import shutil
import sqlite3
import subprocess
import sys

from persist_lib import (COLS2, DECL2, EXT, Outcomes, R, SEED, T3, apply_stmt,
                         check_ok, compare3, connect, create3, dbpath, key_pool,
                         main, note, query, rand_stmt, schema_names,
                         shadow_snapshot, tmp_path, writes)


def sec_defensive():
    db = dbpath("defensive.db")
    c = connect(db)
    create3(c, DECL2)
    rng = random.Random(SEED + 6)
    keys = key_pool(rng, 60)
    oc = Outcomes()
    c.execute("BEGIN")
    writes(c, rng, keys, 80, oc, {"ins": 80, "upd": 20})
    c.execute("COMMIT")
    s0 = shadow_snapshot(c, ("tg", "th"))
    c.close()

    forbidden = []
    for t in ("tg", "th"):
        forbidden += [
            ("INSERT INTO %s_meta VALUES('x', 1)" % t, "modified"),
            ("UPDATE %s_meta SET value=value+1 WHERE key='generation'" % t, "modified"),
            ("DELETE FROM %s_meta" % t, "modified"),
            ("REPLACE INTO %s_meta VALUES('rows', 0)" % t, "modified"),
            ("INSERT INTO %s_run(id, n, keys, vals) VALUES(1, 0, x'', x'')" % t, "modified"),
            ("INSERT INTO %s_run SELECT id+1, n, keys, vals FROM %s_run" % (t, t), "modified"),
            ("UPDATE %s_run SET n=n" % t, "modified"),
            ("DELETE FROM %s_run" % t, "modified"),
            ("DROP TABLE %s_run" % t, "dropped"),
            ("INSERT INTO %s_ovfl VALUES(1, x'00')" % t, "modified"),
            ("DROP TABLE %s_ovfl" % t, "dropped"),
            ("ALTER TABLE %s_meta RENAME TO zz" % t, "altered"),
        ]
    py_setconfig = hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE") and hasattr(sqlite3.Connection, "setconfig")
    shell = shutil.which("sqlite3")
    if py_setconfig:
        c = connect(db)
        c.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
        for sql, word in forbidden:
            try:
                c.execute(sql)
                R.check(False, "defensive (setconfig): refused: " + sql)
            except sqlite3.Error as e:
                R.check("may not be " + word in str(e), "defensive (setconfig): refused: " + sql, str(e))
        c.close()
    elif shell:
        note("defensive: Python %s has no Connection.setconfig; using %s" % (sys.version.split()[0], shell))
    if not shell and not py_setconfig:
        note("defensive: SKIPPED (no Connection.setconfig and no sqlite3 shell)")
        return
    if shell:
        pre = ".load %s\n.dbconfig defensive on\n" % EXT
        for sql, word in forbidden:
            p = subprocess.run([shell, "-batch", db], input=pre + sql + ";\n",
                               capture_output=True, text=True, timeout=60)
            R.check(p.returncode != 0 and ("may not be " + word) in p.stderr,
                    "defensive (shell): refused: " + sql, p.stderr.strip())
    c = connect(db)
    R.check(shadow_snapshot(c, ("tg", "th")) == s0, "defensive: shadow tables unchanged by the refused statements")
    c.close()

    # normal use in defensive mode, through the shell (or setconfig)
    lines = []
    for _ in range(60):
        sql, params = rand_stmt(rng, keys, COLS2, literal_bytes=True)
        sql = sql.replace("?", "%s")
        lit = tuple(sqlite_literal(p) for p in params)
        for t in T3:
            lines.append(sql.format(t=t) % lit + ";")
    script = ["BEGIN;"] + lines[:90] + ["COMMIT;"]
    script += ["SAVEPOINT s;"] + lines[90:150] + ["ROLLBACK TO s;", "RELEASE s;"]
    script += lines[150:]
    script += ["SELECT 'CHECK', gpuds_check('tg'), gpuds_check('th');"]
    out, err = run_defensive(db, script, shell, py_setconfig)
    R.check("CHECK|ok|ok" in out, "defensive: writes through the tables work, gpuds_check ok", (out[-500:], err[-1500:]))
    c = connect(db)
    compare3(c, COLS2, "defensive: after normal use")
    c.close()
    out, err = run_defensive(db, ["ALTER TABLE tg RENAME TO ug;", "ALTER TABLE th RENAME TO uh;",
                                  "INSERT INTO ug SELECT -k, a, b, c FROM r WHERE k > 0;",
                                  "INSERT INTO uh SELECT -k, a, b, c FROM r WHERE k > 0;",
                                  "INSERT INTO r SELECT -k, a, b, c FROM r WHERE k > 0;",
                                  "SELECT 'CHECK', gpuds_check('ug'), gpuds_check('uh');"], shell, py_setconfig)
    R.check("CHECK|ok|ok" in out, "defensive: RENAME then writes work", (out[-500:], err[-1500:]))
    c = connect(db)
    R.same(schema_names(c), sorted(["r", "uh", "uh_meta", "uh_run", "uh_ovfl", "ug", "ug_meta", "ug_run", "ug_ovfl"]),
           "defensive: RENAME renames the shadow tables")
    compare3(c, COLS2, "defensive: after RENAME", names=("ug", "uh", "r"))
    c.close()
    out, err = run_defensive(db, ["DROP TABLE ug;", "DROP TABLE uh;", "SELECT 'DONE';"], shell, py_setconfig)
    R.check("DONE" in out and not err.strip(), "defensive: DROP TABLE works", err[-1500:])
    c = connect(db)
    R.same(schema_names(c), ["r"], "defensive: DROP TABLE leaves no shadow tables")
    c.close()


def sqlite_literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "NULL"
        if math.isinf(v):
            return "1e999" if v > 0 else "-1e999"
        return repr(v)
    if isinstance(v, bytes):
        return "x'%s'" % v.hex()
    return "'%s'" % v.replace("'", "''")


def run_defensive(db, script, shell, py_setconfig):
    if shell:
        p = subprocess.run([shell, "-batch", db],
                           input=".load %s\n.dbconfig defensive on\n" % EXT + "\n".join(script) + "\n",
                           capture_output=True, text=True, timeout=120)
        return p.stdout, p.stderr
    c = connect(db)
    c.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
    out, err = [], []
    for s in script:
        try:
            for row in c.execute(s):
                out.append("|".join(x.decode() if isinstance(x, bytes) else str(x) for x in row))
        except sqlite3.Error as e:
            err.append(str(e))
    c.close()
    return "\n".join(out), "\n".join(err)


def sec_rename_drop():
    schema_reload_in_txn()
    for where in ("main", "aux", "temp"):
        rename_in_txn(where)
    rng = random.Random(SEED + 7)
    keys = key_pool(rng, 80)
    for where in ("main", "aux", "temp"):
        tag = "rename/drop[%s]" % where
        db = dbpath("rename_%s.db" % where)
        auxdb = dbpath("rename_%s_aux.db" % where)
        c = connect(db)
        if where == "aux":
            c.execute("ATTACH ? AS aux", (auxdb,))
        s = where
        q = lambda n: "%s.%s" % (s, n)
        create3(c, DECL2, schema=s)
        oc = Outcomes()
        tabs = (q("tg"), q("th"), q("r"))
        c.execute("BEGIN")
        for _ in range(120):
            sql, params = rand_stmt(rng, keys, COLS2, {"ins": 70, "upd": 20, "del": 10})
            oc.add(sql, params, apply_stmt(c, sql, params, tabs))
        c.execute("COMMIT")
        before = compare3(c, COLS2, tag + " before", names=tabs)
        c.execute("ALTER TABLE %s RENAME TO ug" % q("tg"))
        c.execute("ALTER TABLE %s RENAME TO uh" % q("th"))
        R.same(schema_names(c, s), sorted(["r", "ug", "ug_meta", "ug_run", "ug_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": RENAME renames the shadow tables, no orphans")
        tabs = (q("ug"), q("uh"), q("r"))
        compare3(c, COLS2, tag + " after RENAME", names=tabs, strict_prev=before)
        for t in tabs[:2]:
            R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s') after RENAME" % (tag, t))
        c.execute("BEGIN")
        for _ in range(40):
            sql, params = rand_stmt(rng, keys, COLS2)
            oc.add(sql, params, apply_stmt(c, sql, params, tabs))
        c.execute("COMMIT")
        d = compare3(c, COLS2, tag + " writes after RENAME", names=tabs)
        if where != "temp":
            c.close()
            c = connect(db)
            if where == "aux":
                s = "aux2"           # re-attached under another name
                c.execute("ATTACH ? AS aux2", (auxdb,))
                tabs = (q("ug"), q("uh"), q("r"))
            for t in tabs[:2]:
                R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s') after reopen, before any other use" % (tag, t))
            compare3(c, COLS2, tag + " after RENAME and reopen", names=tabs, strict_prev=d)
        # RENAME inside a transaction (no writes pending: rename_in_txn()
        # covers those on a database of its own)
        c.execute("BEGIN")
        c.execute("ALTER TABLE %s RENAME TO vg" % q("ug"))
        tabs = (q("vg"), q("uh"), q("r"))
        for _ in range(30):
            sql, params = rand_stmt(rng, keys, COLS2)
            oc.add(sql, params, apply_stmt(c, sql, params, tabs))
        c.execute("COMMIT")
        R.same(schema_names(c, s), sorted(["r", "vg", "vg_meta", "vg_run", "vg_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": RENAME inside a transaction")
        d = compare3(c, COLS2, tag + " RENAME inside a transaction", names=tabs)
        # RENAME and DROP rolled back
        c.execute("BEGIN")
        c.execute("ALTER TABLE %s RENAME TO wg" % q("vg"))
        c.execute("INSERT INTO %s VALUES(77777, 1, 2, 3)" % q("wg"))
        c.execute("DROP TABLE %s" % q("uh"))
        c.execute("ROLLBACK")
        R.same(schema_names(c, s), sorted(["r", "vg", "vg_meta", "vg_run", "vg_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": RENAME and DROP rolled back: schema as before")
        compare3(c, COLS2, tag + " RENAME and DROP rolled back", names=tabs, strict_prev=d)
        for t in tabs[:2]:
            R.same(check_ok(c, t), "ok", "%s: gpuds_check('%s') after rolled-back RENAME/DROP" % (tag, t))
        if where != "temp":
            c.close()
            c = connect(db)
            if where == "aux":
                c.execute("ATTACH ? AS aux2", (auxdb,))
            compare3(c, COLS2, tag + " rolled back, after reopen", names=tabs, strict_prev=d)
        # DROP of a table with writes pending in the transaction, rolled back
        c.execute("BEGIN")
        c.execute("INSERT INTO %s VALUES(88888, 1, 2, 3)" % q("vg"))
        c.execute("DELETE FROM %s WHERE k IN (SELECT k FROM %s LIMIT 3)" % (q("uh"), q("r")))
        c.execute("DROP TABLE %s" % q("vg"))
        c.execute("DROP TABLE %s" % q("uh"))
        c.execute("ROLLBACK")
        compare3(c, COLS2, tag + " DROP of tables with pending writes, rolled back", names=tabs, strict_prev=d)
        # CREATE, write, ROLLBACK: nothing left; CREATE again works
        c.execute("BEGIN")
        c.execute("CREATE VIRTUAL TABLE %s USING gfsl(k INTEGER PRIMARY KEY, v)" % q("zg"))
        c.execute("CREATE VIRTUAL TABLE %s USING gpuhash(k INTEGER PRIMARY KEY, v)" % q("zh"))
        c.execute("INSERT INTO %s VALUES(1, 1)" % q("zg"))
        c.execute("INSERT INTO %s VALUES(1, 1)" % q("zh"))
        c.execute("ROLLBACK")
        R.same(schema_names(c, s), sorted(["r", "vg", "vg_meta", "vg_run", "vg_ovfl", "uh", "uh_meta", "uh_run", "uh_ovfl"]),
               tag + ": CREATE VIRTUAL TABLE rolled back leaves nothing")
        c.execute("CREATE VIRTUAL TABLE %s USING gfsl(k INTEGER PRIMARY KEY, v)" % q("zg"))
        c.execute("INSERT INTO %s VALUES(2, 2)" % q("zg"))
        R.same(query(c, "SELECT * FROM %s" % q("zg")), [("i2", "i2")], tag + ": CREATE again after a rolled-back CREATE")
        c.execute("DROP TABLE %s" % q("zg"))
        c.execute("DROP TABLE %s" % q("vg"))
        c.execute("DROP TABLE %s" % q("uh"))
        R.same(schema_names(c, s), ["r"], tag + ": DROP TABLE leaves no orphan shadow tables")
        if where == "temp":
            R.same(schema_names(c, "main"), [], tag + ": nothing in main")
        else:
            c.close()
            c = connect(db)
            if where == "aux":
                c.execute("ATTACH ? AS aux2", (auxdb,))
                R.same(schema_names(c, "main"), [], tag + ": nothing in main")
            R.same(schema_names(c, s), ["r"], tag + ": DROP TABLE, after reopen")
        c.close()
        oc.check(tag)


def rename_in_txn(where):
    """RENAME inside a transaction whose earlier statements wrote to the
    renamed table and to another one."""
    tag = "RENAME with pending writes[%s]" % where
    db = dbpath("rename_txn_%s.db" % where)
    c = connect(db)
    if where == "aux":
        c.execute("ATTACH ? AS aux", (dbpath("rename_txn_aux2.db"),))
    q = lambda n: "%s.%s" % (where, n)
    create3(c, DECL2, schema=where)
    tabs = (q("tg"), q("th"), q("r"))
    for i in range(1, 6):
        for t in tabs:
            c.execute("INSERT INTO %s VALUES(?, 'committed', 'c', 1.0)" % t, (i,))
    oc = Outcomes()
    c.execute("BEGIN")
    for sql in ("INSERT INTO {t} VALUES(10, 'pending', 'p', 2.0)", "DELETE FROM {t} WHERE k=1",
                "UPDATE {t} SET a='updated' WHERE k=2"):
        oc.add(sql, (), apply_stmt(c, sql, (), tabs))
    c.execute("ALTER TABLE %s RENAME TO ug" % q("tg"))
    tabs = (q("ug"), q("th"), q("r"))
    compare3(c, COLS2, tag + ": the transaction's writes still visible after the RENAME", names=tabs)
    for sql in ("INSERT INTO {t} VALUES(10, 'dup', 'd', 3.0)", "DELETE FROM {t} WHERE k=10",
                "UPDATE {t} SET a='again' WHERE k=1", "INSERT INTO {t} VALUES(11, 'new', 'n', 4.0)"):
        oc.add(sql, (), apply_stmt(c, sql, (), tabs))
    c.execute("COMMIT")
    oc.check(tag)
    d = compare3(c, COLS2, tag + ": committed", names=tabs)
    if where != "temp":
        c.close()
        c = connect(db)
        if where == "aux":
            c.execute("ATTACH ? AS aux", (tmp_path("rename_txn_aux2.db"),))
        compare3(c, COLS2, tag + ": after reopen", names=tabs, strict_prev=d)
    c.close()


def schema_reload_in_txn():
    """An ALTER TABLE of an unrelated ordinary table inside a transaction
    makes SQLite reload the schema (and reconnect the virtual tables) while
    the transaction's writes are still pending."""
    db = dbpath("reload_txn.db")
    c = connect(db)
    create3(c, DECL2)
    c.execute("CREATE TABLE o(x)")
    for t in T3:
        c.execute("INSERT INTO %s VALUES(1, 'committed', 'c', 1.0)" % t)
    c.execute("BEGIN")
    for t in T3:
        c.execute("INSERT INTO %s VALUES(2, 'pending', 'p', 2.0)" % t)
    c.execute("ALTER TABLE o ADD COLUMN y")
    compare3(c, COLS2, "ALTER TABLE of another table inside a transaction: pending writes still visible")
    oc = Outcomes()
    for sql in ("INSERT INTO {t} VALUES(2, 'dup', 'd', 3.0)", "DELETE FROM {t} WHERE k=2",
                "INSERT INTO {t} VALUES(3, 'three', 't', 3.0)"):
        oc.add(sql, (), apply_stmt(c, sql, (), T3))
    c.execute("COMMIT")
    oc.check("ALTER TABLE of another table inside a transaction")
    compare3(c, COLS2, "ALTER TABLE of another table inside a transaction, committed")
    c.close()
    c = connect(db)
    compare3(c, COLS2, "ALTER TABLE of another table inside a transaction, after reopen")
    c.close()


# ================================================================== main
SECTIONS = [
    ("1 defensive", sec_defensive),
    ("2 rename/drop", sec_rename_drop),
]

CHILDREN = {}


if __name__ == "__main__":
    sys.exit(main("test_persist_schema", SECTIONS, CHILDREN, sys.argv[1:]))
