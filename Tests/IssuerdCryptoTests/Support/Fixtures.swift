import Foundation
import Testing

@testable import IssuerdCrypto

/// Reads the known-answer vectors and Apple certificates copied into this target.
enum Fixtures {
    /// The bytes of `Fixtures/<name>`.
    static func bytes(_ name: String) throws -> [UInt8] {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
            "missing fixture \(name)")
        return Array(try Data(contentsOf: url))
    }

    static var productionLeaf: [UInt8] {
        get throws { try bytes("prod-leaf-ecc-crypto-services-encipherment-UC6.der") }
    }
    static var productionIntermediate: [UInt8] { get throws { try bytes("apple-wwdr-ca-g2.der") } }
    static var appleRoot: [UInt8] { get throws { try bytes("apple-root-ca-g3.der") } }
    static var sandboxLeaf: [UInt8] {
        get throws { try bytes("sandbox-leaf-ecc-crypto-services-encipherment-UC6-InMemory.der") }
    }

    /// `ecc_v2_vectors.json`.
    struct ECCV2Vectors: Decodable {
        struct Vector: Decodable {
            let name: String
            let plaintextUtf8: String
            let encryptedPassDataBase64: String
            let encryptedPassDataHex: String
        }
        let leafCertificateFile: String
        let leafPublicKeyX963Hex: String
        let ephemeralPrivateKeyHex: String
        let ephemeralPublicKeyX963Hex: String
        let ephemeralPublicKeyBase64: String
        let sharedSecretZHex: String
        let kdfOtherInfoHex: String
        let derivedKeyHex: String
        let gcmNonceHex: String
        let vectors: [Vector]
    }

    static var eccV2: ECCV2Vectors {
        get throws { try JSONDecoder().decode(ECCV2Vectors.self, from: Data(bytes("ecc_v2_vectors.json"))) }
    }

    static func hex(_ text: String) throws -> [UInt8] { try BinaryEncoding.decodeHex(text.lowercased()) }
}

/// 2020-01-01T00:00:00Z, inside the production fixture leaf's validity.
let january2020 = Date(timeIntervalSince1970: 1_577_836_800)

/// One development PKI shared by the tests (RSA key generation is the slow part).
enum TestPKI {
    static let now = Date()
    static let shared: DevelopmentPKI = {
        do { return try DevelopmentPKI.generate(now: now) } catch {
            fatalError("development PKI generation failed: \(error)")
        }
    }()
}

/// Asserts that `body` throws a ``CryptoError`` with `code`.
func expectCryptoError<T>(
    _ code: CryptoError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
) {
    do {
        _ = try body()
        Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
    } catch let error as CryptoError {
        #expect(error.code == code, "expected \(code), got \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected CryptoError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
