import Dispatch
import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdImport
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage

/// A chunk of `issuerd cards reissue` lines applied set-wise, in the caller's transaction: the
/// same checks and effects as ``CardReissue/start(_:oldCardID:actor:now:vault:keys:connection:)``
/// line by line, but a few reads for the whole chunk, the PAN work on every core, and one
/// statement (or `COPY`) per table for the lines that pass.
///
/// The reads: the old cards (locked, in card id order), their reissues (made already, waiting),
/// the new card ids and PANs taken, and the old cards' live tokens (locked). Each line is then
/// checked against them by ``CardReissue/check(_:old:oldPAN:waiting:panInUse:liveFraudTokens:)``
/// and its effects worked out by ``CardReissue/application(_:tokens:newExpiration:keys:pans:)``;
/// a refused line is left out of the writes and reported. Lines of one chunk that touch each
/// other (the same card twice, a new card id that is another line's card, the same new PAN
/// twice) would each see the other's writes: such a chunk is not applied here (``apply``
/// answers nil) and the caller applies it line by line.
enum CardReissueBatch {
    typealias Line = (line: Int, item: (oldCardID: String, request: CardReissue.Validated))

    /// Applies `chunk`, or answers nil, having written nothing, when its lines touch each other.
    ///
    /// - Throws: A ``PostgresError`` when a write is refused after all (a card or a reissue
    ///   another session made between the reads and the writes); the caller's transaction is
    ///   then aborted, and the chunk must be applied again line by line.
    static func apply(
        _ chunk: [Line], actor: String, now: Date, vault: PANVault, keys: ReissueSettings,
        connection: PostgresConnection
    ) throws -> [ChunkedCSVImport.Outcome]? {
        guard let prepared = try prepare(chunk, now: now, vault: vault, keys: keys, connection: connection) else {
            return nil
        }
        return try write(prepared, actor: actor, now: now, connection: connection)
    }

    /// The names a chunk's lines touch: the old and new card ids and the new PANs' fingerprints
    /// (hex). Two chunks whose names do not meet read and write disjoint rows, so one may be
    /// read while the other is written (``CardReissueImport``).
    struct Touched: Sendable {
        var cardIDs = Set<String>()
        var fingerprints = Set<String>()

        func meets(_ other: Touched) -> Bool {
            !cardIDs.isDisjoint(with: other.cardIDs) || !fingerprints.isDisjoint(with: other.fingerprints)
        }
    }

    /// The new PANs' fingerprints (nil for a line keeping its PAN), and what the chunk's names
    /// are, nil when its lines touch each other (the same card, new card or new PAN twice).
    static func names(_ chunk: [Line], vault: PANVault) throws -> (fingerprints: [[UInt8]?], touched: Touched?) {
        let fingerprints = try chunk.map { entry in try entry.item.request.pan.map { try vault.fingerprint($0) } }
        var touched = Touched()
        for (entry, fingerprint) in zip(chunk, fingerprints) {
            guard touched.cardIDs.insert(entry.item.oldCardID).inserted,
                touched.cardIDs.insert(entry.item.request.newCardID).inserted
            else { return (fingerprints, nil) }
            if let fingerprint, !touched.fingerprints.insert(BinaryEncoding.hexString(fingerprint)).inserted {
                return (fingerprints, nil)
            }
        }
        return (fingerprints, touched)
    }

    /// A chunk read and decided, its rows encoded: what ``write(_:actor:now:connection:)`` writes.
    struct Prepared: Sendable {
        fileprivate var decisions: [Decision]
    }

    /// Reads what the chunk's lines need (locking the old cards and their live tokens) and
    /// decides each line, in the caller's transaction; nil, having read nothing, when its lines
    /// touch each other.
    ///
    /// - Parameter names: ``names(_:vault:)`` of `chunk`, when the caller has them.
    static func prepare(
        _ chunk: [Line], names: (fingerprints: [[UInt8]?], touched: Touched?)? = nil, now: Date, vault: PANVault,
        keys: ReissueSettings, connection: PostgresConnection
    ) throws -> Prepared? {
        let names = try names ?? Self.names(chunk, vault: vault)
        guard names.touched != nil else { return nil }
        // The new PANs' fingerprints, for the check that no card has one and for the new cards.
        let named = names.fingerprints.compactMap { $0.map(BinaryEncoding.hexString) }
        // The reads are planned for each chunk (the connection's force_custom_plan): a plan made
        // once while card_reissues was small scanned it whole for every later chunk, and a run of
        // 100,000 renewals spent half its database time there.
        let read = try Read(chunk, fingerprints: named, connection: connection)
        return Prepared(
            decisions: try decide(
                chunk, read: read, fingerprints: names.fingerprints, now: now, vault: vault, keys: keys))
    }

