-- Transactions and nested savepoints: reads inside a transaction see its
-- own writes; ROLLBACK / ROLLBACK TO / RELEASE restore exactly.
.bail off
.headers off
.mode list
CREATE VIRTUAL TABLE t USING @MOD@(k INTEGER PRIMARY KEY, v TEXT);
INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');
.print -- rollback
BEGIN;
INSERT INTO t VALUES (4, 'd');
UPDATE t SET v = 'B' WHERE k = 2;
DELETE FROM t WHERE k = 3;
UPDATE t SET k = 30 WHERE k = 1;
SELECT k, v FROM t ORDER BY k;
SELECT count(*) FROM t WHERE k > 1;
ROLLBACK;
SELECT k, v FROM t ORDER BY k;
.print -- a failing statement inside a transaction is undone alone
BEGIN;
INSERT INTO t VALUES (4, 'd');
INSERT INTO t VALUES (5, 'e'), (6, 'f'), (1, 'dup');
SELECT k, v FROM t ORDER BY k;
UPDATE t SET k = 2 WHERE k = 4;
INSERT INTO t VALUES (5, 'e');
COMMIT;
SELECT k, v FROM t ORDER BY k;
.print -- nested savepoints
SAVEPOINT s1;
INSERT INTO t VALUES (10, 'ten');
SAVEPOINT s2;
DELETE FROM t WHERE k < 5;
SAVEPOINT s3;
UPDATE t SET v = upper(v);
SELECT k, v FROM t ORDER BY k;
ROLLBACK TO s3;
SELECT k, v FROM t ORDER BY k;
ROLLBACK TO s2;
SELECT k, v FROM t ORDER BY k;
INSERT INTO t VALUES (11, 'eleven');
RELEASE s2;
SELECT k, v FROM t ORDER BY k;
ROLLBACK TO s1;
SELECT k, v FROM t ORDER BY k;
INSERT INTO t VALUES (12, 'twelve');
RELEASE s1;
SELECT k, v FROM t ORDER BY k;
.print -- savepoints inside BEGIN, RELEASE of an outer one
BEGIN;
SAVEPOINT a;
INSERT INTO t VALUES (20, 'x');
SAVEPOINT b;
INSERT INTO t VALUES (21, 'y');
RELEASE a;
ROLLBACK TO b;
SELECT k, v FROM t WHERE k >= 20 ORDER BY k;
COMMIT;
SELECT k, v FROM t ORDER BY k;
.print -- big transaction rolled back, then one committed
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 60000)
  INSERT INTO t SELECT 1000 + x, 'bulk ' || x FROM c;
SELECT count(*), min(k), max(k) FROM t;
UPDATE t SET v = 'changed' WHERE k BETWEEN 1000 AND 1100 OR k < 10;
DELETE FROM t WHERE k % 2 = 0;
SELECT count(*), sum(k) FROM t;
SELECT k, v FROM t WHERE k < 1010 ORDER BY k;
ROLLBACK;
SELECT count(*), sum(k) FROM t;
SELECT k, v FROM t ORDER BY k;
SAVEPOINT bulk;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000)
  INSERT INTO t SELECT -x, 'neg ' || x FROM c;
SAVEPOINT inner1;
DELETE FROM t WHERE k < -100;
SELECT count(*) FROM t;
ROLLBACK TO inner1;
SELECT count(*), min(k) FROM t;
RELEASE bulk;
SELECT count(*), min(k), max(k), sum(k) FROM t;
SELECT k, v FROM t WHERE k BETWEEN -3 AND 100 ORDER BY k;
.print -- errors inside a savepoint
SAVEPOINT e;
INSERT INTO t VALUES (-1, 'dup');
INSERT INTO t VALUES ('x', 'bad key');
INSERT INTO t VALUES (50, 'fifty');
RELEASE e;
SELECT k, v FROM t WHERE k BETWEEN -3 AND 100 ORDER BY k;
ROLLBACK;
COMMIT;
ROLLBACK TO nothing;
SELECT count(*) FROM t;
