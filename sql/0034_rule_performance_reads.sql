-- Rule performance over a month reads only what the month needs.
--
-- Each outcome carries the time of its attempt, so the period's labelled attempts are found by
-- an index on the outcomes instead of looking every current outcome up in provisioning_attempts
-- to learn its time. It is the attempt's created_at, copied when the outcome is recorded (an
-- attempt's time never changes).
ALTER TABLE attempt_outcomes ADD COLUMN IF NOT EXISTS attempt_created_at timestamptz;
UPDATE attempt_outcomes o SET attempt_created_at = a.created_at
FROM provisioning_attempts a WHERE a.attempt_id = o.attempt_id AND o.attempt_created_at IS NULL;
ALTER TABLE attempt_outcomes ALTER COLUMN attempt_created_at SET NOT NULL;
CREATE INDEX IF NOT EXISTS attempt_outcomes_current_time ON attempt_outcomes (attempt_created_at) WHERE is_current;

-- The step-ups' completion times per rolled-up hour, counted per bucket of a fixed scale
-- (`buckets` the bucket numbers present, ascending, `counts` how many of `seconds` fall in each;
-- `seconds` stays sorted, so a bucket's times are one slice of it). A period's median then sums
-- the counts, finds the bucket holding the middle, and reads only that bucket's times.
-- The rows rolled up before these columns existed are dropped, with the state that says they
-- are there, so the next reads roll the step-ups up again with them.
DELETE FROM console_hourly_stepups;
DELETE FROM console_stepup_rollup_state;
ALTER TABLE console_hourly_stepups ADD COLUMN IF NOT EXISTS buckets int[] NOT NULL DEFAULT '{}';
ALTER TABLE console_hourly_stepups ADD COLUMN IF NOT EXISTS counts bigint[] NOT NULL DEFAULT '{}';