    /// Writes the lines of `prepared` that passed, a statement (or `COPY`) per table, in the
    /// transaction that prepared it.
    ///
    /// - Returns: Each line's outcome, in line order.
    /// - Throws: A ``PostgresError`` when a write is refused after all (see ``apply``).
    static func write(
        _ prepared: Prepared, actor: String, now: Date, connection: PostgresConnection
    ) throws -> [ChunkedCSVImport.Outcome] {
        // The writes are planned once per statement, not per execution (see CardImport): their
        // foreign-key checks run once per row.
        try connection.execute(unsafeSQL: "SET LOCAL plan_cache_mode = auto")
        var cards: [UInt8] = []
        var history: [UInt8] = []
        var records: [ReissueRecord] = []
        var started: [(action: String, subject: String, details: [String: String])] = []
        var applications: [CardReissue.Application] = []
        for case .applied(let planned) in prepared.decisions {
            cards += planned.cardRow
            history += planned.historyRow
            var record = planned.record
            if let application = planned.application {
                // Inserted applied: one statement fewer than inserting it waiting and updating it.
                record.status = CardReissue.appliedStatus(application)
                applications.append(application)
            }
            records.append(record)
            started.append(CardReissue.startedAudit(record, newLastFour: planned.newLastFour))
        }
        if !records.isEmpty {
            try connection.copyIn(unsafeSQL: "COPY cards (\(CardStore.copyColumns)) FROM STDIN") {
                try $0.write(cards)
            }
            try connection.copyIn(unsafeSQL: "COPY card_status_history (\(CardStore.historyCopyColumns)) FROM STDIN") {
                try $0.write(history)
            }
            try ReissueStore.insert(records, actor: actor, now: now, connection: connection)
            try AuditLog.append(actor: actor, entries: started, at: now, connection: connection)
            try CardReissue.write(applications, actor: actor, now: now, statusInserted: true, connection: connection)
        }
        return prepared.decisions.map { decision in
            switch decision {
            case .applied: .applied
            case .unchanged: .unchanged
            case .refused(let reason): .refused(reason)
            }
        }
    }

    /// What the database holds about a chunk's cards, read at once.
    private struct Read: Sendable {
        /// The old cards, by id (locked).
        var cards: [String: CardRecord] = [:]
        /// `old|new` of every reissue made of an old card: the same line again is unchanged.
        var made = Set<String>()
        /// Old cards with a reissue waiting for activation.
        var waiting = Set<String>()
        /// New card ids taken.
        var takenIDs = Set<String>()
        /// New PANs' fingerprints (hex) some card has.
        var takenFingerprints = Set<String>()
        /// The old cards' live tokens, by card (locked, by reference).
        var tokens: [String: [TokenStore.ReissuedToken]] = [:]

        init(_ chunk: [Line], fingerprints: [String], connection: PostgresConnection) throws {
            let oldIDs = chunk.map(\.item.oldCardID)
            for row in try connection.query(
                """
                SELECT \(unsafeSQL: CardStore.columns(qualifiedBy: "c")) FROM cards c
                WHERE c.card_id = ANY(\(oldIDs)::text[]) ORDER BY c.card_id FOR UPDATE
                """)
            {
                let card = try CardStore.decode(row)
                cards[card.cardID] = card
            }
            for row in try connection.query(
                "SELECT old_card_id, new_card_id, status FROM card_reissues WHERE old_card_id = ANY(\(oldIDs)::text[])")
            {
                let old: String = try row.decode("old_card_id")
                made.insert(old + "|" + (try row.decode("new_card_id", as: String.self)))
                if try row.decode("status", as: String.self) == ReissueStatus.awaitingActivation.rawValue {
                    waiting.insert(old)
                }
            }
            for row in try connection.query(
                "SELECT card_id FROM cards WHERE card_id = ANY(\(chunk.map(\.item.request.newCardID))::text[])")
            {
                takenIDs.insert(try row.decode("card_id"))
            }
            if !fingerprints.isEmpty {
                for row in try connection.query(
                    """
                    SELECT DISTINCT f.hex FROM unnest(\(fingerprints)::text[]) AS f(hex)
                    JOIN cards c ON c.pan_fingerprint = decode(f.hex, 'hex')
                    """)
                {
                    takenFingerprints.insert(try row.decode("hex"))
                }
            }
            let applyingNow = chunk.filter(\.item.request.applyNow).map(\.item.oldCardID)
            if !applyingNow.isEmpty { tokens = try TokenStore.lockLive(cardIDs: applyingNow, connection: connection) }
        }
    }

