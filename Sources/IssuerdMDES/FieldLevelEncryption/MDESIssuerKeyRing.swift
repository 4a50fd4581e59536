/// The issuer keys that open inbound payloads, several at once while Mastercard rotates them,
/// each found by any of its fingerprints, in either case.
public struct MDESIssuerKeyRing: Sendable {
    /// The keys, in configuration order.
    public let keys: [MDESIssuerKey]
    private let byFingerprint: [String: MDESIssuerKey]

    /// A ring of `keys`.
    ///
    /// - Throws: ``MDESKeyError`` for an empty list or two entries of the same key (one
    ///   fingerprint would name both).
    public init(_ keys: [MDESIssuerKey]) throws {
        guard !keys.isEmpty else { throw MDESKeyError("no MDES issuer key") }
        var index: [String: MDESIssuerKey] = [:]
        for key in keys {
            for fingerprint in key.fingerprints {
                guard index.updateValue(key, forKey: fingerprint) == nil else {
                    throw MDESKeyError("two MDES issuer keys share the fingerprint \(fingerprint)")
                }
            }
        }
        self.keys = keys
        self.byFingerprint = index
    }

    /// The key named by `fingerprint` (hex, either case), or nil.
    public func key(fingerprint: String) -> MDESIssuerKey? {
        byFingerprint[fingerprint.lowercased()]
    }
}
