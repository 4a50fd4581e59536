-- Mastercard MDES (issuer web services, Customer Service API) and Google Pay push provisioning:
-- two more channels of add-card attempt, the service a token is managed through, and the outbox
-- kind whose messages go to Mastercard's Customer Service API.

ALTER TABLE provisioning_attempts DROP CONSTRAINT provisioning_attempts_channel_check;
ALTER TABLE provisioning_attempts ADD CONSTRAINT provisioning_attempts_channel_check
    CHECK (channel IN ('in_app', 'wallet_extension', 'tsp', 'mdes', 'google_pay'));

-- 'tsp': the generic contract (/v1/tsp/..., lifecycle changes through ISSUERD_TSP_WEBHOOK_URL);
-- 'mdes': a Mastercard token, its lifecycle changes sent through the Customer Service API.
ALTER TABLE tokens ADD COLUMN service text NOT NULL DEFAULT 'tsp' CHECK (service IN ('tsp', 'mdes'));

ALTER TABLE token_events DROP CONSTRAINT token_events_source_check;
ALTER TABLE token_events ADD CONSTRAINT token_events_source_check CHECK (source IN ('tsp', 'issuer', 'mdes'));

ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('notify', 'tsp', 'mdes_csapi'));
