import COpenSSL
import Foundation

/// Verifies the certificate chain PassKit hands the app, exactly as
/// docs/crypto.md and the provisioning spec (section 4) describe:
///
/// 1. every element parses as one DER certificate (`malformed_der`); a self-issued
///    certificate (a root the app sent along) is ignored;
/// 2. the leaf is the one certificate carrying OID 1.2.840.113635.100.6.39 (`leaf_not_found`);
/// 3. leaf → intermediate → pinned root, every signature verified by `X509_verify_cert` with a
///    store that holds only the profile's root (`missing_intermediate`, `untrusted_root`,
///    `signature`, `invalid_ca`); OpenSSL's "unhandled critical extension" is accepted in the
///    verify callback only when Apple's marker OID is the sole unhandled one;
/// 4. validity of every certificate at the explicit time `at`, when enabled (`expired`,
///    `not_yet_valid`);
/// 5. exactly three certificates in the built chain (`chain_length`), the intermediate's
///    common name (`intermediate_name`), the leaf's key usage (`leaf_key_usage`) and key type
///    for the scheme (`leaf_key_type`).
///
/// Successful verifications are cached (see ``ChainValidationCache``); a cached answer is
/// served in under 5 µs, a cold one costs roughly 150–300 µs.
public final class AppleCertificateChainVerifier: Sendable {
    /// The most certificates accepted in one request (PassKit sends two).
    public static let maximumCertificateCount = 4

    /// The trust profile in use.
    public let trust: AppleTrustProfile
    /// Whether notBefore/notAfter are enforced (Apple's own policy skips them; on by default).
    public let checkValidity: Bool
    private let store: TrustStore
    private let cache: ChainValidationCache

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - trust: The root and intermediate name to require.
    ///   - checkValidity: Enforce validity windows (default true).
    ///   - cacheCapacity: How many validated chains to remember (0 disables the cache).
    /// - Throws: ``CryptoError/Code/libraryFailure`` if the trust store cannot be built.
    public init(trust: AppleTrustProfile, checkValidity: Bool = true, cacheCapacity: Int = 64) throws {
        self.trust = trust
        self.checkValidity = checkValidity
        self.store = try TrustStore(root: trust.root)
        self.cache = ChainValidationCache(capacity: cacheCapacity)
    }

    /// The number of cached chains.
    public var cachedChainCount: Int { cache.count }

    /// Verifies DER certificates (leaf and intermediate, in any order).
    ///
    /// - Parameters:
    ///   - certificates: The DER elements from PassKit.
    ///   - time: The verification time; pass the request's clock reading.
    ///   - scheme: The scheme the key will serve: P-256 for ECC_V2, RSA for RSA_V2.
    /// - Returns: `.valid` with the chain, or `.invalid` naming the failed check.
    public func verify(
        _ certificates: [[UInt8]], at time: Date, for scheme: EncryptionScheme = .eccV2
    ) -> AppleChainVerification {
        verify(certificates, at: time, for: scheme, alsoCachedAs: nil)
    }

    private func verify(
        _ certificates: [[UInt8]], at time: Date, for scheme: EncryptionScheme, alsoCachedAs textKey: [UInt8]?
    ) -> AppleChainVerification {
        guard (1...Self.maximumCertificateCount).contains(certificates.count) else {
            return .invalid(
                ChainFailure(
                    .badCount, "expected 1 to \(Self.maximumCertificateCount) certificates, got \(certificates.count)"))
        }
        let key = SHA256.hash(lengthPrefixed: certificates)
        if let cached = cache.entry(key, at: time) {
            if let textKey {
                cache.insert(
                    textKey, chain: cached.chain, validFrom: cached.validFrom, validUntil: cached.validUntil, now: time)
            }
            return Self.check(cached.chain, for: scheme)
        }
        switch verifyUncached(certificates, at: time) {
        case .invalid(let failure):
            return .invalid(failure)
        case .valid(let chain, let windowStart, let windowEnd):
            if windowStart <= time, time <= windowEnd {
                cache.insert(key, chain: chain, validFrom: windowStart, validUntil: windowEnd, now: time)
                if let textKey {
                    cache.insert(textKey, chain: chain, validFrom: windowStart, validUntil: windowEnd, now: time)
                }
            }
            return Self.check(chain, for: scheme)
        }
    }

