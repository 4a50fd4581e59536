import Foundation
import IssuerdClient
import Testing

@Suite("POST /v1/wallet/verifications")
struct VerificationTests {
    static let link: WalletDeepLink = {
        do { return try WalletDeepLink(passTypeIdentifier: "paymentpass.com.apple", serialNumber: "SN-0042") } catch {
            preconditionFailure("fixture link is valid: \(error)")
        }
    }()

    @Test func returnsTheActivationDataBytesForTheLinkedPass() async throws {
        let activation = Data("MBPAC-1-FK-123456.1--TDEA-0011223344556677".utf8)
        try await withStubServer { request, _ in
            guard ClientFixtures.isAuthorized(request), request.path == "/v1/wallet/verifications" else {
                return ClientFixtures.unauthenticatedReply
            }
            return .json(
                200,
                encoding: WalletVerificationResponse(
                    tokenReference: "DNITHE000000000001", status: "active",
                    activationData: activation.base64EncodedString()))
        } body: { server in
            let bytes = try await ClientFixtures.client(for: server).verify(link: Self.link)
            #expect(bytes == activation)
            let request = try #require(server.requests.first)
            let sent = try JSONDecoder().decode(WalletVerificationRequest.self, from: request.body)
            #expect(
                sent == WalletVerificationRequest(serialNumber: "SN-0042", passTypeIdentifier: "paymentpass.com.apple"))
            #expect(request.header("Idempotency-Key") != nil)
        }
    }

    @Test(arguments: [(404, IssuerdClientError.Code.notFound), (409, .conflict)])
    func unknownOrNotAwaitingTokenIsTyped(status: Int, code: IssuerdClientError.Code) async throws {
        try await withStubServer { _, _ in
            .json(status, #"{"error":{"code":"token_not_awaiting_verification","message":"x"}}"#)
        } body: { server in
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).verify(link: Self.link)
            }
            #expect(error?.code == code)
        }
    }

    @Test func activationDataThatIsNotBase64IsInvalidResponse() async throws {
        try await withStubServer { _, _ in
            .json(200, #"{"tokenReference":"t","status":"active","activationData":"***"}"#)
        } body: { server in
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).verify(link: Self.link)
            }
            #expect(error?.code == .invalidResponse)
        }
    }
}
