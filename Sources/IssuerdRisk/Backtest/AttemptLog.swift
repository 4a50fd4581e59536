import Foundation

/// Stored history in JSON Lines, one event per line, as `rules backtest` reads it and as the
/// PostgreSQL export writes it (docs/rules.md, "Backtest input").
///
/// ```
/// {"type":"attempt","id":"att_1","time":"2025-03-01T12:00:00Z","card_id":"c1","device_id":"d1",
///  "customer_id":"u1","cardholder_name":"JANE DOE","attributes":{"card.status":"active","wallet.device_score":4}}
/// {"type":"otp_failure","time":"2025-03-01T12:01:00Z","card_id":"c1","customer_id":"u1"}
/// ```
/// Attribute keys are the rule language's names; durations are seconds; null or absent is unknown.
/// An attempt with `"replay": false` is history only: it counts for the velocity of later
/// attempts but is not replayed (the PostgreSQL export writes the attempts before `--since`
/// that way, so velocity at the start of the window is right).
public struct AttemptLog: Sendable {
    /// One add-card attempt to replay.
    public struct Attempt: Sendable {
        /// The attempt id (from the export), for the sample of changed attempts.
        public var id: String
        /// The decision time.
        public var time: Date
        /// Whose history velocity reads.
        public var subject: VelocitySubject
        /// The attributes at decision time.
        public var input: RiskInput
        /// The 1-based line in the file (the row's position for attempts read from PostgreSQL).
        public var line: Int
        /// What the live path checked beside the rules (``RequestChecks``).
        public var checks: RequestChecks

        /// An attempt.
        public init(
            id: String, time: Date, subject: VelocitySubject, input: RiskInput, line: Int,
            checks: RequestChecks = .none
        ) {
            self.id = id
            self.time = time
            self.subject = subject
            self.input = input
            self.line = line
            self.checks = checks
        }
    }

    /// The attempts, in time order.
    public private(set) var attempts: [Attempt] = []
    /// Every history event, attempts included.
    public private(set) var events: [VelocityEvent] = []

    /// The longest line accepted.
    public static let maximumLineBytes = 1 << 20

