import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPKCS11

/// The HSM side of issuer keys: the token opened from ``HSMSettings``, its wrapping key
/// checked, the TAV signer, and the envelope operations on PAN data keys.
///
/// Every ``PKCS11Error`` met while opening becomes a ``ConfigurationError`` naming the setting
/// that leads to it (the module path, the token label, the PIN file, a key label), so start-up
/// stops with one clear line and never with a PIN or key byte.
public struct HSMKeyStore: Sendable {
    /// The settings it was opened with.
    public let settings: HSMSettings
    /// The logged-in token and its session pool.
    public let token: PKCS11Token

    /// Loads the module, finds the token and logs in with the PIN from its file.
    ///
    /// - Parameter pin: A PIN read elsewhere (`keys hsm init --pin-stdin`); by default the
    ///   content of `ISSUERD_PKCS11_PIN_FILE`.
    /// - Throws: ``ConfigurationError`` naming `ISSUERD_PKCS11_MODULE`, `ISSUERD_PKCS11_TOKEN_LABEL`
    ///   or `ISSUERD_PKCS11_PIN_FILE`.
    public static func open(_ settings: HSMSettings, pin given: PKCS11PIN? = nil) throws -> HSMKeyStore {
        let module = try mapping { try PKCS11Module.load(path: settings.modulePath) }
        let pin = try given ?? mapping { try PKCS11PIN(contentsOfFile: settings.pinFile) }
        let token = try mapping {
            try PKCS11Token(
                module: module, tokenLabel: settings.tokenLabel, pin: pin, sessionCount: settings.sessionCount)
        }
        return HSMKeyStore(settings: settings, token: token)
    }

    /// Checks the wrapping key: AES-256, sensitive, not extractable, allowed to wrap and unwrap.
    ///
    /// - Throws: ``ConfigurationError`` naming `ISSUERD_PKCS11_WRAP_KEY_LABEL`.
    public func checkWrappingKey() throws {
        try Self.mapping(keySetting: "ISSUERD_PKCS11_WRAP_KEY_LABEL") {
            try token.checkWrappingKey(label: settings.wrappingKeyLabel)
        }
    }

    /// The TAV signer in the HSM, or nil when `ISSUERD_PKCS11_SIGNING_KEY_LABEL` is unset.
    ///
    /// - Throws: ``ConfigurationError`` naming `ISSUERD_PKCS11_SIGNING_KEY_LABEL` for a missing key,
    ///   one that is not RSA ≥ 2048 with CKA_SIGN, or one that can leave the HSM.
    public func tavSigner() throws -> (any RSASigningKey)? {
        guard let label = settings.tavKeyLabel else { return nil }
        let signer = try Self.mapping(keySetting: "ISSUERD_PKCS11_SIGNING_KEY_LABEL") {
            try PKCS11RSASigner(token: token, label: label)
        }
        return HSMRSASigner(signer: signer)
    }

    /// The RSA signer labelled `label` in the HSM (the Customer Service API's OAuth key).
    ///
    /// - Throws: ``ConfigurationError`` naming `setting` for a missing key, one that is not
    ///   RSA ≥ 2048 with CKA_SIGN, or one that can leave the HSM.
    public func rsaSigner(label: String, setting: String) throws -> any RSASigningKey {
        HSMRSASigner(signer: try Self.mapping(keySetting: setting) { try PKCS11RSASigner(token: token, label: label) })
    }

    /// The AES-256 key labelled `label` in the HSM as the key-encryption key of a JWE
    /// (`A256GCMKW`): each content key is wrapped in the token with `CKM_AES_GCM`.
    ///
    /// - Throws: ``ConfigurationError`` naming `setting` for a missing key, one that is not
    ///   AES-256 with CKA_ENCRYPT, or one that can leave the HSM.
    public func contentKeyWrapper(label: String, setting: String) throws -> any ContentKeyWrapping {
        HSMContentKeyWrapper(
            encrypter: try Self.mapping(keySetting: setting) { try PKCS11AESGCMEncrypter(token: token, label: label) })
    }

    /// Generates a new data key in the HSM and returns it wrapped.
    public func wrapNewDataKey() throws -> [UInt8] {
        try Self.mapping(keySetting: "ISSUERD_PKCS11_WRAP_KEY_LABEL") {
            try token.wrapNewDataKey(wrappingKeyLabel: settings.wrappingKeyLabel)
        }
    }

    /// Wraps an environment master key so it can leave the environment (the move to an HSM).
    public func wrap(_ key: MasterKeySetting) throws -> [UInt8] {
        try Self.mapping(keySetting: "ISSUERD_PKCS11_WRAP_KEY_LABEL") {
            try key.key.unsafeValue.withUnsafeBytes {
                try token.wrapDataKey($0, wrappingKeyLabel: settings.wrappingKeyLabel)
            }
        }
    }

    /// Unwraps one stored data key straight into a ``SymmetricKey`` (the clear bytes exist
    /// only in the wrapper's locked buffer and the key's wiped storage).
    ///
    /// - Throws: ``CommandInputError`` naming the version when it does not unwrap.
    public func unwrap(_ stored: HSMDataKey) throws -> SymmetricKey {
        do {
            return try token.unwrapDataKey(stored.wrappedKey, wrappingKeyLabel: stored.wrappingKeyLabel) {
                try SymmetricKey(bytes: $0)
            }
        } catch let error as PKCS11Error {
            throw CommandInputError(
                "data key version \(stored.version) does not unwrap under '\(stored.wrappingKeyLabel)' in token '\(settings.tokenLabel)': \(error)"
            )
        }
    }

    /// Runs `body`, turning a ``PKCS11Error`` into the ``ConfigurationError`` of the setting behind it.
    package static func mapping<T>(
        keySetting: String = "ISSUERD_PKCS11_TOKEN_LABEL", _ body: () throws -> T
    ) throws -> T {
        do {
            return try body()
        } catch let error as PKCS11Error {
            let key: String
            switch error.code {
            case .moduleUnavailable: key = "ISSUERD_PKCS11_MODULE"
            case .tokenNotFound: key = "ISSUERD_PKCS11_TOKEN_LABEL"
            case .pinUnreadable, .pinIncorrect, .pinLocked: key = "ISSUERD_PKCS11_PIN_FILE"
            default: key = keySetting
            }
            throw ConfigurationError(key: key, problem: error.description)
        }
    }
}

/// The HSM's PKCS#11 signer seen as an ``RSASigningKey`` by ``MastercardTAVProvider``.
package struct HSMRSASigner: RSASigningKey {
    let signer: PKCS11RSASigner
    package func signature(for message: [UInt8]) throws -> [UInt8] { try signer.signature(for: message) }
}

/// The HSM's PKCS#11 AES-GCM key seen as a ``ContentKeyWrapping`` by ``CompactJWE``.
package struct HSMContentKeyWrapper: ContentKeyWrapping {
    let encrypter: PKCS11AESGCMEncrypter
    package func wrapContentKey(_ contentKey: [UInt8], nonce: [UInt8]) throws -> [UInt8] {
        try encrypter.seal(contentKey, iv: nonce)
    }
}
