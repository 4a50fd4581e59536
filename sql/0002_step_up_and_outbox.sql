-- Step-up challenges (one-time codes stored only as HMACs) and the outbox through which every
-- message to a delivery gateway or the TSP leaves, so nothing is lost across crashes.

CREATE TABLE challenges (
    challenge_id       uuid PRIMARY KEY,
    token_reference    text NOT NULL REFERENCES tokens (token_reference),
    card_id            text NOT NULL REFERENCES cards (card_id),
    customer_id        text NOT NULL REFERENCES customers (customer_id),
    method             text NOT NULL CHECK (method IN ('sms', 'ars', 'email', 'app')),
    destination_masked text NOT NULL,
    code_hmac          bytea,
    key_version        integer NOT NULL,
    status             text NOT NULL CHECK (status IN ('pending', 'verified', 'expired', 'locked', 'superseded')),
    failed_attempts    integer NOT NULL DEFAULT 0,
    max_attempts       integer NOT NULL,
    expires_at         timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    verified_at        timestamptz
);
CREATE INDEX challenges_token_time ON challenges (token_reference, created_at);
CREATE INDEX challenges_card_time ON challenges (card_id, created_at);

-- One row per wrong code, lock or expiry: the velocity features "failed one-time codes" read it.
CREATE TABLE challenge_failures (
    id           bigserial PRIMARY KEY,
    challenge_id uuid NOT NULL REFERENCES challenges (challenge_id),
    card_id      text NOT NULL,
    customer_id  text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('wrong_code', 'locked', 'expired')),
    at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX challenge_failures_card_time ON challenge_failures (card_id, at);
CREATE INDEX challenge_failures_customer_time ON challenge_failures (customer_id, at);

CREATE TABLE outbox (
    id              bigserial PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('notify', 'tsp')),
    dedup_key       text NOT NULL UNIQUE,
    payload         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
