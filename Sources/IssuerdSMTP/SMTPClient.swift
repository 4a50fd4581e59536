import CCurl
import Foundation
import IssuerdCore

/// Submits e-mail through libcurl: STARTTLS required (unless configured off for loopback), the
/// relay's certificate and name checked, AUTH when a user is configured.
///
/// Synchronous, for the outbox dispatcher's thread. Each submission is its own session; what
/// the relay answered is collected from libcurl's protocol trace, so a refusal names the
/// relay's own reply.
package struct SMTPClient: Sendable {
    package let settings: SMTPSettings

    package init(settings: SMTPSettings) {
        self.settings = settings
    }

    /// A relay's acceptance of one message.
    package struct Accepted: Sendable, Equatable {
        /// The relay's queue id when its final reply names one (`250 2.0.0 Ok: queued as 4Xk…`),
        /// otherwise nil.
        package var queueID: String?
        /// The relay's final reply line.
        package var reply: String
    }

    /// Why a submission failed.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package enum Kind: Sendable, Equatable {
            /// A 4xx reply: try again later.
            case transient
            /// A 5xx reply to this message: trying again cannot help.
            case permanent
            /// No reply to judge by: the relay unreachable, TLS refused or failed, a timeout,
            /// AUTH refused (the configuration's fault, not the message's).
            case transport
        }

        package var kind: Kind
        /// The SMTP reply code, 0 when there was none.
        package var code: Int
        /// The relay's reply (or libcurl's description of the failure).
        package var reply: String

        package var description: String { code == 0 ? reply : "SMTP \(code): \(reply)" }
    }

    /// Submits `message` to `recipient`.
    ///
    /// - Throws: ``Failure``.
    package func send(_ message: [UInt8], from sender: String, to recipient: String) throws(Failure) -> Accepted {
        guard curlReady else { throw Failure(kind: .transport, code: 0, reply: "libcurl did not initialise") }
        // Everything libcurl points into lives until its handle is cleaned up (declared first,
        // so released last).
        let session = Session(body: message)
        let context = Unmanaged.passRetained(session)
        defer { context.release() }
        let recipients = curl_slist_append(nil, "<\(recipient)>")
        defer { curl_slist_free_all(recipients) }
        let errors = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errors.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errors.deallocate() }
        guard let curl = curl_easy_init() else {
            throw Failure(kind: .transport, code: 0, reply: "libcurl could not make a handle")
        }
        defer { curl_easy_cleanup(curl) }
        let result: CURLcode = {
            var set = CURLE_OK
            func option(_ code: CURLcode) { if set == CURLE_OK { set = code } }
            option(issuerd_curl_setopt_string(curl, CURLOPT_URL, settings.url))
            option(issuerd_curl_setopt_long(curl, CURLOPT_NOSIGNAL, 1))
            option(issuerd_curl_setopt_long(curl, CURLOPT_TIMEOUT_MS, Int(settings.timeout.timeInterval * 1000)))
            option(
                issuerd_curl_setopt_long(
                    curl, CURLOPT_USE_SSL,
                    Int(settings.requireTLS ? CURLUSESSL_ALL.rawValue : CURLUSESSL_NONE.rawValue)))
            option(issuerd_curl_setopt_long(curl, CURLOPT_SSL_VERIFYPEER, 1))
            option(issuerd_curl_setopt_long(curl, CURLOPT_SSL_VERIFYHOST, 2))
            if let caFile = settings.caFile { option(issuerd_curl_setopt_string(curl, CURLOPT_CAINFO, caFile)) }
            if let user = settings.user {
                option(issuerd_curl_setopt_string(curl, CURLOPT_USERNAME, user))
                option(issuerd_curl_setopt_string(curl, CURLOPT_PASSWORD, settings.password?.unsafeValue ?? ""))
            }
            option(issuerd_curl_setopt_string(curl, CURLOPT_MAIL_FROM, "<\(sender)>"))
            option(issuerd_curl_setopt_list(curl, CURLOPT_MAIL_RCPT, recipients))
            option(issuerd_curl_setopt_long(curl, CURLOPT_UPLOAD, 1))
            option(issuerd_curl_setopt_read_function(curl, smtpReadCallback))
            option(issuerd_curl_setopt_pointer(curl, CURLOPT_READDATA, context.toOpaque()))
            // The protocol trace is read for the relay's replies only (CURLINFO_HEADER_IN);
            // what issuerd sends, AUTH included, is never looked at or kept.
            option(issuerd_curl_setopt_long(curl, CURLOPT_VERBOSE, 1))
            option(issuerd_curl_setopt_debug_function(curl, smtpTraceCallback))
            option(issuerd_curl_setopt_pointer(curl, CURLOPT_DEBUGDATA, context.toOpaque()))
            option(issuerd_curl_setopt_pointer(curl, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errors)))
            guard set == CURLE_OK else { return set }
            return curl_easy_perform(curl)
        }()
        var code = 0
        _ = issuerd_curl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &code)
        let replies = session.replies
        if result == CURLE_OK {
            let reply = replies.last ?? ""
            return Accepted(queueID: Self.queueID(in: reply), reply: reply)
        }
        // On a refusal libcurl has already said QUIT: the reply to quote is the last one with
        // the refusal's code.
        let refusal = replies.last { $0.hasPrefix("\(code)") }
        let described =
            errors.pointee == 0
            ? String(cString: curl_easy_strerror(result)) : String(cString: errors)
        // AUTH refused is the configuration's fault, not the message's: retried, not dead.
        if result == CURLE_LOGIN_DENIED || result == CURLE_USE_SSL_FAILED || result == CURLE_OPERATION_TIMEDOUT {
            throw Failure(kind: .transport, code: code, reply: refusal ?? described)
        }
        switch code {
        case 400..<500: throw Failure(kind: .transient, code: code, reply: refusal ?? described)
        case 500..<600: throw Failure(kind: .permanent, code: code, reply: refusal ?? described)
        default: throw Failure(kind: .transport, code: 0, reply: described)
        }
    }

    /// The queue id in a final reply such as `250 2.0.0 Ok: queued as 4XkPzT1Rz2z9v` (Postfix)
    /// or `250 OK id=1rYp2Q-000Abc-3x` (Exim); nil when it names none.
    package static func queueID(in reply: String) -> String? {
        for marker in ["queued as ", "id="] {
            if let range = reply.range(of: marker) {
                let id = reply[range.upperBound...].prefix { !$0.isWhitespace && $0 != ">" && $0 != "," }
                if !id.isEmpty, id.count <= 64 { return String(id) }
            }
        }
        return nil
    }
}

