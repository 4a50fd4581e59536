import Foundation
import Testing

@testable import IssuerdCore

@Suite struct JSONTextTests {
    static let samples: [String] = [
        "", "plain", "quote \" and \\ backslash", "홍길동", "emoji 🧾 and é", "slash / stays", "\u{7F}\u{80}\u{9F}",
        "\"", "\\", "\"\"\\\\", "end\n", "\ttab first", String((0..<0x20).map { Character(Unicode.Scalar($0)) }),
    ]

    /// The byte buffer's one-pass writer gives exactly the bytes of the `String` writer.
    @Test(arguments: samples)
    func bytesAgreeWithText(value: String) throws {
        var text = ""
        JSONText.appendString(value, to: &text)
        var bytes: [UInt8] = [0x41]
        JSONText.appendString(value, to: &bytes)
        #expect(bytes == [0x41] + Array(text.utf8))
        #expect(try JSONDecoder().decode(String.self, from: Data(bytes.dropFirst())) == value)
    }

    /// Every single byte below 0x80, alone and between other characters.
    @Test func everyASCIICharacter() throws {
        for value in 0..<0x80 {
            let character = String(Character(Unicode.Scalar(UInt8(value))))
            for sample in [character, "a" + character + "é" + character] {
                var text = ""
                JSONText.appendString(sample, to: &text)
                var bytes: [UInt8] = []
                JSONText.appendString(sample, to: &bytes)
                #expect(bytes == Array(text.utf8), "byte \(value)")
                #expect(try JSONDecoder().decode(String.self, from: Data(bytes)) == sample, "byte \(value)")
            }
        }
    }

    @Test func literalsAreCopied() {
        var bytes: [UInt8] = []
        JSONText.appendLiteral(#"{"rule":"#, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"rule":"#)
    }
}

extension JSONTextTests {
    /// The eight-bytes-at-a-time test never misses a byte that needs an escape, wherever it
    /// sits in the word and whatever the other seven are (UTF-8 lead and continuation bytes
    /// among them), and says no for words with none.
    @Test func wordTestNeverMissesAnEscape() {
        let fillers: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xC3, 0xFF, 0x41]
        for needed in (0..<0x20).map({ UInt8($0) }) + [0x22, 0x5C] {
            for position in 0..<8 {
                for filler in fillers {
                    var bytes = [UInt8](repeating: filler, count: 8)
                    bytes[position] = needed
                    let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    #expect(JSONText.mayNeedEscape(word), "byte \(needed) at \(position) among \(filler)")
                }
            }
        }
        for filler in fillers {
            let word = [UInt8](repeating: filler, count: 8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            #expect(!JSONText.mayNeedEscape(word), "\(filler)")
        }
    }

    /// Long strings with an escape at every offset come out as the `String` writer's.
    @Test func longStringsWithAnEscapeAtEveryOffset() throws {
        for offset in 0..<40 {
            for escaped in ["\"", "\\", "\n", "\u{1}"] {
                var characters = Array(repeating: "x", count: 40)
                characters[offset] = escaped
                let value = characters.joined() + "é한"
                var text = ""
                JSONText.appendString(value, to: &text)
                var bytes: [UInt8] = []
                JSONText.appendString(value, to: &bytes)
                #expect(bytes == Array(text.utf8), "\(offset)")
                #expect((try? JSONDecoder().decode(String.self, from: Data(bytes))) == value, "\(offset)")
            }
        }
    }
}
