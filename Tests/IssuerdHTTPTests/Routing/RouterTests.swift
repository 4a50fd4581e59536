import Foundation
import IssuerdCore
import Testing

@testable import IssuerdHTTP

/// The router without sockets: matching, precedence, 404/405/HEAD and the error boundary.
@Suite struct RouterTests {
    private func json(_ response: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    private func probeRouter() -> Router {
        var router = Router()
        router.add(.post, "/v1/cards/{cardId}/apple-pay/provision") { request in
            try .json(["cardId": request.pathParameters["cardId"] ?? "", "route": request.route])
        }
        router.add(.get, "/v1/cards") { _ in .text("list") }
        router.add(.post, "/v1/cards") { _ in .noContent() }
        return router
    }

    @Test func pathParametersAndRouteAreFilledIn() {
        let request = HTTPRequest(method: .post, path: "/v1/cards/card-42/apple-pay/provision")
        let response = probeRouter().respond(to: request)
        #expect(response.status == 200)
        #expect(json(response)["cardId"] as? String == "card-42")
        #expect(json(response)["route"] as? String == "/v1/cards/{cardId}/apple-pay/provision")
        #expect(response.headers["x-request-id"] == request.requestId)
        #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
    }

    /// Dispatch given the head's resolution answers as dispatch that resolves again, for a
    /// route with parameters, a plain route, a 405 and a 404.
    @Test(arguments: [
        (HTTPMethod.post, "/v1/cards/card-42/apple-pay/provision"), (.post, "/v1/cards"), (.get, "/v1/cards"),
        (.delete, "/v1/cards"), (.post, "/v1/nothing"),
    ])
    func dispatchReusesTheAdmissionsResolution(method: HTTPMethod, path: String) {
        let router = probeRouter()
        let request = HTTPRequest(method: method, path: path)
        let admitted = router.admission(request)
        #expect(admitted.refusal == nil || admitted.resolved != nil)
        let resolved = router.dispatch(request, resolved: admitted.resolved)
        let again = router.dispatch(request)
        #expect(resolved.route == again.route)
        #expect(resolved.response.status == again.response.status)
        #expect(resolved.response.body == again.response.body)
    }

    /// Paths split at every `/` byte, a `/` before a combining mark included: no path
    /// parameter ever holds a slash.
    @Test func segmentsSplitAtEverySlashByte() {
        #expect(Router.segments(of: "/") == [""])
        #expect(Router.segments(of: "/a//b/") == ["a", "", "b", ""])
        #expect(Router.segments(of: "/v1/cards/a/\u{301}x") == ["v1", "cards", "a", "\u{301}x"])
        let response = probeRouter().respond(to: HTTPRequest(method: .get, path: "/v1/cards/a/\u{301}"))
        #expect(response.status == 404)
    }

    /// A pattern whose parameter comes before a literal that does not fit builds nothing and
    /// does not match; the one that fits gets its parameters.
    @Test func parametersAreTakenOnlyFromTheMatchingPattern() throws {
        var router = Router()
        router.add(.get, "/v1/{kind}/items") { request in .text("items \(request.pathParameters)") }
        router.add(.get, "/v1/{kind}/{id}/parts") { request in
            .text("parts \(request.pathParameters.sorted { $0.key < $1.key })")
        }
        let response = router.respond(to: HTTPRequest(method: .get, path: "/v1/cards/7/parts"))
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"parts [(key: "id", value: "7"), (key: "kind", value: "cards")]"#)
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/v1/cards/7/items")).status == 404)
    }

    @Test(arguments: [
        "/v1/cards/card-42/apple-pay", "/v1/cards//apple-pay/provision", "/v1/cards/card-42/apple-pay/provision/",
        "/", "", "v1/cards", "/v1/cardsx",
    ])
    func unknownPathsAre404(path: String) {
        let response = probeRouter().respond(to: HTTPRequest(method: .post, path: path))
        #expect(response.status == 404)
        #expect((json(response)["error"] as? [String: Any])?["code"] as? String == "not_found")
    }

    @Test func wrongMethodIs405WithAllow() {
        let request = HTTPRequest(method: .delete, path: "/v1/cards")
        let (response, route) = probeRouter().dispatch(request)
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET, HEAD, POST")
        #expect((json(response)["error"] as? [String: Any])?["code"] as? String == "method_not_allowed")
        #expect(route == "/v1/cards")
        #expect(response.headers["X-Request-Id"] == request.requestId)
    }

    /// Only a request that resolves to an inline route runs on the network thread; a method no
    /// inline route has is refused before its path is matched, and HEAD follows an inline GET.
    @Test func onlyRequestsResolvingToAnInlineRouteRunInline() {
        var router = probeRouter()
        router.add(.get, "/healthz", inline: true) { _ in .text("ok") }
        #expect(router.runsInline(.get, path: "/healthz"))
        #expect(router.runsInline(.head, path: "/healthz"))
        #expect(!router.runsInline(.post, path: "/healthz"))
        #expect(!router.runsInline(.get, path: "/v1/cards"))
        #expect(!router.runsInline(.post, path: "/v1/cards/c1/apple-pay/provision"))
        #expect(!router.runsInline(.get, path: "healthz"))
        #expect(!probeRouter().runsInline(.get, path: "/v1/cards"))
        router.add(.post, "/v1/ping", inline: true) { _ in .noContent() }
        #expect(router.runsInline(.post, path: "/v1/ping"))
        #expect(!router.runsInline(.post, path: "/v1/cards"))
    }

    @Test func headIsAnsweredByGet() {
        let response = probeRouter().respond(to: HTTPRequest(method: .head, path: "/v1/cards"))
        #expect(response.status == 200)
        #expect(response.body == Array("list".utf8))
    }

    @Test(arguments: [false, true])
    func literalSegmentsBeatParametersWhateverTheOrder(literalFirst: Bool) {
        var router = Router()
        let literal: (String, Router.Handler) = ("/v1/tsp/activation-codes/verify", { _ in .text("verify") })
        let parameter: (String, Router.Handler) = (
            "/v1/tsp/activation-codes/{challengeId}",
            { request in
                .text("id=" + (request.pathParameters["challengeId"] ?? ""))
            }
        )
        for (pattern, handler) in literalFirst ? [literal, parameter] : [parameter, literal] {
            router.add(.post, pattern, handler)
        }
        #expect(
            router.respond(to: HTTPRequest(method: .post, path: "/v1/tsp/activation-codes/verify")).body
                == Array("verify".utf8))
        #expect(
            router.respond(to: HTTPRequest(method: .post, path: "/v1/tsp/activation-codes/c1")).body
                == Array("id=c1".utf8))
    }

    @Test func aLessSpecificRouteWithTheMethodWinsOverA405() {
        var router = Router()
        router.add(.get, "/v1/admin/attempts/{attemptId}") { request in .text(request.pathParameters["attemptId"] ?? "")
        }
        router.add(.post, "/v1/admin/attempts/export") { _ in .noContent() }
        #expect(
            router.respond(to: HTTPRequest(method: .get, path: "/v1/admin/attempts/export")).body
                == Array("export".utf8))
        let response = router.respond(to: HTTPRequest(method: .delete, path: "/v1/admin/attempts/export"))
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET, HEAD, POST")
    }

    @Test func routesAreListedInRegistrationOrder() {
        let routes = probeRouter().routes
        #expect(routes.map(\.method) == [.post, .get, .post])
        #expect(routes.map(\.pattern) == ["/v1/cards/{cardId}/apple-pay/provision", "/v1/cards", "/v1/cards"])
    }

    @Test func thrownHTTPErrorBecomesItsEnvelope() {
        var router = Router()
        router.add(.post, "/v1/cards/{cardId}/apple-pay/provision") { _ in
            throw HTTPError(
                status: 403, code: "provisioning_declined", message: "declined",
                context: ["flow": "orange", "code": "overridden?", "reasons": [["rule": "r1"]]])
        }
        let request = HTTPRequest(method: .post, path: "/v1/cards/c/apple-pay/provision", requestId: "req-1")
        let response = router.respond(to: request)
        #expect(response.status == 403)
        #expect(response.headers["X-Request-Id"] == "req-1")
        let error = json(response)["error"] as? [String: Any]
        #expect(error?["code"] as? String == "provisioning_declined")
        #expect(error?["message"] as? String == "declined")
        #expect(error?["flow"] as? String == "orange")
        #expect(((error?["reasons"] as? [[String: Any]])?.first?["rule"]) as? String == "r1")
    }

    @Test func unexpectedErrorIs500WithRequestIdAndDetailsOnlyInTheLog() {
        let log = CapturingLogHandler()
        var router = Router()
        router.add(.get, "/boom") { _ in throw ProbeFailure(detail: "password=hunter2") }
        let request = HTTPRequest(method: .get, path: "/boom", requestId: "req-500", logger: log.logger())
        let response = router.respond(to: request)
        #expect(response.status == 500)
        let error = json(response)["error"] as? [String: Any]
        #expect(error?["code"] as? String == "internal_error")
        #expect((error?["message"] as? String)?.contains("req-500") == true)
        #expect(!String(decoding: response.body, as: UTF8.self).contains("hunter2"))
        let logged = log.records.filter { $0.level == .error }
        #expect(logged.count == 1)
        #expect(logged.first?.metadata["requestId"] == "req-500")
        #expect(logged.first?.metadata["error"] == "ProbeFailure(password=hunter2)")
    }

    @Test func a503IsANoticeNotAnError() {
        let log = CapturingLogHandler()
        var router = Router()
        router.add(.get, "/away") { _ in
            var error = HTTPError(status: 503, code: "database_unavailable", message: "retry shortly")
            error.headers.set("Retry-After", "1")
            throw error
        }
        let request = HTTPRequest(method: .get, path: "/away", requestId: "req-503", logger: log.logger())
        let response = router.respond(to: request)
        #expect(response.status == 503)
        #expect(response.headers["Retry-After"] == "1")
        #expect(log.records.filter { $0.level >= .error }.isEmpty)
        #expect(log.records.filter { $0.level == .notice }.count == 1)
    }
}
