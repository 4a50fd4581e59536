-- Card reissue that keeps wallet tokens: a reissued card's new record starts 'inactive' and
-- inherits the old card's primary_account_identifier (and, for a renewal keeping the PAN, its
-- PAN fingerprint); the old card ends 'replaced' and keeps both, its PAN sealed for the records.
-- So both stay unique only among cards in service (neither inactive nor replaced); the indexes
-- keep the names of the constraints they replace, which callers read from a violation.
ALTER TABLE cards DROP CONSTRAINT cards_status_check;
ALTER TABLE cards ADD CONSTRAINT cards_status_check
    CHECK (status IN ('active', 'lost', 'stolen', 'blocked', 'closed', 'inactive', 'replaced'));
ALTER TABLE cards DROP CONSTRAINT cards_pan_fingerprint_key;
ALTER TABLE cards DROP CONSTRAINT cards_primary_account_identifier_key;
CREATE UNIQUE INDEX cards_pan_fingerprint_key ON cards (pan_fingerprint)
    WHERE status NOT IN ('inactive', 'replaced');
CREATE UNIQUE INDEX cards_primary_account_identifier_key ON cards (primary_account_identifier)
    WHERE status NOT IN ('inactive', 'replaced');
CREATE INDEX cards_pan_fingerprint_any ON cards (pan_fingerprint);

CREATE TABLE card_reissues (
    reissue_id          uuid PRIMARY KEY,
    reason              text NOT NULL CHECK (reason IN ('renewal', 'damaged', 'lost', 'stolen', 'compromised',
                                                        'token_fraud', 'product_change')),
    old_card_id         text NOT NULL REFERENCES cards (card_id),
    new_card_id         text NOT NULL UNIQUE REFERENCES cards (card_id),
    apply_at            text NOT NULL CHECK (apply_at IN ('activation', 'now')),
    notify_wallet       boolean NOT NULL,
    pan_changed         boolean NOT NULL,
    pan_sequence_number text CHECK (pan_sequence_number ~ '^[0-9]{2,3}$'),
    fraud_tokens        text[] NOT NULL DEFAULT '{}',
    status              text NOT NULL CHECK (status IN ('awaiting_activation', 'in_progress', 'completed', 'failed')),
    actor               text NOT NULL,
    created_at          timestamptz NOT NULL,
    applied_at          timestamptz,
    completed_at        timestamptz
);
-- One reissue waiting for activation per card (a second is 409 reissue_pending).
CREATE UNIQUE INDEX card_reissues_one_waiting ON card_reissues (old_card_id) WHERE status = 'awaiting_activation';
CREATE INDEX card_reissues_old_card ON card_reissues (old_card_id, created_at);

-- The expected token → card mapping of an applied reissue, and each token's progress at its
-- network: 'pending' (queued), 'sent' (the network took the call), 'confirmed' (the network's
-- answer or notification names the token), 'failed' (refused for good; error says why).
CREATE TABLE card_reissue_tokens (
    reissue_id      uuid NOT NULL REFERENCES card_reissues (reissue_id),
    token_reference text NOT NULL,
    service         text NOT NULL CHECK (service IN ('tsp', 'mdes')),
    action          text NOT NULL CHECK (action IN ('move', 'delete')),
    resume          boolean NOT NULL DEFAULT false,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'confirmed', 'failed')),
    error           text CHECK (length(error) <= 600),
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (reissue_id, token_reference)
);
CREATE INDEX card_reissue_tokens_token ON card_reissue_tokens (token_reference);

-- A reissue's Customer Service API call, /token/update, is refused and recorded like the others.
ALTER TABLE mdes_csapi_errors DROP CONSTRAINT mdes_csapi_errors_operation_check;
ALTER TABLE mdes_csapi_errors ADD CONSTRAINT mdes_csapi_errors_operation_check
    CHECK (operation IN ('activate', 'suspend', 'unsuspend', 'delete', 'update'));
