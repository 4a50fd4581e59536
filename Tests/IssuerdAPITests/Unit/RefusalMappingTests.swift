import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdOutbox
import IssuerdStorage
import IssuerdWire
import Testing

@testable import IssuerdAPI

/// The layers below the API refuse without HTTP (``Refusal``); `HTTPError(_ refusal:)` is the one
/// place that gives each refusal its status, and the answer on the wire stays what it was.
@Suite("Refusals from below the API become their HTTP answers")
struct RefusalMappingTests {
    private static func refusal(_ body: () throws -> Void) -> Refusal? {
        do {
            try body()
            return nil
        } catch let refusal as Refusal {
            return refusal
        } catch {
            Issue.record("not a refusal: \(error)")
            return nil
        }
    }

    private static let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    @Test("A card failing the Luhn check (Storage) is 422 invalid_card with its detail")
    func invalidCard() throws {
        let request = CardCreateRequest(
            customerId: "c1", accountNumber: "4111111111111112", expiration: "12/30", cardholderName: "KIM",
            paymentNetwork: "visa")
        let refusal = try #require(Self.refusal { _ = try CardRegistration.validate(request, now: Self.now) })
        #expect(refusal.kind == .unacceptable)
        let answer = HTTPError(refusal)
        #expect(answer.status == 422)
        #expect(answer.code.rawValue == "invalid_card")
        #expect(answer.context["detail"] == "luhn")
    }

    @Test("A malformed identifier (Storage) is 400 invalid_request naming the field, not the value")
    func invalidField() throws {
        let refusal = try #require(Self.refusal { _ = try AdminValidation.identifier("no spaces", field: "cardId") })
        let answer = HTTPError(refusal)
        #expect(answer.status == 400)
        #expect(answer.code.rawValue == "invalid_request")
        #expect(answer.context["field"] == "cardId")
        #expect(!answer.message.contains("no spaces"))
    }

    @Test("An expired card (Storage) is 422; a claimed Idempotency-Key is 409; a missing message is 404")
    func statuses() throws {
        let expired = try #require(Self.refusal { _ = try AdminValidation.expiration("01/20", now: Self.now) })
        #expect(HTTPError(expired).status == 422)
        #expect(HTTPError(expired).context["detail"] == "expired")
        let taken = HTTPError(IdempotencyClaim.takenOver())
        #expect(taken.status == 409)
        #expect(taken.code.rawValue == "idempotency_key_reused")
        let missing = HTTPError(OutboxAdministration.messageNotFound())
        #expect(missing.status == 404)
        #expect(missing.code.rawValue == "message_not_found")
        #expect(HTTPError(Refusal.invalidState("no")).status == 409)
    }

    @Test("A busy backtest (History) is 429 with Retry-After; an app token refused (Auth) is 401 with a challenge")
    func headers() throws {
        let busy = HTTPError(BacktestGate.busy()).response()
        #expect(busy.status == 429)
        #expect(busy.headers["Retry-After"] == "1")
        let refused = HTTPError(Refusal(.unauthenticated, code: "unauthenticated", message: "m")).response()
        #expect(refused.status == 401)
        #expect(refused.headers["WWW-Authenticate"] == "Bearer realm=\"issuerd\"")
    }

    @Test("Only deliberate answers are answers: an HTTPError or a Refusal, never another error")
    func answers() {
        #expect(HTTPError.answer(for: Refusal.invalidRequest("x"))?.status == 400)
        #expect(HTTPError.answer(for: HTTPError(status: 418, code: "teapot", message: "t"))?.status == 418)
        #expect(HTTPError.answer(for: CocoaError(.fileNoSuchFile)) == nil)
    }
}
