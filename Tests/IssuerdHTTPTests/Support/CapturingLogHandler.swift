import Foundation
import IssuerdCore

/// Keeps every log record so a test can inspect the lines a component wrote.
final class CapturingLogHandler: LogHandler {
    // Guarded by Lock: records appended from server threads, read by the test.
    private let storage = Lock<[LogRecord]>([])

    func write(_ record: LogRecord) {
        storage.withLock { $0.append(record) }
    }

    /// Every record so far.
    var records: [LogRecord] { storage.withLock { $0 } }

    /// Each record rendered by the production formatter and parsed back as a JSON object.
    func jsonLines() -> [[String: Any]] {
        records.compactMap { record in
            let line = JSONLogHandler.format(record)
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// A logger writing here at `level` and above.
    func logger(_ label: String = "test", level: LogLevel = .debug) -> Logger {
        Logger(label: label, minimumLevel: level, handler: self)
    }
}
