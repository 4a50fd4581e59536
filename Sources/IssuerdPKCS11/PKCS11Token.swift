import CPKCS11
import Foundation

/// A logged-in token and a pool of read-write sessions on it, sized for the concurrent
/// requests that sign (``PKCS11Token/init(module:tokenLabel:pin:sessionCount:)``).
///
/// Cryptoki sessions are not to be used by two threads at once, so each operation borrows one
/// session for its duration. A session the token closed (`CKR_SESSION_HANDLE_INVALID`,
/// `CKR_SESSION_CLOSED`, `CKR_DEVICE_REMOVED`, a lost login, a stale object handle) is
/// replaced by a fresh, logged-in one and the operation retried once; a second failure is
/// thrown as ``PKCS11Error/Code/sessionLost``, so no caller is answered with partial data.
public final class PKCS11Token: @unchecked Sendable {
    // @unchecked Sendable: mutable state (free sessions, handle cache) is guarded by `condition`
    /// The module the token is in.
    public let module: PKCS11Module
    /// The token label.
    public let label: String
    /// The most sessions open at once.
    public let sessionCount: Int
    let slot: UInt
    private let pin: PKCS11PIN
    private let condition = NSCondition()
    /// How long an operation waits for a free session before it fails.
    static let acquireTimeout: TimeInterval = 5
    private var idle: [CK_SESSION_HANDLE] = []
    private var open = 0
    private var handles: [String: CK_OBJECT_HANDLE] = [:]
    private var reopened = 0

    /// Finds the token, opens one session and logs the user in.
    ///
    /// - Parameters:
    ///   - sessionCount: Sessions kept for concurrent operations (1–1024); opened on demand.
    /// - Throws: ``PKCS11Error`` with ``PKCS11Error/Code/tokenNotFound``, ``PKCS11Error/Code/pinIncorrect``,
    ///   ``PKCS11Error/Code/pinLocked`` or another code naming the Cryptoki failure.
    public init(module: PKCS11Module, tokenLabel: String, pin: PKCS11PIN, sessionCount: Int = 8) throws {
        guard (1...1024).contains(sessionCount) else {
            throw PKCS11Error(.invalidInput, "session count must be 1 to 1024")
        }
        self.module = module
        self.label = tokenLabel
        self.pin = pin
        self.sessionCount = sessionCount
        slot = try module.slot(tokenLabel: tokenLabel)
        let info = try module.tokenInfo(slot: slot)
        guard !info.userPINLocked else {
            throw PKCS11Error(
                .pinLocked, "the user PIN of token '\(tokenLabel)' is locked; the security officer must reset it")
        }
        let first = try openSession(login: true)
        idle.append(first)
        open = 1
    }

    deinit {
        for session in idle { _ = module.functions.pointee.C_CloseSession!(session) }
    }

    /// What the token reports about itself.
    public var info: PKCS11TokenInfo {
        get throws { try module.tokenInfo(slot: slot) }
    }

    /// How many times a lost session was replaced (for `/metrics` and tests).
    public var sessionsReopened: Int {
        condition.lock()
        defer { condition.unlock() }
        return reopened
    }

    /// Runs `body` on a borrowed session; on a lost session, replaces it and runs `body` once more.
    func withSession<R>(_ body: (PKCS11Session) throws -> R) throws -> R {
        var session = try acquire()
        do {
            let result = try body(PKCS11Session(token: self, handle: session))
            release(session)
            return result
        } catch let error as PKCS11Error where error.code == .sessionLost {
            _ = module.functions.pointee.C_CloseSession!(session)
            forgetHandles()
            do {
                session = try openSession(login: true)
            } catch {
                dropSession()
                throw error
            }
            condition.lock()
            reopened += 1
            condition.unlock()
            do {
                let result = try body(PKCS11Session(token: self, handle: session))
                release(session)
                return result
            } catch let again as PKCS11Error where again.code == .sessionLost {
                _ = module.functions.pointee.C_CloseSession!(session)
                dropSession()
                throw PKCS11Error(
                    .sessionLost, "token '\(label)' lost the session again after re-opening it",
                    function: again.function, returnValue: again.returnValue)
            } catch {
                release(session)
                throw error
            }
        } catch {
            release(session)
            throw error
        }
    }

