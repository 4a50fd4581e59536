import Foundation
import IssuerdCore
import Testing

/// Collects records for assertions.
final class CapturingLogHandler: LogHandler {
    // Guarded by Lock.
    let records = Lock<[LogRecord]>([])
    func write(_ record: LogRecord) { records.withLock { $0.append(record) } }
}

@Suite("JSON log lines")
struct LoggerTests {
    @Test("A line is one valid JSON object with fixed keys first")
    func jsonLine() throws {
        let record = LogRecord(
            timestamp: Date(timeIntervalSince1970: 0), level: .warning, label: "issuerd.test",
            message: "line \"one\"\nnext",
            metadata: ["pan": LogValue(PrimaryAccountNumber("5399999999999999")!), "n": 3])
        let line = JSONLogHandler.format(record)
        #expect(
            line.hasPrefix(
                "{\"ts\":\"1970-01-01T00:00:00.000Z\",\"level\":\"warning\",\"logger\":\"issuerd.test\",\"msg\":"))
        #expect(!line.contains("\n"))
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "line \"one\"\nnext")
        #expect(object["pan"] as? String == "539999******9999")
        #expect(object["n"] as? Int == 3)
    }

    @Test("Levels below the minimum are dropped without building the message")
    func levels() {
        let handler = CapturingLogHandler()
        let logger = Logger(label: "t", minimumLevel: .info, handler: handler).with(["requestId": "r1"])
        logger.debug(
            {
                Issue.record("debug message was built")
                return "no"
            }())
        logger.info("yes", ["k": "v"])
        let records = handler.records.withLock { $0 }
        #expect(records.count == 1)
        #expect(records.first?.metadata["requestId"] == "r1")
        #expect(records.first?.metadata["k"] == "v")
    }

    @Test("Level names parse case-insensitively", arguments: LogLevel.allCases)
    func levelNames(level: LogLevel) {
        #expect(LogLevel(name: level.description.uppercased()) == level)
    }
}
