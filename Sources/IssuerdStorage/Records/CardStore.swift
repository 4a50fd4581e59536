import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres

/// A card's lifecycle state.
package enum CardStatusValue: String, Sendable, CaseIterable, Codable {
    case active, lost, stolen, blocked, closed
    /// A reissued card's new record before its activation: add-card requests are declined.
    case inactive
    /// A reissued card's old record once its tokens moved: final, kept for the records.
    case replaced

    /// The statuses an operator may give a card (registration, the status route); `inactive` and
    /// `replaced` come only from a reissue.
    package static let settable: [CardStatusValue] = [.active, .lost, .stolen, .blocked, .closed]

    /// Lost, stolen and closed cards must lose their tokens at the TSP.
    package var revokesTokens: Bool { self == .lost || self == .stolen || self == .closed }
}

/// A card row. The PAN is only ever held sealed; ``CardStore/openPAN(_:vault:)`` opens it for
/// the moments it is needed (the pass payload, activation data).
package struct CardRecord: Sendable {
    package var cardID: String
    package var customerID: String
    package var sealedPAN: SealedPAN
    package var lastFour: String
    /// Read as `MM/YY`: a stored value that is not one fails the card's decoding.
    package var expiration: CardExpiration
    package var cardholderName: String
    package var paymentNetwork: String
    package var status: CardStatusValue
    package var localizedDescription: String?
    package var primaryAccountIdentifier: String
    package var country: String?
    package var createdAt: Date
}

