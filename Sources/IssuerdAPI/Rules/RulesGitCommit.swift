import Foundation

/// The git commit a rules directory is checked out at, and who made it, read from the `.git`
/// files themselves.
///
/// A reload may run on a request's thread, so no `git` process is ever started: `HEAD` gives
/// the commit (through a loose ref or `packed-refs`), and the reflog's line that moved `HEAD`
/// to it gives the person (the author of a commit made in that checkout; whoever pulled or
/// checked it out otherwise). Worktrees (a `.git` file naming the git directory) are followed.
package struct RulesGitCommit: Sendable, Equatable {
    /// The commit id (40 or 64 hex digits).
    package var commit: String
    /// The name of whoever moved `HEAD` to it, when the reflog says.
    package var author: String?

    /// The commit of the repository holding `directory` (searched upwards), or nil when it is
    /// not in a git checkout or the files cannot be read.
    package static func read(directory: URL) -> RulesGitCommit? {
        var candidate = directory.standardizedFileURL
        for _ in 0..<64 {
            let dotGit = candidate.appendingPathComponent(".git")
            if let gitDirectory = gitDirectory(dotGit) { return read(gitDirectory: gitDirectory) }
            let parent = candidate.deletingLastPathComponent()
            if parent.path == candidate.path { return nil }
            candidate = parent
        }
        return nil
    }

    /// `.git` itself when a directory; the directory a `gitdir: …` file names otherwise.
    private static func gitDirectory(_ dotGit: URL) -> URL? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dotGit.path, isDirectory: &isDirectory) else { return nil }
        if isDirectory.boolValue { return dotGit }
        guard let text = text(dotGit), text.hasPrefix("gitdir:") else { return nil }
        let path = text.dropFirst("gitdir:".count).trimmingCharacters(in: .whitespacesAndNewlines)
        return URL(fileURLWithPath: path, relativeTo: dotGit.deletingLastPathComponent()).standardizedFileURL
    }

    private static func read(gitDirectory: URL) -> RulesGitCommit? {
        guard
            let head = text(gitDirectory.appendingPathComponent("HEAD"))?.trimmingCharacters(
                in: .whitespacesAndNewlines)
        else { return nil }
        // Refs of a worktree live in the common git directory.
        let common = text(gitDirectory.appendingPathComponent("commondir")).map {
            URL(
                fileURLWithPath: $0.trimmingCharacters(in: .whitespacesAndNewlines), relativeTo: gitDirectory
            ).standardizedFileURL
        }
        let commit: String?
        if head.hasPrefix("ref:") {
            let ref = head.dropFirst("ref:".count).trimmingCharacters(in: .whitespaces)
            commit = resolve(ref, in: [gitDirectory] + (common.map { [$0] } ?? []))
        } else {
            commit = head
        }
        guard let commit, isCommitID(commit) else { return nil }
        return RulesGitCommit(
            commit: commit, author: author(of: commit, reflog: gitDirectory.appendingPathComponent("logs/HEAD")))
    }

    private static func resolve(_ ref: String, in directories: [URL]) -> String? {
        guard !ref.contains(".."), !ref.hasPrefix("/") else { return nil }
        for directory in directories {
            if let loose = text(directory.appendingPathComponent(ref)) {
                return loose.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            if let packed = text(directory.appendingPathComponent("packed-refs")) {
                for line in packed.split(separator: "\n") where line.hasSuffix(" " + ref) {
                    return String(line.prefix { $0 != " " })
                }
            }
        }
        return nil
    }

    /// The name on the newest reflog line ending at `commit`: `old new Name <mail> time zone\tmessage`.
    private static func author(of commit: String, reflog: URL) -> String? {
        guard let log = tail(reflog) else { return nil }
        for line in log.split(separator: "\n").reversed() {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, fields[1] == commit, let mail = fields[2].firstIndex(of: "<") else { continue }
            let name = fields[2][..<mail].trimmingCharacters(in: .whitespaces)
            return name.isEmpty ? nil : name
        }
        return nil
    }

    private static func isCommitID(_ text: String) -> Bool {
        (text.utf8.count == 40 || text.utf8.count == 64)
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The last 256 KiB of a file that only grows (the reflog), or nil.
    private static func tail(_ url: URL) -> String? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let end = try? handle.seekToEnd() else { return nil }
        try? handle.seek(toOffset: end > 256 << 10 ? end - (256 << 10) : 0)
        guard let data = try? handle.readToEnd() else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A small text file (git's own files), or nil.
    private static func text(_ url: URL) -> String? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 4 << 20) else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
