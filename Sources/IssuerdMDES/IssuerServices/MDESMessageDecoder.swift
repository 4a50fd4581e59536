import Foundation

/// Decodes an operation's body, mapping the decoder's errors to ``MDESRequestError``s that name
/// the field (never its value): `INVALID_JSON` for text that is not JSON, `INVALID_FIELD_VALUE`
/// for a missing required field or one of the wrong JSON type. Unknown members are ignored.
public enum MDESMessageDecoder {
    /// The decoded body.
    ///
    /// - Throws: ``MDESRequestError``.
    public static func decode<T: Decodable>(_ type: T.Type, from body: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch let error as DecodingError {
            throw describe(error)
        } catch {
            throw MDESRequestError.invalidJSON()
        }
    }

    public static func describe(_ error: DecodingError) -> MDESRequestError {
        func path(_ context: DecodingError.Context, _ key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            let names = keys.compactMap { $0.intValue == nil ? $0.stringValue : nil }
            return names.isEmpty ? "the body" : names.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return .invalidField(path(context, key), "is required")
        case .valueNotFound(_, let context): return .invalidField(path(context), "is required")
        case .typeMismatch(_, let context): return .invalidField(path(context), "has the wrong JSON type")
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? .invalidJSON() : .invalidField(path(context), "is malformed")
        @unknown default: return .invalidJSON()
        }
    }

    /// The compact JSON text of an answer, slashes unescaped, keys in a stable order.
    public static func encode<T: Encodable>(_ value: T) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)) ?? Data(#"{"responseId":"unknown"}"#.utf8)
    }
}