/// Reads and writes `cards` and `card_status_history`.
package enum CardStore {
    private static let columnNames = [
        "card_id", "customer_id", "pan_ciphertext", "pan_key_version", "last_four", "expiration", "cardholder_name",
        "payment_network", "status", "localized_description", "primary_account_identifier", "country", "created_at",
    ]
    private static let columns = columnNames.joined(separator: ", ")

    /// The select list ``decode(_:)`` reads, each column qualified by `alias` (for joins).
    package static func columns(qualifiedBy alias: String) -> String {
        columnNames.map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    /// The PAN ciphertext is bound to its card id, so a ciphertext copied into another row does
    /// not open there.
    /// Apple's `primaryAccountIdentifier` only has to be stable and unique per card; it must not
    /// reveal the PAN, so it is derived from the fingerprint rather than the digits.
    package static func primaryAccountIdentifier(fingerprint: [UInt8], cardID: String) -> String {
        "V-" + BinaryEncoding.hexString(SHA256.hash(fingerprint + Array(cardID.utf8)).prefix(12)).uppercased()
    }

    package static func panContext(_ cardID: String) -> [UInt8] { Array("card:\(cardID)".utf8) }

    package static func find(_ cardID: String, connection: PostgresConnection) throws -> CardRecord? {
        try connection.query("SELECT \(unsafeSQL: columns) FROM cards WHERE card_id = \(cardID)").first.map(decode)
    }

    /// The card if it belongs to `customerID`; nil otherwise (the API answers 404 either way, so
    /// another customer's card is indistinguishable from a missing one).
    package static func find(
        _ cardID: String, ownedBy customerID: String, connection: PostgresConnection
    ) throws -> CardRecord? {
        try connection.query(
            "SELECT \(unsafeSQL: columns) FROM cards WHERE card_id = \(cardID) AND customer_id = \(customerID)"
        ).first.map(decode)
    }

    /// The card with this PAN, found by its keyed fingerprint.
    package static func find(
        pan: PrimaryAccountNumber, vault: PANVault, connection: PostgresConnection
    ) throws -> CardRecord? {
        let fingerprint = try vault.fingerprint(pan)
        // A reissue keeping the PAN leaves several records of it: the one in service comes first.
        return try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM cards WHERE pan_fingerprint = \(fingerprint)
            ORDER BY status = 'replaced', status = 'inactive', created_at DESC LIMIT 1
            """
        ).first.map(decode)
    }

    /// The customer's cards, a replaced card left out (its reissued successor stands for it).
    package static func list(customerID: String, connection: PostgresConnection) throws -> [CardRecord] {
        try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM cards WHERE customer_id = \(customerID) AND status <> 'replaced'
            ORDER BY created_at, card_id
            """
        )
        .map(decode)
    }

    /// Inserts a card, sealing its PAN and computing its fingerprint.
    ///
    /// - Throws: ``PostgresError`` `.uniqueViolation` (constraint `cards_pkey` or
    ///   `cards_pan_fingerprint_key`) for a duplicate id or PAN.
    package static func insert(
        cardID: String, customerID: String, pan: PrimaryAccountNumber, expiration: CardExpiration,
        cardholderName: String,
        paymentNetwork: String, status: CardStatusValue, localizedDescription: String?, country: String?, now: Date,
        primaryAccountIdentifier inherited: String? = nil, vault: PANVault, connection: PostgresConnection
    ) throws -> CardRecord {
        let sealed = try vault.seal(pan, context: panContext(cardID))
        let fingerprint = try vault.fingerprint(pan)
        // A reissued card keeps its predecessor's identifier: the app and Wallet see the same card.
        let identifier = inherited ?? primaryAccountIdentifier(fingerprint: fingerprint, cardID: cardID)
        try connection.execute(
            """
            INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration,
                               cardholder_name, payment_network, status, localized_description, primary_account_identifier,
                               country, created_at, updated_at)
            VALUES (\(cardID), \(customerID), \(sealed.bytes), \(sealed.keyVersion), \(fingerprint), \(pan.lastFour), \(expiration.slashed),
                    \(cardholderName), \(paymentNetwork), \(status.rawValue), \(localizedDescription), \(identifier), \(country), \(now), \(now))
            """)
        try connection.execute(
            """
            INSERT INTO card_status_history (card_id, old_status, new_status, reason, actor, at)
            VALUES (\(cardID), NULL, \(status.rawValue), 'created', 'system', \(now))
            """)
        return CardRecord(
            cardID: cardID, customerID: customerID, sealedPAN: sealed, lastFour: pan.lastFour, expiration: expiration,
            cardholderName: cardholderName, paymentNetwork: paymentNetwork, status: status,
            localizedDescription: localizedDescription, primaryAccountIdentifier: identifier, country: country,
            createdAt: now)
    }

    /// The columns of the `cards` rows ``appendCopyRow(_:into:)`` writes, in order.
    package static let copyColumns = """
        card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration, cardholder_name,
        payment_network, status, localized_description, primary_account_identifier, country, created_at, updated_at
        """

    /// The columns of the `card_status_history` rows ``appendCreatedHistoryRow(cardID:status:stamp:into:)``
    /// writes, in order.
    package static let historyCopyColumns = "card_id, old_status, new_status, reason, actor, at"

    /// A new card's `cards` row in `COPY` text (the bulk writers: `cards import`, `cards
    /// reissue`), as ``insert(cardID:customerID:pan:expiration:cardholderName:paymentNetwork:status:localizedDescription:country:now:primaryAccountIdentifier:vault:connection:)``
    /// writes it; `stamp` is the creation time as ``PostgresCopyText/timestampText(_:)``.
    package static func appendCopyRow(
        cardID: String, customerID: String, sealed: SealedPAN, fingerprint: [UInt8], lastFour: String,
        expiration: CardExpiration, cardholderName: String, paymentNetwork: String, status: CardStatusValue,
        localizedDescription: String?, primaryAccountIdentifier: String, country: String?, stamp: String,
        into copy: inout PostgresCopyText
    ) {
        copy.text(cardID)
        copy.text(customerID)
        copy.bytea(sealed.bytes)
        copy.integer(sealed.keyVersion)
        copy.bytea(fingerprint)
        copy.text(lastFour)
        copy.text(expiration.slashed)
        copy.text(cardholderName)
        copy.text(paymentNetwork)
        copy.text(status.rawValue)
        copy.text(localizedDescription)
        copy.text(primaryAccountIdentifier)
        copy.text(country)
        copy.text(stamp)
        copy.text(stamp)
        copy.endRow()
    }

    /// A new card's first `card_status_history` row in `COPY` text: no old status, reason
    /// `created`, actor `system`, as ``insert(cardID:customerID:pan:expiration:cardholderName:paymentNetwork:status:localizedDescription:country:now:primaryAccountIdentifier:vault:connection:)`` writes it.
    package static func appendCreatedHistoryRow(
        cardID: String, status: CardStatusValue, stamp: String, into copy: inout PostgresCopyText
    ) {
        copy.text(cardID)
        copy.text(nil)
        copy.text(status.rawValue)
        copy.text("created")
        copy.text("system")
        copy.text(stamp)
        copy.endRow()
    }

    /// Marks reissued cards `replaced` under row locks, in one statement, and records each
    /// change with its reason (as ``setStatus(_:to:reason:actor:now:connection:)`` does one).
    package static func markReplaced(
        _ cards: [(cardID: String, reason: String)], actor: String, now: Date, connection: PostgresConnection
    ) throws {
        guard !cards.isEmpty else { return }
        try connection.execute(
            """
            WITH old AS (SELECT card_id, status FROM cards WHERE card_id = ANY(\(cards.map(\.cardID))::text[])
                         ORDER BY card_id FOR UPDATE),
                 changed AS (UPDATE cards c SET status = 'replaced', updated_at = \(now) FROM old
                             WHERE c.card_id = old.card_id RETURNING c.card_id, old.status AS old_status)
            INSERT INTO card_status_history (card_id, old_status, new_status, reason, actor, at)
            SELECT changed.card_id, changed.old_status, 'replaced', r.reason, \(actor), \(now)
            FROM changed JOIN unnest(\(cards.map(\.cardID))::text[], \(cards.map(\.reason))::text[]) AS r(card_id, reason)
                 USING (card_id)
            ORDER BY changed.card_id
            """)
    }

    /// Locks the card's row for the transaction; its status, or nil when there is no such card.
    package static func lockStatus(_ cardID: String, connection: PostgresConnection) throws -> CardStatusValue? {
        guard let row = try connection.query("SELECT status FROM cards WHERE card_id = \(cardID) FOR UPDATE").first
        else { return nil }
        return CardStatusValue(rawValue: try row.decode("status"))
    }

    /// Whether a card, in any status, holds the PAN with this keyed fingerprint.
    package static func holdsPAN(fingerprint: [UInt8], connection: PostgresConnection) throws -> Bool {
        try connection.query("SELECT 1 FROM cards WHERE pan_fingerprint = \(fingerprint) LIMIT 1").first != nil
    }

    /// The card's last four digits (never more of the PAN), or nil when there is no such card.
    package static func lastFour(_ cardID: String, connection: PostgresConnection) throws -> String? {
        try connection.query("SELECT last_four FROM cards WHERE card_id = \(cardID)").first?.decode("last_four")
    }

    /// The card's expiry (`MM/YY`) and PAN fingerprint, or nil when there is no such card.
    package static func expirationAndFingerprint(
        _ cardID: String, connection: PostgresConnection
    ) throws -> (expiration: String, fingerprint: [UInt8])? {
        guard
            let row = try connection.query(
                "SELECT expiration, pan_fingerprint FROM cards WHERE card_id = \(cardID)"
            ).first
        else { return nil }
        return (try row.decode("expiration"), try row.decode("pan_fingerprint"))
    }

    /// Cards whose PAN is sealed under a key version other than `current`: how many.
    package static func countSealed(otherThan current: Int, connection: PostgresConnection) throws -> Int64 {
        try connection.query("SELECT count(*) AS n FROM cards WHERE pan_key_version <> \(current)").first?
            .decode("n", as: Int64.self) ?? 0
    }

    /// Up to `limit` of those cards in id order, locked for the transaction; rows another
    /// transaction holds are skipped.
    package static func lockSealed(
        otherThan current: Int, limit: Int, connection: PostgresConnection
    ) throws -> [(cardID: String, sealed: SealedPAN)] {
        try connection.query(
            """
            SELECT card_id, pan_ciphertext, pan_key_version FROM cards WHERE pan_key_version <> \(current)
            ORDER BY card_id LIMIT \(limit) FOR UPDATE SKIP LOCKED
            """
        ).map {
            (
                try $0.decode("card_id"),
                SealedPAN(keyVersion: try $0.decode("pan_key_version"), bytes: try $0.decode("pan_ciphertext"))
            )
        }
    }

    /// Stores the card's PAN sealed anew (a key rotation).
    package static func storeResealed(
        _ cardID: String, _ sealed: SealedPAN, now: Date, connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            UPDATE cards SET pan_ciphertext = \(sealed.bytes), pan_key_version = \(sealed.keyVersion), updated_at = \(now)
            WHERE card_id = \(cardID)
            """)
    }

    /// Changes the status under a row lock and records the change.
    ///
    /// - Returns: The previous status, or nil when the card does not exist.
    package static func setStatus(
        _ cardID: String, to status: CardStatusValue, reason: String?, actor: String, now: Date,
        connection: PostgresConnection
    ) throws -> CardStatusValue? {
        guard let old = try lockStatus(cardID, connection: connection) else { return nil }
        try connection.execute(
            "UPDATE cards SET status = \(status.rawValue), updated_at = \(now) WHERE card_id = \(cardID)")
        try connection.execute(
            """
            INSERT INTO card_status_history (card_id, old_status, new_status, reason, actor, at)
            VALUES (\(cardID), \(old.rawValue), \(status.rawValue), \(reason), \(actor), \(now))
            """)
        return old
    }

    /// Opens the card's PAN.
    package static func openPAN(_ card: CardRecord, vault: PANVault) throws -> PrimaryAccountNumber {
        try vault.open(card.sealedPAN, context: panContext(card.cardID))
    }

    /// The stored `MM/YY` expiry of the card in `row`.
    private static func expiration(_ row: PostgresRow) throws -> CardExpiration {
        guard let expiration = CardExpiration(try row.decode("expiration", as: String.self)) else {
            throw PostgresError(code: .decoding, message: "column \"expiration\" is not MM/YY")
        }
        return expiration
    }

    package static func decode(_ row: PostgresRow) throws -> CardRecord {
        CardRecord(
            cardID: try row.decode("card_id"), customerID: try row.decode("customer_id"),
            sealedPAN: SealedPAN(
                keyVersion: try row.decode("pan_key_version"), bytes: try row.decode("pan_ciphertext")),
            lastFour: try row.decode("last_four"), expiration: try expiration(row),
            cardholderName: try row.decode("cardholder_name"), paymentNetwork: try row.decode("payment_network"),
            status: CardStatusValue(rawValue: try row.decode("status")) ?? .blocked,
            localizedDescription: try row.decode("localized_description"),
            primaryAccountIdentifier: try row.decode("primary_account_identifier"), country: try row.decode("country"),
            createdAt: try row.decode("created_at"))
    }
}
