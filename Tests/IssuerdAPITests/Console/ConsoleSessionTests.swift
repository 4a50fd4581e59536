import Foundation
import IssuerdConsole
import IssuerdHTTP
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The console's sign-in, session cookie, CSRF token, CSP and page routes, over a real socket
/// and a real PostgreSQL (the browser test in scripts/test-console covers the pages' contents).
@Suite("Analyst console: sessions, CSRF and security headers")
struct ConsoleSessionTests {
    /// One request on a fresh connection, cookies and redirects left to the test.
    private func send(
        _ app: TestApplication, _ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil
    ) throws
        -> TestHTTPResponse
    {
        let connection = try RawHTTPConnection(port: app.application.port)
        defer { connection.close() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(app.application.port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let bytes = Array((body ?? "").utf8)
        if body != nil { head += "Content-Length: \(bytes.count)\r\n" }
        try connection.send(Array((head + "\r\n").utf8) + bytes)
        return try connection.readResponse(expectingBody: method != "HEAD")
    }

    private func signIn(_ app: TestApplication, key: String, headers: [String: String] = [:]) throws -> TestHTTPResponse
    {
        var all = headers
        all["Content-Type"] = "application/json"
        return try send(app, "POST", "/console/session", headers: all, body: #"{"key":"\#(key)"}"#)
    }

    /// The session cookie's value from `Set-Cookie`, and the CSRF token from the body.
    private func session(_ response: TestHTTPResponse) throws -> (cookie: String, csrf: String) {
        let setCookie = try #require(response.header("Set-Cookie"))
        let value = try #require(
            setCookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last.map(String.init))
        let csrf = try #require(response.jsonObject()?["csrfToken"] as? String)
        return ("issuerd_console=\(value)", csrf)
    }

    private func count(_ app: TestApplication, _ sql: String) throws -> Int {
        try app.pool.withConnection {
            Int(try $0.query(PostgresQuery(unsafeSQL: sql)).first!.decode("n", as: Int64.self))
        }
    }

    @Test("Signing in sets an HttpOnly, SameSite=Strict cookie, stores only its hash, and audits the sign-in")
    func signInSetsCookie() throws {
        let app = try TestApplication()
        let response = try signIn(app, key: try app.apiKey(role: .analyst))
        #expect(response.status == 201)
        let setCookie = try #require(response.header("Set-Cookie"))
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"] {
            #expect(setCookie.contains(attribute))
        }
        #expect(!setCookie.contains("Secure"), "plain HTTP without a TLS proxy: no Secure")
        let (cookie, csrf) = try session(response)
        #expect(csrf.utf8.count == 43)
        #expect(try count(app, "SELECT count(*) AS n FROM console_sessions") == 1)
        let stored = String(cookie.dropFirst("issuerd_console=".count))
        #expect(
            try count(
                app,
                "SELECT count(*) AS n FROM console_sessions WHERE encode(session_hash, 'escape') LIKE '%\(stored)%'")
                == 0)
        #expect(try count(app, "SELECT count(*) AS n FROM audit_log WHERE action = 'console.signed_in'") == 1)
        let me = try send(app, "GET", "/console/session", headers: ["Cookie": cookie])
        #expect(me.status == 200)
        #expect(me.jsonObject()?["role"] as? String == "analyst")
    }

