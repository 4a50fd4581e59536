-- Mastercard MDES calls issuerd's issuer web services (POST /mdes/issuerServices/1/0/{op}) and
-- retries a call whose answer it did not get with the same requestId: the answer given is kept
-- here, per operation and requestId, with the SHA-256 of the body it answered, so a retry gets
-- the same bytes and another body under a used requestId is refused. Bodies are not kept (they
-- carry encrypted card data).
CREATE TABLE mdes_requests (
    operation    text NOT NULL CHECK (operation IN ('authorizeService', 'requestActivationMethods',
                     'deliverActivationCode', 'notifyServiceActivated', 'notifyTokenUpdated',
                     'validateActivationCode', 'notifySuspiciousEvents')),
    request_id   text NOT NULL CHECK (length(request_id) BETWEEN 1 AND 64),
    body_sha256  bytea NOT NULL CHECK (length(body_sha256) = 32),
    status       integer NOT NULL,
    answer       text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (operation, request_id)
);
CREATE INDEX mdes_requests_time ON mdes_requests (created_at);

-- Notify Suspicious Events (MCBP replenishment anomalies): kept for analysts
-- (GET /v1/admin/mdes/suspicious-events). The events object is stored as MDES sent it; it holds
-- ATC values, no card data.
CREATE TABLE mdes_suspicious_events (
    id                      bigserial PRIMARY KEY,
    request_id              text NOT NULL,
    token_reference         text NOT NULL,
    card_id                 text REFERENCES cards (card_id),
    status                  text NOT NULL,
    payment_app_instance_id text,
    events                  jsonb NOT NULL,
    received_at             timestamptz NOT NULL
);
CREATE INDEX mdes_suspicious_events_time ON mdes_suspicious_events (received_at);
CREATE INDEX mdes_suspicious_events_token ON mdes_suspicious_events (token_reference);
