-- Who holds an Idempotency-Key claim (docs/reliability.md). A claim older than its expiry is
-- taken over by a retry with a new token; the first holder's answer and its clean-up then match
-- no row, and work that stores its answer in its own transaction first locks the claim by its
-- token, so a holder that was merely slow (not dead) rolls back instead of doing the work twice.
ALTER TABLE idempotency_keys ADD COLUMN claim_token uuid;
