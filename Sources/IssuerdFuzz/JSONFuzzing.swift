import Foundation
import IssuerdCore

/// IssuerdCore's one-pass JSON parser, under every fast path (request bodies, app token claims,
/// stored attempts). Its contract: what it accepts, `JSONDecoder` accepts too and reads as the
/// same value; what it declines is left to `JSONDecoder`. And its `skipValue` steps over what
/// `value` reads, to the same place (the backtest skips the members it does not read).
enum JSONFuzzing {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let parsed = bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONTreeParser<Tree>(bytes: buffer)
            let value = parser.value(depth: 0)
            var skipper = JSONTreeParser<Tree>(bytes: buffer)
            let skipped = skipper.skipValue(depth: 0)
            return (
                tree: JSONTreeParser<Tree>.parse(buffer), value: value, valueEnd: parser.position, skipped: skipped,
                skipEnd: skipper.position
            )
        }
        if parsed.tree != nil, parsed.value == nil {
            throw FuzzFailure("parse accepts what value(depth:) refuses")
        }
        // skipValue does not look for repeated member names (value declines them), so it may
        // step over more than value reads, never less, and never to elsewhere.
        if parsed.value != nil, !parsed.skipped {
            throw FuzzFailure("skipValue refuses what value(depth:) reads")
        }
        if parsed.value != nil, parsed.skipEnd != parsed.valueEnd {
            throw FuzzFailure("skipValue ends at \(parsed.skipEnd), value(depth:) at \(parsed.valueEnd)")
        }
        guard let tree = parsed.tree else { return }
        let reference: Tree
        do {
            reference = try JSONDecoder().decode(Tree.self, from: Data(bytes))
        } catch {
            throw FuzzFailure("the fast parser reads \(tree) where JSONDecoder refuses the text: \(error)")
        }
        guard tree.same(as: reference) else {
            throw FuzzFailure("the fast parser reads \(tree), JSONDecoder \(reference)")
        }
    }

    /// A JSON value as the backtest keeps it (every number a Double, as `JSONDecoder` gives it
    /// into such a type), built by either parser.
    indirect enum Tree: JSONTree, Decodable, CustomStringConvertible {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([Tree])
        case object([String: Tree])

        static var jsonNull: Tree { .null }
        static func jsonBool(_ flag: Bool) -> Tree { .bool(flag) }
        static func jsonNumber(integer: Int64?, double: Double) -> Tree {
            // The integer, when there is one, must be the text's value and agree with the Double.
            if let integer, integer.magnitude < 1 << 53, Double(integer) != double {
                return .string("<integer \(integer) read as \(double)>")
            }
            return .number(double)
        }
        static func jsonString(_ text: String) -> Tree { .string(text) }
        static func jsonArray(_ items: [Tree]) -> Tree { .array(items) }
        static func jsonObject(_ members: [String: Tree]) -> Tree { .object(members) }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let flag = try? container.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else if let items = try? container.decode([Tree].self) {
                self = .array(items)
            } else {
                self = .object(try container.decode([String: Tree].self))
            }
        }

        /// Equal, numbers bit for bit (so -0 and 0 differ) and strings scalar for scalar
        /// (`==` on String compares canonical equivalence, which would hide a changed byte).
        func same(as other: Tree) -> Bool {
            switch (self, other) {
            case (.null, .null): true
            case (.bool(let a), .bool(let b)): a == b
            case (.number(let a), .number(let b)): a.bitPattern == b.bitPattern
            case (.string(let a), .string(let b)): a.unicodeScalars.elementsEqual(b.unicodeScalars)
            case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.same(as: $1) }
            case (.object(let a), .object(let b)):
                a.count == b.count
                    && a.allSatisfy { key, value in
                        // Dictionary keys compare by canonical equivalence too: find the same scalars.
                        b.contains {
                            $0.key.unicodeScalars.elementsEqual(key.unicodeScalars) && $0.value.same(as: value)
                        }
                    }
            default: false
            }
        }

        var description: String {
            switch self {
            case .null: "null"
            case .bool(let flag): "\(flag)"
            case .number(let number): "\(number)"
            case .string(let text): "\"" + text.unicodeScalars.map { $0.escaped(asASCII: true) }.joined() + "\""
            case .array(let items): "[" + items.map(\.description).joined(separator: ",") + "]"
            case .object(let members):
                "{"
                    + members.sorted { $0.key < $1.key }.map { "\(Tree.string($0.key)):\($0.value)" }
                    .joined(separator: ",") + "}"
            }
        }
    }
}
