import Foundation

/// An operator's input that cannot be used; `description` is the one line to print.
public struct CommandInputError: Error, CustomStringConvertible, Sendable {
    /// What is wrong and, where it helps, where (file and line).
    public let description: String

    /// Creates the error.
    public init(_ description: String) { self.description = description }
}
