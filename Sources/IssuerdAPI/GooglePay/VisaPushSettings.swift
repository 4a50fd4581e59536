import Foundation
import IssuerdCore

/// The settings of Visa's encrypted payment instrument (docs/configuration.md, "Google Pay and
/// Samsung Pay"): the encryption API key Visa issued (the JWE's `kid`), the shared secret issued
/// with it, and the issuer app's id at Visa. All three or none; without them a Visa card's push
/// is 422 `visa_push_not_configured`. The secret is a 0600 file, or, with an HSM, a key in the
/// token made from it (`issuerd keys hsm import-visa-secret`), so it never sits in the service.
package struct VisaPushSettings: Sendable {
    /// `ISSUERD_VISA_ENCRYPTION_API_KEY`: an identifier, not a secret.
    var apiKey: String
    /// Where the shared secret is.
    var sharedSecret: SharedSecret
    /// `ISSUERD_VISA_CLIENT_APP_ID`: the issuer app's id as registered with Visa (`clientAppID`).
    var clientAppID: String

    /// Where the shared secret is.
    enum SharedSecret: Sendable {
        /// Its bytes, read from the 0600 file `ISSUERD_VISA_ENCRYPTION_SHARED_SECRET` names.
        case file(Redacted<[UInt8]>)
        /// Its key-encryption key (SHA-256 of it) in the HSM, labelled `ISSUERD_VISA_ENCRYPTION_KEY_LABEL`.
        case hsm(label: String)
    }

    static let keys = [
        "ISSUERD_VISA_ENCRYPTION_API_KEY", "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET", "ISSUERD_VISA_CLIENT_APP_ID",
    ]
    /// The setting naming the key-encryption key in the HSM, in place of the secret's file.
    package static let keyLabelSetting = "ISSUERD_VISA_ENCRYPTION_KEY_LABEL"
    /// The label `keys hsm import-visa-secret` gives the key when none is configured.
    package static let defaultKeyLabel = "issuerd-visa-kek"
    /// The most bytes a shared-secret file may hold.
    static let maximumSecretLength = 1024

    /// Reads the settings; nil when none is set.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting: one set without the others, both the
    ///   secret's file and its HSM label, an id that is not 1 to 256 printable ASCII characters,
    ///   a label that is not 1 to 64, or a secret file that is missing, empty, too long or
    ///   readable by group or others.
    static func read(_ reader: ConfigurationReader) throws -> VisaPushSettings? {
        var values = keys.map { reader.string($0) }
        let label = reader.string(keyLabelSetting)
        if values.allSatisfy({ $0 == nil }) && label == nil { return nil }
        if values[1] != nil, label != nil {
            throw ConfigurationError(key: keyLabelSetting, problem: "set either it or \(keys[1]), not both")
        }
        if let label {
            guard (1...64).contains(label.utf8.count), label.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                throw ConfigurationError(key: keyLabelSetting, problem: "must be 1 to 64 printable ASCII characters")
            }
            values[1] = label
        }
        if let missing = zip(keys, values).first(where: { $0.1 == nil }) {
            throw ConfigurationError(
                key: missing.0,
                problem:
                    "Visa's encrypted payment instrument needs \(keys.joined(separator: ", ")): set all three or none (the secret a 0600 file, or \(keyLabelSetting) for its key in the HSM)"
            )
        }
        for (key, value) in zip(keys, values) where key != keys[1] {
            guard let value, (1...256).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
            else { throw ConfigurationError(key: key, problem: "must be 1 to 256 printable ASCII characters") }
        }
        let secret: SharedSecret =
            if let label { .hsm(label: label) } else { .file(Redacted(try secretFile(values[1]!, key: keys[1]))) }
        return VisaPushSettings(apiKey: values[0]!, sharedSecret: secret, clientAppID: values[2]!)
    }

    /// The secret in `path`, without one trailing newline (`echo SECRET > file`).
    ///
    /// - Throws: ``ConfigurationError`` naming `key`: the file is missing, readable by group or
    ///   others (one line naming its mode), empty or longer than ``maximumSecretLength``.
    package static func secretFile(_ path: String, key: String) throws -> [UInt8] {
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
