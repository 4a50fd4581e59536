import Foundation

/// A request's place in a distributed trace, after W3C Trace Context (`traceparent`).
///
/// A request that arrives with a valid `traceparent` keeps its trace id and sampling flags; one
/// without (or with a malformed one) starts a trace. Either way this service's work is a span of
/// its own, with a fresh ``spanID``: the answer's `traceparent` names it, and so does every
/// outbound call the request causes (webhooks, Mastercard's Customer Service API, outbox
/// deliveries made later on its behalf), whose receivers then see it as their parent.
public struct TraceContext: Sendable, Equatable, CustomStringConvertible {
    /// The header's name (W3C Trace Context, section 3.2).
    public static let headerName = "traceparent"

    /// 32 lowercase hex digits, not all zero: the whole trace's id.
    public let traceID: String
    /// 16 lowercase hex digits, not all zero: this service's span.
    public let spanID: String
    /// The trace flags, two hex digits (`01`: sampled).
    public let flags: String

    /// The `traceparent` value naming this span: `00-<trace id>-<span id>-<flags>`.
    public var traceparent: String { "00-\(traceID)-\(spanID)-\(flags)" }

    public var description: String { traceparent }

    /// A span of the trace in `header` when it is a valid `traceparent`, else of a new trace.
    ///
    /// Per the specification, a version other than `00` is read by its `00` fields when it is
    /// long enough and not the invalid `ff`; anything else starts a new trace.
    public static func resolve(_ header: String?) -> TraceContext {
        if let header, let parent = TraceContext(traceparent: header) {
            return TraceContext(traceID: parent.traceID, spanID: randomHex(bytes: 8), flags: parent.flags)
        }
        return TraceContext(traceID: randomHex(bytes: 16), spanID: randomHex(bytes: 8), flags: "01")
    }

    /// The span a valid `traceparent` names (as ``traceparent`` writes it): for work done later
    /// on that span's behalf, such as an outbox delivery; nil for anything else.
    public init?(traceparent: String) {
        guard let (traceID, spanID, flags) = Self.parse(traceparent) else { return nil }
        self.init(traceID: traceID, spanID: spanID, flags: flags)
    }

    private init(traceID: String, spanID: String, flags: String) {
        self.traceID = traceID
        self.spanID = spanID
        self.flags = flags
    }

    /// The trace id, parent id and flags of a valid `traceparent`; nil for anything else.
    static func parse(_ header: String) -> (traceID: String, parentID: String, flags: String)? {
        let value = header.trimmingCharacters(in: .whitespaces)
        let fields = value.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard fields.count >= 4, fields[0].count == 2, isLowerHex(fields[0]), fields[0] != "ff" else { return nil }
        // Version 00 has exactly four fields; a later version may append more.
        if fields[0] == "00", fields.count != 4 { return nil }
        let (traceID, parentID, flags) = (fields[1], fields[2], fields[3])
        guard traceID.count == 32, isLowerHex(traceID), traceID.contains(where: { $0 != "0" }),
            parentID.count == 16, isLowerHex(parentID), parentID.contains(where: { $0 != "0" }),
            flags.count == 2, isLowerHex(flags)
        else { return nil }
        return (traceID, parentID, flags)
    }

    private static func isLowerHex(_ text: String) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `count` random bytes as hex, not all zero: from ``IdentifierRandom``, and no
    /// `String(format:)` (a formatted string a byte cost every request about 250,000
    /// instructions under callgrind: docs/performance.md, "Profiling").
    private static func randomHex(bytes count: Int) -> String {
        while true {
            var bytes = [UInt8](repeating: 0, count: count)
            bytes.withUnsafeMutableBytes { IdentifierRandom.fill($0) }
            // All zero is invalid; at 2^-64 it is a formality.
            if bytes.contains(where: { $0 != 0 }) { return Hex.lowercase(bytes) }
        }
    }

    private static let slot = ThreadLocal<TraceContext>()

    /// The trace of the request this thread works for, if any (``run(_:_:)``).
    public static var current: TraceContext? { slot.value }

    /// Runs `body` as work of `context` on this thread: log lines written meanwhile carry its
    /// trace id, and outbound calls its `traceparent`.
    public static func run<T>(_ context: TraceContext, _ body: () throws -> T) rethrows -> T {
        try slot.withValue(context, body)
    }
}
