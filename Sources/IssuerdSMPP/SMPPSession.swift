import CSMPP34
import Foundation
import IssuerdCore

/// One bound transceiver session with the SMS centre, kept by its own thread: connect,
/// bind_transceiver, enquire_link when idle, deliver_sm receipts handed to ``receipts`` and
/// acknowledged, and after a drop a new bind with backoff (0.5 s doubling to 30 s).
///
/// Senders (the outbox dispatcher) put submit_sm on the wire with ``send(_:to:)``, which waits
/// only while ``SMPPSettings/window`` are unanswered, and collect the answers with
/// ``finish(_:)``: several messages are in flight at once on one session. libsmpp34 encodes and
/// decodes every PDU; this type does the socket, the framing and the session's state.
package final class SMPPSession: @unchecked Sendable {  // state behind `condition`; writes behind `writeLock`
    /// Called on the session's thread with the delivery receipts that arrived together (one
    /// read); true when they are recorded (then each is acknowledged with ESME_ROK), false to
    /// have the SMS centre send them again later.
    package typealias ReceiptHandler = @Sendable ([SMSReceipt]) -> Bool

    /// Why a message did not get its message ids.
    package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// No bound session within the time allowed, or it dropped with the message unanswered.
        case unavailable(String)
        /// The SMS centre refused the message (`command_status`); `permanent` when trying again
        /// cannot help.
        case refused(status: UInt32, permanent: Bool)

        package var description: String {
            switch self {
            case .unavailable(let why): "SMPP: \(why)"
            case .refused(let status, _): "SMPP: submit_sm refused, command_status 0x\(String(status, radix: 16))"
            }
        }
    }

    /// Segments put on the wire, to be collected by ``finish(_:)``.
    package struct Ticket: Sendable {
        fileprivate var segments: [SMSText.Segment]
        fileprivate var destination: SMSAddress
        fileprivate var sequences: [UInt32]
    }

    private struct Answer {
        var status: UInt32
        var messageID: String
    }

    private let settings: SMPPSettings
    private let logger: Logger
    private let onUnanswered: @Sendable (Int) -> Void
    private let condition = NSCondition()
    private let writeLock = NSLock()
    // Guarded by `condition`.
    private var socket: Int32 = -1
    private var bound = false
    private var stopping = false
    private var nextSequence: UInt32 = 1
    /// Sent submit_sm not yet answered, with when they were sent.
    private var outstanding: [UInt32: ContinuousClock.Instant] = [:]
    private var answers: [UInt32: Answer] = [:]
    /// Sequences whose session dropped before the answer.
    private var lost: Set<UInt32> = []
    private var pausedUntil: ContinuousClock.Instant?
    private var throttleDelay = 0.2
    private var receipts: ReceiptHandler?
    // Whether start() made the thread. The Thread itself is not kept: it holds its closure,
    // which holds the session, so keeping it here made a cycle that outlived stop().
    private var started = false
    private var threadDone = false

    /// - Parameter onUnanswered: Called with the number of submit_sm a dropped session left
    ///   unanswered: each may have reached the SMS centre and will be sent again.
    package init(settings: SMPPSettings, logger: Logger, onUnanswered: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.settings = settings
        self.logger = logger
        self.onUnanswered = onUnanswered
    }

    /// Starts the session's thread (once); `receipts` records each delivery receipt.
    package func start(receipts: @escaping ReceiptHandler) {
        condition.lock()
        defer { condition.unlock() }
        guard !started else { return }
        started = true
        self.receipts = receipts
        let thread = Thread { [self] in run() }
        thread.name = "issuerd-smpp"
        thread.start()
    }

    /// Unbinds, closes and waits (at most `timeout`) for the thread.
    package func stop(timeout: Duration) {
        condition.lock()
        stopping = true
        let descriptor = socket
        condition.broadcast()
        condition.unlock()
        if descriptor >= 0 {
            _ = try? write(command: UInt32(UNBIND), status: 0, sequence: takeSequence())
            shutdown(descriptor, Int32(SHUT_RDWR))
        }
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        condition.lock()
        while started && !threadDone && Date() < deadline { condition.wait(until: deadline) }
        condition.unlock()
    }

    /// Whether a session is bound now.
    package var isBound: Bool {
        condition.lock()
        defer { condition.unlock() }
        return bound
    }

    /// Puts `segments` on the wire, waiting while the window is full, the SMS centre asked to
    /// slow down, or no session is bound (at most ``SMPPSettings/responseTimeout``).
    package func send(_ segments: [SMSText.Segment], to destination: SMSAddress) throws(Failure) -> Ticket {
        var ticket = Ticket(segments: segments, destination: destination, sequences: [])
        for segment in segments { ticket.sequences.append(try submit(segment, to: destination)) }
        return ticket
    }

    /// The SMS centre's message id of each segment, in order. A segment answered
    /// ESME_RTHROTTLED or ESME_RMSGQFUL is sent again after a pause that doubles (to 10 s).
    package func finish(_ ticket: Ticket) throws(Failure) -> [String] {
        var ids: [String] = []
        for (index, sequence) in ticket.sequences.enumerated() {
            var current = sequence
            var tries = 0
            while true {
                let answer = try wait(for: current)
                if answer.status == 0 {
                    ids.append(answer.messageID)
                    break
                }
                let throttled = answer.status == UInt32(ESME_RTHROTTLED) || answer.status == UInt32(ESME_RMSGQFUL)
                tries += 1
                guard throttled, tries < 8 else {
                    throw .refused(status: answer.status, permanent: !Self.transient.contains(answer.status))
                }
                pause()
                current = try submit(ticket.segments[index], to: ticket.destination)
            }
        }
        condition.lock()
        throttleDelay = 0.2
        condition.unlock()
        return ids
    }

    /// Statuses worth trying again later: throttled, queue full, system error, submit failed,
    /// temporary application error.
    static let transient: Set<UInt32> = [0x58, 0x14, 0x08, 0x45, 0x64]

    private func pause() {
        condition.lock()
        pausedUntil = .now + .milliseconds(Int(throttleDelay * 1000))
        throttleDelay = min(throttleDelay * 2, 10)
        condition.unlock()
    }

    private func takeSequence() -> UInt32 {
        condition.lock()
        defer { condition.unlock() }
        return nextSequenceLocked()
    }

    private func nextSequenceLocked() -> UInt32 {
        let sequence = nextSequence
        nextSequence = nextSequence >= 0x7FFF_FFFF ? 1 : nextSequence + 1
        return sequence
    }

    private func submit(_ segment: SMSText.Segment, to destination: SMSAddress) throws(Failure) -> UInt32 {
        let deadline = Date().addingTimeInterval(settings.responseTimeout.timeInterval)
        condition.lock()
        while true {
            if stopping {
                condition.unlock()
                throw .unavailable("the session is stopping")
            }
            let paused = pausedUntil.map { $0 > .now } ?? false
            if bound && outstanding.count < settings.window && !paused { break }
            if Date() >= deadline {
                condition.unlock()
                throw .unavailable(bound ? "the window stayed full" : "no bound session")
            }
            condition.wait(until: paused ? min(deadline, Date().addingTimeInterval(0.05)) : deadline)
        }
        let sequence = nextSequenceLocked()
        outstanding[sequence] = .now
        condition.unlock()
        guard let source = SMSAddress.source(settings.sourceAddress) else { throw .unavailable("bad source address") }
        var buffer = [UInt8](repeating: 0, count: 512)
        var length: Int32 = 0
        let packed = segment.bytes.withUnsafeBufferPointer { message in
            SMPPCodec.lock.withLock { _ in
                issuerd_smpp_pack_submit_sm(
                    &buffer, Int32(buffer.count), &length, sequence, source.address, source.ton, source.npi,
                    destination.address, destination.ton, destination.npi, segment.esmClass, 1, SMSText.dataCoding,
                    message.baseAddress, Int32(message.count))
            }
        }
        guard packed == 0 else {
            forget(sequence)
            throw .unavailable("submit_sm does not encode")
        }
        do {
            try write(Array(buffer[..<Int(length)]))
        } catch {
            forget(sequence)
            throw .unavailable("the session dropped while sending")
        }
        return sequence
    }

    private func forget(_ sequence: UInt32) {
        condition.lock()
        outstanding[sequence] = nil
        condition.broadcast()
        condition.unlock()
    }

    private func wait(for sequence: UInt32) throws(Failure) -> Answer {
        // The session thread drops a session whose answers are late, which ends this wait too.
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let answer = answers.removeValue(forKey: sequence) { return answer }
            if lost.remove(sequence) != nil { throw .unavailable("the session dropped before the answer") }
            if stopping { throw .unavailable("the session is stopping") }
            condition.wait(until: Date().addingTimeInterval(1))
        }
    }

    // MARK: The session's thread

    private func run() {
        var backoff = 0.5
        while !isStopping {
            if let descriptor = connectAndBind() {
                backoff = 0.5
                logger.info("smpp session bound", ["host": .string(settings.host), "port": .int(settings.port)])
                read(descriptor)
                condition.lock()
                bound = false
                socket = -1
                let unanswered = outstanding.count
                lost.formUnion(outstanding.keys)
                outstanding.removeAll()
                condition.broadcast()
                condition.unlock()
                close(descriptor)
                if unanswered > 0 { onUnanswered(unanswered) }
                if isStopping { break }
                logger.warning("smpp session dropped", ["unanswered": .int(unanswered)])
            }
            sleepUnlessStopping(backoff)
            backoff = min(backoff * 2, 30)
        }
        condition.lock()
        threadDone = true
        condition.broadcast()
        condition.unlock()
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    private func sleepUnlessStopping(_ seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        while !stopping && Date() < deadline { condition.wait(until: deadline) }
        condition.unlock()
    }

    private func connectAndBind() -> Int32? {
        guard
            let descriptor = SMPPSocket.connect(
                host: settings.host, port: settings.port, timeout: settings.responseTimeout)
        else {
            logger.notice("smpp: cannot connect", ["host": .string(settings.host), "port": .int(settings.port)])
            return nil
        }
        condition.lock()
        socket = descriptor
        condition.unlock()
        var buffer = [UInt8](repeating: 0, count: 256)
        var length: Int32 = 0
        let sequence = takeSequence()
        let packed = SMPPCodec.lock.withLock { _ in
            issuerd_smpp_pack_bind_transceiver(
                &buffer, Int32(buffer.count), &length, sequence, settings.systemID, settings.password.unsafeValue, "")
        }
        var reader = SMPPSocket.Reader(descriptor: descriptor)
        guard packed == 0, (try? write(Array(buffer[..<Int(length)]))) != nil,
            let answer = reader.next(timeout: settings.responseTimeout.timeInterval),
            answer.command == UInt32(BIND_TRANSCEIVER_RESP) || answer.command == UInt32(GENERIC_NACK)
        else {
            logger.notice("smpp: no answer to bind_transceiver")
            forgetSocket(descriptor)
            return nil
        }
        guard answer.status == 0 else {
            // A refused bind (wrong password, account locked) is named; the password never is.
            logger.warning(
                "smpp: bind_transceiver refused", ["commandStatus": .string("0x" + String(answer.status, radix: 16))])
            forgetSocket(descriptor)
            return nil
        }
        condition.lock()
        bound = true
        condition.broadcast()
        condition.unlock()
        pendingReader = reader
        return descriptor
    }

    /// The reader that read the bind's answer (it may hold bytes already received).
    private var pendingReader: SMPPSocket.Reader?

    private func forgetSocket(_ descriptor: Int32) {
        condition.lock()
        socket = -1
        condition.unlock()
        close(descriptor)
    }

    private func read(_ descriptor: Int32) {
        var reader = pendingReader ?? SMPPSocket.Reader(descriptor: descriptor)
        pendingReader = nil
        let interval = settings.enquireLinkInterval.timeInterval
        let timeout = settings.responseTimeout.timeInterval
        var lastReceived = Date()
        var enquireSent: Date?
        while !isStopping {
            guard let result = reader.poll(timeout: 0.2) else { return }  // closed or broken
            let now = Date()
            var delivered: [(sequence: UInt32, receipt: SMSReceipt?, decoded: Bool)] = []
            for pdu in result {
                lastReceived = now
                if pdu.command == UInt32(DELIVER_SM) {
                    delivered.append(decodeDeliver(pdu))
                    continue
                }
                handle(pdu)
                if pdu.command == UInt32(ENQUIRE_LINK_RESP) { enquireSent = nil }
                if pdu.command == UInt32(UNBIND) { return }
            }
            if !delivered.isEmpty { acknowledge(delivered) }
            if let sent = enquireSent, now.timeIntervalSince(sent) > timeout {
                logger.warning("smpp: enquire_link unanswered")
                return
            }
            if enquireSent == nil, now.timeIntervalSince(lastReceived) >= interval {
                enquireSent = now
                guard (try? write(command: UInt32(ENQUIRE_LINK), status: 0, sequence: takeSequence())) != nil else {
                    return
                }
            }
            condition.lock()
            let oldest = outstanding.values.min()
            condition.unlock()
            if let oldest, ContinuousClock.now - oldest > settings.responseTimeout {
                logger.warning("smpp: submit_sm unanswered in time")
                return
            }
        }
    }

    private func handle(_ pdu: SMPPSocket.PDU) {
        switch pdu.command {
        case UInt32(SUBMIT_SM_RESP), UInt32(GENERIC_NACK):
            var id = [CChar](repeating: 0, count: 72)
            if pdu.status == 0 && pdu.command == UInt32(SUBMIT_SM_RESP) {
                let decoded = pdu.bytes.withUnsafeBufferPointer { bytes in
                    SMPPCodec.lock.withLock { _ in
                        issuerd_smpp_unpack_submit_sm_resp(bytes.baseAddress, Int32(bytes.count), &id, Int32(id.count))
                    }
                }
                if decoded != 0 { id[0] = 0 }
            }
            let messageID = String(cString: id)
            condition.lock()
            if outstanding.removeValue(forKey: pdu.sequence) != nil {
                // An accepted message without an id cannot be matched to its receipt: refused.
                answers[pdu.sequence] = Answer(
                    status: pdu.status == 0 && messageID.isEmpty ? 0x45 : pdu.status, messageID: messageID)
                condition.broadcast()
            }
            condition.unlock()
        case UInt32(ENQUIRE_LINK):
            _ = try? write(command: UInt32(ENQUIRE_LINK_RESP), status: 0, sequence: pdu.sequence)
        case UInt32(UNBIND):
            _ = try? write(command: UInt32(UNBIND_RESP), status: 0, sequence: pdu.sequence)
        case UInt32(ENQUIRE_LINK_RESP), UInt32(UNBIND_RESP):
            break
        default:
            if pdu.command & 0x8000_0000 == 0 {
                _ = try? write(command: UInt32(GENERIC_NACK), status: UInt32(ESME_RINVCMDID), sequence: pdu.sequence)
            }
        }
    }

    /// A deliver_sm's receipt (nil for a message that is not one, such as a mobile-originated text).
    private func decodeDeliver(_ pdu: SMPPSocket.PDU) -> (sequence: UInt32, receipt: SMSReceipt?, decoded: Bool) {
        var esmClass: UInt8 = 0
        var text = [UInt8](repeating: 0, count: 256)
        var textLength: Int32 = 0
        var receipted = [CChar](repeating: 0, count: 72)
        var state: UInt8 = 0
        let decoded = pdu.bytes.withUnsafeBufferPointer { bytes in
            SMPPCodec.lock.withLock { _ in
                issuerd_smpp_unpack_deliver_sm(
                    bytes.baseAddress, Int32(bytes.count), &esmClass, &text, Int32(text.count), &textLength,
                    &receipted, Int32(receipted.count), &state)
            }
        }
        guard decoded == 0 else { return (pdu.sequence, nil, false) }
        guard esmClass & 0x3C == 0x04 else { return (pdu.sequence, nil, true) }
        let receipt = SMSReceipt(
            text: Array(text[..<Int(textLength)]), receiptedID: String(cString: receipted), messageState: state)
        return (pdu.sequence, receipt, true)
    }

    /// Records the receipts of one read together, then answers each deliver_sm: ESME_ROK once
    /// recorded, ESME_RX_T_APPN (the SMS centre sends it again later) when not.
    private func acknowledge(_ delivered: [(sequence: UInt32, receipt: SMSReceipt?, decoded: Bool)]) {
        let receipts = delivered.compactMap(\.receipt)
        condition.lock()
        let handler = self.receipts
        condition.unlock()
        let recorded = receipts.isEmpty ? true : (handler?(receipts) ?? false)
        for item in delivered {
            let status: UInt32 = !item.decoded ? UInt32(ESME_RINVCMDLEN) : (item.receipt == nil || recorded ? 0 : 0x64)
            _ = try? write(deliverResponse: status, sequence: item.sequence)
        }
    }

    private struct WriteFailed: Error {}

    private func write(command: UInt32, status: UInt32, sequence: UInt32) throws {
        var buffer = [UInt8](repeating: 0, count: 64)
        var length: Int32 = 0
        let packed = SMPPCodec.lock.withLock { _ in
            issuerd_smpp_pack_header(&buffer, Int32(buffer.count), &length, command, status, sequence)
        }
        guard packed == 0 else { throw WriteFailed() }
        try write(Array(buffer[..<Int(length)]))
    }

    private func write(deliverResponse status: UInt32, sequence: UInt32) throws {
        var buffer = [UInt8](repeating: 0, count: 64)
        var length: Int32 = 0
        let packed = SMPPCodec.lock.withLock { _ in
            issuerd_smpp_pack_deliver_sm_resp(&buffer, Int32(buffer.count), &length, status, sequence)
        }
        guard packed == 0 else { throw WriteFailed() }
        try write(Array(buffer[..<Int(length)]))
    }

    private func write(_ bytes: [UInt8]) throws {
        condition.lock()
        let descriptor = socket
        condition.unlock()
        guard descriptor >= 0 else { throw WriteFailed() }
        writeLock.lock()
        defer { writeLock.unlock() }
        guard SMPPSocket.writeAll(descriptor, bytes) else {
            shutdown(descriptor, Int32(SHUT_RDWR))
            throw WriteFailed()
        }
    }
}

/// libsmpp34 reports through process-wide variables (`smpp34_errno`, `smpp34_strerror`, which
/// also echoes the PDU, password included, so it is never logged): one call at a time.
enum SMPPCodec {
    static let lock = Lock(())
}
