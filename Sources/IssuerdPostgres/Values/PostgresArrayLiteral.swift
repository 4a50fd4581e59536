/// Reads and writes one-dimensional array literals (`{a,"b c",NULL}`), PostgreSQL manual 8.15.6.
enum PostgresArrayLiteral {
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
    static func parse(_ text: String) throws(PostgresDecodingFailure) -> [String?] {
        var bytes = Array(text.utf8)[...]
        // Arrays whose lower bound is not 1 carry a "[lo:hi]=" decoration first.
        if bytes.first == UInt8(ascii: "[") {
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else {
                throw .malformed(reason: "bad array bounds")
            }
            bytes = bytes[(equals + 1)...]
        }
        guard bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else {
            throw .malformed(reason: "not an array literal")
        }
        let body = Array(bytes.dropFirst().dropLast())
        if body.isEmpty { return [] }

        var elements: [String?] = []
        var index = 0
        while true {
            guard index <= body.count else { throw .malformed(reason: "truncated array literal") }
            if index < body.count, body[index] == UInt8(ascii: "{") {
                throw .malformed(reason: "multi-dimensional arrays are not supported")
            }
            var element: [UInt8] = []
            var quoted = false
            if index < body.count, body[index] == UInt8(ascii: "\"") {
                quoted = true
                index += 1
                while true {
                    guard index < body.count else { throw .malformed(reason: "unterminated quoted array element") }
                    let byte = body[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == UInt8(ascii: "\\") {
                        guard index < body.count else { throw .malformed(reason: "dangling escape in array") }
                        element.append(body[index])
                        index += 1
                    } else {
                        element.append(byte)
                    }
                }
            } else {
                while index < body.count, body[index] != UInt8(ascii: ",") {
                    if body[index] == UInt8(ascii: "\\"), index + 1 < body.count { index += 1 }
                    element.append(body[index])
                    index += 1
                }
            }
            let string = String(decoding: element, as: UTF8.self)
            elements.append(!quoted && string.uppercased() == "NULL" ? nil : string)
            if index == body.count { return elements }
            guard body[index] == UInt8(ascii: ",") else { throw .malformed(reason: "unexpected character in array") }
            index += 1
        }
    }
}
