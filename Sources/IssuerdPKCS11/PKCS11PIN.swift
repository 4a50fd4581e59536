import Foundation
import IssuerdCore

/// A user PIN read from a file: kept in one heap buffer wiped with `explicit_bzero` on release,
/// never printed. The pool needs it again to log in after the token dropped its sessions.
public final class PKCS11PIN: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: immutable after init; wiped once in deinit
    private let buffer: UnsafeMutableRawBufferPointer
    /// The PIN length in bytes.
    public let count: Int

    /// The most bytes a PIN file may hold; PKCS#11 PINs are short.
    public static let maximumLength = 256

    /// Reads the PIN from `path`, dropping one trailing newline (`echo PIN > file`).
    ///
    /// - Throws: ``PKCS11Error/Code/pinUnreadable`` naming the path, never the content.
    public convenience init(contentsOfFile path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PKCS11Error(.pinUnreadable, "cannot read the PIN file \(path)")
        }
        defer { try? handle.close() }
        var data = (try? handle.read(upToCount: Self.maximumLength + 2)) ?? Data()
        defer { data.resetBytes(in: 0..<data.count) }
        try self.init(fileBytes: data)
    }

    /// A PIN from standard input (first line), for `keys hsm init` without a file.
    ///
    /// On a terminal it asks for the PIN on standard error and reads one line with the echo off
    /// (``TerminalEcho``); from a pipe or a file it reads the first line as it comes.
    public convenience init(standardInput: FileHandle) throws {
        if TerminalEcho.isTerminal(standardInput.fileDescriptor) {
            FileHandle.standardError.write(Data("HSM user PIN: ".utf8))
            let line: Data? = try TerminalEcho.withEchoDisabled(on: standardInput.fileDescriptor) {
                try TerminalEcho.readLine(from: standardInput.fileDescriptor, maximumLength: Self.maximumLength) {
                    bytes in bytes.map { Data($0) }
                }
            }
            guard var data = line else {
                throw PKCS11Error(.pinUnreadable, "the PIN holds more than \(Self.maximumLength) bytes")
            }
            defer { data.resetBytes(in: 0..<data.count) }
            guard !data.isEmpty else { throw PKCS11Error(.pinUnreadable, "no PIN was typed") }
            try self.init(fileBytes: data)
            return
        }
        var data = (try? standardInput.read(upToCount: Self.maximumLength + 2)) ?? Data()
        defer { data.resetBytes(in: 0..<data.count) }
        if let newline = data.firstIndex(of: 0x0A) { data = data.prefix(upTo: newline + 1) }
        try self.init(fileBytes: data)
    }

    private init(fileBytes data: Data) throws {
        var length = data.count
        if length > 0, data[data.startIndex + length - 1] == 0x0A { length -= 1 }
        if length > 0, data[data.startIndex + length - 1] == 0x0D { length -= 1 }
        guard length > 0 else { throw PKCS11Error(.pinUnreadable, "the PIN file is empty") }
        guard length <= Self.maximumLength else {
            throw PKCS11Error(.pinUnreadable, "the PIN file holds more than \(Self.maximumLength) bytes")
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 1)
        data.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
        self.buffer = buffer
        count = length
    }

    /// A PIN given in memory (tests).
    public init(_ text: String) {
        let bytes = Array(text.utf8)
        buffer = .allocate(byteCount: max(bytes.count, 1), alignment: 1)
        buffer.copyBytes(from: bytes)
        count = bytes.count
    }

    deinit {
        explicit_bzero(buffer.baseAddress!, buffer.count)
        buffer.deallocate()
    }

    /// Lends the PIN bytes for one Cryptoki call.
    func withBytes<R>(_ body: (UnsafeMutablePointer<UInt8>, Int) throws -> R) rethrows -> R {
        try body(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count)
    }

    public var description: String { "PKCS11PIN(****)" }
}
