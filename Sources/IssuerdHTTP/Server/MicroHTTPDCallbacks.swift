import CMicroHTTPD
import Glibc

// libmicrohttpd's callbacks. They capture nothing (C function pointers cannot), and reach the
// server through the context pointer registered with the daemon.

/// The access handler: called for the headers, for each body chunk, and at the end.
let accessHandlerCallback: MHD_AccessHandlerCallback = {
    cls, connection, url, method, version, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let uploadDataSize, let conCls else { return .NO }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    return context.handle(
        connection: connection, url: url, method: method, version: version, uploadData: uploadData,
        uploadSize: uploadDataSize, slot: conCls)
}

/// Sees each request target as received, before libmicrohttpd unescapes it (without strict mode
/// it takes `GET /a b HTTP/1.1` as the target `/a b`): a target holding a space or a control
/// character leaves ``RequestFraming/badTargetMarker`` as the request's first slot value, which
/// the access handler answers with 400 (RFC 9112 section 3.2).
let requestTargetCallback:
    @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) ->
        UnsafeMutableRawPointer? = { _, uri, _ in
            guard var byte = uri else { return nil }
            while byte.pointee != 0 {
                let value = UInt8(bitPattern: byte.pointee)
                if value <= 0x20 || value == 0x7F { return RequestFraming.badTargetMarker }
                byte += 1
            }
            return nil
        }

/// Fires once per request after its response was sent or the request was aborted; frees its state.
let requestCompletedCallback: MHD_RequestCompletedCallback = { cls, connection, conCls, termination in
    guard let cls, let conCls else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.complete(connection: connection, slot: conCls, termination: termination)
}

/// Fires when a connection is accepted and when it is closed (before its socket is), on the
/// connection's own thread; the connection's deadline id travels in its socket context.
let connectionNotifyCallback: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
    guard let cls, let connection, let socketContext else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    switch code {
    case .CONNECTION_NOTIFY_STARTED:
        let id = context.deadlines.opened(descriptor: issuerd_mhd_connection_fd(connection))
        socketContext.pointee = UnsafeMutableRawPointer(bitPattern: id)
    default:
        if let id = socketContext.pointee.map({ Int(bitPattern: $0) }) { context.deadlines.closed(id) }
        socketContext.pointee = nil
    }
}

/// Reads a streamed body (``StreamedBody``) for libmicrohttpd, on the connection's network thread.
let streamReaderCallback: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer else { return -2 }
    return Unmanaged<StreamedResponse>.fromOpaque(cls).takeUnretainedValue().body.read(into: buffer, max: max)
}

/// libmicrohttpd freed a streamed response: nobody reads the rest of its body.
let streamFreeCallback: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<StreamedResponse>.fromOpaque(cls).takeRetainedValue().freed()
}

/// Receives libmicrohttpd's own diagnostics (printf-style) and logs them.
let daemonLogCallback: MHD_LogCallback = { cls, format, arguments in
    guard let cls, let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    _ = buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, arguments) }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.libraryMessage(text.trimmingSuffix(while: { $0 == "\n" }))
}

/// Appends each key/value pair libmicrohttpd iterates over to a `[(String, String)]`.
let collectPairsCallback: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let pairs = cls.assumingMemoryBound(to: [(String, String)].self)
    pairs.pointee.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}

extension String {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var copy = self
        while let last = copy.last, predicate(last) { copy.removeLast() }
        return copy
    }
}