    @Test("Secure is set behind a TLS-terminating proxy (X-Forwarded-Proto: https) or when configured always")
    func secureCookie() throws {
        let app = try TestApplication()
        let proxied = try signIn(app, key: try app.apiKey(role: .admin), headers: ["X-Forwarded-Proto": "https"])
        #expect(proxied.header("Set-Cookie")?.contains("; Secure") == true)
        let always = try TestApplication(environment: ["ISSUERD_CONSOLE_SECURE_COOKIES": "always"])
        #expect(
            try signIn(always, key: try always.apiKey(role: .analyst)).header("Set-Cookie")?.contains("; Secure")
                == true)
    }

    @Test("A Secure cookie is named __Host- (Path=/, no Domain) and only that name is honoured over TLS")
    func hostPrefixedCookie() throws {
        let app = try TestApplication()
        let tls = ["X-Forwarded-Proto": "https"]
        let response = try signIn(app, key: try app.apiKey(role: .analyst), headers: tls)
        let setCookie = try #require(response.header("Set-Cookie"))
        #expect(setCookie.hasPrefix("__Host-issuerd_console="))
        #expect(
            setCookie.contains("; Path=/") && setCookie.contains("; Secure")
                && !setCookie.lowercased().contains("domain="))
        let (plain, _) = try session(response)
        let value = String(plain.dropFirst("issuerd_console=".count))
        var headers = tls
        headers["Cookie"] = "__Host-issuerd_console=\(value)"
        #expect(try send(app, "GET", "/console/session", headers: headers).status == 200)
        // The same session under the unprefixed name (what a sibling subdomain could plant) is not read over TLS.
        headers["Cookie"] = "issuerd_console=\(value)"
        #expect(try send(app, "GET", "/console/session", headers: headers).status == 401)
        // Over plain HTTP (development) the cookie keeps the unprefixed name; signing out over TLS clears the prefixed one.
        let http = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        #expect(http.cookie.hasPrefix("issuerd_console="))
        #expect(try send(app, "GET", "/console/session", headers: ["Cookie": http.cookie]).status == 200)
        headers["Cookie"] = "__Host-issuerd_console=\(value)"
        let out = try send(
            app, "DELETE", "/console/session",
            headers: headers.merging(["X-CSRF-Token": try #require(response.jsonObject()?["csrfToken"] as? String)]) {
                $1
            })
        #expect(out.header("Set-Cookie")?.hasPrefix("__Host-issuerd_console=;") == true)
        #expect(try send(app, "GET", "/console/session", headers: headers).status == 401)
    }

    @Test("A wrong key, an ivr key, a form post or a cross-origin post is refused and opens no session")
    func signInRefusals() throws {
        let app = try TestApplication()
        #expect(try signIn(app, key: "isk_000000000000_" + String(repeating: "x", count: 43)).status == 401)
        #expect(try signIn(app, key: "not a key").status == 401)
        #expect(try signIn(app, key: try app.apiKey(role: .ivr)).status == 403)
        let analyst = try app.apiKey(role: .analyst)
        let form = try send(
            app, "POST", "/console/session", headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: "key=\(analyst)")
        #expect(form.status == 415)
        #expect(try signIn(app, key: analyst, headers: ["Origin": "https://evil.example"]).status == 403)
        #expect(
            try signIn(app, key: analyst, headers: ["Sec-Fetch-Site": "cross-site"]).status == 403,
            "no Origin, but a browser's cross-site fetch")
        #expect(try count(app, "SELECT count(*) AS n FROM console_sessions") == 0)
        #expect(
            try signIn(app, key: analyst, headers: ["Origin": "http://127.0.0.1:\(app.application.port)"]).status == 201
        )
    }

    @Test("The session stands in for the key on the analyst JSON routes; a state change needs the CSRF token")
    func csrf() throws {
        let app = try TestApplication()
        let (cookie, csrf) = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        for path in ["/v1/admin/rules", "/v1/admin/decisions", "/v1/admin/rule-hits", "/v1/admin/attempts"] {
            #expect(try send(app, "GET", path, headers: ["Cookie": cookie]).status == 200, "\(path)")
        }
        let body =
            #"{"rules":"rule x.y\n  title \"t\"\n  outcome orange\n  reason R\n  owner o\n  when card.country == \"FR\"\nend\n","since":"2020-01-01T00:00:00Z","until":"2020-01-02T00:00:00Z"}"#
        let missing = try send(
            app, "POST", "/v1/admin/rules/backtest", headers: ["Cookie": cookie, "Content-Type": "application/json"],
            body: body)
        #expect(missing.status == 403)
        #expect(
            missing.jsonObject().flatMap { ($0["error"] as? [String: Any])?["code"] as? String } == "csrf_token_invalid"
        )
        let wrong = try send(
            app, "POST", "/v1/admin/rules/backtest",
            headers: ["Cookie": cookie, "Content-Type": "application/json", "X-CSRF-Token": String(csrf.reversed())],
            body: body)
        #expect(wrong.status == 403)
        let good = try send(
            app, "POST", "/v1/admin/rules/backtest",
            headers: ["Cookie": cookie, "Content-Type": "application/json", "X-CSRF-Token": csrf], body: body)
        #expect(good.status == 200)
        // The session never reaches admin-only routes: reload still needs an admin key.
        #expect(
            try send(app, "POST", "/v1/admin/rules/reload", headers: ["Cookie": cookie, "X-CSRF-Token": csrf]).status
                == 401)
        // Sign-out is a state change too.
        #expect(try send(app, "DELETE", "/console/session", headers: ["Cookie": cookie]).status == 403)
        #expect(try count(app, "SELECT count(*) AS n FROM console_sessions") == 1)
        let out = try send(app, "DELETE", "/console/session", headers: ["Cookie": cookie, "X-CSRF-Token": csrf])
        #expect(out.status == 204)
        #expect(out.header("Set-Cookie")?.contains("Max-Age=0") == true)
        #expect(try count(app, "SELECT count(*) AS n FROM console_sessions") == 0)
        #expect(try send(app, "GET", "/v1/admin/rules", headers: ["Cookie": cookie]).status == 401)
    }

    @Test(
        "Attempt search refuses any run of 12 or more digits (any separators, letters around it) and does not echo it")
    func panSearchRefused() throws {
        let app = try TestApplication()
        let (cookie, _) = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        for q in [
            "4111111111111111", "4111%201111%201111%201111", "5500-0000-0000-0004", "411111111111",
            "4111.1111.1111.1111",
            "4111/1111/1111/1111", "4111_1111_1111_1111", "%2B4111111111111111", "4111111111111111x",
            "x4111%201111%201111%201111",
            "card-4111111111111111", "41111111111111112222",
            "%EF%BC%94%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91",
        ] {
            let response = try send(app, "GET", "/v1/admin/attempts?q=\(q)", headers: ["Cookie": cookie])
            #expect(response.status == 400, "\(q)")
            let typed = try #require(q.removingPercentEncoding)
            #expect(
                !response.text.contains(typed) && !response.text.contains("1111111111")
                    && !response.text.contains("0000-0000"), "\(q)")
        }
        for q in [
            "1111", "12345678901", "card-1", "card-41111111111a1111", "3f2a1111-2222-3333-4444-555566667777",
            "11111111-2222-3333-4444-555566667777",
        ] {
            #expect(
                try send(app, "GET", "/v1/admin/attempts?q=\(q)", headers: ["Cookie": cookie]).status == 200, "\(q)")
        }
    }

    @Test("An expired session, a forged cookie or a revoked key is refused; pages redirect to sign-in saying why")
    func refusals() throws {
        let app = try TestApplication()
        let key = try app.apiKey(role: .analyst)
        let (cookie, _) = try session(try signIn(app, key: key))
        let page = try send(app, "GET", "/console/decisions?channel=tsp", headers: ["Cookie": cookie])
        #expect(page.status == 200)

        try app.pool.withConnection {
            try $0.execute("UPDATE console_sessions SET expires_at = now() - interval '1 second'")
        }
        let expired = try send(app, "GET", "/v1/admin/rules", headers: ["Cookie": cookie])
        #expect(expired.status == 401)
        #expect(expired.text.contains("session_expired"))
        let redirected = try send(app, "GET", "/console/decisions?channel=tsp", headers: ["Cookie": cookie])
        #expect(redirected.status == 303)
        #expect(
            redirected.header("Location") == "/console/sign-in?reason=expired&next=/console/decisions%3Fchannel%3Dtsp")
        // Signing out of it needs no CSRF token (nothing is left to protect): the row goes, the cookie is cleared.
        let out = try send(app, "DELETE", "/console/session", headers: ["Cookie": cookie])
        #expect(out.status == 204)
        #expect(out.header("Set-Cookie")?.contains("Max-Age=0") == true)
        #expect(try count(app, "SELECT count(*) AS n FROM console_sessions") == 0)

        let forged = "issuerd_console=" + String(repeating: "A", count: 43)
        #expect(try send(app, "GET", "/v1/admin/rules", headers: ["Cookie": forged]).status == 401)
        let forgedOut = try send(app, "DELETE", "/console/session", headers: ["Cookie": forged])
        #expect(
            forgedOut.status == 401 && forgedOut.header("Set-Cookie")?.contains("Max-Age=0") == true,
            "refused, and the cookie cleared")
        #expect(
            try send(app, "GET", "/console/rules", headers: ["Cookie": forged]).header("Location")
                == "/console/sign-in?reason=invalid&next=/console/rules")
        #expect(try send(app, "GET", "/console/rules").header("Location") == "/console/sign-in?next=/console/rules")

        let (fresh, _) = try session(try signIn(app, key: key))
        #expect(try send(app, "GET", "/v1/admin/rules", headers: ["Cookie": fresh]).status == 200)
        try app.pool.withConnection { try $0.execute("UPDATE api_keys SET revoked_at = now()") }
        #expect(try send(app, "GET", "/v1/admin/rules", headers: ["Cookie": fresh]).status == 401)
    }

    @Test("Pages and assets carry a strict CSP and come from the binary with their own content types")
    func headers() throws {
        let app = try TestApplication()
        let (cookie, _) = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        for page in ConsoleRoutes.pages {
            let path = page.path.replacingOccurrences(of: "{attemptId}", with: "00000000-0000-0000-0000-000000000000")
            let response = try send(app, "GET", path, headers: ["Cookie": cookie])
            #expect(response.status == 200, "\(path)")
            #expect(response.header("Content-Type") == "text/html; charset=utf-8")
            #expect(response.header("Content-Security-Policy") == ConsoleRoutes.contentSecurityPolicy)
            #expect(response.header("X-Frame-Options") == "DENY")
            #expect(response.text.contains("data-page=\"\(page.name)\""))
        }
        let css = try send(app, "GET", "/console/assets/console.css")
        #expect(css.header("Content-Type") == "text/css; charset=utf-8")
        let script = try send(app, "GET", "/console/assets/console.js")
        #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(script.header("X-Content-Type-Options") == "nosniff")
        #expect(try send(app, "GET", "/console").header("Location") == "/console/rules")
    }

    @Test("The policy allows nothing inline and nothing from another host; the page has no inline script or style")
    func policy() {
        let policy = ConsoleRoutes.contentSecurityPolicy
        #expect(
            policy.contains("default-src 'none'") && policy.contains("script-src 'self'")
                && policy.contains("style-src 'self'"))
        #expect(!policy.contains("unsafe") && !policy.contains("http") && !policy.contains("*"))
        let page = ConsoleAssets.page(name: "rules", title: "Ruleset")
        #expect(
            !page.contains("<script>") && !page.contains("style=") && !page.contains(" on") && !page.contains("<style"))
        #expect(!ConsoleAssets.script.contains("innerHTML") && !ConsoleAssets.script.contains("eval("))
        #expect(!(ConsoleAssets.script + ConsoleAssets.stylesheet + page).contains("https://"))
    }

    @Test("Cookie values and CSRF tokens: only well-formed values are looked up, tokens compare exactly")
    func tokens() {
        #expect(ConsoleSessions.isWellFormed(String(repeating: "a", count: 43)))
        #expect(ConsoleSessions.isWellFormed("AZaz09-_" + String(repeating: "b", count: 35)))
        #expect(!ConsoleSessions.isWellFormed(String(repeating: "a", count: 42)))
        #expect(!ConsoleSessions.isWellFormed(String(repeating: "a", count: 42) + "'"))
        #expect(!ConsoleSessions.isWellFormed(String(repeating: "a", count: 42) + "é"))
        let token = String(repeating: "t", count: 43)
        #expect(ConsoleSessions.csrfMatches(token, token))
        #expect(!ConsoleSessions.csrfMatches(nil, token))
        #expect(!ConsoleSessions.csrfMatches("", token))
        #expect(!ConsoleSessions.csrfMatches(String(token.dropLast()) + "u", token))
        #expect(!ConsoleSessions.csrfMatches(token + "t", token))
    }

    @Test("Nothing under /v1/ may be cached, and console refusals carry the console's headers")
    func cachingAndRefusalHeaders() throws {
        let app = try TestApplication()
        let (cookie, _) = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        for path in [
            "/v1/admin/attempts", "/v1/admin/rules", "/v1/admin/attempts/00000000-0000-0000-0000-000000000000",
        ] {
            #expect(
                try send(app, "GET", path, headers: ["Cookie": cookie]).header("Cache-Control") == "no-store", "\(path)"
            )
        }
        #expect(try send(app, "GET", "/v1/admin/rules").header("Cache-Control") == "no-store", "a 401 too")
        for refusal in [
            try signIn(app, key: "not a key"), try send(app, "DELETE", "/console/session", headers: ["Cookie": cookie]),
            try send(app, "GET", "/console/no-such-page"),
        ] {
            #expect(refusal.status >= 400)
            #expect(refusal.header("Content-Security-Policy") == ConsoleRoutes.contentSecurityPolicy)
            #expect(refusal.header("Cache-Control") == "no-store")
            #expect(refusal.header("X-Frame-Options") == "DENY")
        }
        #expect(try send(app, "GET", "/console/assets/console.js").header("Cache-Control") == "no-cache")
    }

    @Test("An attempt reaches the console with the card's last four only: no BIN, no expiry, also for older rows")
    func attemptShowsOnlyLastFour() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let answer = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(expiration: "12/30"))
        let attemptID = try #require(answer.jsonObject()?["attemptId"] as? String)
        let (cookie, _) = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        func facts() throws -> [String: Any] {
            let detail = try send(app, "GET", "/v1/admin/attempts/\(attemptID)", headers: ["Cookie": cookie])
            #expect(detail.status == 200)
            #expect(
                !detail.text.contains(String(DecisionFixtures.visaPAN.prefix(6))) && !detail.text.contains("12/30"),
                "\(detail.text)")
            return try #require(detail.jsonObject()?["facts"] as? [String: Any])
        }
        #expect(try facts()["lastFour"] as? String == String(DecisionFixtures.visaPAN.suffix(4)))
        // A row written before: its masked PAN and expiry are stored, and still not shown.
        try app.pool.withConnection { connection in
            try connection.execute(
                """
                UPDATE provisioning_attempts SET facts = ((facts::jsonb - 'lastFour')
                    || jsonb_build_object('panMasked', \(String(DecisionFixtures.visaPAN.prefix(6)) + "******" + String(DecisionFixtures.visaPAN.suffix(4)))::text, 'expiration', '12/30'))::json
                WHERE attempt_id = \(try #require(UUID(uuidString: attemptID)))
                """)
        }
        let old = try facts()
        #expect(old["lastFour"] as? String == String(DecisionFixtures.visaPAN.suffix(4)))
        #expect(old["panMasked"] == nil && old["expiration"] == nil)
    }

    @Test("An attempt for an unknown card keeps no BIN in its hits, and one stored with it before is shown without it")
    func unknownCardAttemptShowsNoBIN() throws {
        let app = try TestApplication()
        let pan = "4000056655665556"
        let answer = try app.postAsTSP("/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(pan: pan))
        let attemptID = try #require(answer.jsonObject()?["attemptId"] as? String)
        let id = try #require(UUID(uuidString: attemptID))
        let stored = try app.pool.withConnection {
            try $0.query(
                "SELECT hits::text || facts::text || inputs::text || features::text AS t FROM provisioning_attempts WHERE attempt_id = \(id)"
            )
            .first!.decode("t", as: String.self)
        }
        #expect(!stored.contains(String(pan.prefix(6))) && stored.contains("card_not_found"), "\(stored)")
        let (cookie, _) = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        // A row written before: its pseudo-hit read the BIN.
        try app.pool.withConnection { connection in
            try connection.execute(
                """
                UPDATE provisioning_attempts SET hits = jsonb_set(hits, '{0,values}',
                    jsonb_build_array(jsonb_build_object('name', 'card.bin', 'value', \(String(pan.prefix(6)))::text)))
                WHERE attempt_id = \(id)
                """)
        }
        let detail = try send(app, "GET", "/v1/admin/attempts/\(attemptID)", headers: ["Cookie": cookie])
        #expect(detail.status == 200)
        #expect(!detail.text.contains(String(pan.prefix(6))), "\(detail.text)")
        let hits = try #require(detail.jsonObject()?["hits"] as? [[String: Any]])
        #expect(hits.first?["rule"] as? String == "card_not_found")
        #expect((hits.first?["values"] as? [Any])?.isEmpty == true)
    }

    @Test(
        "Signing in again ends the session the browser had; an expired cookie still reads as expired after others sign in"
    )
    func signInReplacesSession() throws {
        let app = try TestApplication()
        let key = try app.apiKey(role: .analyst)
        let (first, _) = try session(try signIn(app, key: key))
        let second = try signIn(app, key: key, headers: ["Cookie": first])
        #expect(second.status == 201)
        #expect(try send(app, "GET", "/console/session", headers: ["Cookie": first]).status == 401)
        let (current, _) = try session(second)
        #expect(try send(app, "GET", "/console/session", headers: ["Cookie": current]).status == 200)
        // Expired, then someone else signs in (which prunes long-expired rows only).
        try app.pool.withConnection {
            try $0.execute("UPDATE console_sessions SET expires_at = now() - interval '1 hour'")
        }
        _ = try signIn(app, key: key)
        let expired = try send(app, "GET", "/v1/admin/rules", headers: ["Cookie": current])
        #expect(expired.status == 401)
        #expect(expired.text.contains("session_expired"))
        try app.pool.withConnection {
            try $0.execute("UPDATE console_sessions SET expires_at = now() - interval '8 days'")
        }
        _ = try signIn(app, key: key)
        #expect(try count(app, "SELECT count(*) AS n FROM console_sessions") == 1)
    }

    @Test("One backtest at a time per instance: another is 429 backtest_busy with Retry-After, nothing run")
    func oneBacktestAtATime() throws {
        let app = try TestApplication()
        let (cookie, csrf) = try session(try signIn(app, key: try app.apiKey(role: .analyst)))
        let body =
            #"{"rules":"rule x.y\n  title \"t\"\n  outcome orange\n  reason R\n  owner o\n  when card.country == \"FR\"\nend\n","since":"2020-01-01T00:00:00Z","until":"2020-01-02T00:00:00Z"}"#
        let headers = ["Cookie": cookie, "Content-Type": "application/json", "X-CSRF-Token": csrf]
        let gate = app.application.context.backtestGate
        #expect(gate.enter())
        let busy = try send(app, "POST", "/v1/admin/rules/backtest", headers: headers, body: body)
        gate.leave()
        #expect(busy.status == 429)
        #expect(busy.header("Retry-After") == "1")
        #expect(busy.jsonObject().flatMap { ($0["error"] as? [String: Any])?["code"] as? String } == "backtest_busy")
        #expect(try send(app, "POST", "/v1/admin/rules/backtest", headers: headers, body: body).status == 200)
        #expect(gate.enter(), "the finished run gave its place back")
        gate.leave()
    }
}
