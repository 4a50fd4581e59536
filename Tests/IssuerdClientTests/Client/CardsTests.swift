import Foundation
import IssuerdClient
import Testing

@Suite("GET /v1/cards")
struct CardsTests {
    static let cards = [
        CardSummary(
            cardId: "card_1", cardholderName: "KIM MINJI", primaryAccountSuffix: "1234",
            localizedDescription: "Issuer Platinum",
            paymentNetwork: "visa", primaryAccountIdentifier: "V-3018253329239943005544", status: "active",
            walletEligible: true),
        CardSummary(
            cardId: "card_2", cardholderName: "KIM MINJI", primaryAccountSuffix: "9876",
            localizedDescription: "Issuer Check",
            paymentNetwork: "mastercard", primaryAccountIdentifier: "M-1128", status: "lost", walletEligible: false),
    ]

    @Test func decodesTheCardListAndSendsTheContractHeaders() async throws {
        try await withStubServer { request, _ in
            guard ClientFixtures.isAuthorized(request) else { return ClientFixtures.unauthenticatedReply }
            guard request.method == "GET", request.path == "/v1/cards" else {
                return .json(404, #"{"error":{"code":"not_found","message":"no"}}"#)
            }
            return .json(200, encoding: CardList(cards: Self.cards))
        } body: { server in
            let cards = try await ClientFixtures.client(for: server).cards()
            #expect(cards == Self.cards)
            let request = try #require(server.requests.first)
            #expect(request.header("Accept") == "application/json")
            #expect(UUID(uuidString: request.header("X-Request-Id") ?? "") != nil)
            // A GET creates nothing: no idempotency key.
            #expect(request.header("Idempotency-Key") == nil)
        }
    }

    @Test func keepsThePathPrefixOfTheBaseURL() async throws {
        try await withStubServer { request, _ in
            request.path == "/issuerd/v1/cards"
                ? .json(200, #"{"cards":[]}"#) : .json(404, #"{"error":{"code":"not_found","message":"no"}}"#)
        } body: { server in
            let client = IssuerdClient(
                baseURL: try #require(URL(string: "http://127.0.0.1:\(server.port)/issuerd/")),
                tokenProvider: { ClientFixtures.token })
            let cards = try await client.cards()
            #expect(cards.isEmpty)
        }
    }

    @Test func expiredTokenIsUnauthenticated() async throws {
        try await withStubServer { request, _ in
            ClientFixtures.isAuthorized(request) ? .json(200, #"{"cards":[]}"#) : ClientFixtures.unauthenticatedReply
        } body: { server in
            let client = ClientFixtures.client(for: server, token: "eyJ.expired-token-that-must-not-leak")
            let error = await #expect(throws: IssuerdClientError.self) { try await client.cards() }
            #expect(error?.code == .unauthenticated)
            #expect(error?.status == 401)
            #expect(error.map { !String(describing: $0).contains("expired-token-that-must-not-leak") } == true)
            // 401 will not change by asking again.
            #expect(server.requests.count == 1)
        }
    }

    @Test func tokenProviderErrorsAreRethrownUnchanged() async throws {
        struct SignedOut: Error {}
        try await withStubServer { _, _ in
            .json(200, #"{"cards":[]}"#)
        } body: { server in
            let client = IssuerdClient(baseURL: server.baseURL, tokenProvider: { throw SignedOut() })
            await #expect(throws: SignedOut.self) { try await client.cards() }
            #expect(server.requests.isEmpty)
        }
    }

    @Test func bodyThatBreaksTheContractIsInvalidResponse() async throws {
        try await withStubServer { _, _ in
            .json(200, #"{"cards":[{"cardId":"x"}]}"#)
        } body: { server in
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).cards()
            }
            #expect(error?.code == .invalidResponse)
            #expect(error?.requestId == server.requests.first?.header("X-Request-Id"))
        }
    }
}
