import Foundation
import IssuerdPostgres

/// A cardholder as issuerd knows them: contact details and when each last changed (the
/// "recently changed phone number" signals of the risk rules).
package struct CustomerRecord: Sendable, Equatable {
    package var customerID: String
    package var phoneNumber: String?
    package var email: String?
    package var phoneChangedAt: Date?
    package var emailChangedAt: Date?
    package var addressChangedAt: Date?
    package var createdAt: Date

    /// Creates the value from every stored property.
    package init(
        customerID: String, phoneNumber: String? = nil, email: String? = nil, phoneChangedAt: Date? = nil,
        emailChangedAt: Date? = nil, addressChangedAt: Date? = nil, createdAt: Date
    ) {
        self.customerID = customerID
        self.phoneNumber = phoneNumber
        self.email = email
        self.phoneChangedAt = phoneChangedAt
        self.emailChangedAt = emailChangedAt
        self.addressChangedAt = addressChangedAt
        self.createdAt = createdAt
    }
}

/// Reads and writes `customers`.
package enum CustomerStore {
    private static let columnNames = [
        "customer_id", "phone_number", "email", "phone_changed_at", "email_changed_at", "address_changed_at",
        "created_at",
    ]
    private static let columns = PostgresQuery(unsafeSQL: columnNames.joined(separator: ", "))

    /// The select list ``decode(_:prefix:)`` reads with `prefix`: the columns of table alias
    /// `alias`, renamed `<prefix><column>` so they cannot collide with another table's in a join.
    package static func columns(qualifiedBy alias: String, prefix: String) -> String {
        columnNames.map { "\(alias).\($0) AS \(prefix)\($0)" }.joined(separator: ", ")
    }

    package static func find(_ customerID: String, connection: PostgresConnection) throws -> CustomerRecord? {
        try connection.query("SELECT \(unsafeSQL: columns.sql) FROM customers WHERE customer_id = \(customerID)").first
            .map { try decode($0) }
    }

    /// Inserts or updates a customer. A changed phone number or e-mail without an explicit
    /// change time is stamped `now`, so the risk rules see the change even when the caller
    /// forgot to say when it happened.
    ///
    /// A writer that inserted the same new customer first and had not committed (an import's
    /// `COPY`, a concurrent call) makes the insert wait on the key and then do nothing; the row it
    /// committed is then read and updated, as if this call had come second. (Read committed:
    /// each statement sees what committed before it.)
    ///
    /// - Returns: The stored record and whether it was created.
    @discardableResult
    package static func upsert(
        _ record: CustomerRecord, now: Date, connection: PostgresConnection
    ) throws -> (CustomerRecord, created: Bool) {
        if let existing = try lockedCustomer(record.customerID, connection: connection) {
            return (try update(existing, with: record, now: now, connection: connection), false)
        }
        let inserted = try connection.query(
            """
            INSERT INTO customers (customer_id, phone_number, email, phone_changed_at, email_changed_at, address_changed_at, created_at)
            VALUES (\(record.customerID), \(record.phoneNumber), \(record.email), \(record.phoneChangedAt), \(record.emailChangedAt),
                    \(record.addressChangedAt), \(now))
            ON CONFLICT (customer_id) DO NOTHING
            RETURNING customer_id
            """)
        if !inserted.isEmpty {
            var created = record
            created.createdAt = now
            return (created, true)
        }
        guard let existing = try lockedCustomer(record.customerID, connection: connection) else {
            // Nothing deletes customers, so the row the insert waited for is there; were it gone,
            // the whole transaction is retried as after a serialisation failure.
            throw PostgresError(
                code: .serializationFailure, message: "customer \(record.customerID) vanished during the upsert")
        }
        return (try update(existing, with: record, now: now, connection: connection), false)
    }

    /// `FOR NO KEY UPDATE`, what the `UPDATE` takes anyway (the key does not change): it does not
    /// wait for, nor hold up, the `FOR KEY SHARE` of a provisioning attempt's foreign key.
    private static func lockedCustomer(_ customerID: String, connection: PostgresConnection) throws -> CustomerRecord? {
        try connection.query(
            "SELECT \(unsafeSQL: columns.sql) FROM customers WHERE customer_id = \(customerID) FOR NO KEY UPDATE"
        )
        .first.map { try decode($0) }
    }

    private static func update(
        _ stored: CustomerRecord, with record: CustomerRecord, now: Date, connection: PostgresConnection
    ) throws -> CustomerRecord {
        let existing = merge(record, into: stored, now: now)
        try connection.execute(
            """
            UPDATE customers SET phone_number = \(existing.phoneNumber), email = \(existing.email),
                phone_changed_at = \(existing.phoneChangedAt), email_changed_at = \(existing.emailChangedAt),
                address_changed_at = \(existing.addressChangedAt), updated_at = \(now)
            WHERE customer_id = \(existing.customerID)
            """)
        return existing
    }

    /// What an upsert of `record` makes of the stored `existing` customer: a given phone number
    /// or e-mail that differs replaces the stored one and stamps its change time (the given one,
    /// else `now`); a change time given alone is set; a given address change time is set.
    ///
    /// Pure, so the bulk import applies exactly the API's rule without a round trip per line.
    package static func merge(_ record: CustomerRecord, into existing: CustomerRecord, now: Date) -> CustomerRecord {
        var merged = existing
        if let phone = record.phoneNumber, phone != existing.phoneNumber {
            merged.phoneNumber = phone
            merged.phoneChangedAt = record.phoneChangedAt ?? now
        } else if let changed = record.phoneChangedAt {
            merged.phoneChangedAt = changed
        }
        if let email = record.email, email != existing.email {
            merged.email = email
            merged.emailChangedAt = record.emailChangedAt ?? now
        } else if let changed = record.emailChangedAt {
            merged.emailChangedAt = changed
        }
        if let changed = record.addressChangedAt { merged.addressChangedAt = changed }
        return merged
    }

    /// The customer in `row`, whose columns carry `prefix` (see ``columns(qualifiedBy:prefix:)``).
    package static func decode(_ row: PostgresRow, prefix: String = "") throws -> CustomerRecord {
        CustomerRecord(
            customerID: try row.decode(prefix + "customer_id"), phoneNumber: try row.decode(prefix + "phone_number"),
            email: try row.decode(prefix + "email"), phoneChangedAt: try row.decode(prefix + "phone_changed_at"),
            emailChangedAt: try row.decode(prefix + "email_changed_at"),
            addressChangedAt: try row.decode(prefix + "address_changed_at"),
            createdAt: try row.decode(prefix + "created_at"))
    }
}
