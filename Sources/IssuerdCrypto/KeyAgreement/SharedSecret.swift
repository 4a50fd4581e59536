/// An ECDH shared secret Z. It has no public accessor for its bytes: it becomes a key only
/// through a KDF (``ConcatenationKDF``), is wiped on release and never prints.
public struct SharedSecret: Sendable, CustomStringConvertible, CustomReflectable {
    let bytes: SecureBytes

    /// The secret's bytes for known-answer tests only (import with `@_spi(Testing)`).
    @_spi(Testing) public var unsafeBytesForTesting: [UInt8] { bytes.withUnsafeBytes { Array($0) } }

    public var description: String { "SharedSecret(****)" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
