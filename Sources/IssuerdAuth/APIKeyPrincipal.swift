/// What an API key may do. `analyst` reads and backtests; `admin` also changes cards,
/// customers and rules; `ivr` may only verify one-time codes entered on a voice call.
package enum APIKeyRole: String, Sendable, CaseIterable {
    case admin, analyst, ivr
}

/// An authenticated operator, analyst or IVR system.
package struct APIKeyPrincipal: Sendable {
    package let keyID: String
    package let name: String
    package let role: APIKeyRole

    /// A principal as read from `api_keys`.
    package init(keyID: String, name: String, role: APIKeyRole) {
        self.keyID = keyID
        self.name = name
        self.role = role
    }

    /// The `actor` written to the audit log.
    package var auditActor: String { "apikey:\(keyID)" }
}
