import Foundation
import IssuerdCore
import IssuerdCrypto
import Testing

@testable import IssuerdMDES

/// Mastercard's opaque payment card of a wallet push, opened by Mastercard's own library.
@Suite("Mastercard opaque payment card")
struct MastercardOpaquePaymentCardTests {
    @Test("The card data opens in Mastercard's library; the TAV is the signer's, over the same validity")
    func opensInMastercardsLibrary() throws {
        let mastercard = MDESTestKeys.mastercard
        let tavKey = try RSA.Signing.PrivateKey(bits: 2048)
        let tav = try MastercardTAVProvider(signingKey: tavKey, validity: 600)
        let pan = try #require(PrimaryAccountNumber("5399999999999999"))
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        let text = try MastercardOpaquePaymentCard.make(
            pan: pan, expiration: try #require(CardExpiration("03/29")),
            accountHolderName: "GILDONG HONG OF THE EASTERN PROVINCE", cardReference: "card-1", tav: tav,
            recipient: try MastercardEncryptionKey(certificate: mastercard.certificate), now: now)

        let json = try #require(Data(base64Encoded: text))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(Set(object.keys) == ["fundingAccountInfo", "tokenizationAuthenticationValue"])
        let fundingAccountInfo = try #require(object["fundingAccountInfo"] as? [String: Any])
        let answer = try MastercardOracle.call([
            "op": "decrypt", "privateKeyPEM": mastercard.privateKeyPEM, "body": fundingAccountInfo,
        ])
        let plaintext = try #require(answer["plaintext"] as? [String: Any])
        let card = try #require(plaintext["cardAccountData"] as? [String: Any])
        #expect(card["accountNumber"] as? String == "5399999999999999")
        #expect(card["expiryMonth"] as? String == "03")
        #expect(card["expiryYear"] as? String == "29")
        // accountHolderName is at most 27 characters.
        #expect(
            (plaintext["accountHolderData"] as? [String: Any])?["accountHolderName"] as? String
                == "GILDONG HONG OF THE EASTERN")
        #expect(plaintext["source"] as? String == "ACCOUNT_ADDED_VIA_APPLICATION")
        #expect(plaintext["dataValidUntilTimestamp"] as? String == "2026-05-28T20:36:40Z")

        let tavText = try #require(object["tokenizationAuthenticationValue"] as? String)
        let tavJSON = try JSONDecoder().decode(
            MastercardTAVProvider.TAV.self, from: try #require(Data(base64Encoded: tavText)))
        #expect(tavJSON.dataValidUntilTimestamp == "2026-05-28T20:36:40Z")
        let signature = try #require(Data(base64Encoded: tavJSON.signature))
        #expect(
            tavKey.publicKey.isValidSignature(
                Array(signature), for: Array("5399999999999999|0329|2026-05-28T20:36:40Z".utf8)))
        // Another certificate's key cannot open it.
        #expect(
            try MastercardOracle.failure([
                "op": "decrypt", "privateKeyPEM": MDESTestKeys.issuerA.privateKeyPEM, "body": fundingAccountInfo,
            ]).contains("Error"))
    }
}
