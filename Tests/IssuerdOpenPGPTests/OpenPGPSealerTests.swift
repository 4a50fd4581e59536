import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdOpenPGP

/// RNP's sign-and-encrypt, opened by an implementation of its own (PGPy) with throwaway keys.
@Suite("OpenPGP sign and encrypt (RNP), checked by PGPy")
struct OpenPGPSealerTests {
    @Test("A message signed by the issuer and encrypted to the recipient opens and verifies with PGPy")
    func sealOpensWithPGPy() throws {
        let keys = try OpenPGPOracle.keys(["issuer", "google", "stranger"])
        let sealer = try OpenPGPSealer(
            signingKey: Array(keys["issuer"]!.secret.utf8), recipientKey: Array(keys["google"]!.public.utf8))
        let text = #"{"hello":"wallet","n":1}"#
        let message = try sealer.seal(Array(text.utf8))
        let opened = try OpenPGPOracle.open(
            message: message, recipientSecret: keys["google"]!.secret, signerPublic: keys["issuer"]!.public)
        #expect(opened["plaintext"] as? String == text)
        #expect(opened["encrypted"] as? Bool == true)
        #expect(opened["signed"] as? Bool == true)
        #expect(opened["signatureValid"] as? Bool == true)

        // Another signer's public key does not verify it, and another recipient cannot open it.
        let wrongSigner = try OpenPGPOracle.open(
            message: message, recipientSecret: keys["google"]!.secret, signerPublic: keys["stranger"]!.public)
        #expect(wrongSigner["signatureValid"] as? Bool == false)
        #expect(
            (try? OpenPGPOracle.open(
                message: message, recipientSecret: keys["stranger"]!.secret, signerPublic: keys["issuer"]!.public))
                == nil)
        // A fresh session key per message.
        #expect(try sealer.seal(Array(text.utf8)) != message)
    }

    @Test("A public key where the secret one belongs, a protected secret key, and garbage are refused")
    func refusals() throws {
        let keys = try OpenPGPOracle.keys(["issuer", "google"])
        let protected = try OpenPGPOracle.keys(["locked"], protect: "passphrase")
        let google = Array(keys["google"]!.public.utf8)
        #expect(throws: OpenPGPError.self) {
            try OpenPGPSealer(signingKey: Array(keys["issuer"]!.public.utf8), recipientKey: google)
        }
        #expect(throws: OpenPGPError.self) {
            try OpenPGPSealer(signingKey: Array(protected["locked"]!.secret.utf8), recipientKey: google)
        }
        #expect(throws: OpenPGPError.self) {
            try OpenPGPSealer(signingKey: Array("not a key".utf8), recipientKey: google)
        }
        #expect(throws: OpenPGPError.self) {
            try OpenPGPSealer(signingKey: Array(keys["issuer"]!.secret.utf8), recipientKey: [])
        }
    }

    @Test("GoogleOpaquePaymentCard is the spec's JSON, signed and encrypted, in standard Base64")
    func googleOpaquePaymentCard() throws {
        let keys = try OpenPGPOracle.keys(["issuer", "google"])
        let sealer = try OpenPGPSealer(
            signingKey: Array(keys["issuer"]!.secret.utf8), recipientKey: Array(keys["google"]!.public.utf8))
        let pan = try #require(PrimaryAccountNumber("5399999999999999"))
        let session = "7f5d1c1e-6b1a-4a53-9d8e-0c1f2e3d4a5b"
        let text = try GoogleOpaquePaymentCard.make(
            pan: pan, expiryMonth: "07", expiryYear: "31", serverSessionID: session, sealer: sealer)
        let bytes = try #require(Data(base64Encoded: text))
        let opened = try OpenPGPOracle.open(
            message: Array(bytes), recipientSecret: keys["google"]!.secret, signerPublic: keys["issuer"]!.public)
        #expect(opened["signatureValid"] as? Bool == true)
        let plaintext = try #require((opened["plaintext"] as? String)?.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: plaintext) as? [String: Any])
        #expect((object["protocolHeader"] as? [String: Any])?["version"] as? Int == 1)
        #expect((object["validationContext"] as? [String: Any])?["serverSessionId"] as? String == session)
        let card = try #require(object["paymentCard"] as? [String: Any])
        #expect(card["accountNumber"] as? String == "5399999999999999")
        #expect(card["expiryMonth"] as? String == "07")
        #expect(card["expiryYear"] as? String == "31")
    }
}

/// PGPy driven through Oracle/openpgp_oracle.py (the test venv's Python, `ISSUERD_TEST_PYTHON`).
enum OpenPGPOracle {
    struct KeyPair {
        var secret: String
        var `public`: String
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Oracle/openpgp_oracle.py").path

    static func call(_ request: [String: Any]) throws -> [String: Any] {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw TestFailure("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test, which installs PGPy")
        }
        let output = try ExternalProcess.run(
            python, [script], input: try JSONSerialization.data(withJSONObject: request))
        guard output.status == 0 else { throw TestFailure("PGPy \(request["op"] ?? "?") failed: \(output.stderr)") }
        guard let answer = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any] else {
            throw TestFailure("PGPy answered no JSON object")
        }
        return answer
    }

    static func keys(_ names: [String], protect: String? = nil) throws -> [String: KeyPair] {
        var request: [String: Any] = ["op": "keys", "names": names]
        if let protect { request["protect"] = protect }
        var pairs: [String: KeyPair] = [:]
        for (name, value) in try call(request) {
            guard let pair = value as? [String: String], let secret = pair["secret"], let key = pair["public"] else {
                throw TestFailure("PGPy answered no key for \(name)")
            }
            pairs[name] = KeyPair(secret: secret, public: key)
        }
        return pairs
    }

    static func open(message: [UInt8], recipientSecret: String, signerPublic: String) throws -> [String: Any] {
        try call([
            "op": "open", "message": Data(message).base64EncodedString(), "recipientSecret": recipientSecret,
            "signerPublic": signerPublic,
        ])
    }
}

/// A missing prerequisite or an oracle failure: thrown so the test fails with the reason.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
