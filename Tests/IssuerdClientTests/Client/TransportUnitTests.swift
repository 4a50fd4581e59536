import Foundation
import Testing

@testable import IssuerdClient

@Suite("Retry-After and back-off")
struct TransportUnitTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    @Test(arguments: [
        ("7", Duration.seconds(7)), (" 0 ", .seconds(0)), ("999999999", .seconds(86_400)),
    ])
    func deltaSeconds(value: String, expected: Duration) {
        #expect(HTTPReply.parseRetryAfter(value, now: Self.now) == expected)
    }

    @Test func httpDate() throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let value = formatter.string(from: Self.now.addingTimeInterval(42))
        #expect(HTTPReply.parseRetryAfter(value, now: Self.now) == .seconds(42))
        // A date in the past means "now".
        #expect(
            HTTPReply.parseRetryAfter(formatter.string(from: Self.now.addingTimeInterval(-5)), now: Self.now) == .zero)
    }

    @Test(arguments: ["", "-1", "soon", "7s", "Sun, 99 Foo 2025 00:00:00 GMT"])
    func garbageIsIgnored(value: String) {
        #expect(HTTPReply.parseRetryAfter(value, now: Self.now) == nil)
    }

    @Test(arguments: 1...8)
    func backoffGrowsAndStaysWithinBounds(attempt: Int) {
        let policy = RetryPolicy(maxAttempts: 10, initialBackoff: .milliseconds(100), maxBackoff: .seconds(1))
        let wait = policy.backoff(afterAttempt: attempt, retryAfter: nil)
        let ideal = min(Duration.milliseconds(100) * (1 << (attempt - 1)), .seconds(1))
        #expect(wait >= ideal * 0.5)
        #expect(wait <= ideal)
        #expect(policy.backoff(afterAttempt: attempt, retryAfter: .milliseconds(900)) >= .milliseconds(900))
        #expect(policy.backoff(afterAttempt: attempt, retryAfter: .seconds(60)) == .seconds(1))
    }

    @Test(arguments: [(0, 1), (1, 1), (3, 3), (50, 10)])
    func attemptsAreClamped(requested: Int, effective: Int) {
        #expect(RetryPolicy(maxAttempts: requested).maxAttempts == effective)
    }
}
