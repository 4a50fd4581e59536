import Foundation
import IssuerdCore

extension StoredJSON {
    /// Parses JSON text (RFC 8259) in one pass over its UTF-8 bytes, or by `JSONDecoder` when the
    /// fast pass declines it (nesting deeper than 64, a lone surrogate, anything malformed).
    ///
    /// The backtest parses two small objects per stored attempt (`inputs`, `features`);
    /// `JSONDecoder` into ``StoredJSON`` costs tens of microseconds each (every `try?` in
    /// `init(from:)` that fails builds an error), which over a day's 33,000 attempts was most
    /// of the replay. Values are the ones `JSONDecoder` gives (``StoredJSONParseTests``).
    ///
    /// - Returns: The value, or nil when the text is not JSON.
    static func parse(_ text: String) -> StoredJSON? {
        var copy = text
        return copy.withUTF8 { parse(bytes: $0) }
    }

    /// ``parse(_:)`` over UTF-8 bytes (a stored document where libpq holds it).
    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> StoredJSON? {
        if let value = JSONTreeParser<StoredJSON>.parse(bytes) { return value }
        return try? JSONDecoder().decode(StoredJSON.self, from: Data(buffer: bytes))
    }
}

extension StoredJSON {
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
                let equal = entry.bytes.withUnsafeBufferPointer { candidate in
                    memcmp(candidate.baseAddress!, key.baseAddress!, key.count) == 0
                }
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
    /// each of a backtest's rows). The object, its names and its scalar values are read by
    /// ``StoredObjectScanner`` (the generic parser only for a nested value, an escaped or
    /// non-ASCII string, a number that is not a short integer).
    static func members(of bytes: UnsafeBufferPointer<UInt8>, keys: KeySet, into found: inout [StoredJSON?]) -> Bool {
        if found.count != keys.count { found = [StoredJSON?](repeating: nil, count: keys.count) }
        for index in found.indices { found[index] = nil }
        var scanner = StoredObjectScanner(bytes: bytes)
        return scanner.members(keys: keys) { index, scanner in
            guard let value = scanner.value() else { return false }
            found[index] = value
            return true
        }
    }

    /// The recorded counts of `keys` in the JSON object `bytes` into `counts`, one entry per key
    /// (nil where absent or not a count: see ``count(_:)``), as ``members(of:keys:into:)`` and
    /// ``count(_:)`` of each value give them, without building a value for a short integer. False
    /// when ``members(of:keys:into:)`` would be false.
    static func counts(of bytes: UnsafeBufferPointer<UInt8>, keys: KeySet, into counts: inout [Int?]) -> Bool {
        if counts.count != keys.count { counts = [Int?](repeating: nil, count: keys.count) }
        for index in counts.indices { counts[index] = nil }
        var scanner = StoredObjectScanner(bytes: bytes)
        return scanner.members(keys: keys) { index, scanner in
            if let integer = scanner.plainInteger() {
                counts[index] = Int(integer)
                return true
            }
            guard let value = scanner.value() else { return false }
            counts[index] = count(value)
            return true
        }
    }

    /// A recorded value as a count: a whole number below 10^15 in magnitude, or nil.
    static func count(_ value: StoredJSON?) -> Int? {
        guard case .number(let number)? = value, number.isFinite, number.rounded() == number, abs(number) < 1e15 else {
            return nil
        }
        return Int(number)
    }
}

