import Foundation
import IssuerdTestSupport

@testable import IssuerdAPI

/// Helpers the admin and contract tests share: valid PANs, card registration over HTTP, tokens
/// written straight into the database (the TSP routes are another suite's).
enum AdminFixtures {
    /// A Luhn-valid PAN of 16 digits starting with `prefix`, varied by `serial`.
    static func pan(prefix: String = "411111", serial: Int) -> String {
        let body = prefix + String(format: "%09d", serial % 1_000_000_000)
        var sum = 0
        for (index, character) in body.reversed().enumerated() {
            var digit = Int(String(character))!
            if index % 2 == 0 {
                digit *= 2
                if digit > 9 { digit -= 9 }
            }
            sum += digit
        }
        return body + String((10 - sum % 10) % 10)
    }

    /// An expiry a few years ahead, `MM/YY`.
    static var futureExpiration: String {
        let year = Calendar(identifier: .gregorian).component(.year, from: Date()) % 100 + 3
        return String(format: "12/%02d", year)
    }

    /// `Authorization` for an API key.
    static func bearer(_ key: String) -> [String: String] { ["Authorization": "Bearer \(key)"] }

    /// Creates a customer and a card over HTTP; returns the card id.
    @discardableResult
    static func registerCard(
        _ app: TestApplication, adminKey: String, customer: String, card: String, serial: Int
    ) throws -> String {
        let customerResponse = try app.client.postJSON(
            "/v1/admin/customers",
            #"{"customerId":"\#(customer)","phoneNumber":"010-1234-5678","email":"kim@example.com"}"#,
            headers: bearer(adminKey))
        guard [200, 201].contains(customerResponse.status) else {
            throw TestHTTPError("customer: \(customerResponse.status) \(customerResponse.text)")
        }
        let response = try app.client.postJSON(
            "/v1/admin/cards",
            #"{"cardId":"\#(card)","customerId":"\#(customer)","accountNumber":"\#(pan(serial: serial))","expiration":"\#(futureExpiration)","cardholderName":"KIM MINJI","paymentNetwork":"visa"}"#,
            headers: bearer(adminKey))
        guard response.status == 201 else { throw TestHTTPError("card: \(response.status) \(response.text)") }
        return card
    }

    /// Inserts a token of `status` for `card` directly.
    static func insertToken(_ app: TestApplication, reference: String, card: String, status: String) throws {
        try app.pool.withConnection { connection in
            _ = try connection.execute(
                "INSERT INTO tokens (token_reference, card_id, status) VALUES (\(reference), \(card), \(status))")
        }
    }

    /// The stored status of every token of `card`, by reference.
    static func tokenStatuses(_ app: TestApplication, card: String) throws -> [String: String] {
        try app.pool.withConnection { connection in
            var result: [String: String] = [:]
            for row in try connection.query("SELECT token_reference, status FROM tokens WHERE card_id = \(card)") {
                result[try row.decode("token_reference")] = try row.decode("status")
            }
            return result
        }
    }
}
