-- A backtest counting a velocity window its attempts did not record reads every attempt of the
-- window's look-back by time, for their time and keys only (BacktestHistory+History.swift).
-- From the heap that is one 1.2 KB row per attempt: on 1,000,000 attempts, two days of
-- history were 9,300 pages and 83-117 ms of PostgreSQL's time. This B-tree carries the time
-- and the three keys (about 85 bytes an entry), so that read is an index-only scan: 17 ms.
-- It also answers the time-range scans the BRIN index did (window reads, retention, the
-- console's newest attempts), so that one goes: one index more to write per attempt, not two.
-- docs/performance.md, "Seventh session", has the figures on both sides.
--
-- Migrations run in one transaction, where CREATE INDEX CONCURRENTLY cannot: this one holds
-- off attempt writes while the index is built (about 2.5 s per million attempts). On a large
-- live table, build it first without blocking writes, then migrate:
--     CREATE INDEX CONCURRENTLY attempts_time_keys ON provisioning_attempts (created_at)
--         INCLUDE (card_id, device_id, customer_id);
CREATE INDEX IF NOT EXISTS attempts_time_keys ON provisioning_attempts (created_at) INCLUDE (card_id, device_id, customer_id);
DROP INDEX IF EXISTS attempts_time_brin;

-- An index-only scan reads the heap for every page the visibility map does not mark all-visible,
-- and only vacuum marks them. For an insert-only table autovacuum's default waits for inserts of
-- 20 % of the table (two days of a million-attempt month, months of a large portfolio): vacuum
-- after every 20,000 attempts instead. Each page is still vacuumed once; the work is spread out.
ALTER TABLE provisioning_attempts SET (autovacuum_vacuum_insert_threshold = 20000, autovacuum_vacuum_insert_scale_factor = 0);
