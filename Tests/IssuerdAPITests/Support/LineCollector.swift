import IssuerdCore

/// Every log line an application writes, in the production JSON format.
final class LineCollector: LogHandler, Sendable {
    private let storage = Lock<[String]>([])

    func write(_ record: LogRecord) { storage.withLock { $0.append(JSONLogHandler.format(record)) } }

    var lines: [String] { storage.withLock { $0 } }

    /// The lines that hold `text`.
    func count(of text: String) -> Int { lines.filter { $0.contains(text) }.count }
}
