import COpenSSL
import Foundation

/// An Apple-shaped PKI for development, demos and tests: a root, an intermediate named like
/// Apple's WWDR G2, a P-256 encryption leaf carrying Apple's marker OID (critical) with
/// keyEncipherment + keyAgreement, an RSA leaf variant for RSA_V2, and a Mastercard TAV
/// signing key — all with known private keys.
///
/// Its root is **not** Apple's: chains from it verify only under
/// ``AppleTrustProfile/custom(rootPEM:requiredIntermediateCommonName:)`` (see ``trustProfile``).
public struct DevelopmentPKI: Sendable {
    /// A certificate with its private key.
    public struct Issued: Sendable {
        let certificate: X509Handle
        let key: PKeyHandle

        /// The certificate DER.
        public var certificateDER: [UInt8] { certificate.der }
        /// The certificate PEM.
        public var certificatePEM: String { CertificateBuilder.pem(certificate) }
        /// The private key as PKCS#8 PEM (development only).
        public var privateKeyPEM: String { (try? KeyCoding.privateKeyPEM(key)) ?? "" }
        /// The subject common name.
        public var commonName: String { certificate.subjectCommonName ?? "" }
    }

    /// The leaf's key algorithm.
    public enum LeafKey: Sendable {
        /// EC P-256 (ECC_V2).
        case p256
        /// EC P-384 (a wrong curve, for negative tests).
        case p384
        /// RSA of the given size (RSA_V2).
        case rsa(bits: Int)
    }

    /// Everything a leaf may vary, for positive and negative tests.
    public struct LeafProfile: Sendable {
        /// The key algorithm.
        public var key: LeafKey = .p256
        /// The subject common name.
        public var commonName = "ecc-crypto-services-encipherment_UC6-DEV"
        /// Include Apple's marker OID 1.2.840.113635.100.6.39.
        public var includeAppleMarker = true
        /// Mark the marker critical, as Apple does.
        public var appleMarkerCritical = true
        /// The Key Usage extension value, or `nil` to omit it.
        public var keyUsage: String? = "critical,keyEncipherment,keyAgreement"
        /// An extra critical extension OID that no one understands (negative test), or `nil`.
        public var extraCriticalExtensionOID: String?
        /// Validity start.
        public var notBefore: Date
        /// Validity end.
        public var notAfter: Date

        /// A profile valid from one day before `now` to 730 days after.
        public init(now: Date = Date()) {
            notBefore = now.addingTimeInterval(-86_400)
            notAfter = now.addingTimeInterval(730 * 86_400)
        }
    }

    /// The self-signed root (P-384, like Apple Root CA - G3).
    public let root: Issued
    /// The intermediate, named "Apple Worldwide Developer Relations CA - G2".
    public let intermediate: Issued
    /// The P-256 encryption leaf.
    public let eccLeaf: Issued
    /// The RSA-2048 encryption leaf (RSA_V2).
    public let rsaLeaf: Issued
    /// The Mastercard TAV signing key.
    public let tavSigningKey: RSA.Signing.PrivateKey
    /// The time the PKI was generated for.
    public let generatedAt: Date

    /// Generates a fresh PKI valid around `now` (about 1 s: two RSA keys).
    ///
    /// - Parameters:
    ///   - now: The reference time.
    ///   - intermediateCommonName: Override the intermediate's name (negative tests).
    /// - Throws: ``CryptoError`` if OpenSSL fails.
    public static func generate(
        now: Date = Date(), intermediateCommonName: String = AppleTrustProfile.productionIntermediateCommonName
    ) throws -> DevelopmentPKI {
        let root = try makeRoot(now: now, commonName: "issuerd Development Root CA - G3")
        let intermediate = try makeIntermediate(issuer: root, commonName: intermediateCommonName, now: now)
        let eccLeaf = try issueLeaf(LeafProfile(now: now), by: intermediate)
        var rsaProfile = LeafProfile(now: now)
        rsaProfile.key = .rsa(bits: 2048)
        rsaProfile.commonName = "rsa-crypto-services-encipherment_UC6-DEV"
        rsaProfile.keyUsage = "critical,keyEncipherment"
        let rsaLeaf = try issueLeaf(rsaProfile, by: intermediate)
        return DevelopmentPKI(
            root: root, intermediate: intermediate, eccLeaf: eccLeaf, rsaLeaf: rsaLeaf,
            tavSigningKey: try RSA.Signing.PrivateKey(bits: 2048),
            generatedAt: now)
    }

    /// A custom trust profile anchored at this PKI's root that also requires the WWDR G2 name.
    public var trustProfile: AppleTrustProfile {
        get throws {
            try .custom(
                rootPEM: root.certificatePEM,
                requiredIntermediateCommonName: AppleTrustProfile.productionIntermediateCommonName)
        }
    }

    /// Issues another leaf under this PKI's intermediate.
    public func issueLeaf(_ profile: LeafProfile) throws -> Issued { try Self.issueLeaf(profile, by: intermediate) }

    /// Issues another intermediate under this PKI's root.
    public func issueIntermediate(commonName: String) throws -> Issued {
        try Self.makeIntermediate(issuer: root, commonName: commonName, now: generatedAt)
    }

