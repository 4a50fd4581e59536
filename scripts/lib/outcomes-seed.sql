-- Outcomes and step-ups for the attempts scripts/lib/console-seed.sql wrote (run it first, with
-- the same :attempts and :days):
--
--   psql -v attempts=9000000 -v days=90 -f scripts/lib/outcomes-seed.sql
--
-- Attempt i's id, flow and time are recomputed from i as console-seed.sql made them, so nothing
-- is read back. One attempt in 200 (0.5 %) gets a current outcome from the dispute desk: fraud
-- for 60 % of the orange ones, 30 % of the yellow and 5 % of the green (a chargeback with an
-- amount lost), legitimate for the rest (the cardholder confirms). Every yellow attempt started a
-- step-up (a token in its name, as a yellow decision creates one); seven in ten completed it
-- (the token active, with its activation a few minutes after the decision).
\set ON_ERROR_STOP on
SET synchronous_commit = off;

CREATE TEMP TABLE seeded AS
SELECT i, md5('seed-attempt-' || i)::uuid AS attempt_id, 1 + (i::bigint * 104729) % greatest(50, :attempts / 20) AS c,
       CASE WHEN r < 80 THEN 'green' WHEN r < 93 THEN 'yellow' ELSE 'orange' END AS flow,
       now() - make_interval(secs => :days * 86400.0 * (:attempts - i) / :attempts) AS at
FROM (SELECT i, (i * 7 + i / 13) % 100 AS r FROM generate_series(1, :attempts) i) g
WHERE r >= 80 OR i % 200 = 7;

INSERT INTO attempt_outcomes (attempt_id, outcome, source, confirmed, reported_at, amount_lost, currency, note,
                              recorded_by, recorded_at, is_current, attempt_created_at, attempt_flow, attempt_hits)
SELECT attempt_id, CASE WHEN fraud THEN 'fraud' ELSE 'legitimate' END, CASE WHEN fraud THEN 'chargeback' ELSE 'cardholder' END,
       true, least(now(), at + interval '20 days'), CASE WHEN fraud THEN 100000 + (i % 50) * 10000 END,
       CASE WHEN fraud THEN 'KRW' END, 'seeded', 'seed', now(), true, a.created_at, a.flow, a.hits
FROM (
    SELECT s.*, (i / 200) % 100 < CASE flow WHEN 'orange' THEN 60 WHEN 'yellow' THEN 30 ELSE 5 END AS fraud
    FROM seeded s WHERE i % 200 = 7
) o JOIN provisioning_attempts a USING (attempt_id);

INSERT INTO tokens (token_reference, card_id, status, attempt_id, created_at, updated_at)
SELECT 'seed-tok-' || i, 'seed-card-' || c, CASE WHEN (i / 7) % 10 < 7 THEN 'active' ELSE 'pending_verification' END,
       attempt_id, at, at
FROM seeded WHERE flow = 'yellow';

INSERT INTO token_events (token_reference, card_id, event, source, at, recorded_at)
SELECT 'seed-tok-' || i, 'seed-card-' || c, 'activated', 'issuer', at + make_interval(secs => 30 + (i % 600)), at
FROM seeded WHERE flow = 'yellow' AND (i / 7) % 10 < 7;

ANALYZE attempt_outcomes;
ANALYZE tokens;
ANALYZE token_events;
