import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdMDES
import IssuerdPKCS11
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// MDES issuer keys in SoftHSM2 (`ISSUERD_MDES_ISSUER_KEY_LABELS`): the AES key of an inbound
/// payload is decrypted in the token.
@Suite("MDES issuer keys in an HSM (SoftHSM2)")
struct MDESHSMKeyTests {
    @Test(
        "A PKCS#1 v1.5 payload opens with a key that never leaves the token; SoftHSM's OAEP refusal is CRYPTOGRAPHY_ERROR"
    )
    func payloadsOpenInTheToken() throws {
        let (token, store) = try HSMKeyTests.initialisedToken()
        try store.token.createRSADecryptionKey(label: "mdes-issuer")
        let info = try #require(
            try store.token.objects().first { $0.label == "mdes-issuer" && $0.objectClass == "private key" })
        #expect(info.usage == ["decrypt"])
        let (modulus, exponent) = try store.token.rsaPublicKey(label: "mdes-issuer")
        let publicKey = try RSA.Encryption.PublicKey(
            pemRepresentation: try RSA.Signing.PublicKey(modulus: modulus, exponent: exponent).pemRepresentation)

        var environment = HSMKeyTests.hsmEnvironment(token, tav: false)
        environment["ISSUERD_MDES_ISSUER_KEY_LABELS"] = "mdes-issuer"
        let app = try TestApplication(environment: environment, prepare: HSMKeyTests.migrate)
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1", pan: MDESFixture.pan, network: "mastercard")
        let plaintext = try JSONSerialization.data(withJSONObject: MDESFixture.fundingAccount())
        for (index, padding) in RSA.Encryption.Padding.allCases.enumerated() {
            let key = try SymmetricKey.random(byteCount: 16)
            let iv = try SecureRandom.bytes(count: 16)
            var envelope: [String: Any] = [
                "encryptedData": BinaryEncoding.hexString(try AESCBC.encrypt(Array(plaintext), using: key, iv: iv)),
                "encryptedKey": BinaryEncoding.hexString(try RSAKeyWrap.wrap(key, to: publicKey, padding: padding)),
                "publicKeyFingerprint": BinaryEncoding.hexString(try publicKey.sha256Fingerprint),
                "iv": BinaryEncoding.hexString(iv),
            ]
            if padding != .pkcs1v15 { envelope["oaepHashingAlgorithm"] = padding == .oaepSHA256 ? "SHA256" : "SHA512" }
            let body: [String: Any] = [
                "requestId": "hsm-\(index)", "services": ["DIGITIZATION"], "correlationId": "D98765432104",
                "tokenType": "CLOUD", "fundingAccountInfo": ["encryptedPayload": envelope],
                "walletProviderDecisioningInfo": ["recommendedDecision": "APPROVED"],
            ]
            let response = try app.client.postJSON(
                "/mdes/issuerServices/1/0/authorizeService",
                String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self),
                headers: ["X-Client-Verify": "SUCCESS"])
            if padding == .pkcs1v15 {
                #expect(response.status == 200, "\(padding): \(response.text)")
                #expect(response.jsonObject()?["decision"] as? String == "APPROVED", "\(padding)")
            } else {
                // SoftHSM 2.6.1 takes CKM_RSA_PKCS_OAEP only with SHA-1 ("hashAlg must be CKM_SHA_1"):
                // its refusal of SHA-256/SHA-512 must be a CRYPTOGRAPHY_ERROR, never a 500. An HSM
                // with OAEP SHA-256/512 (Luna, nShield, CloudHSM) opens these; not tested here.
                #expect(response.status == 400, "\(padding): \(response.text)")
                #expect(response.jsonObject()?["errorCode"] as? String == "CRYPTOGRAPHY_ERROR")
            }
        }
    }

    @Test("Labels without an HSM, or naming no decryption key, stop start-up naming the setting")
    func refusals() throws {
        let reader = ConfigurationReader(["ISSUERD_MDES_ISSUER_KEY_LABELS": "mdes-issuer"])
        #expect(throws: ConfigurationError.self) { _ = try MDESSettings.read(reader, hsm: false) }

        let (token, _) = try HSMKeyTests.initialisedToken()
        var environment = HSMKeyTests.hsmEnvironment(token, tav: false)
        environment["ISSUERD_MDES_ISSUER_KEY_LABELS"] = "issuerd-tav"  // a signing key: no CKA_DECRYPT
        do {
            _ = try TestApplication(environment: environment, prepare: HSMKeyTests.migrate)
            Issue.record("a signing key was accepted as an issuer key")
        } catch let error as ConfigurationError {
            #expect(error.key == "ISSUERD_MDES_ISSUER_KEY_LABELS")
            #expect(error.problem.contains("CKA_DECRYPT"))
        }
    }
}