    /// Issues a leaf under any issuer (an intermediate of another PKI, or the root directly).
    public static func issueLeaf(_ profile: LeafProfile, by issuer: Issued) throws -> Issued {
        let key: PKeyHandle
        switch profile.key {
        case .p256: key = try ECKeyCoding.generate()
        case .p384: key = try ECKeyCoding.generate(curve: "P-384")
        case .rsa(let bits): key = try RSA.generate(bits: bits)
        }
        var extensions: [CertificateBuilder.Extension] = [
            .standard(nid: NID_basic_constraints, value: "critical,CA:FALSE"),
            .standard(nid: NID_subject_key_identifier, value: "hash"),
            .standard(nid: NID_authority_key_identifier, value: "keyid:always"),
        ]
        if let usage = profile.keyUsage { extensions.append(.standard(nid: NID_key_usage, value: usage)) }
        if profile.includeAppleMarker {
            // Apple's marker carries an ASN.1 NULL value (05 00).
            extensions.append(
                .raw(
                    oid: Algorithms.shared.appleIssuerEncryptionOID, critical: profile.appleMarkerCritical,
                    derValue: [0x05, 0x00]))
        }
        // The object must outlive the issue() call below, where the extension is built from it.
        var extraOID: OpaquePointer?
        defer { if let extraOID { ASN1_OBJECT_free(extraOID) } }
        if let extra = profile.extraCriticalExtensionOID {
            guard let oid = OBJ_txt2obj(extra, 1) else { throw CryptoError(.invalidInput, "not an OID: \(extra)") }
            extraOID = oid
            extensions.append(.raw(oid: oid, critical: true, derValue: [0x05, 0x00]))
        }
        let certificate = try CertificateBuilder.issue(
            subject: [("CN", profile.commonName), ("OU", "issuerd development"), ("O", "issuerd"), ("C", "US")],
            publicKey: key,
            issuer: .init(certificate: issuer.certificate, key: issuer.key), notBefore: profile.notBefore,
            notAfter: profile.notAfter,
            extensions: extensions)
        return Issued(certificate: certificate, key: key)
    }

    /// A self-signed root (e.g. a "wrong root" for negative tests).
    public static func makeRoot(now: Date, commonName: String) throws -> Issued {
        let key = try ECKeyCoding.generate(curve: "P-384")
        let certificate = try CertificateBuilder.issue(
            subject: [("CN", commonName), ("OU", "issuerd development"), ("O", "issuerd"), ("C", "US")], publicKey: key,
            issuer: .init(certificate: nil, key: key), notBefore: now.addingTimeInterval(-2 * 86_400),
            notAfter: now.addingTimeInterval(25 * 365 * 86_400),
            extensions: [
                .standard(nid: NID_basic_constraints, value: "critical,CA:TRUE"),
                .standard(nid: NID_key_usage, value: "critical,keyCertSign,cRLSign"),
                .standard(nid: NID_subject_key_identifier, value: "hash"),
            ])
        return Issued(certificate: certificate, key: key)
    }

    /// An intermediate CA (P-256, like WWDR G2) with Apple's intermediate marker OID.
    public static func makeIntermediate(issuer: Issued, commonName: String, now: Date) throws -> Issued {
        let key = try ECKeyCoding.generate()
        let certificate = try CertificateBuilder.issue(
            subject: [("CN", commonName), ("OU", "issuerd development"), ("O", "issuerd"), ("C", "US")], publicKey: key,
            issuer: .init(certificate: issuer.certificate, key: issuer.key),
            notBefore: now.addingTimeInterval(-2 * 86_400),
            notAfter: now.addingTimeInterval(15 * 365 * 86_400),
            extensions: [
                .standard(nid: NID_basic_constraints, value: "critical,CA:TRUE,pathlen:0"),
                .standard(nid: NID_key_usage, value: "critical,keyCertSign,cRLSign"),
                .standard(nid: NID_subject_key_identifier, value: "hash"),
                .standard(nid: NID_authority_key_identifier, value: "keyid:always"),
                .raw(oid: Algorithms.shared.appleWWDRMarkerOID, critical: false, derValue: [0x05, 0x00]),
            ])
        return Issued(certificate: certificate, key: key)
    }

    /// Writes the PKI as files into `directory` (created if needed), private keys mode 0600.
    ///
    /// - Returns: The file names written.
    /// - Throws: Foundation file errors.
    @discardableResult
    public func write(to directory: URL) throws -> [String] {
        let manager = FileManager.default
        try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        var files: [(String, [UInt8], Bool)] = [
            ("root.pem", Array(root.certificatePEM.utf8), false),
            ("root.der", root.certificateDER, false),
            ("intermediate.pem", Array(intermediate.certificatePEM.utf8), false),
            ("intermediate.der", intermediate.certificateDER, false),
            ("leaf-ecc.pem", Array(eccLeaf.certificatePEM.utf8), false),
            ("leaf-ecc.der", eccLeaf.certificateDER, false),
            ("leaf-ecc-key.pem", Array(eccLeaf.privateKeyPEM.utf8), true),
            ("leaf-rsa.pem", Array(rsaLeaf.certificatePEM.utf8), false),
            ("leaf-rsa.der", rsaLeaf.certificateDER, false),
            ("leaf-rsa-key.pem", Array(rsaLeaf.privateKeyPEM.utf8), true),
            ("tav-signing-key.pem", Array(tavSigningKey.pemRepresentation.utf8), true),
            ("tav-signing-public.pem", Array(tavSigningKey.publicKey.pemRepresentation.utf8), false),
            ("root-key.pem", Array(root.privateKeyPEM.utf8), true),
            ("intermediate-key.pem", Array(intermediate.privateKeyPEM.utf8), true),
        ]
        files.append(("chain-ecc.pem", Array((eccLeaf.certificatePEM + intermediate.certificatePEM).utf8), false))
        files.append(("chain-rsa.pem", Array((rsaLeaf.certificatePEM + intermediate.certificatePEM).utf8), false))
        for (name, bytes, secret) in files {
            let url = directory.appendingPathComponent(name)
            try Data(bytes).write(to: url, options: .atomic)
            try manager.setAttributes([.posixPermissions: secret ? 0o600 : 0o644], ofItemAtPath: url.path)
        }
        return files.map(\.0)
    }
}
