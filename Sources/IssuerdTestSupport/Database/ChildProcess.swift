import Foundation

/// Runs a program to completion with `posix_spawn` and `waitpid`.
///
/// Foundation's `Process` is not used because on Linux it hands the child an internal
/// descriptor and waits for it to close: `pg_ctl start` leaves the postmaster running with
/// that descriptor inherited, so `waitUntilExit()` never returns.
enum ChildProcess {
    /// Runs `executable` with `arguments`, standard streams on /dev/null and no other
    /// inherited descriptor, from `/tmp` (the `postgres` user may not enter the caller's folder).
    ///
    /// - Returns: The exit status, or nil when the program could not be started or was killed.
    static func run(_ executable: String, _ arguments: [String]) -> Int32? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        markDescriptorsCloseOnExec()

        // posix_spawn's chdir and closefrom actions are GNU extensions Swift does not import,
        // so a shell changes directory and then becomes the program.
        let shell = ["/bin/sh", "-c", "cd /tmp && exec \"$0\" \"$@\"", executable] + arguments
        let argv = shell.map { strdup($0) }
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = (argv + [nil]).withUnsafeBufferPointer { pointers in
            posix_spawn(&pid, "/bin/sh", &actions, nil, pointers.baseAddress!, environ)
        }
        guard spawned == 0 else { return nil }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { return nil }
        }
        // WIFEXITED / WEXITSTATUS are macros that do not import.
        let exited = status & 0x7f == 0
        return exited ? (status >> 8) & 0xff : nil
    }

    /// Keeps the test's own descriptors (sockets, log files) out of the long-lived server,
    /// which would otherwise hold them open after the test ends.
    private static func markDescriptorsCloseOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            guard let descriptor = Int32(name), descriptor > 2 else { continue }
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}
