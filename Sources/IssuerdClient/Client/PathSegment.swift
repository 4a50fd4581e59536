import Foundation

/// Percent-encodes a value into one URL path segment, so that an identifier can neither add
/// segments (`/`) nor start a query (`?`).
enum PathSegment {
    /// Identifiers longer than this are not issuerd's.
    static let maximumLength = 256

    /// RFC 3986 §2.3 unreserved characters: the only ones left as they are.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Encodes `value`.
    ///
    /// - Parameters:
    ///   - value: The identifier.
    ///   - name: The argument's name, for the error.
    /// - Throws: ``IssuerdClientError/Code/invalidArgument`` when empty, too long or `.`/`..`.
    static func encode(_ value: String, name: String) throws(IssuerdClientError) -> String {
        guard !value.isEmpty, value.utf8.count <= maximumLength, value != ".", value != ".." else {
            throw .invalidArgument("\(name) must be 1 to \(maximumLength) bytes")
        }
        guard let encoded = value.addingPercentEncoding(withAllowedCharacters: unreserved) else {
            throw .invalidArgument("\(name) cannot be percent-encoded")
        }
        return encoded
    }
}
