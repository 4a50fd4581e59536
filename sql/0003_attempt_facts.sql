-- What an attempt's decision needs beyond the rule attributes: `inputs` stays exactly the
-- attribute object that `rules backtest` replays (AttemptLog), so the request facts used by
-- explain (channel details, device, chain failure, the answer sent) live beside it.
ALTER TABLE provisioning_attempts ADD COLUMN facts jsonb NOT NULL DEFAULT '{}';

-- The TSP retry check (same requestId and tokenReference) and the "yellow in-app push forces
-- step-up at the next TSP authorization of that card on that device" look-up.
CREATE INDEX attempts_request ON provisioning_attempts (request_id, token_reference) WHERE channel = 'tsp';
CREATE INDEX attempts_card_device_time ON provisioning_attempts (card_id, device_id, created_at);
CREATE INDEX token_events_deleted ON token_events (card_id, at) WHERE event = 'deleted';
