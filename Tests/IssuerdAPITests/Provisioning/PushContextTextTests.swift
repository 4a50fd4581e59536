import Foundation
import IssuerdPostgres
import IssuerdRisk
import Testing

@testable import IssuerdAPI

/// The context statement's text is written once per shape and reused; each request builds
/// only its bindings through the same code. A reused build must equal a fresh one.
@Suite("Context statement text, kept per shape", .serialized)
struct PushContextTextTests {
    static let queries: [VelocityQuery] = VelocityMetric.allCases.flatMap { metric in
        metric.allowedKeys.flatMap { key in
            [3_600, 86_400].map { VelocityQuery(metric: metric, key: key, windowSeconds: $0) }
        }
    }

    static func build(
        card: String, customer: String, device: String?, now: Date, queries: [VelocityQuery] = queries,
        customerWindow: TimeInterval = 60
    ) -> PostgresQuery {
        PushContext.statement(
            cardID: card, customerID: customer,
            velocity: VelocityBatch(
                subject: VelocitySubject(cardID: card, deviceID: device, customerID: customer), time: now,
                queries: queries),
            customerWindow: customerWindow, cardWindow: 300, now: now
        ).query
    }

    @Test("A reused text with new bindings is what a fresh build writes, for each shape")
    func reusedEqualsFresh() {
        let first = Date(timeIntervalSince1970: 1_790_000_000)
        let later = first.addingTimeInterval(12.345)
        for device in [nil, "dev-1"] as [String?] {
            PushContext.forgetTexts()
            _ = Self.build(card: "card-a", customer: "cust-a", device: device, now: first)  // writes and keeps the text
            let reused = Self.build(card: "card-b", customer: "cust-b", device: device.map { $0 + "x" }, now: later)
            PushContext.forgetTexts()
            let fresh = Self.build(card: "card-b", customer: "cust-b", device: device.map { $0 + "x" }, now: later)
            #expect(reused.sql == fresh.sql)
            #expect(reused.bindings == fresh.bindings)
            #expect(
                reused.sql.contains("$\(fresh.bindings.count)") && !reused.sql.contains("$\(fresh.bindings.count + 1)"))
        }
        // Another shape (no device; other queries) gets its own text.
        let withDevice = Self.build(card: "c", customer: "u", device: "d", now: first)
        let without = Self.build(card: "c", customer: "u", device: nil, now: first)
        let fewer = Self.build(
            card: "c", customer: "u", device: "d", now: first, queries: Array(Self.queries.prefix(2)))
        #expect(withDevice.sql != without.sql)
        #expect(withDevice.sql != fewer.sql)
        #expect(withDevice.bindings.count > without.bindings.count)
        // A rate-limit window wider than every velocity window moves the customer scan's bound.
        let wider = Self.build(card: "c", customer: "u", device: "d", now: first, customerWindow: 30 * 86_400)
        #expect(wider.sql != withDevice.sql)
        PushContext.forgetTexts()
        #expect(
            Self.build(card: "c", customer: "u", device: "d", now: first, customerWindow: 30 * 86_400).sql == wider.sql)
    }

    static func buildTSP(
        request: String, token: String, device: String?, now: Date, queries: [VelocityQuery] = queries
    ) -> PostgresQuery {
        TokenizationContext.statement(
            requestID: request, tokenReference: token, fingerprint: Array(request.utf8), deviceID: device,
            velocity: VelocityBatch(subject: VelocitySubject(deviceID: device), time: now, queries: queries),
            pushesSince: now.addingTimeInterval(-900)
        ).query
    }

    @Test("The TSP authorization's context statement: a reused text with new bindings is a fresh build")
    func tspReusedEqualsFresh() {
        let first = Date(timeIntervalSince1970: 1_790_000_000)
        let later = first.addingTimeInterval(7.5)
        for device in [nil, "dev-1"] as [String?] {
            TokenizationContext.forgetTexts()
            _ = Self.buildTSP(request: "req-a", token: "DNITHE1", device: device, now: first)
            let reused = Self.buildTSP(request: "req-b", token: "DNITHE2", device: device.map { $0 + "x" }, now: later)
            TokenizationContext.forgetTexts()
            let fresh = Self.buildTSP(request: "req-b", token: "DNITHE2", device: device.map { $0 + "x" }, now: later)
            #expect(reused.sql == fresh.sql)
            #expect(reused.bindings == fresh.bindings)
            #expect(
                reused.sql.contains("$\(fresh.bindings.count)") && !reused.sql.contains("$\(fresh.bindings.count + 1)"))
        }
        let withDevice = Self.buildTSP(request: "r", token: "t", device: "d", now: first)
        let without = Self.buildTSP(request: "r", token: "t", device: nil, now: first)
        let fewer = Self.buildTSP(
            request: "r", token: "t", device: "d", now: first, queries: Array(Self.queries.prefix(2)))
        #expect(withDevice.sql != without.sql)
        #expect(withDevice.sql != fewer.sql)
        #expect(withDevice.bindings.count > without.bindings.count)
        // A rate-limit window wider than every velocity window moves the customer scan's bound.
        let wider = Self.build(card: "c", customer: "u", device: "d", now: first, customerWindow: 30 * 86_400)
        #expect(wider.sql != withDevice.sql)
        PushContext.forgetTexts()
        #expect(
            Self.build(card: "c", customer: "u", device: "d", now: first, customerWindow: 30 * 86_400).sql == wider.sql)
    }
}
