/// A failure of the PKCS#11 key store: what went wrong (`code`), the Cryptoki function and its
/// return value where there is one, and a reason safe to print. Never holds a PIN, key byte or
/// PAN.
public struct PKCS11Error: Error, CustomStringConvertible, Sendable {
    /// What kind of failure; extensible.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The module file cannot be loaded, lacks `C_GetFunctionList`, or fails `C_Initialize`.
        public static let moduleUnavailable = Code(rawValue: "module_unavailable")
        /// No token with the configured label is present.
        public static let tokenNotFound = Code(rawValue: "token_not_found")
        /// The PIN file is missing, unreadable, empty or too long.
        public static let pinUnreadable = Code(rawValue: "pin_unreadable")
        /// The token refused the PIN (`CKR_PIN_INCORRECT`, `CKR_PIN_LEN_RANGE`).
        public static let pinIncorrect = Code(rawValue: "pin_incorrect")
        /// The token locked the user PIN after too many wrong tries.
        public static let pinLocked = Code(rawValue: "pin_locked")
        /// No key with the configured label (and class) is in the token.
        public static let keyNotFound = Code(rawValue: "key_not_found")
        /// More than one key carries the label: ambiguous, refused.
        public static let keyAmbiguous = Code(rawValue: "key_ambiguous")
        /// The key has the wrong type, size or usage for its role.
        public static let keyWrongType = Code(rawValue: "key_wrong_type")
        /// The key can leave the HSM (`CKA_EXTRACTABLE` true or `CKA_SENSITIVE` false).
        public static let keyExtractable = Code(rawValue: "key_extractable")
        /// `keys hsm init` found a key with that label already.
        public static let keyExists = Code(rawValue: "key_exists")
        /// The session was closed, the login lost or the device removed, and one retry on a
        /// fresh session failed too.
        public static let sessionLost = Code(rawValue: "session_lost")
        /// A wrapped key does not unwrap under the wrapping key (altered, or another key).
        public static let unwrapFailed = Code(rawValue: "unwrap_failed")
        /// Bad input from the caller (lengths, labels).
        public static let invalidInput = Code(rawValue: "invalid_input")
        /// Any other Cryptoki failure.
        public static let operationFailed = Code(rawValue: "operation_failed")
    }

    /// What went wrong.
    public let code: Code
    /// The Cryptoki function that failed, e.g. `C_Login`.
    public let function: String?
    /// Its `CK_RV`, e.g. `0xa0`.
    public let returnValue: UInt?
    /// Safe to print: never a PIN or key byte.
    public let reason: String
    public let file: String
    public let line: Int

    init(
        _ code: Code, _ reason: String, function: String? = nil, returnValue: UInt? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.reason = reason
        self.function = function
        self.returnValue = returnValue
        self.file = file
        self.line = line
    }

    public var description: String {
        var text = "\(code): \(reason)"
        if let function, let returnValue { text += " (\(function) returned \(PKCS11ReturnValue.name(returnValue)))" }
        return text
    }
}

/// Names of the `CK_RV` values an operator meets, for error lines.
enum PKCS11ReturnValue {
    static func name(_ value: UInt) -> String {
        switch value {
        case 0x00: "CKR_OK"
        case 0x02: "CKR_HOST_MEMORY"
        case 0x03: "CKR_SLOT_ID_INVALID"
        case 0x05: "CKR_GENERAL_ERROR"
        case 0x06: "CKR_FUNCTION_FAILED"
        case 0x07: "CKR_ARGUMENTS_BAD"
        case 0x12: "CKR_ATTRIBUTE_TYPE_INVALID"
        case 0x30: "CKR_DEVICE_ERROR"
        case 0x31: "CKR_DEVICE_MEMORY"
        case 0x32: "CKR_DEVICE_REMOVED"
        case 0x40: "CKR_ENCRYPTED_DATA_INVALID"
        case 0x54: "CKR_FUNCTION_NOT_SUPPORTED"
        case 0x60: "CKR_KEY_HANDLE_INVALID"
        case 0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED"
        case 0x6A: "CKR_KEY_UNEXTRACTABLE"
        case 0x70: "CKR_MECHANISM_INVALID"
        case 0x82: "CKR_OBJECT_HANDLE_INVALID"
        case 0xA0: "CKR_PIN_INCORRECT"
        case 0xA2: "CKR_PIN_LEN_RANGE"
        case 0xA4: "CKR_PIN_LOCKED"
        case 0xB0: "CKR_SESSION_CLOSED"
        case 0xB3: "CKR_SESSION_HANDLE_INVALID"
        case 0xD0: "CKR_TEMPLATE_INCOMPLETE"
        case 0xD1: "CKR_TEMPLATE_INCONSISTENT"
        case 0xE0: "CKR_TOKEN_NOT_PRESENT"
        case 0xE1: "CKR_TOKEN_NOT_RECOGNIZED"
        case 0xF0: "CKR_UNWRAPPING_KEY_HANDLE_INVALID"
        case 0xF4: "CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT"
        case 0x100: "CKR_USER_ALREADY_LOGGED_IN"
        case 0x101: "CKR_USER_NOT_LOGGED_IN"
        case 0x102: "CKR_USER_PIN_NOT_INITIALIZED"
        case 0x110: "CKR_WRAPPED_KEY_INVALID"
        case 0x112: "CKR_WRAPPED_KEY_LEN_RANGE"
        case 0x190: "CKR_CRYPTOKI_ALREADY_INITIALIZED"
        case 0x191: "CKR_CRYPTOKI_NOT_INITIALIZED"
        default: "CK_RV 0x" + String(value, radix: 16)
        }
    }

    /// The values after which the session (or the login it carried) is gone: the pool re-opens
    /// and retries once. Stale object handles belong here too: a token that restarted hands
    /// out new ones.
    static func meansSessionLost(_ value: UInt) -> Bool {
        [0x32, 0xB0, 0xB3, 0xE0, 0x101, 0x60, 0x82, 0x30].contains(value)
    }
}
