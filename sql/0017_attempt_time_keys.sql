-- A backtest counting a velocity window its attempts did not record reads every attempt of the
-- window's look-back by time, for their time and keys only (BacktestHistory+History.swift).
-- From the heap that is one 1.2 KB row per attempt: on 1,000,000 attempts, two days of
-- history were 9,300 pages and 83-117 ms of PostgreSQL's time. This B-tree carries the time
-- and the three keys (about 75 bytes an entry), so that read is an index-only scan: 17 ms.
-- docs/performance.md, "Seventh session", has the figures on both sides.
--
-- Partial on a predicate every row meets and only the backtest's query states
-- (BacktestHistory.timeKeysPredicate), so no other statement can be planned through it: a
-- generic plan made on a table still empty ties every index, and one through this index
-- would scan a whole time range for one card. Everything else reading by time keeps the BRIN.
--
-- Migrations run in one transaction, where CREATE INDEX CONCURRENTLY cannot: this one holds
-- off attempt writes while the index is built (about 2.5 s per million attempts). On a large
-- live table, build it first without blocking writes, then migrate:
--     CREATE INDEX CONCURRENTLY attempts_time_keys ON provisioning_attempts (created_at)
--         INCLUDE (card_id, device_id, customer_id) WHERE created_at > '-infinity';
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'attempts_time_keys' AND NOT i.indisvalid) THEN
        RAISE EXCEPTION 'index attempts_time_keys is invalid (a CREATE INDEX CONCURRENTLY that failed): '
            'DROP INDEX CONCURRENTLY attempts_time_keys, then build it again or let this migration build it';
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS attempts_time_keys ON provisioning_attempts (created_at) INCLUDE (card_id, device_id, customer_id)
    WHERE created_at > '-infinity';

-- An index-only scan reads the heap for every page the visibility map does not mark all-visible,
-- and only vacuum marks them. For an insert-only table autovacuum's default waits for inserts of
-- 20 % of the table (days of a million-attempt month, months of a large portfolio): vacuum once
-- 20,000 attempts have arrived instead (autovacuum looks at most once per autovacuum_naptime).
-- Each page is still vacuumed once; the work is spread out.
ALTER TABLE provisioning_attempts SET (autovacuum_vacuum_insert_threshold = 20000, autovacuum_vacuum_insert_scale_factor = 0);
