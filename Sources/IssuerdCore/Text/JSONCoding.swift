import Foundation

/// The one JSON encoder and decoder of the wire format, configured once: the API's bodies and
/// `issuerd cards import`'s lines are decoded alike.
///
/// Sorted keys make responses byte-stable (tests and idempotent replays compare bytes);
/// slashes stay unescaped because `\/` in URLs and base64 confuses humans reading logs; dates
/// are ISO 8601 as the API contract states. Treat both as read-only: changing a setting would
/// change every response of the process.
public enum JSONCoding {
    /// The encoder for every JSON response body.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    /// The decoder for every JSON request body.
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}

extension JSONCoding {
    /// The code of a body that is not JSON or does not fit its type.
    public static let malformedCode = "malformed_json"

    /// `bytes` decoded as `T` with ``decoder``.
    ///
    /// - Throws: ``Refusal`` `malformed_json` for a decoding failure, naming at most the field
    ///   path (from the type being decoded), never a value; any other error `T` throws passes
    ///   through unchanged.
    public static func decode<T: Decodable>(_ type: T.Type = T.self, from bytes: [UInt8]) throws -> T {
        do {
            return try decoder.decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw refusal(error)
        }
    }

    /// A decoding failure as a safe refusal naming the field path when there is one.
    static func refusal(_ error: DecodingError) -> Refusal {
        func malformed(_ message: String, field: String? = nil) -> Refusal {
            Refusal(
                .invalid, code: malformedCode, message: message, context: field.map { ["field": .string($0)] } ?? [:])
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = fieldPath(context.codingPath + [key])
            return malformed("missing required field '\(field)'", field: field)
        case .valueNotFound(_, let context):
            let field = fieldPath(context.codingPath)
            return malformed("field '\(field)' must not be null", field: field)
        case .typeMismatch(_, let context):
            let field = fieldPath(context.codingPath)
            if field.isEmpty { return malformed("request body has the wrong JSON type") }
            return malformed("field '\(field)' has the wrong type", field: field)
        case .dataCorrupted(let context):
            let field = fieldPath(context.codingPath)
            if field.isEmpty { return malformed("request body is not valid JSON") }
            return malformed("field '\(field)' has an invalid value", field: field)
        @unknown default:
            return malformed("request body could not be decoded")
        }
    }

    /// Renders a coding path as `device.id` or `certificates[1]`, capped so a deep document
    /// cannot make the error large.
    static func fieldPath(_ path: [any CodingKey]) -> String {
        var out = ""
        for key in path {
            if let index = key.intValue {
                out += "[\(index)]"
            } else {
                if !out.isEmpty { out += "." }
                out += key.stringValue
            }
            if out.count > 200 { return String(out.prefix(200)) + "…" }
        }
        return out
    }
}
