/// Splits a file into tokens, with positions; `#` starts a comment to the end of the line.
struct Lexer {
    private let bytes: [UInt8]
    private let file: String
    private var index = 0
    private var line = 1
    private var column = 1

    /// The largest file accepted; rule files are small and this bounds work on bad input.
    static let maximumFileSize = 4 << 20

    init(file: String, text: String) {
        self.file = file
        self.bytes = Array(text.utf8)
    }

    /// Every token, ending with `.end`.
    ///
    /// - Throws: A ``RuleDiagnostic`` at the first character that starts no token.
    static func tokenize(file: String, text: String) throws(RuleDiagnostic) -> [Token] {
        guard text.utf8.count <= maximumFileSize else {
            throw RuleDiagnostic(
                SourceLocation(file: file, line: 1, column: 1), "file is larger than \(maximumFileSize >> 20) MiB")
        }
        var lexer = Lexer(file: file, text: text)
        var tokens: [Token] = []
        while true {
            let start = lexer.index
            let location = lexer.location
            let token: Token
            do {
                token = try lexer.next()
            } catch {
                token = Token(kind: .invalid(error), location: location)
                // Skip the rest of the offending word so lexing resumes at the next token.
                if lexer.index == start { lexer.advance() }
                while let byte = lexer.peek(), isWordPart(byte) { lexer.advance() }
            }
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private var location: SourceLocation { SourceLocation(file: file, line: line, column: column) }

    private func peek(_ offset: Int = 0) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    private mutating func advance() {
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    private static func isWordStart(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || byte == UInt8(ascii: "_")
    }

    private static func isWordPart(_ byte: UInt8) -> Bool {
        isWordStart(byte) || isDigit(byte) || byte == UInt8(ascii: ".")
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private mutating func next() throws(RuleDiagnostic) -> Token {
        while let byte = peek() {
            if byte == UInt8(ascii: "#") {
                while let inner = peek(), inner != UInt8(ascii: "\n") { advance() }
            } else if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                advance()
            } else {
                break
            }
        }
        let start = location
        guard let byte = peek() else { return Token(kind: .end, location: start) }
        if Self.isWordStart(byte) {
            return Token(kind: .word(readWord()), location: start)
        }
        if Self.isDigit(byte) {
            return try readNumber(start)
        }
        if byte == UInt8(ascii: "\"") {
            return try readString(start)
        }
        if byte == UInt8(ascii: "@") {
            advance()
            guard let first = peek(), Self.isWordStart(first) else {
                throw RuleDiagnostic(
                    start, "'@' must be followed by a list name", expected: "a list name such as @blocked_devices")
            }
            return Token(kind: .listReference(readWord()), location: start)
        }
        let two = peek(1).map { String(decoding: [byte, $0], as: UTF8.self) }
        if let two, let symbol = Token.Symbol(rawValue: two), two.count == 2 {
            advance()
            advance()
            return Token(kind: .symbol(symbol), location: start)
        }
        if let symbol = Token.Symbol(rawValue: String(decoding: [byte], as: UTF8.self)) {
            advance()
            return Token(kind: .symbol(symbol), location: start)
        }
        // Other languages' logical operators: the rule language spells them as words.
        if byte == UInt8(ascii: "&") || byte == UInt8(ascii: "|") {
            let word = byte == UInt8(ascii: "&") ? "and" : "or"
            let written = peek(1) == byte ? String(decoding: [byte, byte], as: UTF8.self) : String(UnicodeScalar(byte))
            throw RuleDiagnostic(
                start, "'\(written)' is not an operator", expected: "'\(word)' to join conditions", suggestion: word)
        }
        let shown = byte < 0x80 ? String(UnicodeScalar(byte)) : "non-ASCII character"
        throw RuleDiagnostic(start, "unexpected character '\(shown)'")
    }

    private mutating func readWord() -> String {
        let begin = index
        while let byte = peek(), Self.isWordPart(byte) { advance() }
        return String(decoding: bytes[begin..<index], as: UTF8.self)
    }

    private mutating func readNumber(_ start: SourceLocation) throws(RuleDiagnostic) -> Token {
        let begin = index
        while let byte = peek(), Self.isDigit(byte) || byte == UInt8(ascii: "_") { advance() }
        if peek() == UInt8(ascii: "."), let after = peek(1), Self.isDigit(after) {
            advance()
            while let byte = peek(), Self.isDigit(byte) { advance() }
        }
        let text = String(decoding: bytes[begin..<index].filter { $0 != UInt8(ascii: "_") }, as: UTF8.self)
        guard text.count <= 18, let value = Double(text) else {
            throw RuleDiagnostic(start, "number '\(text)' is out of range")
        }
        guard let unitByte = peek(), Self.isWordStart(unitByte) else {
            return Token(kind: .number(value), location: start)
        }
        let unitLocation = location
        let unit = readWord()
        let scale: Double
        switch unit {
        case "s": scale = 1
        case "m": scale = 60
        case "h": scale = 3_600
        case "d": scale = 86_400
        default:
            throw RuleDiagnostic(
                unitLocation, "unknown duration unit '\(unit)'", expected: "s, m, h or d (as in 30m, 24h, 14d)",
                suggestion: nil)
        }
        return Token(kind: .duration(value * scale), location: start)
    }

    private mutating func readString(_ start: SourceLocation) throws(RuleDiagnostic) -> Token {
        advance()
        var scalars: [UInt8] = []
        while let byte = peek() {
            if byte == UInt8(ascii: "\n") { break }
            advance()
            if byte == UInt8(ascii: "\"") {
                return Token(kind: .string(String(decoding: scalars, as: UTF8.self)), location: start)
            }
            if byte == UInt8(ascii: "\\"), let escaped = peek(),
                escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\")
            {
                advance()
                scalars.append(escaped)
                continue
            }
            scalars.append(byte)
        }
        throw RuleDiagnostic(start, "string is not closed on this line", expected: "a closing '\"'")
    }
}
