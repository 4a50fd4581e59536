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
    /// each of a backtest's rows).
    static func members(of bytes: UnsafeBufferPointer<UInt8>, keys: KeySet, into found: inout [StoredJSON?]) -> Bool {
        if found.count != keys.count { found = [StoredJSON?](repeating: nil, count: keys.count) }
        for index in found.indices { found[index] = nil }
        var parser = JSONTreeParser<StoredJSON>(bytes: bytes)
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

extension StoredJSON: JSONTree {
    static var jsonNull: StoredJSON { .null }
    static func jsonBool(_ flag: Bool) -> StoredJSON { .bool(flag) }
    /// Every number is a Double here, as `JSONDecoder` into this type gives it.
    static func jsonNumber(integer: Int64?, double: Double) -> StoredJSON { .number(double) }
    static func jsonString(_ text: String) -> StoredJSON { .string(text) }
    static func jsonArray(_ items: [StoredJSON]) -> StoredJSON { .array(items) }
    static func jsonObject(_ members: [String: StoredJSON]) -> StoredJSON { .object(members) }
}
