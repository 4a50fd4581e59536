import IssuerdWire

extension CardImport {
    /// Decodes the lines a bulk file is made of (flat objects of strings, an optional `customer`
    /// object of strings) without Foundation's `JSONDecoder`, which cost half of the import's
    /// CPU per card. Anything outside that plain shape (a backslash escape, a number, an unknown
    /// or repeated key, a missing required member, text after the object, bytes that are not
    /// UTF-8) is not decoded here: the caller then decodes the line with the API's decoder,
    /// which accepts it or names what is wrong exactly as the API would.
    ///
    /// So whenever this returns a record, it is the one `JSONDecoder` makes of the same bytes
    /// (RFC 8259: whitespace between tokens, strings of unescaped characters from U+0020).
    enum LineDecoder {
        /// The record, or nil to fall back on `JSONDecoder`.
        static func decode(_ bytes: [UInt8]) -> Record? {
            bytes.withUnsafeBufferPointer { buffer in
                var scanner = Scanner(bytes: buffer)
                guard let members = scanner.object(nested: true), scanner.atEnd() else { return nil }
                return record(members)
            }
        }

        private enum Value {
            case string(String)
            case null
            case object([(String, Value)])
        }

        private static let cardKeys: Set<String> = [
            "cardId", "customerId", "accountNumber", "expiration", "cardholderName", "paymentNetwork", "status",
            "localizedDescription", "country", "customer",
        ]
        private static let customerKeys: Set<String> = [
            "customerId", "phoneNumber", "email", "phoneChangedAt", "emailChangedAt", "addressChangedAt",
        ]

        private static func record(_ members: [(String, Value)]) -> Record? {
            guard let values = dictionary(members, allowed: cardKeys) else { return nil }
            // Required members: present and strings (null or absent is JSONDecoder's error to word).
            guard case .string(let customerId)? = values["customerId"], case .string(let accountNumber)? = values["accountNumber"],
                case .string(let expiration)? = values["expiration"], case .string(let cardholderName)? = values["cardholderName"],
                case .string(let paymentNetwork)? = values["paymentNetwork"]
            else { return nil }
            guard let cardId = optional(values["cardId"]), let status = optional(values["status"]),
                let localizedDescription = optional(values["localizedDescription"]), let country = optional(values["country"])
            else { return nil }
            var customer: CustomerFields?
            switch values["customer"] {
            case nil, .null?: customer = nil
            case .object(let inner)?:
                guard let fields = dictionary(inner, allowed: customerKeys) else { return nil }
                guard let id = optional(fields["customerId"]), let phone = optional(fields["phoneNumber"]),
                    let email = optional(fields["email"]), let phoneAt = optional(fields["phoneChangedAt"]),
                    let emailAt = optional(fields["emailChangedAt"]), let addressAt = optional(fields["addressChangedAt"])
                else { return nil }
                customer = CustomerFields(
                    customerId: id, phoneNumber: phone, email: email, phoneChangedAt: phoneAt, emailChangedAt: emailAt,
                    addressChangedAt: addressAt)
            case .string?: return nil
            }
            return Record(
                card: CardCreateRequest(
                    cardId: cardId, customerId: customerId, accountNumber: accountNumber, expiration: expiration,
                    cardholderName: cardholderName, paymentNetwork: paymentNetwork, status: status,
                    localizedDescription: localizedDescription, country: country),
                customer: customer)
        }

        /// The members by key; nil for an unknown or repeated key.
        private static func dictionary(_ members: [(String, Value)], allowed: Set<String>) -> [String: Value]? {
            var values: [String: Value] = [:]
            for (key, value) in members {
                guard allowed.contains(key), values.updateValue(value, forKey: key) == nil else { return nil }
            }
            return values
        }

        /// An optional string member: `.some(nil)` when absent or null, nil (fall back) for an object.
        private static func optional(_ value: Value?) -> String?? {
            switch value {
            case nil, .null?: return .some(nil)
            case .string(let text)?: return .some(text)
            case .object?: return nil
            }
        }

        private struct Scanner {
            let bytes: UnsafeBufferPointer<UInt8>
            var index = 0

            init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

            mutating func skipWhitespace() {
                while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                    index += 1
                }
            }

            mutating func atEnd() -> Bool {
                skipWhitespace()
                return index == bytes.count
            }

            mutating func consume(_ byte: UInt8) -> Bool {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == byte else { return false }
                index += 1
                return true
            }

            /// `{ "key": value, … }`; values are strings, null, or (when `nested`) one level of object.
            mutating func object(nested: Bool) -> [(String, Value)]? {
                guard consume(0x7B) else { return nil }
                var members: [(String, Value)] = []
                if consume(0x7D) { return members }
                repeat {
                    guard let key = string(), consume(0x3A) else { return nil }
                    skipWhitespace()
                    guard index < bytes.count else { return nil }
                    switch bytes[index] {
                    case 0x22:
                        guard let text = string() else { return nil }
                        members.append((key, .string(text)))
                    case 0x6E:  // null
                        guard index + 4 <= bytes.count, bytes[index + 1] == 0x75, bytes[index + 2] == 0x6C, bytes[index + 3] == 0x6C
                        else { return nil }
                        index += 4
                        members.append((key, .null))
                    case 0x7B where nested:
                        guard let inner = object(nested: false) else { return nil }
                        members.append((key, .object(inner)))
                    default: return nil
                    }
                } while consume(0x2C)
                return consume(0x7D) ? members : nil
            }

            /// A string without escapes or control characters, in valid UTF-8.
            mutating func string() -> String? {
                guard consume(0x22) else { return nil }
                let start = index
                var ascii = true
                while index < bytes.count {
                    let byte = bytes[index]
                    if byte == 0x22 {
                        let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                        index += 1
                        return ascii ? String(decoding: slice, as: UTF8.self) : String(validating: slice, as: UTF8.self)
                    }
                    if byte == 0x5C || byte < 0x20 { return nil }
                    if byte >= 0x80 { ascii = false }
                    index += 1
                }
                return nil
            }
        }
    }
}
