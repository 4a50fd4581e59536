import Foundation
import IssuerdCore

/// One version of the master key.
public struct MasterKeySetting: Sendable {
    /// The version stored beside every ciphertext made with this key.
    public var version: Int
    /// The 32 key bytes.
    public var key: Redacted<[UInt8]>

    /// `ISSUERD_MASTER_KEY` (current), `ISSUERD_MASTER_KEY_VERSION` (its version, default 1) and
    /// `ISSUERD_MASTER_KEY_PREVIOUS` (`version:base64,…`, kept to read rows not yet rotated).
    ///
    /// - Parameter optional: True when an HSM holds the data keys: then an unset
    ///   `ISSUERD_MASTER_KEY` gives no environment keys instead of an error.
    package static func read(_ reader: ConfigurationReader, optional: Bool = false) throws -> [MasterKeySetting] {
        guard let current = try reader.base64Key("ISSUERD_MASTER_KEY", byteCount: 32) else {
            if optional {
                for key in ["ISSUERD_MASTER_KEY_VERSION", "ISSUERD_MASTER_KEY_PREVIOUS"] where reader.string(key) != nil
                {
                    throw ConfigurationError(key: key, problem: "is set but ISSUERD_MASTER_KEY is not")
                }
                return []
            }
            throw ConfigurationError(
                key: "ISSUERD_MASTER_KEY", problem: "is required (base64 of 32 random bytes: openssl rand -base64 32)")
        }
        let version = try reader.integer("ISSUERD_MASTER_KEY_VERSION", default: 1, in: 1...65535)
        var keys = [MasterKeySetting(version: version, key: Redacted(current))]
        for entry in (reader.string("ISSUERD_MASTER_KEY_PREVIOUS") ?? "").split(separator: ",") {
            let parts = entry.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let old = Int(parts[0]), (1..<version).contains(old),
                !keys.contains(where: { $0.version == old })
            else {
                throw ConfigurationError(
                    key: "ISSUERD_MASTER_KEY_PREVIOUS",
                    problem:
                        "must be version:base64 pairs separated by commas, each version distinct and lower than ISSUERD_MASTER_KEY_VERSION"
                )
            }
            let bytes = try ConfigurationReader.decodeKey(
                String(parts[1]), key: "ISSUERD_MASTER_KEY_PREVIOUS", byteCount: 32)
            keys.append(MasterKeySetting(version: old, key: Redacted(bytes)))
        }
        return keys
    }
}
