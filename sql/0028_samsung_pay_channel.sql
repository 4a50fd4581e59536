-- Samsung Pay push provisioning: one more channel of add-card attempt.

ALTER TABLE provisioning_attempts DROP CONSTRAINT provisioning_attempts_channel_check;
ALTER TABLE provisioning_attempts ADD CONSTRAINT provisioning_attempts_channel_check
    CHECK (channel IN ('in_app', 'wallet_extension', 'tsp', 'mdes', 'google_pay', 'samsung_pay'));
