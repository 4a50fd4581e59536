-- What became of each step-up code's message, one row per challenge that sends a code (the app
-- method sends none): queued (in the outbox), sent (taken by the provider: the webhook's 2xx,
-- the mail relay's 250, the SMS centre's submit_sm_resp; with the provider's message id when it
-- gives one), delivered (the SMS centre's receipts) or undeliverable (a refusal that retrying
-- cannot change, the outbox giving up, or a receipt saying so). Kept beside `challenges`, not in
-- it, so the dispatcher's writes never touch the rows that verification locks.
CREATE TABLE challenge_deliveries (
    challenge_id uuid PRIMARY KEY REFERENCES challenges (challenge_id),
    state        text NOT NULL CHECK (state IN ('queued', 'sent', 'delivered', 'undeliverable')),
    provider     text,
    message_id   text,
    detail       text,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- The SMS centre's message id of every step-up SMS segment, written in the transaction that marks
-- its outbox message delivered (so a message the SMS centre accepted is never sent again after a
-- restart), and the delivery receipt that names it. A receipt that arrives before its id is
-- recorded is kept by the id alone (challenge_id NULL) until the id is recorded.
CREATE TABLE smpp_messages (
    message_id    text PRIMARY KEY,
    challenge_id  uuid REFERENCES challenges (challenge_id),
    outbox_id     bigint,
    segment       integer,
    segments      integer,
    submitted_at  timestamptz,
    receipt_state text,
    receipt_at    timestamptz
);
CREATE INDEX smpp_messages_challenge ON smpp_messages (challenge_id) WHERE challenge_id IS NOT NULL;
