import Foundation

/// Hex text, two digits a byte: trace and span ids (``TraceContext``) and
/// `BinaryEncoding.hexString` in IssuerdCrypto are written by this one lowercase encoder, and
/// every hex a caller sends (a TSP signature, MDES's envelopes and fingerprints) is read by
/// ``bytes(_:)``.
public enum Hex {
    /// The value of one ASCII hex digit of either case, or nil.
    @inlinable
    public static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        case 0x41...0x46: byte - 0x41 + 10
        default: nil
        }
    }

    /// The bytes of hex digits in either case, even mixed within the text; nil for an odd count
    /// or a character that is not a digit. Inlinable, so that each caller's collection (a header's
    /// slice, an envelope's UTF-8 view of a kilobyte or more) is read by a loop specialised for it,
    /// not through the generic witnesses a call across modules would take for every byte.
    @inlinable
    public static func bytes(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var high: UInt8?
        for byte in text {
            guard let digit = value(of: byte) else { return nil }
            if let first = high {
                out.append(first << 4 | digit)
                high = nil
            } else {
                high = digit
            }
        }
        return out
    }

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
