import Foundation
import IssuerdCrypto

/// The plaintext of an opened `encryptedPayload` (card data: wiped on release, never printed)
/// and what opened it.
public struct OpenedPayload: Sendable, CustomStringConvertible {
    /// The UTF-8 JSON plaintext.
    public let plaintext: SecureBytes
    /// The issuer key that opened it.
    public let key: MDESIssuerKey
    /// How the AES key was wrapped.
    public let padding: RSA.Encryption.Padding
    /// The AES key length (16 or 32).
    public let keyByteCount: Int

    /// Decodes the plaintext as `type` without copying it out of its wiped storage.
    ///
    /// - Throws: The decoder's error (its messages name fields, not values).
    public func decode<T: Decodable>(_ type: T.Type, using decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try plaintext.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else {
                return try decoder.decode(type, from: Data())
            }
            let data = Data(
                bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: buffer.count, deallocator: .none)
            return try decoder.decode(type, from: data)
        }
    }

    public var description: String {
        "OpenedPayload(\(plaintext.count) bytes, key \(key.name), \(padding), AES-\(keyByteCount * 8))"
    }
}
