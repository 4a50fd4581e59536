import Foundation

extension String {
    /// Calls `body` with the string's UTF-8 as one buffer: in place for native strings, through
    /// a copy for the rare bridged one. Scanning a buffer is several times cheaper than walking
    /// `utf8` generically, which profiling showed on the per-request paths that call this.
    public func withUTF8Buffer<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }

    /// Whether the string's UTF-8 holds the bytes of `needle` anywhere (false for an empty
    /// needle): `memchr` for its first byte, `memcmp` for the rest (glibc's `memmem` is not
    /// imported).
    public func containsUTF8(_ needle: [UInt8]) -> Bool {
        withUTF8Buffer { bytes in
            guard let base = bytes.baseAddress, let first = needle.first, needle.count <= bytes.count else {
                return false
            }
            return needle.withUnsafeBufferPointer { needle in
                var offset = 0
                while offset + needle.count <= bytes.count,
                    let hit = memchr(base + offset, Int32(first), bytes.count - needle.count - offset + 1)
                {
                    offset = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(base + offset, needle.baseAddress!, needle.count) == 0 { return true }
                    offset += 1
                }
                return false
            }
        }
    }
}
