import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// A fake MDES (MDES/fake_mdes.py) whose payloads Mastercard's own field-level encryption library
/// makes calls every operation over real HTTP against a real issuerd and PostgreSQL.
@Suite("Fake MDES with Mastercard's library")
struct FakeMDESTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("fake_mdes.py").path

    static func run(_ fixture: MDESFixture, _ steps: [[String: Any]]) throws -> [[String: Any]] {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw FakeMDESError(description: "ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test")
        }
        let input = try JSONSerialization.data(withJSONObject: [
            "baseURL": "http://127.0.0.1:\(fixture.app.application.port)", "certificatePEM": fixture.certificatePEM,
            "steps": steps,
        ])
        let output = try ExternalProcess.run(python, [script], input: input)
        guard output.status == 0 else { throw FakeMDESError(description: "fake MDES failed: \(output.stderr)") }
        let object = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
        return object?["answers"] as? [[String: Any]] ?? []
    }

    struct FakeMDESError: Error, CustomStringConvertible { let description: String }

    @Test("Every operation, payloads from Mastercard's library (OAEP SHA-256 and SHA-512), over HTTP")
    func everyOperation() throws {
        let fixture = try MDESFixture()
        let tur = "DWSPMC000000000fcb2f4136b2f4136a0532d2f4136a0532"
        let account = MDESFixture.fundingAccount()
        let core: [String: Any] = [
            "services": ["DIGITIZATION"], "correlationId": "D98765432104", "tokenType": "CLOUD",
            "tokenRequestorId": "50110030273", "paymentAppInstanceId": "pai-9",
            "fundingAccountInfo": ["tokenUniqueReference": tur],
        ]
        func with(_ extra: [String: Any]) -> [String: Any] { core.merging(extra) { _, new in new } }
        let now = Date()
        let steps: [[String: Any]] = [
            [
                "op": "authorizeService", "plaintext": account, "oaep": "SHA256",
                "body": with([
                    "requestId": "as-1",
                    "walletProviderDecisioningInfo": ["recommendedDecision": "REQUIRE_ADDITIONAL_AUTHENTICATION"],
                    "deviceInfo": ["formFactor": "WATCH", "osName": "WEAR_OS_NEXT"], "newField": ["x": 1],
                ]),
            ],
            ["repeatPrevious": true],
            ["op": "authorizeService", "plaintext": account, "oaep": "SHA256", "body": with(["requestId": "as-1"])],
            [
                "op": "authorizeService", "plaintext": account, "oaep": "SHA512", "send": "tampered",
                "body": with(["requestId": "as-2"]),
            ],
            [
                "op": "requestActivationMethods", "plaintext": account, "oaep": "SHA512",
                "body": with(["requestId": "ram-1"]),
            ],
            [
                "op": "deliverActivationCode",
                "body": [
                    "requestId": "dac-1", "tokenUniqueReference": tur, "correlationId": "D98765432104",
                    "activationMethod": ["type": "EMAIL_TO_CARDHOLDER_ADDRESS", "value": "h***@example.com"],
                    "activationCode": "735102", "expirationDateTime": MDESFixture.dateTime(now.addingTimeInterval(600)),
                ],
            ],
            [
                "op": "validateActivationCode",
                "body": [
                    "requestId": "vac-1", "tokenUniqueReference": tur, "correlationId": "D98765432104",
                    "activationCode": "111111",
                ],
            ],
            [
                "op": "validateActivationCode",
                "body": [
                    "requestId": "vac-2", "tokenUniqueReference": tur, "correlationId": "D98765432104",
                    "activationCode": "735102",
                ],
            ],
            [
                "op": "notifyServiceActivated", "plaintext": MDESFixture.fundingAccount(token: "5204731600014792"),
                "oaep": "SHA256",
                "body": with([
                    "requestId": "nsa-1", "accountPanSuffix": "9999", "decision": "REQUIRE_ADDITIONAL_AUTHENTICATION",
                    "serviceRequestDateTime": MDESFixture.dateTime(now),
                    "tokenActivatedDateTime": MDESFixture.dateTime(now),
                ]),
            ],
            [
                "op": "notifyTokenUpdated",
                "body": [
                    "requestId": "ntu-1", "reasonCode": "STATUS_UPDATE",
                    "tokens": [["tokenUniqueReference": tur, "status": "SUSPENDED", "suspendedBy": ["CARDHOLDER"]]],
                ],
            ],
            [
                "op": "notifySuspiciousEvents",
                "body": [
                    "requestId": "nse-1", "tokenUniqueReference": tur, "status": "SUSPENDED",
                    "events": ["eventName": "REPLENISH", "systemAtcStatus": ["atcNotFound": ["3"]]],
                ],
            ],
            ["op": "authorizeService", "plaintext": account, "headers": [:], "body": with(["requestId": "as-3"])],
        ]
        let answers = try Self.run(fixture, steps)
        try #require(answers.count == steps.count)
        func body(_ index: Int) -> [String: Any] { answers[index]["body"] as? [String: Any] ?? [:] }
        #expect(answers[0]["status"] as? Int == 200, "\(answers[0])")
        #expect(body(0)["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION")
        #expect(body(0)["responseId"] as? String == "as-1")
        // MDES's retry, the same bytes: the same answer, byte for byte, and no second attempt.
        #expect(answers[1]["raw"] as? String == answers[0]["raw"] as? String)
        // The same requestId with a payload made anew (the library draws a fresh key): another body, refused.
        #expect(body(2)["errorCode"] as? String == "DUPLICATE_REQUEST_ID")
        #expect(answers[3]["status"] as? Int == 400)
        #expect(body(3)["errorCode"] as? String == "CRYPTOGRAPHY_ERROR")
        #expect((body(4)["activationMethods"] as? [[String: Any]])?.isEmpty == false, "\(answers[4])")
        #expect(body(5)["responseId"] as? String == "dac-1", "\(answers[5])")
        #expect(body(6)["result"] as? String == "INCORRECT_CODE", "\(answers[6])")
        #expect(body(7)["result"] as? String == "SUCCESS", "\(answers[7])")
        for index in 8...10 {
            #expect(answers[index]["status"] as? Int == 200, "\(answers[index])")
            #expect(body(index)["responseId"] is String)
        }
        #expect(answers[11]["status"] as? Int == 403)
        #expect(try fixture.count("SELECT count(*) FROM provisioning_attempts WHERE channel = 'mdes'") == 1)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'suspended' AND service = 'mdes' AND wallet ->> 'tokenSuffix' = '4792'"
            )
                == 1)
        #expect(try fixture.count("SELECT count(*) FROM mdes_suspicious_events") == 1)
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'notify'") == 1)
    }

    /// Runs the fake standalone, as docs/networks.md ("Try it") does; returns the answer's status
    /// line and JSON.
    static func cli(_ fixture: MDESFixture, _ arguments: [String]) throws -> (status: String, body: [String: Any]) {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw FakeMDESError(description: "ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test")
        }
        let certificate = fixture.directory.appendingPathComponent("issuer.crt")
        try Data(fixture.certificatePEM.utf8).write(to: certificate)
        let output = try ExternalProcess.run(
            python,
            [script, "--url", "http://127.0.0.1:\(fixture.app.application.port)", "--cert", certificate.path]
                + arguments)
        let text = String(decoding: output.stdout, as: UTF8.self)
        guard let newline = text.firstIndex(of: "\n") else { throw FakeMDESError(description: "no output: \(text)") }
        let object = try JSONSerialization.jsonObject(with: Data(text[text.index(after: newline)...].utf8))
        return (String(text[..<newline]), object as? [String: Any] ?? [:])
    }

    @Test("Standalone (docs/networks.md, Try it): authorize yellow, methods, deliver, a wrong code, activated, updated")
    func standalone() throws {
        let fixture = try MDESFixture()
        let tur = "DWSPMC000000000000000000000000000000000000000001"
        let card = ["--pan", MDESFixture.pan, "--expiry", "12/30", "--tur", tur]
        let help = try ExternalProcess.run(
            try #require(ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"]), [Self.script, "--help"])
        #expect(help.status == 0)
        #expect(String(decoding: help.stdout, as: UTF8.self).contains("Notify Token Updated"))

        let authorized = try Self.cli(fixture, ["authorize"] + card + ["--source", "ACCOUNT_ADDED_MANUALLY"])
        #expect(authorized.status.hasSuffix("HTTP 200"), "\(authorized)")
        #expect(authorized.body["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION")
        let methods = try Self.cli(fixture, ["methods"] + card)
        let sms = try #require(
            (methods.body["activationMethods"] as? [[String: String]])?.first {
                $0["type"] == "TEXT_TO_CARDHOLDER_NUMBER"
            })
        let delivered = try Self.cli(
            fixture, ["deliver", "--tur", tur, "--method", "TEXT_TO_CARDHOLDER_NUMBER", "--value", sms["value"] ?? ""])
        #expect(delivered.status.hasSuffix("HTTP 200"), "\(delivered)")
        #expect(try fixture.count("SELECT count(*) FROM challenges WHERE token_reference = '\(tur)'") == 1)
        #expect(
            try Self.cli(fixture, ["validate", "--tur", tur, "--code", "0"]).body["result"] as? String
                == "INCORRECT_CODE")
        #expect(try Self.cli(fixture, ["activated"] + card).status.hasSuffix("HTTP 200"))
        #expect(
            try fixture.count(
                "SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'active' AND wallet ->> 'tokenSuffix' = '0009'"
            ) == 1)
        #expect(try Self.cli(fixture, ["updated", "--tur", tur, "--status", "SUSPENDED"]).status.hasSuffix("HTTP 200"))
        #expect(
            try fixture.count("SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'suspended'")
                == 1)
    }
}
