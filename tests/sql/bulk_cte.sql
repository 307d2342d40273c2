-- Bulk loads via recursive CTEs: aggregates, spot checks, overlapping loads
-- under plain INSERT (the whole statement fails), OR IGNORE and OR REPLACE.
.bail off
.headers on
.mode list
CREATE VIRTUAL TABLE t USING @MOD@(k INTEGER PRIMARY KEY, a TEXT, b REAL, c BLOB, d INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
  INSERT INTO t SELECT x * 3, 'row ' || x, x / 8.0, zeroblob(x % 4), x % 13 FROM c;
SELECT changes();
SELECT count(*), sum(k), min(k), max(k), sum(d), sum(length(c)), count(b), max(b) FROM t;
SELECT k, a, b, quote(c), d FROM t WHERE k IN (3, 150000, 299997, 300000, 4) ORDER BY k;
SELECT count(*) FROM t WHERE k BETWEEN 1000 AND 2000;
SELECT count(*) FROM t WHERE d = 5;
SELECT k, a FROM t WHERE k > 299990 ORDER BY k DESC;
.print -- overlapping load, plain INSERT: fails as a whole
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000)
  INSERT INTO t(k, a) SELECT 300000 + x * 2, 'late' FROM c
  UNION ALL SELECT 300, 'dup';
SELECT count(*), max(k) FROM t;
.print -- OR IGNORE keeps the old rows, OR REPLACE overwrites
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
  INSERT OR IGNORE INTO t(k, a) SELECT x * 2, 'even' FROM c;
SELECT changes();
SELECT count(*), sum(a = 'even'), sum(a LIKE 'row %') FROM t;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
  INSERT OR REPLACE INTO t(k, a, d) SELECT x * 5, 'five', x FROM c;
SELECT changes();
SELECT count(*), sum(a = 'even'), sum(a = 'five'), sum(a LIKE 'row %'), sum(d) FROM t;
SELECT k, a, d FROM t WHERE k BETWEEN 25 AND 40 ORDER BY k;
.print -- bulk update and delete
UPDATE t SET d = -d WHERE k % 7 = 0;
SELECT changes();
DELETE FROM t WHERE k BETWEEN 10000 AND 200000;
SELECT changes();
SELECT count(*), sum(k), sum(d) FROM t;
UPDATE t SET k = k + 1000000 WHERE k > 200000;
SELECT changes();
SELECT count(*), min(k), max(k) FROM t WHERE k > 1000000;
SELECT k FROM t WHERE k > 1000000 ORDER BY k LIMIT 5;
.print -- NULL keys in bulk
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000)
  INSERT INTO t(a) SELECT 'auto ' || x FROM c;
SELECT count(*), max(k) FROM t;
SELECT k, a FROM t ORDER BY k DESC LIMIT 3;
DELETE FROM t;
SELECT count(*) FROM t;
