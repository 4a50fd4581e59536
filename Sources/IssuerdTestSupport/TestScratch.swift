import Foundation

/// Temporary directories for tests that hand a path to code which outlives the test's scope
/// (a rules directory an application watches, a copy shared by a suite): all under one folder
/// per test process, removed when the process exits.
public enum TestScratch {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var root: URL?  // guarded by `lock`

    /// A new, empty directory named `prefix` and a UUID.
    ///
    /// - Throws: Whatever creating it throws.
    public static func directory(_ prefix: String) throws -> URL {
        let url = processFolder().appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A path named `prefix` and a UUID that does not exist yet (for a copy's destination).
    public static func path(_ prefix: String) -> URL {
        processFolder().appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    }

    private static func processFolder() -> URL {
        lock.lock()
        defer { lock.unlock() }
        if let root { return root }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-tests-\(getpid())-\(UUID().uuidString.prefix(8))")
        // a copy into it says if not
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        root = folder
        atexit { TestScratch.remove() }
        return folder
    }

    private static func remove() {
        lock.lock()
        defer { lock.unlock() }
        if let root { try? FileManager.default.removeItem(at: root) }
    }
}
