import Foundation
import IssuerdCrypto
import Testing

@testable import IssuerdMDES

/// issuerd against Mastercard's own libraries: payloads made by `mastercard-client-encryption`
/// open in issuerd, payloads issuerd makes open in that library, and issuerd's OAuth headers are
/// byte for byte those of `mastercard-oauth1-signer` and verify under its base-string code.
@Suite struct MastercardOracleTests {
    static let now = Date()
    static var plaintext: [String: Any] {
        [
            "cardAccountData": [
                "accountNumber": "5123456789012346", "expiryMonth": "09", "expiryYear": "29", "securityCode": "123",
            ],
            "source": "ACCOUNT_ADDED_MANUALLY",
            "accountHolderData": [
                "accountHolderName": "Jöhn Ðoe / \"Jr\"", "accountHolderEmailAddress": "j@example.com",
            ],
        ]
    }

    static func plaintextJSON() throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: plaintext, options: [.sortedKeys]), as: UTF8.self)
    }

    /// The envelope Mastercard's library put into an Authorize Service request body.
    static func envelope(of answer: [String: Any]) throws -> EncryptedPayload {
        let body = try #require(answer["body"] as? [String: Any])
        #expect(body["requestId"] as? String == "123456")
        let funding = try #require(body["fundingAccountInfo"] as? [String: Any])
        let payload = try #require(funding["encryptedPayload"])
        return try JSONDecoder().decode(
            EncryptedPayload.self, from: try JSONSerialization.data(withJSONObject: payload))
    }

    static func openedObject(_ opened: OpenedPayload) throws -> NSDictionary {
        let data = opened.plaintext.withUnsafeBytes { Data($0) }
        return try #require(try JSONSerialization.jsonObject(with: data) as? NSDictionary)
    }

    @Test(arguments: ["SHA256", "SHA512"], [16, 32])
    func payloadsFromMastercardsLibraryOpen(oaep: String, keyBytes: Int) throws {
        let ring = try MDESTestKeys.ring
        let pair = MDESTestKeys.issuerB
        let expected = NSDictionary(dictionary: Self.plaintext)
        for (withIV, upperCase) in [(true, false), (true, true), (false, false), (false, true)] {
            let answer = try MastercardOracle.call([
                "op": "encrypt", "certificatePEM": pair.certificatePEM, "plaintext": try Self.plaintextJSON(),
                "oaep": oaep, "aesKeyBytes": keyBytes, "withIV": withIV, "upperCase": upperCase,
                "fingerprint": "certificate-sha1",
            ])
            let payload = try Self.envelope(of: answer)
            #expect((payload.iv != nil) == withIV)
            #expect(payload.oaepHashingAlgorithm == oaep)
            #expect(
                upperCase
                    ? payload.encryptedData == payload.encryptedData.uppercased()
                    : payload.encryptedData == payload.encryptedData.lowercased())
            let opened = try FieldLevelEncryption.open(payload, with: ring, now: Self.now)
            #expect(try Self.openedObject(opened) == expected, "iv \(withIV), upper \(upperCase)")
            #expect(opened.keyByteCount == keyBytes)
            #expect(opened.padding == (oaep == "SHA256" ? .oaepSHA256 : .oaepSHA512))
            #expect(opened.key.fingerprints.contains(BinaryEncoding.hexString(pair.certificate.sha1Fingerprint)))
        }
    }

    /// The fingerprints Mastercard's library computes itself (SHA-256 of the key and of the
    /// certificate) and the SHA-1 forms given to it find the right key of two.
    @Test(arguments: ["library", "certificate-sha256", "certificate-sha1", "public-key-sha1"])
    func everyFingerprintFormFindsItsKey(form: String) throws {
        let ring = try MDESTestKeys.ring
        for pair in [MDESTestKeys.issuerA, MDESTestKeys.issuerB] {
            let answer = try MastercardOracle.call([
                "op": "encrypt", "certificatePEM": pair.certificatePEM, "plaintext": try Self.plaintextJSON(),
                "oaep": "SHA256", "aesKeyBytes": 16, "withIV": true, "upperCase": false, "fingerprint": form,
            ])
            let payload = try Self.envelope(of: answer)
            let opened = try FieldLevelEncryption.open(payload, with: ring, now: Self.now)
            let own = try MDESIssuerKey(pemRepresentation: pair.keyFilePEM)
            #expect(opened.key.fingerprints == own.fingerprints, "\(form)")
            #expect(try Self.openedObject(opened) == NSDictionary(dictionary: Self.plaintext))
        }
    }

    /// PKCS#1 v1.5, which Mastercard's library cannot make, from Python `cryptography`.
    @Test func pkcs1PayloadsFromPythonCryptographyOpen() throws {
        let ring = try MDESTestKeys.ring
        for withIV in [true, false] {
            let answer = try MastercardOracle.call([
                "op": "encrypt_pkcs1", "certificatePEM": MDESTestKeys.issuerA.certificatePEM,
                "plaintext": try Self.plaintextJSON(), "withIV": withIV,
            ])
            let payload = try JSONDecoder().decode(
                EncryptedPayload.self, from: try JSONSerialization.data(withJSONObject: try #require(answer["payload"]))
            )
            #expect(payload.oaepHashingAlgorithm == nil)
            let opened = try FieldLevelEncryption.open(payload, with: ring, now: Self.now)
            #expect(opened.padding == .pkcs1v15)
            #expect(try Self.openedObject(opened) == NSDictionary(dictionary: Self.plaintext))
        }
    }

    /// An Authorize Service answer issuerd encrypts to Mastercard's certificate, opened by
    /// Mastercard's library with Mastercard's private key.
    @Test(arguments: FieldLevelEncryption.OAEPHash.allCases)
    func payloadsIssuerdSealsOpenInMastercardsLibrary(hash: FieldLevelEncryption.OAEPHash) throws {
        struct Plain: Encodable {
            let dataValidUntilTimestamp = "2026-05-28T20:56:40Z"
            let paymentAccountReference = "5001a9f027e5629d11e3949a0800a"
            let issuerSpecificPersonalizationData = ["QUJDRA==", "a/b"]
        }
        let mastercard = MDESTestKeys.mastercard
        let recipient = try MastercardEncryptionKey(certificate: mastercard.certificate)
        let sealed = try FieldLevelEncryption.seal(encoding: Plain(), to: recipient, hash: hash)
        let body: [String: Any] = [
            "responseId": "123456", "decision": "APPROVED",
            "encryptedPayload": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(sealed)),
        ]
        let answer = try MastercardOracle.call([
            "op": "decrypt", "privateKeyPEM": mastercard.privateKeyPEM, "body": body,
        ])
        let plaintext = try #require(answer["plaintext"] as? [String: Any])
        #expect(plaintext["dataValidUntilTimestamp"] as? String == "2026-05-28T20:56:40Z")
        #expect(plaintext["paymentAccountReference"] as? String == "5001a9f027e5629d11e3949a0800a")
        #expect(plaintext["issuerSpecificPersonalizationData"] as? [String] == ["QUJDRA==", "a/b"])
        #expect(plaintext.count == 3)
        // The oracle can fail: to another key, the library refuses it.
        let stderr = try MastercardOracle.failure([
            "op": "decrypt", "privateKeyPEM": MDESTestKeys.issuerA.privateKeyPEM, "body": body,
        ])
        #expect(stderr.contains("Error"))
    }

    static let urls = [
        "https://api.mastercard.com/mdes/csapi/v2/token/suspend",
        "https://sandbox.api.mastercard.com/mdes/csapi/v2/search",
        "https://API.Mastercard.com:443/mdes/csapi/mtf/v2/token/delete",
        "https://api.mastercard.com?first_param=value&first_param=othervalue&param2=hello",
        "http://localhost:8080/mdes/csapi/v2/token/unsuspend",
    ]

    /// Same inputs, fixed nonce and timestamp: issuerd's header is Mastercard's signer's, byte for
    /// byte (RSASSA-PKCS1-v1_5 is deterministic), and verifies under the signer's base string.
    @Test(arguments: urls)
    func oauthHeadersMatchMastercardsSigner(url: String) throws {
        let pair = MDESTestKeys.issuerA
        let key = try RSA.Signing.PrivateKey(pemRepresentation: pair.privateKeyPEM)
        let signer = MastercardOAuth1Signer(
            consumerKey:
                "UTfbhDCSeNYvJpLL5l028sWL9it739PYh6LU5lZja15xcRpY!fd209e6c579dc9d7be52da93d35ae6b6c167c17400000000",
            signingKey: key)
        let bodies = [
            #"{"TokenSuspendRequest":{"TokenUniqueReference":"DWSPMC000000000fcb2f4136b2f4136a0532d2f4136a0532","ReasonCode":"T","AuditInfo":{"UserId":"A1435477","UserName":"John Smith","Organization":"Any Bank"}}}"#,
            "", #"{"CommentText":"é ü / + = ~ * ' ( ) !"}"#,
        ]
        for body in bodies {
            let nonce = try MastercardOAuth1Signer.makeNonce()
            let header = try signer.authorizationHeader(
                method: "POST", url: url, body: Array(body.utf8), nonce: nonce, timestamp: 1_780_000_000)
            let theirs = try MastercardOracle.call([
                "op": "sign", "url": url, "method": "POST", "body": body, "consumerKey": signer.consumerKey,
                "privateKeyPEM": pair.privateKeyPEM, "nonce": nonce, "timestamp": 1_780_000_000,
            ])
            #expect(header == theirs["header"] as? String, "\(url) \(body)")
            let verdict = try MastercardOracle.call([
                "op": "verify", "url": url, "method": "POST", "body": body, "header": header,
                "publicKeyPEM": key.publicKey.pemRepresentation,
            ])
            #expect(verdict["valid"] as? Bool == true)
            #expect(verdict["bodyHashMatches"] as? Bool == true)
        }
        // The oracle can fail: a header for another body does not verify.
        let header = try signer.authorizationHeader(method: "POST", url: url, body: Array("{}".utf8))
        let verdict = try MastercardOracle.call([
            "op": "verify", "url": url, "method": "POST", "body": "{ }", "header": header,
            "publicKeyPEM": key.publicKey.pemRepresentation,
        ])
        #expect(verdict["bodyHashMatches"] as? Bool == false)
    }
}
