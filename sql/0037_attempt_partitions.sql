-- issuerd:no-transaction
-- provisioning_attempts becomes a table partitioned by month on created_at (docs/architecture.md,
-- "History by month"), so a month past retention is dropped whole instead of deleted row by row,
-- and a backtest of 30 days reads one or two months however long the history is.
--
-- This file runs step by step, each step in its own transaction (the Migrator's
-- `issuerd:no-transaction` mode), so that a live table of millions of attempts moves without
-- holding off the attempts the request path writes for more than a moment:
--   1. a unique index on (attempt_id, created_at), the partitioned table's primary key, is built
--      CONCURRENTLY (writes continue);
--   2. a CHECK constraint bounds created_at below the start of the month after next; it is added
--      NOT VALID (a moment's lock) and validated while writes continue;
--   3. in one short transaction the table is renamed provisioning_attempts_legacy, a partitioned
--      provisioning_attempts is made with the same columns and indexes, and the old table is
--      attached as its partition for everything before that bound. The constraint proves the
--      bound and every index exists already, so attaching scans and builds nothing.
-- Every step states when it still has work to do, so a run stopped half way resumes.
--
-- Keys that referenced provisioning_attempts(attempt_id) (tokens, attempt_outcomes,
-- review_cases) are dropped: a partitioned table's unique keys must include created_at, and a
-- month past retention is dropped while the tokens, outcomes and review cases of its attempts
-- live on. Each of those rows is written by code that has just read or written its attempt.

-- issuerd:step
-- Makes monthly partitions of provisioning_attempts from the month of `since` through the month
-- of `through` (UTC months), each once. Rows of such a month already in the default partition
-- are moved into the new one. SECURITY DEFINER: the service role, which runs no DDL, calls it at
-- start and daily (`issuerd serve`), so a partition always exists months ahead.
CREATE OR REPLACE FUNCTION issuerd_make_attempt_partitions(since timestamptz, through timestamptz)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    month timestamptz := date_trunc('month', since AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    last timestamptz := date_trunc('month', through AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    legacy_upper timestamptz;
    next timestamptz;
    name text;
    made integer := 0;
BEGIN
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass('provisioning_attempts')) IS DISTINCT FROM 'p' THEN
        RETURN 0;
    END IF;
    SELECT substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz INTO legacy_upper
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'provisioning_attempts'::regclass AND c.relname = 'provisioning_attempts_legacy';
    PERFORM pg_advisory_xact_lock(7310551130497384241);
    WHILE month <= last LOOP
        next := ((month AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
        name := 'provisioning_attempts_' || to_char(month AT TIME ZONE 'UTC', 'YYYY_MM');
        IF (legacy_upper IS NULL OR month >= legacy_upper) AND to_regclass(name) IS NULL THEN
            IF EXISTS (SELECT 1 FROM provisioning_attempts_default WHERE created_at >= month AND created_at < next) THEN
                EXECUTE format('CREATE TABLE %I (LIKE provisioning_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                               'INCLUDING COMPRESSION INCLUDING STORAGE) WITH (autovacuum_vacuum_insert_threshold = 20000, '
                               'autovacuum_vacuum_insert_scale_factor = 0, toast_tuple_target = 4080)', name);
                EXECUTE format('WITH moved AS (DELETE FROM provisioning_attempts_default WHERE created_at >= %L AND created_at < %L '
                               'RETURNING *) INSERT INTO %I SELECT * FROM moved', month, next, name);
                EXECUTE format('ALTER TABLE provisioning_attempts ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', name, month, next);
            ELSE
                EXECUTE format('CREATE TABLE %I PARTITION OF provisioning_attempts FOR VALUES FROM (%L) TO (%L) '
                               'WITH (autovacuum_vacuum_insert_threshold = 20000, autovacuum_vacuum_insert_scale_factor = 0, '
                               'toast_tuple_target = 4080)', name, month, next);
            END IF;
            made := made + 1;
        END IF;
        month := next;
    END LOOP;
    RETURN made;
END
$$;

-- issuerd:step
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'attempts_id_time' AND NOT i.indisvalid) THEN
        RAISE EXCEPTION 'index attempts_id_time is invalid (a CREATE INDEX CONCURRENTLY that failed): '
            'DROP INDEX CONCURRENTLY attempts_id_time, then migrate again';
    END IF;
END
$$;

-- issuerd:step when (SELECT relkind = 'r' FROM pg_class WHERE oid = to_regclass('provisioning_attempts')) AND to_regclass('attempts_id_time') IS NULL
CREATE UNIQUE INDEX CONCURRENTLY attempts_id_time ON provisioning_attempts (attempt_id, created_at);

-- issuerd:step when (SELECT relkind = 'r' FROM pg_class WHERE oid = to_regclass('provisioning_attempts')) AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'attempts_before_partitions')
SET LOCAL lock_timeout = '5s';
DO $$
BEGIN
    EXECUTE format('ALTER TABLE provisioning_attempts ADD CONSTRAINT attempts_before_partitions CHECK (created_at < %L) NOT VALID',
                   ((date_trunc('month', now() AT TIME ZONE 'UTC') + interval '2 months') AT TIME ZONE 'UTC'));
END
$$;

-- issuerd:step when (SELECT relkind = 'r' FROM pg_class WHERE oid = to_regclass('provisioning_attempts'))
ALTER TABLE provisioning_attempts VALIDATE CONSTRAINT attempts_before_partitions;

-- issuerd:step when (SELECT relkind = 'r' FROM pg_class WHERE oid = to_regclass('provisioning_attempts'))
SET LOCAL lock_timeout = '5s';
-- Every lock the swap needs is taken at once or not at all: a NOWAIT try that finds one table
-- busy rolls back its subtransaction, which releases what it took, and tries again 20 ms later.
-- So the swap never holds one table while it waits for another that a request, already holding
-- the first's neighbour, wants next (a TSP authorization holds tokens and then reads attempts;
-- waiting in LOCK's own order deadlocked such requests). cards and customers are in the set:
-- attaching the old table moves its foreign keys' triggers on them, which takes them exclusively.
-- After 30 s of busy tables it gives up; `issuerd migrate` resumes here.
DO $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '30 seconds';
BEGIN
    LOOP
        BEGIN
            LOCK TABLE tokens, attempt_outcomes, review_cases, provisioning_attempts, cards, customers
                IN ACCESS EXCLUSIVE MODE NOWAIT;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            IF clock_timestamp() > deadline THEN
                RAISE EXCEPTION 'provisioning_attempts and its neighbours stayed busy for 30 s: run issuerd migrate again';
            END IF;
            PERFORM pg_sleep(0.02);
        END;
    END LOOP;
END
$$;
ALTER TABLE tokens DROP CONSTRAINT IF EXISTS tokens_attempt_id_fkey;
ALTER TABLE attempt_outcomes DROP CONSTRAINT IF EXISTS attempt_outcomes_attempt_id_fkey;
ALTER TABLE review_cases DROP CONSTRAINT IF EXISTS review_cases_attempt_id_fkey;
ALTER TABLE provisioning_attempts RENAME TO provisioning_attempts_legacy;
ALTER TABLE provisioning_attempts_legacy DROP CONSTRAINT provisioning_attempts_pkey;
ALTER TABLE provisioning_attempts_legacy ADD CONSTRAINT provisioning_attempts_legacy_pkey PRIMARY KEY USING INDEX attempts_id_time;
ALTER INDEX attempts_card_time RENAME TO attempts_legacy_card_time;
ALTER INDEX attempts_customer_time RENAME TO attempts_legacy_customer_time;
ALTER INDEX attempts_device_time RENAME TO attempts_legacy_device_time;
ALTER INDEX attempts_request RENAME TO attempts_legacy_request;
ALTER INDEX attempts_rule_keys RENAME TO attempts_legacy_rule_keys;
ALTER INDEX attempts_time_brin RENAME TO attempts_legacy_time_brin;
ALTER INDEX attempts_time_keys RENAME TO attempts_legacy_time_keys;
CREATE TABLE provisioning_attempts (LIKE provisioning_attempts_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS
    INCLUDING COMPRESSION INCLUDING STORAGE) PARTITION BY RANGE (created_at);
ALTER TABLE provisioning_attempts DROP CONSTRAINT attempts_before_partitions;
ALTER TABLE provisioning_attempts ADD PRIMARY KEY (attempt_id, created_at),
    ADD CONSTRAINT attempts_card_fkey FOREIGN KEY (card_id) REFERENCES cards (card_id),
    ADD CONSTRAINT attempts_customer_fkey FOREIGN KEY (customer_id) REFERENCES customers (customer_id);
CREATE INDEX attempts_card_time ON provisioning_attempts (card_id, created_at);
CREATE INDEX attempts_customer_time ON provisioning_attempts (customer_id, created_at);
CREATE INDEX attempts_device_time ON provisioning_attempts (device_id, created_at);
CREATE INDEX attempts_request ON provisioning_attempts (request_id, token_reference) WHERE channel = 'tsp';
CREATE INDEX attempts_rule_keys ON provisioning_attempts USING gin (attempt_rule_keys(hits, flow));
CREATE INDEX attempts_time_brin ON provisioning_attempts USING brin (created_at);
CREATE INDEX attempts_time_keys ON provisioning_attempts (created_at) INCLUDE (card_id, device_id, customer_id)
    WHERE created_at > '-infinity';
CREATE TABLE provisioning_attempts_default PARTITION OF provisioning_attempts DEFAULT
    WITH (autovacuum_vacuum_insert_threshold = 20000, autovacuum_vacuum_insert_scale_factor = 0, toast_tuple_target = 4080);
DO $$
DECLARE
    bound timestamptz;
BEGIN
    SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''')::timestamptz INTO bound
    FROM pg_constraint WHERE conname = 'attempts_before_partitions' AND conrelid = 'provisioning_attempts_legacy'::regclass;
    IF EXISTS (SELECT 1 FROM provisioning_attempts_legacy) THEN
        EXECUTE format('ALTER TABLE provisioning_attempts ATTACH PARTITION provisioning_attempts_legacy '
                       'FOR VALUES FROM (MINVALUE) TO (%L)', bound);
    ELSE
        -- A new database (or one that never stored an attempt): monthly partitions from the start.
        DROP TABLE provisioning_attempts_legacy;
    END IF;
END
$$;
ALTER TABLE IF EXISTS provisioning_attempts_legacy DROP CONSTRAINT attempts_before_partitions;
SELECT issuerd_make_attempt_partitions(now() - interval '1 month', now() + interval '3 months');
