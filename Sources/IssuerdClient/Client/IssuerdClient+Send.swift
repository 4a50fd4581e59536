import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension IssuerdClient {
    /// Runs one logical call within the time budget: token, attempts and back-offs together.
    ///
    /// - Returns: The answer of the last attempt, whatever its status.
    /// - Throws: ``IssuerdClientError`` with ``IssuerdClientError/Code/timedOut`` when the budget
    ///   runs out, ``IssuerdClientError/Code/transport`` when no attempt got an answer, the token
    ///   provider's error, or `CancellationError` when the caller's task was cancelled.
    func send(_ call: HTTPCall) async throws -> HTTPReply {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeBudget)
        return try await Self.withDeadline(deadline, clock: clock) {
            try await self.attempts(of: call, deadline: deadline, clock: clock)
        }
    }

    /// Races `body` against the deadline. The loser is cancelled; URLSession's async API cancels
    /// the underlying transfer when its task is cancelled, so a stalled server cannot hold the
    /// call past its budget.
    static func withDeadline<T: Sendable>(
        _ deadline: ContinuousClock.Instant, clock: ContinuousClock, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(until: deadline, clock: clock)
                throw IssuerdClientError.timedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw IssuerdClientError.timedOut() }
            return first
        }
    }

    private func attempts(
        of call: HTTPCall, deadline: ContinuousClock.Instant, clock: ContinuousClock
    ) async throws -> HTTPReply {
        let token = try await tokenProvider()
        let maxAttempts = call.isRetrySafe ? retryPolicy.maxAttempts : 1
        var attempt = 1
        while true {
            let outcome: Result<HTTPReply, IssuerdClientError>
            do {
                outcome = .success(try await once(call, token: token, timeout: clock.now.duration(to: deadline)))
            } catch let error as IssuerdClientError where error.code == .transport {
                outcome = .failure(error)
            }
            if case .success(let reply) = outcome, !RetryPolicy.isRetryable(status: reply.status) { return reply }
            let wait = retryPolicy.backoff(afterAttempt: attempt, retryAfter: (try? outcome.get())?.retryAfter)
            // A retry that cannot finish in time only turns an informative failure into a timeout.
            guard attempt < maxAttempts, clock.now.advanced(by: wait) < deadline else { return try outcome.get() }
            try await Task.sleep(for: wait, clock: clock)
            attempt += 1
        }
    }

    private func once(_ call: HTTPCall, token: String, timeout: Duration) async throws -> HTTPReply {
        let requestId = UUID().uuidString.lowercased()
        let request = try call.urlRequest(baseURL: baseURL, token: token, requestId: requestId, timeout: timeout)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            try Task.checkCancellation()
            throw IssuerdClientError.transport(error)
        }
        guard let http = response as? HTTPURLResponse else {
            throw IssuerdClientError.invalidResponse("not an HTTP response", requestId: requestId)
        }
        guard data.count <= HTTPReply.maximumBodySize else {
            throw IssuerdClientError.invalidResponse(
                "response body over \(HTTPReply.maximumBodySize) bytes", requestId: requestId)
        }
        return HTTPReply(http, body: data, sentRequestId: requestId)
    }
}
