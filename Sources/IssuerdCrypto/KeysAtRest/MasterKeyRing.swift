import Foundation

/// The versioned master keys from `ISSUERD_MASTER_KEY`, and the purpose-separated data keys
/// derived from them with HKDF-SHA256 (RFC 5869).
///
/// Setting format: one base64 key of 32 bytes (version 1), or a comma-separated list of
/// `v<N>:<base64>` entries, e.g. `v2:…,v1:…`. The highest version encrypts new data; older
/// versions only open. The **fingerprint version** (by default the lowest version present)
/// keys PAN fingerprints and OTP digests, so lookups keep working while data keys rotate (see
/// docs/crypto.md, "Keys at rest").
public struct MasterKeyRing: Sendable, CustomStringConvertible {
    /// What a derived key is for; each purpose gets an independent key.
    public enum Purpose: String, Sendable, CaseIterable {
        /// AES-256-GCM for PANs at rest.
        case panEncryption = "pan-encryption"
        /// HMAC for PAN lookups.
        case panFingerprint = "pan-fingerprint"
        /// HMAC for stored one-time codes.
        case otpDigest = "otp-digest"
        /// HMAC for ``IssuerOTPProvider`` activation data.
        case activationOTP = "activation-otp"
    }

    /// The length of every master key.
    public static let keyByteCount = 32
    /// The most versions a ring holds (bounds the setting).
    public static let maximumVersions = 16

    /// The version that seals new data.
    public let currentVersion: Int
    /// The version that keys fingerprints and OTP digests.
    public let fingerprintVersion: Int
    /// Every version present, ascending.
    public let versions: [Int]
    /// Whether the derived keys sit in `mlock`ed memory (false when `RLIMIT_MEMLOCK` is too
    /// small: the service logs a warning; the keys are still wiped on release).
    public let isMemoryLocked: Bool
    private let derived: [Slot: SymmetricKey]

    /// Parses the `ISSUERD_MASTER_KEY` setting.
    ///
    /// - Throws: ``CryptoError/Code/invalidMasterKey`` naming the problem (never the key).
    public init(settingValue: String) throws {
        let trimmed = settingValue.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw CryptoError(.invalidMasterKey, "ISSUERD_MASTER_KEY is empty") }
        var keys: [Int: SymmetricKey] = [:]
        if !trimmed.contains(":") {
            keys[1] = try Self.decodeKey(trimmed, label: "ISSUERD_MASTER_KEY")
        } else {
            let entries = trimmed.split(separator: ",")
            guard entries.count <= Self.maximumVersions else {
                throw CryptoError(.invalidMasterKey, "more than \(Self.maximumVersions) key versions")
            }
            for entry in entries {
                let parts = entry.trimmingCharacters(in: .whitespaces).split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].hasPrefix("v"), let version = Int(parts[0].dropFirst()),
                    (1...9999).contains(version)
                else {
                    throw CryptoError(.invalidMasterKey, "each entry must be v<N>:<base64>, N from 1 to 9999")
                }
                guard keys[version] == nil else {
                    throw CryptoError(.invalidMasterKey, "version \(version) appears twice")
                }
                keys[version] = try Self.decodeKey(String(parts[1]), label: "version \(version)")
            }
        }
        try self.init(keys: keys)
    }

    /// Builds a ring from key bytes per version.
    ///
    /// - Parameters:
    ///   - keys: 32-byte keys by version (≥ 1).
    ///   - fingerprintVersion: The version keying fingerprints; defaults to the lowest.
    /// - Throws: ``CryptoError/Code/invalidMasterKey``.
    public init(keys: [Int: SymmetricKey], fingerprintVersion: Int? = nil) throws {
        guard let lowest = keys.keys.min(), let highest = keys.keys.max(), lowest >= 1 else {
            throw CryptoError(.invalidMasterKey, "no master key versions")
        }
        guard keys.values.allSatisfy({ $0.byteCount == Self.keyByteCount }) else {
            throw CryptoError(.invalidMasterKey, "every master key must be \(Self.keyByteCount) bytes")
        }
        let fingerprint = fingerprintVersion ?? lowest
        guard keys[fingerprint] != nil else {
            throw CryptoError(.invalidMasterKey, "fingerprint version \(fingerprint) is not in the ring")
        }
        // The derived keys live as long as the process: locked memory keeps them out of swap.
        let arena = LockedKeyArena(byteCount: keys.count * Purpose.allCases.count * 32)
        var derived: [Slot: SymmetricKey] = [:]
        for (version, key) in keys {
            for purpose in Purpose.allCases {
                derived[Slot(purpose: purpose, version: version)] = try arena.copy(
                    HKDF.deriveKey(
                        inputKey: key, salt: Array("issuerd master key ring".utf8),
                        info: Array("issuerd/\(purpose.rawValue)/v\(version)".utf8)))
            }
        }
        self.isMemoryLocked = arena.isLocked
        self.currentVersion = highest
        self.fingerprintVersion = fingerprint
        self.versions = keys.keys.sorted()
        self.derived = derived
    }

    /// The data key for `purpose` under master key `version`.
    ///
    /// - Throws: ``CryptoError/Code/unknownKeyVersion`` when the ring lacks that version.
    public func dataKey(for purpose: Purpose, version: Int) throws -> SymmetricKey {
        guard let key = derived[Slot(purpose: purpose, version: version)] else {
            throw CryptoError(.unknownKeyVersion, "master key version \(version) is not configured")
        }
        return key
    }

    public var description: String {
        "MasterKeyRing(versions: \(versions), current: \(currentVersion), fingerprint: \(fingerprintVersion))"
    }

    /// A derived key's place: looked up on every request, so not a string built for each look-up.
    private struct Slot: Hashable {
        var purpose: Purpose
        var version: Int
    }

    private static func decodeKey(_ text: String, label: String) throws -> SymmetricKey {
        guard let bytes = try? BinaryEncoding.decodeBase64(text.trimmingCharacters(in: .whitespaces)) else {
            throw CryptoError(.invalidMasterKey, "\(label) is not padded base64")
        }
        guard bytes.count == keyByteCount else {
            throw CryptoError(.invalidMasterKey, "\(label) decodes to \(bytes.count) bytes, expected 32")
        }
        return try SymmetricKey(bytes: bytes)
    }
}
