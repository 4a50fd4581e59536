import Foundation
import IssuerdCore

/// The settings of Visa's encrypted payment instrument (docs/configuration.md, "Google Pay and
/// Samsung Pay"): the encryption API key Visa issued (the JWE's `kid`), the shared secret issued
/// with it, and the issuer app's id at Visa. All three or none; without them a Visa card's push
/// is 422 `visa_push_not_configured`.
struct VisaPushSettings: Sendable {
    /// `ISSUERD_VISA_ENCRYPTION_API_KEY`: an identifier, not a secret.
    var apiKey: String
    /// The shared secret's bytes, read from the file `ISSUERD_VISA_ENCRYPTION_SHARED_SECRET` names.
    var sharedSecret: Redacted<[UInt8]>
    /// `ISSUERD_VISA_CLIENT_APP_ID`: the issuer app's id as registered with Visa (`clientAppID`).
    var clientAppID: String

    static let keys = [
        "ISSUERD_VISA_ENCRYPTION_API_KEY", "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET", "ISSUERD_VISA_CLIENT_APP_ID",
    ]
    /// The most bytes a shared-secret file may hold.
    static let maximumSecretLength = 1024

    /// Reads the settings; nil when none is set.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting: one set without the others, an id that
    ///   is not 1 to 256 printable ASCII characters, or a secret file that is missing, empty, too
    ///   long or readable by group or others.
    static func read(_ reader: ConfigurationReader) throws -> VisaPushSettings? {
        let values = keys.map { reader.string($0) }
        if values.allSatisfy({ $0 == nil }) { return nil }
        if let missing = zip(keys, values).first(where: { $0.1 == nil }) {
            throw ConfigurationError(
                key: missing.0,
                problem:
                    "Visa's encrypted payment instrument needs \(keys.joined(separator: ", ")): set all three or none")
        }
        for (key, value) in zip(keys, values) where key != keys[1] {
            guard let value, (1...256).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
            else { throw ConfigurationError(key: key, problem: "must be 1 to 256 printable ASCII characters") }
        }
        return VisaPushSettings(
            apiKey: values[0]!, sharedSecret: Redacted(try secretFile(values[1]!, key: keys[1])),
            clientAppID: values[2]!)
    }

    /// The secret in `path`, without one trailing newline (`echo SECRET > file`).
    static func secretFile(_ path: String, key: String) throws -> [UInt8] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ConfigurationError(key: key, problem: "must name a readable file holding the shared secret: \(path)")
        }
        try ConfigurationReader.refuseSharedFile(path, key: key)
        guard var data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: key, problem: "must name a readable file holding the shared secret: \(path)")
        }
        defer { data.resetBytes(in: 0..<data.count) }
        var bytes = [UInt8](data)
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard (1...maximumSecretLength).contains(bytes.count) else {
            throw ConfigurationError(key: key, problem: "the file must hold 1 to \(maximumSecretLength) bytes: \(path)")
        }
        return bytes
    }
}
