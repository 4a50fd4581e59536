import Foundation
import IssuerdPostgres
import IssuerdStorage

/// The SQL side of ``CardImport``: each chunk's customers are read once and brought up to date
/// in issuerd (the API's upsert rule, line by line), then written (new ones from a `COPY`'d
/// temporary table), and cards and status history by `COPY` straight into their tables.
///
/// No staging table and no `ON CONFLICT` for cards: the unique indexes themselves refuse a card
/// id or PAN already stored or already on an earlier line, and the refused `COPY` row's line (the
/// server's error context) maps back to the file's line. The refusal aborts the transaction,
/// which is what a bad record must do anyway. New customers go through a temporary table and
/// `ON CONFLICT DO NOTHING`: one created through the API while the chunk was being written is
/// not the file's fault (``writeCustomers(_:now:connection:)``).
extension CardImport {
    /// One chunk's new customers, inserted from it, or existing customers' new values, joined
    /// into the `UPDATE`: a temporary table (no WAL, gone at the end of the transaction, whatever
    /// its outcome).
    package static let createCustomerUpdates = """
        CREATE TEMPORARY TABLE card_import_customers (
            customer_id        text NOT NULL,
            phone_number       text,
            email              text,
            phone_changed_at   timestamptz,
            email_changed_at   timestamptz,
            address_changed_at timestamptz
        ) ON COMMIT DROP
        """

    /// Why a line cannot be registered, as the API would answer it.
    package enum LineProblem {
        case customerNotFound
        case cardIDExists
        case accountNumberExists
        /// A value the table's CHECK or type refused that the line's validation let through
        /// (a defect of that validation; named by the constraint, never by the value).
        case valueRefused(constraint: String?)

        package var message: String {
            switch self {
            case .customerNotFound: "no such customer"
            case .cardIDExists: "a card with this cardId already exists"
            case .accountNumberExists: "a card with this account number already exists"
            case .valueRefused(let constraint):
                "a value is refused by the database" + (constraint.map { " (\($0))" } ?? "")
            }
        }
    }

    /// What a chunk does to customers: who is created, who is updated to what, and the first
    /// card whose customer neither exists nor is created by an earlier (or the same) line.
    package struct CustomerPlan {
        /// New customers, in the order of their first line, with the effect of all their lines.
        package var created: [CustomerRecord] = []
        /// Stored customers (an earlier chunk's included) with the effect of this chunk's lines.
        package var updated: [CustomerRecord] = []
        /// Lines with a customer object (before ``firstMissing``).
        package var objects = 0
        /// The index in the chunk of the first card without a customer.
        package var firstMissing: Int?
    }

    /// Applies the chunk's customer objects in file order to the stored customers, as
    /// `POST /v1/admin/customers` would one by one (``CustomerStore/merge(_:into:now:)``).
    ///
    /// - Parameters:
    ///   - stored: The chunk's customers as stored before it (those with objects locked).
    ///   - known: Further customer ids that exist (named by cards without objects).
    ///   - stampedNow: Those of `stored` whose `updated_at` is already `now`: this import wrote
    ///     them in an earlier chunk, so one whose lines here change nothing is left alone (the
    ///     `UPDATE` would write the same row again and leave a dead one behind).
    ///   - missingAt: A card found without a customer by an earlier plan of this chunk: the plan
    ///     stops there too, though the customer may exist by now (that plan's refusal stands).
    package static func planCustomers(
        _ chunk: Chunk, stored: [String: CustomerRecord], known: Set<String>, stampedNow: Set<String> = [],
        missingAt: Int? = nil, now: Date
    ) -> CustomerPlan {
        var plan = CustomerPlan()
        var current = stored
        var createdOrder: [String] = []
        var index = 0
        for slice in chunk.slices {
            for row in 0..<slice.count {
                if index == missingAt {
                    plan.firstMissing = index
                    break
                }
                let id = slice.customerIDs[row]
                if let object = slice.customers[row] {
                    plan.objects += 1
                    if let existing = current[id] {
                        current[id] = CustomerStore.merge(object, into: existing, now: now)
                    } else {
                        current[id] = object
                        createdOrder.append(id)
                    }
                }
                if current[id] == nil, !known.contains(id) {
                    plan.firstMissing = index
                    break
                }
                index += 1
            }
            if plan.firstMissing != nil { break }
        }
        plan.created = createdOrder.map { current[$0]! }
        // Every stored customer here has an object in the chunk: the API would update each
        // (updated_at included) even when its values did not change. One this import already
        // stamped and whose values did not change is that row already.
        plan.updated = stored.keys.sorted().filter { !(stampedNow.contains($0) && current[$0] == stored[$0]) }.map {
            current[$0]!
        }
        return plan
    }

