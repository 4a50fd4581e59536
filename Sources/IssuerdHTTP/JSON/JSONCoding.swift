import Foundation

/// The one JSON encoder and decoder of the wire format, configured once.
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
