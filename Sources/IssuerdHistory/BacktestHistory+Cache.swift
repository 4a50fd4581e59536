import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk

extension BacktestWindowCache {
    /// Each window row's share of its hour's fingerprint (``Fingerprint/hashSum``): a hash of its
    /// id seeded with its `xmin` (the inserting transaction), so a row replaced by hand, or rows
    /// deleted and others inserted, change the sum. The uuid is hashed as it is (its hash
    /// opclass's function): printing it as text first was a sixth of the fingerprint query.
    package static let rowHashSQL = "uuid_hash_extended(a.attempt_id, a.xmin::text::int8)"

    /// The SQL of the wrapping sum of the `int8` expression `value` over a group, as the text
    /// of a number in [0, 2^64) whose bits are Swift's `&+` sum (``hashSum(text:)``). `sum(int8)`
    /// is exact (a 128-bit accumulator, a `numeric` result); casting each row to `numeric` first
    /// cost more than the hash.
    package static func hashSumSQL(_ value: String) -> String {
        "((sum(\(value)) % 18446744073709551616 + 18446744073709551616) % 18446744073709551616)::text"
    }

    /// The `&+` sum whose ``hashSumSQL(_:)`` text this is, or nil.
    package static func hashSum(text: String) -> Int64? {
        UInt64(text).map { Int64(bitPattern: $0) }
    }
}

/// What ``BacktestHistory`` does with a ``BacktestWindowCache``: check kept hours against the
/// snapshot, keep the hours it read, turn a kept hour back into a page.
extension BacktestHistory {
    /// Each hour's fingerprint among `hours` (ascending), as this snapshot holds them (hours
    /// without rows are absent): one query per run of consecutive hours, so the hours between
    /// kept ones are not scanned, shared out among the connections.
    package static func fingerprints(
        of hours: [Int64], connections: [PostgresConnection]
    ) throws -> [Int64: BacktestWindowCache.Fingerprint] {
        var runs: [ClosedRange<Int64>] = []
        for hour in hours {
            if let last = runs.last, last.upperBound + 1 == hour {
                runs[runs.count - 1] = last.lowerBound...hour
            } else {
                runs.append(hour...hour)
            }
        }
        // The longest runs cut in two when there are fewer runs than connections.
        if runs.count < connections.count, let longest = runs.indices.max(by: { runs[$0].count < runs[$1].count }),
            runs[longest].count > 1
        {
            let run = runs.remove(at: longest)
            let middle = run.lowerBound + Int64(run.count / 2)
            runs += [run.lowerBound...(middle - 1), middle...run.upperBound]
        }
        let parts = try inParallel(runs.count, connections: connections) { index, connection, _ in
            let from = Date(timeIntervalSince1970: Double(runs[index].lowerBound) * 3600)
            let to = Date(timeIntervalSince1970: Double(runs[index].upperBound + 1) * 3600)
            // date_bin from a UTC hour: no time zone conversion per row, which date_trunc(…,
            // 'UTC') did (a third of the query), and no numeric arithmetic, which extract(epoch
            // …) does. The sum wraps as Swift's &+ does: taken modulo 2^64, read back as the
            // same bits.
            return try connection.query(
                """
                SELECT date_bin('1 hour', a.created_at, '2000-01-01 00:00:00+00') AS hour, count(*) AS count,
                       \(unsafeSQL: BacktestWindowCache.hashSumSQL(BacktestWindowCache.rowHashSQL)) AS hashes
                FROM provisioning_attempts a WHERE a.created_at >= \(from) AND a.created_at < \(to) GROUP BY 1
                """
            ).map { row -> (Int64, BacktestWindowCache.Fingerprint) in
                let hour: Date = try row.decode("hour")
                let hashes: String = try row.decode("hashes")
                guard let sum = BacktestWindowCache.hashSum(text: hashes) else {
                    throw PostgresError(
                        code: .decoding, message: "an hour's hash sum is not a 64-bit number: \(hashes)")
                }
                return (
                    Int64((hour.timeIntervalSince1970 / 3600).rounded()),
                    .init(count: try row.decode("count"), hashSum: sum)
                )
            }
        }
        return Dictionary(parts.joined(), uniquingKeysWith: { first, _ in first })
    }

    /// Keeps in `cache` every hour of `hours` read whole in `pages` (all but those `except`
    /// holds), as this snapshot holds it: an hour without rows too.
    package static func keep(
        _ pages: [Page], hours: ClosedRange<Int64>, except: [Int64: BacktestWindowCache.Hour],
        queries: [VelocityQuery], in cache: BacktestWindowCache
    ) {
        let empty = BacktestWindowCache.Hour(
            fingerprint: .empty, attempts: [], names: [], features: [], recorded: RecordedVelocity(queries: queries))
        var buckets: [Int64: BacktestWindowCache.Hour] = [:]
        for hour in hours where except[hour] == nil { buckets[hour] = empty }
        for page in pages {
            for row in page.attempts.indices {
                let hour = Int64((page.attempts[row].time.timeIntervalSince1970 / 3600).rounded(.down))
                guard buckets[hour] != nil else { continue }  // a partial hour at either end, or a recent one
                buckets[hour]!.fingerprint.count += 1
                buckets[hour]!.fingerprint.hashSum &+= page.hashes[row]
                buckets[hour]!.attempts.append(page.attempts[row])
                buckets[hour]!.names.append(page.names[row])
                buckets[hour]!.features.append(page.features[row])
                buckets[hour]!.recorded.append(row: row, of: page.recorded)
            }
        }
        cache.store(buckets.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) })
    }
}

extension BacktestHistory.Page {
    /// A kept hour's attempts with their recorded values for `queries`: as kept when the last run
    /// had the same queries; else the kept values of the queries both lists have, and the others
    /// parsed from the kept `features` text of only those attempts whose text names one of them.
    ///
    /// A candidate's new velocity window is usually recorded by no attempt (no live rule reads
    /// it), so its first run parses nothing: parsing every kept hour's text again was a third of
    /// that run. The check is a byte search for the query as a JSON string, which finds it both
    /// as a key and as an array entry's `"query"`; a text with an escape in it is parsed anyway
    /// (neither issuerd's writer nor jsonb's rendering of older rows escapes what a query name
    /// holds, but a hand-written one could).
    package init(kept: BacktestWindowCache.Hour, queries: [VelocityQuery]) {
        attempts = kept.attempts
        names = kept.names
        if kept.recorded.queries == queries {
            recorded = kept.recorded
            return
        }
        recorded = RecordedVelocity(queries: queries)
        recorded.reserveCapacity(rows: kept.attempts.count)
        let columnOf = Dictionary(
            kept.recorded.queries.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let columns = queries.map { columnOf[$0] }
        let needles = zip(queries, columns).compactMap { query, column in
            column == nil ? Array("\"\(query.description)\"".utf8) : nil
        }
        for (row, text) in kept.features.enumerated() {
            if needles.isEmpty || !Self.mayName(text, any: needles) {
                recorded.append(row: row, of: kept.recorded, columns: columns)
            } else {
                recorded.append(storedFeatures: text)
            }
        }
    }

    /// Whether `text` holds one of `needles` (or a backslash: an escape could spell one differently).
    package static func mayName(_ text: String, any needles: [[UInt8]]) -> Bool {
        text.containsUTF8(backslash) || needles.contains { text.containsUTF8($0) }
    }

    private static let backslash = [UInt8(ascii: "\\")]
}
