import Foundation
import Testing

@testable import IssuerdFuzz

/// Every fuzz target's kept inputs, replayed without libFuzzer in every test run: the seeds
/// (`Fuzz/Corpus/<target>/`) and each input that once crashed a parser or broke a check
/// (`Fuzz/Regressions/<target>/`), so that a fixed crash stays fixed (docs/fuzzing.md).
@Suite("Fuzz corpus replay")
struct CorpusReplayTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("Every kept input of the target passes its checks", arguments: FuzzTarget.all.map(\.name))
    func replay(target name: String) throws {
        let target = try #require(FuzzTarget.named(name))
        let seeds = FuzzCorpus.files(at: Self.root.appendingPathComponent("Fuzz/Corpus/\(name)"))
        #expect(seeds.count >= 3, "Fuzz/Corpus/\(name) holds \(seeds.count) seeds")
        for file in FuzzCorpus.folders(of: name, root: Self.root).flatMap(FuzzCorpus.files(at:)) {
            let bytes = try [UInt8](Data(contentsOf: file))
            #expect(bytes.count <= target.maximumLength, "\(file.lastPathComponent) is longer than -max_len")
            do {
                try target.run(bytes)
            } catch {
                Issue.record("\(file.path): \(error)")
            }
        }
    }

    @Test("Every target's name is its own")
    func namesAreUnique() {
        #expect(Set(FuzzTarget.all.map(\.name)).count == FuzzTarget.all.count)
    }

    @Test("A rules input splits into files at '%% path' lines, the text before them being fuzz.rules")
    func rulesInputFiles() {
        let files = RulesFuzzing.files(
            "rule a\n%% lists/x.list\ntype string\nv\n%% b.rules\nrule b\n%% lists/x.list\ny")
        #expect(files.map(\.path) == ["b.rules", "fuzz.rules", "lists/x.list"])
        #expect(files.map(\.contents) == ["rule b", "rule a", "y"])
        #expect(RulesFuzzing.files("only rules").map(\.path) == ["fuzz.rules"])
    }

    @Test("The JSON check tells apart what == on String and Double would not: 0 and -0, NFC and NFD")
    func jsonComparison() {
        typealias Tree = JSONFuzzing.Tree
        #expect(!Tree.number(0).same(as: .number(-0.0)))
        #expect(!Tree.string("\u{E9}").same(as: .string("e\u{301}")))
        #expect(!Tree.object(["\u{E9}": .null]).same(as: .object(["e\u{301}": .null])))
        #expect(
            Tree.array([.number(1), .string("a"), .bool(true)]).same(
                as: .array([.number(1), .string("a"), .bool(true)])))
    }
}
