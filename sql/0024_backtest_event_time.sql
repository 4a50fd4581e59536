-- A backtest reads its window in time order, a slice at a time, and with each slice the step-up
-- failures and token deletions of that slice's time range, for every card, device and customer
-- (BacktestStream.swift): the velocity it counts is kept per key only for the rules' longest
-- window, so it can no longer ask for the window's ids up front. Without these, each slice's
-- read was a scan of the whole table. Both tables take few writes (a wrong code, a deletion),
-- so the extra index entry costs little.
CREATE INDEX IF NOT EXISTS challenge_failures_time ON challenge_failures (at);
CREATE INDEX IF NOT EXISTS token_events_deleted_time ON token_events (at) WHERE event = 'deleted';
