import Foundation
import IssuerdPostgres
import IssuerdTestSupport

@testable import IssuerdAPI

/// Rows the rules tests insert themselves, in the shapes the decision path writes
/// (`inputs` = the AttemptLog attributes object), so these tests do not depend on it.
enum RulesTestData {
    /// A customer and a card owned by it (the PAN columns hold placeholders: nothing here opens them).
    static func insertCard(_ cardID: String, customer customerID: String, pool: PostgresPool) throws {
        try pool.withConnection { connection in
            try connection.execute("INSERT INTO customers (customer_id) VALUES (\(customerID)) ON CONFLICT DO NOTHING")
            let fingerprint = Array(cardID.utf8)
            try connection.execute(
                """
                INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration,
                                   cardholder_name, payment_network, primary_account_identifier)
                VALUES (\(cardID), \(customerID), \([UInt8]([1, 2, 3])), 1, \(fingerprint), '1111', '12/30', 'JANE DOE', 'visa', \("pai-" + cardID))
                """)
        }
    }

    /// One stored decision.
    @discardableResult
    static func insertAttempt(
        id: UUID = UUID(), at time: Date, card: String?, device: String?, customer: String?, nameHash: String? = nil,
        inputs: String = "{}", features: String = "{}", hits: String = "[]", flow: String = "green",
        version: String = "sha256:test",
        pool: PostgresPool
    ) throws -> UUID {
        try pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, cardholder_name_hash,
                                                   inputs, features, hits, flow, decision, ruleset_version, created_at)
                VALUES (\(id), 'tsp', \(card), \(customer), \(device), \(nameHash), \(PostgresTextJSON(rawJSON: inputs)),
                        \(PostgresTextJSON(rawJSON: features)), \(PostgresJSON(rawJSON: hits)), \(flow),
                        \(flow == "orange" ? "DECLINED" : "APPROVED"), \(version), \(time))
                """)
        }
        return id
    }

    /// A copy of the repository's rules in a fresh temporary directory (tests that edit files
    /// never touch the repository's rules).
    static func copyOfRules() throws -> URL {
        let target = TestScratch.path("issuerd-rules")
        try FileManager.default.copyItem(at: TestApplication.repositoryRoot.appendingPathComponent("rules"), to: target)
        return target
    }

    /// Polls `condition` every 50 ms until it holds or `seconds` pass; no timing is asserted.
    static func eventually(within seconds: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    /// An example case (`*.cases`) with one `given` line.
    static func example(_ name: String, given: String, expect flow: String) -> String {
        "example \"\(name)\"\n  given {\n    \(given)\n  }\n  expect \(flow)\nend\n"
    }

    /// A rule in the language of docs/rules.md.
    static func rule(_ id: String, outcome: String = "yellow", mode: String? = nil, when condition: String) -> String {
        """
        rule \(id)
          title   "test rule \(id)"
          outcome \(outcome)
          reason  \(id.uppercased().replacingOccurrences(of: ".", with: "_"))
          owner   tests
        \(mode.map { "  mode    \($0)\n" } ?? "")  when    \(condition)
        end

        """
    }
}
