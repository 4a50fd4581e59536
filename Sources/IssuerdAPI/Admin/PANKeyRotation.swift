import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdStorage

/// `issuerd keys rotate`: re-seals every card PAN whose key version is not the current one,
/// while the service keeps running.
///
/// Each batch is one transaction that takes its rows with `FOR UPDATE SKIP LOCKED`, so a card the
/// service is changing at that moment is simply taken by a later batch instead of waiting or
/// deadlocking; each batch is audited. Running it again finds nothing to do (idempotent).
/// Fingerprints are keyed by the ring's fingerprint version and do not change here.
public enum PANKeyRotation {
    /// What a run did.
    public struct Summary: Sendable, Equatable {
        /// Cards re-sealed by this run.
        public var resealed: Int
        /// Batches committed.
        public var batches: Int
        /// The version every card is sealed with now.
        public var currentVersion: Int
    }

    /// Rotates until no card is left under an old version.
    ///
    /// - Parameters:
    ///   - batchSize: Cards per transaction (1–10 000).
    ///   - lockedRetries: How many times to come back for rows other transactions held locked.
    ///   - progress: Called after each batch with the cards re-sealed so far.
    /// - Throws: ``CommandInputError`` when a card is sealed under a version missing from the ring
    ///   or rows stay locked; ``PostgresError``.
    public static func run(
        database: PostgresPool, vault: PANVault, actor: String, batchSize: Int = 500, lockedRetries: Int = 50,
        now: () -> Date = { Date() }, progress: (Int) -> Void = { _ in }
    ) throws -> Summary {
        let current = vault.keyRing.currentVersion
        let limit = min(max(batchSize, 1), 10_000)
        var summary = Summary(resealed: 0, batches: 0, currentVersion: current)
        var retries = 0
        while true {
            let count = try database.transaction { connection in
                try rotateBatch(
                    limit: limit, current: current, vault: vault, actor: actor, now: now(), connection: connection)
            }
            if count > 0 {
                summary.resealed += count
                summary.batches += 1
                progress(summary.resealed)
                continue
            }
            let remaining = try database.withConnection { connection in
                try CardStore.countSealed(otherThan: current, connection: connection)
            }
            if remaining == 0 { return summary }
            retries += 1
            guard retries <= lockedRetries else {
                throw CommandInputError(
                    "\(remaining) card(s) stayed locked by other transactions; run keys rotate again")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    private static func rotateBatch(
        limit: Int, current: Int, vault: PANVault, actor: String, now: Date, connection: PostgresConnection
    ) throws -> Int {
        let rows = try CardStore.lockSealed(otherThan: current, limit: limit, connection: connection)
        var fromVersions: Set<Int> = []
        for (cardID, sealed) in rows {
            let resealed: SealedPAN
            do {
                resealed = try vault.reseal(sealed, context: CardStore.panContext(cardID))
            } catch let error as CryptoError {
                throw CommandInputError(
                    "card \(cardID) is sealed under key version \(sealed.keyVersion), which does not open with the configured keys "
                        + "(\(error.code)); add that version to ISSUERD_MASTER_KEY_PREVIOUS")
            }
            fromVersions.insert(sealed.keyVersion)
            try CardStore.storeResealed(cardID, resealed, now: now, connection: connection)
        }
        if !rows.isEmpty {
            try AuditLog.append(
                actor: actor, action: "keys.rotated", subject: "cards",
                details: [
                    "cards": String(rows.count), "toVersion": String(current),
                    "fromVersions": fromVersions.sorted().map(String.init).joined(separator: ","),
                ],
                at: now, connection: connection)
        }
        return rows.count
    }
}
