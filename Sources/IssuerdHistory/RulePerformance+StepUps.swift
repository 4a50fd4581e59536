import Foundation
import IssuerdPostgres

extension RulePerformance {
    /// Each rule's step-ups over a period: started, completed and the median seconds to complete,
    /// from the step-up roll-up (``ConsoleRollup/catchUpStepUps(now:settle:needed:connection:)``)
    /// for its settled hours and from the yellow attempts for the rest.
    ///
    /// The median is exact (PostgreSQL's `percentile_cont(0.5)` over every completion time)
    /// without reading every time: the rolled-up hours' bucket counts are summed, the bucket (or
    /// two) holding the middle is found, and only the times in it are read, as one slice of each
    /// hour's sorted times.
    struct StepUps {
        struct Key: Hashable {
            var ruleID: String
            var mode: String
        }

        var started = 0
        var completed = 0
        var medianSeconds: Double?
        /// Completion times per bucket, rolled up and raw.
        fileprivate var counts: [Int: Int] = [:]
        /// The raw rows' completion times and their buckets.
        fileprivate var raw: [(bucket: Int, seconds: Double)] = []

        /// Counts one raw step-up.
        fileprivate mutating func add(completed: Bool, seconds: Double?, bucket: Int?) {
            started += 1
            guard completed else { return }
            self.completed += 1
            if let seconds, let bucket {
                counts[bucket, default: 0] += 1
                raw.append((bucket, seconds))
            }
        }

        /// Reads every rule's step-ups of `[since, until)`, in the caller's snapshot.
        static func read(
            since: Date, until: Date, coverage: ConsoleRollup.Coverage, connection: PostgresConnection
        ) throws -> [Key: StepUps] {
            let split = ConsoleRollup.split(since: since, until: until, coverage: coverage)
            var all: [Key: StepUps] = [:]
            for row in try connection.query(
                """
                SELECT rule_id, mode, sum(started)::bigint AS started, sum(completed)::bigint AS completed
                FROM console_hourly_stepups WHERE hour >= \(split.rolledFrom) AND hour < \(split.rolledTo)
                GROUP BY rule_id, mode
                """)
            {
                let key = Key(ruleID: try row.decode("rule_id"), mode: try row.decode("mode"))
                all[key, default: StepUps()].started += Int(try row.decode("started", as: Int64.self))
                all[key, default: StepUps()].completed += Int(try row.decode("completed", as: Int64.self))
            }
            for row in try connection.query(
                """
                SELECT rule_id, mode, u.bucket, sum(u.n)::bigint AS n
                FROM console_hourly_stepups CROSS JOIN LATERAL unnest(buckets, counts) AS u(bucket, n)
                WHERE hour >= \(split.rolledFrom) AND hour < \(split.rolledTo)
                GROUP BY rule_id, mode, u.bucket
                """)
            {
                let key = Key(ruleID: try row.decode("rule_id"), mode: try row.decode("mode"))
                all[key, default: StepUps()].counts[Int(try row.decode("bucket", as: Int32.self)), default: 0] +=
                    Int(try row.decode("n", as: Int64.self))
            }
            for row in try connection.query(
                """
                SELECT rule_id, mode, completed, seconds, \(unsafeSQL: ConsoleRollup.stepUpBucketSQL("seconds")) AS bucket
                FROM (\(unsafeSQL: ConsoleRollup.stepUpRowsSQL)) s
                WHERE (created_at >= \(since) AND created_at < \(split.rolledFrom))
                   OR (created_at >= \(split.rolledTo) AND created_at < \(until))
                """)
            {
                let key = Key(ruleID: try row.decode("rule_id"), mode: try row.decode("mode"))
                let completed = try row.decode("completed", as: Bool.self)
                let seconds = try row.decode("seconds", as: Double?.self)
                let bucket = try row.decode("bucket", as: Int32?.self).map(Int.init)
                // In place: a copy of the entry would copy its raw times on every row.
                all[key, default: StepUps()].add(completed: completed, seconds: seconds, bucket: bucket)
            }
            for key in Array(all.keys) {
                all[key]!.medianSeconds = try median(of: all[key]!, key: key, split: split, connection: connection)
            }
            return all
        }

        /// `percentile_cont(0.5)` over the completion times: the one in the middle, or the two
        /// either side of it interpolated as PostgreSQL does (`lo + (hi - lo) * 0.5`).
        private static func median(
            of stepUps: StepUps, key: Key, split: ConsoleRollup.Split, connection: PostgresConnection
        ) throws -> Double? {
            let total = stepUps.counts.values.reduce(0, +)
            guard total > 0 else { return nil }
            let ranks = [(total - 1) / 2, total / 2]
            // Each middle rank's bucket and its rank among that bucket's times.
            var places: [(bucket: Int, rank: Int)] = []
            for rank in ranks {
                var before = 0
                for bucket in stepUps.counts.keys.sorted() {
                    let count = stepUps.counts[bucket]!
                    if rank < before + count {
                        places.append((bucket, rank - before))
                        break
                    }
                    before += count
                }
            }
            var times: [Int: [Double]] = [:]
            for bucket in Set(places.map(\.bucket)) {
                var values = stepUps.raw.filter { $0.bucket == bucket }.map(\.seconds)
                for row in try connection.query(
                    """
                    SELECT x FROM console_hourly_stepups s
                    CROSS JOIN LATERAL (
                        SELECT coalesce(sum(u.n) FILTER (WHERE u.bucket < \(bucket)), 0)::int AS skip,
                               coalesce(sum(u.n) FILTER (WHERE u.bucket = \(bucket)), 0)::int AS take
                        FROM unnest(s.buckets, s.counts) AS u(bucket, n)) p
                    CROSS JOIN LATERAL unnest(s.seconds[p.skip + 1 : p.skip + p.take]) AS x
                    WHERE s.hour >= \(split.rolledFrom) AND s.hour < \(split.rolledTo)
                      AND s.rule_id = \(key.ruleID) AND s.mode = \(key.mode) AND \(bucket) = ANY (s.buckets)
                    """)
                {
                    values.append(try row.decode("x", as: Double.self))
                }
                times[bucket] = values.sorted()
            }
            let low = times[places[0].bucket]![places[0].rank]
            guard ranks[1] > ranks[0] else { return low }
            let high = times[places[1].bucket]![places[1].rank]
            return low + (high - low) * 0.5
        }
    }
}
