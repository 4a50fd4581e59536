import Foundation
import IssuerdCore

/// The user who owns a SoftHSM token, whom `issuerd keys hsm` must run as.
///
/// SoftHSM keeps each token as files in its token directory. Objects a command creates as
/// another user (root, typically) are files the service's user cannot read: the service then
/// fails with a misleading `key_not_found`. So the commands refuse to run as anyone but the
/// directory's owner. A hardware HSM keeps no such files, and is not checked.
enum HSMTokenOwner {
    /// Refuses when `module` is SoftHSM's and its token directory (from `SOFTHSM2_CONF`, else
    /// Debian's `/etc/softhsm/softhsm2.conf`) belongs to another user than this process's.
    ///
    /// - Throws: ``CommandFailure`` naming the directory, its owner and the user to run as.
    static func refuseOtherUser(
        module: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        guard let module, URL(fileURLWithPath: module).lastPathComponent.lowercased().contains("softhsm") else {
            return
        }
        let configuration =
            environment["SOFTHSM2_CONF"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/softhsm/softhsm2.conf"
        guard let text = try? String(contentsOfFile: configuration, encoding: .utf8),
            let directory = tokenDirectory(in: text)
        else { return }  // SoftHSM itself reports an unreadable configuration
        var status = stat()
        guard stat(directory, &status) == 0 else { return }
        let me = geteuid()
        guard status.st_uid != me else { return }
        let owner = userName(status.st_uid)
        throw CommandFailure(
            "the SoftHSM token directory \(directory) belongs to user \(owner), not \(userName(me)): run keys hsm as \(owner) (sudo -u \(owner) issuerd keys hsm …), so that the service, running as \(owner), can read what it creates"
        )
    }

    /// `directories.tokendir` of a `softhsm2.conf`.
    static func tokenDirectory(in configuration: String) -> String? {
        for line in configuration.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == "directories.tokendir", !parts[1].isEmpty { return parts[1] }
        }
        return nil
    }

    private static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return String(cString: name)
    }
}
