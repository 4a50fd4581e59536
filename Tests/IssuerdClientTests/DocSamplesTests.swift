import Foundation
import IssuerdClient
import Testing

@Suite("docs/ios-integration.md samples")
struct DocSamplesTests {
    struct FixedSession: SignInSession {
        let token: String
        func accessToken() async throws -> String { token }
    }

    static func card(_ id: String, eligible: Bool, status: String) -> CardSummary {
        CardSummary(
            cardId: id, cardholderName: "KIM MINJI", primaryAccountSuffix: "1234", localizedDescription: "Card \(id)",
            paymentNetwork: "visa", primaryAccountIdentifier: "PAI-\(id)", status: status, walletEligible: eligible)
    }

    @Test func listsOnlyEligibleActiveCards() async throws {
        let all = [
            Self.card("a", eligible: true, status: "active"), Self.card("b", eligible: false, status: "active"),
            Self.card("c", eligible: true, status: "lost"),
        ]
        try await withStubServer { request, _ in
            ClientFixtures.isAuthorized(request)
                ? .json(200, encoding: CardList(cards: all)) : ClientFixtures.unauthenticatedReply
        } body: { server in
            let client = DocSamples.makeClient(
                session: FixedSession(token: ClientFixtures.token), baseURL: server.baseURL)
            let offered = try await DocSamples.cardsToOffer(client: client)
            #expect(offered.map(\.cardId) == ["a"])
        }
    }

    @Test func passDataMapsEachOutcome() async throws {
        let approved = ProvisioningResponse(
            encryptedPassData: "AQID", activationData: "BAUG",
            ephemeralPublicKey: ClientFixtures.ephemeralKey().base64EncodedString(),
            wrappedKey: nil, decision: Decision(flow: "green", attemptId: "att_ok", reasons: []))
        try await withStubServer { request, _ in
            switch request.path {
            case "/v1/cards/ok/apple-pay/provision": .json(200, encoding: approved)
            case "/v1/cards/no/apple-pay/provision":
                .json(
                    403,
                    #"{"error":{"code":"provisioning_declined","message":"x","flow":"orange","attemptId":"att_no","reasons":[]}}"#
                )
            default: ClientFixtures.unauthenticatedReply
            }
        } body: { server in
            let client = DocSamples.makeClient(
                session: FixedSession(token: ClientFixtures.token), baseURL: server.baseURL)
            func outcome(_ cardId: String) async -> DocSamples.AddCardOutcome {
                await DocSamples.passData(
                    client: client, cardId: cardId, certificates: [Data([1])], nonce: Data([2]),
                    nonceSignature: Data([3]))
            }
            let ok = await outcome("ok")
            #expect(ok.approvedData?.attemptId == "att_ok")
            #expect(ok.approvedData?.encryptedPassData == Data([1, 2, 3]))
            #expect(await outcome("no") == .declined(attemptId: "att_no"))
            #expect(await outcome("other") == .failed(message: "Please sign in again.", signInAgain: true))
        }
    }

    @Test func deepLinkSampleReturnsActivationDataOnlyForWalletLinks() async throws {
        try await withStubServer { _, _ in
            .json(
                200, encoding: WalletVerificationResponse(tokenReference: "t", status: "active", activationData: "AQID")
            )
        } body: { server in
            let client = DocSamples.makeClient(
                session: FixedSession(token: ClientFixtures.token), baseURL: server.baseURL)
            let walletURL = try #require(
                URL(string: "issuerapp://verify?passTypeIdentifier=paymentpass.com.apple&serialNumber=S1"))
            let result = try #require(try await DocSamples.activationData(client: client, launchURL: walletURL))
            #expect(result.0.serialNumber == "S1")
            #expect(result.1 == Data([1, 2, 3]))
            let otherURL = try #require(URL(string: "issuerapp://offers?id=9"))
            let none = try await DocSamples.activationData(client: client, launchURL: otherURL)
            #expect(none == nil)
            #expect(server.requests.count == 1)
        }
    }
}

extension DocSamples.AddCardOutcome {
    fileprivate var approvedData: ApprovedPassData? {
        if case .approved(let data) = self { return data }
        return nil
    }
}
