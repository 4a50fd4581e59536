-- issuerd core schema: customers, cards, provisioning attempts, tokens, API keys, idempotency,
-- audit log. Applied by `issuerd migrate` (and at `serve` start) inside one transaction.
-- Identifiers are text chosen by the issuer (bounded); attempts and challenges use UUIDs.

CREATE TABLE customers (
    customer_id        text PRIMARY KEY CHECK (length(customer_id) BETWEEN 1 AND 64),
    phone_number       text CHECK (length(phone_number) <= 32),
    email              text CHECK (length(email) <= 254),
    phone_changed_at   timestamptz,
    email_changed_at   timestamptz,
    address_changed_at timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- The PAN is stored only encrypted (AES-256-GCM under a data key derived from the master key of
-- pan_key_version) and as a keyed fingerprint (HMAC) used to find a card by PAN.
CREATE TABLE cards (
    card_id                    text PRIMARY KEY CHECK (length(card_id) BETWEEN 1 AND 64),
    customer_id                text NOT NULL REFERENCES customers (customer_id),
    pan_ciphertext             bytea NOT NULL,
    pan_key_version            integer NOT NULL,
    pan_fingerprint            bytea NOT NULL UNIQUE,
    last_four                  text NOT NULL CHECK (last_four ~ '^[0-9]{4}$'),
    expiration                 text NOT NULL CHECK (expiration ~ '^(0[1-9]|1[0-2])/[0-9]{2}$'),
    cardholder_name            text NOT NULL CHECK (length(cardholder_name) BETWEEN 1 AND 128),
    payment_network            text NOT NULL CHECK (payment_network IN ('visa', 'mastercard', 'amex', 'discover', 'jcb', 'unionpay', 'other')),
    status                     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'lost', 'stolen', 'blocked', 'closed')),
    localized_description      text CHECK (length(localized_description) <= 128),
    primary_account_identifier text NOT NULL UNIQUE,
    country                    text CHECK (country ~ '^[A-Z]{2}$'),
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cards_customer ON cards (customer_id);
CREATE INDEX cards_key_version ON cards (pan_key_version);

CREATE TABLE card_status_history (
    id         bigserial PRIMARY KEY,
    card_id    text NOT NULL REFERENCES cards (card_id),
    old_status text,
    new_status text NOT NULL,
    reason     text,
    actor      text NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX card_status_history_card ON card_status_history (card_id, at);

-- Every add-card decision, with everything needed to explain and re-run it.
CREATE TABLE provisioning_attempts (
    attempt_id           uuid PRIMARY KEY,
    channel              text NOT NULL CHECK (channel IN ('in_app', 'wallet_extension', 'tsp')),
    card_id              text REFERENCES cards (card_id),
    customer_id          text REFERENCES customers (customer_id),
    device_id            text,
    cardholder_name_hash text,
    token_reference      text,
    token_requestor_id   text,
    tokenization_source  text,
    request_id           text,
    inputs               jsonb NOT NULL,
    features             jsonb NOT NULL,
    hits                 jsonb NOT NULL,
    unknowns             jsonb NOT NULL DEFAULT '[]',
    flow                 text NOT NULL CHECK (flow IN ('green', 'yellow', 'orange')),
    decision             text NOT NULL,
    allowed_methods      text[] NOT NULL DEFAULT '{}',
    ruleset_version      text NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX attempts_card_time ON provisioning_attempts (card_id, created_at);
CREATE INDEX attempts_device_time ON provisioning_attempts (device_id, created_at);
CREATE INDEX attempts_customer_time ON provisioning_attempts (customer_id, created_at);
CREATE INDEX attempts_time ON provisioning_attempts (created_at);

CREATE TABLE tokens (
    token_reference      text PRIMARY KEY CHECK (length(token_reference) BETWEEN 1 AND 128),
    card_id              text NOT NULL REFERENCES cards (card_id),
    device_id            text,
    token_requestor_id   text,
    wallet               jsonb NOT NULL DEFAULT '{}',
    status               text NOT NULL CHECK (status IN ('pending_verification', 'active', 'suspended', 'deleted')),
    attempt_id           uuid REFERENCES provisioning_attempts (attempt_id),
    serial_number        text,
    pass_type_identifier text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tokens_card ON tokens (card_id);
CREATE INDEX tokens_device ON tokens (device_id);
CREATE INDEX tokens_serial ON tokens (serial_number);

CREATE TABLE token_events (
    id              bigserial PRIMARY KEY,
    token_reference text NOT NULL,
    card_id         text REFERENCES cards (card_id),
    event           text NOT NULL CHECK (event IN ('created', 'activated', 'suspended', 'resumed', 'deleted')),
    source          text NOT NULL CHECK (source IN ('tsp', 'issuer')),
    at              timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX token_events_card_time ON token_events (card_id, at);
CREATE INDEX token_events_token ON token_events (token_reference, at);

-- Same key and same body: the stored response. Same key, other body: 409.
-- A row is claimed (status 0) before the work runs, so a concurrent retry with the same key
-- sees 409 instead of doing the work twice; the response is stored when the work finishes.
CREATE TABLE idempotency_keys (
    scope         text NOT NULL,
    key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash  bytea NOT NULL,
    status        integer NOT NULL,
    response_body bytea NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_created ON idempotency_keys (created_at);

CREATE TABLE api_keys (
    key_id     text PRIMARY KEY,
    name       text NOT NULL,
    role       text NOT NULL CHECK (role IN ('admin', 'analyst', 'ivr')),
    key_hash   bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

-- TSP signatures already accepted, so a replay inside the 300 s window is refused on every instance.
CREATE TABLE tsp_signatures_seen (
    signature text PRIMARY KEY,
    seen_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tsp_signatures_seen_at ON tsp_signatures_seen (seen_at);

-- Append-only audit log. Each row's hash covers its content and the previous row's hash, so an
-- edited or deleted row breaks the chain (`issuerd audit verify`). The trigger refuses UPDATE and
-- DELETE for ordinary roles; the chain catches whoever bypasses it.
-- `at_ms` and `details` (JSON text) are stored exactly as they were hashed, so verification
-- recomputes the same bytes without depending on timestamp or jsonb rendering.
CREATE TABLE audit_log (
    seq       bigint PRIMARY KEY,
    at_ms     bigint NOT NULL,
    actor     text NOT NULL,
    action    text NOT NULL,
    subject   text NOT NULL,
    details   text NOT NULL,
    prev_hash bytea NOT NULL,
    hash      bytea NOT NULL
);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