/// libcurl once per process, before any handle (its global init is not thread-safe).
private let curlReady: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

/// One submission's state, shared with libcurl's callbacks through `Unmanaged`.
private final class Session: Sendable {
    struct Trace {
        /// Bytes received after the last line break.
        var pending: [UInt8] = []
        /// Lines of a multi-line reply (`250-…`) not yet ended.
        var continuing: [String] = []
        /// Complete replies, in order; a multi-line reply joined by spaces.
        var replies: [String] = []
    }

    let body: [UInt8]
    let offset = Lock(0)
    let trace = Lock(Trace())

    init(body: [UInt8]) { self.body = body }

    var replies: [String] { trace.withLock { $0.replies } }

    func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        offset.withLock { offset in
            let count = min(capacity, body.count - offset)
            guard count > 0 else { return 0 }
            body.withUnsafeBufferPointer { source in
                UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + offset, byteCount: count)
            }
            offset += count
            return count
        }
    }

    /// Bytes the relay sent: `250-…` continues a reply, `250 …` ends it. (Bytes, not `String`:
    /// Swift sees CRLF as one character.)
    func received(_ bytes: UnsafeRawBufferPointer) {
        trace.withLock { trace in
            trace.pending += bytes
            while let newline = trace.pending.firstIndex(of: 0x0A) {
                let line = String(decoding: trace.pending[..<newline], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                trace.pending.removeSubrange(...newline)
                guard !line.isEmpty else { continue }
                let lineBytes = Array(line.utf8)
                if lineBytes.count > 3 && lineBytes[3] == 0x2D {
                    trace.continuing.append(line)
                } else {
                    trace.replies.append((trace.continuing + [line]).joined(separator: " "))
                    trace.continuing = []
                }
            }
            if trace.replies.count > 64 { trace.replies.removeFirst(trace.replies.count - 64) }
        }
    }
}

private let smtpReadCallback: curl_read_callback = { buffer, size, count, context in
    guard let buffer, let context else { return 0 }
    return Unmanaged<Session>.fromOpaque(context).takeUnretainedValue().read(into: buffer, capacity: size * count)
}

private let smtpTraceCallback: curl_debug_callback = { _, type, data, size, context in
    guard type == CURLINFO_HEADER_IN, let data, let context else { return 0 }
    Unmanaged<Session>.fromOpaque(context).takeUnretainedValue().received(
        UnsafeRawBufferPointer(start: UnsafeRawPointer(data), count: size))
    return 0
}