    /// Closes every session of this application on the token, as an HSM restart would
    /// (tests of the re-open path; the login goes with them).
    @_spi(Testing) public func closeAllSessionsForTesting() {
        _ = module.functions.pointee.C_CloseAllSessions!(CK_SLOT_ID(slot))
    }

    // MARK: pool

    private func acquire() throws -> CK_SESSION_HANDLE {
        condition.lock()
        // A stalled HSM must not hold every HTTP worker forever: after the wait bound the
        // request fails (500, no answer without its signature) instead of queueing on.
        let deadline = Date().addingTimeInterval(Self.acquireTimeout)
        while idle.isEmpty && open >= sessionCount {
            guard condition.wait(until: deadline) || !(idle.isEmpty && open >= sessionCount) else {
                condition.unlock()
                throw PKCS11Error(
                    .sessionLost,
                    "token '\(label)' had no free session within \(Int(Self.acquireTimeout)) s (\(sessionCount) in use)"
                )
            }
        }
        if let session = idle.popLast() {
            condition.unlock()
            return session
        }
        open += 1
        condition.unlock()
        do {
            return try openSession(login: false)
        } catch {
            dropSession()
            throw error
        }
    }

    private func release(_ session: CK_SESSION_HANDLE) {
        condition.lock()
        idle.append(session)
        condition.signal()
        condition.unlock()
    }

    private func dropSession() {
        condition.lock()
        open -= 1
        condition.signal()
        condition.unlock()
    }

    private func openSession(login: Bool) throws -> CK_SESSION_HANDLE {
        var session: CK_SESSION_HANDLE = 0
        try module.check(
            "C_OpenSession",
            module.functions.pointee.C_OpenSession!(
                CK_SLOT_ID(slot), CK_FLAGS(CKF_SERIAL_SESSION | CKF_RW_SESSION), nil, nil, &session))
        guard login else { return session }
        let rv = pin.withBytes { bytes, count in
            module.functions.pointee.C_Login!(session, CK_USER_TYPE(CKU_USER), bytes, CK_ULONG(count))
        }
        // The login is per application and token: a second session finds it already done.
        // (So a second PKCS11Token on the same token in one process cannot tell a wrong PIN:
        // the service opens exactly one.)
        if rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN { return session }
        _ = module.functions.pointee.C_CloseSession!(session)
        switch UInt(rv) {
        case 0xA0, 0xA2:
            throw PKCS11Error(
                .pinIncorrect, "token '\(label)' refused the PIN", function: "C_Login", returnValue: UInt(rv))
        case 0xA4:
            throw PKCS11Error(
                .pinLocked, "the user PIN of token '\(label)' is locked", function: "C_Login", returnValue: UInt(rv))
        case 0x102:
            throw PKCS11Error(
                .pinIncorrect, "token '\(label)' has no user PIN set", function: "C_Login", returnValue: UInt(rv))
        default:
            try module.check("C_Login", rv)
            return session
        }
    }

    // MARK: object handles

    /// The handle of the one object of `objectClass` labelled `label`, cached.
    func handle(label: String, objectClass: UInt, session: PKCS11Session) throws -> CK_OBJECT_HANDLE {
        let key = "\(objectClass)/\(label)"
        condition.lock()
        if let cached = handles[key] {
            condition.unlock()
            return cached
        }
        condition.unlock()
        let found = try session.findObjects(
            [.number(CKA_CLASS, objectClass), .data(CKA_LABEL, Array(label.utf8))], limit: 2)
        guard !found.isEmpty else {
            throw PKCS11Error(
                .keyNotFound,
                "token '\(self.label)' holds no \(PKCS11ObjectInfo.className(objectClass)) labelled '\(label)'")
        }
        guard found.count == 1 else {
            throw PKCS11Error(
                .keyAmbiguous,
                "token '\(self.label)' holds several \(PKCS11ObjectInfo.className(objectClass))s labelled '\(label)'")
        }
        condition.lock()
        handles[key] = found[0]
        condition.unlock()
        return found[0]
    }

    private func forgetHandles() {
        condition.lock()
        handles.removeAll()
        condition.unlock()
    }
}
