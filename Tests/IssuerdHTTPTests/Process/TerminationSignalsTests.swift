import Foundation
import Glibc
import IssuerdCore
import Testing

/// Blocking and synchronously receiving termination signals.
@Suite struct TerminationSignalsTests {
    @Test func rawValuesAreThePlatformSignalNumbers() {
        #expect(TerminationSignals.Signal.interrupt.rawValue == SIGINT)
        #expect(TerminationSignals.Signal.terminate.rawValue == SIGTERM)
        #expect(TerminationSignals.Signal.hangup.rawValue == SIGHUP)
    }

    /// Runs on a dedicated thread so the changed mask dies with it, and sends each signal to
    /// that thread only: a process-directed signal could land on a test thread without the mask
    /// and kill the test process.
    @Test(arguments: TerminationSignals.Signal.allCases)
    func blockedSignalIsReturnedByWait(signal: TerminationSignals.Signal) {
        let received = Lock<TerminationSignals.Signal?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            guard let signals = try? TerminationSignals.block() else { return }
            var mask = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &mask)
            guard sigismember(&mask, signal.rawValue) == 1 else { return }
            pthread_kill(pthread_self(), signal.rawValue)
            let got = signals.wait()
            received.withLock { $0 = got }
        }
        thread.start()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(received.withLock { $0 } == signal)
    }
}
