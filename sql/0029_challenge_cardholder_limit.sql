-- One-time codes counted per cardholder as well as per token: every message with a code goes to a
-- customer and a destination, and ISSUERD_OTP_MAX_SENDS_PER_CARDHOLDER_PER_HOUR bounds both across
-- tokens and methods (ChallengeIssuer.enforceCardholderLimit). The destination is kept only as a
-- keyed HMAC (the PAN fingerprint key, its own domain), so the same phone number or address of two
-- customers is counted together without storing it in clear. Rows from before have none.
ALTER TABLE challenges ADD COLUMN IF NOT EXISTS destination_fingerprint bytea;
CREATE INDEX IF NOT EXISTS challenges_customer_time ON challenges (customer_id, created_at);
CREATE INDEX IF NOT EXISTS challenges_destination_time ON challenges (destination_fingerprint, created_at)
    WHERE destination_fingerprint IS NOT NULL;
CREATE INDEX IF NOT EXISTS challenge_resends_challenge ON challenge_resends (challenge_id);
