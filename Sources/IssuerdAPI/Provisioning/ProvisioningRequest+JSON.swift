import IssuerdCore
import IssuerdHTTP
import IssuerdWire

extension ProvisioningRequest {
    /// The request read from a parsed body, or nil for anything its `Decodable` conformance
    /// would refuse or that this does not take (``HTTPRequest/decodeJSON(_:fast:)`` then lets
    /// `JSONDecoder` decode it and say what is wrong). Every request carries one: decoding it
    /// through `JSONDecoder` was 3–4 % of a provisioning request's CPU.
    package init?(json: JSONValue) {
        guard case .object(let members) = json,
            case .array(let items)? = members["certificates"],
            case .string(let nonce)? = members["nonce"],
            case .string(let nonceSignature)? = members["nonceSignature"]
        else { return nil }
        guard let certificates = JSONValue.strings(items),
            let encryptionScheme = JSONValue.optionalString(members["encryptionScheme"]),
            let channel = JSONValue.optionalString(members["channel"]),
            let device = JSONValue.optionalObject(members["device"], DeviceInfo.init(fields:))
        else { return nil }
        self.init(
            certificates: certificates, nonce: nonce, nonceSignature: nonceSignature,
            encryptionScheme: encryptionScheme,
            channel: channel, device: device)
    }
}

extension DeviceInfo {
    /// As ``ProvisioningRequest/init(json:)``: every field an optional string.
    init?(fields: [String: JSONValue]) {
        guard let id = JSONValue.optionalString(fields["id"]), let type = JSONValue.optionalString(fields["type"]),
            let name = JSONValue.optionalString(fields["name"]), let model = JSONValue.optionalString(fields["model"]),
            let osVersion = JSONValue.optionalString(fields["osVersion"]),
            let locale = JSONValue.optionalString(fields["locale"]),
            let ipAddress = JSONValue.optionalString(fields["ipAddress"])
        else { return nil }
        self.init(
            id: id, type: type, name: name, model: model, osVersion: osVersion, locale: locale, ipAddress: ipAddress)
    }
}

extension JSONValue {
    /// An optional string member as `decodeIfPresent(String.self)` reads it: absent or null is
    /// `.some(nil)`, a string `.some(text)`, any other type nil (refused).
    static func optionalString(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: .some(nil)
        case .string(let text)?: .some(text)
        default: nil
        }
    }

    /// An optional object member read by `read`, as `decodeIfPresent` reads a nested
    /// `Decodable`: absent or null is `.some(nil)`, an object `read` takes `.some(value)`, an
    /// object it declines or any other type nil (refused).
    static func optionalObject<T>(_ value: JSONValue?, _ read: ([String: JSONValue]) -> T?) -> T?? {
        switch value {
        case nil, .null?: .some(nil)
        case .object(let fields)?: read(fields).map { .some($0) }
        default: nil
        }
    }

    /// The items as strings, or nil when one is not a string.
    static func strings(_ items: [JSONValue]) -> [String]? {
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for item in items {
            guard case .string(let text) = item else { return nil }
            strings.append(text)
        }
        return strings
    }
}
