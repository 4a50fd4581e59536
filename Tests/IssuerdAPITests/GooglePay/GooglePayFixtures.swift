import Foundation
import IssuerdCrypto
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Keys and oracles of the Google Pay tests: a Mastercard encryption certificate from a PKI of its
/// own, throwaway OpenPGP keys made by PGPy, and the two independent openers (Mastercard's library
/// with Python `cryptography` for the TSP OPC, PGPy for Google's).
enum GooglePayFixtures {
    /// Mastercard's encryption key pair (RSA 2048, certified).
    struct MastercardKey: Sendable {
        let certificatePEM: String
        let privateKeyPEM: String
    }

    static let mastercard: MastercardKey = {
        do {
            let pki = try DevelopmentPKI.generate(now: Date())
            var profile = DevelopmentPKI.LeafProfile()
            profile.key = .rsa(bits: 2048)
            profile.commonName = "mdes-mastercard-encryption"
            profile.includeAppleMarker = false
            profile.keyUsage = "critical,keyEncipherment"
            let leaf = try pki.issueLeaf(profile)
            return MastercardKey(certificatePEM: leaf.certificatePEM, privateKeyPEM: leaf.privateKeyPEM)
        } catch {
            fatalError("Mastercard test key: \(error)")
        }
    }()

    /// The issuer's and Google's OpenPGP keys: armoured secret and public texts by name.
    static func openPGPKeys() throws -> [String: [String: String]] {
        let answer = try call(openPGPScript, ["op": "keys", "names": ["issuer", "google"]])
        guard let keys = answer as? [String: [String: String]] else { throw TestFailure("PGPy answered no keys") }
        return keys
    }

    /// Settings for a Google Pay-ready instance (files under `directory`): the Mastercard
    /// certificate, and with `pgp` both OpenPGP key files.
    static func environment(directory: URL, pgp: [String: [String: String]]?) throws -> [String: String] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("mastercard.pem")
        try mastercard.certificatePEM.write(to: certificate, atomically: true, encoding: .utf8)
        var environment = ["ISSUERD_MDES_MASTERCARD_CERT": certificate.path]
        if let pgp, let signing = pgp["issuer"]?["secret"], let encryption = pgp["google"]?["public"] {
            let signingFile = directory.appendingPathComponent("issuer-secret.asc")
            let encryptionFile = directory.appendingPathComponent("google-public.asc")
            try signing.write(to: signingFile, atomically: true, encoding: .utf8)
            try encryption.write(to: encryptionFile, atomically: true, encoding: .utf8)
            environment["ISSUERD_GOOGLE_OPC_SIGNING_KEY"] = signingFile.path
            environment["ISSUERD_GOOGLE_OPC_ENCRYPTION_KEY"] = encryptionFile.path
        }
        return environment
    }

    /// Google Pay push to a watch and Samsung Pay push to a tablet step up (SMS or the app; the
    /// app), `request.wallet` read from the route; the replay tests use them too.
    static let pushRules = """
        rule test.google_watch
          title   "Google Pay push to a watch"
          outcome yellow
          reason  TEST_GOOGLE_WATCH
          stepup  [sms, app]
          owner   test
          when    request.channel == "google_pay" and device.type == "watch"
        end

        rule test.samsung_tablet
          title   "Samsung Pay push to a tablet"
          outcome yellow
          reason  TEST_SAMSUNG_TABLET
          stepup  [app]
          owner   test
          when    request.wallet == "samsung_pay" and device.type == "tablet"
        end

        """

    /// The push tests' rules: a Google Pay push to a watch is yellow (SMS or the app), a Samsung
    /// Pay push to a tablet is yellow (the app; `request.wallet` read from the route), a blocked
    /// card is orange.
    static func rules() throws -> String {
        let directory = try TestScratch.directory("issuerd-rules")
        try """
        \(pushRules)
        rule test.blocked
          title   "Blocked card"
          outcome orange
          reason  TEST_BLOCKED
          owner   test
          when    card.status == "blocked"
        end
        """.write(to: directory.appendingPathComponent("test.rules"), atomically: true, encoding: .utf8)
        return directory.path
    }

    /// Customer `cust-1` holding one card: `card-visa` (``DecisionFixtures/visaPAN``, 12/30) or
    /// `card-mc` (``DecisionFixtures/mastercardPAN``, 07/31).
    ///
    /// - Returns: The card id.
    @discardableResult
    static func cardholder(_ app: TestApplication, network: String) throws -> String {
        try DecisionFixtures.customer(app, "cust-1")
        guard network == "mastercard" else {
            try DecisionFixtures.card(app, "card-visa", customer: "cust-1")
            return "card-visa"
        }
        try DecisionFixtures.card(
            app, "card-mc", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, expiration: "07/31",
            network: "mastercard")
        return "card-mc"
    }

    /// POSTs `body` (JSON, sorted keys) to `/v1/cards/{card}/{path}` with `customer`'s app token.
    static func post(
        _ app: TestApplication, _ path: String, card: String, customer: String, body: [String: Any],
        headers: [String: String] = [:]
    ) throws -> TestHTTPResponse {
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
        var all = headers
        all["Authorization"] = "Bearer \(try app.appToken(customer: customer))"
        return try app.client.postJSON("/v1/cards/\(card)/\(path)", json, headers: all)
    }

    /// Opens a Mastercard opaque payment card with Mastercard's library and checks its TAV with
    /// the public half of the app's TAV key.
    static func openMastercard(_ app: TestApplication, _ opaquePaymentCard: String) throws -> [String: Any] {
        let tavKey = try String(
            contentsOf: app.directory.appendingPathComponent("pki/tav-signing-key.pem"), encoding: .utf8)
        let answer = try call(
            googlePayScript,
            [
                "op": "open_mastercard", "opaquePaymentCard": opaquePaymentCard,
                "mastercardPrivateKeyPEM": mastercard.privateKeyPEM, "tavPrivateKeyPEM": tavKey,
            ])
        guard let object = answer as? [String: Any] else { throw TestFailure("the oracle answered no object") }
        return object
    }

    /// Decrypts Google's opaque payment card with Google's secret key and verifies the issuer's signature.
    static func openGoogle(_ text: String, keys: [String: [String: String]]) throws -> [String: Any] {
        let answer = try call(
            openPGPScript,
            [
                "op": "open", "message": text, "recipientSecret": keys["google"]?["secret"] ?? "",
                "signerPublic": keys["issuer"]?["public"] ?? "",
            ])
        guard let object = answer as? [String: Any] else { throw TestFailure("PGPy answered no object") }
        return object
    }

    static let googlePayScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Oracle/google_pay_oracle.py").path
    static let openPGPScript = TestApplication.repositoryRoot
        .appendingPathComponent("Tests/IssuerdOpenPGPTests/Oracle/openpgp_oracle.py").path

    private static func call(_ script: String, _ request: [String: Any]) throws -> Any {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw TestFailure("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test")
        }
        let output = try ExternalProcess.run(
            python, [script], input: try JSONSerialization.data(withJSONObject: request))
        guard output.status == 0 else { throw TestFailure("oracle \(request["op"] ?? "?") failed: \(output.stderr)") }
        return try JSONSerialization.jsonObject(with: output.stdout)
    }
}
