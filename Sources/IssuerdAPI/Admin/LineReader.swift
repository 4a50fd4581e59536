import Foundation

/// Reads `\n`-separated lines of bounded length from a file without loading it whole.
///
/// The buffer holds at most one read (64 KiB) plus one partial line, so memory stays flat
/// whatever the file's size; consumed bytes are dropped only when the buffer is refilled (a
/// removal per line would move the rest of the buffer once per line).
struct LineReader {
    let handle: FileHandle
    let limit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var lineNumber = 0
    private var finished = false

    init(handle: FileHandle, limit: Int) {
        self.handle = handle
        self.limit = limit
    }

    /// The next line (1-based number, bytes without the newline or a trailing `\r`), or nil at the end.
    ///
    /// - Throws: ``CommandInputError`` for a line longer than `limit`.
    mutating func next() throws -> (Int, [UInt8])? {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: 0x0A) {
                lineNumber += 1
                var end = newline
                if end > start, buffer[end - 1] == 0x0D { end -= 1 }
                guard end - start <= limit else { throw CommandInputError("line \(lineNumber) is longer than \(limit) bytes") }
                let line = Array(buffer[start..<end])
                start = newline + 1
                return (lineNumber, line)
            }
            guard buffer.count - start <= limit else { throw CommandInputError("line \(lineNumber + 1) is longer than \(limit) bytes") }
            if finished {
                guard start < buffer.count else { return nil }
                lineNumber += 1
                var line = Array(buffer[start...])
                if line.last == 0x0D { line.removeLast() }
                start = buffer.count
                return (lineNumber, line)
            }
            if start > 0 {
                buffer.removeSubrange(..<start)
                start = 0
            }
            searchFrom = buffer.count
            let chunk = try handle.read(upToCount: 64 * 1024) ?? Data()
            if chunk.isEmpty { finished = true } else { buffer += chunk }
        }
    }
}
