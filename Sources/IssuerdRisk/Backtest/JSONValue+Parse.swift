import Foundation

extension JSONValue {
    /// Parses JSON text (RFC 8259) in one pass over its UTF-8 bytes, or by `JSONDecoder` when the
    /// fast pass declines it (nesting deeper than 64, a lone surrogate, anything malformed).
    ///
    /// The backtest parses two small objects per stored attempt (`inputs`, `features`);
    /// `JSONDecoder` into ``JSONValue`` costs tens of microseconds each (every `try?` in
    /// `init(from:)` that fails builds an error), which over a day's 33,000 attempts was most
    /// of the replay. Values are the ones `JSONDecoder` gives (``JSONValueParseTests``).
    ///
    /// - Returns: The value, or nil when the text is not JSON.
    static func parse(_ text: String) -> JSONValue? {
        var copy = text
        return copy.withUTF8 { parse(bytes: $0) }
    }

    /// ``parse(_:)`` over UTF-8 bytes (a stored document where libpq holds it).
    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var parser = FastJSONParser(bytes: bytes)
        if let value = parser.value(depth: 0) {
            parser.skipWhitespace()
            if parser.position == bytes.count { return value }
        }
        return try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: bytes))
    }
}

extension JSONValue {
    /// Member names to look up, bucketed by length once (a backtest looks up every member of
    /// every row: a scan of all the names per member was a third of a row's parse).
    struct KeySet: Sendable {
        /// How many keys (``members(of:keys:into:)`` gives one entry each).
        let count: Int
        /// By length, the distinct keys of that length with their first index.
        private let byLength: [[(bytes: [UInt8], index: Int)]]

        init(_ keys: [[UInt8]]) {
            count = keys.count
            var table = [[(bytes: [UInt8], index: Int)]](repeating: [], count: (keys.map(\.count).max() ?? 0) + 1)
            for (index, key) in keys.enumerated() where !table[key.count].contains(where: { $0.bytes == key }) {
                table[key.count].append((key, index))
            }
            byLength = table
        }

        /// The index of the first key equal to `key`, or nil.
        func index(of key: UnsafeBufferPointer<UInt8>) -> Int? {
            guard key.count < byLength.count else { return nil }
            for entry in byLength[key.count] {
                if key.count == 0 { return entry.index }
                let equal = entry.bytes.withUnsafeBufferPointer { candidate in memcmp(candidate.baseAddress!, key.baseAddress!, key.count) == 0 }
                if equal { return entry.index }
            }
            return nil
        }
    }

    /// The values of `keys` in the JSON object `bytes` into `found`, one entry per key (nil
    /// where absent; the last one of a repeated key), parsed as ``parse(_:)`` parses them, other
    /// members skipped unbuilt. False when `bytes` is not an object the fast pass takes (the
    /// caller then parses it whole; `found` holds nothing to use).
    ///
    /// The backtest's per-row objects are read this way: building every key as a `String` and
    /// hashing it into a dictionary was most of their parse. `found` is reused from one document
    /// to the next (an array per document was an allocation and a run-time metadata look-up for
    /// each of a backtest's rows).
    static func members(of bytes: UnsafeBufferPointer<UInt8>, keys: KeySet, into found: inout [JSONValue?]) -> Bool {
        if found.count != keys.count { found = [JSONValue?](repeating: nil, count: keys.count) }
        for index in found.indices { found[index] = nil }
        var parser = FastJSONParser(bytes: bytes)
        parser.skipWhitespace()
        guard parser.take(UInt8(ascii: "{")) else { return false }
        parser.skipWhitespace()
        if !parser.take(UInt8(ascii: "}")) {
            while true {
                parser.skipWhitespace()
                guard let key = parser.rawKey() else { return false }
                parser.skipWhitespace()
                guard parser.take(UInt8(ascii: ":")) else { return false }
                if let index = keys.index(of: key) {
                    guard let value = parser.value(depth: 1) else { return false }
                    found[index] = value
                } else {
                    guard parser.skipValue(depth: 1) else { return false }
                }
                parser.skipWhitespace()
                if parser.take(UInt8(ascii: ",")) { continue }
                guard parser.take(UInt8(ascii: "}")) else { return false }
                break
            }
        }
        parser.skipWhitespace()
        return parser.position == bytes.count
    }
}

