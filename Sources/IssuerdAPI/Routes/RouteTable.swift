import IssuerdConsole
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres

/// Builds the router, wrapping every handler so that infrastructure failures become the
/// contract's answers instead of generic 500s.
///
/// A database that is down or saturated is not the client's fault and not a bug: it is a 503
/// `database_unavailable` with `Retry-After`, so load balancers and apps back off and retry.
struct RouteTable {
    /// The head-time credential check of each route pattern (``ServiceContext/admission(for:)``).
    var admission: (String) -> Router.Admission? = { _ in nil }
    /// Keeps a database failure that every request meets to one warning per interval.
    var repeatedLogs = RepeatedLogLimiter(interval: .seconds(10))
    private(set) var router: Router = {
        var router = Router()
        router.finishing = RouteTable.finish
        return router
    }()

    /// Headers by path, on every answer, errors included: nothing under `/v1/` may be kept by a
    /// browser or a proxy (every answer is for one authenticated caller, and the console reads
    /// attempts through these routes with its cookie), and everything under `/console` carries
    /// the console's security headers (``ConsoleRoutes/secured(_:cache:)``), its refusals too.
    @Sendable static func finish(_ request: HTTPRequest, _ response: inout HTTPResponse) {
        if request.path.hasPrefix("/v1/") {
            if response.headers["Cache-Control"] == nil { response.headers.set("Cache-Control", "no-store") }
        } else if request.path == "/console" || request.path.hasPrefix("/console/") {
            response = ConsoleRoutes.secured(response, cache: response.headers["Cache-Control"] ?? "no-store")
        }
    }

    /// Registers a handler behind the error mapping (a ``Refusal`` from below becomes its HTTP
    /// answer, `HTTPError(_ refusal:)`; PostgreSQL's errors 503 or 400); its database work is one request's
    /// (``PostgresRequestScope``: the wait for a handler thread counts against the wait for a
    /// connection, and after a statement got no answer in time nothing more waits).
    mutating func add(
        _ method: HTTPMethod, _ pattern: String, inline: Bool = false, _ handler: @escaping Router.Handler
    ) {
        let repeatedLogs = repeatedLogs
        router.add(method, pattern, inline: inline, admission: admission(pattern)) { request in
            do {
                return try PostgresRequestScope.run(waited: .now - request.receivedAt) { try handler(request) }
            } catch let refusal as Refusal {
                throw HTTPError(refusal)
            } catch let error as PostgresError where error.isUnavailability {
                repeatedLogs.warning(
                    request.logger, kind: "database unavailable: \(error.code) \(error.sqlState ?? "")",
                    "database unavailable", ["error": "\(error.code)", "sqlState": .string(error.sqlState ?? "none")])
                throw HTTPError.databaseUnavailable()
            } catch let error as PostgresError where error.isRejectedValue {
                // A value PostgreSQL cannot hold (a NUL in text, a string over a column's limit,
                // an index entry too large) that slipped past a handler's own validation is
                // still the caller's mistake, not a server fault.
                request.logger.notice("value refused by the database", ["sqlState": .string(error.sqlState ?? "none")])
                throw APIErrors.invalidRequest("a value in the request is malformed or too long")
            }
        }
    }
}

extension PostgresError {
    /// The database is away, saturated or not answering in time (a client-side deadline, or a
    /// server-side statement timeout) or short of disk or memory (SQLSTATE class 53), or a
    /// migration is changing the tables under the running statements (a plan invalidated again
    /// after its one retry): not the caller's fault, answered 503.
    fileprivate var isUnavailability: Bool {
        code == .unavailable || code == .poolTimeout || code == .timedOut || code == .queryCanceled
            || code == .insufficientResources || isInvalidatedPlan
    }
}

extension HTTPError.Code {
    /// PostgreSQL could not be reached, no connection was free in time, or it did not answer in time.
    static let databaseUnavailable: Self = "database_unavailable"
}

extension HTTPError {
    /// 503 with `Retry-After: 1`.
    static func databaseUnavailable(file: String = #fileID, line: Int = #line) -> HTTPError {
        var error = HTTPError(
            status: 503, code: .databaseUnavailable, message: "the database is unavailable; retry shortly", file: file,
            line: line)
        error.headers.set("Retry-After", "1")
        return error
    }
}
