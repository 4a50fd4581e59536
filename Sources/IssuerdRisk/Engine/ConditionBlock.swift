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
            var block: @Sendable (RiskInput, [Int?]) -> (fired: UInt64, unknown: UInt64) = { _, _ in (0, 0) }
            for (offset, rule) in conditions[start..<min(start + width, conditions.count)].enumerated() {
                let previous = block
                let condition = rule.evaluate
                let bit: UInt64 = 1 << UInt64(offset)
                block = { input, velocity in
                    var (fired, unknown) = previous(input, velocity)
                    switch condition(input, velocity) {
                    case .some(true): fired |= bit
                    case .some(false): break
                    case .none: unknown |= bit
                    }
                    return (fired, unknown)
                }
            }
            return ConditionBlock(evaluate: block)
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
