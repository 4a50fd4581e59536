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
    /// stored as its envelope, except 429: a rate limit is about when the request came, not what
    /// it asked, so the retry its `Retry-After` invites does the work. A replayed answer carries
    /// the stored headers and says so in `Idempotent-Replayed: true`.
    func run(
        _ request: HTTPRequest, scope: String, _ work: (IdempotencyClaim?) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        try run(
            key: request.headers[Self.headerName],
            request: { Array(request.method.rawValue.utf8) + [0] + Array(request.path.utf8) + [0] + request.body },
            scope: scope,
            stored: { StoredAnswer($0) },
            refused: { error in
                guard let answer = HTTPError.answer(for: error), answer.status < 500, answer.status != 429 else {
                    return nil
                }
                return StoredAnswer(answer.response(requestId: request.requestId))
            },
            replayed: { answer in
                var response = HTTPResponse(status: answer.status, body: answer.body)
                for (name, value) in answer.headers { response.headers.set(name, value) }
                if response.headers["Content-Type"] == nil {
                    response.headers.set("Content-Type", HTTPResponse.jsonContentType)
                }
                response.headers.set("Idempotent-Replayed", "true")
                return response
            }, work)
    }
}

extension IdempotencyClaim {
    /// The statement storing `response` (its status, headers and body) as this key's answer, if
    /// this holder still holds it.
    func recording(_ response: HTTPResponse) -> PostgresQuery {
        recording(StoredAnswer(response))
    }
}

extension StoredAnswer {
    /// `response` as values: its status, the headers its handler set (not those the server adds
    /// to every answer later, such as the request id), and its body.
    init(_ response: HTTPResponse) {
        var headers: [String: String] = [:]
        for field in response.headers where field.name.lowercased() != "content-length" {
            headers[field.name] = field.value
        }
        self.init(status: response.status, headers: headers, body: response.body)
    }
}
