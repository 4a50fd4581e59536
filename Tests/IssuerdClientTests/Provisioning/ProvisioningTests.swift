import Foundation
import IssuerdClient
import Testing

@Suite("POST /v1/cards/{cardId}/apple-pay/provision")
struct ProvisioningTests {
    /// PassKit-shaped inputs; random so that nothing can match by accident.
    struct PassKitInputs {
        let certificates = [ClientFixtures.randomBytes(600), ClientFixtures.randomBytes(900)]
        let nonce = ClientFixtures.randomBytes(4)
        let nonceSignature = ClientFixtures.randomBytes(140)
    }

    @Test(arguments: [EncryptionScheme.eccV2, .rsaV2], [ProvisioningChannel.inApp, .walletExtension])
    func approvedAnswerDecodesEveryFieldAndTheRequestCarriesPassKitsValues(
        scheme: EncryptionScheme, channel: ProvisioningChannel
    ) async throws {
        let inputs = PassKitInputs()
        let encrypted = ClientFixtures.randomBytes(300)
        let activation = Data(#"{"version":"3","signature":"abc"}"#.utf8)
        let ephemeral = ClientFixtures.ephemeralKey()
        let wrapped = ClientFixtures.randomBytes(256)
        let reasons = [Reason(rule: "wallet.low_device_score", reason: "step_up")]
        let answer = ProvisioningResponse(
            encryptedPassData: encrypted.base64EncodedString(), activationData: activation.base64EncodedString(),
            ephemeralPublicKey: scheme == .eccV2 ? ephemeral.base64EncodedString() : nil,
            wrappedKey: scheme == .rsaV2 ? wrapped.base64EncodedString() : nil,
            decision: Decision(flow: "yellow", attemptId: "att_42", reasons: reasons))
        try await withStubServer { request, _ in
            guard ClientFixtures.isAuthorized(request) else { return ClientFixtures.unauthenticatedReply }
            return .json(200, encoding: answer)
        } body: { server in
            let result = try await ClientFixtures.client(for: server).provisioningData(
                cardId: "card_1", certificates: inputs.certificates, nonce: inputs.nonce,
                nonceSignature: inputs.nonceSignature,
                scheme: scheme, channel: channel, device: DeviceInfo(type: "phone", locale: "ko_KR"))
            let approved = try #require(result.approved)
            #expect(approved.encryptedPassData == encrypted)
            #expect(approved.activationData == activation)
            #expect(approved.ephemeralPublicKey == (scheme == .eccV2 ? ephemeral : nil))
            #expect(approved.wrappedKey == (scheme == .rsaV2 ? wrapped : nil))
            #expect(approved.flow == .yellow)
            #expect(approved.attemptId == "att_42")
            #expect(approved.reasons == reasons)

            let request = try #require(server.requests.first)
            #expect(request.method == "POST")
            #expect(request.path == "/v1/cards/card_1/apple-pay/provision")
            #expect(request.header("Content-Type") == "application/json")
            #expect(UUID(uuidString: request.header("Idempotency-Key") ?? "") != nil)
            let sent = try JSONDecoder().decode(ProvisioningRequest.self, from: request.body)
            #expect(sent.certificates.compactMap { Data(base64Encoded: $0) } == inputs.certificates)
            #expect(Data(base64Encoded: sent.nonce) == inputs.nonce)
            #expect(Data(base64Encoded: sent.nonceSignature) == inputs.nonceSignature)
            #expect(sent.encryptionScheme == scheme.rawValue)
            #expect(sent.channel == channel.rawValue)
            #expect(sent.device?.locale == "ko_KR")
        }
    }

    @Test func declineIsATypedOutcomeWithReasonsAndAttemptId() async throws {
        let body = """
            {"error":{"code":"provisioning_declined","message":"Declined by issuer risk.","flow":"orange",
            "attemptId":"att_orange_7","reasons":[{"rule":"device.cards_24h","reason":"velocity"},
            {"rule":"wallet.recommended_decline","reason":"wallet_decline"}]}}
            """
        try await withStubServer { _, _ in
            .json(403, body)
        } body: { server in
            let inputs = PassKitInputs()
            let result = try await ClientFixtures.client(for: server).provisioningData(
                cardId: "card_1", certificates: inputs.certificates, nonce: inputs.nonce,
                nonceSignature: inputs.nonceSignature)
            #expect(
                result
                    == .declined(
                        attemptId: "att_orange_7",
                        reasons: [
                            Reason(rule: "device.cards_24h", reason: "velocity"),
                            Reason(rule: "wallet.recommended_decline", reason: "wallet_decline"),
                        ]))
            #expect(result.approved == nil)
            #expect(server.requests.count == 1)
        }
    }

    @Test func invalidCertificateChainCarriesTheFailedCheck() async throws {
        let body =
            #"{"error":{"code":"certificate_chain_invalid","message":"Invalid chain.","detail":"leaf_not_signed_by_sub_ca"}}"#
        try await withStubServer { _, _ in
            .json(422, body)
        } body: { server in
            let inputs = PassKitInputs()
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).provisioningData(
                    cardId: "card_1", certificates: inputs.certificates, nonce: inputs.nonce,
                    nonceSignature: inputs.nonceSignature)
            }
            #expect(error?.code == .invalidCertificateChain)
            #expect(error?.detail == "leaf_not_signed_by_sub_ca")
        }
    }

    @Test func eccAnswerWithoutEphemeralKeyIsInvalidResponse() async throws {
        let answer = ProvisioningResponse(
            encryptedPassData: "AAAA", activationData: "AAAA", ephemeralPublicKey: nil, wrappedKey: nil,
            decision: Decision(flow: "green", attemptId: "att_1", reasons: []))
        try await withStubServer { _, _ in
            .json(200, encoding: answer)
        } body: { server in
            let inputs = PassKitInputs()
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).provisioningData(
                    cardId: "card_1", certificates: inputs.certificates, nonce: inputs.nonce,
                    nonceSignature: inputs.nonceSignature)
            }
            #expect(error?.code == .invalidResponse)
        }
    }

    @Test func cardIdIsOnePercentEncodedPathSegment() async throws {
        try await withStubServer { _, _ in
            .json(404, #"{"error":{"code":"not_found","message":"Unknown card."}}"#)
        } body: { server in
            let inputs = PassKitInputs()
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).provisioningData(
                    cardId: "../admin?x=1", certificates: inputs.certificates, nonce: inputs.nonce,
                    nonceSignature: inputs.nonceSignature)
            }
            #expect(error?.code == .notFound)
            #expect(server.requests.first?.path == "/v1/cards/..%2Fadmin%3Fx%3D1/apple-pay/provision")
        }
    }

    @Test(arguments: ["", ".", "..", String(repeating: "a", count: 257)])
    func unsendableCardIdIsRejectedBeforeAnyRequest(cardId: String) async throws {
        try await withStubServer { _, _ in
            .json(500, "{}")
        } body: { server in
            let inputs = PassKitInputs()
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).provisioningData(
                    cardId: cardId, certificates: inputs.certificates, nonce: inputs.nonce,
                    nonceSignature: inputs.nonceSignature)
            }
            #expect(error?.code == .invalidArgument)
            #expect(server.requests.isEmpty)
        }
    }
}
