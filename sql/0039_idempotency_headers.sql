-- An Idempotency-Key's stored answer keeps the headers its handler set (name, value, name,
-- value, ...), so a replay answers with them as well as with the status and body. Rows stored
-- before have none. Adding a column with a constant default rewrites nothing.
ALTER TABLE idempotency_keys ADD COLUMN response_headers text[] NOT NULL DEFAULT '{}';
