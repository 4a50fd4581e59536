/// A URL split the way Mastercard's signers read it for the signature base string: scheme and
/// host lowercased, the default port (`:443` for https, `:80` for http) dropped, the path kept
/// raw (`/` when empty), query and fragment dropped; the query's `k=v` pairs kept as written.
struct BaseURI {
    /// `scheme://host[:port]/path`.
    let normalized: String
    /// The query's parameters as they appear in the URL (a name without `=` has an empty value).
    let query: [(String, String)]

    init(_ url: String) throws {
        guard let schemeEnd = url.range(of: "://") else { throw MastercardOAuthError("not an absolute URL") }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "https" || scheme == "http" else { throw MastercardOAuthError("not an http(s) URL") }
        var rest = url[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var queryText = ""
        if let mark = rest.firstIndex(of: "?") {
            queryText = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash].lowercased()
        guard !authority.isEmpty, !authority.contains("@") else { throw MastercardOAuthError("URL without a host") }
        let path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        let defaultPort = scheme == "https" ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        normalized = "\(scheme)://\(authority)\(path)"
        query = queryText.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            guard let equals = pair.firstIndex(of: "=") else { return (String(pair), "") }
            return (String(pair[..<equals]), String(pair[pair.index(after: equals)...]))
        }
    }
}
