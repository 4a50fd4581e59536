import Foundation
import IssuerdCore
import Testing

@testable import IssuerdCrypto

/// Master key ring parsing, PAN sealing and rotation, fingerprints and OTP digests.
@Suite struct KeysAtRestTests {
    private static func keyText() throws -> String { BinaryEncoding.base64String(try SecureRandom.bytes(count: 32)) }
    private let pan = PrimaryAccountNumber("4111111111111111")!

    @Test func singleKeySetting() throws {
        let ring = try MasterKeyRing(settingValue: try Self.keyText())
        #expect(ring.versions == [1])
        #expect(ring.currentVersion == 1 && ring.fingerprintVersion == 1)
        #expect(!"\(ring)".contains("="))
    }

    @Test(arguments: ["", "   ", "not base64!", "AAAA", "v1:AAAA", "vX:abc", "v0:KEY", "v1:KEY,v1:KEY", "1:KEY"])
    func badSettings(value: String) throws {
        let key = try Self.keyText()
        let text = value.replacingOccurrences(of: "KEY", with: key)
        expectCryptoError(.invalidMasterKey) { try MasterKeyRing(settingValue: text) }
    }

    @Test func errorsNeverContainTheKey() throws {
        let key = try Self.keyText()
        do {
            _ = try MasterKeyRing(settingValue: "v1:\(key),v1:\(key)")
            Issue.record("expected a failure")
        } catch {
            #expect(!"\(error)".contains(key))
        }
    }

    @Test func sealOpenAndAlteration() throws {
        let vault = PANVault(keyRing: try MasterKeyRing(settingValue: try Self.keyText()))
        let sealed = try vault.seal(pan, context: Array("card-1".utf8))
        #expect(sealed.keyVersion == 1)
        #expect(sealed.bytes.count == 12 + 16 + 16)
        #expect(try vault.open(sealed, context: Array("card-1".utf8)) == pan)
        #expect(try vault.seal(pan).bytes != (try vault.seal(pan).bytes))  // fresh IV each time
        expectCryptoError(.authenticationFailed) { try vault.open(sealed, context: Array("card-2".utf8)) }
        var altered = sealed.bytes
        altered[20] ^= 1
        expectCryptoError(.authenticationFailed) {
            try vault.open(SealedPAN(keyVersion: 1, bytes: altered), context: Array("card-1".utf8))
        }
        expectCryptoError(.unknownKeyVersion) { try vault.open(SealedPAN(keyVersion: 7, bytes: sealed.bytes)) }
        expectCryptoError(.invalidLength) { try vault.open(SealedPAN(keyVersion: 1, bytes: [1, 2, 3])) }
    }

    @Test func rotationKeepsFingerprintsAndOpensOldData() throws {
        let v1 = try Self.keyText()
        let v2 = try Self.keyText()
        let old = PANVault(keyRing: try MasterKeyRing(settingValue: v1))
        let sealed = try old.seal(pan)
        let fingerprint = try old.fingerprint(pan)
        let otp = try old.otpDigest(code: "123456", challengeId: "ch-1")

        let rotated = PANVault(keyRing: try MasterKeyRing(settingValue: "v2:\(v2),v1:\(v1)"))
        #expect(rotated.keyRing.currentVersion == 2)
        #expect(rotated.keyRing.fingerprintVersion == 1)
        #expect(rotated.needsReseal(sealed))
        #expect(try rotated.open(sealed) == pan)
        let resealed = try rotated.reseal(sealed)
        #expect(resealed.keyVersion == 2)
        #expect(!rotated.needsReseal(resealed))
        #expect(try rotated.open(resealed) == pan)
        // Lookups and outstanding OTP challenges survive the rotation.
        #expect(try rotated.fingerprint(pan) == fingerprint)
        #expect(try rotated.otpMatches(code: "123456", challengeId: "ch-1", digest: otp))
        // The old vault cannot read data sealed under v2.
        expectCryptoError(.unknownKeyVersion) { try old.open(resealed) }
        // A relabelled version does not open (the version is authenticated).
        expectCryptoError(.authenticationFailed) { try rotated.open(SealedPAN(keyVersion: 1, bytes: resealed.bytes)) }
    }

    @Test func purposesAreSeparated() throws {
        let ring = try MasterKeyRing(settingValue: try Self.keyText())
        let keys = try MasterKeyRing.Purpose.allCases.map { try ring.dataKey(for: $0, version: 1) }
        #expect(Set(keys.map { $0.withUnsafeBytes { Array($0) } }).count == keys.count)
        let vault = PANVault(keyRing: ring)
        #expect(try vault.fingerprint(pan) != (try vault.fingerprint(PrimaryAccountNumber("5399999999999999")!)))
        #expect(try vault.fingerprint(pan).count == 32)
        #expect(
            try vault.otpMatches(
                code: "123456", challengeId: "a", digest: try vault.otpDigest(code: "123456", challengeId: "a")))
        #expect(
            !(try vault.otpMatches(
                code: "123457", challengeId: "a", digest: try vault.otpDigest(code: "123456", challengeId: "a"))))
        #expect(
            !(try vault.otpMatches(
                code: "123456", challengeId: "b", digest: try vault.otpDigest(code: "123456", challengeId: "a"))))
        #expect(try vault.activationOTPKey().byteCount == 32)
    }

    @Test func explicitFingerprintVersion() throws {
        let one = try SymmetricKey.random()
        let two = try SymmetricKey.random()
        let ring = try MasterKeyRing(keys: [1: one, 2: two], fingerprintVersion: 2)
        #expect(ring.fingerprintVersion == 2)
        expectCryptoError(.invalidMasterKey) { try MasterKeyRing(keys: [1: one], fingerprintVersion: 3) }
        expectCryptoError(.invalidMasterKey) { try MasterKeyRing(keys: [:]) }
        expectCryptoError(.invalidMasterKey) { try MasterKeyRing(keys: [1: try SymmetricKey(bytes: [1, 2])]) }
    }
}
