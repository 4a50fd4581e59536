-- Which state a token was in when the issuer suspended it because its card was reported lost or
-- stolen. When the card becomes active again only these tokens are resumed, each to the state it
-- had (a token still awaiting step-up verification goes back to pending_verification, never to
-- active), and a token the TSP or the cardholder suspended on their own stays suspended.
ALTER TABLE tokens ADD COLUMN issuer_suspended_from text
    CHECK (issuer_suspended_from IN ('active', 'pending_verification'));
