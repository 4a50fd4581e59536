import Foundation

extension DisposablePostgresServer {
    /// Stops the server without closing anything: SIGSTOP to the postmaster, then to each of its
    /// children (backends, background workers), as a frozen process, a paused VM or a storage
    /// stall would. Its sockets stay open and the kernel still accepts and acknowledges, so a
    /// client notices nothing but silence. Pair with ``thaw()``.
    ///
    /// - Returns: The processes stopped.
    @discardableResult
    public func freeze() throws -> [pid_t] {
        let postmaster = try postmasterProcessID()
        // The postmaster first, so that it starts no new child while the others are stopped.
        guard kill(postmaster, SIGSTOP) == 0 else {
            throw TestEnvironmentError("SIGSTOP to the postmaster (\(postmaster)) failed: errno \(errno)")
        }
        let children = Self.children(of: postmaster)
        for child in children { kill(child, SIGSTOP) }
        return [postmaster] + children
    }

    /// Resumes what ``freeze()`` stopped (SIGCONT to the postmaster and its children).
    public func thaw() throws {
        let postmaster = try postmasterProcessID()
        for child in Self.children(of: postmaster) { kill(child, SIGCONT) }
        kill(postmaster, SIGCONT)
    }

    /// The postmaster's process id, from the first line of `data/postmaster.pid`.
    public func postmasterProcessID() throws -> pid_t {
        let file = directory.appendingPathComponent("data/postmaster.pid")
        guard let text = try? String(contentsOf: file, encoding: .utf8),
            let first = text.split(separator: "\n").first, let pid = pid_t(first.trimmingCharacters(in: .whitespaces))
        else {
            throw TestEnvironmentError("no postmaster.pid in \(directory.path): is the server running?")
        }
        return pid
    }

    /// The processes whose parent is `parent`, read from `/proc/<pid>/stat`.
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // `pid (comm) state ppid …`: the command may hold spaces and parentheses.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, pid_t(fields[1]) == parent else { return nil }
            return pid
        }
    }
}
