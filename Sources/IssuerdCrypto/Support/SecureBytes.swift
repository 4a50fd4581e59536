import COpenSSL

/// Secret bytes that are wiped with `OPENSSL_cleanse` when the last copy goes away, compare in
/// constant time, and never print.
public struct SecureBytes: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable
{
    /// Owns the heap buffer so that wiping happens exactly once, when the last value is released.
    final class Storage: @unchecked Sendable {  // immutable after init: the buffer is only read
        let buffer: UnsafeMutableRawBufferPointer
        /// The locked arena the buffer is a slice of (kept alive by this reference), or nil
        /// when the buffer is this storage's own heap allocation.
        private let arena: LockedKeyArena?

        init(count: Int) {
            buffer = .allocate(byteCount: max(count, 1), alignment: 16)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            arena = nil
        }

        init(slice: UnsafeMutableRawBufferPointer, of arena: LockedKeyArena) {
            buffer = slice
            self.arena = arena
        }

        deinit {
            OPENSSL_cleanse(buffer.baseAddress, buffer.count)
            if arena == nil { buffer.deallocate() }
        }
    }

    let storage: Storage
    /// The number of secret bytes.
    public let count: Int

    /// Copies `bytes` into wiped-on-release storage.
    ///
    /// - Parameter bytes: The secret; the caller should drop its own copy promptly.
    public init(_ bytes: some Collection<UInt8>) {
        count = bytes.count
        storage = Storage(count: count)
        UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<count]).copyBytes(from: bytes)
    }

    /// Allocates `count` zero bytes and lets `body` fill them, e.g. straight from OpenSSL.
    init(count: Int, filling body: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        self.count = count
        storage = Storage(count: count)
        try body(UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<count]))
    }

    init(storage: Storage, count: Int) {
        self.storage = storage
        self.count = count
    }

    /// Lends the secret bytes for the duration of `body`; do not let the pointer escape.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<count]))
    }

    /// Constant-time comparison (`CRYPTO_memcmp`); lengths are not secret.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in constantTimeEquals(a, b) } }
    }

    public var description: String { "SecureBytes(\(count) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": count]) }
}

/// Compares two byte sequences in time independent of their contents (`CRYPTO_memcmp`).
///
/// - Returns: `false` at once when the lengths differ (lengths are public: MACs, digests).
public func constantTimeEquals(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
    guard lhs.count == rhs.count else { return false }
    guard lhs.count > 0 else { return true }
    return CRYPTO_memcmp(lhs.baseAddress, rhs.baseAddress, lhs.count) == 0
}

/// Compares two byte arrays in time independent of their contents (`CRYPTO_memcmp`).
public func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in constantTimeEquals(a, b) } }
}
