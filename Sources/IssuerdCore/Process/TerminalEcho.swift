import Glibc

/// Reading a secret (an HSM PIN, a PAN for a support command) typed at a terminal without the
/// terminal showing it, the way `ssh` and `sudo` ask for a password.
///
/// Standard input that is not a terminal (a pipe, a file) is read as it is: there is no echo to
/// turn off. On a terminal, echo is turned off for the duration of the read (the newline still
/// shows, `ECHONL`) and the previous settings are put back afterwards, also when the read throws
/// and when SIGINT, SIGTERM, SIGHUP or SIGQUIT end the process during it (the handler restores
/// the terminal, then the signal takes its default course).
public enum TerminalEcho {
    /// Whether `descriptor` is a terminal.
    public static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }

    /// The terminal's echo could not be turned off, so the secret would have been shown.
    public struct Unavailable: Error, CustomStringConvertible {
        /// The failing call's `errno` text.
        public var reason: String
        public var description: String {
            "cannot turn off the terminal's echo to read a secret (\(reason)); pipe it in instead"
        }
    }

    /// Runs `body` with echo off on `descriptor` when it is a terminal, else just runs it.
    ///
    /// - Throws: ``Unavailable`` when `descriptor` is a terminal whose echo cannot be turned off
    ///   (nothing is read then), or what `body` throws.
    public static func withEchoDisabled<T>(on descriptor: Int32, _ body: () throws -> T) throws -> T {
        guard isTerminal(descriptor) else { return try body() }
        var saved = termios()
        guard tcgetattr(descriptor, &saved) == 0 else { throw Unavailable(reason: String(cString: strerror(errno))) }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        let previousHandlers = installRestoringHandlers(descriptor: descriptor, saved: saved)
        defer {
            _ = tcsetattr(descriptor, TCSAFLUSH, &saved)
            restoreHandlers(previousHandlers)
        }
        guard tcsetattr(descriptor, TCSAFLUSH, &quiet) == 0 else {
            throw Unavailable(reason: String(cString: strerror(errno)))
        }
        return try body()
    }

    /// Reads bytes from `descriptor` up to and without the first newline (or end of input),
    /// one `read(2)` at a time so nothing past the line is consumed, into a buffer of at most
    /// `maximumLength + 1` bytes that `body` sees and that is wiped afterwards.
    ///
    /// - Returns: What `body` returns; it gets `nil` when the line is longer than `maximumLength`.
    public static func readLine<T>(
        from descriptor: Int32, maximumLength: Int, _ body: (UnsafeRawBufferPointer?) throws -> T
    ) throws -> T {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maximumLength + 1, alignment: 1)
        defer {
            explicit_bzero(buffer.baseAddress!, buffer.count)
            buffer.deallocate()
        }
        var count = 0
        var byte: UInt8 = 0
        var tooLong = false
        while true {
            let got = read(descriptor, &byte, 1)
            if got < 0, errno == EINTR { continue }
            guard got == 1, byte != 0x0A else { break }
            if count < buffer.count {
                buffer[count] = byte
                count += 1
            } else {
                tooLong = true
            }
        }
        byte = 0
        if count > 0, buffer[count - 1] == 0x0D { count -= 1 }
        guard !tooLong, count <= maximumLength else { return try body(nil) }
        return try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    // MARK: Restoring the terminal when a signal ends the process mid-read

    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
}

// The handler may only touch what is async-signal-safe: these two globals, `tcsetattr`,
// `signal` and `raise`. They are written before the handlers are installed and read only by them.
//
// The settings live on the heap, not in a `termios` global: Swift 6.3 emits a global of an
// imported C struct that it can initialise statically (`= termios()`) as a packed constant
// without the struct's interior padding, 57 bytes for glibc's 60-byte `termios`, so every store
// of a whole `termios` into it wrote 3 bytes past its end (AddressSanitizer's
// global-buffer-overflow, docs/testing.md "Sanitizers").
nonisolated(unsafe) private var restoreDescriptor: Int32 = -1
nonisolated(unsafe) private let restoreSettings: UnsafeMutablePointer<termios> = {
    let settings = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    settings.initialize(to: termios())
    return settings
}()

private func restoreTerminalAndReraise(_ signalNumber: Int32) {
    _ = tcsetattr(restoreDescriptor, TCSANOW, restoreSettings)
    signal(signalNumber, SIG_DFL)
    raise(signalNumber)
}

extension TerminalEcho {
    fileprivate static func installRestoringHandlers(descriptor: Int32, saved: termios) -> [(Int32, sigaction)] {
        restoreDescriptor = descriptor
        restoreSettings.pointee = saved  // the first use also allocates it, before any handler runs
        var previous: [(Int32, sigaction)] = []
        for number in signals {
            // A signal the process ignores stays ignored; one it handles keeps its handler
            // (it is the owner's to restore the terminal then).
            var current = sigaction()
            guard sigaction(number, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil else { continue }
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { restoreTerminalAndReraise($0) }
            sigemptyset(&action.sa_mask)
            var old = sigaction()
            if sigaction(number, &action, &old) == 0 { previous.append((number, old)) }
        }
        return previous
    }

    fileprivate static func restoreHandlers(_ previous: [(Int32, sigaction)]) {
        for (number, old) in previous {
            var old = old
            _ = sigaction(number, &old, nil)
        }
    }
}
