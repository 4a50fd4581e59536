import Foundation
import Testing

@testable import IssuerdAPI

/// What the rules watcher sees of a directory: every ruleset file, nested ones too, with the
/// time and size `stat` gives, through symlinks.
@Suite struct RulesFileWatcherTests {
    private func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("watcher-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("policy"), withIntermediateDirectories: true)
        return directory
    }

    @Test func aSnapshotListsRulesetFilesWithTheirTimesAndSizes() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        try "rule".write(to: directory.appendingPathComponent("policy/a.rules"), atomically: false, encoding: .utf8)
        try "12345".write(to: directory.appendingPathComponent("b.list"), atomically: false, encoding: .utf8)
        try "not rules".write(to: directory.appendingPathComponent("notes.txt"), atomically: false, encoding: .utf8)
        try "hidden".write(to: directory.appendingPathComponent(".c.rules"), atomically: false, encoding: .utf8)
        let entries = RulesFileWatcher.snapshot(of: directory)
        #expect(entries.map { URL(fileURLWithPath: $0.path).lastPathComponent } == ["b.list", "a.rules"])
        #expect(entries.map(\.size) == [5, 4])
        let written = try FileManager.default.attributesOfItem(atPath: entries[1].path)[.modificationDate] as? Date
        // The same time as Foundation reads it, to within its rounding of the nanoseconds.
        let modified = try #require(entries[1].modified)
        #expect(abs(modified.timeIntervalSince(try #require(written))) < 0.000_01)
    }

    @Test func aRewriteOfTheSameSizeAndAChangeBehindASymlinkAreSeen() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("policy/a.rules")
        try "rule one".write(to: file, atomically: false, encoding: .utf8)
        let target = directory.appendingPathComponent("target.txt")
        try "v1".write(to: target, atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            at: directory.appendingPathComponent("linked.rules"), withDestinationURL: target)
        let before = RulesFileWatcher.snapshot(of: directory)

        // Same size, a later time: a change.
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: file.path)
        let rewritten = RulesFileWatcher.snapshot(of: directory)
        #expect(rewritten != before)
        #expect(rewritten.map(\.size) == before.map(\.size))

        // The symlink's target grows: the link's entry shows the target's size.
        try "v2 longer".write(to: target, atomically: false, encoding: .utf8)
        let linked = try #require(RulesFileWatcher.snapshot(of: directory).first { $0.path.hasSuffix("linked.rules") })
        #expect(linked.size == 9)

        // A removed file is no longer listed.
        try FileManager.default.removeItem(at: file)
        #expect(!RulesFileWatcher.snapshot(of: directory).contains { $0.path.hasSuffix("a.rules") })
    }
}
