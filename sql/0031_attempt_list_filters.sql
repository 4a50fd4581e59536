-- The attempts list filters by the rules an attempt hit and by the rules that decided it
-- (GET /v1/admin/attempts?rule=…&decidedBy=…; docs/console.md). Both read the hits JSON, so
-- one function names them as keys, `hit:<rule id>` and `decided:<rule id>`, and one GIN index
-- over those keys finds the attempts of a rule however rarely it hits.
--
-- A hit is read in every shape issuerd has stored (an object with `rule`, the older `ruleId`
-- or `id`, or a plain string), as the Rule hits page counts them. A rule decided an attempt
-- when it hit live with the attempt's flow as its outcome and that flow is not green (the
-- rules whose owners a review case is queued to).
--
-- The index is written by every provisioning insert: one small array per attempt (a hit or
-- two), added to GIN's pending list, which vacuum folds in. The time order of the list is
-- read through attempts_time_keys (sql/0017), whose predicate the list's query states.
--
-- Migrations run in one transaction, where CREATE INDEX CONCURRENTLY cannot: building this
-- index holds off attempt writes meanwhile. On a large live table, create the function and
-- build the index first without blocking writes, then migrate:
--     CREATE INDEX CONCURRENTLY attempts_rule_keys ON provisioning_attempts USING gin (attempt_rule_keys(hits, flow));
CREATE OR REPLACE FUNCTION attempt_rule_keys(hits jsonb, flow text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT k.key ORDER BY k.key), '{}')
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(hits) = 'array' THEN hits ELSE '[]'::jsonb END) h
    CROSS JOIN LATERAL (
        SELECT CASE jsonb_typeof(h) WHEN 'string' THEN h #>> '{}'
                                    WHEN 'object' THEN coalesce(h ->> 'rule', h ->> 'ruleId', h ->> 'id') END AS rule_id
    ) r
    CROSS JOIN LATERAL (
        SELECT 'hit:' || r.rule_id
        UNION ALL
        SELECT 'decided:' || r.rule_id
        WHERE jsonb_typeof(h) = 'object' AND coalesce(h ->> 'mode', 'live') = 'live'
          AND h ->> 'outcome' = flow AND flow <> 'green'
    ) k(key)
    WHERE r.rule_id IS NOT NULL
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'attempts_rule_keys' AND NOT i.indisvalid) THEN
        RAISE EXCEPTION 'index attempts_rule_keys is invalid (a CREATE INDEX CONCURRENTLY that failed): '
            'DROP INDEX CONCURRENTLY attempts_rule_keys, then build it again or let this migration build it';
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS attempts_rule_keys ON provisioning_attempts USING gin (attempt_rule_keys(hits, flow));
