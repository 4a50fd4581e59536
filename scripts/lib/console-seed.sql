-- Synthetic decision history for the analyst console's benchmark and browser test.
--
--   psql -v attempts=1000000 -v days=30 -v version=<ruleset version> -f scripts/lib/console-seed.sql
--
-- Attempts are spread evenly over the :days days before :until (default now) in time order (as
-- real ones arrive, so the BRIN index on created_at stays tight), over :attempts/20 customers with one card each.
-- Hits are shaped as issuerd writes them (DecisionJSON): rule ids of the default policy with
-- their outcomes, some shadow hits (device.crowded), the values read, and the velocity values
-- read (features, which the backtest uses as recorded). inputs and features are json columns
-- (sql/0018) given jsonb values here, so their text is jsonb's spaced rendering, as in rows
-- stored before that migration, not issuerd's compact one. Card numbers never exist:
-- the PAN columns hold placeholders. Everything is generated in SQL: one statement per table.
\set ON_ERROR_STOP on
SET synchronous_commit = off;
-- The newest attempt's time: now unless -v until='2026-10-31 12:00+00' (scripts/bench-history
-- fills one past month).
\if :{?until}
\else
\set until now
\endif

INSERT INTO customers (customer_id, phone_number, email, created_at)
SELECT 'seed-cust-' || i, '+4470000' || lpad(i::text, 5, '0'), 'c' || i || '@example.test', now() - interval '400 days'
FROM generate_series(1, greatest(50, :attempts / 20)) i
ON CONFLICT DO NOTHING;

INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration,
                   cardholder_name, payment_network, primary_account_identifier, country, created_at)
SELECT 'seed-card-' || i, 'seed-cust-' || i, '\x00'::bytea, 1, sha256(('seed-card-' || i)::bytea),
       lpad(((i::bigint * 7919) % 10000)::text, 4, '0'), '12/30', 'Seed Holder ' || i,
       (ARRAY['visa', 'mastercard', 'amex', 'discover'])[1 + i % 4], 'seed-pai-' || i, 'GB', now() - interval '300 days'
FROM generate_series(1, greatest(50, :attempts / 20)) i
ON CONFLICT DO NOTHING;

INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, request_id, inputs, features, hits,
                                   unknowns, flow, decision, allowed_methods, ruleset_version, facts, created_at)
SELECT md5('seed-attempt-' || i)::uuid, channel, 'seed-card-' || c, 'seed-cust-' || c, 'seed-dev-' || (i % (greatest(50, :attempts / 20) * 2)),
       'seed-req-' || i,
       jsonb_build_object('request.channel', channel, 'card.network', (ARRAY['visa', 'mastercard', 'amex', 'discover'])[1 + c % 4],
                          'card.country', 'GB', 'card.status', 'active', 'device.id', 'seed-dev-' || (i % (greatest(50, :attempts / 20) * 2)),
                          'device.active_tokens', tokens, 'customer.name_match_score', score),
       features, hits, '[]'::jsonb, flow,
       CASE flow WHEN 'green' THEN 'APPROVED' WHEN 'yellow' THEN 'REQUIRE_ADDITIONAL_AUTHENTICATION' ELSE 'DECLINED' END,
       CASE flow WHEN 'yellow' THEN '{sms,email}'::text[] ELSE '{}'::text[] END,
       :'version', '{}'::jsonb, at
