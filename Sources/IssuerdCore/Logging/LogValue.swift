/// A value attached to a log line.
///
/// There is deliberately no way to put an arbitrary `CustomStringConvertible` into a log line:
/// values enter through ``LogValueConvertible``, so a PAN or a secret is masked by its type,
/// not by the discipline of whoever writes the log call.
public enum LogValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case array([LogValue])

    /// Builds a log value from anything that knows how to show itself safely.
    public init(_ value: some LogValueConvertible) { self = value.logValue }
}

extension LogValue: ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension LogValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .int(value) }
}

extension LogValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension LogValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

/// A type that can appear in log metadata. Secret-bearing types conform by masking themselves.
public protocol LogValueConvertible {
    /// The form of this value that may be written to a log.
    var logValue: LogValue { get }
}

extension String: LogValueConvertible { public var logValue: LogValue { .string(self) } }
extension Substring: LogValueConvertible { public var logValue: LogValue { .string(String(self)) } }
extension Int: LogValueConvertible { public var logValue: LogValue { .int(self) } }
extension Int32: LogValueConvertible { public var logValue: LogValue { .int(Int(self)) } }
extension Int64: LogValueConvertible { public var logValue: LogValue { .int(Int(self)) } }
extension UInt16: LogValueConvertible { public var logValue: LogValue { .int(Int(self)) } }
extension Double: LogValueConvertible { public var logValue: LogValue { .double(self) } }
extension Bool: LogValueConvertible { public var logValue: LogValue { .bool(self) } }

/// Metadata of one log line: keys are snake_case or camelCase field names.
public typealias LogMetadata = [String: LogValue]
