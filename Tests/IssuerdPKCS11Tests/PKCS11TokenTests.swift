import CPKCS11
import Foundation
import IssuerdCrypto
import IssuerdTestSupport
import Testing

@_spi(Testing) @testable import IssuerdPKCS11

/// The PKCS#11 key store against SoftHSM2: loading, login, key creation and checks, envelope
/// wrap/unwrap, signing, and a lost session.
@Suite("PKCS#11 token (SoftHSM2)")
struct PKCS11TokenTests {
    static func open(_ token: SoftHSMToken, sessions: Int = 4) throws -> PKCS11Token {
        try PKCS11Token(
            module: PKCS11Module.load(path: SoftHSM.modulePath), tokenLabel: token.label,
            pin: PKCS11PIN(contentsOfFile: token.pinFile), sessionCount: sessions)
    }

    @Test func aModulePathThatIsNotAModuleIsAClearError() throws {
        _ = try SoftHSM.directory()
        let missing = #expect(throws: PKCS11Error.self) { try PKCS11Module.load(path: "/nonexistent/libvendor.so") }
        #expect(missing?.code == .moduleUnavailable)
        #expect(missing?.description.contains("/nonexistent/libvendor.so") == true)
        let notModule = #expect(throws: PKCS11Error.self) { try PKCS11Module.load(path: "/bin/sh") }
        #expect(notModule?.code == .moduleUnavailable)
        let relative = #expect(throws: PKCS11Error.self) { try PKCS11Module.load(path: "libsofthsm2.so") }
        #expect(relative?.code == .moduleUnavailable)
    }

