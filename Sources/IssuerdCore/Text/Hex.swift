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

    private static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
