import Foundation
import Glibc
import IssuerdCore

/// A response body written to an unlinked temporary file while it is made, then sent from
/// the file: for a body too large to hold in memory (a long CSV export), whose maker writes
/// it a chunk at a time and keeps only one chunk in memory.
///
/// The file is unlinked as soon as it is created, so nothing is left behind, whatever happens
/// to the request.
public final class SpooledBody: Sendable {
    // Guarded by Lock: the descriptor until the server takes it (-1 after), and its size.
    private let state: Lock<(descriptor: Int32, size: Int)>

    /// Creates an empty body in the system's temporary directory.
    ///
    /// - Throws: `POSIXError` when no temporary file can be made.
    public init() throws {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/issuerd-spool-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if descriptor >= 0 {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        }
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        state = Lock((descriptor, 0))
    }

    deinit {
        let descriptor = state.withLock { $0.descriptor }
        if descriptor >= 0 { close(descriptor) }
    }

    /// The bytes written so far.
    public var size: Int { state.withLock { $0.size } }

    /// Appends `text` as UTF-8.
    ///
    /// - Throws: `POSIXError` when the write fails (a full disk).
    public func append(_ text: String) throws {
        var text = text
        try text.withUTF8 { bytes in try append(UnsafeRawBufferPointer(bytes)) }
    }

    /// Appends `bytes`.
    ///
    /// - Throws: `POSIXError` when the write fails (a full disk).
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        try state.withLock { state in
            precondition(state.descriptor >= 0, "appending to a body already sent")
            var offset = 0
            while offset < bytes.count {
                let written = write(state.descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
                offset += written
            }
            state.size += bytes.count
        }
    }

    /// Hands the descriptor, rewound, to the caller, who closes it; nil when already taken.
    package func take() -> (descriptor: Int32, size: Int)? {
        state.withLock { state in
            guard state.descriptor >= 0 else { return nil }
            defer { state.descriptor = -1 }
            _ = lseek(state.descriptor, 0, SEEK_SET)
            return (state.descriptor, state.size)
        }
    }

    /// The whole body in memory: for answering without a socket (tests).
    package func readAll() -> [UInt8] {
        guard let (descriptor, size) = take() else { return [] }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + offset, size - offset) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            offset += count
        }
        return Array(bytes.prefix(offset))
    }
}
