import Foundation

/// Writes one JSON object per line: `{"ts","level","logger","msg",...metadata}`.
///
/// Formatting is done by hand rather than with `JSONEncoder` so that the key order is stable
/// (`ts`, `level`, `logger`, `msg` first) and a line costs no more than a string build.
public final class JSONLogHandler: LogHandler {
    /// The process-wide handler writing to standard output.
    public static let standardOutput = JSONLogHandler(fileDescriptor: 1)
    /// A handler writing to standard error, for CLI commands whose stdout is their result.
    public static let standardError = JSONLogHandler(fileDescriptor: 2)

    private let fileDescriptor: Int32
    // Guards whole-line writes so lines from concurrent threads never interleave.
    private let lock = Lock(())

    /// Creates a handler writing to an open file descriptor it does not own.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    public func write(_ record: LogRecord) {
        let line = Self.format(record) + "\n"
        lock.withLock { _ in
            var bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { buffer in
                    Foundation.write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                }
                if written <= 0 { break }
                offset += written
            }
            bytes.removeAll()
        }
    }

    /// Formats a record as one JSON line without the trailing newline.
    public static func format(_ record: LogRecord) -> String {
        var out = "{\"ts\":"
        JSONText.appendString(Self.timestamp(record.timestamp), to: &out)
        out += ",\"level\":"
        JSONText.appendString(record.level.description, to: &out)
        out += ",\"logger\":"
        JSONText.appendString(record.label, to: &out)
        out += ",\"msg\":"
        JSONText.appendString(record.message, to: &out)
        for key in record.metadata.keys.sorted() where !["ts", "level", "logger", "msg"].contains(key) {
            out += ","
            JSONText.appendString(key, to: &out)
            out += ":"
            JSONText.append(record.metadata[key]!, to: &out)
        }
        out += "}"
        return out
    }

    private static func timestamp(_ date: Date) -> String {
        date.formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}

/// Minimal JSON text building for log lines and other hand-formatted output.
public enum JSONText {
    /// Appends `value` as a JSON string literal, escaping per RFC 8259 section 7.
    public static func appendString(_ value: String, to out: inout String) {
        out.append("\"")
        // Most strings (ids, base64, names) need no escaping: copy them whole.
        if !needsEscaping(value) {
            out.append(value)
            out.append("\"")
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out.append("\"")
    }

    /// Appends `value` as a JSON string literal to a byte buffer, escaping as
    /// the `String` variant does.
    ///
    /// One pass over the UTF-8: runs that need no escape are copied whole. A quote, a backslash
    /// or a control character is the only byte that changes; every other byte, multi-byte
    /// sequences included, is copied as it is.
    public static func appendString(_ value: String, to out: inout [UInt8]) {
        value.withUTF8Buffer { bytes in
            // No reserveCapacity here: it would size the buffer to exactly this string, and
            // a document's hundred strings would each copy it whole again.
            out.append(UInt8(ascii: "\""))
            var run = 0
            var index = 0
            while true {
                index = Self.skipClean(bytes, from: index)
                guard index < bytes.count else { break }
                let byte = bytes[index]
                index += 1
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                let at = index - 1
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<at]))
                run = index
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x22: out.append(UInt8(ascii: "\""))
                case 0x5C: out.append(UInt8(ascii: "\\"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    let digits = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [
                        UInt8(ascii: "u"), 0x30, 0x30, digits[Int(byte >> 4)], digits[Int(byte & 0x0F)],
                    ])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
            out.append(UInt8(ascii: "\""))
        }
    }

    /// The first position at or after `index` that is not inside a run of whole eight-byte
    /// words none of whose bytes needs an escape (``mayNeedEscape(_:)``); the bytes from there on
    /// are tested one by one.
    @inline(__always)
    static func skipClean(_ bytes: UnsafeBufferPointer<UInt8>, from index: Int) -> Int {
        var index = index
        while index + 8 <= bytes.count,
            !mayNeedEscape(UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self))
        {
            index += 8
        }
        return index
    }

    /// Whether any of the eight bytes in `word` is below 0x20, a quote or a backslash (it may
    /// report one that is not, never miss one): the classic word-at-a-time tests for a byte
    /// less than a value and for a zero byte, over the bytes and over them xor-ed with `"` and `\`.
    @inline(__always)
    static func mayNeedEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let below = (word &- ones &* 0x20) & ~word
        let quote = (quotes &- ones) & ~quotes
        let backslash = (backslashes &- ones) & ~backslashes
        return (below | quote | backslash) & highs != 0
    }

    /// Appends a literal's bytes (a member name and its punctuation) to a byte buffer.
    @inlinable
    public static func appendLiteral(_ literal: StaticString, to out: inout [UInt8]) {
        literal.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    /// Appends the decimal digits of `value` to a byte buffer, without an intermediate string.
    public static func appendInteger(_ value: Int, to out: inout [UInt8]) {
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of UInt64.max
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            while magnitude > 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            out.append(contentsOf: buffer[index...])
        }
    }

    /// True when `value` holds a quote, a backslash or a control character.
    static func needsEscaping(_ value: String) -> Bool {
        value.withUTF8Buffer { bytes in
            bytes[skipClean(bytes, from: 0)...].contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }
        }
    }

    /// Appends a log value as JSON.
    public static func append(_ value: LogValue, to out: inout String) {
        switch value {
        case .string(let string): appendString(string, to: &out)
        case .int(let int): out += String(int)
        case .double(let double): out += double.isFinite ? String(double) : "null"
        case .bool(let bool): out += bool ? "true" : "false"
        case .array(let values):
            out += "["
            for (index, element) in values.enumerated() {
                if index > 0 { out += "," }
                append(element, to: &out)
            }
            out += "]"
        }
    }
}
