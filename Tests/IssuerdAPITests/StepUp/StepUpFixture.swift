import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport

@testable import IssuerdAPI

/// A customer, card, yellow attempt and token awaiting verification, written directly to the
/// test database (the TSP authorize endpoint that normally creates them is another route group).
struct StepUpFixture {
    let customerID: String
    let cardID: String
    let tokenReference: String
    let phone = "010-1234-5678"
    let email = "hong.gildong@example.com"

    init(
        _ app: TestApplication, allowedMethods: [String] = ["sms", "ars", "email", "app"], locale: String = "en_US",
        status: String = "pending_verification", serialNumber: String? = nil
    ) throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        customerID = "cust-\(suffix)"
        cardID = "card-\(suffix)"
        tokenReference = "DNITHE\(suffix)"
        guard let pan = PrimaryAccountNumber(Self.randomPAN()) else { throw TestFailure("test PAN rejected") }
        let (customerID, cardID, tokenReference, phone, email) = (customerID, cardID, tokenReference, phone, email)
        guard let expiration = CardExpiration(month: 12, year: 39) else { throw TestFailure("test expiry rejected") }
        try app.pool.transaction { connection in
            let now = Date()
            try CustomerStore.upsert(
                CustomerRecord(customerID: customerID, phoneNumber: phone, email: email, createdAt: now), now: now,
                connection: connection)
            _ = try CardStore.insert(
                cardID: cardID, customerID: customerID, pan: pan, expiration: expiration,
                cardholderName: "HONG GILDONG",
                paymentNetwork: "visa",
                status: .active, localizedDescription: nil, country: "KR", now: now,
                vault: app.application.context.vault, connection: connection)
            let attemptID = UUID()
            let inputs = try PostgresJSON(encoding: ["device.locale": locale])
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, token_reference, inputs, features, hits, flow,
                                                   decision, allowed_methods, ruleset_version)
                VALUES (\(attemptID), 'tsp', \(cardID), \(customerID), \(tokenReference), \(inputs), '{}', '[]', 'yellow',
                        'REQUIRE_ADDITIONAL_AUTHENTICATION', \(allowedMethods), 'test')
                """)
            try connection.execute(
                """
                INSERT INTO tokens (token_reference, card_id, device_id, status, attempt_id, serial_number, pass_type_identifier)
                VALUES (\(tokenReference), \(cardID), 'device-1', \(status), \(attemptID), \(serialNumber), 'paymentpass.com.apple')
                """)
        }
    }

    /// A random Visa-shaped PAN with a valid Luhn digit (cards are unique by PAN).
    static func randomPAN() -> String {
        var digits = [4] + (0..<14).map { _ in Int.random(in: 0...9) }
        let sum = digits.reversed().enumerated().reduce(0) { total, pair in
            let doubled = pair.offset % 2 == 0 ? pair.element * 2 : pair.element
            return total + (doubled > 9 ? doubled - 9 : doubled)
        }
        digits.append((10 - sum % 10) % 10)
        return digits.map(String.init).joined()
    }

    /// Requests a code by `methodID`, signed as the TSP.
    /// `padding` spaces make the body (and so the signature, which the replay guard remembers) unique.
    func requestCode(
        _ app: TestApplication, method methodID: String = "sms-1", padding: Int = 0
    ) throws -> TestHTTPResponse {
        try app.postAsTSP(
            "/v1/tsp/activation-codes",
            #"{"tokenReference":"\#(tokenReference)","activationMethodId":"\#(methodID)"\#(String(repeating: " ", count: padding))}"#
        )
    }

    /// Verifies `code`, signed as the TSP; `padding` spaces make the body (and so the signature) unique.
    func verify(_ app: TestApplication, code: String, padding: Int = 0) throws -> TestHTTPResponse {
        try app.postAsTSP("/v1/tsp/activation-codes/verify", verifyBody(code: code, padding: padding))
    }

    func verifyBody(code: String, padding: Int = 0) -> String {
        #"{"tokenReference":"\#(tokenReference)","code":"\#(code)"\#(String(repeating: " ", count: padding))}"#
    }

    /// The token's status in the database.
    func tokenStatus(_ app: TestApplication) throws -> String? {
        try app.pool.withConnection {
            try $0.query("SELECT status FROM tokens WHERE token_reference = \(tokenReference)").first?.decode(
                "status", as: String.self)
        }
    }

    /// The code the `log` provider wrote for `challengeID`, waiting for the dispatcher.
    static func loggedCode(_ app: TestApplication, challengeID: String, timeout: Double = 20) -> String? {
        let path = app.directory.appendingPathComponent("notifications.jsonl").path
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                for line in text.split(separator: "\n") {
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        object["challengeId"] as? String == challengeID
                    else { continue }
                    return object["code"] as? String
                }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }
}
