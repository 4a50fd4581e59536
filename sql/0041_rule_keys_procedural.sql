-- attempt_rule_keys (sql/0031) computes the same keys in a PL/pgSQL loop instead of one SQL
-- statement. The attempts list's time-ordered read of a rule filter (`rule`, `decidedBy`) calls
-- it on every attempt it passes: as a statement, each call started an executor for a lateral
-- join, a DISTINCT aggregate and its sort, about 40 µs, so a `decidedBy` + `channel` page that
-- passes 4,800 attempts spent most of its time there. The loop below takes about 7 µs, and the
-- GIN index over the keys, written by every provisioning insert, calls it once an attempt too.
--
-- The result is the same for every input (the same keys, sorted in the database's collation,
-- each once), so the entries attempts_rule_keys holds from the earlier body stay valid and no
-- index is rebuilt. Replacing a function takes no lock on provisioning_attempts.
CREATE OR REPLACE FUNCTION attempt_rule_keys(hits jsonb, flow text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    h jsonb;
    kind text;
    rule_id text;
    key text;
    keys text[] := '{}';
    n integer;
    j integer;
BEGIN
    IF jsonb_typeof(hits) IS DISTINCT FROM 'array' THEN
        RETURN keys;
    END IF;
    FOR i IN 0 .. jsonb_array_length(hits) - 1 LOOP
        -- A hit is an object naming its rule as `rule`, the older `ruleId` or `id`, or a plain string.
        h := hits -> i;
        kind := jsonb_typeof(h);
        IF kind = 'string' THEN
            rule_id := h #>> '{}';
        ELSIF kind = 'object' THEN
            rule_id := coalesce(h ->> 'rule', h ->> 'ruleId', h ->> 'id');
        ELSE
            rule_id := NULL;
        END IF;
        CONTINUE WHEN rule_id IS NULL;
        -- `hit:<rule>` always; `decided:<rule>` when it hit live with the (non-green) flow as its outcome.
        FOR pass IN 1 .. 2 LOOP
            IF pass = 1 THEN
                key := 'hit:' || rule_id;
            ELSIF kind = 'object' AND coalesce(h ->> 'mode', 'live') = 'live' AND h ->> 'outcome' = flow
                  AND flow <> 'green' THEN
                key := 'decided:' || rule_id;
            ELSE
                EXIT;
            END IF;
            -- Kept sorted and distinct as it grows (an attempt has a few keys).
            n := cardinality(keys);
            j := 1;
            WHILE j <= n AND keys[j] < key COLLATE "default" LOOP
                j := j + 1;
            END LOOP;
            IF j > n THEN
                keys := keys || key;
            ELSIF keys[j] <> key COLLATE "default" THEN
                keys := keys[1:j - 1] || key || keys[j:n];
            END IF;
        END LOOP;
    END LOOP;
    RETURN keys;
END
$$;
