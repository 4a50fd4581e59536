import IssuerdHTTP

/// Checks of a query string shared by the listing routes: an unknown parameter or a bad value
/// is a 400 naming it, never ignored.
enum QueryParameters {
    /// - Throws: 400 `invalid_request` naming the first parameter not in `allowed`.
    static func allow(_ allowed: Set<String>, in query: [String: String]) throws {
        if let unknown = query.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIErrors.invalidRequest(
                "unknown parameter '\(unknown)'; expected \(allowed.sorted().joined(separator: ", "))", field: unknown)
        }
    }

    /// `limit` between 1 and `maximum`, `default` when absent.
    static func limit(_ text: String?, default value: Int, maximum: Int) throws -> Int {
        guard let text else { return value }
        guard let limit = Int(text), (1...maximum).contains(limit) else {
            throw APIErrors.invalidRequest("'limit' must be between 1 and \(maximum)", field: "limit")
        }
        return limit
    }
}
