import CMicroHTTPD
import Glibc

// libmicrohttpd's callbacks. They capture nothing (C function pointers cannot), and reach the
// server through the context pointer registered with the daemon.

/// The access handler: called for the headers, for each body chunk, and at the end.
let accessHandlerCallback: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let uploadDataSize, let conCls else { return .NO }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    return context.handle(
        connection: connection, url: url, method: method, uploadData: uploadData, uploadSize: uploadDataSize,
        slot: conCls)
}

/// Fires once per request after its response was sent or the request was aborted; frees its state.
let requestCompletedCallback: MHD_RequestCompletedCallback = { cls, _, conCls, termination in
    guard let cls, let conCls else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.complete(slot: conCls, termination: termination)
}

/// Receives libmicrohttpd's own diagnostics (printf-style) and logs them.
let daemonLogCallback: MHD_LogCallback = { cls, format, arguments in
    guard let cls, let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    _ = buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, arguments) }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.logger.warning("libmicrohttpd: " + text.trimmingSuffix(while: { $0 == "\n" }))
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
