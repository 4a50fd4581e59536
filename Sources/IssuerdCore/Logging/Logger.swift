import Foundation

/// Receives finished log records. Implementations must be safe to call from any thread.
public protocol LogHandler: Sendable {
    /// Writes one record.
    ///
    /// - Parameter record: The level, label, message and merged metadata of the line.
    func write(_ record: LogRecord)
}

/// One log line before it is formatted.
public struct LogRecord: Sendable {
    public var timestamp: Date
    public var level: LogLevel
    public var label: String
    public var message: String
    public var metadata: LogMetadata

    public init(timestamp: Date, level: LogLevel, label: String, message: String, metadata: LogMetadata) {
        self.timestamp = timestamp
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
    }
}

/// A small logger shaped like swift-log: a label, a minimum level, metadata, and a handler.
///
/// Loggers are values: `logger.with(["requestId": "…"])` returns a copy that adds metadata to
/// every line, which is how request ids travel through a request.
public struct Logger: Sendable {
    /// Names the component that logs, e.g. `issuerd.http`.
    public var label: String
    /// Lines below this level are dropped before their message is built.
    public var minimumLevel: LogLevel
    /// Metadata added to every line written through this logger.
    public var metadata: LogMetadata
    private let handler: any LogHandler

    /// Creates a logger.
    ///
    /// - Parameters:
    ///   - label: The component name written in every line.
    ///   - minimumLevel: Lines below this level are dropped.
    ///   - handler: Where the lines go; ``JSONLogHandler/standardOutput`` in production.
    public init(label: String, minimumLevel: LogLevel = .info, handler: any LogHandler = JSONLogHandler.standardOutput)
    {
        self.label = label
        self.minimumLevel = minimumLevel
        self.metadata = [:]
        self.handler = handler
    }

    /// A logger that writes nothing, for tests and tools that must stay quiet.
    public static var silent: Logger {
        Logger(label: "silent", minimumLevel: .critical, handler: DiscardingLogHandler())
    }

    /// Returns a copy with another label, keeping level, metadata and handler.
    public func labelled(_ label: String) -> Logger {
        var copy = self
        copy.label = label
        return copy
    }

    /// Returns a copy that adds `extra` to every line.
    public func with(_ extra: LogMetadata) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { _, new in new }
        return copy
    }

    /// Writes a line at `level` if the level passes ``minimumLevel``.
    public func log(
        _ level: LogLevel, _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]
    ) {
        guard level >= minimumLevel else { return }
        var merged = self.metadata
        merged.merge(metadata()) { _, new in new }
        // Every line written while a request's work runs on this thread names its trace.
        if merged["traceId"] == nil, let trace = TraceContext.current { merged["traceId"] = .string(trace.traceID) }
        handler.write(LogRecord(timestamp: Date(), level: level, label: label, message: message(), metadata: merged))
    }

    public func trace(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.trace, message(), metadata())
    }
    public func debug(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.debug, message(), metadata())
    }
    public func info(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.info, message(), metadata())
    }
    public func notice(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.notice, message(), metadata())
    }
    public func warning(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.warning, message(), metadata())
    }
    public func error(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.error, message(), metadata())
    }
    public func critical(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.critical, message(), metadata())
    }
}

/// Drops every record.
public struct DiscardingLogHandler: LogHandler {
    public init() {}
    public func write(_ record: LogRecord) {}
}
