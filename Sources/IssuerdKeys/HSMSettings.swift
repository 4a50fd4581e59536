import Foundation
import IssuerdCore

/// Where issuer keys live when an HSM is configured (`ISSUERD_PKCS11_*`). Absent when
/// `ISSUERD_PKCS11_MODULE` is unset: then every other setting keeps its meaning.
public struct HSMSettings: Sendable, Equatable {
    /// Absolute path of the vendor's PKCS#11 module (`ISSUERD_PKCS11_MODULE`).
    public var modulePath: String
    /// The token label (`ISSUERD_PKCS11_TOKEN_LABEL`).
    public var tokenLabel: String
    /// A file holding the user PIN (`ISSUERD_PKCS11_PIN_FILE`); the PIN is never a setting value.
    public var pinFile: String
    /// The AES-256 key that wraps PAN data keys (`ISSUERD_PKCS11_WRAP_KEY_LABEL`, default `issuerd-pan-kek`).
    public var wrappingKeyLabel: String
    /// The RSA key that signs Mastercard TAVs in the HSM (`ISSUERD_PKCS11_SIGNING_KEY_LABEL`); when
    /// unset, `ISSUERD_TAV_SIGNING_KEY` (or the issuer crypto-OTP) applies as before.
    public var tavKeyLabel: String?
    /// Sessions in the pool (`ISSUERD_PKCS11_SESSIONS`, default: the HTTP worker threads).
    public var sessionCount: Int

    /// The default label of the wrapping key.
    public static let defaultWrappingKeyLabel = "issuerd-pan-kek"
    /// The label `keys hsm init` gives the TAV key when none is configured.
    public static let defaultTAVKeyLabel = "issuerd-tav"

    /// Reads the settings; nil when no module is configured.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting: a relative module path, a missing
    ///   token label or PIN file, or an `ISSUERD_PKCS11_*` setting without a module.
    public static func read(
        _ reader: ConfigurationReader, defaultSessions: Int, pinFileRequired: Bool = true
    ) throws -> HSMSettings? {
        guard let module = reader.string("ISSUERD_PKCS11_MODULE") else {
            for key in [
                "ISSUERD_PKCS11_TOKEN_LABEL", "ISSUERD_PKCS11_PIN_FILE", "ISSUERD_PKCS11_WRAP_KEY_LABEL",
                "ISSUERD_PKCS11_SIGNING_KEY_LABEL", "ISSUERD_PKCS11_SESSIONS",
            ]
            where reader.string(key) != nil {
                throw ConfigurationError(
                    key: key, problem: "is set but ISSUERD_PKCS11_MODULE is not (the path of the HSM's PKCS#11 module)")
            }
            return nil
        }
        guard module.hasPrefix("/") else {
            throw ConfigurationError(
                key: "ISSUERD_PKCS11_MODULE", problem: "must be the absolute path of the vendor's PKCS#11 module (.so)")
        }
        let token = try reader.required(
            "ISSUERD_PKCS11_TOKEN_LABEL", hint: "the label of the HSM token (partition) holding issuerd's keys")
        let pinHint = "a file holding the token's user PIN (never the PIN itself)"
        let pinFile =
            pinFileRequired
            ? try reader.required("ISSUERD_PKCS11_PIN_FILE", hint: pinHint)
            : reader.string("ISSUERD_PKCS11_PIN_FILE") ?? ""
        let wrapping = reader.string("ISSUERD_PKCS11_WRAP_KEY_LABEL") ?? defaultWrappingKeyLabel
        let tav = reader.string("ISSUERD_PKCS11_SIGNING_KEY_LABEL")
        for (key, label) in [
            ("ISSUERD_PKCS11_WRAP_KEY_LABEL", wrapping), ("ISSUERD_PKCS11_SIGNING_KEY_LABEL", tav ?? "x"),
        ] {
            guard (1...64).contains(label.utf8.count),
                label.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F })
            else {
                throw ConfigurationError(key: key, problem: "must be 1 to 64 printable ASCII characters")
            }
        }
        if tav != nil, reader.string("ISSUERD_TAV_SIGNING_KEY") != nil {
            throw ConfigurationError(
                key: "ISSUERD_PKCS11_SIGNING_KEY_LABEL", problem: "set either it or ISSUERD_TAV_SIGNING_KEY, not both")
        }
        return HSMSettings(
            modulePath: module, tokenLabel: token, pinFile: pinFile, wrappingKeyLabel: wrapping, tavKeyLabel: tav,
            sessionCount: try reader.integer(
                "ISSUERD_PKCS11_SESSIONS", default: min(max(defaultSessions, 1), 1024), in: 1...1024))
    }
}
