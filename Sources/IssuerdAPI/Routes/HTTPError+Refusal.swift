import IssuerdCore
import IssuerdHTTP

extension HTTPError {
    /// The answer to a refusal from below the API: the one place where a ``Refusal``'s kind
    /// becomes an HTTP status.
    init(_ refusal: Refusal) {
        let status: Int
        var headers: HTTPHeaders = [:]
        switch refusal.kind {
        case .invalid: status = 400
        case .unauthenticated:
            self = HTTPError.unauthenticated(file: refusal.file, line: refusal.line)
            return
        case .notFound: status = 404
        case .conflict: status = 409
        case .unacceptable: status = 422
        case .busy(let seconds):
            status = 429
            headers = ["Retry-After": String(max(1, seconds))]
        }
        self.init(
            status: status, code: Code(rawValue: refusal.code), message: refusal.message, context: refusal.context,
            headers: headers, file: refusal.file, line: refusal.line)
    }

    /// The answer `error` stands for when it is one the API gives on purpose (an ``HTTPError`` or
    /// a ``Refusal``); nil for anything unexpected.
    static func answer(for error: any Error) -> HTTPError? {
        switch error {
        case let error as HTTPError: error
        case let refusal as Refusal: HTTPError(refusal)
        default: nil
        }
    }
}
