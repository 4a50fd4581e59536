import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdRisk

/// `POST /v1/admin/rules/backtest`:
/// `{"rules": "<rule file text>" | {"<path>": "<text>", …}, "since", "until", "limit"?}`.
///
/// A string is the candidate's only rule file: every `*.rules` (and `*.cases`) file of the rules
/// directory is replaced by it, the lists stay. An object overlays the rules directory: each
/// path replaces or adds that file (`*.rules` or `*.list`), an empty text removes it, every
/// other file stays. Either way the candidate is compiled against the directory's lists.
struct RulesBacktestRequest: Decodable, Sendable {
    var rules: JSONValue
    var since: String
    var until: String
    var limit: Int?

    /// The most attempts one request may replay; a larger window must be narrowed.
    static let maximumAttempts = 100_000
    /// The most attempts a background job (`…/backtest/jobs`) may replay: a quarter at 100,000 a
    /// day and more (its memory does not grow with the window).
    static let maximumJobAttempts = 20_000_000
    /// The most files an overlay may name.
    static let maximumFiles = 200
    /// The longest path accepted in an overlay.
    static let maximumPathLength = 200

    /// The validated window and limit, at most `maximum` attempts.
    func window(maximum: Int = Self.maximumAttempts) throws -> (since: Date, until: Date, limit: Int) {
        try Self.window(since: since, until: until, limit: limit, maximum: maximum)
    }

    /// `since`, `until` and `limit` validated as a backtest takes them.
    static func window(
        since: String, until: String, limit: Int?, maximum: Int = Self.maximumAttempts
    ) throws -> (since: Date, until: Date, limit: Int) {
        guard let start = RFC3339.date(since) else {
            throw APIErrors.invalidRequest("'since' must be an RFC 3339 timestamp", field: "since")
        }
        guard let end = RFC3339.date(until) else {
            throw APIErrors.invalidRequest("'until' must be an RFC 3339 timestamp", field: "until")
        }
        guard start < end else { throw APIErrors.invalidRequest("'since' must be before 'until'", field: "since") }
        let limit = limit ?? maximum
        guard (1...maximum).contains(limit) else {
            throw APIErrors.invalidRequest("'limit' must be between 1 and \(maximum)", field: "limit")
        }
        return (start, end, limit)
    }

    /// The candidate's files, built over `current` (the rules directory's files).
    func candidateFiles(over current: [RulesetFile]) throws -> [RulesetFile] {
        switch rules {
        case .string(let text):
            guard !text.isEmpty else { throw APIErrors.invalidRequest("'rules' must not be empty", field: "rules") }
            let kept = current.filter { !$0.path.hasSuffix(".rules") && !$0.path.hasSuffix(".cases") }
            return kept + [RulesetFile(path: "candidate.rules", contents: text)]
        case .object(let overlay):
            guard !overlay.isEmpty, overlay.count <= Self.maximumFiles else {
                throw APIErrors.invalidRequest(
                    "'rules' must name between 1 and \(Self.maximumFiles) files", field: "rules")
            }
            var files = Dictionary(current.map { ($0.path, $0.contents) }, uniquingKeysWith: { first, _ in first })
            for (path, value) in overlay {
                guard Self.isAcceptablePath(path) else {
                    throw APIErrors.invalidRequest(
                        "'rules' paths must be relative, at most \(Self.maximumPathLength) characters, without '..', ending in .rules or .list",
                        field: "rules")
                }
                guard case .string(let text) = value else {
                    throw APIErrors.invalidRequest("'rules.\(path)' must be a string", field: "rules")
                }
                files[path] = text.isEmpty ? nil : text
            }
            return files.map { RulesetFile(path: $0.key, contents: $0.value) }
        default:
            throw APIErrors.invalidRequest(
                "'rules' must be the rule file text or an object of path to text", field: "rules")
        }
    }

    private static func isAcceptablePath(_ path: String) -> Bool {
        guard !path.isEmpty, path.count <= maximumPathLength, !path.hasPrefix("/"),
            path.hasSuffix(".rules") || path.hasSuffix(".list")
        else {
            return false
        }
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        return components.allSatisfy { !$0.isEmpty && $0 != ".." && $0 != "." && !$0.hasPrefix(".") }
            && path.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F && $0 != "\\" }
    }

}

/// `POST /v1/admin/rules/backtest/prepare`: `{"since", "until"}`, the period an analyst is about
/// to backtest (the console sends it when the Backtest page opens and when its period changes).
struct RulesBacktestPrepareRequest: Decodable, Sendable {
    var since: String
    var until: String
}
