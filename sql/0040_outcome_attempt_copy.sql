-- Rule performance reads a labelled attempt's flow and hits from its outcome.
--
-- An outcome keeps a copy of its attempt's flow and hits (`attempt_flow`, `attempt_hits`),
-- written when the outcome is recorded, beside the time it already keeps (sql/0034): an
-- attempt's decision never changes once stored. So a month's labelled attempts are read from
-- the outcomes alone, instead of one look-up each of an attempt row in a large table. Outcomes
-- recorded by a writer that does not fill them (an older instance during an upgrade) keep them
-- NULL, and rule performance reads those from the attempt as before.
--
-- Only attempt_outcomes is altered and filled: provisioning_attempts is read by primary key
-- (attempt_id, created_at), never locked against writes. The brief exclusive lock the ALTER
-- takes on attempt_outcomes is refused after 5 s rather than queued behind a long transaction.
SET LOCAL lock_timeout = '5s';
ALTER TABLE attempt_outcomes ADD COLUMN IF NOT EXISTS attempt_flow text, ADD COLUMN IF NOT EXISTS attempt_hits jsonb;
UPDATE attempt_outcomes o SET attempt_flow = a.flow, attempt_hits = a.hits
FROM provisioning_attempts a
WHERE a.attempt_id = o.attempt_id AND a.created_at = o.attempt_created_at AND o.attempt_flow IS NULL;
