-- gpuds demo: both modules, a bulk load, point / range / IN queries,
-- filters and ORDER BY on other columns.
-- Run from the repository root:  sqlite3 :memory: < sql/demo.sql
.bail on
.load ./build/gpuds
.headers on
.mode box

SELECT gpuds_version() AS version,
       json_extract(gpuds_info(), '$.backend') AS backend,
       coalesce(json_extract(gpuds_info(), '$.why_no_gpu'),
                json_extract(gpuds_info(), '$.device')) AS device_or_why_not;

CREATE VIRTUAL TABLE events USING gfsl(ts INTEGER PRIMARY KEY, sensor TEXT, reading REAL, raw BLOB);
CREATE VIRTUAL TABLE users  USING gpuhash(id INTEGER PRIMARY KEY, name TEXT, score INTEGER);
CREATE TABLE visits(id INTEGER);

-- A bulk load in one transaction: one batch to the store at COMMIT.
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<200000)
INSERT INTO events SELECT x*10, 'sensor-'||(x%7), x*0.5, randomblob(4) FROM c;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<100000)
INSERT INTO users SELECT x, 'user'||x, (x*37)%1000 FROM c;
INSERT INTO visits VALUES (5),(77),(12345),(99999),(424242);
COMMIT;

SELECT count(*) AS events, (SELECT count(*) FROM users) AS users FROM events;

-- point query
SELECT ts, sensor, reading FROM events WHERE ts = 1230;
-- range, newest first, limited
SELECT ts, sensor, reading FROM events WHERE ts BETWEEN 1000 AND 2000 ORDER BY ts DESC LIMIT 5;
-- IN list answered as one batch lookup
SELECT id, name, score FROM users WHERE id IN (SELECT id FROM visits) ORDER BY id;
-- filters and ORDER BY on non-key columns: the table's column set (on the GPU
-- beside a GPU store) answers them in one pass
SELECT count(*) AS high_scores FROM users WHERE score >= 990 AND score IN (990, 995, 999);
SELECT ts, sensor, reading FROM events WHERE sensor = 'sensor-3' AND reading > 99990 ORDER BY reading DESC LIMIT 3;
-- read-your-writes and rollback
BEGIN;
DELETE FROM events WHERE ts BETWEEN 1000 AND 2000;
SELECT count(*) AS in_txn FROM events WHERE ts BETWEEN 1000 AND 2000;
ROLLBACK;
SELECT count(*) AS after_rollback FROM events WHERE ts BETWEEN 1000 AND 2000;

-- how SQLite plans these
EXPLAIN QUERY PLAN SELECT * FROM events WHERE ts BETWEEN 1000 AND 2000 ORDER BY ts DESC LIMIT 5;
EXPLAIN QUERY PLAN SELECT * FROM users WHERE id IN (SELECT id FROM visits);
EXPLAIN QUERY PLAN SELECT ts FROM events WHERE reading > 99990 ORDER BY reading DESC LIMIT 3;

-- each table in a few lines (gpuds_info() without an argument: JSON)
.mode list
.headers off
SELECT gpuds_info('events');
SELECT gpuds_info('users');
