import CMicroHTTPD

/// The checks on a request head that libmicrohttpd 0.9.75 leaves undone, made once the head is
/// parsed and before any of the body is read: a request that fails one is answered 400
/// `malformed_request` and its connection closed, so nothing sent behind it is read as a request.
///
/// What libmicrohttpd checks itself: the request line's shape and a `Content-Length` that is not a
/// number. Its strict mode, which would refuse an HTTP/1.1 request without `Host`, is off: its
/// own 400 for a head it parsed carries its head twice (libmicrohttpd 0.9.75), so issuerd refuses
/// a missing `Host` here, and a space in the request target on arrival. What it lets
/// through, and a front proxy may read differently (request smuggling, RFC 9112 section 11.2):
/// two `Content-Length` fields (it uses the first), `Content-Length` beside `Transfer-Encoding` (it
/// uses the latter), a transfer coding other than `chunked` (it reads to the end of the
/// connection), control characters in a field, and a NUL inside a field line, at which it cuts
/// the value short without a word. Nothing here parses HTTP: every check reads the fields
/// libmicrohttpd parsed.
enum RequestFraming {
    /// The first slot value of a request whose target holds a space or a control character
    /// (``requestTargetCallback``): never a request state, never dereferenced.
    static var badTargetMarker: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 0x7A)! }

    /// One field as libmicrohttpd stored it: its name and value, where they lie in its read buffer.
    struct Field {
        var name: [UInt8]
        var value: [UInt8]
        /// Addresses of the name's first byte and of the byte just past the value.
        var nameStart: UInt
        var valueStart: UInt
        var valueEnd: UInt
    }

    /// The reason to refuse the request, or nil when its head is sound.
    ///
    /// - Parameters:
    ///   - connection: The connection whose head has just been parsed.
    ///   - method: libmicrohttpd's pointer to the method, the first byte of the head it parsed.
    ///   - version: The protocol version token, e.g. `HTTP/1.1`.
    static func problem(
        connection: OpaquePointer, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?
    ) -> String? {
        var fields: [Field] = []
        _ = withUnsafeMutablePointer(to: &fields) {
            MHD_get_connection_values_n(connection, .HEADER_KIND, collectFieldsCallback, $0)
        }
        let headStart = method.map { UInt(bitPattern: $0) } ?? 0
        let headSize = UInt(issuerd_mhd_request_header_size(connection))
        let isHTTP10 = version.map { String(cString: $0) } == "HTTP/1.0"
        return problem(fields: fields, headEnd: headStart + headSize, isHTTP10: isHTTP10)
    }

    /// The checks themselves, on fields already collected (tests call this directly).
    static func problem(fields: [Field], headEnd: UInt, isHTTP10: Bool) -> String? {
        if let problem = lineProblem(fields, headEnd: headEnd) { return problem }
        var lengths = 0
        var codings: [[UInt8]] = []
        var hosts = 0
        for field in fields {
            guard !field.name.isEmpty, field.name.allSatisfy(isTokenByte) else { return "a header name is malformed" }
            // RFC 9110 section 5.5: field values hold no control character but horizontal tab.
            guard !field.value.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
                return "a header value holds a control character"
            }
            if namesMatch(field.name, "content-length") { lengths += 1 }
            if namesMatch(field.name, "transfer-encoding") { codings.append(field.value) }
            if namesMatch(field.name, "host") { hosts += 1 }
        }
        // RFC 9112 sections 6.1 and 6.3: either framing alone, once; only `chunked`, not in HTTP/1.0.
        if lengths > 1 { return "more than one Content-Length" }
        if !codings.isEmpty {
            if lengths > 0 { return "both Content-Length and Transfer-Encoding" }
            if isHTTP10 { return "Transfer-Encoding in an HTTP/1.0 request" }
            // Exactly `chunked` (any case): libmicrohttpd reads any other value, trailing blanks
            // included, as a body running to the end of the connection.
            guard codings.count == 1, namesMatch(codings[0], "chunked") else {
                return "a transfer coding other than chunked"
            }
        }
        // RFC 9112 section 3.2: exactly one Host in HTTP/1.1.
        if hosts > 1 || (hosts == 0 && !isHTTP10) { return "no Host, or more than one" }
        return nil
    }

    /// Checks that the fields account for every byte of the head: between one field's value and
    /// the next field's name lie only the line's end (CR LF, or a bare LF), and after the last
    /// value only that and the empty line. libmicrohttpd parses the head in place and cuts each
    /// line at its first NUL, so bytes behind a NUL, or a folded continuation line (obs-fold,
    /// which RFC 9112 section 5.2 lets a server refuse), show here as bytes no field holds.
    private static func lineProblem(_ fields: [Field], headEnd: UInt) -> String? {
        for (index, field) in fields.enumerated() {
            let next = index + 1 < fields.count ? fields[index + 1].nameStart : headEnd
            let allowed: ClosedRange<UInt> = index + 1 < fields.count ? 1...2 : 2...4
            guard field.nameStart < field.valueStart, field.valueStart <= field.valueEnd, field.valueEnd < next,
                allowed.contains(next - field.valueEnd)
            else { return "a header line holds a NUL or continues on the next line" }
        }
        return nil
    }

    /// RFC 9110 section 5.6.2's `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    private static func namesMatch(_ bytes: some Collection<UInt8>, _ lowercase: String) -> Bool {
        bytes.elementsEqual(lowercase.utf8) { ($0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0) == $1 }
    }
}

/// Appends each header field libmicrohttpd iterates over, with its position, to a `[RequestFraming.Field]`.
let collectFieldsCallback: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
    guard let cls, let key else { return .YES }
    let fields = cls.assumingMemoryBound(to: [RequestFraming.Field].self)
    let name = UnsafeRawBufferPointer(start: key, count: keySize)
    let text = UnsafeRawBufferPointer(start: value, count: value == nil ? 0 : valueSize)
    let valueStart = value.map { UInt(bitPattern: $0) } ?? 0
    fields.pointee.append(
        RequestFraming.Field(
            name: Array(name), value: Array(text), nameStart: UInt(bitPattern: key), valueStart: valueStart,
            valueEnd: valueStart + UInt(text.count)))
    return .YES
}