/// A stored attempt's flat JSON object (`inputs`, `features`) read in one pass without the
/// generic parser for what such documents hold: member names without escapes, ASCII strings
/// without escapes, integers of up to 15 digits, `true`, `false`, `null`. Anything else (a nested
/// object or array, an escape, a non-ASCII or invalid byte, a fraction, an exponent, a longer
/// integer) is handed to ``JSONTreeParser`` at that value, so every value and every refusal is
/// the generic parser's (``StoredObjectScannerTests`` compares the two on every stored shape).
///
/// `JSONTreeParser<StoredJSON>` lives in IssuerdCore and runs unspecialised here (a run-time
/// metadata look-up and a witness call per value): over a quarter's 9,000,000 attempts that,
/// and building a ``StoredJSON`` for each recorded count, was most of the parse.
struct StoredObjectScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Walks the object's members: `member(index, &self)` reads the value of each member whose
    /// name is one of `keys` (and returns false when it does not parse), the others are skipped.
    /// False when the text is not one object that the generic parser's members pass takes.
    mutating func members(keys: StoredJSON.KeySet, member: (Int, inout StoredObjectScanner) -> Bool) -> Bool {
        skipWhitespace()
        guard take(UInt8(ascii: "{")) else { return false }
        skipWhitespace()
        if !take(UInt8(ascii: "}")) {
            while true {
                skipWhitespace()
                guard let key = rawKey() else { return false }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return false }
                skipWhitespace()
                if let index = keys.index(of: key) {
                    guard member(index, &self) else { return false }
                } else {
                    guard skipValue() else { return false }
                }
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return false }
                break
            }
        }
        skipWhitespace()
        return position == bytes.count
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

    /// A member name without escapes, as its bytes (nil otherwise, as ``JSONTreeParser/rawKey()``).
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

    /// The integer at the position when it is one of up to 15 digits (no fraction, no exponent),
    /// consumed; nil with nothing consumed otherwise. Its Double is exact, so it is the value the
    /// generic parser gives (`-0` is 0).
    mutating func plainInteger() -> Int64? {
        var index = position
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let first = index
        var value: Int64 = 0
        while index < bytes.count, index - first < 16, bytes[index] &- UInt8(ascii: "0") < 10 {
            value = value * 10 + Int64(bytes[index] &- UInt8(ascii: "0"))
            index += 1
        }
        let digits = index - first
        guard digits > 0, digits <= 15, digits == 1 || bytes[first] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count {
            let next = bytes[index]
            guard next != UInt8(ascii: "."), next | 0x20 != UInt8(ascii: "e"), next &- UInt8(ascii: "0") >= 10 else {
                return nil
            }
        }
        position = index
        return negative ? -value : value
    }

    /// The value at the position (whitespace skipped before), as ``JSONTreeParser/value(depth:)``
    /// at depth 1 gives it; nil where that is nil.
    mutating func value() -> StoredJSON? {
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "\""):
            if let text = plainString() { return .string(text) }
        case UInt8(ascii: "t"):
            if literal("true") { return .bool(true) }
        case UInt8(ascii: "f"):
            if literal("false") { return .bool(false) }
        case UInt8(ascii: "n"):
            if literal("null") { return .null }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let negative = bytes[position] == UInt8(ascii: "-")
            // -0 stays -0.0, as the generic parser gives it
            if let integer = plainInteger() { return .number(negative ? -Double(-integer) : Double(integer)) }
        default:
            break
        }
        var parser = JSONTreeParser<StoredJSON>(bytes: bytes)
        parser.position = position
        let value = parser.value(depth: 1)
        position = parser.position
        return value
    }

    /// Steps over the value at the position, as ``JSONTreeParser/skipValue(depth:)`` at depth 1.
    mutating func skipValue() -> Bool {
        guard position < bytes.count else { return false }
        switch bytes[position] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var parser = JSONTreeParser<StoredJSON>(bytes: bytes)
            parser.position = position
            let skipped = parser.skipValue(depth: 1)
            position = parser.position
            return skipped
        default:
            return value() != nil
        }
    }

    /// A string of ASCII bytes without escapes, consumed; nil with nothing consumed otherwise
    /// (the generic parser then reads it, or refuses it).
    private mutating func plainString() -> String? {
        var index = position + 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[(position + 1)..<index]), as: UTF8.self)
                position = index + 1
                return text
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// Consumes `word` when it is next (else nothing: the generic parser refuses it).
    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for index in 0..<count where bytes[position + index] != word.utf8Start[index] { return false }
        position += count
        return true
    }
}

extension StoredJSON: JSONTree {
    static var jsonNull: StoredJSON { .null }
    static func jsonBool(_ flag: Bool) -> StoredJSON { .bool(flag) }
    /// Every number is a Double here, as `JSONDecoder` into this type gives it.
    static func jsonNumber(integer: Int64?, double: Double) -> StoredJSON { .number(double) }
    static func jsonString(_ text: String) -> StoredJSON { .string(text) }
    static func jsonArray(_ items: [StoredJSON]) -> StoredJSON { .array(items) }
    static func jsonObject(_ members: [String: StoredJSON]) -> StoredJSON { .object(members) }
}