    /// Reads the chunk's customers: those with a customer object in full, under `FOR NO KEY
    /// UPDATE` (the lock the API's upsert takes: it serialises with the upsert and another import,
    /// but not with the `FOR KEY SHARE` of a foreign key, so a provisioning attempt or code for
    /// one of these customers is not held until the import commits), the others only for existence.
    package static func storedCustomers(
        _ chunk: Chunk, now: Date, connection: PostgresConnection
    ) throws -> (stored: [String: CustomerRecord], known: Set<String>, stampedNow: Set<String>) {
        var withObjects = Set<String>()
        var without = Set<String>()
        for slice in chunk.slices {
            for row in 0..<slice.count {
                if slice.customers[row] != nil {
                    withObjects.insert(slice.customerIDs[row])
                } else {
                    without.insert(slice.customerIDs[row])
                }
            }
        }
        without.subtract(withObjects)
        var stored: [String: CustomerRecord] = [:]
        var stampedNow = Set<String>()
        if !withObjects.isEmpty {
            // `updated_at = now` is compared by PostgreSQL, at the precision both were stored in.
            let rows = try connection.query(
                """
                SELECT customer_id, phone_number, email, phone_changed_at, email_changed_at, address_changed_at, created_at,
                       updated_at = \(now) AS stamped_now
                FROM customers WHERE customer_id = ANY(\(Array(withObjects))) FOR NO KEY UPDATE
                """)
            for row in rows {
                let record = try CustomerStore.decode(row)
                stored[record.customerID] = record
                if try row.decode("stamped_now", as: Bool.self) { stampedNow.insert(record.customerID) }
            }
        }
        var known = Set<String>()
        if !without.isEmpty {
            for row in try connection.query(
                "SELECT customer_id FROM customers WHERE customer_id = ANY(\(Array(without)))")
            {
                known.insert(try row.decode("customer_id", as: String.self))
            }
        }
        return (stored, known, stampedNow)
    }

    /// Writes the plan's customers: new ones `COPY`'d into ``createCustomerUpdates``'s table and
    /// inserted from there, changed ones by one `UPDATE` joined to their new values (copied into
    /// the same table).
    ///
    /// The insert skips a customer that exists by then: one created through
    /// `POST /v1/admin/customers` after the chunk's read (its insert waited for that call's
    /// commit). No savepoint to take a failed `COPY` back: more than 64 subtransactions in the
    /// import's one transaction would slow every other session's snapshots.
    ///
    /// - Returns: How many of the plan's new customers were inserted. Fewer than planned: the
    ///   others exist now, nothing else was written, and the caller reads the chunk's customers
    ///   again and plans them anew (then as updates of the stored rows).
    package static func writeCustomers(_ plan: CustomerPlan, now: Date, connection: PostgresConnection) throws -> Int {
        if !plan.created.isEmpty {
            try copyIntoWorkTable(plan.created, connection: connection)
            let inserted = try connection.execute(
                """
                INSERT INTO customers (customer_id, phone_number, email, phone_changed_at, email_changed_at, address_changed_at, created_at,
                                       updated_at)
                SELECT customer_id, phone_number, email, phone_changed_at, email_changed_at, address_changed_at, \(now), \(now)
                FROM card_import_customers
                ORDER BY customer_id  -- key locks in one order, as the updates take theirs
                ON CONFLICT (customer_id) DO NOTHING
                """)
            if inserted < plan.created.count { return inserted }
        }
        if !plan.updated.isEmpty {
            try copyIntoWorkTable(plan.updated, connection: connection)
            try connection.execute(
                """
                UPDATE customers c SET phone_number = u.phone_number, email = u.email, phone_changed_at = u.phone_changed_at,
                    email_changed_at = u.email_changed_at, address_changed_at = u.address_changed_at, updated_at = \(now)
                FROM card_import_customers u WHERE c.customer_id = u.customer_id
                """)
        }
        return plan.created.count
    }

