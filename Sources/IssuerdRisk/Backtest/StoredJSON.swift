/// A JSON value of a stored attempt's `inputs` or `features`, as the backtest reads them:
/// booleans, numbers and strings kept apart (which `JSONSerialization`'s `NSNumber` bridging does
/// not), and every number a `Double`, as a rule compares it (IssuerdCore's `JSONValue` keeps
/// integers apart for ids and counts that must round-trip).
enum StoredJSON: Decodable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([StoredJSON])
    case object([String: StoredJSON])

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
        } else if let items = try? container.decode([StoredJSON].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: StoredJSON].self))
        }
    }

    var bool: Bool? { if case .bool(let flag) = self { flag } else { nil } }
    var string: String? { if case .string(let text) = self { text } else { nil } }
    var object: [String: StoredJSON]? { if case .object(let fields) = self { fields } else { nil } }
}