/// The fast pass of ``JSONValue/parse(_:)``; nil anywhere means "let `JSONDecoder` decide".
private struct FastJSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// Consumes `byte` when it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// A member name without escapes, as its bytes (nil for one with escapes: the caller falls back).
    mutating func rawKey() -> UnsafeBufferPointer<UInt8>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return UnsafeBufferPointer(rebasing: bytes[start..<(position - 1)])
            }
            guard byte != UInt8(ascii: "\\"), byte >= 0x20 else { return nil }
            position += 1
        }
        return nil
    }

    /// Steps over one value, checking it as ``value(depth:)`` would, without building it.
    mutating func skipValue(depth: Int) -> Bool {
        guard depth < 64 else { return false }
        skipWhitespace()
        guard position < bytes.count else { return false }
        switch bytes[position] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = bytes[position] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            let isObject = close == UInt8(ascii: "}")
            position += 1
            skipWhitespace()
            if take(close) { return true }
            while true {
                if isObject {
                    skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), string() != nil else { return false }
                    skipWhitespace()
                    guard take(UInt8(ascii: ":")) else { return false }
                }
                guard skipValue(depth: depth + 1) else { return false }
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                return take(close)
            }
        default:
            return value(depth: depth) != nil
        }
    }

    mutating func value(depth: Int) -> JSONValue? {
        guard depth < 64 else { return nil }
        skipWhitespace()
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return .object(members) }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard take(UInt8(ascii: ":")), let member = value(depth: depth + 1) else { return nil }
                members[key] = member
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "}")) ? .object(members) : nil
            }
        case UInt8(ascii: "["):
            position += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return .array(items) }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "]")) ? .array(items) : nil
            }
        case UInt8(ascii: "\""):
            return string().map { .string($0) }
        case UInt8(ascii: "t"):
            return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"):
            return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"):
            return literal("null") ? .null : nil
        default:
            return number()
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for index in 0..<count where bytes[position + index] != word.utf8Start[index] { return false }
        position += count
        return true
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, converted as Foundation does (a Double).
    private mutating func number() -> JSONValue? {
        let start = position
        func digits() -> Int {
            let first = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            return position - first
        }
        let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let integerStart = position
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        // A plain integer of up to 15 digits (every velocity value, most attributes) is exact
        // as a Double: summed here, without a string for strtod (a few percent of a backtest).
        if integerDigits <= 15, position == bytes.count || (bytes[position] != UInt8(ascii: ".") && bytes[position] | 0x20 != UInt8(ascii: "e")) {
            var value: Int64 = 0
            for index in integerStart..<position { value = value * 10 + Int64(bytes[index] &- UInt8(ascii: "0")) }
            return .number(negative ? -Double(value) : Double(value))  // -0 stays -0.0, as strtod gives it
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { return nil }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { return nil }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else { return nil }
        return .number(number)
    }

    /// A string from its opening quote; escapes decoded, UTF-8 checked.
    private mutating func string() -> String? {
        position += 1
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                // Split at ASCII quotes, so no character is cut; bytes that are not UTF-8 are
                // repaired here (U+FFFD), as decoding the whole document first would.
                return String(decoding: raw, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                position = start
                return escapedString()
            }
            guard byte >= 0x20 else { return nil }
            position += 1
        }
        return nil
    }

    /// The slow path of ``string()``: a string with backslash escapes.
    private mutating func escapedString() -> String? {
        var utf8: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { return nil }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default: return nil
                }
            default:
                guard byte >= 0x20 else { return nil }
                utf8.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard position + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            position += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