    /// Replaces the rows of ``createCustomerUpdates``'s table with `customers`.
    private static func copyIntoWorkTable(_ customers: [CustomerRecord], connection: PostgresConnection) throws {
        var copy = PostgresCopyText(capacity: customers.count * 120)
        for customer in customers {
            customerRow(customer, into: &copy)
            copy.endRow()
        }
        try connection.execute(unsafeSQL: "TRUNCATE card_import_customers")
        try connection.copyIn(unsafeSQL: "COPY card_import_customers FROM STDIN") { try $0.write(copy.bytes) }
    }

    private static func customerRow(_ customer: CustomerRecord, into copy: inout PostgresCopyText) {
        copy.text(customer.customerID)
        copy.text(customer.phoneNumber)
        copy.text(customer.email)
        copy.timestamp(customer.phoneChangedAt)
        copy.timestamp(customer.emailChangedAt)
        copy.timestamp(customer.addressChangedAt)
    }

    /// `COPY`s the chunk's first `count` cards and then their status history rows.
    ///
    /// - Returns: The chunk's index of a card the unique indexes refused (a card id or PAN
    ///   already stored or on an earlier line) and why; nil when all were written.
    /// - Throws: Any other database failure.
    package static func writeCards(
        _ chunk: Chunk, count: Int, connection: PostgresConnection
    ) throws -> (index: Int, problem: LineProblem)? {
        guard count > 0 else { return nil }
        do {
            try connection.copyIn(unsafeSQL: "COPY cards (\(cardColumns)) FROM STDIN") { writer in
                try chunk.send(\.cards, ends: \.cardRowEnds, count: count, to: writer)
            }
        } catch let error as PostgresError where error.code == .uniqueViolation {
            // The unique indexes are checked in the order they were made, the primary key
            // first: a line repeating both an id and a PAN is refused for its id, as the API does.
            guard let line = error.copyLine, (1...count).contains(line) else { throw error }
            return (line - 1, error.constraint == "cards_pkey" ? .cardIDExists : .accountNumberExists)
        } catch let error as PostgresError where error.isRejectedValue {
            guard let line = error.copyLine, (1...count).contains(line) else { throw error }
            return (line - 1, .valueRefused(constraint: error.constraint))
        }
        try connection.copyIn(unsafeSQL: "COPY card_status_history (\(historyColumns)) FROM STDIN") { writer in
            try chunk.send(\.history, ends: \.historyRowEnds, count: count, to: writer)
        }
        return nil
    }
}

extension CardImport.Chunk {
    /// The line in the file of the chunk's card at `index`.
    package func line(at index: Int) -> Int {
        var index = index
        for slice in slices {
            if index < slice.count { return slice.lines[index] }
            index -= slice.count
        }
        preconditionFailure("card index beyond the chunk")
    }

    /// Sends the rows of the first `count` cards, one slice's buffer (or its prefix) at a time.
    package func send(
        _ rows: KeyPath<CardImport.EncodedSlice, PostgresCopyText>, ends: KeyPath<CardImport.EncodedSlice, [Int]>,
        count: Int,
        to writer: PostgresCopyWriter
    ) throws {
        var remaining = count
        for slice in slices where remaining > 0 {
            let bytes = slice[keyPath: rows].bytes
            if remaining >= slice.count {
                try writer.write(bytes)
            } else {
                try writer.write(Array(bytes[..<slice[keyPath: ends][remaining - 1]]))
            }
            remaining -= min(remaining, slice.count)
        }
    }
}
