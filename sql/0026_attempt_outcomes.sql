-- What became of a decision: fraud or legitimate, reported by an analyst, the cardholder, a
-- chargeback or the card network. Every report is kept; one per attempt is current (the latest
-- confirmed report, else the latest unconfirmed network signal), so rule performance reads one
-- label per attempt. A report identical to one already kept for its attempt is not stored again,
-- which makes re-posting and re-importing the same reports record nothing new.
CREATE TABLE IF NOT EXISTS attempt_outcomes (
    id              bigserial PRIMARY KEY,
    attempt_id      uuid NOT NULL REFERENCES provisioning_attempts (attempt_id),
    outcome         text NOT NULL CHECK (outcome IN ('fraud', 'legitimate')),
    source          text NOT NULL CHECK (source IN ('analyst', 'cardholder', 'chargeback', 'network')),
    -- false only for a network signal (Notify Suspicious Events, a token deleted for fraud)
    -- that ISSUERD_OUTCOMES_NETWORK_CONFIRMS does not count as confirmed fraud.
    confirmed       boolean NOT NULL DEFAULT true,
    reported_at     timestamptz NOT NULL,
    amount_lost     bigint CHECK (amount_lost >= 0),
    currency        text CHECK (currency IN ('KRW')),
    note            text NOT NULL DEFAULT '' CHECK (length(note) <= 1000),
    token_reference text,
    recorded_by     text NOT NULL,
    recorded_at     timestamptz NOT NULL,
    is_current      boolean NOT NULL DEFAULT false,
    CHECK ((amount_lost IS NULL) = (currency IS NULL))
);
CREATE INDEX IF NOT EXISTS attempt_outcomes_attempt ON attempt_outcomes (attempt_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS attempt_outcomes_current ON attempt_outcomes (attempt_id) WHERE is_current;
-- Rule performance and the review queue find a decision's token by its attempt.
CREATE INDEX IF NOT EXISTS tokens_attempt ON tokens (attempt_id) WHERE attempt_id IS NOT NULL;

