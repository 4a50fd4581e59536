import Foundation
import IssuerdCore

/// Chooses the id that ties a request's log lines, metrics and response together.
///
/// A caller's `X-Request-Id` is kept only when it cannot hurt a log or header: at most 128
/// characters of `[A-Za-z0-9._:-]`. Anything else is replaced, not repaired, so a hostile
/// value never reaches a log line.
public enum RequestIdentifier {
    /// The header that carries the id both ways.
    public static let headerName = "X-Request-Id"
    /// The longest caller id that is echoed.
    public static let maximumLength = 128

    /// A fresh random id (a lowercase UUID).
    public static func generate() -> String {
        UUID.random().lowercasedString
    }

    /// Whether a caller-supplied id may be echoed.
    public static func isSane(_ candidate: String) -> Bool {
        let bytes = candidate.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLength else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: ":"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    /// The caller's id when sane, else a fresh one.
    ///
    /// - Parameter supplied: The `X-Request-Id` value received, if any.
    public static func resolve(_ supplied: String?) -> String {
        if let supplied, isSane(supplied) { return supplied }
        return generate()
    }
}
