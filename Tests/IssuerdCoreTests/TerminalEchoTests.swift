import Glibc
import IssuerdCore
import Testing

/// A pseudo-terminal pair: what the user types goes into `controller`, the program reads
/// `terminal`, and whatever the terminal echoes comes back out of `controller`.
private final class PseudoTerminal {
    let controller: Int32
    let terminal: Int32

    init() throws {
        // posix_openpt and friends sit behind _XOPEN_SOURCE in the C headers Swift imports,
        // so they are looked up in the C library the process already has.
        let libc = try #require(dlopen(nil, RTLD_NOW))
        typealias OpenPT = @convention(c) (Int32) -> Int32
        typealias OnController = @convention(c) (Int32) -> Int32
        // ptsname_r, not ptsname: ptsname returns a static buffer, and the suites run in
        // parallel: two tests opening a terminal at once both got the later one's name, both read
        // it, and both hung in read(2) (seen in a CI run).
        typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32
        let openpt = unsafeBitCast(try #require(dlsym(libc, "posix_openpt")), to: OpenPT.self)
        let grant = unsafeBitCast(try #require(dlsym(libc, "grantpt")), to: OnController.self)
        let unlock = unsafeBitCast(try #require(dlsym(libc, "unlockpt")), to: OnController.self)
        let name = unsafeBitCast(try #require(dlsym(libc, "ptsname_r")), to: Name.self)
        controller = openpt(O_RDWR | O_NOCTTY)
        try #require(controller >= 0)
        try #require(grant(controller) == 0 && unlock(controller) == 0)
        var path = [CChar](repeating: 0, count: 128)
        try #require(name(controller, &path, path.count) == 0)
        terminal = open(path, O_RDWR | O_NOCTTY)
        try #require(terminal >= 0)
        let flags = fcntl(controller, F_GETFL)
        _ = fcntl(controller, F_SETFL, flags | O_NONBLOCK)
    }

    deinit {
        close(terminal)
        close(controller)
    }

    var localFlags: tcflag_t {
        var settings = termios()
        _ = tcgetattr(terminal, &settings)
        return settings.c_lflag
    }

    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(controller, $0.baseAddress, $0.count) }
    }

    /// What the terminal has echoed so far (waits briefly for it to arrive).
    func echoed() -> String {
        var output: [UInt8] = []
        var descriptor = pollfd(fd: controller, events: Int16(POLLIN), revents: 0)
        while poll(&descriptor, 1, 200) > 0 {
            var chunk = [UInt8](repeating: 0, count: 256)
            let got = read(controller, &chunk, chunk.count)
            guard got > 0 else { break }
            output += chunk[0..<got]
        }
        return String(decoding: output, as: UTF8.self)
    }
}

@Suite("Reading a secret at a terminal")
struct TerminalEchoTests {
    @Test("Echo is off while the secret is read and back on afterwards; what is typed is not shown")
    func echoOffDuringRead() throws {
        let pty = try PseudoTerminal()
        #expect(TerminalEcho.isTerminal(pty.terminal))
        #expect(pty.localFlags & tcflag_t(ECHO) != 0)
        let secret = try TerminalEcho.withEchoDisabled(on: pty.terminal) { () -> String? in
            #expect(pty.localFlags & tcflag_t(ECHO) == 0)
            #expect(pty.localFlags & tcflag_t(ECHONL) != 0)
            pty.type("4111111111111111\n")
            return try TerminalEcho.readLine(from: pty.terminal, maximumLength: 32) { bytes in
                bytes.map { String(decoding: $0, as: UTF8.self) }
            }
        }
        #expect(secret == "4111111111111111")
        let shown = pty.echoed()
        #expect(!shown.contains("4111"))
        #expect(shown.contains("\n"))  // ECHONL: the cursor still moves to the next line
        #expect(pty.localFlags & tcflag_t(ECHO) != 0)

        pty.type("shown\n")
        #expect(pty.echoed().contains("shown"))
    }

    @Test("The terminal is restored when reading throws")
    func restoredOnThrow() throws {
        struct Failure: Error {}
        let pty = try PseudoTerminal()
        #expect(throws: Failure.self) {
            try TerminalEcho.withEchoDisabled(on: pty.terminal) { throw Failure() }
        }
        #expect(pty.localFlags & tcflag_t(ECHO) != 0)
    }

    @Test("A line is read without consuming the next one; too long is nil")
    func lineBounds() throws {
        let pty = try PseudoTerminal()
        pty.type("1234\nnext\n")
        let first = try TerminalEcho.readLine(from: pty.terminal, maximumLength: 8) { $0.map { Array($0) } }
        #expect(first == Array("1234".utf8))
        let second = try TerminalEcho.readLine(from: pty.terminal, maximumLength: 8) { $0.map { Array($0) } }
        #expect(second == Array("next".utf8))
        pty.type("123456789\n")
        let long = try TerminalEcho.readLine(from: pty.terminal, maximumLength: 8) { $0.map { Array($0) } }
        #expect(long == nil)
    }

    @Test("A pipe is read as it is: no terminal settings, the first line only, a CRLF line end dropped")
    func pipeUntouched() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        #expect(!TerminalEcho.isTerminal(ends[0]))
        let bytes = Array("9876\r\nrest".utf8)
        _ = bytes.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
        close(ends[1])
        let line = try TerminalEcho.withEchoDisabled(on: ends[0]) {
            try TerminalEcho.readLine(from: ends[0], maximumLength: 8) {
                $0.map { String(decoding: $0, as: UTF8.self) }
            }
        }
        #expect(line == "9876")
        let rest = try TerminalEcho.readLine(from: ends[0], maximumLength: 8) {
            $0.map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(rest == "rest")
    }
}
