import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The issuer app's token is verified once per request: on the head, by the route's admission,
/// whose principal the handler takes.
@Suite("App token verified once per request")
struct AppTokenOnceTests {
    /// Real time on libmicrohttpd's threads (named `MHD-…`, where a head's admission runs), and
    /// once armed two hours later everywhere else (the handler threads), past any token's
    /// lifetime: a handler that verified the token again would refuse it. (Foundation reads a
    /// thread's name from the kernel, which keeps 15 bytes: the handler threads' longer names
    /// read back as the process's.)
    final class HandlerClock: Sendable {
        private let armed = Lock(false)

        func arm() { armed.withLock { $0 = true } }

        func now() -> Date {
            let onNetworkThread = Thread.current.name?.hasPrefix("MHD") == true
            return armed.withLock { $0 } && !onNetworkThread ? Date().addingTimeInterval(7_200) : Date()
        }
    }

    @Test("A request with a body uses the principal its head's admission verified")
    func theHandlerTakesTheAdmittedPrincipal() throws {
        let clock = HandlerClock()
        // Over the wire: the head is admitted on libmicrohttpd's thread, the handler runs on another.
        let app = try TestApplication(clock: { clock.now() }, transport: .live)
        let token = try app.appToken(customer: "cust-once", lifetime: 600)
        clock.arm()
        // No such card: the handler answers 404 once it has the customer; verifying the token
        // again, at its own (later) time, it would have answered 401.
        let answer = try app.client.postJSON(
            "/v1/cards/card-none/apple-pay/provision", "{}", headers: ["Authorization": "Bearer \(token)"])
        #expect(answer.status != 401, "\(answer.text)")
        #expect(answer.status == 404 || answer.status == 400, "\(answer.text)")
        // Without a body no admission runs: the handler verifies the token itself, at its time.
        let listed = try app.client.get("/v1/cards", headers: ["Authorization": "Bearer \(token)"])
        #expect(listed.status == 401)
    }
}