FROM (
    SELECT i, c, channel, tokens, score, at,
           jsonb_build_object('attempts(card, 24h)', card_24h, 'attempts(card, 72h)', card_72h, 'attempts(customer, 7d)', customer_7d,
                              'attempts(device, 24h)', device_24h, 'distinct_cards(device, 24h)', least(device_24h, 1),
                              'distinct_names(device, 30d)', 0, 'failed_otps(card, 7d)', 0, 'failed_otps(customer, 24h)', 0,
                              'failed_stepups(customer, 30d)', 0, 'token_deletions(card, 180d)', 0, 'token_deletions(card, 30d)', 0)
               AS features,
           CASE WHEN r < 80 THEN 'green' WHEN r < 93 THEN 'yellow' ELSE 'orange' END AS flow,
           (CASE WHEN r >= 80 AND r < 93 THEN jsonb_build_array(jsonb_build_object(
                    'rule', 'customer.name_mismatch', 'outcome', 'yellow', 'reason', 'NAME_MISMATCH', 'mode', 'live',
                    'values', jsonb_build_array(jsonb_build_object('name', 'customer.name_match_score', 'value', score, 'text', score::text))))
                 WHEN r >= 93 AND r < 97 THEN jsonb_build_array(jsonb_build_object(
                    'rule', 'velocity.card_burst', 'outcome', 'orange', 'reason', 'VELOCITY_CARD_BURST', 'mode', 'live',
                    'values', jsonb_build_array(jsonb_build_object('name', 'attempts(card, 1h)', 'value', 6, 'text', '6'))))
                 WHEN r >= 97 THEN jsonb_build_array(
                    jsonb_build_object('rule', 'device.blocked', 'outcome', 'orange', 'reason', 'DEVICE_BLOCKED', 'mode', 'live',
                        'values', jsonb_build_array(jsonb_build_object('name', 'device.id', 'value', 'seed-dev', 'text', 'seed-dev'))),
                    jsonb_build_object('rule', 'customer.name_mismatch', 'outcome', 'yellow', 'reason', 'NAME_MISMATCH', 'mode', 'live',
                        'values', jsonb_build_array(jsonb_build_object('name', 'customer.name_match_score', 'value', score, 'text', score::text))))
                 ELSE '[]'::jsonb END)
           || (CASE WHEN tokens >= 8 THEN jsonb_build_array(jsonb_build_object(
                    'rule', 'device.crowded', 'outcome', 'yellow', 'reason', 'DEVICE_CROWDED', 'mode', 'shadow',
                    'values', jsonb_build_array(jsonb_build_object('name', 'device.active_tokens', 'value', tokens, 'text', tokens::text))))
               ELSE '[]'::jsonb END) AS hits
    FROM (
    -- The velocity values the default policy reads, as its decision would have recorded them
    -- (features): windows [t - w, t) over this seed's own attempts (card and customer are one
    -- to one; a device always sees the same card, since 2N * 104729 = 0 mod N, so its distinct
    -- cards are 0 or 1; no names are hashed and no failures or deletions are seeded: 0).
    SELECT g.*,
           count(*) OVER (PARTITION BY c ORDER BY at RANGE BETWEEN interval '24 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS card_24h,
           count(*) OVER (PARTITION BY c ORDER BY at RANGE BETWEEN interval '72 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS card_72h,
           count(*) OVER (PARTITION BY c ORDER BY at RANGE BETWEEN interval '168 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS customer_7d,
           count(*) OVER (PARTITION BY i % (greatest(50, :attempts / 20) * 2) ORDER BY at
                          RANGE BETWEEN interval '24 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS device_24h
    FROM (
        SELECT i, 1 + (i::bigint * 104729) % greatest(50, :attempts / 20) AS c,
               (ARRAY['in_app', 'in_app', 'in_app', 'in_app', 'in_app', 'wallet_extension', 'wallet_extension', 'tsp', 'tsp', 'tsp'])[1 + i % 10] AS channel,
               (i * 31) % 10 AS tokens, 40 + (i * 17) % 61 AS score, (i * 7 + i / 13) % 100 AS r,
               :'until'::timestamptz - make_interval(secs => :days * 86400.0 * (:attempts - i) / :attempts) AS at
        FROM generate_series(1, :attempts) i
    ) g
    ) w
) s
ORDER BY at;
ANALYZE provisioning_attempts;
ANALYZE cards;
