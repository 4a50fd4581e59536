/// A decoded JSON value, keeping booleans, numbers and strings apart (which
/// `JSONSerialization`'s `NSNumber` bridging does not).
enum JSONValue: Decodable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

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
        } else if let items = try? container.decode([JSONValue].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    var bool: Bool? { if case .bool(let flag) = self { flag } else { nil } }
    var string: String? { if case .string(let text) = self { text } else { nil } }
    var object: [String: JSONValue]? { if case .object(let fields) = self { fields } else { nil } }
}
