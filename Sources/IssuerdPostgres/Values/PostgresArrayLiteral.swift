/// Reads and writes one-dimensional array literals (`{a,"b c",NULL}`), PostgreSQL manual 8.15.6.
package enum PostgresArrayLiteral {
    /// Quotes every element so that commas, braces, blanks and the word NULL stay data.
    ///
    /// Byte by byte over UTF-8: `"` and `\` are ASCII, never part of a multi-byte sequence, and
    /// a chunk's arrays (a JSON payload per line, quotes in every one) are formatted on the
    /// writing thread of bulk commands, where walking them by `Character` cost more than their
    /// encryption (and a quote followed by a combining mark is one `Character`, not a quote).
    static func format(_ elements: [String]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(elements.reduce(2) { $0 + $1.utf8.count + 3 })
        out.append(UInt8(ascii: "{"))
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses `array_out` text; `nil` elements are SQL NULLs.
    ///
    /// In place over the text's UTF-8: an element without escapes becomes its `String` straight
    /// from its bytes (a provisioning request reads about twenty of these arrays, its velocity
    /// counts among them).
    static func parse(_ text: String) throws(PostgresDecodingFailure) -> [String?] {
        var text = text
        let parsed = text.withUTF8 { bytes in
            Result { () throws(PostgresDecodingFailure) in try parse(bytes) }
        }
        return try parsed.get()
    }

    private static func parse(_ all: UnsafeBufferPointer<UInt8>) throws(PostgresDecodingFailure) -> [String?] {
        var start = 0
        // Arrays whose lower bound is not 1 carry a "[lo:hi]=" decoration first.
        if all.first == UInt8(ascii: "[") {
            guard let equals = all.firstIndex(of: UInt8(ascii: "=")) else {
                throw .malformed(reason: "bad array bounds")
            }
            start = equals + 1
        }
        guard all.count - start >= 2, all[start] == UInt8(ascii: "{"), all[all.count - 1] == UInt8(ascii: "}") else {
            throw .malformed(reason: "not an array literal")
        }
        let body = UnsafeBufferPointer(rebasing: all[(start + 1)..<(all.count - 1)])
        if body.isEmpty { return [] }

        var elements: [String?] = []
        var index = 0
        var escaped: [UInt8] = []
        while true {
            guard index <= body.count else { throw .malformed(reason: "truncated array literal") }
            if index < body.count, body[index] == UInt8(ascii: "{") {
                throw .malformed(reason: "multi-dimensional arrays are not supported")
            }
            let quoted = index < body.count && body[index] == UInt8(ascii: "\"")
            if quoted { index += 1 }
            let first = index
            var hasEscape = false
            escaped.removeAll(keepingCapacity: true)
            if quoted {
                while true {
                    guard index < body.count else { throw .malformed(reason: "unterminated quoted array element") }
                    let byte = body[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == UInt8(ascii: "\\") {
                        guard index < body.count else { throw .malformed(reason: "dangling escape in array") }
                        if !hasEscape { escaped.append(contentsOf: body[first..<(index - 1)]) }
                        hasEscape = true
                        escaped.append(body[index])
                        index += 1
                    } else if hasEscape {
                        escaped.append(byte)
                    }
                }
            } else {
                while index < body.count, body[index] != UInt8(ascii: ",") {
                    if body[index] == UInt8(ascii: "\\"), index + 1 < body.count {
                        if !hasEscape { escaped.append(contentsOf: body[first..<index]) }
                        hasEscape = true
                        index += 1
                    }
                    if hasEscape { escaped.append(body[index]) }
                    index += 1
                }
            }
            let end = quoted ? index - 1 : index
            let string =
                hasEscape
                ? String(decoding: escaped, as: UTF8.self)
                : String(decoding: UnsafeBufferPointer(rebasing: body[first..<end]), as: UTF8.self)
            elements.append(!quoted && !hasEscape && isNULL(body[first..<end]) ? nil : string)
            if index == body.count { return elements }
            guard body[index] == UInt8(ascii: ",") else { throw .malformed(reason: "unexpected character in array") }
            index += 1
        }
    }

    /// The elements of an array of plain decimal counts (`{3,0,12}`: digits only, each at most
    /// 18 of them); nil for any other text, which the general parser then reads.
    package static func plainCounts(_ bytes: UnsafeBufferPointer<UInt8>) -> [Int]? {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else {
            return nil
        }
        if bytes.count == 2 { return [] }
        var counts: [Int] = []
        counts.reserveCapacity(bytes.count / 2)
        var value = 0
        var digits = 0
        for byte in bytes[1..<(bytes.count - 1)] {
            if byte == UInt8(ascii: ",") {
                guard digits > 0 else { return nil }
                counts.append(value)
                value = 0
                digits = 0
            } else {
                guard (0x30...0x39).contains(byte), digits < 18 else { return nil }
                value = value * 10 + Int(byte - 0x30)
                digits += 1
            }
        }
        guard digits > 0 else { return nil }
        counts.append(value)
        return counts
    }

    /// Whether an unquoted element is the word NULL, in any case (`array_out` writes it upper).
    private static func isNULL(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard bytes.count == 4 else { return false }
        return zip(bytes, "NULL".utf8).allSatisfy { $0 & 0xDF == $1 }
    }
}
