import Foundation
import IssuerdPostgres

/// The SQL side of ``CardImport``: the staging table the file is copied into, the checks that
/// need the database, and the set-based writes from staging into the real tables.
extension CardImport {
    /// A temporary table (no WAL, gone at the end of the transaction, whatever its outcome),
    /// so an interrupted import leaves nothing behind.
    static let createStaging = """
        CREATE TEMPORARY TABLE card_import (
            line                       bigint NOT NULL,
            card_id                    text NOT NULL,
            customer_id                text NOT NULL,
            pan_ciphertext             bytea NOT NULL,
            pan_key_version            integer NOT NULL,
            pan_fingerprint            bytea NOT NULL,
            last_four                  text NOT NULL,
            expiration                 text NOT NULL,
            cardholder_name            text NOT NULL,
            payment_network            text NOT NULL,
            status                     text NOT NULL,
            localized_description      text,
            primary_account_identifier text NOT NULL,
            country                    text,
            with_customer              boolean NOT NULL,
            phone_number               text,
            email                      text,
            phone_changed_at           timestamptz,
            email_changed_at           timestamptz,
            address_changed_at         timestamptz
        ) ON COMMIT DROP
        """

    /// Why a staged line cannot be registered, as the API would answer it.
    enum StagedProblem: Int {
        case customerNotFound = 1
        case cardIDExists = 2
        case accountNumberExists = 3

        var message: String {
            switch self {
            case .customerNotFound: "no such customer"
            case .cardIDExists: "a card with this cardId already exists"
            case .accountNumberExists: "a card with this account number already exists"
            }
        }
    }

    /// The first staged line that registering the chunk's lines one by one in file order would
    /// refuse: a customer neither stored nor created by an earlier (or the same) line, a card id
    /// or PAN already stored or already on an earlier line.
    ///
    /// Only run when ``customerProblem(connection:)`` found something: the good path relies on
    /// the unique constraints instead.
    static func firstStagedProblem(connection: PostgresConnection) throws -> (line: Int, problem: StagedProblem)? {
        let row = try connection.query(
            """
            WITH first_customer AS (
                SELECT customer_id, min(line) AS line FROM card_import WHERE with_customer GROUP BY customer_id
            ), problems AS (
                SELECT s.line, 1 AS problem FROM card_import s LEFT JOIN first_customer f USING (customer_id)
                WHERE (f.line IS NULL OR f.line > s.line) AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.customer_id = s.customer_id)
                UNION ALL
                SELECT s.line, 2 FROM card_import s WHERE EXISTS (SELECT 1 FROM cards c WHERE c.card_id = s.card_id)
                UNION ALL
                SELECT line, 2 FROM (SELECT line, row_number() OVER (PARTITION BY card_id ORDER BY line) AS n FROM card_import) d WHERE n > 1
                UNION ALL
                SELECT s.line, 3 FROM card_import s WHERE EXISTS (SELECT 1 FROM cards c WHERE c.pan_fingerprint = s.pan_fingerprint)
                UNION ALL
                SELECT line, 3 FROM (
                    SELECT line, row_number() OVER (PARTITION BY pan_fingerprint ORDER BY line) AS n FROM card_import
                ) d WHERE n > 1
            )
            SELECT line, problem FROM problems ORDER BY line, problem LIMIT 1
            """
        ).first
        guard let row, let problem = StagedProblem(rawValue: Int(try row.decode("problem", as: Int32.self))) else { return nil }
        return (Int(try row.decode("line", as: Int64.self)), problem)
    }

    /// Whether some staged card names a customer that is neither stored nor created by an earlier
    /// (or the same) line of the chunk: the foreign key cannot see the order, since the chunk's
    /// customers are written before its cards.
    static func customerProblem(connection: PostgresConnection) throws -> Bool {
        try !connection.query(
            """
            SELECT 1 FROM card_import s
            LEFT JOIN (SELECT customer_id, min(line) AS line FROM card_import WHERE with_customer GROUP BY customer_id) f USING (customer_id)
            WHERE (f.line IS NULL OR f.line > s.line) AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.customer_id = s.customer_id)
            LIMIT 1
            """
        ).isEmpty
    }

