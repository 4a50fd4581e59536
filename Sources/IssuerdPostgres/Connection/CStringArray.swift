/// Lends an array of Swift strings to C as a NULL-terminated `const char **`.
struct CStringArray {
    private var storage: [CChar] = []
    private var offsets: [Int] = []

    /// Copies the strings into one buffer, each NUL-terminated.
    init(_ strings: [String]) {
        for string in strings {
            offsets.append(storage.count)
            storage.append(contentsOf: string.utf8CString)
        }
    }

    /// Calls `body` with pointers that stay valid only for its duration.
    func withPointers<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        storage.withUnsafeBufferPointer { buffer in
            var pointers: [UnsafePointer<CChar>?] = offsets.map { offset in buffer.baseAddress.map { $0 + offset } }
            pointers.append(nil)
            return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
        }
    }
}
