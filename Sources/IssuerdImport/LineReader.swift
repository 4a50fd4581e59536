import Foundation

/// Reads `\n`-separated lines of bounded length from a file without loading it whole.
///
/// The buffer holds at most one read (64 KiB) plus one partial line, so memory stays flat
/// whatever the file's size; consumed bytes are dropped only when the buffer is refilled (a
/// removal per line would move the rest of the buffer once per line).
package struct LineReader {
    package let handle: FileHandle
    package let limit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var lineNumber = 0
    private var finished = false
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    package init(handle: FileHandle, limit: Int) {
        self.handle = handle
        self.limit = limit
    }

    /// A line longer than the reader's limit: where it is, so the caller can tell whether an
    /// earlier line was already bad.
    package struct LineTooLong: Error {
        package let line: Int
        package let limit: Int
        package var message: String { "longer than \(limit) bytes" }
    }

    /// The next line (1-based number, bytes without the newline or a trailing `\r`), or nil at
    /// the end. A UTF-8 byte order mark before the first line is not part of it.
    ///
    /// - Throws: ``LineTooLong`` for a line longer than `limit` (the reader cannot go on past it).
    package mutating func next() throws -> (Int, [UInt8])? {
        var searchFrom = start
        while true {
            if lineNumber == 0, start == 0, buffer.count >= 3 || finished, buffer.starts(with: Self.byteOrderMark) {
                start = Self.byteOrderMark.count
                searchFrom = max(searchFrom, start)
            }
            if let newline = buffer[searchFrom...].firstIndex(of: 0x0A) {
                lineNumber += 1
                var end = newline
                if end > start, buffer[end - 1] == 0x0D { end -= 1 }
                guard end - start <= limit else { throw LineTooLong(line: lineNumber, limit: limit) }
                let line = Array(buffer[start..<end])
                start = newline + 1
                return (lineNumber, line)
            }
            // A read may end between a line's `\r` and its `\n`: the `\r` is not the line's.
            let pending = buffer.count - start - (buffer.last == 0x0D ? 1 : 0)
            guard pending <= limit else { throw LineTooLong(line: lineNumber + 1, limit: limit) }
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
