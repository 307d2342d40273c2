-- Basic CRUD through the sqlite3 shell: every type of value, the key's
-- edges, NULL keys, conflict clauses, changes().
.bail off
.headers on
.mode list
.nullvalue <null>
CREATE VIRTUAL TABLE t USING @MOD@(k INTEGER PRIMARY KEY, a TEXT, b REAL, c BLOB, d);
INSERT INTO t VALUES (1, 'one', 1.5, x'01', 10);
INSERT INTO t VALUES (2, 'two', 2, x'', NULL);
INSERT INTO t(k, a) VALUES (-5, 'minus five');
INSERT INTO t(a, d) VALUES ('auto key', 'x');
INSERT INTO t VALUES ('12', 12, '12.5', 'text in a blob column', 3.25);
INSERT INTO t VALUES (9223372036854775807, 'max', 1e300, zeroblob(3), -0.5);
INSERT INTO t VALUES (-9223372036854775808, 'min', '', 'é', x'00ff');
INSERT INTO t VALUES (7, '', 'abc', 7, 9223372036854775807);
SELECT k, typeof(k), a, typeof(a), b, typeof(b), quote(c), typeof(c), quote(d), typeof(d)
  FROM t ORDER BY k;
SELECT count(*), count(a), count(b), count(c), count(d) FROM t;
SELECT * FROM t WHERE k = 2;
SELECT * FROM t WHERE k = '12';
SELECT * FROM t WHERE k = 7.0;
SELECT * FROM t WHERE k = 99;
SELECT a FROM t WHERE k = -9223372036854775808;
SELECT a FROM t WHERE k = 9223372036854775807;
.print -- updates
UPDATE t SET a = 'ONE', b = b * 2 WHERE k = 1;
SELECT changes();
UPDATE t SET d = k * 10 WHERE k BETWEEN 1 AND 12;
SELECT changes();
UPDATE t SET k = 100 WHERE k = 2;
UPDATE t SET k = k + 1000, a = a || '!' WHERE k = 100;
UPDATE t SET k = k WHERE k = 1;
UPDATE t SET a = NULL WHERE k = 99;
SELECT changes();
SELECT k, a, b, d FROM t ORDER BY k;
.print -- deletes
DELETE FROM t WHERE k = 1100;
SELECT changes();
DELETE FROM t WHERE k IN (1, 3, 77, 3);
SELECT changes();
DELETE FROM t WHERE a = 'zzz';
SELECT changes();
SELECT k, a FROM t ORDER BY k;
.print -- conflict clauses
INSERT OR REPLACE INTO t VALUES (12, 'replaced', 0, NULL, NULL);
SELECT changes();
REPLACE INTO t VALUES (13, 'new by replace', 0, NULL, NULL);
INSERT OR IGNORE INTO t VALUES (13, 'ignored', 0, NULL, NULL);
SELECT changes();
INSERT OR IGNORE INTO t VALUES (14, 'fourteen', 0, NULL, NULL), (13, 'ignored', 0, NULL, NULL);
SELECT changes();
UPDATE OR REPLACE t SET k = 12 WHERE k = 13;
UPDATE OR IGNORE t SET k = 9223372036854775807 WHERE k = 12;
SELECT changes();
SELECT k, a FROM t ORDER BY k;
-- (total_changes() is not compared: like every virtual table with shadow
-- tables (FTS5 too), gfsl/gpuhash count their shadow-table writes in it.)
.print -- delete everything, NULL key again
DELETE FROM t;
SELECT changes();
SELECT count(*) FROM t;
INSERT INTO t(a) VALUES ('after delete all');
INSERT INTO t(a) VALUES ('and the next');
SELECT k, a FROM t ORDER BY k;
SELECT last_insert_rowid() > 0;
DROP TABLE t;
SELECT name FROM sqlite_schema;
.print -- a second table with another key name
CREATE VIRTUAL TABLE items USING @MOD@(id INTEGER PRIMARY KEY, name TEXT NOT NULL, price NUMERIC);
INSERT INTO items VALUES (10, 'pen', '1.50'), (20, 'ink', 3), (30, 'pad', '2');
SELECT id, name, price, typeof(price) FROM items ORDER BY id DESC;
UPDATE items SET price = price * 2 WHERE id >= 20;
SELECT id, price, typeof(price) FROM items ORDER BY id;
SELECT sum(price) FROM items WHERE id IN (10, 30);