    /// Creates or updates every customer the file names, with the result of applying each line's
    /// `customer` object in file order as `POST /v1/admin/customers` would: a changed phone
    /// number or e-mail address stamps its `…ChangedAt` (the given one, else `now`), a given
    /// `…ChangedAt` alone sets it, and the first line of a new customer inserts it as given.
    ///
    /// - Returns: Customers created, and customer objects that updated an existing customer.
    static func upsertCustomers(now: Date, connection: PostgresConnection) throws -> (created: Int, updated: Int) {
        let row = try connection.query(
            """
            WITH steps AS (
                SELECT s.line, s.customer_id, s.phone_number, s.email, s.phone_changed_at, s.email_changed_at, s.address_changed_at,
                       c.customer_id IS NOT NULL AS existed, c.phone_number AS stored_phone, c.email AS stored_email,
                       c.phone_changed_at AS stored_phone_at, c.email_changed_at AS stored_email_at,
                       c.address_changed_at AS stored_address_at,
                       row_number() OVER w = 1 AND c.customer_id IS NULL AS inserts,
                       array_agg(s.phone_number) FILTER (WHERE s.phone_number IS NOT NULL) OVER earlier AS earlier_phones,
                       array_agg(s.email) FILTER (WHERE s.email IS NOT NULL) OVER earlier AS earlier_emails
                FROM card_import s LEFT JOIN customers c USING (customer_id)
                WHERE s.with_customer
                WINDOW w AS (PARTITION BY s.customer_id ORDER BY s.line),
                       earlier AS (PARTITION BY s.customer_id ORDER BY s.line ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
            ), effects AS (
                SELECT *,
                       CASE WHEN inserts THEN true
                            WHEN phone_number IS NOT NULL
                                 AND phone_number IS DISTINCT FROM coalesce(earlier_phones[cardinality(earlier_phones)], stored_phone) THEN true
                            ELSE phone_changed_at IS NOT NULL END AS sets_phone_at,
                       CASE WHEN inserts THEN phone_changed_at
                            WHEN phone_number IS NOT NULL
                                 AND phone_number IS DISTINCT FROM coalesce(earlier_phones[cardinality(earlier_phones)], stored_phone)
                                 THEN coalesce(phone_changed_at, \(now))
                            ELSE phone_changed_at END AS phone_at,
                       CASE WHEN inserts THEN true
                            WHEN email IS NOT NULL
                                 AND email IS DISTINCT FROM coalesce(earlier_emails[cardinality(earlier_emails)], stored_email) THEN true
                            ELSE email_changed_at IS NOT NULL END AS sets_email_at,
                       CASE WHEN inserts THEN email_changed_at
                            WHEN email IS NOT NULL
                                 AND email IS DISTINCT FROM coalesce(earlier_emails[cardinality(earlier_emails)], stored_email)
                                 THEN coalesce(email_changed_at, \(now))
                            ELSE email_changed_at END AS email_at
                FROM steps
            ), finals AS (
                SELECT customer_id, bool_or(existed) AS existed, count(*) AS lines,
                       coalesce((array_agg(phone_number ORDER BY line DESC) FILTER (WHERE phone_number IS NOT NULL))[1], min(stored_phone)) AS phone,
                       coalesce((array_agg(email ORDER BY line DESC) FILTER (WHERE email IS NOT NULL))[1], min(stored_email)) AS email,
                       CASE WHEN bool_or(sets_phone_at) THEN (array_agg(phone_at ORDER BY line DESC) FILTER (WHERE sets_phone_at))[1]
                            ELSE min(stored_phone_at) END AS phone_at,
                       CASE WHEN bool_or(sets_email_at) THEN (array_agg(email_at ORDER BY line DESC) FILTER (WHERE sets_email_at))[1]
                            ELSE min(stored_email_at) END AS email_at,
                       coalesce((array_agg(address_changed_at ORDER BY line DESC) FILTER (WHERE address_changed_at IS NOT NULL))[1],
                                min(stored_address_at)) AS address_at
                FROM effects GROUP BY customer_id
            ), written AS (
                INSERT INTO customers AS c (customer_id, phone_number, email, phone_changed_at, email_changed_at, address_changed_at,
                                            created_at, updated_at)
                SELECT customer_id, phone, email, phone_at, email_at, address_at, \(now), \(now) FROM finals
                ON CONFLICT (customer_id) DO UPDATE SET
                    phone_number = excluded.phone_number, email = excluded.email, phone_changed_at = excluded.phone_changed_at,
                    email_changed_at = excluded.email_changed_at, address_changed_at = excluded.address_changed_at,
                    updated_at = excluded.updated_at
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM written) AS written,
                   (SELECT count(*) FROM finals WHERE NOT existed) AS created,
                   (SELECT coalesce(sum(lines), 0)::bigint FROM finals) AS lines
            """
        ).first
        guard let row else { return (0, 0) }
        let created = Int(try row.decode("created", as: Int64.self))
        let lines = Int(try row.decode("lines", as: Int64.self))
        return (created, lines - created)
    }

    /// Writes every staged card and its `created` status history row, skipping (not failing on)
    /// a card whose id, PAN fingerprint or account identifier is already taken, by a stored card
    /// or an earlier line: ``firstSkipped(connection:)`` then names the first.
    ///
    /// - Returns: The number of cards written.
    static func insertCards(now: Date, connection: PostgresConnection) throws -> Int {
        let row = try connection.query(
            """
            WITH written AS (
                INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration,
                                   cardholder_name, payment_network, status, localized_description, primary_account_identifier,
                                   country, created_at, updated_at)
                SELECT card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration, cardholder_name,
                       payment_network, status, localized_description, primary_account_identifier, country, \(now), \(now)
                FROM card_import ORDER BY line
                ON CONFLICT DO NOTHING
                RETURNING card_id, status
            ), history AS (
                INSERT INTO card_status_history (card_id, old_status, new_status, reason, actor, at)
                SELECT card_id, NULL, status, 'created', 'system', \(now) FROM written
                RETURNING 1
            )
            SELECT count(*) AS written FROM history
            """
        ).first
        return Int(try row?.decode("written", as: Int64.self) ?? 0)
    }

    /// The first staged card that ``insertCards(now:connection:)`` skipped, and why.
    static func firstSkipped(connection: PostgresConnection) throws -> (line: Int, problem: StagedProblem)? {
        guard let row = try connection.query(
            """
            SELECT s.line, EXISTS (SELECT 1 FROM cards c WHERE c.card_id = s.card_id) AS id_taken
            FROM card_import s
            WHERE NOT EXISTS (SELECT 1 FROM cards c WHERE c.card_id = s.card_id AND c.pan_ciphertext = s.pan_ciphertext)
            ORDER BY s.line LIMIT 1
            """
        ).first else { return nil }
        let problem: StagedProblem = try row.decode("id_taken", as: Bool.self) ? .cardIDExists : .accountNumberExists
        return (Int(try row.decode("line", as: Int64.self)), problem)
    }
}
