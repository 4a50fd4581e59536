import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdMDES
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// An issuerd with an MDES issuer key (a development RSA leaf with its certificate), a customer
/// with a Mastercard card, and payloads sealed to the issuer key the way MDES seals them.
final class MDESFixture: @unchecked Sendable {  // immutable after init
    let app: TestApplication
    let certificatePEM: String
    let issuerKey: MastercardEncryptionKey
    let directory: URL
    static let pan = DecisionFixtures.mastercardPAN

    /// - Parameters:
    ///   - seeded: Whether to add the customer and card (through the test database; false when
    ///     `environment` points the service at another database).
    ///   - transport: How the fixture's requests reach the server.
    init(
        environment: [String: String] = [:], rulesDirectory: String? = nil, logger: Logger? = nil,
        seeded: Bool = true, transport: TestTransport = .default
    ) throws {
        let pki = try DevelopmentPKI.generate(now: Date())
        var profile = DevelopmentPKI.LeafProfile()
        profile.key = .rsa(bits: 2048)
        profile.commonName = "mdes-issuer-encryption"
        profile.includeAppleMarker = false
        profile.keyUsage = "critical,keyEncipherment"
        let leaf = try pki.issueLeaf(profile)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-mdes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let keyFile = directory.appendingPathComponent("issuer-key.pem")
        try Data((leaf.privateKeyPEM + leaf.certificatePEM).utf8).write(to: keyFile)
        certificatePEM = leaf.certificatePEM
        issuerKey = try MastercardEncryptionKey(certificate: X509Certificate(derRepresentation: leaf.certificateDER))
        var settings = ["ISSUERD_MDES_ISSUER_KEYS": keyFile.path]
        settings.merge(environment) { _, new in new }
        app = try TestApplication(
            environment: settings, rulesDirectory: rulesDirectory, logger: logger, transport: transport)
        guard seeded else { return }
        try DecisionFixtures.customer(app, "cust-1", phone: "01012345678", email: "hong.gildong@example.com")
        try DecisionFixtures.card(
            app, "card-1", customer: "cust-1", pan: Self.pan, expiration: "12/30", network: "mastercard")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The plaintext of a funding account payload.
    static func fundingAccount(
        pan: String = pan, month: String = "12", year: String = "30",
        validUntil: Date? = Date().addingTimeInterval(1800),
        token: String? = nil
    ) -> [String: Any] {
        var object: [String: Any] = [
            "cardAccountData": ["accountNumber": pan, "expiryMonth": month, "expiryYear": year],
            "source": "ACCOUNT_ADDED_MANUALLY",
        ]
        if let validUntil { object["dataValidUntilTimestamp"] = Self.dateTime(validUntil) }
        if let token { object["tokenData"] = ["token": token, "expiryMonth": "11", "expiryYear": "29"] }
        return object
    }

    static func dateTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// `payload` sealed to the issuer key (SHA-1 certificate fingerprint, RSA-OAEP SHA-256).
    func seal(_ payload: [String: Any]) throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let sealed = try FieldLevelEncryption.seal(Array(data), to: issuerKey)
        let envelope = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(sealed))
        return try #require(envelope as? [String: Any])
    }

    /// An Authorize Service body; `extra` merged in.
    func authorizeBody(
        requestId: String = "req-1", tokenReference: String = "DWSPMC0000000001", payload: [String: Any]? = nil,
        recommendation: String = "APPROVED", extra: [String: Any] = [:]
    ) throws -> String {
        var body: [String: Any] = [
            "requestId": requestId, "services": ["DIGITIZATION"], "correlationId": "D98765432104", "tokenType": "CLOUD",
            "tokenRequestorId": "50110030273", "walletId": "103", "paymentAppInstanceId": "pai-1",
            "fundingAccountInfo": [
                "tokenUniqueReference": tokenReference, "encryptedPayload": try seal(payload ?? Self.fundingAccount()),
            ],
            "deviceInfo": [
                "deviceName": "My Phone", "formFactor": "PHONE", "osName": "ANDROID", "storageTechnology": "TEE",
            ],
            "walletProviderDecisioningInfo": [
                "recommendedDecision": recommendation, "deviceScore": "4", "accountScore": "5",
                "recommendationReasons": ["ACCOUNT_TOO_NEW"],
            ],
            "activeTokenCount": "1",
        ]
        body.merge(extra) { _, new in new }
        return String(decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
    }

    /// POSTs as the mutual-TLS proxy does (`X-Client-Verify: SUCCESS` from loopback).
    func post(
        _ operation: String, _ body: String, headers: [String: String] = ["X-Client-Verify": "SUCCESS"]
    ) throws
        -> TestHTTPResponse
    {
        try app.client.postJSON("/mdes/issuerServices/1/0/\(operation)", body, headers: headers)
    }

    func count(_ sql: String) throws -> Int { try DecisionFixtures.count(app, sql) }
}
