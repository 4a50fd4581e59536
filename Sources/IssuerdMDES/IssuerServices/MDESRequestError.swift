/// A request MDES sent that issuerd cannot process: answered with an ``ErrorsResponse``
/// carrying ``errorCode`` (MDES Pre-Digitization API; Mastercard publishes only `INVALID_JSON`, the
/// other codes are issuerd's, docs/networks.md). The description names the field, never its value.
public struct MDESRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `errorCode`.
    public let errorCode: String
    /// The `errorDescription` (1–256 characters; names fields, never values).
    public let description: String

    public init(_ errorCode: String, _ description: String) {
        self.errorCode = errorCode
        self.description = String(description.prefix(256))
    }

    /// The body is not JSON, or a field has the wrong JSON type.
    public static func invalidJSON(_ description: String = "Invalid JSON") -> Self { Self("INVALID_JSON", description) }
    /// A required field is missing, or a field is too long, too short or malformed.
    public static func invalidField(_ field: String, _ problem: String) -> Self {
        Self("INVALID_FIELD_VALUE", "\(field) \(problem)")
    }
    /// The same `requestId` came before for this operation with another body.
    public static let requestIdReused = Self(
        "DUPLICATE_REQUEST_ID", "requestId was already used for this operation with another body")
    /// The token unique reference is not one issuerd knows.
    public static let unknownToken = Self("TOKEN_NOT_FOUND", "tokenUniqueReference is not known to the issuer")
    /// The database or another dependency is unavailable; MDES may retry.
    public static let unavailable = Self("SERVICE_UNAVAILABLE", "the issuer service is temporarily unavailable")
}

/// Bounds of the wire's fields, checked after decoding (decoding itself tolerates everything
/// the JSON types allow).
public enum MDESField {
    /// `value`'s length in Unicode scalars is in `lengths` (Mastercard's lengths are characters;
    /// counting scalars, not grapheme clusters, bounds the bytes too: at most four per scalar).
    public static func check(_ value: String, _ field: String, _ lengths: ClosedRange<Int>) throws {
        let count = value.unicodeScalars.count
        guard lengths.contains(count) else {
            throw MDESRequestError.invalidField(
                field,
                lengths.lowerBound == lengths.upperBound
                    ? "must be \(lengths.lowerBound) characters"
                    : "must be \(lengths.lowerBound) to \(lengths.upperBound) characters")
        }
    }

    /// ``check(_:_:_:)`` when present.
    public static func check(_ value: String?, _ field: String, _ lengths: ClosedRange<Int>) throws {
        if let value { try check(value, field, lengths) }
    }

    /// Only ASCII digits.
    public static func digits(_ value: String?, _ field: String, _ lengths: ClosedRange<Int>) throws {
        guard let value else { return }
        try check(value, field, lengths)
        guard value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw MDESRequestError.invalidField(field, "must be digits")
        }
    }

    /// An MDES date-time (20–29 characters, ISO 8601 extended).
    public static func dateTime(_ value: String?, _ field: String) throws {
        guard let value else { return }
        guard ISO8601Text.date(value) != nil else {
            throw MDESRequestError.invalidField(field, "must be an ISO 8601 date-time such as 2026-01-01T12:00:00Z")
        }
    }

    /// At most `limit` entries, each of `lengths`.
    public static func list(_ values: [String]?, _ field: String, limit: Int, _ lengths: ClosedRange<Int>) throws {
        guard let values else { return }
        guard values.count <= limit else {
            throw MDESRequestError.invalidField(field, "has more than \(limit) entries")
        }
        for value in values { try check(value, field, lengths) }
    }

    /// A known-or-unknown enumeration value whose text is of `lengths`.
    public static func check<E: MDESEnumeration>(_ value: E?, _ field: String, _ lengths: ClosedRange<Int>) throws {
        if let value { try check(value.text, field, lengths) }
    }
}
