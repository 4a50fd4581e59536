-- issuerd:no-transaction
-- The attempts list's rule filters (`rule`, `decidedBy`) read through the rule's GIN index when
-- the rule is rare among the attempts the other filters pick (docs/console.md). That index's
-- keys are an attempt's rule keys (`hit:<rule>`, `decided:<rule>`, sql/0031) and, for each, the
-- same key qualified by the attempt's channel (`hit:<rule>#tsp`, `decided:<rule>#tsp`), and each
-- `hit:` key qualified by the attempt's flow (`hit:<rule>@yellow`). Rule ids are identifiers,
-- so `#` and `@` never occur in them. A filter with a rule and a flow or channel then reads the
-- qualified keys' lists, which hold only the attempts it lists: a rule hitting one attempt in 25
-- with a flow or channel it never meets finds an empty list at once, where the rule's key alone
-- read every one of its matches from the table to find none (seconds at millions of attempts).
--
-- This index replaces attempts_rule_keys: every key that one held, this one holds too.
--
-- It runs step by step (the Migrator's `issuerd:no-transaction` mode), so a live history is
-- indexed without holding off the attempts the request path writes: the partitioned index is
-- made on the parent only (no partition scanned), each partition's index is built CONCURRENTLY
-- and then attached, and the old index is dropped under a short lock wait that yields to the
-- request path (a busy table is retried, not queued behind). Partitions made meanwhile get the
-- index as they are made. Every step states when it still has work, so a run stopped half way
-- resumes; a concurrent build that failed leaves an invalid index, which the rerun drops first.
-- Last, the table is analyzed, so that the planner has statistics of the new index's keys
-- (without them it guesses that any key matches a few hundred attempts).

-- issuerd:step
CREATE OR REPLACE FUNCTION attempt_list_keys(hits jsonb, flow text, channel text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    keys text[] := '{}';
    key text;
BEGIN
    FOREACH key IN ARRAY attempt_rule_keys(hits, flow) LOOP
        keys := keys || key || (key || '#' || coalesce(channel, ''));
        IF key LIKE 'hit:%' THEN
            keys := keys || (key || '@' || coalesce(flow, ''));
        END IF;
    END LOOP;
    RETURN keys;
END
$$;

-- issuerd:step when to_regclass('attempts_list_keys') IS NULL
CREATE INDEX attempts_list_keys ON ONLY provisioning_attempts USING gin (attempt_list_keys(hits, flow, channel));

-- issuerd:step each
-- For each partition without an index attached to attempts_list_keys: drop a leftover of an
-- earlier run (an invalid index from a failed build), then build its index.
SELECT s.statement
FROM pg_inherits i
JOIN pg_class p ON p.oid = i.inhrelid
CROSS JOIN LATERAL (VALUES
    (1, format('DROP INDEX CONCURRENTLY IF EXISTS %I.%I', p.relnamespace::regnamespace::text, p.relname || '_list_keys')),
    (2, format('CREATE INDEX CONCURRENTLY %I ON %s USING gin (attempt_list_keys(hits, flow, channel))',
               p.relname || '_list_keys', p.oid::regclass))
) s(n, statement)
WHERE i.inhparent = 'provisioning_attempts'::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
                  WHERE ii.inhparent = 'attempts_list_keys'::regclass AND x.indrelid = p.oid)
ORDER BY p.relname, s.n;

-- issuerd:step each
-- For each partition whose index is not yet attached: attach it, in a transaction of its own.
-- Attaching takes the partition's index exclusively; the request path's reads that no time bound
-- prunes hold every partition's indexes while they run. Were all attached in one transaction,
-- the index of one partition attached would be held while the next one waited for a read that
-- then waited for the first: a deadlock, which fails one side. One at a time, nothing is held
-- while waiting; and the lock is tried for 50 ms at a time (a request waits no longer behind it).
SELECT format($attach$DO $do$
BEGIN
    FOR attempt IN 1..1200 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '50ms', true);
            ALTER INDEX attempts_list_keys ATTACH PARTITION %1$I.%2$I;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    RAISE EXCEPTION 'index %2$s stayed busy for two minutes; run the migration again';
END
$do$$attach$, p.relnamespace::regnamespace::text, p.relname || '_list_keys')
FROM pg_inherits i
JOIN pg_class p ON p.oid = i.inhrelid
WHERE i.inhparent = 'provisioning_attempts'::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
                  WHERE ii.inhparent = 'attempts_list_keys'::regclass AND x.indrelid = p.oid)
ORDER BY p.relname;

-- issuerd:step
DO $$
BEGIN
    IF NOT (SELECT indisvalid FROM pg_index WHERE indexrelid = 'attempts_list_keys'::regclass) THEN
        RAISE EXCEPTION 'index attempts_list_keys is not valid after attaching every partition''s index';
    END IF;
END
$$;

-- issuerd:step when to_regclass('attempts_rule_keys') IS NOT NULL
-- Dropping a partitioned index locks the table for a moment. The lock is tried for 50 ms at a
-- time (a request waiting behind this step waits no longer), 1,200 times over about two minutes.
DO $$
BEGIN
    FOR attempt IN 1..1200 LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '50ms', true);
            DROP INDEX attempts_rule_keys;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    RAISE EXCEPTION 'attempts_rule_keys stayed busy for two minutes; run the migration again';
END
$$;

-- issuerd:step
ANALYZE provisioning_attempts;
