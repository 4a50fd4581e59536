import Foundation
import IssuerdClient
import IssuerdCrypto
import Testing

@testable import IssuerdAPI

/// `IssuerdClient` against a real issuerd on a loopback port and a real PostgreSQL: the card
/// list, provisioning (whose payload must open with the test PKI's leaf key), a decline, the
/// authentication and not-found errors, and In-App Verification from a Wallet deep link.
@Suite("IssuerdClient against a real issuerd")
struct IssuerdClientEndToEndTests {
    @Test("cards() returns the caller's cards with the server's fields, and no one else's")
    func listsOwnCards() async throws {
        let fixture = try ClientEndToEndFixture()
        try fixture.customer("cust-1")
        try fixture.customer("cust-2")
        let first = try fixture.card(
            "card-a", customer: "cust-1", name: "홍길동", network: "visa", description: "Everyday Visa")
        let second = try fixture.card(
            "card-b", customer: "cust-1", name: "HONG GILDONG", network: "mastercard", status: .blocked)
        try fixture.card("card-c", customer: "cust-2")

        let cards = try await fixture.client(customer: "cust-1").cards().sorted { $0.cardId < $1.cardId }

        #expect(cards.map(\.cardId) == ["card-a", "card-b"])
        let expected = [
            CardSummary(
                cardId: "card-a", cardholderName: "홍길동", primaryAccountSuffix: String(first.pan.suffix(4)),
                localizedDescription: "Everyday Visa", paymentNetwork: "visa",
                primaryAccountIdentifier: first.record.primaryAccountIdentifier, status: "active", walletEligible: true),
            CardSummary(
                cardId: "card-b", cardholderName: "HONG GILDONG", primaryAccountSuffix: String(second.pan.suffix(4)),
                localizedDescription: "Mastercard •••• \(second.pan.suffix(4))", paymentNetwork: "mastercard",
                primaryAccountIdentifier: second.record.primaryAccountIdentifier, status: "blocked",
                walletEligible: false),
        ]
        #expect(cards == expected)
        #expect(cards.map(\.network) == [.visa, .mastercard])
    }

    @Test("provisioningData is approved, and the pass data opens with the leaf key to the card, nonce and signature")
    func provisioningDecrypts() async throws {
        let fixture = try ClientEndToEndFixture()
        try fixture.customer("cust-1")
        let card = try fixture.card(
            "card-1", customer: "cust-1", expiration: "03/29", name: "홍길동", network: "mastercard")
        let nonce = Data([0x9c, 0x02, 0x30, 0x92])
        let signature = Data((0..<71).map { UInt8($0 * 3 & 0xFF) })

        let result = try await fixture.client(customer: "cust-1").provisioningData(
            cardId: "card-1", certificates: fixture.certificates, nonce: nonce, nonceSignature: signature,
            device: ClientEndToEndFixture.device)

        let passData = try #require(result.approved, "\(result)")
        #expect(passData.flow == .green)
        #expect(!passData.attemptId.isEmpty)
        #expect(!passData.activationData.isEmpty)
        #expect(passData.wrappedKey == nil)
        let plaintext = try fixture.decrypt(passData)
        #expect(plaintext["primaryAccountNumber"] == card.pan)
        #expect(plaintext["expiration"] == "03/29")
        #expect(plaintext["name"] == "홍길동")
        #expect(plaintext["nonce"] == "9c023092")
        #expect(plaintext["nonceSignature"] == BinaryEncoding.hexString(signature))
    }

    @Test("A lost card is the typed decline, with the attempt id and the invariant that refused it")
    func lostCardDeclines() async throws {
        let fixture = try ClientEndToEndFixture()
        try fixture.customer("cust-1")
        try fixture.card("card-lost", customer: "cust-1", status: .lost)

        let result = try await fixture.client(customer: "cust-1").provisioningData(
            cardId: "card-lost", certificates: fixture.certificates, nonce: Data([1, 2, 3, 4]),
            nonceSignature: Data(repeating: 7, count: 64),
            device: ClientEndToEndFixture.device)

        guard case .declined(let attemptId, let reasons) = result else {
            Issue.record("expected a decline, got \(result)")
            return
        }
        #expect(!attemptId.isEmpty)
        #expect(reasons.contains { $0.rule == "invariant.card_unusable" })
        let stored = try DecisionFixtures.count(
            fixture.app,
            "SELECT count(*) FROM provisioning_attempts WHERE attempt_id::text = '\(attemptId)' AND flow = 'orange'")
        #expect(stored == 1)
    }

    @Test("An expired app token is IssuerdClientError.unauthenticated")
    func expiredTokenIsUnauthenticated() async throws {
        let fixture = try ClientEndToEndFixture()
        try fixture.customer("cust-1")
        try fixture.card("card-1", customer: "cust-1")
        let expired = try fixture.app.appToken(customer: "cust-1", lifetime: 60, now: Date().addingTimeInterval(-3600))

        let error = await #expect(throws: IssuerdClientError.self) {
            try await fixture.client(token: expired).cards()
        }
        #expect(error?.code == .unauthenticated)
        #expect(error?.status == 401)
        #expect(error?.requestId?.isEmpty == false)
    }

    @Test("Another customer's card is IssuerdClientError.notFound")
    func foreignCardIsNotFound() async throws {
        let fixture = try ClientEndToEndFixture()
        try fixture.customer("cust-1")
        try fixture.customer("cust-2")
        try fixture.card("card-theirs", customer: "cust-2")

        let error = await #expect(throws: IssuerdClientError.self) {
            try await fixture.client(customer: "cust-1").provisioningData(
                cardId: "card-theirs", certificates: fixture.certificates, nonce: Data([1, 2, 3, 4]),
                nonceSignature: Data(repeating: 7, count: 64))
        }
        #expect(error?.code == .notFound)
        #expect(error?.status == 404)
        #expect(try DecisionFixtures.count(fixture.app, "SELECT count(*) FROM provisioning_attempts") == 0)
    }

    @Test("verify(link:) activates the token awaiting verification and returns its activation data")
    func verifiesFromDeepLink() async throws {
        let fixture = try ClientEndToEndFixture()
        let token = try StepUpFixture(fixture.app, serialNumber: "SERIAL-1")
        let other = try StepUpFixture(fixture.app, serialNumber: "SERIAL-2")
        let client = try fixture.client(customer: token.customerID)
        let link = try WalletDeepLink(
            url: try #require(
                URL(string: "issuerapp://wallet?passTypeIdentifier=paymentpass.com.apple&serialNumber=SERIAL-1")))

        let activationData = try await client.verify(link: link)

        #expect(!activationData.isEmpty)
        #expect(try token.tokenStatus(fixture.app) == "active")
        #expect(try other.tokenStatus(fixture.app) == "pending_verification")
        // Already active: nothing is left to verify.
        let again = await #expect(throws: IssuerdClientError.self) { try await client.verify(link: link) }
        #expect(again?.code == .conflict)
    }
}
