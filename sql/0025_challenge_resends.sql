-- A pending code sent again (MDES Deliver Activation Code repeated while the code is pending:
-- the same code, a new message). Each counts against ISSUERD_OTP_MAX_SENDS_PER_HOUR beside the
-- codes issued (ChallengeIssuer.enforceSendLimit), so a caller repeating the call cannot send a
-- customer more messages an hour than the limit allows.
CREATE TABLE IF NOT EXISTS challenge_resends (
    challenge_id    uuid NOT NULL REFERENCES challenges (challenge_id) ON DELETE CASCADE,
    token_reference text NOT NULL,
    at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS challenge_resends_token_time ON challenge_resends (token_reference, at);
