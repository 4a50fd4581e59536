extension HTTPError.Code {
    /// No or invalid credentials.
    package static let unauthenticated: Self = "unauthenticated"
    /// Valid credentials without the needed role.
    package static let forbidden: Self = "forbidden"
}

extension HTTPError {
    /// 401 with a `WWW-Authenticate` challenge (RFC 9110 section 11.6.1). The message is the
    /// same whatever failed, so probing reveals nothing about which check refused.
    package static func unauthenticated(
        scheme: String = "Bearer", file: String = #fileID, line: Int = #line
    ) -> HTTPError {
        HTTPError(
            status: 401, code: .unauthenticated, message: "missing or invalid credentials",
            headers: ["WWW-Authenticate": "\(scheme) realm=\"issuerd\""], file: file, line: line)
    }

    /// 403 for an authenticated caller whose role does not allow the operation.
    package static func forbidden(
        _ message: String = "this credential may not perform this operation", file: String = #fileID, line: Int = #line
    ) -> HTTPError {
        HTTPError(status: 403, code: .forbidden, message: message, file: file, line: line)
    }
}

extension HTTPRequest {
    /// The credential of `Authorization: Bearer <credential>`, if present and bounded.
    package var bearerCredential: String? {
        guard let header = headers["Authorization"], header.utf8.count <= 8192 else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        // Spaces and tabs around the token are dropped (Swift-native: Foundation's
        // `trimmingCharacters` bridges through NSString on every request).
        var credential = parts[1]
        while let first = credential.first, first == " " || first == "\t" { credential = credential.dropFirst() }
        while let last = credential.last, last == " " || last == "\t" { credential = credential.dropLast() }
        return credential.isEmpty ? nil : String(credential)
    }
}
