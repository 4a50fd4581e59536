-- What Mastercard's Customer Service API answered when it refused an `mdes_csapi` outbox
-- message: one row per entry of its `Errors.Error[]` (one row with only the HTTP status when the
-- answer carried none). The outbox row keeps the outcome (retried, or dead-lettered when an error
-- was not recoverable); this keeps every refusal, also those a later try overcame.
CREATE TABLE mdes_csapi_errors (
    id              bigserial PRIMARY KEY,
    outbox_id       bigint NOT NULL,
    attempt         integer NOT NULL,
    token_reference text NOT NULL,
    operation       text NOT NULL CHECK (operation IN ('activate', 'suspend', 'unsuspend', 'delete')),
    http_status     integer NOT NULL,
    source          text CHECK (length(source) <= 64),
    reason_code     text CHECK (length(reason_code) <= 100),
    error_code      text CHECK (length(error_code) <= 100),
    description     text CHECK (length(description) <= 256),
    -- Mastercard's `Recoverable`; NULL when the answer did not say.
    recoverable     boolean,
    at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mdes_csapi_errors_token ON mdes_csapi_errors (token_reference, at);
CREATE INDEX mdes_csapi_errors_outbox ON mdes_csapi_errors (outbox_id);
