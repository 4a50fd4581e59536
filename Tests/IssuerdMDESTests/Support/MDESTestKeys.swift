import Foundation
import IssuerdCrypto
import IssuerdTestSupport
import Testing

@testable import IssuerdMDES

/// Two issuer encryption keys with certificates (rotation) and a Mastercard key, generated once.
enum MDESTestKeys {
    struct Pair: Sendable {
        let privateKeyPEM: String
        let certificatePEM: String
        let certificate: X509Certificate
        let privateKey: RSA.Encryption.PrivateKey
        /// The PEM file text issuerd reads: key and certificate together.
        var keyFilePEM: String { privateKeyPEM + certificatePEM }
    }

    static let pki: DevelopmentPKI = {
        do { return try DevelopmentPKI.generate(now: Date()) } catch { fatalError("PKI generation failed: \(error)") }
    }()

    /// RSA leaves issued by the development PKI's intermediate.
    static func issue(_ name: String) -> Pair {
        do {
            var profile = DevelopmentPKI.LeafProfile()
            profile.key = .rsa(bits: 2048)
            profile.commonName = name
            profile.includeAppleMarker = false
            profile.keyUsage = "critical,keyEncipherment"
            let issued = try pki.issueLeaf(profile)
            return Pair(
                privateKeyPEM: issued.privateKeyPEM, certificatePEM: issued.certificatePEM,
                certificate: try X509Certificate(derRepresentation: issued.certificateDER),
                privateKey: try RSA.Encryption.PrivateKey(pemRepresentation: issued.privateKeyPEM))
        } catch {
            fatalError("leaf generation failed: \(error)")
        }
    }

    static let issuerA = issue("mdes-issuer-encryption-A")
    static let issuerB = issue("mdes-issuer-encryption-B")
    static let mastercard = issue("mdes-mastercard-encryption")

    /// A ring holding both issuer keys (from their PEM files).
    static var ring: MDESIssuerKeyRing {
        get throws {
            try MDESIssuerKeyRing([
                try MDESIssuerKey(pemRepresentation: issuerA.keyFilePEM),
                try MDESIssuerKey(pemRepresentation: issuerB.keyFilePEM),
            ])
        }
    }
}

/// Asserts that `body` throws a ``FieldLevelEncryptionError`` with `reason`.
func expectFLEError<T>(
    _ reason: FieldLevelEncryptionError.Reason, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T
) {
    do {
        _ = try body()
        Issue.record("expected \(reason), got success", sourceLocation: sourceLocation)
    } catch let error as FieldLevelEncryptionError {
        #expect(error.reason == reason, "expected \(reason), got \(error)", sourceLocation: sourceLocation)
        #expect(error.errorCode == "CRYPTOGRAPHY_ERROR", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected FieldLevelEncryptionError \(reason), got \(error)", sourceLocation: sourceLocation)
    }
}
