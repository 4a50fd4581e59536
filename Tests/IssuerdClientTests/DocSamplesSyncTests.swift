import Foundation
import Testing

/// Keeps docs/ios-integration.md honest: every code block the document marks *Compiled* must
/// appear, line for line (indentation aside), in DocSamples.swift, which the suite compiles.
@Suite("docs/ios-integration.md stays in step with DocSamples.swift")
struct DocSamplesSyncTests {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let document = testsDirectory.appendingPathComponent("../../docs/ios-integration.md").standardized
    static let samples = testsDirectory.appendingPathComponent("DocSamples.swift")

    /// The lines of each fenced block that follows a paragraph starting with `*Compiled*`.
    static func compiledBlocks(in text: String) -> [[String]] {
        var blocks: [[String]] = []
        var armed = false
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current != nil {
                if trimmed == "```" {
                    blocks.append(current ?? [])
                    current = nil
                } else {
                    current?.append(trimmed)
                }
            } else if trimmed.hasPrefix("*Compiled*") {
                armed = true
            } else if armed, trimmed.hasPrefix("```swift") {
                current = []
                armed = false
            }
        }
        return blocks
    }

    @Test func everyCompiledBlockIsInDocSamples() throws {
        let document = try String(contentsOf: Self.document, encoding: .utf8)
        let samples = try String(contentsOf: Self.samples, encoding: .utf8)
            .components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")
        let blocks = Self.compiledBlocks(in: document)
        #expect(blocks.count == 4, "the document marks four compiled samples")
        for block in blocks {
            let text = block.joined(separator: "\n")
            #expect(samples.contains(text), "not in DocSamples.swift:\n\(text)")
        }
    }
}
