import Foundation
import IssuerdCore
import IssuerdPostgres

/// `issuerd demo --history DAYS`: decisions of the past DAYS days written straight into
/// PostgreSQL (`ISSUERD_DATABASE_URL`), so the console's pages and a first backtest have a
/// history to read: a few thousand attempts a day over cards, customers and devices of the
/// run's own, shaped as issuerd stores them (the default policy's rule ids and outcomes, shadow
/// hits, the attribute values and the velocity values its decisions record).
///
/// The velocity values are counted over the run's own attempts (each card's and device's
/// attempts in the window before), so a candidate that tightens a velocity rule changes flows
/// in a backtest; the flows themselves follow a fixed mix (80 % green, 13 % yellow, 7 % orange).
enum DemoHistory {
    /// Writes `perDay × days` attempts ending now; returns how many.
    static func seed(days: Int, perDay: Int, version: String, prefix: String, database: PostgresPool) throws -> Int {
        let count = days * perDay
        // A card tries about every day and a half, as the console's benchmark history does: a
        // few attempts in any 72 hours, so velocity thresholds near that change flows.
        let cards = max(50, perDay * 3 / 2)
        return try database.transaction { connection in
            try connection.execute(
                """
                INSERT INTO customers (customer_id, phone_number, email, created_at)
                SELECT \(prefix) || '-cust-' || i, '+8210' || lpad(i::text, 8, '0'), 'c' || i || '@example.test',
                       now() - interval '400 days'
                FROM generate_series(1, \(cards)::int) i
                """)
            try connection.execute(
                """
                INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four,
                                   expiration, cardholder_name, payment_network, primary_account_identifier, country, created_at)
                SELECT \(prefix) || '-card-' || i, \(prefix) || '-cust-' || i, '\\x00'::bytea, 1,
                       sha256((\(prefix) || '-card-' || i)::bytea), lpad(((i::bigint * 7919) % 10000)::text, 4, '0'), '12/30',
                       'DEMO HOLDER ' || i, (ARRAY['visa', 'mastercard', 'amex', 'discover'])[1 + i % 4],
                       \(prefix) || '-pai-' || i, 'KR', now() - interval '300 days'
                FROM generate_series(1, \(cards)::int) i
                """)
            return try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, request_id, inputs,
                                                   features, hits, unknowns, flow, decision, allowed_methods, ruleset_version,
                                                   facts, created_at)
                SELECT md5(\(prefix) || '-attempt-' || i)::uuid, channel, \(prefix) || '-card-' || c, \(prefix) || '-cust-' || c,
                       \(prefix) || '-dev-' || d, \(prefix) || '-req-' || i,
                       jsonb_build_object('request.channel', channel, 'card.network', (ARRAY['visa', 'mastercard', 'amex', 'discover'])[1 + c % 4],
                                          'card.country', 'KR', 'card.status', 'active', 'device.id', \(prefix) || '-dev-' || d,
                                          'device.active_tokens', tokens, 'customer.name_match_score', score),
                       jsonb_build_object('attempts(card, 24h)', card_24h, 'attempts(card, 72h)', card_72h,
                                          'attempts(customer, 7d)', card_7d, 'attempts(device, 24h)', device_24h,
                                          'distinct_cards(device, 24h)', least(device_24h, 1), 'distinct_names(device, 30d)', 0,
                                          'failed_otps(card, 7d)', 0, 'failed_otps(customer, 24h)', 0,
                                          'failed_stepups(customer, 30d)', 0, 'token_deletions(card, 180d)', 0,
                                          'token_deletions(card, 30d)', 0),
                       (CASE WHEN r >= 80 AND r < 93 THEN jsonb_build_array(jsonb_build_object(
                                'rule', 'customer.name_mismatch', 'outcome', 'yellow', 'reason', 'NAME_MISMATCH', 'mode', 'live',
                                'values', jsonb_build_array(jsonb_build_object('name', 'customer.name_match_score', 'value', score, 'text', score::text))))
                             WHEN r >= 93 THEN jsonb_build_array(jsonb_build_object(
                                'rule', 'velocity.card_burst', 'outcome', 'orange', 'reason', 'VELOCITY_CARD_BURST', 'mode', 'live',
                                'values', jsonb_build_array(jsonb_build_object('name', 'attempts(card, 1h)', 'value', 6, 'text', '6'))))
                             ELSE '[]'::jsonb END)
                       || (CASE WHEN tokens >= 8 THEN jsonb_build_array(jsonb_build_object(
                                'rule', 'device.crowded', 'outcome', 'yellow', 'reason', 'DEVICE_CROWDED', 'mode', 'shadow',
                                'values', jsonb_build_array(jsonb_build_object('name', 'device.active_tokens', 'value', tokens, 'text', tokens::text))))
                           ELSE '[]'::jsonb END),
                       '[]'::jsonb, flow,
                       CASE flow WHEN 'green' THEN 'APPROVED' WHEN 'yellow' THEN 'REQUIRE_ADDITIONAL_AUTHENTICATION' ELSE 'DECLINED' END,
                       CASE flow WHEN 'yellow' THEN '{sms,email}'::text[] ELSE '{}'::text[] END, \(version), '{}'::jsonb, at
                FROM (
                    SELECT g.*, CASE WHEN r < 80 THEN 'green' WHEN r < 93 THEN 'yellow' ELSE 'orange' END AS flow,
                           count(*) OVER (PARTITION BY c ORDER BY at RANGE BETWEEN interval '24 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS card_24h,
                           count(*) OVER (PARTITION BY c ORDER BY at RANGE BETWEEN interval '72 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS card_72h,
                           count(*) OVER (PARTITION BY c ORDER BY at RANGE BETWEEN interval '168 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS card_7d,
                           count(*) OVER (PARTITION BY d ORDER BY at RANGE BETWEEN interval '24 hours' PRECEDING AND interval '1 microsecond' PRECEDING) AS device_24h
                    FROM (
                        SELECT i, 1 + (i::bigint * 104729) % \(cards)::int AS c, i % (\(cards)::int * 2) AS d,
                               (ARRAY['in_app', 'in_app', 'in_app', 'in_app', 'in_app', 'wallet_extension', 'wallet_extension', 'tsp', 'tsp', 'tsp'])[1 + i % 10] AS channel,
                               (i * 31) % 10 AS tokens, 40 + (i * 17) % 61 AS score, (i * 7 + i / 13) % 100 AS r,
                               now() - make_interval(secs => \(days)::int * 86400.0 * (\(count)::int - i) / \(count)::int) AS at
                        FROM generate_series(1, \(count)::int) i
                    ) g
                ) s
                ORDER BY at
                """)
        }
    }
}
