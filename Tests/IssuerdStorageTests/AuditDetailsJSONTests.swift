import Foundation
import IssuerdStorage
import Testing

/// An audit entry's details are stored as the text its hash covers: a JSON object with sorted
/// keys, written by hand. It must be JSON that reads back as the details, and for the ids and
/// words details hold, the text `JSONEncoder` (sorted keys, slashes unescaped) wrote before.
@Suite("Audit details text")
struct AuditDetailsJSONTests {
    static func encoder(_ details: [String: String]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(details), as: UTF8.self)
    }

    @Test("Known details: the text JSONEncoder wrote, keys in order")
    func known() throws {
        let details = ["cardId": "c-1/2", "status": "active", "attemptId": "0f4e…", "reason": #"said "no" \ twice"#]
        #expect(
            AuditLog.canonicalJSON(details)
                == #"{"attemptId":"0f4e…","cardId":"c-1/2","reason":"said \"no\" \\ twice","status":"active"}"#)
        #expect(AuditLog.canonicalJSON(details) == (try Self.encoder(details)))
        #expect(AuditLog.canonicalJSON([:]) == "{}")
    }

    @Test("Generated details read back as themselves; without control characters they are JSONEncoder's text")
    func generated() throws {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["a", "Z", "09", "-", "/", "\"", "\\", "é", "한", "😀", " ", ".", "_"]
        let controls = ["\n", "\t", "\r", "\u{1}", "\u{1F}", "\u{8}", "\u{C}"]
        func text(_ from: [String]) -> String {
            (0..<Int.random(in: 0...6, using: &generator)).map { _ in from.randomElement(using: &generator)! }.joined()
        }
        for round in 0..<500 {
            let withControls = round % 2 == 1
            var details: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                let key =
                    ["cardId", "status", "attemptId", "reason", "key", "count", "by"].randomElement(using: &generator)!
                    + text(["a", "b", "1"])
                details[key] = text(withControls ? pieces + controls : pieces)
            }
            let written = AuditLog.canonicalJSON(details)
            let read = try JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: String]
            #expect(read == details, "\(written)")
            if !withControls { #expect(written == (try Self.encoder(details)), "\(written)") }
        }
    }
}
