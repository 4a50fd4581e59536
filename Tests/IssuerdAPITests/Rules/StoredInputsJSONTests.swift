import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// An attempt's inputs and features are `json` (sql/0018): stored as issuerd wrote them, read
/// back without `jsonb`'s rendering, and still what explain, the export and the backtest read.
@Suite("Stored inputs and features: json text as written")
struct StoredInputsJSONTests {
    static func value(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test("The decision path's text is stored byte for byte; lz4 is kept across the type change")
    func storedAsWritten() throws {
        let app = try TestApplication()
        try RulesTestData.insertCard("card-json", customer: "cust-json", pool: app.pool)
        let long = String(repeating: "é-ü ", count: 900)  // past the 2 KB TOAST threshold, so it is compressed
        let inputs: [String: JSONValue] = [
            "card.network": .string("visa"), "device.id": .string("dev-1"), "customer.name_match_score": .int(97),
            "device.locale": .string(long), "wallet.device_score": .double(0.5), "card.is_virtual": .bool(false),
        ]
        let features: [String: JSONValue] = ["attempts(card, 24h)": .int(3), "attempts(device, 1h)": .int(0)]
        var record = AttemptRecord(
            attemptID: UUID(), channel: .inApp,
            subject: AttemptSubject(cardID: "card-json", customerID: "cust-json", deviceID: "dev-1"),
            rulesetVersion: "sha256:test", createdAt: Date())
        record.inputs = .members(inputs)
        record.features = .members(features)
        record.flow = .green
        record.decision = .approved
        let row = try app.pool.withConnection { connection in
            try AttemptStore.insert(record, connection: connection)
            return try connection.query(
                """
                SELECT pg_typeof(inputs)::text AS inputs_type, pg_typeof(features)::text AS features_type,
                       inputs::text AS inputs, features::text AS features, pg_column_compression(inputs) AS compression,
                       inputs ->> 'card.network' AS network
                FROM provisioning_attempts WHERE attempt_id = \(record.attemptID)
                """
            ).first
        }
        let stored = try #require(row)
        #expect(try stored.decode("inputs_type", as: String.self) == "json")
        #expect(try stored.decode("features_type", as: String.self) == "json")
        let text: String = try stored.decode("inputs")
        #expect(text == JSONValue.object(inputs).unorderedJSONText)
        #expect(text.contains(#""card.network":"visa""#) && text.contains(#""customer.name_match_score":97"#))
        #expect(try stored.decode("features", as: String.self) == JSONValue.object(features).unorderedJSONText)
        #expect(try stored.decode("network", as: String.self) == "visa")
        let lz4 = try app.pool.withConnection { try Self.hasLZ4($0) }
        #expect(try stored.decode("compression", as: String?.self) == (lz4 ? "lz4" : "pglz"))
        // The explanation reads the same values back, and picks only catalogued attributes.
        let explained = try #require(
            try app.pool.withConnection { try StoredAttempt.load(id: record.attemptID, connection: $0) })
        #expect(try Self.value(explained.inputsJSON) == .object(inputs))
        #expect(try Self.value(explained.featuresJSON) == .object(features))
        let attributes = try Self.value(explained.attributesJSON)
        #expect(attributes["card.network"] == .string("visa"))
        #expect(attributes["device.locale"] == .string(long))
    }

    /// Whether the server can compress with lz4 (sql/0008 and sql/0018 fall back to pglz).
    static func hasLZ4(_ connection: PostgresConnection) throws -> Bool {
        try connection.query(
            "SELECT 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_settings WHERE name = 'default_toast_compression') AS lz4"
        ).first?.decode("lz4", as: Bool.self) ?? false
    }

