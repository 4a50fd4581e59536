import Foundation
import IssuerdCore
import IssuerdRisk

/// Reloads the rules when a file of the rules directory is added, removed or rewritten.
///
/// Polls the list of ruleset files with their modification times and sizes (cheap: one
/// directory walk and a `stat` per file) on one dedicated thread, so it works on every file
/// system, bind mounts and ConfigMap symlink swaps included, where inotify misses changes.
/// A change is reloaded only once the directory has looked the same for one more poll, so an
/// editor writing a file in several steps is not caught half-way (which would record a
/// failed reload for nothing).
final class RulesFileWatcher: Sendable {
    /// One file as the watcher sees it.
    struct Entry: Hashable, Sendable {
        var path: String
        var modified: Date?
        var size: Int?
    }

    private struct State {
        var running = false
        var stopRequested = false
    }

    private let directory: URL
    private let interval: Duration
    private let onChange: @Sendable () -> Void
    private let onPoll: @Sendable () -> Void
    // Guarded by Lock: start/stop bookkeeping shared with the polling thread.
    private let state = Lock(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// A watcher of `directory` that calls `onChange` (on its own thread) after a change.
    ///
    /// - Parameters:
    ///   - directory: The rules directory.
    ///   - interval: Time between two polls.
    ///   - onPoll: Called on every poll, before the directory is looked at; typically
    ///     ``RulesService/follow()`` (an approved change to serve).
    ///   - onChange: Called once per settled change; typically ``RulesService/reload(trigger:actor:person:)``.
    init(
        directory: URL, interval: Duration = .milliseconds(500), onPoll: @escaping @Sendable () -> Void = {},
        onChange: @escaping @Sendable () -> Void
    ) {
        self.directory = directory
        self.interval = interval
        self.onPoll = onPoll
        self.onChange = onChange
    }

    /// Starts the polling thread; a second call does nothing.
    func start() {
        let started = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.stopRequested = false
            return true
        }
        guard started else { return }
        let baseline = Self.snapshot(of: directory)
        let thread = Thread { [self] in
            self.poll(from: baseline)
            self.finished.signal()
        }
        thread.name = "issuerd-rules-watcher"
        thread.start()
    }

    /// Stops the thread and waits for it to finish its current poll.
    func stop() {
        let wasRunning = state.withLock { state -> Bool in
            guard state.running, !state.stopRequested else { return false }
            state.stopRequested = true
            return true
        }
        guard wasRunning else { return }
        wake.signal()
        finished.wait()
        state.withLock { $0.running = false }
    }

    private func poll(from baseline: [Entry]) {
        var served = baseline
        var pending: [Entry]?
        let nanoseconds =
            UInt64(interval.components.seconds) * 1_000_000_000
            + UInt64(interval.components.attoseconds / 1_000_000_000)
        while true {
            _ = wake.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
            if state.withLock({ $0.stopRequested }) { return }
            onPoll()
            let seen = Self.snapshot(of: directory)
            if seen == served {
                pending = nil
            } else if seen == pending {
                served = seen
                pending = nil
                onChange()
            } else {
                pending = seen
            }
        }
    }

    /// Every ruleset file (the extensions ``RulesetLoader`` reads) with its time and size, sorted.
    ///
    /// Times and sizes come from `stat` (following a symlink to the file it names). Foundation's
    /// resource values cost about 70,000 instructions a poll here: they look the owner's name up
    /// in `/etc/passwd` and list extended attributes, for every file, every second.
    static func snapshot(of directory: URL) -> [Entry] {
        guard
            let enumerator = FileManager.default.enumerator(
                at: directory, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
        else {
            return []
        }
        var entries: [Entry] = []
        for case let url as URL in enumerator where RulesetLoader.extensions.contains(url.pathExtension) {
            guard entries.count <= RulesetLoader.maximumFiles else { break }
            let path = url.path
            var status = stat()
            guard stat(path, &status) == 0 else {
                // Gone between the listing and now, or unreadable: seen with no time or size.
                entries.append(Entry(path: path, modified: nil, size: nil))
                continue
            }
            let modified = Date(
                timeIntervalSince1970: Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9)
            entries.append(Entry(path: path, modified: modified, size: Int(status.st_size)))
        }
        return entries.sorted { $0.path < $1.path }
    }
}
