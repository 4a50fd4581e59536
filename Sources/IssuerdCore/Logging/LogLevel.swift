/// Severity of a log line, ordered from the most verbose to the most severe.
///
/// Library layers log at ``debug`` and below; the executable and the HTTP boundary log at
/// ``info`` and above.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error, critical

    /// Parses a level name as written in `ISSUERD_LOG_LEVEL` (case-insensitive).
    ///
    /// - Parameter name: `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`.
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = level
    }

    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}
