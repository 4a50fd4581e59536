-- What became of each step-up code's message: queued (in the outbox), sent (accepted by the
-- provider: the webhook's 2xx, the mail relay's 250, the SMS centre's submit_sm_resp, with the
-- provider's message id when it gives one), delivered (the SMS centre's delivery receipt) or
-- undeliverable (a refusal that retrying cannot change, a receipt saying it never arrived, or
-- the outbox giving up). Challenges written before this column existed have no state (NULL).
ALTER TABLE challenges
    ADD COLUMN delivery_state text CHECK (delivery_state IN ('queued', 'sent', 'delivered', 'undeliverable')),
    ADD COLUMN delivery_provider text,
    ADD COLUMN delivery_message_id text,
    ADD COLUMN delivery_detail text,
    ADD COLUMN delivery_updated_at timestamptz;
ALTER TABLE challenges ALTER COLUMN delivery_state SET DEFAULT 'queued';
-- A receipt names the provider's message id only.
CREATE INDEX challenges_delivery_message ON challenges (delivery_message_id) WHERE delivery_message_id IS NOT NULL;