    /// Parses JSONL text.
    ///
    /// - Throws: ``AttemptLogError`` naming the line and the problem.
    public init(jsonLines text: String) throws(AttemptLogError) {
        var lineNumber = 0
        let clock = TimestampParser()
        let decoder = JSONDecoder()
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty { continue }
            try add(line: line, number: lineNumber, clock: clock, decoder: decoder)
        }
        attempts.sort { ($0.time, $0.line) < ($1.time, $1.line) }
    }

    private mutating func add(
        line: Substring, number: Int, clock: TimestampParser, decoder: JSONDecoder
    ) throws(AttemptLogError) {
        func fail(_ message: String) -> AttemptLogError { AttemptLogError(line: number, message: message) }
        guard line.utf8.count <= Self.maximumLineBytes else { throw fail("line longer than 1 MiB") }
        guard let object = (try? decoder.decode(StoredJSON.self, from: Data(line.utf8)))?.object else {
            throw fail("not a JSON object")
        }
        guard let typeName = object["type"]?.string, let kind = VelocityEvent.Kind(rawValue: typeName) else {
            throw fail(
                "\"type\" must be one of \(VelocityEvent.Kind.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))"
            )
        }
        guard let timeText = object["time"]?.string, let time = clock.parse(timeText) else {
            throw fail("\"time\" must be an RFC 3339 timestamp such as 2025-03-01T12:00:00Z")
        }
        let subject = VelocitySubject(
            cardID: object["card_id"]?.string, deviceID: object["device_id"]?.string,
            customerID: object["customer_id"]?.string)
        events.append(
            VelocityEvent(
                kind: kind, time: time, cardID: subject.cardID, deviceID: subject.deviceID,
                customerID: subject.customerID, cardholderName: object["cardholder_name"]?.string))
        guard kind == .attempt else { return }
        if let replay = object["replay"] {
            guard let flag = replay.bool else { throw fail("\"replay\" must be true or false") }
            if !flag { return }
        }
        var input = RiskInput()
        input.time = time
        if let attributes = object["attributes"] {
            guard let attributes = attributes.object else { throw fail("\"attributes\" must be an object") }
            for (name, raw) in attributes.sorted(by: { $0.key < $1.key }) {
                if let problem = Self.assign(name, raw, to: &input) { throw fail(problem) }
            }
        }
        var checks = RequestChecks.none
        switch object["checks"] {
        case nil, .null?: break
        case let stored?:
            guard let parsed = RequestChecks(json: stored) else {
                throw fail("\"checks\" must be an object of the members in docs/rules.md (\"Backtest input\")")
            }
            checks = parsed
        }
        let id = object["id"]?.string ?? "line \(number)"
        attempts.append(Attempt(id: id, time: time, subject: subject, input: input, line: number, checks: checks))
    }

    /// Sets attribute `name` of `input` from its JSON value; returns what is wrong, or nil.
    fileprivate static func assign(_ name: String, _ raw: StoredJSON, to input: inout RiskInput) -> String? {
        guard let attribute = AttributeCatalog.byName[name] else {
            let near = Suggestion.nearest(to: name, in: AttributeCatalog.all.map(\.name))
            return "unknown attribute \"\(name)\"" + (near.map { "; did you mean '\($0)'?" } ?? "")
        }
        guard let value = Self.value(raw, for: attribute.type), attribute.assign(value, to: &input) else {
            return "\"\(name)\" must be a \(attribute.type)\(attribute.type == .duration ? " in seconds" : "")"
        }
        return nil
    }

    /// The input of a stored attempt from its `inputs` JSON text: the attribute object (or its
    /// `attributes` member), keys that are not attribute names ignored, as the PostgreSQL export
    /// writes `attributes` and this parser reads it.
    ///
    /// - Returns: The input, or what is wrong with a value.
    public static func input(storedInputs text: String, time: Date) -> Result<RiskInput, AttemptLogError> {
        var text = text
        var reader = StoredInputReader()
        return text.withUTF8 { reader.input(storedInputs: $0, time: time) }
    }

    /// Reads the `inputs` of stored attempts one after another, as ``AttemptLog/input(storedInputs:time:)``
    /// does, from their UTF-8 bytes (a backtest's read parses them where libpq holds them, with
    /// no `String` per document) into one buffer of members reused for each.
    public struct StoredInputReader {
        private var found: [StoredJSON?] = []
        /// The `checks` member of the last document read (``RequestChecks``), nil when it has none.
        public private(set) var checks: RequestChecks?

        public init() {}

        /// The input of one stored attempt; see ``AttemptLog/input(storedInputs:time:)``. Its
        /// `checks` member, when it has one, is left in ``checks``.
        public mutating func input(
            storedInputs bytes: UnsafeBufferPointer<UInt8>, time: Date
        ) -> Result<RiskInput, AttemptLogError> {
            var input = RiskInput()
            input.time = time
            checks = nil
            // The fast path: a flat attribute object whose values all fit, assigned straight
            // from the members found (no dictionary of names in between, which was half of a
            // backtest row's parse). Anything else (a nested `attributes`, a bad value to name)
            // takes the general path below.
            let flat = StoredJSON.members(of: bytes, keys: AttemptLog.storedKeys, into: &found)
            if flat, let stored = found[found.count - 1] {
                guard let parsed = RequestChecks(json: stored) else { return .failure(Self.badChecks) }
                checks = parsed
            }
            if flat, found[0] == nil, assignFound(to: &input) { return .success(input) }
            input = RiskInput()
            input.time = time
            let attributes: [String: StoredJSON]
            if flat {
                attributes = storedAttributes()
            } else {
                guard let stored = StoredJSON.parse(bytes: bytes) else {
                    return .failure(AttemptLogError(line: 0, message: "inputs are not JSON"))
                }
                if let member = stored.object?["checks"] {
                    guard let parsed = RequestChecks(json: member) else { return .failure(Self.badChecks) }
                    checks = parsed
                }
                if case .object(let nested)? = stored.object?["attributes"] {
                    attributes = nested
                } else {
                    attributes = stored.object ?? [:]
                }
            }
            for (name, raw) in attributes where AttributeCatalog.byName[name] != nil {
                guard AttemptLog.assign(name, raw, to: &input) != nil else { continue }
                // Name the first bad attribute in name order, as a JSONL line does.
                var scratch = RiskInput()
                for (name, raw) in attributes.sorted(by: { $0.key < $1.key }) where AttributeCatalog.byName[name] != nil
                {
                    if let problem = AttemptLog.assign(name, raw, to: &scratch) {
                        return .failure(AttemptLogError(line: 0, message: problem))
                    }
                }
            }
            return .success(input)
        }

        private static let badChecks = AttemptLogError(
            line: 0, message: "\"checks\" is not an object of the members in docs/rules.md")

        /// Assigns every attribute found; false, with `input` partly set, at the first value that does not fit.
        private func assignFound(to input: inout RiskInput) -> Bool {
            for index in 1...AttributeCatalog.all.count {
                guard let raw = found[index] else { continue }
                let attribute = AttributeCatalog.all[index - 1]
                guard let value = AttemptLog.value(raw, for: attribute.type), attribute.assign(value, to: &input) else {
                    return false
                }
            }
            return true
        }

        /// The attribute members found (the `attributes` object's, or the document's own).
        private func storedAttributes() -> [String: StoredJSON] {
            if case .object(let nested)? = found[0] { return nested }
            var attributes: [String: StoredJSON] = [:]
            for (index, value) in found.enumerated().dropFirst().dropLast() {
                if let value { attributes[AttributeCatalog.all[index - 1].name] = value }
            }
            return attributes
        }
    }

    /// `attributes`, then every attribute name, then `checks`.
    fileprivate static let storedKeys = StoredJSON.KeySet(
        [Array("attributes".utf8)] + AttributeCatalog.all.map { Array($0.name.utf8) } + [Array("checks".utf8)])

    fileprivate static func value(_ raw: StoredJSON, for type: RiskType) -> RiskValue? {
        switch (raw, type) {
        case (.null, _): .unknown
        case (.bool(let flag), .bool): .bool(flag)
        case (.number(let number), .number): .number(number)
        case (.number(let seconds), .duration): .duration(seconds)
        case (.string(let text), .string), (.string(let text), .enumeration): .string(text)
        case (.array(let items), .stringSet):
            items.allSatisfy { $0.string != nil } ? .strings(items.compactMap(\.string)) : nil
        default: nil
        }
    }

}

