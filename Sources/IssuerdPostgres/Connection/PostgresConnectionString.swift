import CPostgres
import Foundation

/// A connection string parsed by libpq itself: a URI (`postgresql://u@h/db`) or conninfo
/// (`host=h dbname=db`). Parsing at start-up turns a typo into an error before the first
/// connection attempt; ``description`` masks the password.
public struct PostgresConnectionString: Sendable, CustomStringConvertible, CustomReflectable {
    /// The parameters that were set, in libpq's canonical order.
    public private(set) var parameters: [(keyword: String, value: String)]

    /// Parses `text` with `PQconninfoParse`.
    ///
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/invalidParameter`` and
    ///   libpq's reason (which never repeats the password).
    public init(_ text: String) throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &errorMessage) else {
            let reason = errorMessage.map { String(cString: $0) } ?? "out of memory"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PostgresError(
                code: .invalidParameter,
                message: "invalid connection string: \(reason.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        defer { PQconninfoFree(options) }
        var parameters: [(keyword: String, value: String)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                parameters.append((String(cString: keyword), String(cString: value)))
            }
            option += 1
        }
        self.parameters = parameters
    }

    /// The value of a keyword such as `host` or `dbname`.
    public subscript(keyword: String) -> String? {
        parameters.last(where: { $0.keyword == keyword })?.value
    }

    /// Returns a copy with `keyword` set to `value` (added when absent).
    public func setting(_ keyword: String, to value: String) -> PostgresConnectionString {
        var copy = self
        if let index = copy.parameters.firstIndex(where: { $0.keyword == keyword }) {
            copy.parameters[index].value = value
        } else {
            copy.parameters.append((keyword, value))
        }
        return copy
    }

    /// The conninfo text (`key='value' …`), password included: pass it to libpq, never log it.
    public var unsafeConnectionString: String { render(maskingPassword: false) }

    /// The conninfo text with the password shown as `****`.
    public var description: String { render(maskingPassword: true) }

    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }

    private func render(maskingPassword: Bool) -> String {
        parameters.map { keyword, value in
            let shown = maskingPassword && keyword == "password" ? "****" : value
            // conninfo quoting: single quotes, with backslash before ' and \ (libpq manual 34.1.1).
            var quoted = "'"
            for character in shown {
                if character == "'" || character == "\\" { quoted.append("\\") }
                quoted.append(character)
            }
            return keyword + "=" + quoted + "'"
        }.joined(separator: " ")
    }
}
