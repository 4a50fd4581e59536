import CPKCS11
import Foundation

/// A vendor's PKCS#11 module (`.so`) loaded with `dlopen`, entered through its
/// `C_GetFunctionList` and initialised for a multi-threaded caller (`CKF_OS_LOCKING_OK`).
///
/// One per process and module path: Cryptoki allows one `C_Initialize` per application, so
/// ``PKCS11Module/load(path:)`` shares instances. `C_Finalize` and `dlclose` run when the last
/// reference goes.
public final class PKCS11Module: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; Cryptoki is thread-safe under CKF_OS_LOCKING_OK
    /// The path given.
    public let path: String
    let functions: CK_FUNCTION_LIST_PTR
    private let handle: UnsafeMutableRawPointer

    private static let loaded = NSLock()
    nonisolated(unsafe) private static var instances: [String: Weak] = [:]  // guarded by `loaded`
    private struct Weak { weak var module: PKCS11Module? }

    /// Loads (or shares) the module at `path`.
    ///
    /// - Throws: ``PKCS11Error/Code/moduleUnavailable`` naming the path and the loader's reason.
    public static func load(path: String) throws -> PKCS11Module {
        loaded.lock()
        defer { loaded.unlock() }
        if let module = instances[path]?.module { return module }
        let module = try PKCS11Module(path: path)
        instances[path] = Weak(module: module)
        return module
    }

    private init(path: String) throws {
        guard path.hasPrefix("/") else {
            throw PKCS11Error(.moduleUnavailable, "the module path must be absolute, not '\(path)'")
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw PKCS11Error(.moduleUnavailable, "no module file at \(path)")
        }
        var list: CK_FUNCTION_LIST_PTR? = nil
        var rv: CK_RV = 0
        let handle = issuerd_pkcs11_load(path, &list, &rv)
        guard let handle else {
            let reason = issuerd_pkcs11_dlerror().map { String(cString: $0) } ?? "dlopen failed"
            throw PKCS11Error(.moduleUnavailable, "cannot load \(path): \(reason)")
        }
        guard rv == CKR_OK, let list else {
            issuerd_pkcs11_unload(handle)
            throw PKCS11Error(
                .moduleUnavailable, "\(path) is not a PKCS#11 module (no usable C_GetFunctionList)",
                function: "C_GetFunctionList", returnValue: UInt(rv))
        }
        var arguments = CK_C_INITIALIZE_ARGS()
        arguments.flags = CK_FLAGS(CKF_OS_LOCKING_OK)
        let initialized =
            withUnsafeMutablePointer(to: &arguments) { list.pointee.C_Initialize?(UnsafeMutableRawPointer($0)) }
            ?? CK_RV(CKR_GENERAL_ERROR)
        // Another library in the process may have initialised the module already: usable as is.
        guard initialized == CKR_OK || initialized == CKR_CRYPTOKI_ALREADY_INITIALIZED else {
            issuerd_pkcs11_unload(handle)
            throw PKCS11Error(
                .moduleUnavailable, "\(path) failed to initialise", function: "C_Initialize",
                returnValue: UInt(initialized))
        }
        self.path = path
        self.functions = list
        self.handle = handle
    }

    deinit {
        _ = functions.pointee.C_Finalize?(nil)
        issuerd_pkcs11_unload(handle)
    }

    /// The labels of the tokens present, by slot.
    public func tokenLabels() throws -> [(slot: UInt, label: String)] {
        try slots().map { ($0, try tokenInfo(slot: $0).label) }
    }

    /// The slot whose token carries `label`.
    ///
    /// - Throws: ``PKCS11Error/Code/tokenNotFound`` listing the labels that are present.
    func slot(tokenLabel label: String) throws -> UInt {
        let tokens = try tokenLabels()
        let matches = tokens.filter { $0.label == label }
        guard matches.count == 1 else {
            let present = tokens.map { "'\($0.label)'" }.joined(separator: ", ")
            if matches.isEmpty {
                throw PKCS11Error(
                    .tokenNotFound,
                    "no token labelled '\(label)' in \(path) (present: \(present.isEmpty ? "none" : present))")
            }
            throw PKCS11Error(
                .tokenNotFound, "\(matches.count) tokens are labelled '\(label)' in \(path); labels must be unique")
        }
        return matches[0].slot
    }

    /// Slots with a token present.
    func slots() throws -> [UInt] {
        var count: CK_ULONG = 0
        try check("C_GetSlotList", functions.pointee.C_GetSlotList!(1, nil, &count))
        var slots = [CK_SLOT_ID](repeating: 0, count: Int(count))
        try check("C_GetSlotList", functions.pointee.C_GetSlotList!(1, &slots, &count))
        return slots.prefix(Int(count)).map { UInt($0) }
    }

    /// What `C_GetTokenInfo` reports, as Swift values.
    func tokenInfo(slot: UInt) throws -> PKCS11TokenInfo {
        var info = CK_TOKEN_INFO()
        try check("C_GetTokenInfo", functions.pointee.C_GetTokenInfo!(CK_SLOT_ID(slot), &info))
        func text<T>(_ tuple: T) -> String {
            withUnsafeBytes(of: tuple) { String(decoding: $0, as: UTF8.self) }.trimmingCharacters(in: .whitespaces)
        }
        return PKCS11TokenInfo(
            label: text(info.label), manufacturer: text(info.manufacturerID), model: text(info.model),
            serialNumber: text(info.serialNumber), flags: UInt(info.flags))
    }

    /// Throws a ``PKCS11Error`` for anything but `CKR_OK`.
    func check(_ function: String, _ rv: CK_RV, file: String = #fileID, line: Int = #line) throws {
        guard rv != CKR_OK else { return }
        let value = UInt(rv)
        let code: PKCS11Error.Code
        switch value {
        case 0xA0, 0xA2: code = .pinIncorrect
        case 0xA4: code = .pinLocked
        case 0x40, 0x110, 0x112: code = .unwrapFailed
        default: code = PKCS11ReturnValue.meansSessionLost(value) ? .sessionLost : .operationFailed
        }
        throw PKCS11Error(code, "\(function) failed", function: function, returnValue: value, file: file, line: line)
    }
}

/// A token's public description (no secrets).
public struct PKCS11TokenInfo: Sendable, Equatable {
    /// The token label (`CKA_LABEL` of the token, blank padding removed).
    public let label: String
    /// `manufacturerID`.
    public let manufacturer: String
    /// `model`.
    public let model: String
    /// `serialNumber`.
    public let serialNumber: String
    /// `CKF_*` flags.
    public let flags: UInt
    /// Whether the user PIN is initialised (`CKF_USER_PIN_INITIALIZED`).
    public var userPINInitialized: Bool { flags & UInt(CKF_USER_PIN_INITIALIZED) != 0 }
    /// Whether the token locked the user PIN (`CKF_USER_PIN_LOCKED`).
    public var userPINLocked: Bool { flags & UInt(CKF_USER_PIN_LOCKED) != 0 }
}
