/// A text as SMS segments in UCS-2 (`data_coding` 8): one segment of up to 70 characters, or
/// several of up to 67, each with a concatenation header (UDH `05 00 03 ref total n`,
/// `esm_class` 0x40), so Korean arrives as one message on the handset.
package enum SMSText {
    /// One submit_sm's short_message.
    package struct Segment: Sendable, Equatable {
        package var esmClass: UInt8
        package var bytes: [UInt8]
    }

    /// The data_coding of every segment: UCS-2.
    package static let dataCoding: UInt8 = 8

    /// The segments of `text`; `reference` ties them together on the handset (the same for
    /// every retry of one message: its parts from two tries still join).
    package static func segments(_ text: String, reference: UInt8) -> [Segment] {
        let units = Array(text.utf16)
        if units.count <= 70 { return [Segment(esmClass: 0, bytes: bigEndian(units[...]))] }
        var parts: [ArraySlice<UInt16>] = []
        var start = 0
        while start < units.count {
            var end = min(start + 67, units.count)
            // Never split a surrogate pair.
            if end < units.count, UTF16.isLeadSurrogate(units[end - 1]) { end -= 1 }
            parts.append(units[start..<end])
            start = end
        }
        let total = UInt8(min(parts.count, 255))
        return parts.prefix(255).enumerated().map { index, part in
            Segment(esmClass: 0x40, bytes: [0x05, 0x00, 0x03, reference, total, UInt8(index + 1)] + bigEndian(part))
        }
    }

    private static func bigEndian(_ units: ArraySlice<UInt16>) -> [UInt8] {
        units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

/// A delivery receipt: the SMS centre's id of the message it is about and what became of it.
package struct SMSReceipt: Sendable, Equatable {
    package enum Outcome: Sendable, Equatable {
        case delivered
        case undeliverable
        /// ENROUTE, ACCEPTD, UNKNOWN: not final.
        case pending
    }

    package var messageID: String
    /// `DELIVRD`, `UNDELIV`, `EXPIRED`, `REJECTD`, `DELETED`, …
    package var stat: String

    package var outcome: Outcome {
        switch stat {
        case "DELIVRD": .delivered
        case "UNDELIV", "EXPIRED", "REJECTD", "DELETED": .undeliverable
        default: .pending
        }
    }

    /// The receipt of a deliver_sm: the `receipted_message_id` and `message_state` TLVs when
    /// present, else the `id:… stat:…` text of SMPP 3.4's appendix B.
    package init?(text: [UInt8], receiptedID: String, messageState: UInt8) {
        let body = String(decoding: text, as: UTF8.self)
        func field(_ name: String) -> String? {
            guard let range = body.range(of: name + ":") else { return nil }
            let value = body[range.upperBound...].prefix { !$0.isWhitespace }
            return value.isEmpty ? nil : String(value)
        }
        let states: [UInt8: String] = [
            1: "ENROUTE", 2: "DELIVRD", 3: "EXPIRED", 4: "DELETED", 5: "UNDELIV", 6: "ACCEPTD", 7: "UNKNOWN",
            8: "REJECTD",
        ]
        guard let id = receiptedID.isEmpty ? field("id") : receiptedID,
            let stat = states[messageState] ?? field("stat")
        else { return nil }
        messageID = id
        self.stat = String(stat.prefix(7))
    }

    package init(messageID: String, stat: String) {
        self.messageID = messageID
        self.stat = stat
    }
}
