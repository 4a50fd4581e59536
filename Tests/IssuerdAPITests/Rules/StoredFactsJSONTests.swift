import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// An attempt's facts and unknowns are `json` (sql/0019), and an attempt's row stays in line
/// (`toast_tuple_target`): stored as issuerd wrote them, read back by the admin view, the TSP
/// retry's stored answer and `->`, before and after the migration.
@Suite("Stored facts and unknowns: json text as written, rows in line")
struct StoredFactsJSONTests {
    static func value(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    /// A row a little larger than an in-app decision's under the default policy (facts 2.9 KB,
    /// inputs 800 bytes): facts about 3.8 KB (unresolved rules), inputs about 800 bytes, over
    /// half a page in all, so the largest value is compressed to keep it in line.
    static func record(card: String?, customer: String?, facts: [String: JSONValue]) -> AttemptRecord {
        let inputs: [String: JSONValue] = Dictionary(
            uniqueKeysWithValues: (0..<24).map { ("input.attribute_\($0)", JSONValue.string("value-\($0)")) })
        var record = AttemptRecord(
            attemptID: UUID(), channel: .inApp,
            subject: AttemptSubject(cardID: card, customerID: customer, deviceID: "dev-1"),
            rulesetVersion: "sha256:test", facts: facts, createdAt: Date())
        record.inputs = .members(inputs)
        record.features = ["attempts(card, 24h)": .int(3)]
        record.unknowns = ["wallet.device_score", "request.source"]
        record.flow = .yellow
        record.decision = .requireAdditionalAuthentication
        record.allowedMethods = ["sms"]
        return record
    }

    static let largeFacts: [String: JSONValue] = [
        "channel": "in_app", "scheme": "ECC_V2",
        "unresolved": .array(
            (0..<24).map { index in
                [
                    "rule": .string("rule.number_\(index)"), "reason": .string("REASON_NUMBER_\(index)"),
                    "mode": "live", "outcome": "yellow",
                    "values": [["name": .string("wallet.score_\(index)"), "text": "unknown", "value": .null]],
                ]
            }),
    ]

    @Test("Facts and unknowns are stored byte for byte as json, compressed, and the row needs no TOAST table")
    func storedAsWrittenInLine() throws {
        let app = try TestApplication()
        try RulesTestData.insertCard("card-facts", customer: "cust-facts", pool: app.pool)
        let record = Self.record(card: "card-facts", customer: "cust-facts", facts: Self.largeFacts)
        let written = AttemptStore.factsJSON(record).rawJSON
        #expect(written.utf8.count > 3_500)
        let row = try #require(
            try app.pool.withConnection { connection in
                try AttemptStore.insert(record, connection: connection)
                return try connection.query(
                    """
                    SELECT pg_typeof(facts)::text AS facts_type, pg_typeof(unknowns)::text AS unknowns_type, facts::text AS facts,
                           unknowns::text AS unknowns, pg_column_compression(facts) AS compression, facts -> 'unresolved' -> 3 ->> 'rule' AS rule,
                           (SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = provisioning_attempts.tableoid) AS toast
                    FROM provisioning_attempts WHERE attempt_id = \(record.attemptID)
                    """
                ).first
            })
        #expect(try row.decode("facts_type", as: String.self) == "json")
        #expect(try row.decode("unknowns_type", as: String.self) == "json")
        #expect(try row.decode("facts", as: String.self) == written)
        #expect(try row.decode("unknowns", as: String.self) == #"["wallet.device_score","request.source"]"#)
        #expect(try row.decode("rule", as: String.self) == "rule.number_3")
        let lz4 = try app.pool.withConnection { try StoredInputsJSONTests.hasLZ4($0) }
        #expect(try row.decode("compression", as: String?.self) == (lz4 ? "lz4" : "pglz"))
        // Compressed in line: nothing moved out into the TOAST table (a second insert per attempt).
        let toast: String = try row.decode("toast")
        let chunks = try app.pool.withConnection {
            try $0.query(.init(unsafeSQL: "SELECT count(*) AS n FROM \(toast)")).first?.decode("n", as: Int.self)
        }
        #expect(chunks == 0)
        // The admin view reads them back.
        let found = try #require(
            try app.pool.withConnection { try AttemptStore.find(record.attemptID, connection: $0) })
        #expect(found["facts"] == .object(Self.largeFacts))
        #expect(found["unknowns"] == .array(["wallet.device_score", "request.source"]))
    }

    @Test(
        "A NUL in facts, which json would take and every later read refuse, is stored as U+FFFD; an escaped backslash is kept"
    )
    func nulInFactsIsReplaced() throws {
        let app = try TestApplication()
        let record = Self.record(
            card: nil, customer: nil, facts: ["device": ["id": .string("dev\u{0}1")], "note": .string("a\\u0000")])
        let (id, note): (String?, String?) = try app.pool.withConnection { connection in
            try AttemptStore.insert(record, connection: connection)
            let row = try connection.query(
                "SELECT facts -> 'device' ->> 'id' AS id, facts ->> 'note' AS note FROM provisioning_attempts WHERE attempt_id = \(record.attemptID)"
            ).first
            return (try row?.decode("id", as: String?.self) ?? nil, try row?.decode("note", as: String?.self) ?? nil)
        }
        #expect(id == "dev\u{FFFD}1")
        #expect(note == "a\\u0000")
        #expect(AttemptStore.textJSON(#"{"k":"a\\u0000"}"#).rawJSON == #"{"k":"a\\u0000"}"#)
    }

    @Test(
        "sql/0019 on a table written before it: facts, unknowns and a TSP retry's stored answer kept; this version writes either schema"
    )
    func migration() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 2)
        defer { pool.close() }
        let sql = TestApplication.repositoryRoot.appendingPathComponent("sql")
        let folder = TestScratch.path("issuerd-migrations-0019")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: sql.path).sorted()
        where name.hasSuffix(".sql") && name < "0019" {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        try Migrator(directory: folder, logger: .silent).migrate(using: pool)

        // Written before 0019: by this version's writer (json bound into jsonb), and a TSP
        // attempt with its stored answer as the earlier writer bound it (jsonb).
        let mine = Self.record(card: nil, customer: nil, facts: Self.largeFacts)
        let tsp = UUID()
        let answer: JSONValue = ["decision": "APPROVED", "activationCode": .null, "reasons": ["A", "B"]]
        try pool.withConnection { connection in
            try AttemptStore.insert(mine, connection: connection)
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, request_id, token_reference, inputs, features, hits, unknowns, flow,
                    decision, ruleset_version, facts)
                VALUES (\(tsp), 'tsp', 'req-0019', 'TOK-0019', '{}', '{}', '[]', \(PostgresJSON(rawJSON: #"["a.b"]"#)), 'green', 'APPROVED',
                    'sha256:test', \(PostgresJSON(rawJSON: JSONValue.object(["response": answer, "channel": "tsp"]).unorderedJSONText)))
                """)
        }
        let types =
            "SELECT string_agg(attname || ' ' || atttypid::regtype::text || ' ' || attnotnull, ', ' ORDER BY attname) AS t FROM pg_attribute "
            + "WHERE attrelid = 'provisioning_attempts'::regclass AND attname IN ('facts', 'unknowns')"
        func columnTypes() throws -> String? {
            try pool.withConnection { try $0.query(.init(unsafeSQL: types)).first?.decode("t", as: String.self) }
        }
        func check(_ stage: String) throws {
            let found = try #require(
                try pool.withConnection { try AttemptStore.find(mine.attemptID, connection: $0) }, "\(stage)")
            #expect(found["facts"] == .object(Self.largeFacts), "\(stage)")
            #expect(found["unknowns"] == .array(["wallet.device_score", "request.source"]), "\(stage)")
            let stored = try pool.withConnection { connection in
                try connection.query(
                    "SELECT (SELECT p.facts -> 'response' FROM provisioning_attempts p WHERE p.channel = 'tsp' AND p.request_id = 'req-0019') AS answer"
                ).first?.decode("answer", as: PostgresJSON?.self) ?? nil
            }
            #expect(try stored?.decode(JSONValue.self) == answer, "\(stage)")
            let other = try #require(try pool.withConnection { try AttemptStore.find(tsp, connection: $0) }, "\(stage)")
            #expect(other["unknowns"] == .array(["a.b"]), "\(stage)")
        }
        try check("before sql/0019")
        #expect(try columnTypes() == "facts jsonb true, unknowns jsonb true")

        try FileManager.default.copyItem(
            at: sql.appendingPathComponent("0019_attempt_facts_json.sql"),
            to: folder.appendingPathComponent("0019_attempt_facts_json.sql"))
        #expect(try Migrator(directory: folder, logger: .silent).migrate(using: pool).map(\.version) == [19])
        #expect(try columnTypes() == "facts json true, unknowns json true")
        try check("after sql/0019")
        let (options, compression, invalid): (String?, String?, Int) = try pool.withConnection { connection in
            let options =
                try connection.query(
                    "SELECT array_to_string(reloptions, ',') AS o FROM pg_class WHERE oid = 'provisioning_attempts'::regclass"
                ).first?.decode("o", as: String?.self) ?? nil
            let compression =
                try connection.query(
                    "SELECT pg_column_compression(facts) AS c FROM provisioning_attempts WHERE attempt_id = \(mine.attemptID)"
                ).first?.decode("c", as: String?.self) ?? nil
            let invalid =
                try connection.query(
                    "SELECT count(*) AS n FROM pg_index WHERE indrelid = 'provisioning_attempts'::regclass AND NOT (indisvalid AND indisready)"
                ).first?.decode("n", as: Int.self) ?? -1
            return (options, compression, invalid)
        }
        #expect(options?.contains("toast_tuple_target=4080") == true)
        let lz4 = try pool.withConnection { try StoredInputsJSONTests.hasLZ4($0) }
        #expect(compression == (lz4 ? "lz4" : "pglz"))
        #expect(invalid == 0)
        // Defaults still hold for a writer that leaves them out.
        let defaults = try pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, inputs, features, hits, flow, decision, ruleset_version)
                VALUES ('00000000-0000-0000-0000-000000000019', 'tsp', '{}', '{}', '[]', 'green', 'APPROVED', 'sha256:test')
                """)
            return try connection.query(
                "SELECT facts::text || unknowns::text AS d FROM provisioning_attempts WHERE attempt_id = '00000000-0000-0000-0000-000000000019'"
            ).first?.decode("d", as: String.self)
        }
        #expect(defaults == "{}[]")
    }
}
