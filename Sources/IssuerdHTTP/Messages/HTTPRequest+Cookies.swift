extension HTTPRequest {
    /// The value of the cookie called `name` from the `Cookie` header fields, if present.
    ///
    /// RFC 6265 section 5.4: the client sends `name=value` pairs separated by `; `. Names are
    /// compared exactly (cookie names are case-sensitive); the first pair with the name wins, as
    /// it is the one with the longest path. A header over 8 KiB is ignored rather than scanned.
    ///
    /// - Parameter name: The cookie name.
    /// - Returns: The value without surrounding spaces or double quotes, or nil.
    public func cookie(_ name: String) -> String? {
        for header in headers.values(for: "Cookie") where header.utf8.count <= 8192 {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, Self.trimmed(parts[0]) == name else { continue }
                var value = Self.trimmed(parts[1])
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                    value = value.dropFirst().dropLast()
                }
                return String(value)
            }
        }
        return nil
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
