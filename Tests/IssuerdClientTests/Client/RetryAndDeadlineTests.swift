import Foundation
import IssuerdClient
import Testing

@Suite("Time budget and retries")
struct RetryAndDeadlineTests {
    static let unavailable = StubHTTPServer.Reply.json(503, #"{"error":{"code":"database_unavailable","message":"x"}}"#)

    static func approvedAnswer() -> StubHTTPServer.Reply {
        .json(
            200,
            encoding: ProvisioningResponse(
                encryptedPassData: "AAEC", activationData: "AwQF",
                ephemeralPublicKey: ClientFixtures.ephemeralKey().base64EncodedString(),
                wrappedKey: nil, decision: Decision(flow: "green", attemptId: "att_1", reasons: [])))
    }

    static func provision(_ client: IssuerdClient) async throws -> ProvisioningResult {
        try await client.provisioningData(
            cardId: "card_1", certificates: [Data([1]), Data([2])], nonce: Data([3]), nonceSignature: Data([4]))
    }

    @Test func stallingServerTimesOutWithinTheBudget() async throws {
        try await withStubServer { _, _ in
            .stall
        } body: { server in
            let client = ClientFixtures.client(for: server, budget: .milliseconds(500))
            let error = await #expect(throws: IssuerdClientError.self) { try await Self.provision(client) }
            #expect(error?.code == .timedOut)
            #expect(server.requests.count == 1)
        }
    }

    @Test func budgetCoversTheTokenProvider() async throws {
        try await withStubServer { _, _ in
            .json(200, #"{"cards":[]}"#)
        } body: { server in
            let client = IssuerdClient(
                baseURL: server.baseURL, timeBudget: .milliseconds(300),
                tokenProvider: {
                    try await Task.sleep(for: .seconds(30))
                    return ClientFixtures.token
                })
            let error = await #expect(throws: IssuerdClientError.self) { try await client.cards() }
            #expect(error?.code == .timedOut)
            #expect(server.requests.isEmpty)
        }
    }

    @Test func postIsRetriedAfter503WithTheSameIdempotencyKeyAndAFreshRequestId() async throws {
        try await withStubServer { _, index in
            index == 0 ? Self.unavailable : Self.approvedAnswer()
        } body: { server in
            let result = try await Self.provision(ClientFixtures.client(for: server))
            #expect(result.approved?.attemptId == "att_1")
            let requests = server.requests
            try #require(requests.count == 2)
            let keys = requests.map { $0.header("Idempotency-Key") }
            #expect(keys[0] != nil)
            #expect(keys[0] == keys[1])
            #expect(requests[0].header("X-Request-Id") != requests[1].header("X-Request-Id"))
            #expect(requests[0].body == requests[1].body)
        }
    }

    @Test func separateCallsUseSeparateIdempotencyKeys() async throws {
        try await withStubServer { _, _ in
            Self.approvedAnswer()
        } body: { server in
            let client = ClientFixtures.client(for: server)
            _ = try await Self.provision(client)
            _ = try await Self.provision(client)
            let keys = Set(server.requests.compactMap { $0.header("Idempotency-Key") })
            #expect(keys.count == 2)
        }
    }

    @Test func getIsRetriedAfter503() async throws {
        try await withStubServer { _, index in
            index == 0 ? Self.unavailable : .json(200, #"{"cards":[]}"#)
        } body: { server in
            let cards = try await ClientFixtures.client(for: server).cards()
            #expect(cards.isEmpty)
            #expect(server.requests.count == 2)
        }
    }

    @Test func persistent503EndsAsServerErrorAfterMaxAttempts() async throws {
        try await withStubServer { _, _ in
            Self.unavailable
        } body: { server in
            let client = ClientFixtures.client(
                for: server, retry: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(5)))
            let error = await #expect(throws: IssuerdClientError.self) { try await Self.provision(client) }
            #expect(error?.code == .server)
            #expect(error?.status == 503)
            #expect(error?.serverCode == "database_unavailable")
            #expect(server.requests.count == 3)
            #expect(Set(server.requests.compactMap { $0.header("Idempotency-Key") }).count == 1)
        }
    }

    @Test func retryThatCannotFitTheBudgetIsNotAttempted() async throws {
        try await withStubServer { _, _ in
            .json(503, #"{"error":{"code":"database_unavailable","message":"x"}}"#, headers: ["Retry-After": "60"])
        } body: { server in
            let client = ClientFixtures.client(
                for: server, budget: .seconds(3), retry: RetryPolicy(maxAttempts: 3, maxBackoff: .seconds(120)))
            let error = await #expect(throws: IssuerdClientError.self) { try await client.cards() }
            // The informative 503, not a timeout spent waiting for a retry that could not finish.
            #expect(error?.code == .server)
            #expect(server.requests.count == 1)
        }
    }

    @Test(arguments: [400, 401, 404, 409, 422, 429, 500])
    func otherStatusesAreNotRetried(status: Int) async throws {
        try await withStubServer { _, _ in
            .json(status, #"{"error":{"code":"x","message":"x"}}"#)
        } body: { server in
            await #expect(throws: IssuerdClientError.self) {
                try await Self.provision(ClientFixtures.client(for: server))
            }
            #expect(server.requests.count == 1)
        }
    }
}
