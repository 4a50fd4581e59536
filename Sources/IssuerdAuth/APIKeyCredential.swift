import IssuerdCrypto

/// An API key as a credential: `isk_<id>_<secret>`, 48 random bits of id and 256 of secret,
/// shown once; only the SHA-256 of the whole key is stored. A slow password hash is not needed:
/// the key has full entropy, so its hash cannot be brute-forced.
package enum APIKeyCredential {
    /// Whether `credential` has a key's form (checked on the request's head, before any look-up).
    package static func hasKeyForm(_ credential: String) -> Bool {
        credential.hasPrefix("isk_") && credential.utf8.count <= 128
    }

    /// What `api_keys.key_hash` holds for `key`.
    package static func digest(_ key: String) -> [UInt8] { SHA256.hash(Array(key.utf8)) }

    /// A new key in clear and its id (the only time the key exists in clear).
    package static func generate() throws -> (keyID: String, key: String) {
        let keyID = BinaryEncoding.hexString(try SecureRandom.bytes(count: 6))
        let secret = BinaryEncoding.base64URLString(try SecureRandom.bytes(count: 32))
        return (keyID, "isk_\(keyID)_\(secret)")
    }
}
