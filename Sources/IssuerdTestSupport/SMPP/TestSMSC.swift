import Foundation

/// An SMS centre on loopback (SMPP/smsc_simulator.py, PyPI's smpp34 server) for the SMS tests:
/// it accepts every submit_sm (or throttles as told), keeps each as a line of
/// `submits.jsonl`, and sends a delivery receipt for each that asks for one.
public final class TestSMSC: @unchecked Sendable {  // the child is replaced only by restart(), from the test's thread
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("smsc_simulator.py").path

    public let port: Int
    public let directory: URL
    private var process: Process
    private var input: Pipe

    /// One accepted submit_sm.
    public struct Submit: Sendable {
        public let messageID: String
        public let destination: String
        public let source: String
        public let dataCoding: Int
        public let esmClass: Int
        public let registeredDelivery: Int
        public let message: [UInt8]

        /// The text of a UCS-2 segment, its concatenation header (if any) left out.
        public var text: String {
            let body =
                esmClass & 0x40 != 0 && !message.isEmpty ? Array(message.dropFirst(Int(message[0]) + 1)) : message
            let units = stride(from: 0, to: body.count - 1, by: 2).map { UInt16(body[$0]) << 8 | UInt16(body[$0 + 1]) }
            return String(decoding: units, as: UTF16.self)
        }

        /// (reference, total, number) of a concatenated segment.
        public var concatenation: (reference: UInt8, total: UInt8, number: UInt8)? {
            guard esmClass & 0x40 != 0, message.count >= 6, message[0] == 5, message[1] == 0 else { return nil }
            return (message[3], message[4], message[5])
        }
    }

    /// Starts the simulator.
    ///
    /// - Throws: ``TestEnvironmentError`` without the test venv's Python (`ISSUERD_TEST_PYTHON`)
    ///   or when the simulator does not start.
    public init() throws {
        directory = try TestScratch.directory("smsc")
        port = try LoopbackPort.free()
        (process, input) = try Self.launch(port: port, directory: directory)
    }

    deinit { Self.stop(process, input) }

    private static func launch(port: Int, directory: URL) throws -> (Process, Pipe) {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw TestEnvironmentError("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test (smpp34)")
        }
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, "serve", String(port), directory.path]
        process.standardInput = input
        process.standardOutput = output
        let log = directory.appendingPathComponent("simulator.log")
        if !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardError = handle
        try process.run()
        var line: [UInt8] = []
        while !line.contains(0x0A) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        guard String(decoding: line, as: UTF8.self).hasPrefix("ready") else {
            process.terminate()
            throw TestEnvironmentError("smsc_simulator.py did not start")
        }
        return (process, input)
    }

    private static func stop(_ process: Process, _ input: Pipe) {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// Kills the simulator (SIGKILL: its sessions drop without unbind) and starts it again on
    /// the same port; what it recorded stays.
    public func restart() throws {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        var tries = 0
        while true {
            do {
                (process, input) = try Self.launch(port: port, directory: directory)
                return
            } catch  where tries < 20 {
                tries += 1
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// The next `count` submit_sm are answered ESME_RTHROTTLED.
    public func throttle(_ count: Int) throws {
        try Data(String(count).utf8).write(to: directory.appendingPathComponent("throttle"))
    }

    /// The `stat` of the receipts from now on (`DELIVRD` by default, `UNDELIV`, …).
    public func receipts(_ stat: String) throws {
        try Data(stat.utf8).write(to: directory.appendingPathComponent("receipt"))
    }

    /// Every accepted submit_sm so far, in order.
    public var submits: [Submit] {
        lines("submits.jsonl").map { object in
            let hex = object["message"] as? String ?? ""
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), index < hex.endIndex {
                bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
                index = next
            }
            return Submit(
                messageID: object["messageId"] as? String ?? "", destination: object["destination"] as? String ?? "",
                source: object["source"] as? String ?? "", dataCoding: object["dataCoding"] as? Int ?? -1,
                esmClass: object["esmClass"] as? Int ?? 0,
                registeredDelivery: object["registeredDelivery"] as? Int ?? 0,
                message: bytes)
        }
    }

    /// The answers issuerd gave to the receipts: message id → command_status (or why it was lost).
    public var receiptAnswers: [(messageID: String, status: String)] {
        lines("receipts.jsonl").map { ($0["messageId"] as? String ?? "", "\($0["status"] ?? "")") }
    }

    /// Waits (at most `timeout` seconds) until `condition` holds.
    @discardableResult
    public func wait(timeout: Double = 20, until condition: (TestSMSC) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(self) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition(self)
    }

    private func lines(_ name: String) -> [[String: Any]] {
        guard let text = try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}