    @Test(
        "sql/0018 on a table written before it: values kept, lz4 and NOT NULL kept, indexes valid; this version reads and writes either schema"
    )
    func migration() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 2)
        defer { pool.close() }
        let sql = TestApplication.repositoryRoot.appendingPathComponent("sql")
        let folder = TestScratch.path("issuerd-migrations")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: sql.path).sorted()
        where name.hasSuffix(".sql") && name < "0018" {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        try Migrator(directory: folder, logger: .silent).migrate(using: pool)

        // Rows as the schema before 0018 holds them: one written by this version's writer (its
        // json bound into jsonb), one nested under `attributes`, one large enough to be compressed.
        let long = String(repeating: "wxyz", count: 1500)
        let nested = #"{"attributes": {"card.network": "amex", "not.an.attribute": 1}, "other": [1, 2]}"#
        var written = AttemptRecord(
            attemptID: UUID(), channel: .tsp, rulesetVersion: "sha256:test", createdAt: Date())
        written.inputs = ["card.network": .string("visa"), "device.locale": .string(long)]
        written.features = ["attempts(card, 24h)": .int(2)]
        written.flow = .green
        written.decision = .approved
        let nestedID = UUID()
        try pool.withConnection { connection in
            try AttemptStore.insert(written, connection: connection)
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, inputs, features, hits, flow, decision, ruleset_version)
                VALUES (\(nestedID), 'tsp', \(PostgresJSON(rawJSON: nested)), '{"attempts(card, 24h)": 5}', '[]', 'green', 'APPROVED', 'sha256:test')
                """)
        }
        func check(_ stage: String) throws {
            let explained = try #require(
                try pool.withConnection { try StoredAttempt.load(id: nestedID, connection: $0) }, "\(stage)")
            #expect(try Self.value(explained.attributesJSON) == .object(["card.network": .string("amex")]), "\(stage)")
            #expect(try Self.value(explained.inputsJSON) == (try Self.value(nested)), "\(stage)")
            #expect(try Self.value(explained.featuresJSON) == .object(["attempts(card, 24h)": .int(5)]), "\(stage)")
            let mine = try #require(
                try pool.withConnection { try StoredAttempt.load(id: written.attemptID, connection: $0) }, "\(stage)")
            guard case .members(let writtenInputs) = written.inputs else { throw CancellationError() }
            #expect(try Self.value(mine.inputsJSON) == .object(writtenInputs), "\(stage)")
            #expect(try Self.value(mine.attributesJSON)["device.locale"] == .string(long), "\(stage)")
        }
        try check("before sql/0018")
        let types =
            "SELECT atttypid::regtype::text || ' ' || attnotnull || ' ' || attcompression::text AS t FROM pg_attribute "
            + "WHERE attrelid = 'provisioning_attempts'::regclass AND attname IN ('inputs', 'features') ORDER BY attname"
        let lz4 = try pool.withConnection { try Self.hasLZ4($0) }
        #expect(
            try pool.withConnection {
                try $0.query(.init(unsafeSQL: types)).map { try $0.decode("t", as: String.self) }
            }
                == (lz4 ? ["jsonb true l", "jsonb true l"] : ["jsonb true ", "jsonb true "]))

        try FileManager.default.copyItem(
            at: sql.appendingPathComponent("0018_attempt_inputs_json.sql"),
            to: folder.appendingPathComponent("0018_attempt_inputs_json.sql"))
        #expect(try Migrator(directory: folder, logger: .silent).migrate(using: pool).map(\.version) == [18])
        #expect(
            try pool.withConnection {
                try $0.query(.init(unsafeSQL: types)).map { try $0.decode("t", as: String.self) }
            }
                == (lz4 ? ["json true l", "json true l"] : ["json true ", "json true "]))
        try check("after sql/0018")
        let (invalid, compression): (Int, String?) = try pool.withConnection { connection in
            let invalid =
                try connection.query(
                    "SELECT count(*) AS n FROM pg_index WHERE indrelid = 'provisioning_attempts'::regclass AND NOT (indisvalid AND indisready)"
                ).first?.decode("n", as: Int.self) ?? -1
            let compression =
                try connection.query(
                    "SELECT pg_column_compression(inputs) AS c FROM provisioning_attempts WHERE attempt_id = \(written.attemptID)"
                ).first?.decode("c", as: String?.self) ?? nil
            return (invalid, compression)
        }
        #expect(invalid == 0)
        #expect(compression == (lz4 ? "lz4" : "pglz"))
    }

    @Test("A NUL, which json would take and every later read refuse, is stored as U+FFFD")
    func nulIsReplaced() throws {
        let app = try TestApplication()
        var record = AttemptRecord(
            attemptID: UUID(), channel: .tsp, rulesetVersion: "sha256:test", createdAt: Date())
        record.inputs = ["device.locale": .string("fr\u{0}FR"), "a\u{0}b": .array([.string("\u{0}")])]
        record.flow = .green
        record.decision = .approved
        let locale: String? = try app.pool.withConnection { connection in
            try AttemptStore.insert(record, connection: connection)
            return try connection.query(
                "SELECT inputs ->> 'device.locale' AS l FROM provisioning_attempts WHERE attempt_id = \(record.attemptID)"
            )
            .first?.decode("l", as: String?.self) ?? nil
        }
        #expect(locale == "fr\u{FFFD}FR")
        let explained = try #require(
            try app.pool.withConnection { try StoredAttempt.load(id: record.attemptID, connection: $0) })
        #expect(
            try Self.value(explained.inputsJSON)
                == .object(["device.locale": .string("fr\u{FFFD}FR"), "a\u{FFFD}b": .array([.string("\u{FFFD}")])]))
        // Without a NUL the text is the writer's, untouched.
        #expect(AttemptStore.document(["k": .string("a\\u0000")]).rawJSON == #"{"k":"a\\u0000"}"#)
    }
}
