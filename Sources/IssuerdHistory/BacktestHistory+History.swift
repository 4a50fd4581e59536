import Dispatch
import Foundation
import IssuerdPostgres
import IssuerdRisk
import Synchronization

/// The history a counted velocity value needs: the events of one kind and key for a set of ids.
extension BacktestHistory {
    /// The events of `kind` whose `key` id is one of `ids`, in `[start, end)`: a slice of
    /// `[since - look-back, since)` for attempts (those of the window are already read) and of
    /// `[since - look-back, until)` for the others, as the export defines them (``HistoryExport``).
    /// Attempts carry their cardholder name hash only with `names` (a `distinct_names` query):
    /// without it, the time and the keys are all an attempt read by time needs, and the
    /// `attempts_time_keys` index holds them (an index-only scan, not the 1.2 KB heap rows).
    /// That index is partial on ``timeKeysPredicate``, which the query states for it.
    package static func readHistory(
        kind: VelocityEvent.Kind, key: VelocityKey, ids selection: HistoryRead.IDs, names: Bool, from start: Date,
        to end: Date, connection: PostgresConnection, event: (VelocityEvent) -> Bool
    ) throws {
        let column = key.rawValue + "_id"  // card_id, device_id, customer_id: a fixed set
        let ids: [String]
        var kept: Set<String>?
        switch selection {
        case .sent(let list): ids = list
        case .kept(let set): (ids, kept) = ([], set)
        }
        // By card, the card is the key's own column, sent once (the rows' card is read from it).
        let cardColumn = key == .card ? "NULL::text" : "a.card_id"
        let nameColumn = names ? "a.cardholder_name_hash" : "NULL::text"
        let query: PostgresQuery
        switch kind {
        case .attempt where kept != nil:
            query = """
                DECLARE issuerd_backtest_history NO SCROLL CURSOR FOR
                SELECT a.created_at, \(unsafeSQL: cardColumn), a.\(unsafeSQL: column), \(unsafeSQL: nameColumn)
                FROM provisioning_attempts a
                WHERE a.\(unsafeSQL: column) IS NOT NULL AND a.created_at >= \(start) AND a.created_at < \(end)
                  AND \(unsafeSQL: timeKeysPredicate)
                """
        case .attempt:
            query = """
                DECLARE issuerd_backtest_history NO SCROLL CURSOR FOR
                SELECT a.created_at, \(unsafeSQL: cardColumn), a.\(unsafeSQL: column), \(unsafeSQL: nameColumn)
                FROM provisioning_attempts a
                WHERE a.\(unsafeSQL: column) = ANY(\(ids)) AND a.created_at >= \(start) AND a.created_at < \(end)
                """
        case .otpFailure, .stepUpFailure:
            guard key != .device else { return }  // failures carry no device
            let kinds = kind == .otpFailure ? ["wrong_code"] : ["locked", "expired"]
            query = """
                DECLARE issuerd_backtest_history NO SCROLL CURSOR FOR
                SELECT f.at, f.card_id, f.\(unsafeSQL: column), NULL::text
                FROM challenge_failures f
                WHERE f.\(unsafeSQL: column) = ANY(\(ids)) AND f.kind = ANY(\(kinds)) AND f.at >= \(start) AND f.at < \(end)
                """
        case .tokenDeletion:
            // A deletion's card is its own or its token's, its device the token's, its customer
            // the card's. Candidates come through the deletions index by card and the tokens of
            // the key's cards or devices; the last condition is exact.
            let keyExpression =
                switch key {
                case .card: "coalesce(e.card_id, t.card_id)"
                case .device: "t.device_id"
                case .customer: "c.customer_id"
                }
            query = """
                DECLARE issuerd_backtest_history NO SCROLL CURSOR FOR
                WITH key_cards AS MATERIALIZED (
                    SELECT unnest(\(ids)::text[]) AS card_id WHERE \(key.rawValue) = 'card'
                    UNION
                    SELECT c.card_id FROM cards c WHERE \(key.rawValue) = 'customer' AND c.customer_id = ANY(\(ids))),
                key_tokens AS MATERIALIZED (
                    SELECT t.token_reference FROM tokens t WHERE t.card_id IN (SELECT card_id FROM key_cards)
                    UNION
                    SELECT t.token_reference FROM tokens t WHERE \(key.rawValue) = 'device' AND t.device_id = ANY(\(ids)))
                SELECT e.at, coalesce(e.card_id, t.card_id), \(unsafeSQL: keyExpression), NULL::text
                FROM token_events e
                LEFT JOIN tokens t ON t.token_reference = e.token_reference
                LEFT JOIN cards c ON c.card_id = coalesce(e.card_id, t.card_id)
                WHERE e.id IN (
                    SELECT e.id FROM token_events e
                    WHERE e.event = 'deleted' AND e.card_id IN (SELECT card_id FROM key_cards) AND e.at >= \(start) AND e.at < \(end)
                    UNION
                    SELECT e.id FROM token_events e
                    WHERE e.event = 'deleted' AND e.token_reference IN (SELECT token_reference FROM key_tokens)
                      AND e.at >= \(start) AND e.at < \(end))
                  AND \(unsafeSQL: keyExpression) = ANY(\(ids))
                """
        }
        precondition(kind == .attempt || kept == nil, "only attempts are read by time alone")
        try stream(query, cursor: "issuerd_backtest_history", connection: connection) { row in
            let id: String? = try row.decode(2)
            if let kept, let id, !kept.contains(id) { return true }
            // The key's own column when the key is the card (the same value, decoded once).
            let card: String? = key == .card ? id : try row.decode(1)
            return event(
                VelocityEvent(
                    kind: kind, time: try row.decode(0), cardID: card, deviceID: key == .device ? id : nil,
                    customerID: key == .customer ? id : nil, cardholderName: try row.decode(3)))
        }
    }

    /// The predicate of the partial index `attempts_time_keys` (sql/0017): true of every
    /// attempt, and stated only by the history read by time, so that only it is planned through
    /// the index.
    package static let timeKeysPredicate = "a.created_at > '-infinity'"

    /// One slice of one history query.
    package struct HistoryRead {
        /// How the ids select the rows.
        package enum IDs {
            /// In the query (`= ANY(…)`), through the key's index.
            case sent([String])
            /// Not sent: every row of the range is read and those of other ids are dropped here.
            case kept(Set<String>)
        }
        package var kind: VelocityEvent.Kind
        package var key: VelocityKey
        package var ids: IDs
        /// Whether attempts carry their cardholder name hash (some query of the key counts names).
        package var names: Bool
        package var from: Date
        package var to: Date
    }
}
