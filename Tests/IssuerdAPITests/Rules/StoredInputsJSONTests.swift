import Foundation
import IssuerdHTTP
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// An attempt's inputs and features are `json` (sql/0018): stored as issuerd wrote them, read
/// back without `jsonb`'s rendering, and still what explain, the export and the backtest read.
@Suite("Stored inputs and features: json text as written")
struct StoredInputsJSONTests {
    static func value(_ text: String) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }

    @Test("The decision path's text is stored byte for byte, keys sorted; lz4 is kept across the type change")
    func storedAsWritten() throws {
        let app = try TestApplication()
        try RulesTestData.insertCard("card-json", customer: "cust-json", pool: app.pool)
        let long = String(repeating: "é-ü ", count: 900)  // past the 2 KB TOAST threshold, so it is compressed
        let inputs: [String: JSONValue] = [
            "card.network": .string("visa"), "device.id": .string("dev-1"), "customer.name_match_score": .int(97),
            "device.locale": .string(long), "wallet.device_score": .double(0.5), "card.is_virtual": .bool(false),
        ]
        let features: [String: JSONValue] = ["attempts(card, 24h)": .int(3), "attempts(device, 1h)": .int(0)]
        let record = AttemptRecord(
            attemptID: UUID(), channel: "in_app", cardID: "card-json", customerID: "cust-json", deviceID: "dev-1",
            inputs: inputs, features: features, hits: [], unknowns: [], flow: .green, decision: "APPROVED", allowedMethods: [],
            rulesetVersion: "sha256:test", facts: [:], createdAt: Date())
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
        #expect(text == JSONValue.object(inputs).jsonText)
        #expect(text.hasPrefix(#"{"card.is_virtual":false,"card.network":"visa","customer.name_match_score":97,"#))
        #expect(try stored.decode("features", as: String.self) == #"{"attempts(card, 24h)":3,"attempts(device, 1h)":0}"#)
        #expect(try stored.decode("network", as: String.self) == "visa")
        #expect(try stored.decode("compression", as: String?.self) == "lz4")
        // The explanation reads the same values back, and picks only catalogued attributes.
        let explained = try #require(try app.pool.withConnection { try StoredAttempt.load(id: record.attemptID, connection: $0) })
        #expect(try Self.value(explained.inputsJSON) == .object(inputs))
        #expect(try Self.value(explained.featuresJSON) == .object(features))
        let attributes = try Self.value(explained.attributesJSON)
        #expect(attributes["card.network"] == .string("visa"))
        #expect(attributes["device.locale"] == .string(long))
    }

    @Test("Rows stored as jsonb before sql/0018 keep their values, and attributes nested under `attributes` are found")
    func migratedRowsKeepTheirValues() throws {
        let app = try TestApplication()
        let nested = #"{"attributes": {"card.network": "amex", "not.an.attribute": 1}, "other": [1, 2]}"#
        let id = UUID()
        try app.pool.withConnection { connection in
            // The type change's own conversion: jsonb's rendering, as the migration's USING clause writes it.
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, inputs, features, hits, flow, decision, ruleset_version)
                VALUES (\(id), 'tsp', \(PostgresJSON(rawJSON: nested))::json, '{}', '[]', 'green', 'APPROVED', 'sha256:test')
                """)
        }
        let explained = try #require(try app.pool.withConnection { try StoredAttempt.load(id: id, connection: $0) })
        #expect(try Self.value(explained.attributesJSON) == .object(["card.network": .string("amex")]))
        #expect(try Self.value(explained.inputsJSON) == (try Self.value(nested)))
    }
}
