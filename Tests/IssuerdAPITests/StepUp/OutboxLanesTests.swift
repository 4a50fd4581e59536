import Foundation
import IssuerdCore
import IssuerdOutbox
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The dispatcher's lanes: messages about different cards go at the same time, one card's one
/// after the other.
@Suite("Outbox lanes")
struct OutboxLanesTests {
    static func claimed(_ id: Int64, _ payload: TSPNotificationPayload) throws -> OutboxStore.Claimed {
        OutboxStore.Claimed(
            id: id, kind: .tsp, dedupKey: "lane-\(id)", payload: try PostgresJSON(encoding: payload), attempts: 1)
    }

    @Test("Messages naming a common card or token share a lane, in claim order; the others have lanes of their own")
    func split() throws {
        let messages = [
            try Self.claimed(1, TSPNotificationPayload(tokenReference: "tok-a", action: "suspend", cardId: "card-a")),
            try Self.claimed(2, TSPNotificationPayload(tokenReference: "tok-b", action: "suspend", cardId: "card-b")),
            // tok-c's card is card-a's: joins card-a's lane.
            try Self.claimed(3, TSPNotificationPayload(tokenReference: "tok-c", action: "suspend", cardId: "card-a")),
            try Self.claimed(4, TSPNotificationPayload(tokenReference: "tok-d", action: "delete")),
            // Names tok-d and card-b: joins the two lanes into one, in claim order.
            try Self.claimed(5, TSPNotificationPayload(tokenReference: "tok-d", action: "resume", cardId: "card-b")),
            try Self.claimed(6, TSPNotificationPayload(tokenReference: "tok-a", action: "resume", cardId: "card-a")),
            // A card id spelt like a token reference is not that token.
            try Self.claimed(7, TSPNotificationPayload(tokenReference: "tok-e", action: "delete", cardId: "tok-a")),
        ]
        let lanes = OutboxLanes.split(messages).map { $0.map(\.id) }
        #expect(lanes == [[1, 3, 6], [2, 4, 5], [7]])
    }

    @Test(
        "Two cards' messages are in flight at once, while one card's second message waits for the answer to its first")
    func twoCardsAtOnceOneCardInOrder() throws {
        let receiver = try WebhookReceiver(concurrent: true)
        // Card A's first message is held until card B's has arrived: delivered one at a time,
        // card B's would wait behind it and never come.
        let overlapped = Lock(false)
        receiver.gate { [receiver] request in
            guard request.header("Idempotency-Key") == "lanes-a-1" else { return }
            receiver.wait { _ in receiver.events.contains("arrived lanes-b-1") }
            overlapped.withLock { $0 = receiver.events.contains("arrived lanes-b-1") }
        }
        let app = try StepUpFlowTests.webhookApp(
            receiver,
            extra: [
                "ISSUERD_OUTBOX_DISPATCH": "false", "ISSUERD_OUTBOX_LEASE": "120s",
                "ISSUERD_OUTBOX_HTTP_TIMEOUT": "60s", "ISSUERD_OUTBOX_CONCURRENCY": "4",
            ])
        try app.pool.transaction { connection in
            for (key, token, action, card) in [
                ("lanes-a-1", "tok-a", "suspend", "card-a"), ("lanes-a-2", "tok-a", "resume", "card-a"),
                ("lanes-b-1", "tok-b", "suspend", "card-b"),
            ] {
                try OutboxStore.enqueue(
                    kind: .tsp, dedupKey: key,
                    payload: TSPNotificationPayload(tokenReference: token, action: action, cardId: card),
                    connection: connection)
            }
        }
        #expect(try app.application.outbox.dispatchOnce() == 3)
        #expect(overlapped.withLock { $0 })
        let events = receiver.events
        let firstAnswered = try #require(events.firstIndex(of: "answered lanes-a-1"))
        let secondArrived = try #require(events.firstIndex(of: "arrived lanes-a-2"))
        #expect(firstAnswered < secondArrived, "\(events)")
        #expect(try OutboxTests.statuses(app) == ["delivered": 3])
    }
}
