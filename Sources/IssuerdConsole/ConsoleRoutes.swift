import Foundation
import IssuerdAuth
import IssuerdHTTP

/// The analyst console (`/console`, docs/console.md): its pages, assets and sessions.
///
/// Every page is the same small HTML document naming the page; `console.js` renders it from
/// the analyst JSON routes (`/v1/admin/rules`, `…/decisions`, `…/rule-hits`, `…/attempts`,
/// `…/rules/backtest`), which accept the session cookie in place of an API key. Pages need a
/// session: without one, they redirect to the sign-in page, saying why.
package enum ConsoleRoutes {
    /// The pages: path, `data-page` name, title.
    package static let pages: [(path: String, name: String, title: String)] = [
        ("/console/rules", "rules", "Ruleset"),
        ("/console/decisions", "decisions", "Decisions"),
        ("/console/rule-hits", "rule-hits", "Rule hits"),
        ("/console/attempts", "attempts", "Attempts"),
        ("/console/attempts/{attemptId}", "attempt", "Attempt"),
        ("/console/cases", "cases", "Review queue"),
        ("/console/cases/{caseId}", "case", "Case"),
        ("/console/backtest", "backtest", "Backtest"),
        ("/console/changes", "changes", "Rule changes"),
        ("/console/changes/{changeId}", "change", "Rule change"),
        ("/console/audit", "audit", "Audit log"),
    ]

    /// One route of the console: what the API's route table registers behind its error mapping.
    package struct Route {
        package var method: HTTPMethod
        package var pattern: String
        package var handler: Router.Handler
    }

    /// Every console route.
    ///
    /// - Parameters:
    ///   - sessions: The console's sessions.
    ///   - principal: The principal of an unrevoked API key, or nil (the API's key check).
    package static func routes(
        sessions: ConsoleSessions, principal: @escaping @Sendable (_ key: String) throws -> APIKeyPrincipal?
    ) -> [Route] {
        var table = Table()

        table.add(.get, "/console") { _ in redirect(to: "/console/rules") }

        table.add(.get, "/console/sign-in") { _ in
            secured(
                .text(ConsoleAssets.page(name: "sign-in", title: "Sign in"), contentType: "text/html; charset=utf-8"))
        }

        table.add(.get, "/console/assets/console.css") { _ in
            secured(.text(ConsoleAssets.stylesheet, contentType: "text/css; charset=utf-8"), cache: "no-cache")
        }

        table.add(.get, "/console/assets/console.js") { _ in
            secured(.text(ConsoleAssets.script, contentType: "text/javascript; charset=utf-8"), cache: "no-cache")
        }

        for page in pages {
            table.add(.get, page.path) { request in
                switch try sessions.lookup(request) {
                case .valid:
                    return secured(
                        .text(
                            ConsoleAssets.page(name: page.name, title: page.title),
                            contentType: "text/html; charset=utf-8"))
                case .expired:
                    request.logger.notice("console session refused", ["reason": "expired"])
                    return redirect(to: signInLocation(reason: "expired", request: request))
                case .unknown:
                    let sent = request.cookie(sessions.cookieName(for: request)) != nil
                    if sent { request.logger.notice("console session refused", ["reason": "unknown"]) }
                    return redirect(to: signInLocation(reason: sent ? "invalid" : nil, request: request))
                }
            }
        }

        table.add(.post, "/console/session") { request in
            try checkOrigin(request)
            let body: SignIn
            do {
                body = try request.decodeJSON(SignIn.self)
            } catch let error as HTTPError {
                request.logger.notice("console sign-in refused", ["reason": .string(error.code.rawValue)])
                throw error
            }
            guard let principal = try principal(body.key) else {
                request.logger.notice("console sign-in refused", ["reason": "unknown key"])
                throw HTTPError(status: 401, code: .unauthenticated, message: "this API key is unknown or revoked")
            }
            guard principal.role == .analyst || principal.role == .admin else {
                request.logger.notice("console sign-in refused", ["reason": "role", "keyId": .string(principal.keyID)])
                throw HTTPError.forbidden("only analyst and admin keys may sign in to the console")
            }
            let (cookie, session) = try sessions.open(for: principal, request: request)
            request.logger.info(
                "console signed in", ["keyId": .string(principal.keyID), "role": .string(principal.role.rawValue)])
            var response = try HTTPResponse.json(
                SessionView(session, timeZone: sessions.settings.timeZone), status: 201)
            response.headers.add("Set-Cookie", sessions.setCookie(cookie, request: request))
            return secured(response)
        }

        table.add(.get, "/console/session") { request in
            secured(try .json(SessionView(try sessions.authenticate(request), timeZone: sessions.settings.timeZone)))
        }

        table.add(.delete, "/console/session") { request in
            // An expired session has nothing left to protect: signing out of it ends its row and
            // clears the cookie (a 401 would leave the browser holding it). A live one needs
            // its CSRF token; a cookie that matches no session is refused, and cleared too.
            switch try sessions.lookup(request) {
            case .valid(let session):
                try sessions.requireCSRFToken(request, of: session)
                try sessions.close(request)
                request.logger.info("console signed out", ["keyId": .string(session.principal.keyID)])
            case .expired:
                try sessions.close(request)
                request.logger.info("console signed out of an expired session")
            case .unknown:
                // A revoked key's session row goes too (lookup finds no live key for it).
                try sessions.close(request)
                request.logger.notice("console session refused", ["reason": "unknown"])
                var refusal = HTTPError.unauthenticated(scheme: "Cookie")
                refusal.headers.add("Set-Cookie", sessions.setCookie(nil, request: request))
                throw refusal
            }
            var response = HTTPResponse.noContent()
            response.headers.add("Set-Cookie", sessions.setCookie(nil, request: request))
            return secured(response)
        }
        return table.routes
    }

    /// Collects routes in the shape the API's route table adds them.
    private struct Table {
        var routes: [Route] = []

        mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping Router.Handler) {
            routes.append(Route(method: method, pattern: pattern, handler: handler))
        }
    }

    /// `{"key": "isk_…"}`.
    package struct SignIn: Decodable {
        package var key: String
    }

    /// The session as the console's script sees it (never the cookie).
    package struct SessionView: Encodable {
        package var name: String
        package var role: String
        package var keyId: String
        package var csrfToken: String
        package var expiresAt: Date
        /// The time zone pages show times in (`ISSUERD_CONSOLE_TIME_ZONE`).
        package var timeZone: String

        package init(_ session: ConsoleSession, timeZone: String) {
            self.timeZone = timeZone
            name = session.principal.name
            role = session.principal.role.rawValue
            keyId = session.principal.keyID
            csrfToken = session.csrfToken
            expiresAt = session.expiresAt
        }
    }

    /// The Content-Security-Policy of every console response: scripts, styles and requests only
    /// from this origin, nothing inline, no framing, no plugins, forms only to this origin.
    package static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
        "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'",
    ].joined(separator: "; ")

    /// Adds the console's security headers.
    package static func secured(_ response: HTTPResponse, cache: String = "no-store") -> HTTPResponse {
        var response = response
        response.headers.set("Content-Security-Policy", contentSecurityPolicy)
        response.headers.set("X-Content-Type-Options", "nosniff")
        response.headers.set("X-Frame-Options", "DENY")
        response.headers.set("Referrer-Policy", "no-referrer")
        response.headers.set("Cache-Control", cache)
        return response
    }

    private static func redirect(to location: String) -> HTTPResponse {
        secured(HTTPResponse(status: 303, headers: ["Location": location]))
    }

    /// `/console/sign-in?reason=…&next=<the page asked for, with its query>`.
    package static func signInLocation(reason: String?, request: HTTPRequest) -> String {
        var next = request.path
        if !request.query.isEmpty {
            next +=
                "?"
                + request.query.sorted { $0.key < $1.key }.map { "\(encode($0.key))=\(encode($0.value))" }.joined(
                    separator: "&")
        }
        var items = ["next=\(encode(next))"]
        if let reason { items.insert("reason=\(reason)", at: 0) }
        return "/console/sign-in?" + items.joined(separator: "&")
    }

    private static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~/:")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A browser sends `Origin` on every POST; one naming another host is a cross-site request
    /// (the JSON content type already keeps plain HTML forms out). Where `Origin` is missing,
    /// a browser's `Sec-Fetch-Site: cross-site` still refuses it; a request with neither is not a
    /// browser's (curl, a script), which holds the key anyway.
    private static func checkOrigin(_ request: HTTPRequest) throws {
        if request.headers["Sec-Fetch-Site"]?.lowercased() == "cross-site" {
            request.logger.notice("console sign-in refused", ["reason": "cross-site"])
            throw HTTPError.forbidden("cross-origin sign-in refused")
        }
        guard let origin = request.headers["Origin"] else { return }
        let host = request.headers["Host"] ?? ""
        let originHost =
            origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? ""
        guard !host.isEmpty, originHost.lowercased() == host.lowercased() else {
            request.logger.notice("console sign-in refused", ["reason": "cross-origin"])
            throw HTTPError.forbidden("cross-origin sign-in refused")
        }
    }
}
