/// An OpenPGP step that failed: `description` names the step and RNP's result text, never a key
/// or the message.
public struct OpenPGPError: Error, CustomStringConvertible, Sendable {
    /// What failed, e.g. `load signing key`, `sign and encrypt`.
    public let step: String
    /// RNP's text for its result code, or issuerd's own reason.
    public let reason: String
    /// Where the error was made.
    public let file: String
    public let line: Int

    /// Creates an error.
    public init(step: String, reason: String, file: String = #fileID, line: Int = #line) {
        self.step = step
        self.reason = reason
        self.file = file
        self.line = line
    }

    public var description: String { "OpenPGP: \(step): \(reason)" }
}
