-- Attempts carry a few kilobytes of JSON (inputs, hits), which PostgreSQL compresses when it
-- stores them. Its default, pglz, was 3 % of the server's CPU on the provisioning benchmark;
-- lz4 compresses several times faster. Servers built without lz4 keep pglz.
DO $$
BEGIN
    IF 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_settings WHERE name = 'default_toast_compression') THEN
        ALTER TABLE provisioning_attempts
            ALTER COLUMN inputs SET COMPRESSION lz4,
            ALTER COLUMN features SET COMPRESSION lz4,
            ALTER COLUMN hits SET COMPRESSION lz4,
            ALTER COLUMN facts SET COMPRESSION lz4;
    END IF;
END
$$;
