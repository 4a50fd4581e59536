import Glibc

/// A JSON value type the one-pass parser can build: the risk engine's stored-attempt values and
/// the documents of the API (`JSONValue`) each have their own, parsed by the same code.
package protocol JSONTree {
    static var jsonNull: Self { get }
    static func jsonBool(_ flag: Bool) -> Self
    /// A number: `integer` is its value when the text is an integer (no fraction or exponent)
    /// that fits 64 bits; `double` is always its nearest Double, as `strtod` gives it.
    static func jsonNumber(integer: Int64?, double: Double) -> Self
    static func jsonString(_ text: String) -> Self
    static func jsonArray(_ items: [Self]) -> Self
    static func jsonObject(_ members: [String: Self]) -> Self
}

/// JSON text (RFC 8259) parsed in one pass over its UTF-8 bytes into any ``JSONTree``.
///
/// `JSONDecoder` and `JSONSerialization` cost tens of microseconds for a small document (an
/// app token's claims, a provisioning body, a stored attempt's inputs); this builds the tree
/// directly. It declines (nil) rather than decide anything it does not take: nesting deeper
/// than 64, a lone surrogate, a member name repeated in an object, a number that is not zero but
/// too small for a Double, a zero with an exponent, malformed text (and the leniencies `JSONDecoder` allows, such as a
/// trailing comma). Callers fall back to Foundation there, so that
/// what is accepted and every error stay Foundation's (``StoredJSONParseTests``). A string
/// holding bytes that are not UTF-8 is declined too.
package struct JSONTreeParser<Tree: JSONTree> {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var position = 0

    package init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The whole text as one value, nil when it is not one (or is declined).
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Tree? {
        var parser = JSONTreeParser(bytes: bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.position == bytes.count ? value : nil
    }

    package mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// Consumes `byte` when it is next.
    package mutating func take(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// A member name without escapes, as its bytes (nil for one with escapes: the caller falls back).
    package mutating func rawKey() -> UnsafeBufferPointer<UInt8>? {
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
    package mutating func skipValue(depth: Int) -> Bool {
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
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), string() != nil else {
                        return false
                    }
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

    package mutating func value(depth: Int) -> Tree? {
        guard depth < 64 else { return nil }
        skipWhitespace()
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return .jsonObject([:]) }
            // The members are gathered first and the dictionary made at its final size: grown
            // member by member, it rehashed every key at each doubling.
            var pairs: [(key: String, value: Tree)] = []
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let key = string() else {
                    return nil
                }
                skipWhitespace()
                guard take(UInt8(ascii: ":")), let member = value(depth: depth + 1) else { return nil }
                pairs.append((key, member))
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return nil }
                var members = [String: Tree](minimumCapacity: pairs.count)
                for (key, member) in pairs {
                    // A repeated name: Foundation keeps the first, and may refuse the document
                    // for it; declined, so that the caller's fallback decides.
                    guard members.updateValue(member, forKey: key) == nil else { return nil }
                }
                return .jsonObject(members)
            }
        case UInt8(ascii: "["):
            position += 1
            var items: [Tree] = []
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return .jsonArray(items) }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "]")) ? .jsonArray(items) : nil
            }
        case UInt8(ascii: "\""):
            return string().map { .jsonString($0) }
        case UInt8(ascii: "t"):
            return literal("true") ? .jsonBool(true) : nil
        case UInt8(ascii: "f"):
            return literal("false") ? .jsonBool(false) : nil
        case UInt8(ascii: "n"):
            return literal("null") ? .jsonNull : nil
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

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, its Double as Foundation converts it.
    private mutating func number() -> Tree? {
        let start = position
        func digits() -> Int {
            let first = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return position - first
        }
        let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let integerStart = position
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        let isInteger =
            position == bytes.count
            || (bytes[position] != UInt8(ascii: ".") && bytes[position] | 0x20 != UInt8(ascii: "e"))
        // A plain integer of up to 15 digits (every velocity value, most attributes, token
        // times) is exact as a Double: summed here, without a string for strtod.
        if integerDigits <= 15, isInteger {
            var value: Int64 = 0
            for index in integerStart..<position { value = value * 10 + Int64(bytes[index] &- UInt8(ascii: "0")) }
            // -0 stays -0.0
            return .jsonNumber(integer: negative ? -value : value, double: negative ? -Double(value) : Double(value))
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { return nil }
        }
        let mantissaEnd = position
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { return nil }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else { return nil }
        // A zero from strtod is declined where `JSONDecoder` may refuse it as a Double, so that the
        // caller's fallback decides: a number too small for a Double (1e-400, which it reads as the
        // Int 0), and any zero with an exponent (its zero check reads the last bytes out of order,
        // so it refuses 0e5 and 0.00e2 but takes 0e+1 and 0e400).
        if number == 0,
            mantissaEnd != position
                || bytes[integerStart..<mantissaEnd].contains(where: {
                    (UInt8(ascii: "1")...UInt8(ascii: "9")).contains($0)
                })
        {
            return nil
        }
        return .jsonNumber(integer: isInteger ? Int64(text) : nil, double: number)
    }

    /// A string from its opening quote; escapes decoded, UTF-8 checked.
    package mutating func string() -> String? {
        position += 1
        let start = position
        // Every byte's bits together: below 0x80, the text is ASCII and needs no validating.
        var bits: UInt8 = 0
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                if bits < 0x80 { return String(decoding: raw, as: UTF8.self) }
                // Split at ASCII quotes, so no character is cut. Bytes that are not UTF-8 are
                // declined: Foundation refuses them (a provisioning body with one is a 400).
                return String(validating: raw, as: UTF8.self)
            }
            bits |= byte
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
                return String(validating: utf8, as: UTF8.self)
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
