import Foundation

/// Random bytes for identifiers (request, attempt and trace ids, idempotency claims): the
/// kernel's generator, read a page at a time and handed out from there.
///
/// `SystemRandomNumberGenerator` makes one `getrandom` system call per eight bytes, and a
/// provisioning request drew seven such calls for its ids (`perf stat` on the benchmark). Here a
/// request's ids cost a lock and a copy, and the kernel is asked once per 4,096 bytes.
///
/// For identifiers only, which are not secrets: keys, nonces and one-time codes come from
/// OpenSSL's generator. Bytes handed out are zeroed in the pool. A child process made by `fork`
/// would share the pool's unread bytes; issuerd starts other programs only through
/// `posix_spawn`, where the child runs none of this code.
package enum IdentifierRandom {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var next = 4096
        var device: Int32 = -2  // not yet opened; -1: could not be
    }

    private static let pool = Lock(Pool())

    /// Fills `buffer` with random bytes.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard !buffer.isEmpty else { return }
        var filled = 0
        pool.withLock { pool in
            while filled < buffer.count {
                if pool.next == pool.bytes.count, !refill(&pool) { break }
                let count = min(buffer.count - filled, pool.bytes.count - pool.next)
                pool.bytes.withUnsafeMutableBytes { source in
                    let from = source.baseAddress! + pool.next
                    (buffer.baseAddress! + filled).copyMemory(from: from, byteCount: count)
                    from.initializeMemory(as: UInt8.self, repeating: 0, count: count)
                }
                pool.next += count
                filled += count
            }
        }
        // No readable /dev/urandom (a chroot without /dev): the system generator, as before.
        if filled < buffer.count {
            var generator = SystemRandomNumberGenerator()
            for index in filled..<buffer.count { buffer[index] = generator.next() }
        }
    }

    /// Reads a new page from `/dev/urandom`; false when it cannot be read.
    private static func refill(_ pool: inout Pool) -> Bool {
        if pool.device == -2 { pool.device = open("/dev/urandom", O_RDONLY | O_CLOEXEC) }
        guard pool.device >= 0 else { return false }
        var read = 0
        while read < pool.bytes.count {
            let count = pool.bytes.withUnsafeMutableBytes { bytes in
                Foundation.read(pool.device, bytes.baseAddress! + read, bytes.count - read)
            }
            if count > 0 {
                read += count
            } else if count < 0, errno == EINTR {
                continue
            } else {
                return false
            }
        }
        pool.next = 0
        return true
    }
}