    /// Decodes API strings (hex, base64 or base64url each) and verifies them.
    ///
    /// - Returns: `.invalid(malformed_der)` naming the element that does not decode.
    public func verify(
        encoded certificates: [String], at time: Date, for scheme: EncryptionScheme = .eccV2
    ) -> AppleChainVerification {
        guard (1...Self.maximumCertificateCount).contains(certificates.count) else {
            return .invalid(
                ChainFailure(
                    .badCount, "expected 1 to \(Self.maximumCertificateCount) certificates, got \(certificates.count)"))
        }
        // PassKit sends the same chain as the same text on every request for months: a cache
        // hit on the text needs no decoding (base64 decoding was 2 % of a request's CPU). The
        // leading element keeps text keys apart from the DER keys of ``verify(_:at:for:)``.
        let textKey = SHA256.hash(lengthPrefixed: [Array("encoded".utf8)] + certificates.map { Array($0.utf8) })
        if let cached = cache.lookup(textKey, at: time) { return Self.check(cached, for: scheme) }
        var decoded: [[UInt8]] = []
        for (index, text) in certificates.enumerated() {
            do {
                decoded.append(try CertificateDecoding.certificate(fromText: text))
            } catch {
                let reason = (error as? CryptoError)?.reason ?? "undecodable"
                return .invalid(
                    ChainFailure(
                        .malformedDER, "certificate \(index) is not hex, base64 or base64url: \(reason)",
                        certificateIndex: index))
            }
        }
        return verify(decoded, at: time, for: scheme, alsoCachedAs: textKey)
    }

    // MARK: - Implementation

    private enum Uncached {
        case valid(ValidatedAppleChain, windowStart: Date, windowEnd: Date)
        case invalid(ChainFailure)
    }

    private static func check(_ chain: ValidatedAppleChain, for scheme: EncryptionScheme) -> AppleChainVerification {
        switch (scheme, chain.recipientKey) {
        case (.eccV2, .p256), (.rsaV2, .rsa): return .valid(chain)
        case (.eccV2, .rsa):
            return .invalid(
                ChainFailure(
                    .leafKeyType, "ECC_V2 needs an EC P-256 leaf key; the leaf has an RSA key", certificateIndex: nil))
        case (.rsaV2, .p256):
            return .invalid(
                ChainFailure(
                    .leafKeyType, "RSA_V2 needs an RSA leaf key; the leaf has an EC P-256 key", certificateIndex: nil))
        }
    }