    /// One line that passed: its rows and effects.
    fileprivate struct Planned: Sendable {
        var record: ReissueRecord
        var newLastFour: String
        var cardRow: [UInt8]
        var historyRow: [UInt8]
        var application: CardReissue.Application?
    }

    fileprivate enum Decision: Sendable {
        case applied(Planned)
        case unchanged
        case refused(String)
    }

    /// Decides every line against `read`, the PAN work (opening, sealing, fingerprinting and
    /// encrypting the account data) spread over the cores; in line order.
    private static func decide(
        _ chunk: [Line], read: Read, fingerprints: [[UInt8]?], now: Date, vault: PANVault, keys: ReissueSettings
    ) throws -> [Decision] {
        let count = chunk.count
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, count / 16))
        let size = (count + workers - 1) / workers
        let results = Lock<[Int: Result<[Decision], Error>]>([:])
        let stamp = PostgresCopyText.timestampText(now)
        let lines = UncheckedLines(lines: chunk)
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let range = min(worker * size, count)..<min((worker + 1) * size, count)
            let result = Result {
                try range.map { index in
                    try decideLine(
                        lines.lines[index].item, read: read, fingerprint: fingerprints[index], stamp: stamp,
                        vault: vault,
                        keys: keys)
                }
            }
            results.withLock { $0[worker] = result }
        }
        return try results.withLock { all in try (0..<workers).flatMap { try all[$0]?.get() ?? [] } }
    }

    /// One line: unchanged, refused with the route's code and message, or its rows and effects.
    private static func decideLine(
        _ item: (oldCardID: String, request: CardReissue.Validated), read: Read, fingerprint: [UInt8]?, stamp: String,
        vault: PANVault, keys: ReissueSettings
    ) throws -> Decision {
        let request = item.request
        if read.made.contains(item.oldCardID + "|" + request.newCardID) { return .unchanged }
        guard let old = read.cards[item.oldCardID] else { return .refused("no card \(item.oldCardID)") }
        do {
            let oldPAN = try CardStore.openPAN(old, vault: vault)
            let panChanged = try CardReissue.check(
                request, old: old, oldPAN: oldPAN, waiting: { read.waiting.contains(old.cardID) },
                panInUse: { _ in
                    fingerprint.map { read.takenFingerprints.contains(BinaryEncoding.hexString($0)) } ?? false
                },
                liveFraudTokens: { references in
                    let live = Set((read.tokens[old.cardID] ?? []).map(\.reference))
                    return Int64(references.filter { live.contains($0) }.count)
                })
            if read.takenIDs.contains(request.newCardID) { throw CardReissue.alreadyExists() }
            let pan = request.pan ?? oldPAN
            let newFingerprint = try fingerprint ?? vault.fingerprint(pan)
            var cardRow = PostgresCopyText(capacity: 330)
            CardStore.appendCopyRow(
                cardID: request.newCardID, customerID: old.customerID,
                sealed: try vault.seal(pan, context: CardStore.panContext(request.newCardID)),
                fingerprint: newFingerprint, lastFour: pan.lastFour, expiration: request.expiration,
                cardholderName: request.cardholderName ?? old.cardholderName, paymentNetwork: old.paymentNetwork,
                status: .inactive, localizedDescription: old.localizedDescription,
                primaryAccountIdentifier: old.primaryAccountIdentifier, country: old.country, stamp: stamp,
                into: &cardRow)
            var historyRow = PostgresCopyText(capacity: 64)
            CardStore.appendCreatedHistoryRow(
                cardID: request.newCardID, status: .inactive, stamp: stamp, into: &historyRow)
            let record = CardReissue.record(request, oldCardID: old.cardID, panChanged: panChanged)
            var application: CardReissue.Application?
            if request.applyNow {
                application = try CardReissue.application(
                    record, tokens: read.tokens[old.cardID] ?? [], newExpiration: request.expiration, keys: keys,
                    pans: { (oldPAN, pan) })
            }
            return .applied(
                Planned(
                    record: record, newLastFour: pan.lastFour, cardRow: cardRow.bytes, historyRow: historyRow.bytes,
                    application: application))
        } catch let refusal as Refusal {
            return .refused("\(refusal.code): \(refusal.message)")
        }
    }
}

/// @unchecked Sendable: the lines are read by the workers only while the caller waits for them,
/// and never written then.
private struct UncheckedLines: @unchecked Sendable {
    let lines: [CardReissueBatch.Line]
}

extension PostgresError {
    /// A write of a set-wise chunk refused because of another session's writes since its reads
    /// (a duplicate, a vanished row, a deadlock): applying its lines one by one still may work.
    var refusesChunk: Bool {
        code == .uniqueViolation || code == .foreignKeyViolation || isRejectedValue || isTransient
    }
}
