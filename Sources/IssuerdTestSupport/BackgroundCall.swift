import Foundation
import IssuerdCore

/// A call started on another thread while the test holds what it will wait on (a row lock, an
/// open transaction), and its result once the test has let go.
public final class BackgroundCall<Value: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let outcome = Lock<Result<Value, any Error>?>(nil)

    /// Starts `work` on a global queue.
    public init(_ work: @escaping @Sendable () throws -> Value) {
        DispatchQueue.global().async { [self] in
            let result = Result { try work() }
            outcome.withLock { $0 = result }
            done.signal()
        }
    }

    /// The call's result, or nil when it has not finished within `seconds`.
    public func result(within seconds: Double) -> Result<Value, any Error>? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return outcome.withLock { $0 }
    }
}
