import Foundation

/// Lowercase hex text, two digits a byte: trace and span ids (``TraceContext``) and
/// `BinaryEncoding.hexString` in IssuerdCrypto are written by this one encoder.
public enum Hex {
    /// `bytes` as lowercase hex (`[0x0f, 0xa5]` is `0fa5`).
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte & 0x0F))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `bytes` as lowercase hex, for an array (a fingerprint, a ciphertext): the generic form is
    /// not specialised across modules and costs several times as much per byte.
    public static func lowercase(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = digit(byte >> 4)
                buffer[2 * index + 1] = digit(byte & 0x0F)
            }
            return bytes.count * 2
        }
    }

    static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}

extension UUID {
    /// Its 16 bytes, in order (the `uuid` tuple as an array): the binary form PostgreSQL sends
    /// and receives, and what ``lowercasedString`` writes.
    public var bytes: [UInt8] {
        let u = uuid
        return [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
    }

    /// The 36-character lowercase form (`a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`) in which issuerd
    /// writes every id, by ``Hex`` (`uuidString.lowercased()` went through `snprintf` and a
    /// second string: several times the work, on every request's ids).
    public var lowercasedString: String {
        let bytes = bytes
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var at = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    buffer[at] = UInt8(ascii: "-")
                    at += 1
                }
                buffer[at] = Hex.digit(byte >> 4)
                buffer[at + 1] = Hex.digit(byte & 0x0F)
                at += 2
            }
            return at
        }
    }
}