    private func verifyUncached(_ certificates: [[UInt8]], at time: Date) -> Uncached {
        var parsed: [(index: Int, handle: X509Handle)] = []
        for (index, der) in certificates.enumerated() {
            guard let handle = X509Handle(der: der) else {
                return .invalid(
                    ChainFailure(
                        .malformedDER, "certificate \(index) is not a single DER X.509 certificate",
                        certificateIndex: index))
            }
            // Spec: ignore a root if the app sends one; the pinned root comes from the profile.
            if handle.isSelfIssued { continue }
            parsed.append((index, handle))
        }
        let oid = Algorithms.shared.appleIssuerEncryptionOID
        let leaves = parsed.filter { $0.handle.hasExtension(oid) }
        guard let leaf = leaves.first else {
            return .invalid(
                ChainFailure(.leafNotFound, "no certificate carries the Apple marker OID \(AppleOID.issuerEncryption)"))
        }
        guard leaves.count == 1 else {
            return .invalid(
                ChainFailure(
                    .multipleLeaves, "\(leaves.count) certificates carry the Apple marker OID",
                    certificateIndex: leaves[1].index))
        }
        let others = parsed.filter { $0.index != leaf.index }
        guard !others.isEmpty else {
            return .invalid(
                ChainFailure(
                    .missingIntermediate, "only the leaf was sent; the intermediate is required",
                    certificateIndex: leaf.index))
        }
        let built: [X509Handle]
        switch store.verify(leaf: leaf.handle, untrusted: others.map(\.handle), at: checkValidity ? time : nil) {
        case .failure(let failure): return .invalid(failure.attributing(to: leaf.index, others: others.map(\.index)))
        case .success(let chain): built = chain
        }
        guard built.count == 3 else {
            let code: ChainFailure.Code = built.count < 3 ? .missingIntermediate : .chainLength
            return .invalid(
                ChainFailure(code, "the chain has \(built.count) certificates; Apple's is leaf, intermediate, root"))
        }
        guard built[2].fingerprint == trust.rootFingerprint else {
            return .invalid(ChainFailure(.untrustedRoot, "the chain does not end at the pinned \(trust.name) root"))
        }
        let intermediate = built[1]
        let intermediateIndex = others.first { $0.handle.der == intermediate.der }?.index
        let intermediateName = intermediate.subjectCommonName ?? ""
        if let required = trust.requiredIntermediateCommonName, intermediateName != required {
            return .invalid(
                ChainFailure(
                    .intermediateName, "intermediate is \"\(intermediateName)\", expected \"\(required)\"",
                    certificateIndex: intermediateIndex))
        }
        let recipient: ValidatedAppleChain.RecipientKey
        switch Self.recipientKey(of: leaf.handle) {
        case .failure(let failure):
            return .invalid(ChainFailure(failure.code, failure.detail, certificateIndex: leaf.index))
        case .success(let key): recipient = key
        }
        let leafNotBefore = leaf.handle.notBefore ?? .distantPast
        let leafNotAfter = leaf.handle.notAfter ?? .distantPast
        let chain = ValidatedAppleChain(
            recipientKey: recipient, leafNotBefore: leafNotBefore, leafNotAfter: leafNotAfter,
            leafFingerprint: leaf.handle.fingerprint,
            leafCommonName: leaf.handle.subjectCommonName ?? "", intermediateCommonName: intermediateName,
            trustProfileName: trust.name)
        let windowStart = checkValidity ? built.compactMap(\.notBefore).max() ?? .distantFuture : .distantPast
        let windowEnd = checkValidity ? built.compactMap(\.notAfter).min() ?? .distantPast : leafNotAfter
        return .valid(chain, windowStart: windowStart, windowEnd: windowEnd)
    }

    /// Key usage and key type of the leaf. An EC key must be P-256 with keyAgreement and
    /// keyEncipherment; an RSA key at least 2048 bits with keyEncipherment.
    private static func recipientKey(of leaf: X509Handle) -> Result<ValidatedAppleChain.RecipientKey, ChainFailure> {
        guard let usage = leaf.keyUsage else {
            return .failure(ChainFailure(.leafKeyUsage, "the leaf has no Key Usage extension"))
        }
        guard let key = try? leaf.publicKey() else {
            return .failure(ChainFailure(.leafKeyType, "the leaf key cannot be decoded"))
        }
        let encipherment = usage & UInt32(KU_KEY_ENCIPHERMENT) != 0
        let agreement = usage & UInt32(KU_KEY_AGREEMENT) != 0
        switch key.baseID {
        case EVP_PKEY_EC:
            guard encipherment, agreement else {
                return .failure(ChainFailure(.leafKeyUsage, "an EC leaf needs keyEncipherment and keyAgreement"))
            }
            guard key.isP256 else { return .failure(ChainFailure(.leafKeyType, "the leaf EC key is not on P-256")) }
            // Checked once here so that every ECDH with this key can skip re-validation.
            guard (try? ECKeyCoding.checkPublic(key)) != nil else {
                return .failure(ChainFailure(.leafKeyType, "the leaf point is invalid"))
            }
            return .success(.p256(P256.KeyAgreement.PublicKey(validated: key)))
        case EVP_PKEY_RSA:
            guard encipherment else {
                return .failure(ChainFailure(.leafKeyUsage, "an RSA leaf needs keyEncipherment"))
            }
            guard key.bits >= RSA.minimumKeyBits else {
                return .failure(ChainFailure(.leafKeyType, "the leaf RSA key has \(key.bits) bits"))
            }
            return .success(.rsa(RSA.Encryption.PublicKey(handle: key)))
        default:
            return .failure(ChainFailure(.leafKeyType, "the leaf key is neither EC P-256 nor RSA"))
        }
    }
}
