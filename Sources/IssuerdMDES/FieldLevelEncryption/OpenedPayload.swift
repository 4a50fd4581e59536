import Foundation
import IssuerdCore
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

    /// The plaintext read in one pass (``JSONValue/parse(bytes:)``) into `type`, member for member
    /// as its synthesized `Decodable` conformance reads it (``MDESTreeReader``); nil when `type`
    /// cannot be read that way or the plaintext does not read cleanly as it, so that the caller
    /// decodes with Foundation and every refusal stays Foundation's. Foundation's decoder was
    /// about a tenth of an MDES request's instructions beyond the RSA unwrap.
    func readTree<T>(as type: T.Type) -> T? {
        plaintext.withUnsafeBytes { Self.readTree($0.bindMemory(to: UInt8.self), as: type) }
    }

    /// ``readTree(as:)`` of any bytes.
    static func readTree<T>(_ bytes: UnsafeBufferPointer<UInt8>, as type: T.Type) -> T? {
        guard let readable = type as? any MDESTreeReadable.Type, let tree = JSONValue.parse(bytes: bytes),
            let reader = try? MDESTreeReader(tree)
        else { return nil }
        return (try? readable.init(reading: reader)) as? T
    }

    public var description: String {
        "OpenedPayload(\(plaintext.count) bytes, key \(key.name), \(padding), AES-\(keyByteCount * 8))"
    }
}
