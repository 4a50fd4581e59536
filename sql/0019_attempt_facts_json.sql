-- Every decision writes an attempt whose `facts` (the request's facts, and every rule the
-- decision could not resolve with the values it lacked: about 2.9 KB for an in-app push under the
-- default policy) and `unknowns` were jsonb, so PostgreSQL parsed both into jsonb's binary form
-- on every insert: 11 % of the database's instructions per in-app request, counted with
-- callgrind on the request's own statements (docs/performance.md, "Fourteenth session").
-- Nothing queries them with jsonb's operators: they are read whole (explain, the export), and
-- `facts -> 'response'` (a TSP retry's stored answer) works on json, parsing only that row.
-- `hits` stays jsonb: the console's roll-up walks it with jsonb_array_elements.
--
-- The row was still over PostgreSQL's 2 KB TOAST threshold after compression (about 2.7 KB),
-- so every insert compressed every long column in turn and then moved `facts` out of line into
-- the TOAST table: a second heap insert, its index entry and their WAL, 8 % of the same count.
-- With the threshold at half a page, the largest value is compressed and the row (2.7 KB) stays
-- in line: the same bytes on disk, one write.
--
-- The type change rewrites provisioning_attempts and rebuilds its indexes, like sql/0018 (about
-- 23 s per million attempts on the 2-core development machine), holding off every statement on
-- the table meanwhile: on a large table, run `issuerd migrate` in a quiet hour (deploy/README.md).
-- It waits at most 10 s for the table's lock, then fails with nothing changed; run it again.
-- A type change resets a column's compression, so lz4 (sql/0008) is set again in the same pass.
SET LOCAL lock_timeout = '10s';
ALTER TABLE provisioning_attempts SET (toast_tuple_target = 4080);  -- first, so the rewrite below keeps rows in line
DO $$
BEGIN
    IF 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_settings WHERE name = 'default_toast_compression') THEN
        ALTER TABLE provisioning_attempts
            ALTER COLUMN facts TYPE json USING facts::json, ALTER COLUMN facts SET COMPRESSION lz4,
            ALTER COLUMN unknowns TYPE json USING unknowns::json, ALTER COLUMN unknowns SET COMPRESSION lz4;
    ELSE
        ALTER TABLE provisioning_attempts
            ALTER COLUMN facts TYPE json USING facts::json,
            ALTER COLUMN unknowns TYPE json USING unknowns::json;
    END IF;
END
$$;
ALTER TABLE provisioning_attempts ALTER COLUMN facts SET DEFAULT '{}'::json, ALTER COLUMN unknowns SET DEFAULT '[]'::json;
