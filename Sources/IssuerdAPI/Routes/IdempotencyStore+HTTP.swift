import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage

extension IdempotencyStore {
    /// Runs `work` at most once per `(scope, Idempotency-Key)` of `request`; without the header it
    /// simply runs `work`.
    ///
    /// - Parameter scope: The caller and operation, e.g. `app:<customer>:provision:<card>`, so
    ///   keys of different callers never collide.
    func run(_ request: HTTPRequest, scope: String, _ work: () throws -> HTTPResponse) throws -> HTTPResponse {
        try run(request, scope: scope) { (_: IdempotencyClaim?) in try work() }
    }

    /// Runs `work` at most once per `(scope, Idempotency-Key)`, handing it the claim (nil without
    /// the header) so that it can store its answer in its own transaction. A refusal below 500 is
    /// stored as its envelope; a replayed answer says so in `Idempotent-Replayed: true`.
    func run(
        _ request: HTTPRequest, scope: String, _ work: (IdempotencyClaim?) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        try run(
            key: request.headers[Self.headerName],
            request: { Array(request.method.rawValue.utf8) + [0] + Array(request.path.utf8) + [0] + request.body },
            scope: scope,
            stored: { StoredAnswer(status: $0.status, body: $0.body) },
            refused: { error in
                guard let answer = HTTPError.answer(for: error), answer.status < 500 else { return nil }
                let response = answer.response(requestId: request.requestId)
                return StoredAnswer(status: response.status, body: response.body)
            },
            replayed: { answer in
                var response = HTTPResponse(status: answer.status, body: answer.body)
                response.headers.set("Content-Type", HTTPResponse.jsonContentType)
                response.headers.set("Idempotent-Replayed", "true")
                return response
            }, work)
    }
}

extension IdempotencyClaim {
    /// The statement storing `response` (its status and body) as this key's answer, if this
    /// holder still holds it.
    func recording(_ response: HTTPResponse) -> PostgresQuery {
        recording(StoredAnswer(status: response.status, body: response.body))
    }
}
