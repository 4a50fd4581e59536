import Foundation

/// A text e-mail in UTF-8, as submitted: RFC 5322 headers (the subject as RFC 2047 encoded
/// words when it is not plain ASCII), MIME 1.0, a base64 body.
///
/// The body is base64 so that no line is too long for a relay and no line starts with a dot,
/// whatever the text; mail readers decode it transparently.
package struct MailMessage: Sendable {
    package var from: String
    package var to: String
    package var subject: String
    package var body: String
    /// `<…>` included.
    package var messageID: String
    package var date: Date

    /// Creates the value from every stored property.
    package init(from: String, to: String, subject: String, body: String, messageID: String, date: Date) {
        self.from = from
        self.to = to
        self.subject = subject
        self.body = body
        self.messageID = messageID
        self.date = date
    }

    /// A Message-ID derived from a stable key (the outbox message's), so every retry of one
    /// message carries the same id and a relay or reader can drop a duplicate: `<key@domain>`
    /// with anything outside `[A-Za-z0-9.-]` in the key written as `_`.
    package static func messageID(key: String, domain: String) -> String {
        let local = String(
            key.unicodeScalars.prefix(128).map { scalar -> Character in
                let value = scalar.value
                let plain =
                    (0x30...0x39).contains(value) || (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value)
                    || value == 0x2E || value == 0x2D
                return plain ? Character(scalar) : "_"
            })
        return "<issuerd.\(local)@\(domain)>"
    }

    /// The message as sent, lines ending in CRLF.
    package var bytes: [UInt8] {
        var lines = [
            "From: \(from)", "To: \(to)", "Subject: \(Self.encodedHeader(subject))",
            "Date: \(Self.rfc5322Date(date))", "Message-ID: \(messageID)", "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=UTF-8", "Content-Transfer-Encoding: base64", "",
        ]
        let encoded = Data(body.replacingOccurrences(of: "\n", with: "\r\n").utf8).base64EncodedString()
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[index..<end]))
            index = end
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
    }

    /// The header value as is when it is printable ASCII, otherwise RFC 2047 `=?UTF-8?B?…?=`
    /// words of at most 75 characters each (split between characters, never inside one),
    /// folded onto continuation lines.
    package static func encodedHeader(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) && text.utf8.count <= 900 { return text }
        // 75 - len("=?UTF-8?B?") - len("?=") = 63 characters of base64: 45 bytes of UTF-8 at most.
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text where character != "\r" && character != "\n" {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 45, !chunk.isEmpty {
                words.append("=?UTF-8?B?\(Data(chunk).base64EncodedString())?=")
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty { words.append("=?UTF-8?B?\(Data(chunk).base64EncodedString())?=") }
        return words.joined(separator: "\r\n ")
    }

    /// `Sun, 06 Dec 2026 15:14:56 +0000`.
    package static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
