import Foundation
import IssuerdCore
import IssuerdHTTP

/// What `GET /v1/admin/attempts` lists: its query parameters, every one checked. A parameter
/// the route does not know, or a value it cannot read, is a 400 naming it: never ignored, so
/// a mistyped filter cannot pass for an empty one.
package struct AttemptFilter: Sendable, Equatable {
    /// Every parameter the route reads.
    package static let parameters = [
        "q", "flow", "rule", "decidedBy", "channel", "since", "until", "customerId", "deviceId", "cursor", "limit",
        "format",
    ]
    package static let flows = ["green", "yellow", "orange"]
    package static let formats = ["json", "csv"]

    /// `q`, trimmed: an attempt id, a card's last four digits, or a card, customer or device id.
    package var text = ""
    package var flow: String?
    /// A rule that hit the attempt (live or shadow).
    package var rule: String?
    /// A rule that decided the attempt (it hit live, with the attempt's flow as its outcome).
    package var decidedBy: String?
    package var channel: String?
    package var since: Date?
    package var until: Date?
    package var customerID: String?
    package var deviceID: String?
    /// Where the previous page ended.
    package var cursor: AttemptCursor?
    /// Attempts per JSON page, 1 to 200; nil for the default (50), or for the CSV (all of them).
    package var limit: Int?
    package var csv = false

    package init() {}

    /// Reads and checks the query.
    ///
    /// - Throws: 400 `invalid_request` naming the first parameter that is unknown or wrong.
    package init(query: [String: String]) throws {
        for name in query.keys.sorted() where !Self.parameters.contains(name) {
            throw APIErrors.invalidRequest(
                "unknown parameter '\(Self.printable(name))'; the list reads \(Self.parameters.joined(separator: ", "))",
                field: Self.printable(name))
        }
        text = try Self.searchText(query["q"])
        flow = try Self.choice(query["flow"], field: "flow", from: Self.flows)
        rule = try Self.ruleID(query["rule"], field: "rule")
        decidedBy = try Self.ruleID(query["decidedBy"], field: "decidedBy")
        channel = try Self.choice(query["channel"], field: "channel", from: ConsoleQueries.channels)
        since = try Self.date(query["since"], field: "since")
        until = try Self.date(query["until"], field: "until")
        if let since, let until, since >= until {
            throw APIErrors.invalidRequest("'since' must be before 'until'", field: "since")
        }
        customerID = try Self.identifier(query["customerId"], field: "customerId")
        deviceID = try Self.identifier(query["deviceId"], field: "deviceId")
        csv = try Self.choice(query["format"], field: "format", from: Self.formats) == "csv"
        if let text = query["cursor"] {
            guard let cursor = AttemptCursor(text) else {
                throw APIErrors.invalidRequest("'cursor' must be a nextCursor this list gave", field: "cursor")
            }
            self.cursor = cursor
        }
        if let text = query["limit"] {
            guard !csv else {
                throw APIErrors.invalidRequest("'limit' sets a JSON page; the CSV holds every attempt", field: "limit")
            }
            guard let limit = Int(text), (1...200).contains(limit) else {
                throw APIErrors.invalidRequest("'limit' must be between 1 and 200", field: "limit")
            }
            self.limit = limit
        }
    }

    /// The filters as query parameters (no cursor, limit or format): what a page links to.
    package var query: [String: String] {
        var query: [String: String] = [:]
        if !text.isEmpty { query["q"] = text }
        query["flow"] = flow
        query["rule"] = rule
        query["decidedBy"] = decidedBy
        query["channel"] = channel
        query["since"] = since.map(RFC3339.string)
        query["until"] = until.map(RFC3339.string)
        query["customerId"] = customerID
        query["deviceId"] = deviceID
        return query
    }

    private static func searchText(_ value: String?) throws -> String {
        var text = value ?? ""
        while let first = text.first, first == " " { text.removeFirst() }
        while let last = text.last, last == " " { text.removeLast() }
        guard text.utf8.count <= 64, text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw APIErrors.invalidRequest("'q' must be at most 64 printable characters", field: "q")
        }
        // A full card number is refused, never searched (no PAN column exists) nor echoed:
        // 12 or more digits with nothing else but separators (spaces, dashes, dots…) between.
        if CardNumberText.contains(text) {
            throw APIErrors.invalidRequest("search by a card's last four digits, never its full number", field: "q")
        }
        return text
    }

    private static func choice(_ value: String?, field: String, from choices: [String]) throws -> String? {
        guard let value else { return nil }
        guard choices.contains(value) else {
            throw APIErrors.invalidRequest("'\(field)' must be one of \(choices.joined(separator: ", "))", field: field)
        }
        return value
    }

    /// A rule id as rule files spell them: letters, digits, `.`, `_`, `-`, at most 128.
    private static func ruleID(_ value: String?, field: String) throws -> String? {
        guard let value else { return nil }
        guard (1...128).contains(value.utf8.count),
            value.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else {
            throw APIErrors.invalidRequest(
                "'\(field)' must be a rule id: letters, digits, '.', '_' or '-', at most 128", field: field)
        }
        return value
    }

    private static func identifier(_ value: String?, field: String) throws -> String? {
        guard let value else { return nil }
        guard (1...128).contains(value.utf8.count),
            value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F })
        else {
            throw APIErrors.invalidRequest("'\(field)' must be 1 to 128 printable characters, no spaces", field: field)
        }
        return value
    }

    private static func date(_ value: String?, field: String) throws -> Date? {
        guard let value else { return nil }
        guard let date = RFC3339.date(value) else {
            throw APIErrors.invalidRequest("'\(field)' must be an RFC 3339 timestamp", field: field)
        }
        return date
    }

    /// A parameter name fit to echo: at most 40 characters, no card number.
    private static func printable(_ name: String) -> String {
        let short = String(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(40))
        return CardNumberText.contains(short) ? "[card number removed]" : short
    }
}

/// Where a page of the attempts list ended: the last attempt's time (in microseconds, as
/// PostgreSQL keeps it) and id, written as one opaque URL-safe token.
package struct AttemptCursor: Sendable, Equatable {
    package var microseconds: Int64
    package var attemptID: UUID

    package init(microseconds: Int64, attemptID: UUID) {
        self.microseconds = microseconds
        self.attemptID = attemptID
    }

    /// Reads a token; nil for anything this type did not write.
    package init?(_ token: String) {
        guard token.utf8.count <= 80 else { return nil }
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8) else { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let microseconds = Int64(parts[0]), parts[1].utf8.count == 36,
            let id = UUID(uuidString: String(parts[1]))
        else { return nil }
        self.init(microseconds: microseconds, attemptID: id)
    }

    /// The token.
    package var token: String {
        Data("\(microseconds)/\(attemptID.lowercasedString)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
