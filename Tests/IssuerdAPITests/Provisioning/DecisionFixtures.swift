import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Customers, cards, PassKit-shaped bodies and the Python oracle for the decision-path tests.
/// Rows are written straight through the stores (the admin endpoints are tested elsewhere).
enum DecisionFixtures {
    /// Visa and Mastercard test numbers (Luhn-valid).
    static let visaPAN = "4111111111111111"
    static let mastercardPAN = "5399999999999999"

    /// A customer with contact details; `addressChangedAt` etc. steer the default rules.
    static func customer(
        _ app: TestApplication, _ id: String, phone: String? = "01012345678",
        email: String? = "hong.gildong@example.com",
        createdDaysAgo: Double = 400, phoneChangedAt: Date? = nil
    ) throws {
        let created = Date().addingTimeInterval(-createdDaysAgo * 86_400)
        try app.pool.withConnection { connection in
            _ = try CustomerStore.upsert(
                CustomerRecord(
                    customerID: id, phoneNumber: phone, email: email, phoneChangedAt: phoneChangedAt,
                    emailChangedAt: nil,
                    addressChangedAt: nil, createdAt: created),
                now: created, connection: connection)
        }
    }

    /// A card of `customerID`; `createdDaysAgo` keeps it clear of the new-card rules.
    static func card(
        _ app: TestApplication, _ cardID: String, customer customerID: String, pan: String = visaPAN,
        expiration: String = "12/30",
        name: String = "HONG GILDONG", network: String = "visa", status: CardStatusValue = .active,
        description: String? = nil,
        createdDaysAgo: Double = 200
    ) throws {
        let panValue = try #require(PrimaryAccountNumber(pan))
        let expiration = try #require(CardExpiration(expiration))
        try app.pool.withConnection { connection in
            _ = try CardStore.insert(
                cardID: cardID, customerID: customerID, pan: panValue, expiration: expiration, cardholderName: name,
                paymentNetwork: network, status: status, localizedDescription: description, country: "KR",
                now: Date().addingTimeInterval(-createdDaysAgo * 86_400), vault: app.application.context.vault,
                connection: connection)
        }
    }

    /// A provisioning body with the app's PKI chain (leaf, intermediate), a 4-byte nonce and a
    /// 71-byte signature; `extra` fields are merged in.
    static func provisionBody(
        _ app: TestApplication, nonce: [UInt8] = [0x9c, 0x02, 0x30, 0x92], signature: [UInt8] = Array(0..<71),
        certificates: [String]? = nil, extra: [String: Any] = [:]
    ) throws -> String {
        var object: [String: Any] = [
            "certificates": certificates ?? [
                BinaryEncoding.base64String(app.pki.eccLeaf.certificateDER),
                BinaryEncoding.base64String(app.pki.intermediate.certificateDER),
            ],
            "nonce": BinaryEncoding.base64String(nonce),
            "nonceSignature": BinaryEncoding.hexString(signature),
            "device": ["id": "device-1", "type": "phone", "locale": "ko_KR"],
        ]
        object.merge(extra) { _, new in new }
        return String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// POSTs a provisioning body as `customer`'s app.
    static func provision(
        _ app: TestApplication, card cardID: String, customer: String, body: String, headers: [String: String] = [:]
    ) throws -> TestHTTPResponse {
        var all = headers
        all["Authorization"] = "Bearer \(try app.appToken(customer: customer))"
        return try app.client.postJSON("/v1/cards/\(cardID)/apple-pay/provision", body, headers: all)
    }

    /// A TSP authorization body.
    static func authorizeBody(
        requestID: String = UUID().uuidString, tokenReference: String = "DNITHE" + UUID().uuidString.prefix(8),
        pan: String = visaPAN,
        expiration: String = "12/30", deviceID: String = "device-1", recommendation: String = "APPROVED"
    ) -> String {
        """
        {"requestId":"\(requestID)","tokenReference":"\(tokenReference)","tokenRequestorId":"40010030273","tokenizationSource":"push",
         "card":{"accountNumber":"\(pan)","expiration":"\(expiration)"},
         "device":{"id":"\(deviceID)","type":"phone","name":"iPhone","locale":"ko_KR"},
         "wallet":{"deviceScore":4,"accountScore":5,"phoneNumberScore":4,"recommendedDecision":"\(recommendation)","reasonCodes":[]},
         "activeTokenCount":1}
        """
    }

    /// Rows of `sql` on the app's database.
    static func count(_ app: TestApplication, _ sql: String) throws -> Int {
        try app.pool.withConnection { connection in
            try connection.query(.init(unsafeSQL: sql)).first?.decode(0, as: Int.self) ?? -1
        }
    }

    /// Decrypts an ECC_V2 answer with the independent Python oracle and the leaf's private key.
    static func decrypt(
        _ app: TestApplication, encryptedPassData: String, ephemeralPublicKey: String
    ) throws -> [String: String] {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            Issue.record("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test")
            throw CancellationError()
        }
        let script = TestApplication.repositoryRoot.appendingPathComponent(
            "Tests/IssuerdCryptoTests/Oracle/decrypt_pass.py"
        ).path
        let request: [String: String] = [
            "scheme": "ECC_V2", "recipientPrivateKeyPEM": app.pki.eccLeaf.privateKeyPEM,
            "encryptedPassData": encryptedPassData,
            "ephemeralPublicKey": ephemeralPublicKey,
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(try JSONEncoder().encode(request))
        try input.fileHandleForWriting.close()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "oracle: \(stderr)")
        let answer = try JSONSerialization.jsonObject(with: stdout) as? [String: Any]
        return (answer?["plaintext"] as? [String: String]) ?? [:]
    }

    /// A rules directory whose one rule steps up in-app pushes from a watch, so a test can make
    /// a yellow push whose TSP authorization would otherwise be green.
    static func pushStepUpRules() throws -> String {
        let directory = try TestScratch.directory("issuerd-rules")
        try """
        rule test.watch_push
          title   "In-app push to a watch"
          outcome yellow
          reason  TEST_WATCH_PUSH
          stepup  [sms, email, app]
          owner   test
          when    request.channel == "in_app" and device.type == "watch"
        end
        """.write(to: directory.appendingPathComponent("test.rules"), atomically: true, encoding: .utf8)
        return directory.path
    }
}
