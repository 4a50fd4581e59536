-- In-App Verification calls per customer, counted for the rate limit of POST /v1/wallet/verifications
-- across every instance (an in-memory counter would let a caller spread calls over instances).
-- Rows older than a day are pruned by the same endpoint.
CREATE TABLE wallet_verification_requests (
    id          bigserial PRIMARY KEY,
    customer_id text NOT NULL,
    at          timestamptz NOT NULL
);
CREATE INDEX wallet_verification_requests_customer_time ON wallet_verification_requests (customer_id, at);

-- The admin view lists failing and dead messages; the partial index of 0002 covers only due ones.
CREATE INDEX outbox_status_time ON outbox (status, created_at);
