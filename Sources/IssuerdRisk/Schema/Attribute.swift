import Foundation

/// One attribute rules may read: its dotted name, type, meaning, where it comes from, and how
/// to read and write it in a ``RiskInput``.
///
/// A class: the schema's attributes are made once and read for every request, and a copy of a
/// struct of four strings and two closures retained each of them (37 copies a request).
public final class Attribute: Sendable {
    /// The dotted name rules use, e.g. `wallet.device_score`.
    public let name: String
    /// The attribute's type.
    public let type: RiskType
    /// What it means, for docs and `rules check`.
    public let summary: String
    /// Which system supplies it.
    public let source: String
    let access: Access
    let write: @Sendable (inout RiskInput, RiskValue) -> Bool

    init(
        name: String, type: RiskType, summary: String, source: String, access: Access,
        write: @escaping @Sendable (inout RiskInput, RiskValue) -> Bool
    ) {
        self.name = name
        self.type = type
        self.summary = summary
        self.source = source
        self.access = access
        self.write = write
    }

    /// Reads an attribute from the input without dictionary look-ups: one closure per type,
    /// already in the compiled form's signature so a rule calls it directly.
    enum Access: Sendable {
        case bool(Reader<Bool>)
        case number(Reader<Double>)
        case string(Reader<String>)
        case duration(Reader<Double>)
        case enumeration(Reader<UInt8>)
        case stringSet(Reader<[String]>)
    }

    /// Reads the attribute as a ``RiskValue`` (for explanations, not for the hot path).
    public func value(in input: RiskInput) -> RiskValue {
        switch access {
        case .bool(let read): read(input, []).map(RiskValue.bool) ?? .unknown
        case .number(let read): read(input, []).map(RiskValue.number) ?? .unknown
        case .string(let read): read(input, []).map(RiskValue.string) ?? .unknown
        case .duration(let read): read(input, []).map(RiskValue.duration) ?? .unknown
        case .enumeration(let read):
            if case .enumeration(let domain) = type, let code = read(input, []) {
                .string(domain.names[Int(code)])
            } else {
                .unknown
            }
        case .stringSet(let read): read(input, []).map(RiskValue.strings) ?? .unknown
        }
    }

    /// Stores `value` into `input`.
    ///
    /// - Returns: False when the value does not fit the attribute's type (or domain).
    public func assign(_ value: RiskValue, to input: inout RiskInput) -> Bool { write(&input, value) }
}

extension Attribute {
    static func bool(
        _ name: String, _ read: @escaping Reader<Bool>, _ key: WritableKeyPath<RiskInput, Bool?> & Sendable,
        _ summary: String, source: String
    ) -> Attribute {
        Attribute(name: name, type: .bool, summary: summary, source: source, access: .bool(read)) { input, value in
            switch value {
            case .bool(let flag): input[keyPath: key] = flag
            case .unknown: input[keyPath: key] = nil
            default: return false
            }
            return true
        }
    }

    static func number(
        _ name: String, _ read: @escaping Reader<Double>, _ key: WritableKeyPath<RiskInput, Double?> & Sendable,
        _ summary: String, source: String
    ) -> Attribute {
        Attribute(name: name, type: .number, summary: summary, source: source, access: .number(read)) { input, value in
            switch value {
            case .number(let number): input[keyPath: key] = number
            case .unknown: input[keyPath: key] = nil
            default: return false
            }
            return true
        }
    }

    static func duration(
        _ name: String, _ read: @escaping Reader<Double>, _ key: WritableKeyPath<RiskInput, Double?> & Sendable,
        _ summary: String, source: String
    ) -> Attribute {
        Attribute(name: name, type: .duration, summary: summary, source: source, access: .duration(read)) {
            input, value in
            switch value {
            case .duration(let seconds): input[keyPath: key] = seconds
            case .unknown: input[keyPath: key] = nil
            default: return false
            }
            return true
        }
    }

    static func string(
        _ name: String, _ read: @escaping Reader<String>, _ key: WritableKeyPath<RiskInput, String?> & Sendable,
        _ summary: String, source: String
    ) -> Attribute {
        Attribute(name: name, type: .string, summary: summary, source: source, access: .string(read)) { input, value in
            switch value {
            case .string(let text): input[keyPath: key] = text
            case .unknown: input[keyPath: key] = nil
            default: return false
            }
            return true
        }
    }

    static func strings(
        _ name: String, _ read: @escaping Reader<[String]>, _ key: WritableKeyPath<RiskInput, [String]?> & Sendable,
        _ summary: String, source: String
    ) -> Attribute {
        Attribute(name: name, type: .stringSet, summary: summary, source: source, access: .stringSet(read)) {
            input, value in
            switch value {
            case .strings(let texts): input[keyPath: key] = texts
            case .unknown: input[keyPath: key] = nil
            default: return false
            }
            return true
        }
    }

    static func enumeration<E: RiskEnumeration>(
        _ name: String, _ read: @escaping Reader<UInt8>, _ key: WritableKeyPath<RiskInput, E?> & Sendable,
        domain: String, _ summary: String, source: String
    ) -> Attribute {
        Attribute(
            name: name, type: .enumeration(EnumerationDomain(domain, E.self)), summary: summary, source: source,
            access: .enumeration(read)
        ) { input, value in
            switch value {
            case .string(let text):
                guard let item = E(name: text) else { return false }
                input[keyPath: key] = item
            case .unknown: input[keyPath: key] = nil
            default: return false
            }
            return true
        }
    }

    /// An enumerated value derived from other fields: it reads, but cannot be assigned directly.
    static func derivedEnumeration<E: RiskEnumeration>(
        _ name: String, _ read: @escaping Reader<UInt8>, _ type: E.Type, domain: String, _ summary: String,
        source: String
    ) -> Attribute {
        Attribute(
            name: name, type: .enumeration(EnumerationDomain(domain, E.self)), summary: summary, source: source,
            access: .enumeration(read)
        ) { _, _ in false }
    }

    /// A value derived from another field: it reads, but cannot be assigned directly.
    static func derived(
        _ name: String, _ read: @escaping Reader<Double>, _ summary: String, source: String
    ) -> Attribute {
        Attribute(name: name, type: .number, summary: summary, source: source, access: .number(read)) { _, _ in false }
    }
}
