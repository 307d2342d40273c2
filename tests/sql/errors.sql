-- Statements that fail: the messages (on stderr, with line numbers) and the
-- table afterwards must be those of an ordinary table.
.bail off
.headers off
.mode list
CREATE VIRTUAL TABLE t USING @MOD@(k INTEGER PRIMARY KEY, v TEXT NOT NULL, w REAL);
INSERT INTO t VALUES (1, 'a', 1.0), (2, 'b', 2.0);
.print -- key type
INSERT INTO t VALUES ('abc', 'text key', 0);
INSERT INTO t VALUES (2.5, 'real key', 0);
INSERT INTO t VALUES (x'01', 'blob key', 0);
INSERT INTO t VALUES ('3', 'text 3', 0);
INSERT INTO t VALUES (4.0, 'real 4.0', 0);
UPDATE t SET k = 'abc' WHERE k = 1;
UPDATE t SET k = NULL WHERE k = 1;
UPDATE t SET k = 1.5 WHERE k = 1;
SELECT k, typeof(k), v FROM t ORDER BY k;
.print -- duplicates
INSERT INTO t VALUES (1, 'dup', 0);
INSERT INTO t VALUES (10, 'ten', 0), (11, 'eleven', 0), (10, 'dup', 0);
INSERT INTO t SELECT k + 100, v, w FROM t UNION ALL SELECT 1, 'dup', 0;
UPDATE t SET k = 2 WHERE k = 1;
UPDATE t SET k = k + 1 WHERE k BETWEEN 1 AND 3;
SELECT k, v FROM t ORDER BY k;
.print -- NOT NULL
INSERT INTO t VALUES (20, NULL, 0);
INSERT INTO t(k, w) VALUES (21, 0);
UPDATE t SET v = NULL WHERE k = 1;
INSERT OR IGNORE INTO t VALUES (22, NULL, 0);
INSERT OR REPLACE INTO t VALUES (1, NULL, 0);
SELECT k, v FROM t ORDER BY k;
.print -- inside a transaction
BEGIN;
INSERT INTO t VALUES (30, 'thirty', 0);
INSERT INTO t VALUES (31, 'x', 0), (2, 'dup', 0);
INSERT INTO t VALUES (32, 'y', 0), ('bad', 'bad key', 0);
INSERT INTO t VALUES (33, 'z', 0), (34, NULL, 0);
SELECT k, v FROM t ORDER BY k;
COMMIT;
SELECT k, v FROM t ORDER BY k;
.print -- other errors
SELECT nosuchcolumn FROM t;
INSERT INTO t VALUES (1, 2);
INSERT INTO t(k, v, w, x) VALUES (1, 2, 3, 4);
UPDATE t SET nosuch = 1;
SELECT count(*) FROM t;
