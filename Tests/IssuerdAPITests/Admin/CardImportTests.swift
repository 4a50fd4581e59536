import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdImport
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The bulk path of `issuerd cards import` (customers read once per chunk, COPY into the tables): the same
/// answers as registering the lines one by one, the first bad line of a big file, and nothing
/// kept after an interruption.
@Suite("Bulk card import: COPY into the tables, first bad line, interruptions")
struct CardImportTests {
    private static let masterKey = Data(repeating: 0x42, count: 32).base64EncodedString()
    private let vault = PANVault(keyRing: try! MasterKeyRing(settingValue: CardImportTests.masterKey))

    private func count(_ app: TestApplication, _ table: String) throws -> Int64 {
        try app.pool.withConnection {
            try $0.query("SELECT count(*) AS n FROM \(unsafeSQL: table)").first!.decode("n", as: Int64.self)
        }
    }

    private func write(_ app: TestApplication, _ lines: [String]) throws -> URL {
        try FileManager.default.createDirectory(at: app.directory, withIntermediateDirectories: true)
        let url = app.directory.appendingPathComponent("import-\(UUID().uuidString).jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: url)
        return url
    }

    private func line(
        _ serial: Int, customer: String? = nil, card: String? = nil, pan: String? = nil, fields: String? = nil
    ) -> String {
        let customer = customer ?? "cust-\(serial / 2)"
        let object = fields.map { #","customer":\#($0)"# } ?? ""
        return
            #"{"cardId":"\#(card ?? "card-\(serial)")","customerId":"\#(customer)","accountNumber":"\#(pan ?? AdminFixtures.pan(serial: serial))","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM","paymentNetwork":"visa"\#(object)}"#
    }

    /// Lines 1…`count`, each card with its customer object.
    private func bigFile(_ app: TestApplication, count: Int, replacing: [Int: String] = [:]) throws -> URL {
        try write(app, (1...count).map { replacing[$0] ?? line($0, fields: #"{"email":"c\#($0 / 2)@example.com"}"#) })
    }

    @Test("Customer objects have the effect of the API's upserts applied one by one in file order")
    func customersAsSequentialUpserts() throws {
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let given = "2025-01-02T03:04:05Z"
        let objects: [(String, String)] = [
            ("old", #"{"phoneNumber":"010-2222-3333"}"#),  // a changed phone: stamped now
            ("old", #"{"phoneNumber":"010-2222-3333","phoneChangedAt":"\#(given)"}"#),  // same phone, a given stamp
            ("old", #"{"email":"new@example.com"}"#),  // a changed address: stamped now
            ("new", #"{"phoneNumber":"010-5555-6666"}"#),  // created as given (no stamps)
            ("new", #"{"phoneNumber":"010-5555-6666"}"#),  // unchanged: no stamp
            ("new", #"{"email":"n@example.com","emailChangedAt":"\#(given)","addressChangedAt":"\#(given)"}"#),
            ("new", #"{"phoneNumber":"010-7777-8888"}"#),  // changed: stamped now
            ("third", #"{}"#),
        ]
        let seed = CustomerRecord(
            customerID: "old", phoneNumber: "010-1111-2222", email: "old@example.com",
            phoneChangedAt: Date(timeIntervalSince1970: 1_600_000_000),
            emailChangedAt: nil, addressChangedAt: Date(timeIntervalSince1970: 1_600_000_000), createdAt: now)
        // The reference: the API's own upsert, line by line.
        let reference = try TestApplication()
        _ = try reference.pool.withConnection { try CustomerStore.upsert(seed, now: now, connection: $0) }
        for (customer, object) in objects {
            let fields = try JSONDecoder().decode(CardImport.CustomerFields.self, from: Data(object.utf8))
            let record = try CustomerAdministration.validate(
                .init(
                    customerId: customer, phoneNumber: fields.phoneNumber, email: fields.email,
                    phoneChangedAt: fields.phoneChangedAt,
                    emailChangedAt: fields.emailChangedAt, addressChangedAt: fields.addressChangedAt))
            _ = try reference.pool.withConnection { try CustomerStore.upsert(record, now: now, connection: $0) }
        }
        let app = try TestApplication()
        _ = try app.pool.withConnection { try CustomerStore.upsert(seed, now: now, connection: $0) }
        let file = try write(
            app, objects.enumerated().map { line($0.offset, customer: $0.element.0, fields: $0.element.1) })
        let summary = try CardImport.run(file: file, actor: "cli:test", now: now, vault: vault, database: app.pool)
        #expect(summary == CardImport.Summary(cards: 8, customersCreated: 2, customersUpdated: 6))
        for customer in ["old", "new", "third"] {
            let imported = try app.pool.withConnection { try CustomerStore.find(customer, connection: $0) }
            let expected = try reference.pool.withConnection { try CustomerStore.find(customer, connection: $0) }
            #expect(imported?.phoneNumber == expected?.phoneNumber, "\(customer)")
            #expect(imported?.email == expected?.email, "\(customer)")
            #expect(imported?.phoneChangedAt == expected?.phoneChangedAt, "\(customer)")
            #expect(imported?.emailChangedAt == expected?.emailChangedAt, "\(customer)")
            #expect(imported?.addressChangedAt == expected?.addressChangedAt, "\(customer)")
        }
        // Every card opens under its own id, and is found by its PAN.
        for serial in 0..<8 {
            let record = try #require(
                try app.pool.withConnection { try CardStore.find("card-\(serial)", connection: $0) })
            #expect(try CardStore.openPAN(record, vault: vault).unsafeDigits == AdminFixtures.pan(serial: serial))
            let pan = try #require(PrimaryAccountNumber(AdminFixtures.pan(serial: serial)))
            #expect(
                try app.pool.withConnection { try CardStore.find(pan: pan, vault: vault, connection: $0) }?.cardID
                    == "card-\(serial)")
        }
        #expect(try count(app, "card_status_history") == 8)
    }

    @Test(
        "The first bad record of a big file is named, whether the import or the database finds it, and nothing is kept",
        arguments: [
            // A PAN failing the Luhn check near the end.
            ([11_999: "luhn"], 11_999, "Luhn"),
            // A card id repeated early beats a bad PAN late.
            ([7: "duplicate-id", 11_999: "luhn"], 7, "a card with this cardId already exists"),
            // The same PAN on two lines: the later one is refused.
            ([9_000: "duplicate-pan"], 9_000, "a card with this account number already exists"),
            // A card naming a customer the file only creates two lines later.
            ([5: "customer-later"], 5, "no such customer"),
            // A customer that exists nowhere, after a record the database refuses only at the end.
            ([11_000: "unknown-customer"], 11_000, "no such customer"),
            // A line too long to read, alone; after a bad record of its chunk; after one the database refuses.
            ([11_999: "too-long"], 11_999, "longer than 16384 bytes"),
            ([10: "luhn", 20: "too-long"], 10, "Luhn"),
            ([7: "duplicate-id", 11_999: "too-long"], 7, "a card with this cardId already exists"),
            // A name of 100 characters as people see them, 200 Unicode scalars as PostgreSQL counts them.
            ([5: "combining-name"], 5, "cardholderName must be 1 to 128 characters"),
        ])
    func firstBadLine(problems: [Int: String], expectedLine: Int, message: String) throws {
        let app = try TestApplication()
        var replacing: [Int: String] = [:]
        for (number, problem) in problems {
            switch problem {
            case "luhn":
                let pan = AdminFixtures.pan(serial: number)
                replacing[number] = line(
                    number, pan: String(pan.dropLast()) + String((Int(String(pan.last!))! + 1) % 10), fields: "{}")
            case "duplicate-id": replacing[number] = line(number, card: "card-1", fields: "{}")
            case "duplicate-pan": replacing[number] = line(number, pan: AdminFixtures.pan(serial: 3), fields: "{}")
            case "too-long": replacing[number] = String(repeating: "x", count: 20_000)
            case "combining-name":
                replacing[number] = line(number, fields: "{}").replacingOccurrences(
                    of: #""KIM""#, with: "\"" + String(repeating: "e\u{301}", count: 100) + "\"")
            case "customer-later":
                replacing[number] = line(number, customer: "late")
                replacing[number + 2] = line(number + 2, customer: "late", fields: "{}")
            default: replacing[number] = line(number, customer: "nobody")
            }
        }
        let file = try bigFile(app, count: 12_000, replacing: replacing)
        do {
            _ = try CardImport.run(file: file, actor: "cli:test", now: Date(), vault: vault, database: app.pool)
            Issue.record("the import should have failed")
        } catch let error as CommandInputError {
            #expect(error.description.hasPrefix("\(file.lastPathComponent):\(expectedLine): "), "\(error)")
            #expect(error.description.contains(message), "\(error)")
        }
        for table in ["cards", "customers", "card_status_history", "audit_log"] {
            #expect(try count(app, table) == 0, "\(table)")
        }
    }

    /// A stored customer "stored" with card "card-stored" (PAN serial 90,000), as the API registers them.
    private func seedStoredCard(_ app: TestApplication, now: Date) throws {
        let seed = CustomerRecord(
            customerID: "stored", phoneNumber: "010-1111-2222", email: "stored@example.com", phoneChangedAt: nil,
            emailChangedAt: nil,
            addressChangedAt: nil, createdAt: now)
        try app.pool.withConnection { connection in
            _ = try CustomerStore.upsert(seed, now: now, connection: connection)
            _ = try CardStore.insert(
                cardID: "card-stored", customerID: "stored",
                pan: PrimaryAccountNumber(AdminFixtures.pan(serial: 90_000))!,
                expiration: try #require(CardExpiration(AdminFixtures.futureExpiration)), cardholderName: "KIM",
                paymentNetwork: "visa",
                status: .active,
                localizedDescription: nil, country: nil, now: now, vault: vault, connection: connection)
        }
    }

    @Test(
        "A card id or PAN already stored is named on its line, in any chunk, and nothing of the file is kept",
        arguments: [
            (2, "existing-id", "a card with this cardId already exists"),
            (11_000, "existing-id", "a card with this cardId already exists"),
            (8_193, "existing-pan", "a card with this account number already exists"),
            // Both an earlier line's id and its PAN: refused for the id, as the API checks it first.
            (6_000, "repeat-both", "a card with this cardId already exists"),
            // A card of a stored customer, without a customer object, is fine; the bad line after it is named.
            (9_999, "stored-customer-then-luhn", "Luhn"),
        ])
    func firstBadLineAgainstTheDatabase(badLine: Int, problem: String, message: String) throws {
        let app = try TestApplication()
        let now = Date()
        try seedStoredCard(app, now: now)
        var replacing: [Int: String] = [:]
        switch problem {
        case "existing-id": replacing[badLine] = line(badLine, card: "card-stored", fields: "{}")
        case "existing-pan": replacing[badLine] = line(badLine, pan: AdminFixtures.pan(serial: 90_000), fields: "{}")
        case "repeat-both":
            replacing[badLine] = line(badLine, card: "card-40", pan: AdminFixtures.pan(serial: 40), fields: "{}")
        default:
            replacing[badLine - 1] = line(badLine - 1, customer: "stored")
            let pan = AdminFixtures.pan(serial: badLine)
            replacing[badLine] = line(
                badLine, pan: String(pan.dropLast()) + String((Int(String(pan.last!))! + 1) % 10), fields: "{}")
        }
        let file = try bigFile(app, count: 12_000, replacing: replacing)
        do {
            _ = try CardImport.run(file: file, actor: "cli:test", now: now, vault: vault, database: app.pool)
            Issue.record("the import should have failed")
        } catch let error as CommandInputError {
            #expect(error.description.hasPrefix("\(file.lastPathComponent):\(badLine): "), "\(error)")
            #expect(error.description.contains(message), "\(error)")
        }
        // Only the seeded rows.
        #expect(try count(app, "cards") == 1)
        #expect(try count(app, "customers") == 1)
        #expect(try count(app, "card_status_history") == 1)
        #expect(try count(app, "audit_log") == 0)
        let stored = try app.pool.withConnection { try CustomerStore.find("stored", connection: $0) }
        #expect(stored?.email == "stored@example.com")
    }

    @Test(
        "Customer objects spread over several chunks, on stored and new customers, end as the API's upserts one by one would"
    )
    func customersAcrossChunks() throws {
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let given = "2025-01-02T03:04:05Z"
        // One worker: a chunk is CardImport.linesPerSlice lines, so these land in three chunks.
        let size = CardImport.linesPerSlice
        let special: [Int: (String, String?)] = [
            1: ("stored", #"{"phoneNumber":"010-9999-0000"}"#),
            2: ("moving", #"{"email":"m1@example.com"}"#),
            3: ("moving", nil),  // a card of a customer created on the line before
            size: ("moving", #"{"email":"m1@example.com","emailChangedAt":"\#(given)"}"#),  // last line of chunk 1
            size + 1: ("moving", #"{"email":"m2@example.com"}"#),  // first line of chunk 2: changed, stamped now
            size + 2: ("stored", nil),
            size + 3: ("stored", #"{"phoneNumber":"010-9999-0000","addressChangedAt":"\#(given)"}"#),
            2 * size + 5: ("moving", #"{"phoneNumber":"010-3333-4444"}"#),
            2 * size + 6: ("stored", #"{}"#),
        ]
        let total = 2 * size + 10
        let seed = CustomerRecord(
            customerID: "stored", phoneNumber: "010-1111-2222", email: "s@example.com",
            phoneChangedAt: Date(timeIntervalSince1970: 1_600_000_000),
            emailChangedAt: nil, addressChangedAt: nil, createdAt: now)
        let reference = try TestApplication()
        _ = try reference.pool.withConnection { try CustomerStore.upsert(seed, now: now, connection: $0) }
        var lines: [String] = []
        var objects = 0
        for serial in 1...total {
            if let (customer, object) = special[serial] {
                lines.append(line(serial, customer: customer, fields: object))
                if let object {
                    objects += 1
                    let fields = try JSONDecoder().decode(CardImport.CustomerFields.self, from: Data(object.utf8))
                    let record = try CustomerAdministration.validate(
                        .init(
                            customerId: customer, phoneNumber: fields.phoneNumber, email: fields.email,
                            phoneChangedAt: fields.phoneChangedAt,
                            emailChangedAt: fields.emailChangedAt, addressChangedAt: fields.addressChangedAt))
                    _ = try reference.pool.withConnection { try CustomerStore.upsert(record, now: now, connection: $0) }
                }
            } else {
                lines.append(line(serial, customer: "own-\(serial)", fields: "{}"))
                objects += 1
            }
        }
        let app = try TestApplication()
        _ = try app.pool.withConnection { try CustomerStore.upsert(seed, now: now, connection: $0) }
        let file = try write(app, lines)
        let summary = try CardImport.run(
            file: file, actor: "cli:test", now: now, vault: vault, database: app.pool, workers: 1)
        let own = total - special.count
        #expect(
            summary == CardImport.Summary(cards: total, customersCreated: own + 1, customersUpdated: objects - own - 1))
        for customer in ["stored", "moving"] {
            let imported = try app.pool.withConnection { try CustomerStore.find(customer, connection: $0) }
            let expected = try reference.pool.withConnection { try CustomerStore.find(customer, connection: $0) }
            #expect(imported != nil)
            #expect(imported?.phoneNumber == expected?.phoneNumber, "\(customer)")
            #expect(imported?.email == expected?.email, "\(customer)")
            #expect(imported?.phoneChangedAt == expected?.phoneChangedAt, "\(customer)")
            #expect(imported?.emailChangedAt == expected?.emailChangedAt, "\(customer)")
            #expect(imported?.addressChangedAt == expected?.addressChangedAt, "\(customer)")
        }
        #expect(try count(app, "cards") == Int64(total))
        #expect(try count(app, "card_status_history") == Int64(total))
        #expect(try count(app, "customers") == Int64(own + 2))
        // Every history row is the API's "created" entry.
        let history = try app.pool.withConnection {
            try $0.query(
                "SELECT count(*) AS n FROM card_status_history WHERE old_status IS NULL AND new_status = 'active' AND reason = 'created' AND actor = 'system'"
            )
            .first!.decode("n", as: Int64.self)
        }
        #expect(history == Int64(total))
    }

    @Test(
        "A customer object repeated in later chunks with nothing new is not written again; a stored customer is updated once"
    )
    func repeatedCustomerObjectsWriteOnce() throws {
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let size = CardImport.linesPerSlice  // one worker: three chunks
        let app = try TestApplication()
        let seed = CustomerRecord(
            customerID: "stored", phoneNumber: "010-1111-2222", email: "s@example.com",
            phoneChangedAt: Date(timeIntervalSince1970: 1_600_000_000),
            emailChangedAt: nil, addressChangedAt: nil, createdAt: Date(timeIntervalSince1970: 1_600_000_000))
        _ = try app.pool.withConnection {
            try CustomerStore.upsert(seed, now: Date(timeIntervalSince1970: 1_600_000_000), connection: $0)
        }
        // Every UPDATE of a customer row, whatever it changes.
        try app.pool.withConnection { connection in
            try connection.execute("CREATE TABLE customer_writes (customer_id text)")
            try connection.execute(
                """
                CREATE FUNCTION log_customer_write() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN INSERT INTO customer_writes VALUES (NEW.customer_id); RETURN NEW; END $$
                """)
            try connection.execute(
                "CREATE TRIGGER customer_writes AFTER UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION log_customer_write()"
            )
        }
        var lines: [String] = []
        for serial in 1...(2 * size + 10) {
            if serial % size == 1 {  // the first line of each chunk: the stored customer, same values
                lines.append(
                    line(
                        serial, customer: "stored", fields: #"{"phoneNumber":"010-1111-2222","email":"s@example.com"}"#)
                )
            } else if serial == 2 * size + 10 {  // the last line (chunk 3): a stamped customer whose line changes it
                lines.append(line(serial, customer: "repeat-2", fields: #"{"email":"moved@example.com"}"#))
            } else {
                let customer = "repeat-\(serial % 3)"
                lines.append(
                    line(
                        serial, customer: customer,
                        fields: #"{"email":"\#(customer)@example.com","addressChangedAt":"2024-05-06T07:08:09Z"}"#))
            }
        }
        let summary = try CardImport.run(
            file: try write(app, lines), actor: "cli:test", now: now, vault: vault, database: app.pool, workers: 1)
        #expect(summary.cards == lines.count)
        #expect(summary.customersCreated == 3)
        let writes = try app.pool.withConnection { connection in
            try connection.query("SELECT customer_id FROM customer_writes ORDER BY customer_id").map {
                try $0.decode("customer_id", as: String.self)
            }
        }
        // Before: "stored" in each of the 3 chunks and each "repeat-" customer in chunks 2 and 3.
        // Now: "stored" once (stored before the import) and repeat-2 in chunk 3, where it changed.
        #expect(writes == ["repeat-2", "stored"])
        let moved = try app.pool.withConnection { try CustomerStore.find("repeat-2", connection: $0) }
        #expect(moved?.email == "moved@example.com")
        #expect(moved?.emailChangedAt == now)
        let stamps = try app.pool.withConnection { connection in
            try connection.query("SELECT customer_id, updated_at = \(now) AS now FROM customers ORDER BY customer_id")
                .map { "\(try $0.decode("customer_id", as: String.self)) \(try $0.decode("now", as: Bool.self))" }
        }
        #expect(stamps == ["repeat-0 true", "repeat-1 true", "repeat-2 true", "stored true"])
        let repeated = try app.pool.withConnection { try CustomerStore.find("repeat-1", connection: $0) }
        #expect(repeated?.email == "repeat-1@example.com")
        #expect(repeated?.addressChangedAt == Date(timeIntervalSince1970: 1_714_979_289))
    }

    @Test(
        "An empty file imports nothing, and a file of exactly one read's worth of lines imports them all (no empty last read trapping)"
    )
    func emptyAndExactMultipleFiles() throws {
        let app = try TestApplication()
        let empty = app.directory.appendingPathComponent("empty-\(UUID().uuidString).jsonl")
        try FileManager.default.createDirectory(at: app.directory, withIntermediateDirectories: true)
        try Data().write(to: empty)
        #expect(
            try CardImport.run(file: empty, actor: "cli:test", now: Date(), vault: vault, database: app.pool).cards == 0
        )
        #expect(try count(app, "cards") == 0)
        let exact = try bigFile(app, count: CardImport.linesPerSlice)
        let summary = try CardImport.run(
            file: exact, actor: "cli:test", now: Date(), vault: vault, database: app.pool, workers: 1)
        #expect(summary.cards == CardImport.linesPerSlice)
        #expect(try count(app, "cards") == Int64(CardImport.linesPerSlice))
    }

    @Test(
        "A customer the import would create, created through the API meanwhile, is updated by its lines instead of failing the import"
    )
    func customerCreatedThroughTheAPIMeanwhile() throws {
        let app = try TestApplication()
        // The API's upsert of cust-race, not committed when the import reads its chunk.
        let api = try PostgresConnection(connectionString: app.database.connectionString)
        let apiPID = api.backendProcessID
        try api.execute("BEGIN")
        try api.execute("INSERT INTO customers (customer_id, phone_number) VALUES ('cust-race', '010-1111-2222')")
        let file = try write(
            app,
            [
                line(1, customer: "cust-new", fields: #"{"email":"new@example.com"}"#),
                line(2, customer: "cust-race", fields: #"{"email":"race@example.com"}"#),
                line(3, customer: "cust-race"),
            ])
        let vault = vault
        let importing = BackgroundCall {
            try CardImport.run(file: file, actor: "cli:test", now: Date(), vault: vault, database: app.pool, workers: 1)
        }
        // The import's COPY of its new customers waits on cust-race's key; then the API commits.
        let (waiting, activity) = try app.database.waitUntilBlocked(by: apiPID, within: 120)
        #expect(waiting, "the import never waited on the API's customer: \(activity)")
        try api.execute("COMMIT")
        let summary = try #require(importing.result(within: 30), "the import did not finish").get()
        #expect(summary.cards == 3)
        #expect(summary.customersCreated == 1)
        #expect(summary.customersUpdated == 1)
        let stored = try #require(try app.pool.withConnection { try CustomerStore.find("cust-race", connection: $0) })
        #expect(stored.phoneNumber == "010-1111-2222")  // the API's
        #expect(stored.email == "race@example.com")  // the line's, applied on top
        #expect(stored.emailChangedAt != nil)  // a changed address, stamped as the API's upsert would
        #expect(try count(app, "customers") == 2)
        #expect(try count(app, "cards") == 3)
    }

    @Test(
        "A card found without its customer stays refused when the API creates that customer and a new one of the chunk meanwhile"
    )
    func missingCustomerCreatedMeanwhileStaysRefused() throws {
        let app = try TestApplication()
        // The API's transaction creates cust-race (which line 1 creates too) and cust-late (which
        // line 2 names without an object) and has not committed when the import reads its chunk.
        let api = try PostgresConnection(connectionString: app.database.connectionString)
        try api.execute("BEGIN")
        try api.execute("INSERT INTO customers (customer_id) VALUES ('cust-race'), ('cust-late')")
        let file = try write(
            app,
            [
                line(1, customer: "cust-race", fields: #"{"email":"race@example.com"}"#),
                line(2, customer: "cust-late"),
                line(3, customer: "cust-after", fields: #"{"email":"after@example.com"}"#),
            ])
        let vault = vault
        let importing = BackgroundCall {
            try CardImport.run(file: file, actor: "cli:test", now: Date(), vault: vault, database: app.pool, workers: 1)
        }
        let (waiting, activity) = try app.database.waitUntilBlocked(by: api.backendProcessID, within: 120)
        #expect(waiting, "the import never waited on the API's customer: \(activity)")
        try api.execute("COMMIT")
        let result = try #require(importing.result(within: 30), "the import did not finish")
        // The first read found line 2's customer missing: that refusal stands (before, the second
        // plan ran on past it and stopped with "a customer disappeared" at cust-after).
        #expect {
            try result.get()
        } throws: { error in
            let text = "\(error)"
            return error is CommandInputError && text.hasPrefix("\(file.lastPathComponent):2: ")
                && text.contains("no such customer")
        }
        #expect(try count(app, "cards") == 0)
        #expect(try count(app, "customers") == 2)  // the API's two, nothing of the import
    }

    @Test(
        "While an import holds a stored customer it updates, provisioning for that customer is not held (foreign keys still take their lock)"
    )
    func importDoesNotHoldForeignKeys() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "stored-card", customer: "cust-1")
        // Two chunks of one worker; lines 2 and 3 update the stored cust-1 in the first.
        let file = try bigFile(app, count: 2 * CardImport.linesPerSlice)
        let other = try PostgresConnection(connectionString: app.database.connectionString)
        var lockedSeen = false
        var attemptInserted = false
        _ = try CardImport.run(
            file: file, actor: "cli:test", now: Date(), vault: vault, database: app.pool,
            progressEvery: CardImport.linesPerSlice, workers: 1
        ) { cards in
            guard cards == CardImport.linesPerSlice else { return }
            // The writer thread takes the first chunk's customers; wait until cust-1 is held.
            let deadline = Date().addingTimeInterval(10)
            while !lockedSeen, Date() < deadline {
                do {
                    try other.transaction { connection in
                        _ = try connection.query(
                            "SELECT 1 FROM customers WHERE customer_id = 'cust-1' FOR UPDATE NOWAIT")
                    }
                    Thread.sleep(forTimeInterval: 0.02)
                } catch {
                    lockedSeen = true
                }
            }
            // A provisioning attempt for that customer: its foreign keys' KEY SHARE must not wait.
            do {
                try other.transaction { connection in
                    try connection.execute(unsafeSQL: "SET LOCAL lock_timeout = '2s'")
                    try connection.execute(
                        unsafeSQL: """
                            INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, inputs, features, hits, flow, decision, ruleset_version)
                            VALUES (gen_random_uuid(), 'in_app', 'stored-card', 'cust-1', 'd', '{}', '{}', '[]', 'green', 'APPROVED', 'test')
                            """)
                }
                attemptInserted = true
            } catch {
                Issue.record("the attempt waited for the import: \(error)")
            }
        }
        #expect(lockedSeen, "the import never held the stored customer")
        #expect(attemptInserted)
        #expect(try count(app, "cards") == Int64(2 * CardImport.linesPerSlice + 1))
    }

    @Test("A connection lost in the middle of the COPY keeps nothing, and the same file then imports")
    func lostConnection() throws {
        let app = try TestApplication()
        let file = try bigFile(app, count: 6_000)
        let killer = try PostgresConnection(connectionString: app.database.connectionString)
        do {
            _ = try CardImport.run(
                file: file, actor: "cli:test", now: Date(), vault: vault, database: app.pool, progressEvery: 2_000
            ) { cards in
                guard cards == 2_000 else { return }
                // Whatever the import's connection is doing now (its COPY, or the writes after it):
                // matching the COPY's text alone missed it when the writer had moved on (flaky in CI).
                // Every backend of this database inside a transaction, except the killer's own.
                _ = try? killer.query(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
                    """)
            }
            Issue.record("the import should have failed")
        } catch let error as PostgresError {
            #expect(error.code == .unavailable, "\(error)")
        }
        for table in ["cards", "customers", "card_status_history", "audit_log"] {
            #expect(try count(app, table) == 0, "\(table)")
        }
        let summary = try CardImport.run(file: file, actor: "cli:test", now: Date(), vault: vault, database: app.pool)
        #expect(summary.cards == 6_000)
        #expect(try count(app, "cards") == 6_000)
    }

    /// Runs `issuerd cards import` with `arguments`, sends it `signal` `after` seconds once its
    /// standard error showed `progress`, and returns the exited process with all it wrote there.
    private func interruptedImport(
        _ arguments: [String], environment: [String: String], once progress: String, after delay: TimeInterval = 0,
        signal: Int32
    ) throws -> (process: Process, standardError: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try IssuerdExecutable.checkedPath())
        process.arguments = ["cards", "import"] + arguments
        process.environment = IssuerdExecutable.environment(
            ["PATH": "/usr/bin:/bin", "USER": "tester"].merging(environment) { $1 })
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var seen = ""
        while !seen.contains(progress) {
            let data = errors.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
        }
        #expect(seen.contains(progress), "\(seen)")
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        kill(process.processIdentifier, signal)
        seen += String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process, seen)
    }

    @Test(
        "An import process killed half-way (SIGINT, SIGKILL) keeps nothing, and running it again imports everything",
        arguments: [SIGINT, SIGKILL])
    func killedProcess(signal: Int32) throws {
        let app = try TestApplication()
        let file = try bigFile(app, count: 20_000)
        let environment = ["ISSUERD_DATABASE_URL": app.serviceConnectionString, "ISSUERD_MASTER_KEY": Self.masterKey]
        // Interrupted once the COPY is under way.
        let (process, seen) = try interruptedImport(
            ["--progress-every", "1000", file.path], environment: environment, once: "cards import: 2000 cards",
            signal: signal)
        if signal == SIGINT {
            // Ctrl-C: a message and the shell's exit status for it, even where SIGINT was ignored.
            #expect(process.terminationReason == .exit && process.terminationStatus == 130)
            #expect(seen.contains("cards import: interrupted: nothing was imported"), "\(seen)")
        } else {
            #expect(process.terminationReason == .uncaughtSignal)
        }
        for table in ["cards", "customers", "card_status_history", "audit_log"] {
            #expect(try count(app, table) == 0, "\(table)")
        }
        let again = try CommandLineRunner.run(["cards", "import", file.path], environment: environment)
        #expect(again.status == 0, "\(again.standardError)")
        #expect(
            again.standardOutput.contains("imported 20000 card(s); customers created 10001, updated 9999"),
            "\(again.standardOutput)")
        #expect(again.standardError.contains("peak resident memory"))
        #expect(try count(app, "cards") == 20_000)
    }

    @Test(
        "A byte order mark before the first line is not part of it, whether that line is a record, a comment or blank")
    func byteOrderMark() throws {
        for first in [line(1, fields: "{}"), "# cards of 2026-12-02", ""] {
            let app = try TestApplication()
            let url = app.directory.appendingPathComponent("bom.jsonl")
            try FileManager.default.createDirectory(at: app.directory, withIntermediateDirectories: true)
            try Data([0xEF, 0xBB, 0xBF] + Array((first + "\n" + line(2, fields: "{}") + "\n").utf8)).write(to: url)
            let summary = try CardImport.run(
                file: url, actor: "cli:test", now: Date(), vault: vault, database: app.pool)
            #expect(summary.cards == (first.hasPrefix("{") ? 2 : 1), "\(first)")
        }
    }

    @Test("A CRLF line of exactly the limit is taken whether or not a read ends between its \\r and \\n")
    func crlfAtTheLimit() throws {
        let app = try TestApplication()
        // Comment lines, then a comment line of exactly the limit whose "\r" is the first read's last byte (64 KiB).
        let limit = CardImport.maximumLineBytes
        var prefix = ""
        while 65_535 - limit - prefix.utf8.count > limit {
            prefix += "#" + String(repeating: "p", count: limit - 2) + "\r\n"
        }
        let filler = 65_535 - limit - prefix.utf8.count
        if filler > 0 { prefix += "#" + String(repeating: "f", count: filler - 3) + "\r\n" }
        #expect(prefix.utf8.count == 65_535 - limit)
        let atLimit = "#" + String(repeating: "x", count: limit - 1)
        let text = prefix + atLimit + "\r\n" + line(1, fields: "{}") + "\r\n"
        #expect(Array(text.utf8)[65_535] == 0x0D)
        let url = app.directory.appendingPathComponent("crlf.jsonl")
        try FileManager.default.createDirectory(at: app.directory, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        #expect(
            try CardImport.run(file: url, actor: "cli:test", now: Date(), vault: vault, database: app.pool).cards == 1)
        // One byte more is refused, naming the line.
        try Data((prefix + atLimit + "y\r\n" + line(1, fields: "{}") + "\r\n").utf8).write(to: url)
        #expect(throws: CommandInputError.self) {
            try CardImport.run(file: url, actor: "cli:test", now: Date(), vault: vault, database: app.pool)
        }
    }

    @Test("Ctrl-C once the COMMIT is on its way says the import may have been kept, and it is all or nothing")
    func interruptedWhileCommitting() throws {
        let app = try TestApplication()
        let file = try bigFile(app, count: 3_000)
        // A deferred trigger on one card holds the COMMIT for 3 s, long enough to interrupt it.
        try app.pool.withConnection { connection in
            try connection.execute(
                """
                CREATE FUNCTION test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$
                """)
            try connection.execute(
                """
                CREATE CONSTRAINT TRIGGER test_slow_commit AFTER INSERT ON cards DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.card_id = 'card-1') EXECUTE FUNCTION test_slow_commit()
                """)
        }
        let environment = ["ISSUERD_DATABASE_URL": app.serviceConnectionString, "ISSUERD_MASTER_KEY": Self.masterKey]
        // 0.5 s after "committing": the COMMIT sent, the server in the trigger.
        let (process, seen) = try interruptedImport(
            [file.path], environment: environment, once: "cards import: committing", after: 0.5, signal: SIGINT)
        #expect(process.terminationStatus == 130)
        #expect(seen.contains("interrupted while committing: the import may have been kept"), "\(seen)")
        #expect(!seen.contains("nothing was imported"), "\(seen)")
        // All or nothing, once the server is done with the session.
        var cards: Int64 = -1
        for _ in 0..<100 {
            let busy = try app.pool.withConnection {
                try $0.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE 'COMMIT%' AND pid <> pg_backend_pid()"
                ).first!.decode("n", as: Int64.self)
            }
            cards = try count(app, "cards")
            if busy == 0 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(cards == 0 || cards == 3_000, "\(cards)")
    }
}
