import Foundation
import IssuerdCore

/// How the background sealer chains audit entries (`ISSUERD_AUDIT_*`).
///
/// Every key is documented in `docs/configuration.md`.
public struct AuditSettings: Sendable {
    /// Whether this instance runs a sealer (`ISSUERD_AUDIT_SEAL`, default true); with several
    /// instances all may: an advisory lock lets one seal at a time, the others skip that round.
    public var seal: Bool
    /// How often the sealer chains what committed since its last round
    /// (`ISSUERD_AUDIT_SEAL_INTERVAL`, default 250ms): the longest an entry stays unchained
    /// while the database answers.
    public var sealInterval: Duration

    /// Reads and validates the audit keys.
    ///
    /// - Throws: ``ConfigurationError`` naming the first malformed key.
    package init(_ reader: ConfigurationReader) throws {
        seal = try reader.boolean("ISSUERD_AUDIT_SEAL", default: true)
        sealInterval = try reader.duration(
            "ISSUERD_AUDIT_SEAL_INTERVAL", default: .milliseconds(250), in: .milliseconds(10)...(.seconds(60)))
    }
}
