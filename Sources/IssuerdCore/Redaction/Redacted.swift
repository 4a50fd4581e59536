/// Wraps a secret so that printing, interpolating, dumping or logging it shows `****`.
///
/// The wrapped value is reachable only through ``unsafeValue``, a name meant to stand out in
/// review wherever a secret leaves its wrapper.
public struct Redacted<Value: Sendable>: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, LogValueConvertible
{
    /// The secret itself. Read it only where it is used (a provider call, a crypto operation).
    public let unsafeValue: Value

    /// Wraps a secret.
    public init(_ value: Value) { self.unsafeValue = value }

    public var description: String { "****" }
    public var debugDescription: String { "****" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
    public var logValue: LogValue { .string("****") }
}

extension Redacted: Equatable where Value: Equatable {}
extension Redacted: Hashable where Value: Hashable {}
