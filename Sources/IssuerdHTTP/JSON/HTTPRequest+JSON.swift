import Foundation
import IssuerdCore

extension HTTPRequest {
    /// Decodes the body as JSON with the shared ``JSONCoding/decoder``.
    ///
    /// The error never echoes the body or the decoder's description (which can quote input
    /// values); it names at most the field path, which comes from the type being decoded.
    ///
    /// - Parameter type: The type to decode.
    /// - Returns: The decoded value.
    /// - Throws: ``HTTPError`` 415 `unsupported_media_type` unless `Content-Type` is
    ///   `application/json` (optionally with `charset=utf-8`); 400 `malformed_json` when the body
    ///   is empty, is not JSON, or does not fit `type`; an ``HTTPError`` thrown while decoding
    ///   passes through unchanged.
    public func decodeJSON<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        guard Self.isJSONMediaType(headers["Content-Type"]) else {
            throw HTTPError.unsupportedMediaType()
        }
        guard !body.isEmpty else {
            throw HTTPError.malformedJSON("request body is empty")
        }
        do {
            return try JSONCoding.decode(T.self, from: body)
        } catch let error as HTTPError {
            throw error
        } catch let refusal as Refusal where refusal.code == JSONCoding.malformedCode {
            throw HTTPError(status: 400, code: .malformedJSON, message: refusal.message, context: refusal.context)
        } catch {
            throw HTTPError.malformedJSON("request body could not be decoded")
        }
    }

    /// Whether a `Content-Type` value is JSON in UTF-8 (RFC 8259 section 8.1 allows no other).
    static func isJSONMediaType(_ value: String?) -> Bool {
        guard let value else { return false }
        // What clients send, compared whole before the value is taken apart.
        if value == "application/json" || value == "application/json; charset=utf-8" { return true }
        let parts = value.split(separator: ";", omittingEmptySubsequences: false)
        guard let mediaType = parts.first, trimmed(mediaType).lowercased() == "application/json" else { return false }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return false }
            let name = trimmed(pair[0]).lowercased()
            let rawValue = trimmed(pair[1])
            let unquoted =
                rawValue.count >= 2 && rawValue.hasPrefix("\"") && rawValue.hasSuffix("\"")
                ? rawValue.dropFirst().dropLast() : rawValue
            guard name == "charset", unquoted.lowercased() == "utf-8" else { return false }
        }
        return true
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var slice = text
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}

extension HTTPRequest {
    /// ``decodeJSON(_:)`` with a fast path: the body parsed in one pass and mapped by `fast`;
    /// when either declines (a missing field, a wrong type, anything unusual), `JSONDecoder`
    /// decodes it, so what is accepted and every error stay those of `T`'s `Decodable`
    /// conformance. `fast` must accept nothing that conformance would refuse.
    public func decodeJSON<T: Decodable>(_ type: T.Type = T.self, fast: (JSONValue) -> T?) throws -> T {
        if Self.isJSONMediaType(headers["Content-Type"]),
            let tree = body.withUnsafeBufferPointer({ JSONValue.parse(bytes: $0) }), let value = fast(tree)
        {
            return value
        }
        return try decodeJSON(type)
    }
}
