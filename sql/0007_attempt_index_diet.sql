-- Every provisioning decision inserts one attempt and plans a handful of look-ups on this
-- table; each index costs a write per insert and a candidate per look-up for the planner
-- (docs/performance.md).
--
-- (card_id, device_id, created_at) served only the "pending yellow push of this card on this
-- device" look-up, which (card_id, created_at) answers as well: a card has few attempts.
DROP INDEX attempts_card_device_time;

-- Attempts arrive in time order, so a BRIN index answers the time-range scans of backtests and
-- retention for a fraction of a B-tree's upkeep.
DROP INDEX attempts_time;
CREATE INDEX attempts_time_brin ON provisioning_attempts USING brin (created_at);
