-- An attempt's inputs and velocity features are written once and read whole: by a backtest
-- replaying a period (every attempt of it), the history export and an attempt's explanation.
-- As jsonb, PostgreSQL parsed each document into its binary form on insert and rendered it as
-- text again on every read: a day of attempts (33,000) took 186 ms to render against 35 ms for
-- the same documents as json, most of the database's time in a backtest over a period nothing
-- kept. json stores the text as sent (checked to be JSON) and returns it as is; `->` and `->>`
-- still work, parsing the text. hits, unknowns and facts stay jsonb: the console's roll-up
-- walks hits with jsonb_array_elements. docs/performance.md, "Eighth session", has the figures.
--
-- The change rewrites provisioning_attempts and rebuilds its indexes (about 23 s per million
-- attempts on the 2-core development machine), holding off every statement on the table meanwhile:
-- on a large table, run `issuerd migrate` in a quiet hour (deploy/README.md).
-- A type change resets a column's compression, so lz4 (sql/0008) is set again in the same pass.
--
-- The rewrite needs the table to itself (ACCESS EXCLUSIVE): it waits for running statements on
-- it (a backtest's cursor, say), and every statement that arrives meanwhile waits behind it.
-- So it waits at most 10 s for the lock, then fails (nothing changed); run `issuerd migrate` again.
SET LOCAL lock_timeout = '10s';
DO $$
BEGIN
    IF 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_settings WHERE name = 'default_toast_compression') THEN
        ALTER TABLE provisioning_attempts
            ALTER COLUMN inputs TYPE json USING inputs::json, ALTER COLUMN inputs SET COMPRESSION lz4,
            ALTER COLUMN features TYPE json USING features::json, ALTER COLUMN features SET COMPRESSION lz4;
    ELSE
        ALTER TABLE provisioning_attempts
            ALTER COLUMN inputs TYPE json USING inputs::json,
            ALTER COLUMN features TYPE json USING features::json;
    END IF;
END
$$;
