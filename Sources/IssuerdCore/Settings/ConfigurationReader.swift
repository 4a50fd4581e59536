import Foundation

/// A setting that is missing or malformed; `description` is the one line printed at start-up.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// The environment variable at fault, e.g. `ISSUERD_MASTER_KEY`.
    public var key: String
    /// What is wrong with it, never the value itself (it may be a secret).
    public var problem: String

    /// Creates the value from every stored property.
    package init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { "\(key): \(problem)" }
}

/// Reads typed settings from environment-style key/value pairs.
///
/// Values come from the process environment, optionally layered over a `--config FILE` of
/// `KEY=VALUE` lines (the environment wins, so an operator can override one key at launch).
public struct ConfigurationReader: Sendable {
    let values: [String: String]

    /// Creates a reader over explicit values (tests) or the process environment.
    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    /// Layers the environment over a configuration file of `KEY=VALUE` lines, and reads each
    /// secret given as a file (``resolvingSecretFiles()``).
    ///
    /// Blank lines and lines starting with `#` are ignored; values may be wrapped in double quotes.
    /// - Throws: ``ConfigurationError`` naming the file and line of a malformed entry, or a
    ///   secret file that cannot be used.
    public static func layered(
        file path: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws
        -> ConfigurationReader
    {
        guard let path else { return try ConfigurationReader(environment).resolvingSecretFiles() }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError(key: "--config", problem: "cannot read \(path)")
        }
        var merged: [String: String] = [:]
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "="), equals != line.startIndex else {
                throw ConfigurationError(key: "--config", problem: "\(path):\(number + 1): expected KEY=VALUE")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            merged[key] = value
        }
        merged.merge(environment) { _, environment in environment }
        return try ConfigurationReader(merged).resolvingSecretFiles()
    }

    /// The raw value, with empty strings treated as unset.
    public func string(_ key: String) -> String? {
        guard let value = values[key], !value.isEmpty else { return nil }
        return value
    }

    /// A required value.
    public func required(_ key: String, hint: String) throws -> String {
        guard let value = string(key) else { throw ConfigurationError(key: key, problem: "is required (\(hint))") }
        return value
    }

    /// An integer within `range`, or `defaultValue` when unset.
    public func integer(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = string(key) else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(
                key: key, problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A boolean written `true`/`false`, `1`/`0`, `yes`/`no` or `on`/`off`.
    public func boolean(_ key: String, default defaultValue: Bool) throws -> Bool {
        guard let text = string(key)?.lowercased() else { return defaultValue }
        switch text {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw ConfigurationError(key: key, problem: "must be true or false")
        }
    }

    /// A duration written as a number with a unit: `500ms`, `30s`, `10m`, `24h`, `14d`.
    public func duration(
        _ key: String, default defaultValue: Duration, in range: ClosedRange<Duration>
    ) throws -> Duration {
        guard let text = string(key) else { return defaultValue }
        guard let value = Self.parseDuration(text), range.contains(value) else {
            throw ConfigurationError(
                key: key,
                problem:
                    "must be a duration such as 30s, 10m or 24h, between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }

    /// PEM text given inline, or read from the path given; nil when unset.
    ///
    /// - Throws: ``ConfigurationError`` when the value is neither PEM nor a readable PEM file.
    public func pem(_ key: String) throws -> String? {
        guard let value = string(key) else { return nil }
        if value.contains("-----BEGIN") { return value }
        guard let text = try? String(contentsOfFile: value, encoding: .utf8), text.contains("-----BEGIN") else {
            throw ConfigurationError(key: key, problem: "must be PEM text or the path of a readable PEM file")
        }
        return text
    }

    /// One of a closed set of words.
    public func choice(_ key: String, default defaultValue: String, from choices: [String]) throws -> String {
        guard let text = string(key) else { return defaultValue }
        guard choices.contains(text) else {
            throw ConfigurationError(key: key, problem: "must be one of \(choices.joined(separator: ", "))")
        }
        return text
    }

    /// Standard base64 that decodes to exactly `byteCount` bytes.
    public func base64Key(_ key: String, byteCount: Int) throws -> [UInt8]? {
        guard let text = string(key) else { return nil }
        return try Self.decodeKey(text, key: key, byteCount: byteCount)
    }

    package static func decodeKey(_ text: String, key: String, byteCount: Int) throws -> [UInt8] {
        guard let data = Data(base64Encoded: text) else {
            throw ConfigurationError(
                key: key, problem: "must be standard base64 (try: openssl rand -base64 \(byteCount))")
        }
        guard data.count == byteCount else {
            throw ConfigurationError(key: key, problem: "must decode to \(byteCount) bytes, not \(data.count)")
        }
        return Array(data)
    }

    /// Parses `500ms`, `30s`, `10m`, `24h`, `14d`.
    public static func parseDuration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, seconds) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            if suffix == "s", number.hasSuffix("m") { continue }
            guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
            return .milliseconds(Int64((value * seconds * 1000).rounded()))
        }
        return nil
    }
}

extension ConfigurationReader {
    package static func httpURL(_ text: String, key: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host != nil
        else {
            throw ConfigurationError(key: key, problem: "must be an http:// or https:// URL")
        }
        return url
    }
}