    @Test func aMissingTokenNamesTheLabelAndWhatIsPresent() throws {
        let token = try SoftHSM.makeToken()
        let error = #expect(throws: PKCS11Error.self) {
            try PKCS11Token(
                module: PKCS11Module.load(path: SoftHSM.modulePath), tokenLabel: "no-such-token", pin: PKCS11PIN("1234")
            )
        }
        #expect(error?.code == .tokenNotFound)
        #expect(error?.description.contains("no-such-token") == true)
        _ = token
    }

    @Test func aWrongPINIsRefusedWithoutPrintingIt() throws {
        let token = try SoftHSM.makeToken()
        let wrong = try token.wrongPINFile()
        let error = #expect(throws: PKCS11Error.self) {
            try PKCS11Token(
                module: PKCS11Module.load(path: SoftHSM.modulePath), tokenLabel: token.label,
                pin: PKCS11PIN(contentsOfFile: wrong))
        }
        #expect(error?.code == .pinIncorrect)
        #expect(error?.description.contains("CKR_PIN_INCORRECT") == true)
        #expect(error?.description.contains(token.pin) == false)
        // The right PIN still works (one wrong try does not lock SoftHSM's PIN).
        _ = try Self.open(token)
    }

    @Test func anUnreadableOrEmptyPINFileIsAClearError() throws {
        let missing = #expect(throws: PKCS11Error.self) { try PKCS11PIN(contentsOfFile: "/nonexistent/pin") }
        #expect(missing?.code == .pinUnreadable)
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-empty-pin-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: empty.path, contents: Data("\n".utf8))
        defer { try? FileManager.default.removeItem(at: empty) }
        let blank = #expect(throws: PKCS11Error.self) { try PKCS11PIN(contentsOfFile: empty.path) }
        #expect(blank?.code == .pinUnreadable)
        #expect("\(PKCS11PIN("123456"))" == "PKCS11PIN(****)")
    }

    @Test func createdKeysAreSensitiveAndNeverExtractable() throws {
        let token = try Self.open(try SoftHSM.makeToken())
        try token.createWrappingKey(label: "kek")
        try token.createRSASigningKey(label: "tav")
        let objects = try token.objects()
        let kek = try #require(objects.first { $0.label == "kek" && $0.objectClass == "secret key" })
        #expect(kek.keyType == "AES" && kek.bits == 256)
        #expect(kek.sensitive == true && kek.extractable == false && kek.neverExtractable == true)
        #expect(kek.usage == ["wrap", "unwrap"])
        let tav = try #require(objects.first { $0.label == "tav" && $0.objectClass == "private key" })
        #expect(tav.keyType == "RSA" && tav.bits == 2048)
        #expect(tav.sensitive == true && tav.extractable == false && tav.neverExtractable == true)
        #expect(tav.usage == ["sign"])
        // A second init refuses to replace them.
        #expect(throws: PKCS11Error.self) { try token.createWrappingKey(label: "kek") }
        #expect(throws: PKCS11Error.self) { try token.createRSASigningKey(label: "tav") }
        try token.checkWrappingKey(label: "kek")
        _ = try PKCS11RSASigner(token: token, label: "tav")
    }

    @Test func dataKeysWrapAndUnwrapAndAlteredOnesAreRefused() throws {
        let token = try Self.open(try SoftHSM.makeToken())
        try token.createWrappingKey(label: "kek")
        let known = (0..<32).map { UInt8($0 &* 7 &+ 3) }
        let wrapped = try known.withUnsafeBytes { try token.wrapDataKey($0, wrappingKeyLabel: "kek") }
        #expect(wrapped.count == 40)
        #expect(try token.unwrapDataKey(wrapped, wrappingKeyLabel: "kek") { Array($0) } == known)
        let fresh = try token.wrapNewDataKey(wrappingKeyLabel: "kek")
        let freshKey = try token.unwrapDataKey(fresh, wrappingKeyLabel: "kek") { Array($0) }
        #expect(freshKey.count == 32 && freshKey != known)
        #expect(try token.wrapNewDataKey(wrappingKeyLabel: "kek") != fresh)
        var altered = wrapped
        altered[20] ^= 0x01
        let error = #expect(throws: PKCS11Error.self) {
            try token.unwrapDataKey(altered, wrappingKeyLabel: "kek") { Array($0) }
        }
        #expect(error?.code == .unwrapFailed)
        // No session object is left behind by wrap or unwrap.
        #expect(try token.objects().filter { $0.objectClass == "secret key" }.map(\.label) == ["kek"])
    }

    @Test func anImportedEncryptionKeySealsAsOpenSSLDoesAndNeverLeavesTheToken() throws {
        let token = try Self.open(try SoftHSM.makeToken())
        let value = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 5) }
        try value.withUnsafeBytes { try token.importEncryptionKey(label: "visa-kek", value: $0) }
        let info = try #require(try token.objects().first { $0.label == "visa-kek" })
        #expect(info.keyType == "AES" && info.bits == 256)
        #expect(info.sensitive == true && info.extractable == false)
        #expect(info.usage == ["encrypt"])
        #expect(throws: PKCS11Error.self) {
            try value.withUnsafeBytes { try token.importEncryptionKey(label: "visa-kek", value: $0) }
        }
        #expect(throws: PKCS11Error.self) {
            try [UInt8](repeating: 1, count: 16).withUnsafeBytes {
                try token.importEncryptionKey(label: "short", value: $0)
            }
        }

        // The token's CKM_AES_GCM and OpenSSL's AES-256-GCM agree, with and without associated data.
        let encrypter = try PKCS11AESGCMEncrypter(token: token, label: "visa-kek")
        let key = try SymmetricKey(bytes: value)
        for (plaintext, aad) in [((0..<32).map { UInt8($0) }, [UInt8]()), (Array("payload".utf8), Array("hdr".utf8))] {
            let iv = try SecureRandom.bytes(count: 12)
            let sealed = try encrypter.seal(plaintext, iv: iv, authenticating: aad)
            #expect(sealed == (try AES256GCM.seal(plaintext, using: key, nonce: iv, authenticating: aad)))
            #expect(try AES256GCM.open(sealed, using: key, nonce: iv, authenticating: aad) == plaintext)
        }
        let badIV = #expect(throws: PKCS11Error.self) { try encrypter.seal([1], iv: [0, 1, 2]) }
        #expect(badIV?.code == .invalidInput)

        // A key that may not encrypt, or that is missing, is refused naming the cause.
        try token.createWrappingKey(label: "kek")
        let wrapping = #expect(throws: PKCS11Error.self) { try PKCS11AESGCMEncrypter(token: token, label: "kek") }
        #expect(wrapping?.code == .keyWrongType)
        #expect(wrapping?.description.contains("CKA_ENCRYPT") == true)
        let missing = #expect(throws: PKCS11Error.self) { try PKCS11AESGCMEncrypter(token: token, label: "none") }
        #expect(missing?.code == .keyNotFound)
    }

    @Test func aMissingWrongTypeOrExtractableKeyIsRefusedNamingTheCause() throws {
        let token = try Self.open(try SoftHSM.makeToken())
        let missing = #expect(throws: PKCS11Error.self) { try token.checkWrappingKey(label: "absent") }
        #expect(missing?.code == .keyNotFound)
        #expect(missing?.description.contains("absent") == true)
        try token.withSession { session in
            _ = try session.generateKey(
                mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_GEN),
                [
                    .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES), .number(CKA_VALUE_LEN, 32),
                    .data(CKA_LABEL, Array("leaky".utf8)),
                    .flag(CKA_TOKEN, true), .flag(CKA_PRIVATE, true), .flag(CKA_SENSITIVE, true),
                    .flag(CKA_EXTRACTABLE, true), .flag(CKA_WRAP, true), .flag(CKA_UNWRAP, true),
                ])
            _ = try session.generateKey(
                mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_GEN),
                [
                    .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES), .number(CKA_VALUE_LEN, 16),
                    .data(CKA_LABEL, Array("short".utf8)),
                    .flag(CKA_TOKEN, true), .flag(CKA_PRIVATE, true), .flag(CKA_SENSITIVE, true),
                    .flag(CKA_EXTRACTABLE, false), .flag(CKA_WRAP, true), .flag(CKA_UNWRAP, true),
                ])
            _ = try session.generateKey(
                mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_GEN),
                [
                    .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES), .number(CKA_VALUE_LEN, 32),
                    .data(CKA_LABEL, Array("plain".utf8)),
                    .flag(CKA_TOKEN, true), .flag(CKA_PRIVATE, true), .flag(CKA_SENSITIVE, false),
                    .flag(CKA_EXTRACTABLE, false), .flag(CKA_WRAP, true), .flag(CKA_UNWRAP, true),
                ])
        }
        let leaky = #expect(throws: PKCS11Error.self) { try token.checkWrappingKey(label: "leaky") }
        #expect(leaky?.code == .keyExtractable)
        #expect(leaky?.description.contains("CKA_EXTRACTABLE") == true)
        #expect(throws: PKCS11Error.self) { try token.wrapNewDataKey(wrappingKeyLabel: "leaky") }
        let short = #expect(throws: PKCS11Error.self) { try token.checkWrappingKey(label: "short") }
        #expect(short?.code == .keyWrongType)
        let plain = #expect(throws: PKCS11Error.self) { try token.checkWrappingKey(label: "plain") }
        #expect(plain?.code == .keyExtractable)
        #expect(plain?.description.contains("CKA_SENSITIVE") == true)
        // A secret key where an RSA signing key is expected: not found as a private key.
        let notRSA = #expect(throws: PKCS11Error.self) { try PKCS11RSASigner(token: token, label: "leaky") }
        #expect(notRSA?.code == .keyNotFound)
    }

    @Test func aLostSessionIsReopenedAndTheOperationRetriedOnce() throws {
        let token = try Self.open(try SoftHSM.makeToken(), sessions: 2)
        try token.createRSASigningKey(label: "tav")
        let signer = try PKCS11RSASigner(token: token, label: "tav")
        let before = try signer.signature(for: Array("PAN|MMYY|T".utf8))
        token.closeAllSessionsForTesting()  // as an HSM restart would: sessions and login gone
        let after = try signer.signature(for: Array("PAN|MMYY|T".utf8))
        #expect(after == before)  // PKCS#1 v1.5 is deterministic: same key, same signature
        #expect(token.sessionsReopened >= 1)
    }

    @Test func concurrentSigningSharesThePoolWithoutMixingResults() async throws {
        let token = try Self.open(try SoftHSM.makeToken(), sessions: 3)
        try token.createRSASigningKey(label: "tav")
        let signer = try PKCS11RSASigner(token: token, label: "tav")
        let messages = (0..<24).map { Array("message-\($0)".utf8) }
        let expected = try messages.map { try signer.signature(for: $0) }
        let results = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for (index, message) in messages.enumerated() {
                group.addTask { (index, try signer.signature(for: message)) }
            }
            var collected: [Int: [UInt8]] = [:]
            for try await (index, signature) in group { collected[index] = signature }
            return collected
        }
        for index in messages.indices { #expect(results[index] == expected[index]) }
    }
}
