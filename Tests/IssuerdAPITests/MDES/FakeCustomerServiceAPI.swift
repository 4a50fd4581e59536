import Foundation
import IssuerdCrypto
import IssuerdTestSupport

/// The fake Customer Service API (FakeCustomerService/fake_csapi.py) as a child process: it checks
/// every request's OAuth signature with Mastercard's own signer library and answers in
/// Mastercard's shapes.
final class FakeCustomerServiceAPI: @unchecked Sendable {  // immutable after init; the child is stopped in deinit
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("FakeCustomerService/fake_csapi.py").path
    static let consumerKey = "issuerd-test-consumer!4f2a9c0b1d"

    let process = Process()
    let input = Pipe()
    let port: Int
    let client: HTTPTestClient
    /// The issuer's signing key (PEM), as issuerd reads it from `ISSUERD_MDES_SIGNING_KEY`; nil
    /// when the fake was given only the public key of a key kept in an HSM.
    let signingKeyPEM: String?
    let keyFile: URL
    let decryptionKeyFile: URL

    /// `ISSUERD_MDES_CSAPI_URL` for this fake.
    var baseURL: String { "http://127.0.0.1:\(port)/mdes/csapi/v2" }

    /// The settings that point issuerd at this fake.
    var environment: [String: String] {
        var settings = [
            "ISSUERD_MDES_CSAPI_URL": baseURL, "ISSUERD_MDES_CONSUMER_KEY": Self.consumerKey,
            "ISSUERD_MDES_AUDIT_USER_ID": "issuerd-csr",
            "ISSUERD_MDES_AUDIT_USER_NAME": "issuerd automation", "ISSUERD_MDES_AUDIT_ORGANIZATION": "Test Bank",
        ]
        settings["ISSUERD_MDES_SIGNING_KEY"] = signingKeyPEM
        return settings
    }

    /// Starts the fake.
    ///
    /// - Parameter publicKeyPEM: The public key of a signing key kept elsewhere (an HSM); by
    ///   default a fresh key pair is made and issuerd gets its private key.
    ///   - decryptionKeyPEM: The private key of the certificate `/token/update` data is encrypted
    ///     to; with it the fake decrypts that data with Mastercard's library.
    init(publicKeyPEM: String? = nil, decryptionKeyPEM: String? = nil) throws {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw TestFailure(
                "ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test (Mastercard's signer)")
        }
        signingKeyPEM = publicKeyPEM == nil ? try RSA.Signing.PrivateKey(bits: 2048).pemRepresentation : nil
        keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("csapi-\(UUID().uuidString).pem")
        try Data((publicKeyPEM ?? signingKeyPEM ?? "").utf8).write(to: keyFile)
        decryptionKeyFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "csapi-decrypt-\(UUID().uuidString).pem")
        try Data((decryptionKeyPEM ?? "").utf8).write(to: decryptionKeyFile)
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments =
            [
                Self.script, publicKeyPEM == nil ? "--signing-key" : "--public-key", keyFile.path, "--consumer-key",
                Self.consumerKey,
            ] + (decryptionKeyPEM == nil ? [] : ["--decryption-key", decryptionKeyFile.path])
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line: [UInt8] = []
        while !line.contains(0x0A) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard words.count == 2, words[0] == "listening",
            let port = Int(words[1].trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw TestFailure("the fake Customer Service API did not start")
        }
        self.port = port
        client = HTTPTestClient(port: port)
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: keyFile)
        try? FileManager.default.removeItem(at: decryptionKeyFile)
    }

    /// The tokens Mastercard holds for each Account PAN: a `/token/update` answer lists them.
    func accounts(_ tokensByPAN: [String: [String]]) throws {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: tokensByPAN), as: UTF8.self)
        guard try client.postJSON("/_accounts", json).status == 200 else { throw TestFailure("accounts refused") }
    }

    /// Answers planned for a token unique reference, each used once in order:
    /// `(status, [[Source, ReasonCode, ErrorCode, Description, Recoverable]])`.
    func plan(_ tokenUniqueReference: String, _ answers: [(status: Int, errors: [[String: String]])]) throws {
        let plan = [tokenUniqueReference: answers.map { ["status": $0.status, "errors": $0.errors] as [String: Any] }]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
        guard try client.postJSON("/_plan", json).status == 200 else { throw TestFailure("plan refused") }
    }

    /// Every request the fake received, with its checks.
    func requests() throws -> [[String: Any]] {
        let response = try client.get("/_requests")
        return response.jsonObject()?["requests"] as? [[String: Any]] ?? []
    }

    /// Waits until `condition` holds for the requests received (at most `timeout` seconds).
    func wait(timeout: Double = 20, until condition: ([[String: Any]]) -> Bool) throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = try requests()
        while !condition(seen) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            seen = try requests()
        }
        return seen
    }
}

extension [String: Any] {
    /// The request's root object (`Token<Op>Request`).
    var csapiRequest: [String: Any]? {
        guard let operation = self["operation"] as? String,
            let body = self["body"] as? [String: Any]
        else { return nil }
        return body["Token" + operation.prefix(1).uppercased() + operation.dropFirst() + "Request"] as? [String: Any]
    }
}
