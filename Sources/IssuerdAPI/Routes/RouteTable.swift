import IssuerdHTTP
import IssuerdPostgres

/// Builds the router, wrapping every handler so that infrastructure failures become the
/// contract's answers instead of generic 500s.
///
/// A database that is down or saturated is not the client's fault and not a bug: it is a 503
/// `database_unavailable` with `Retry-After`, so load balancers and apps back off and retry.
struct RouteTable {
    private(set) var router = Router()

    /// Registers a handler behind the error mapping.
    mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping Router.Handler) {
        router.add(method, pattern) { request in
            do {
                return try handler(request)
            } catch let error as PostgresError where error.code == .unavailable || error.code == .poolTimeout {
                request.logger.warning("database unavailable", ["error": "\(error.code)"])
                throw HTTPError.databaseUnavailable()
            }
        }
    }
}

extension HTTPError.Code {
    /// PostgreSQL could not be reached or no connection was free in time.
    static let databaseUnavailable: Self = "database_unavailable"
}

extension HTTPError {
    /// 503 with `Retry-After: 1`.
    static func databaseUnavailable(file: String = #fileID, line: Int = #line) -> HTTPError {
        var error = HTTPError(status: 503, code: .databaseUnavailable, message: "the database is unavailable; retry shortly", file: file, line: line)
        error.headers.set("Retry-After", "1")
        return error
    }
}
