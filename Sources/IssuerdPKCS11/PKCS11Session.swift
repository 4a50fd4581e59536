import CPKCS11
import Foundation

/// One borrowed session: the Cryptoki calls the key store makes, with every return value
/// checked and every buffer sized in Swift before the call.
struct PKCS11Session {
    let token: PKCS11Token
    let handle: CK_SESSION_HANDLE
    var functions: CK_FUNCTION_LIST { token.module.functions.pointee }

    func check(_ function: String, _ rv: CK_RV, file: String = #fileID, line: Int = #line) throws {
        try token.module.check(function, rv, file: file, line: line)
    }

    /// Up to `limit` objects matching the template.
    func findObjects(_ template: [PKCS11Attribute], limit: Int) throws -> [CK_OBJECT_HANDLE] {
        try PKCS11Attribute.withTemplate(template) { attributes, count in
            try check("C_FindObjectsInit", functions.C_FindObjectsInit!(handle, attributes, count))
        }
        var objects = [CK_OBJECT_HANDLE](repeating: 0, count: limit)
        var found: CK_ULONG = 0
        let rv = functions.C_FindObjects!(handle, &objects, CK_ULONG(limit), &found)
        _ = functions.C_FindObjectsFinal!(handle)
        try check("C_FindObjects", rv)
        return Array(objects.prefix(Int(found)))
    }

    /// One attribute's bytes, or nil when the object lacks it or keeps it secret
    /// (`CK_ULONG.max`).
    func attribute(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE) throws -> [UInt8]? {
        var attribute = CK_ATTRIBUTE(type: type, pValue: nil, ulValueLen: 0)
        var rv = functions.C_GetAttributeValue!(handle, object, &attribute, 1)
        if rv == CKR_ATTRIBUTE_TYPE_INVALID || rv == CKR_ATTRIBUTE_SENSITIVE { return nil }
        try check("C_GetAttributeValue", rv)
        guard attribute.ulValueLen != CK_ULONG.max, attribute.ulValueLen <= 16384 else { return nil }
        var value = [UInt8](repeating: 0, count: Int(attribute.ulValueLen))
        rv = value.withUnsafeMutableBytes { buffer in
            attribute.pValue = buffer.baseAddress
            return functions.C_GetAttributeValue!(handle, object, &attribute, 1)
        }
        try check("C_GetAttributeValue", rv)
        return Array(value.prefix(Int(attribute.ulValueLen)))
    }

    /// A `CK_BBOOL` attribute; nil when absent.
    func bool(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE) throws -> Bool? {
        try attribute(type, of: object).map { $0.first.map { $0 != 0 } ?? false }
    }

    /// A `CK_ULONG` attribute; nil when absent.
    func ulong(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE) throws -> UInt? {
        guard let bytes = try attribute(type, of: object), bytes.count == MemoryLayout<CK_ULONG>.size else {
            return nil
        }
        return UInt(bytes.withUnsafeBytes { $0.loadUnaligned(as: CK_ULONG.self) })
    }

    /// A UTF-8 attribute such as `CKA_LABEL`.
    func text(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE) throws -> String? {
        try attribute(type, of: object).map { String(decoding: $0, as: UTF8.self) }
    }

    func destroy(_ object: CK_OBJECT_HANDLE) {
        _ = functions.C_DestroyObject!(handle, object)
    }

    func generateKey(mechanism: CK_MECHANISM_TYPE, _ template: [PKCS11Attribute]) throws -> CK_OBJECT_HANDLE {
        var mech = CK_MECHANISM(mechanism: mechanism, pParameter: nil, ulParameterLen: 0)
        var key: CK_OBJECT_HANDLE = 0
        try PKCS11Attribute.withTemplate(template) { attributes, count in
            try check("C_GenerateKey", functions.C_GenerateKey!(handle, &mech, attributes, count, &key))
        }
        return key
    }

    func createObject(_ template: [PKCS11Attribute]) throws -> CK_OBJECT_HANDLE {
        var object: CK_OBJECT_HANDLE = 0
        try PKCS11Attribute.withTemplate(template) { attributes, count in
            try check("C_CreateObject", functions.C_CreateObject!(handle, attributes, count, &object))
        }
        return object
    }
}

/// One attribute of a template, holding its value until the template is lent to C.
enum PKCS11Attribute {
    case bool(CK_ATTRIBUTE_TYPE, Bool)
    case ulong(CK_ATTRIBUTE_TYPE, UInt)
    case bytes(CK_ATTRIBUTE_TYPE, [UInt8])
    /// Secret bytes lent by the caller (an imported data key); not copied.
    case secret(CK_ATTRIBUTE_TYPE, UnsafeRawBufferPointer)

    static func number(_ type: some BinaryInteger, _ value: some BinaryInteger) -> PKCS11Attribute {
        .ulong(CK_ATTRIBUTE_TYPE(type), UInt(value))
    }
    static func data(_ type: some BinaryInteger, _ value: [UInt8]) -> PKCS11Attribute {
        .bytes(CK_ATTRIBUTE_TYPE(type), value)
    }
    static func flag(_ type: some BinaryInteger, _ value: Bool) -> PKCS11Attribute {
        .bool(CK_ATTRIBUTE_TYPE(type), value)
    }

    /// Lays the values out in one buffer and lends a `CK_ATTRIBUTE` array pointing into it.
    static func withTemplate<R>(
        _ template: [PKCS11Attribute], _ body: (UnsafeMutablePointer<CK_ATTRIBUTE>, CK_ULONG) throws -> R
    ) rethrows -> R {
        var size = 0
        for attribute in template {
            switch attribute {
            case .bool: size += 1
            case .ulong: size += MemoryLayout<CK_ULONG>.stride
            case .bytes(_, let value): size += value.count
            case .secret: break
            }
            size = (size + 7) & ~7
        }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 8), alignment: 8)
        let attributes = UnsafeMutablePointer<CK_ATTRIBUTE>.allocate(capacity: max(template.count, 1))
        defer {
            storage.deallocate()
            attributes.deallocate()
        }
        var offset = 0
        for (index, attribute) in template.enumerated() {
            let start = storage.baseAddress! + offset
            switch attribute {
            case .bool(let type, let value):
                start.storeBytes(of: CK_BBOOL(value ? 1 : 0), as: CK_BBOOL.self)
                attributes[index] = CK_ATTRIBUTE(type: type, pValue: start, ulValueLen: 1)
                offset += 1
            case .ulong(let type, let value):
                start.storeBytes(of: CK_ULONG(value), as: CK_ULONG.self)
                attributes[index] = CK_ATTRIBUTE(
                    type: type, pValue: start, ulValueLen: CK_ULONG(MemoryLayout<CK_ULONG>.size))
                offset += MemoryLayout<CK_ULONG>.stride
            case .bytes(let type, let value):
                value.withUnsafeBytes {
                    if let base = $0.baseAddress { start.copyMemory(from: base, byteCount: $0.count) }
                }
                attributes[index] = CK_ATTRIBUTE(type: type, pValue: start, ulValueLen: CK_ULONG(value.count))
                offset += value.count
            case .secret(let type, let value):
                attributes[index] = CK_ATTRIBUTE(
                    type: type, pValue: UnsafeMutableRawPointer(mutating: value.baseAddress),
                    ulValueLen: CK_ULONG(value.count))
            }
            offset = (offset + 7) & ~7
        }
        return try body(attributes, CK_ULONG(template.count))
    }
}
