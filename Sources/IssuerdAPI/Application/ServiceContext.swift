import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres

/// What every route and service needs, built once by ``IssuerdApplication`` and passed down
/// explicitly (no globals).
struct ServiceContext: Sendable {
    let configuration: IssuerdConfiguration
    let database: PostgresPool
    let vault: PANVault
    let metrics: MetricsRegistry
    let logger: Logger
    /// The time source; tests may pin it.
    let clock: @Sendable () -> Date

    /// The current time.
    var now: Date { clock() }
}

extension MasterKeyRing {
    /// Builds the ring from the validated configuration (current version first).
    init(_ settings: [MasterKeySetting]) throws {
        var keys: [Int: SymmetricKey] = [:]
        for setting in settings { keys[setting.version] = try SymmetricKey(bytes: setting.key.unsafeValue) }
        try self.init(keys: keys)
    }
}