/// A line of a JSONL history file that cannot be used.
public struct AttemptLogError: Error, Sendable, CustomStringConvertible {
    /// 1-based line number.
    public var line: Int
    /// What is wrong.
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

/// RFC 3339 timestamps, with or without fractional seconds; one per parse run (not shared
/// across threads: `ISO8601DateFormatter` is not Sendable).
struct TimestampParser {
    private let plain = ISO8601DateFormatter()
    private let fractional: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    func parse(_ text: String) -> Date? {
        Self.parseUTC(text) ?? plain.date(from: text) ?? fractional.date(from: text)
    }

    /// `YYYY-MM-DDTHH:MM:SS[.f{1,3}]Z`, what the PostgreSQL export writes, read without a
    /// formatter: ICU's parse was most of a backtest's time (two attempts a line). Anything
    /// else (offsets, more digits, an impossible date) is left to the formatters.
    static func parseUTC(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 20 || (22...24).contains(bytes.count), bytes[bytes.count - 1] == UInt8(ascii: "Z"),
                bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
                bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
            else { return nil }
            func number(_ range: Range<Int>) -> Int? {
                var value = 0
                for index in range {
                    let digit = Int(bytes[index]) - 48
                    guard (0...9).contains(digit) else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
                let hour = number(11..<13),
                let minute = number(14..<16), let second = number(17..<19),
                (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), (0...23).contains(hour),
                (0...59).contains(minute), (0...59).contains(second)
            else { return nil }
            var milliseconds = 0
            if bytes.count > 20 {
                guard bytes[19] == UInt8(ascii: "."), let fraction = number(20..<(bytes.count - 1)) else { return nil }
                milliseconds = fraction * [100, 10, 1][bytes.count - 22]
            }
            let seconds =
                daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second
            return Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1_000)
        }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
