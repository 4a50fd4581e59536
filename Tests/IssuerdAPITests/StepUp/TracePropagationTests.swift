import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// W3C `traceparent` through a request: kept from the caller (or made), answered, in every log
/// line of the request, and on the webhook its outbox message causes, delivered later by the
/// dispatcher; with issuerd's version in the webhook's `User-Agent`.
@Suite("W3C traceparent through a request and its outbound calls")
struct TracePropagationTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"

    @Test("A caller's traceparent: its trace id answered, in every log line of the request, and on the webhook")
    func keptAndPropagated() throws {
        let receiver = try WebhookReceiver()
        let lines = LineCollector()
        let app = try StepUpFlowTests.webhookApp(
            receiver, logger: Logger(label: "issuerd", minimumLevel: .debug, handler: lines))
        let fixture = try StepUpFixture(app)
        let created = try app.postAsTSP(
            "/v1/tsp/activation-codes",
            #"{"tokenReference":"\#(fixture.tokenReference)","activationMethodId":"sms-1"}"#,
            headers: ["traceparent": "00-\(Self.traceID)-\(Self.callerSpan)-01"])
        #expect(created.status == 201, "\(created.text)")

        // The answer names issuerd's own span of the caller's trace.
        let answered = try #require(created.header("traceparent"))
        let fields = answered.split(separator: "-").map(String.init)
        #expect(fields.count == 4)
        #expect(fields[0] == "00" && fields[1] == Self.traceID && fields[3] == "01")
        #expect(fields[2].count == 16 && fields[2] != Self.callerSpan)

        // Every line of the request (its requestId) carries the trace id, the access log's included.
        let requestID = try #require(created.header("X-Request-Id"))
        let ofRequest = lines.lines.filter { $0.contains(#""requestId":"\#(requestID)""#) }
        #expect(ofRequest.contains { $0.contains(#""msg":"request""#) })
        #expect(!ofRequest.isEmpty && ofRequest.allSatisfy { $0.contains(#""traceId":"\#(Self.traceID)""#) })

        // The code's delivery, made later by the dispatcher thread, is a child of the request's span.
        let delivered = receiver.wait { $0.contains { $0.path == "/notify" } }
        let message = try #require(delivered.first { $0.path == "/notify" })
        #expect(message.header("traceparent") == answered)
        #expect(message.header("User-Agent") == "issuerd/\(TestApplication.build.version)")
    }

    @Test("Without a traceparent, or with a malformed one, the request starts a trace of its own")
    func madeWhenMissingOrMalformed() throws {
        let app = try TestApplication(transport: .live)
        for header in [
            nil, "00-\(Self.traceID.uppercased())-\(Self.callerSpan)-01",
            "00-" + String(repeating: "0", count: 32) + "-\(Self.callerSpan)-01",
            "ff-\(Self.traceID)-\(Self.callerSpan)-01", "garbage",
        ] {
            let response = try app.client.get("/healthz", headers: header.map { ["traceparent": $0] } ?? [:])
            let answered = try #require(response.header("traceparent"))
            let fields = answered.split(separator: "-").map(String.init)
            #expect(fields.count == 4 && fields[0] == "00" && fields[3] == "01")
            #expect(fields[1].count == 32 && fields[1] != Self.traceID.uppercased() && fields[1] != Self.traceID)
            #expect(fields[1].allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(fields[2].count == 16)
        }
    }
}
