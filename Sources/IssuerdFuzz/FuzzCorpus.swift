import Foundation

/// The inputs kept in the repository: `Fuzz/Corpus/<target>/` (seeds, and what fuzzing found
/// worth keeping) and `Fuzz/Regressions/<target>/` (inputs that once crashed or broke a check).
/// The normal tests replay both through every target (``FuzzTarget/run``).
package enum FuzzCorpus {
    /// The files under `url` (itself when it is a file), sorted, hidden files left out.
    package static func files(at url: URL) -> [URL] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [url] }
        guard
            let walker = FileManager.default.enumerator(
                at: url, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles])
        else { return [] }
        var found: [URL] = []
        for case let file as URL in walker
        where (try? file.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
            found.append(file)
        }
        return found.sorted { $0.path < $1.path }
    }

    /// The folders of `target` under the repository's `Fuzz/`.
    package static func folders(of target: String, root: URL) -> [URL] {
        ["Corpus", "Regressions"].map { root.appendingPathComponent("Fuzz/\($0)/\(target)") }
    }
}
