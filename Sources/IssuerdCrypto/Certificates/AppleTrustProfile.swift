/// Which root an Apple provisioning chain must end at, and which intermediate name it needs.
///
/// - ``production``: Apple Root CA - G3 (embedded, pinned by SHA-256) and the intermediate
///   "Apple Worldwide Developer Relations CA - G2", as Apple's own policy
///   `SecPolicyCreateApplePayIssuerEncryption` requires.
/// - ``sandbox(rootPEM:)``: Apple's test leaves are issued by "Test Apple Worldwide Developers
///   Relations CA - ECC", whose root Apple does not publish; the operator supplies it as PEM.
/// - ``custom(rootPEM:requiredIntermediateCommonName:)``: tests, development PKI and private deployments.
public struct AppleTrustProfile: Sendable {
    /// "production", "sandbox" or "custom".
    public let name: String
    /// SHA-256 of the root DER: the pin.
    public let rootFingerprint: [UInt8]
    /// The intermediate common name the chain must carry, or `nil` for no name check.
    public let requiredIntermediateCommonName: String?
    let root: X509Handle

    /// The intermediate that issues Apple's production encryption leaves.
    public static let productionIntermediateCommonName = "Apple Worldwide Developer Relations CA - G2"
    /// The intermediate that issues Apple's sandbox (UAT) encryption leaves.
    public static let sandboxIntermediateCommonName = "Test Apple Worldwide Developers Relations CA - ECC"

    /// Apple Root CA - G3 with the WWDR G2 intermediate name check.
    public static let production: AppleTrustProfile = {
        // The embedded constant is part of the source; a mismatch means the build is corrupt.
        guard let der = try? BinaryEncoding.decodeBase64(AppleRootCertificates.rootCAG3Base64),
            let root = X509Handle(der: der),
            root.fingerprint == AppleRootCertificates.rootCAG3Fingerprint
        else { preconditionFailure("embedded Apple Root CA - G3 does not match its pinned fingerprint") }
        return AppleTrustProfile(
            name: "production", root: root, requiredIntermediateCommonName: productionIntermediateCommonName)
    }()

    /// Apple's sandbox chain, anchored at a root the operator provides (Apple does not publish it).
    ///
    /// - Parameter rootPEM: The root certificate, PEM.
    /// - Throws: ``CryptoError/Code/invalidKey`` unless the text is exactly one self-issued certificate.
    public static func sandbox(rootPEM: String) throws -> AppleTrustProfile {
        AppleTrustProfile(
            name: "sandbox", root: try parseRoot(rootPEM), requiredIntermediateCommonName: sandboxIntermediateCommonName
        )
    }

    /// A private root for tests and private deployments.
    ///
    /// - Parameters:
    ///   - rootPEM: The root certificate, PEM.
    ///   - requiredIntermediateCommonName: An intermediate name to require, or `nil`.
    /// - Throws: ``CryptoError/Code/invalidKey`` unless the text is exactly one self-issued certificate.
    public static func custom(
        rootPEM: String, requiredIntermediateCommonName: String? = nil
    ) throws -> AppleTrustProfile {
        AppleTrustProfile(
            name: "custom", root: try parseRoot(rootPEM), requiredIntermediateCommonName: requiredIntermediateCommonName
        )
    }

    /// The root's subject, for messages.
    public var rootSubject: String { root.subjectLine }

    private init(name: String, root: X509Handle, requiredIntermediateCommonName: String?) {
        self.name = name
        self.root = root
        self.rootFingerprint = root.fingerprint
        self.requiredIntermediateCommonName = requiredIntermediateCommonName
    }

    private static func parseRoot(_ pem: String) throws -> X509Handle {
        guard let certificates = try? CertificateDecoding.certificates(inFile: Array(pem.utf8)) else {
            throw CryptoError(.invalidKey, "the trust root is not a PEM certificate")
        }
        guard certificates.count == 1, let root = X509Handle(der: certificates[0]) else {
            throw CryptoError(
                .invalidKey, "a trust root must be exactly one PEM certificate, found \(certificates.count)")
        }
        guard root.isSelfIssued else { throw CryptoError(.invalidKey, "the trust root is not self-issued") }
        return root
    }
}
