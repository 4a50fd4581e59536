/// Up to 64 rule conditions folded into one closure that returns two bit masks: the rules
/// that fired and the rules whose condition was unknown.
///
/// Why one closure rather than an array of them: calling closures stored in an array
/// retains and releases each one per request (the array could change under the call), which
/// cost more than the rules themselves. Closures captured by another closure are immutable
/// for its lifetime and are called without reference counting.
struct ConditionBlock: Sendable {
    /// Rules per block: one bit each in a `UInt64`.
    static let width = 64

    /// Evaluates every rule of the block (no short circuit across rules).
    let evaluate: @Sendable (RiskInput, [Int?]) -> (fired: UInt64, unknown: UInt64)

    /// Blocks for `conditions`, in order: rule `i` is bit `i % 64` of block `i / 64`.
    static func blocks(_ conditions: [RuleCondition]) -> [ConditionBlock] {
        stride(from: 0, to: conditions.count, by: width).map { start in
            let chunk = Array(conditions[start..<min(start + width, conditions.count)])
            var block: @Sendable (RiskInput, [Int?]) -> (fired: UInt64, unknown: UInt64) = { _, _ in (0, 0) }
            var offset = 0
            // Four rules per link: fewer closure calls per request than one link per rule.
            while offset + 4 <= chunk.count {
                let (a, b, c, d) = (
                    chunk[offset].evaluate, chunk[offset + 1].evaluate, chunk[offset + 2].evaluate,
                    chunk[offset + 3].evaluate
                )
                let previous = block
                let first = UInt64(offset)
                block = { input, velocity in
                    var (fired, unknown) = previous(input, velocity)
                    record(a(input, velocity), first, &fired, &unknown)
                    record(b(input, velocity), first + 1, &fired, &unknown)
                    record(c(input, velocity), first + 2, &fired, &unknown)
                    record(d(input, velocity), first + 3, &fired, &unknown)
                    return (fired, unknown)
                }
                offset += 4
            }
            while offset < chunk.count {
                let condition = chunk[offset].evaluate
                let previous = block
                let bit = UInt64(offset)
                block = { input, velocity in
                    var (fired, unknown) = previous(input, velocity)
                    record(condition(input, velocity), bit, &fired, &unknown)
                    return (fired, unknown)
                }
                offset += 1
            }
            return ConditionBlock(evaluate: block)
        }
    }

    @inline(__always)
    private static func record(_ result: Bool?, _ bit: UInt64, _ fired: inout UInt64, _ unknown: inout UInt64) {
        switch result {
        case .some(true): fired |= 1 << bit
        case .some(false): break
        case .none: unknown |= 1 << bit
        }
    }
}

/// One rule's compiled condition.
///
/// The struct matters: a closure stored bare in an array (`[Reader<Bool>]`) is kept at the
/// most general abstraction and every call goes through a thunk that copies the whole
/// ``RiskInput``; inside a struct it keeps its natural calling convention.
struct RuleCondition: Sendable {
    let evaluate: Reader<Bool>
}
