import Foundation
import IssuerdCore
import Testing

/// W3C Trace Context's `traceparent`, parsed by the specification's rules (section 3.2).
@Suite("traceparent parsing and the thread's current trace")
struct TraceContextTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"

    @Test("A valid traceparent keeps its trace id and flags; the span is new")
    func keepsValid() {
        let parent = "00-\(Self.traceID)-00f067aa0ba902b7-00"
        let trace = TraceContext.resolve(parent)
        #expect(trace.traceID == Self.traceID)
        #expect(trace.flags == "00")
        #expect(trace.spanID.count == 16 && trace.spanID != "00f067aa0ba902b7")
        #expect(trace.traceparent == "00-\(Self.traceID)-\(trace.spanID)-00")
        #expect(TraceContext(traceparent: parent)?.spanID == "00f067aa0ba902b7")
        // A later version is read by its version-00 fields.
        #expect(TraceContext.resolve("01-\(Self.traceID)-00f067aa0ba902b7-01-extra").traceID == Self.traceID)
    }

    @Test(
        "A malformed traceparent starts a new trace",
        arguments: [
            "", "garbage", "00-\(traceID)-00f067aa0ba902b7", "00-\(traceID.uppercased())-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-\(traceID)-0000000000000000-01",
            "ff-\(traceID)-00f067aa0ba902b7-01", "00-\(traceID)-00f067aa0ba902b7-01-extra",
            "00-\(traceID)x-00f067aa0ba902b7-01",
        ])
    func replacesMalformed(header: String) {
        let trace = TraceContext.resolve(header)
        #expect(trace.traceID != Self.traceID)
        #expect(trace.traceID.count == 32 && trace.flags == "01")
        #expect(trace.spanID.count == 16)
        // A new trace's ids are valid ones: the header it answers with reads back.
        #expect(TraceContext(traceparent: trace.traceparent) == trace)
        #expect(TraceContext(traceparent: header) == nil)
    }

    @Test("Log lines written while a trace runs on the thread carry its trace id")
    func logLinesCarryTheTrace() {
        final class Records: LogHandler, Sendable {
            let records = Lock<[LogRecord]>([])
            func write(_ record: LogRecord) { records.withLock { $0.append(record) } }
        }
        let records = Records()
        let logger = Logger(label: "test", minimumLevel: .debug, handler: records)
        let trace = TraceContext.resolve(nil)
        logger.info("before")
        TraceContext.run(trace) {
            #expect(TraceContext.current == trace)
            logger.debug("inside")
        }
        #expect(TraceContext.current == nil)
        let lines = records.records.withLock { $0 }
        #expect(lines[0].metadata["traceId"] == nil)
        #expect(lines[1].metadata["traceId"] == .string(trace.traceID))
    }
}
