import Foundation
import IssuerdClient
import IssuerdCore
import IssuerdCrypto
import IssuerdStorage
import Testing

@testable import IssuerdAPI

/// A real issuerd with customers and cards written straight to its database, and
/// `IssuerdClient`s pointed at it: the issuer app's side of the API, end to end.
struct ClientEndToEndFixture {
    let app: TestApplication

    /// A budget far above any real exchange: these async tests share Swift's cooperative pool
    /// with blocking server suites in the same process, and starvation must not read as a
    /// timeout (the budget itself is tested against a stalling stub in IssuerdClientTests).
    static let timeBudget: Duration = .seconds(120)

    /// The device the app reports, as the server-side provisioning tests send it.
    static let device = DeviceInfo(id: "device-1", type: "phone", locale: "ko_KR")

    /// Starts a fresh issuerd over a fresh database.
    init() throws {
        app = try TestApplication()
    }

    /// A client for `customerID`'s app with a freshly minted token.
    func client(customer customerID: String) throws -> IssuerdClient {
        try client(token: try app.appToken(customer: customerID))
    }

    /// A client that always presents `token`.
    func client(token: String) throws -> IssuerdClient {
        let baseURL = try #require(URL(string: "http://127.0.0.1:\(app.application.port)/"))
        return IssuerdClient(baseURL: baseURL, timeBudget: Self.timeBudget, tokenProvider: { token })
    }

    /// A customer whose phone, e-mail and address changed a year ago, so the default rules see
    /// an established customer rather than a new-contact step-up.
    func customer(_ customerID: String) throws {
        let yearAgo = Date().addingTimeInterval(-365 * 86_400)
        let created = Date().addingTimeInterval(-400 * 86_400)
        try app.pool.withConnection { connection in
            _ = try CustomerStore.upsert(
                CustomerRecord(
                    customerID: customerID, phoneNumber: "01012345678", email: "hong.gildong@example.com",
                    phoneChangedAt: yearAgo,
                    emailChangedAt: yearAgo, addressChangedAt: yearAgo, createdAt: created),
                now: created, connection: connection)
        }
    }

    /// A card of `customerID`, created 200 days ago (clear of the new-card rules), with a random
    /// Luhn-valid PAN unless one is given.
    ///
    /// - Returns: The stored record (for its `primaryAccountIdentifier`) and the PAN.
    @discardableResult
    func card(
        _ cardID: String, customer customerID: String, pan: String = StepUpFixture.randomPAN(),
        expiration: String = "12/30",
        name: String = "HONG GILDONG", network: String = "visa", status: CardStatusValue = .active,
        description: String? = nil
    ) throws -> (record: CardRecord, pan: String) {
        let panValue = try #require(PrimaryAccountNumber(pan))
        let expiration = try #require(CardExpiration(expiration))
        let record = try app.pool.withConnection { connection in
            try CardStore.insert(
                cardID: cardID, customerID: customerID, pan: panValue, expiration: expiration, cardholderName: name,
                paymentNetwork: network, status: status, localizedDescription: description, country: "KR",
                now: Date().addingTimeInterval(-200 * 86_400), vault: app.application.context.vault,
                connection: connection)
        }
        return (record, pan)
    }

    /// The PassKit certificate chain of the generated PKI, leaf first, as DER.
    var certificates: [Data] {
        [Data(app.pki.eccLeaf.certificateDER), Data(app.pki.intermediate.certificateDER)]
    }

    /// Opens ECC_V2 pass data as Apple would, with the PKI leaf's private key (docs/crypto.md,
    /// ECC_V2: ECDH, NIST SP 800-56A concatenation KDF, AES-256-GCM with a zero IV).
    ///
    /// - Returns: The decrypted JSON object.
    func decrypt(_ passData: ApprovedPassData) throws -> [String: String] {
        let ephemeral = Array(try #require(passData.ephemeralPublicKey))
        let leafKey = try P256.KeyAgreement.PrivateKey(pemRepresentation: app.pki.eccLeaf.privateKeyPEM)
        let secret = try leafKey.sharedSecretFromKeyAgreement(
            with: P256.KeyAgreement.PublicKey(x963Representation: ephemeral))
        let key = try ConcatenationKDF.deriveKey(
            from: secret, otherInfo: ECCV2Encryptor.otherInfo(ephemeralPublicKey: ephemeral))
        let plaintext = try AES256GCM.open(
            Array(passData.encryptedPassData), using: key, nonce: [UInt8](repeating: 0, count: 12))
        return try #require(try JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: String])
    }
}
