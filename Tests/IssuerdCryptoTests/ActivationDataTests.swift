import Foundation
import IssuerdCore
import Testing

@testable import IssuerdCrypto

/// Mastercard TAV v3 (verified with the `openssl` CLI) and the issuer OTP with its verify.
@Suite struct ActivationDataTests {
    private func request(
        now: Date = Date(timeIntervalSince1970: 1_900_000_000), reference: String = "card-123",
        nonce: [UInt8] = [1, 2, 3, 4]
    ) throws
        -> ActivationDataRequest
    {
        try ActivationDataRequest(
            primaryAccountNumber: try #require(PrimaryAccountNumber("5399999999999999")),
            expiration: try #require(CardExpiration("03/29")),
            cardReference: reference, nonce: nonce, now: now)
    }

    @Test func tavV3Structure() throws {
        let provider = try MastercardTAVProvider(signingKey: TestPKI.shared.tavSigningKey)
        let data = try provider.activationData(for: try request())
        let tav = try JSONDecoder().decode(MastercardTAVProvider.TAV.self, from: Data(data))
        #expect(tav.version == "3")
        #expect(tav.signatureAlgorithm == "RSA-SHA256")
        #expect(tav.includedFieldsInOrder == "accountNumber|accountExpiry|dataValidUntilTimestamp")
        // 1_900_000_000 + 30 min.
        #expect(tav.dataValidUntilTimestamp == "2030-03-17T18:16:40Z")
        let signature = try BinaryEncoding.decodeBase64(tav.signature)
        let signed = Array("5399999999999999|0329|2030-03-17T18:16:40Z".utf8)
        #expect(TestPKI.shared.tavSigningKey.publicKey.isValidSignature(signature, for: signed))
        // The activation data is the TAV JSON itself, not base64 of it.
        #expect(data.first == UInt8(ascii: "{"))
        let text = String(decoding: data, as: UTF8.self)
        #expect(!text.contains("5399999999999999"))
    }

    @Test func tavBytesAreWhatJSONEncoderWrites() throws {
        let provider = try MastercardTAVProvider(signingKey: TestPKI.shared.tavSigningKey)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for offset in stride(from: 0.0, to: 40 * 86_400 * 365, by: 86_400 * 97 + 3_671.5) {
            let data = try provider.activationData(
                for: try request(now: Date(timeIntervalSince1970: 1_000_000_000 + offset)))
            let tav = try JSONDecoder().decode(MastercardTAVProvider.TAV.self, from: Data(data))
            #expect(Array(try encoder.encode(tav)) == data)
        }
    }

    @Test func timestampsAreWhatISO8601DateFormatterWrites() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        for seconds in stride(from: 946_684_799.9, to: 4_102_444_800, by: 86_400 * 13 + 3_599.7) {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(
                MastercardTAVProvider.timestamp(date)
                    == formatter.string(from: Date(timeIntervalSince1970: seconds.rounded(.down))))
        }
    }

    @Test func tavSignatureVerifiesWithOpenSSLCLI() throws {
        let openssl = try #require(
            ExternalTool.which("openssl"), "the openssl CLI is required (Debian package openssl)")
        let provider = try MastercardTAVProvider(signingKey: TestPKI.shared.tavSigningKey, validity: 300)
        let tav = try JSONDecoder().decode(
            MastercardTAVProvider.TAV.self, from: Data(try provider.activationData(for: try request())))
        let directory = try ExternalTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let publicKey = directory.appendingPathComponent("tav-public.pem")
        let message = directory.appendingPathComponent("signed.txt")
        let signature = directory.appendingPathComponent("signature.bin")
        try Data(TestPKI.shared.tavSigningKey.publicKey.pemRepresentation.utf8).write(to: publicKey)
        try Data("5399999999999999|0329|\(tav.dataValidUntilTimestamp)".utf8).write(to: message)
        try Data(try BinaryEncoding.decodeBase64(tav.signature)).write(to: signature)
        let good = try ExternalTool.run(
            openssl, ["dgst", "-sha256", "-verify", publicKey.path, "-signature", signature.path, message.path])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(String(decoding: good.stdout, as: UTF8.self).contains("Verified OK"))
        // The CLI must also be able to say no: another expiry was not signed.
        try Data("5399999999999999|0330|\(tav.dataValidUntilTimestamp)".utf8).write(to: message)
        let bad = try ExternalTool.run(
            openssl, ["dgst", "-sha256", "-verify", publicKey.path, "-signature", signature.path, message.path])
        #expect(bad.status != 0)
    }

    @Test func tavValidityBounds() throws {
        let key = TestPKI.shared.tavSigningKey
        expectCryptoError(.invalidInput) { try MastercardTAVProvider(signingKey: key, validity: 31 * 86_400) }
        expectCryptoError(.invalidInput) { try MastercardTAVProvider(signingKey: key, validity: 0) }
        #expect(try MastercardTAVProvider(signingKey: key).validity == 1800)
    }

    @Test func issuerOTPVerifies() throws {
        let provider = try IssuerOTPProvider(key: try SymmetricKey.random())
        let request = try request()
        let data = try provider.activationData(for: request)
        #expect(String(decoding: data, as: UTF8.self).hasPrefix("IOTP1.1900001800."))
        #expect(provider.verify(data, for: request) == .valid)
        // Past its validity.
        let later = try self.request(now: request.now.addingTimeInterval(1801))
        #expect(provider.verify(data, for: later) == .expired)
        // Bound to the card reference, the nonce and the expiry.
        #expect(provider.verify(data, for: try self.request(reference: "card-124")) == .invalid)
        #expect(provider.verify(data, for: try self.request(nonce: [1, 2, 3, 5])) == .invalid)
        let otherExpiry = try ActivationDataRequest(
            primaryAccountNumber: request.primaryAccountNumber, expiration: try #require(CardExpiration("04/29")),
            cardReference: "card-123",
            nonce: [1, 2, 3, 4], now: request.now)
        #expect(provider.verify(data, for: otherExpiry) == .invalid)
        // Forged validity end, another key, garbage.
        var forged = String(decoding: data, as: UTF8.self)
        forged = forged.replacingOccurrences(of: "1900001800", with: "1999999999")
        #expect(provider.verify(Array(forged.utf8), for: later) == .invalid)
        let other = try IssuerOTPProvider(key: try SymmetricKey.random())
        #expect(other.verify(data, for: request) == .invalid)
        for garbage in ["", "IOTP1..", "IOTP1.x.y", "IOTP2.1900001800.AAAA", String(repeating: "A", count: 500)] {
            #expect(provider.verify(Array(garbage.utf8), for: request) == .invalid)
        }
    }

    @Test func requestAndProviderBounds() throws {
        expectCryptoError(.invalidInput) { try self.request(reference: "") }
        expectCryptoError(.invalidInput) { try self.request(reference: String(repeating: "x", count: 129)) }
        expectCryptoError(.invalidInput) { try self.request(nonce: [UInt8](repeating: 0, count: 65)) }
        expectCryptoError(.invalidKey) { try IssuerOTPProvider(key: try SymmetricKey(bytes: [1, 2, 3])) }
        expectCryptoError(.invalidInput) { try IssuerOTPProvider(key: try SymmetricKey.random(), validity: 10) }
        #expect(!"\(try request())".contains("5399999999999999"))
    }
}
