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
    package enum LineDecoder {
        /// The record, or nil to fall back on `JSONDecoder`.
        package static func decode(_ bytes: [UInt8]) -> Record? {
            bytes.withUnsafeBufferPointer { buffer in
                var scanner = Scanner(bytes: buffer)
                guard let members = scanner.object(nested: true), scanner.atEnd() else { return nil }
                return record(members)
            }
        }

        private enum Value {
            case string(String)
            case null
            case object([(Key, Value)])
        }

        /// The members a line may have: the card's, then the customer object's (a name that is
        /// not one of them ends the short way).
        private enum Key: Int {
            case cardId, customerId, accountNumber, expiration, cardholderName, paymentNetwork, status,
                localizedDescription
            case country, customer, phoneNumber, email, phoneChangedAt, emailChangedAt, addressChangedAt

            static let names: [(name: [UInt8], key: Key)] = {
                let pairs: [(String, Key)] = [
                    ("cardId", .cardId), ("customerId", .customerId), ("accountNumber", .accountNumber),
                    ("expiration", .expiration),
                    ("cardholderName", .cardholderName), ("paymentNetwork", .paymentNetwork), ("status", .status),
                    ("localizedDescription", .localizedDescription), ("country", .country), ("customer", .customer),
                    ("phoneNumber", .phoneNumber), ("email", .email), ("phoneChangedAt", .phoneChangedAt),
                    ("emailChangedAt", .emailChangedAt), ("addressChangedAt", .addressChangedAt),
                ]
                return pairs.map { (Array($0.0.utf8), $0.1) }
            }()

            init?(_ bytes: UnsafeBufferPointer<UInt8>) {
                guard let match = Key.names.first(where: { $0.name.elementsEqual(bytes) }) else { return nil }
                self = match.key
            }
        }

        /// The keys of each object, as bits `1 << rawValue`.
        private static let cardKeys: UInt32 = 0b11_1111_1111
        private static let customerKeys: UInt32 = 0b111_1100_0000_0010

        private static func record(_ members: [(Key, Value)]) -> Record? {
            guard let values = table(members, allowed: cardKeys) else { return nil }
            // Required members: present and strings (null or absent is JSONDecoder's error to word).
            guard case .string(let customerId)? = values[Key.customerId.rawValue],
                case .string(let accountNumber)? = values[Key.accountNumber.rawValue],
                case .string(let expiration)? = values[Key.expiration.rawValue],
                case .string(let cardholderName)? = values[Key.cardholderName.rawValue],
                case .string(let paymentNetwork)? = values[Key.paymentNetwork.rawValue]
            else { return nil }
            guard let cardId = optional(values[Key.cardId.rawValue]),
                let status = optional(values[Key.status.rawValue]),
                let localizedDescription = optional(values[Key.localizedDescription.rawValue]),
                let country = optional(values[Key.country.rawValue])
            else { return nil }
            var customer: CustomerFields?
            switch values[Key.customer.rawValue] {
            case nil, .null?: customer = nil
            case .object(let inner)?:
                guard let fields = table(inner, allowed: customerKeys) else { return nil }
                guard let id = optional(fields[Key.customerId.rawValue]),
                    let phone = optional(fields[Key.phoneNumber.rawValue]),
                    let email = optional(fields[Key.email.rawValue]),
                    let phoneAt = optional(fields[Key.phoneChangedAt.rawValue]),
                    let emailAt = optional(fields[Key.emailChangedAt.rawValue]),
                    let addressAt = optional(fields[Key.addressChangedAt.rawValue])
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

        /// The members by key (indexed by `Key.rawValue`); nil for a key not allowed here or repeated.
        private static func table(_ members: [(Key, Value)], allowed: UInt32) -> [Value?]? {
            var values = [Value?](repeating: nil, count: Key.names.count)
            for (key, value) in members {
                guard allowed & (1 << key.rawValue) != 0, values[key.rawValue] == nil else { return nil }
                values[key.rawValue] = value
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
                while index < bytes.count,
                    bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D
                {
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
            mutating func object(nested: Bool) -> [(Key, Value)]? {
                guard consume(0x7B) else { return nil }
                var members: [(Key, Value)] = []
                members.reserveCapacity(10)
                if consume(0x7D) { return members }
                repeat {
                    guard let key = key(), consume(0x3A) else { return nil }
                    skipWhitespace()
                    guard index < bytes.count else { return nil }
                    switch bytes[index] {
                    case 0x22:
                        guard let text = string() else { return nil }
                        members.append((key, .string(text)))
                    case 0x6E:  // null
                        guard index + 4 <= bytes.count, bytes[index + 1] == 0x75, bytes[index + 2] == 0x6C,
                            bytes[index + 3] == 0x6C
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

            /// A member's name, if it is one a line may have.
            mutating func key() -> Key? {
                guard consume(0x22) else { return nil }
                let start = index
                while index < bytes.count, bytes[index] != 0x22 {
                    if bytes[index] == 0x5C || bytes[index] < 0x20 { return nil }
                    index += 1
                }
                guard index < bytes.count else { return nil }
                defer { index += 1 }
                return Key(UnsafeBufferPointer(rebasing: bytes[start..<index]))
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
