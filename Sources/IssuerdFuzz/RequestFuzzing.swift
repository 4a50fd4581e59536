import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdHTTP
import IssuerdImport
import IssuerdWire

/// The request bodies' fast paths: each maps a parsed body to its request without
/// `JSONDecoder`, and must accept nothing `JSONDecoder` (the API's ``JSONCoding/decoder``)
/// refuses and read everything it accepts as `JSONDecoder` does, or the same body would be a
/// different request depending on the path it took.
enum RequestFuzzing {
    /// `POST /v1/cards/{cardId}/apple-pay/provision` (``HTTPRequest/decodeJSON(_:fast:)``).
    static func provisioning(_ bytes: [UInt8]) throws(FuzzFailure) {
        try fastPath(bytes, ProvisioningRequest.self, ProvisioningRequest.init(json:))
    }

    /// `POST /v1/tsp/tokenization/authorize`.
    static func tokenization(_ bytes: [UInt8]) throws(FuzzFailure) {
        try fastPath(bytes, TokenizationAuthorizeRequest.self, TokenizationAuthorizeRequest.init(json:))
    }

    /// One line of `issuerd cards import`: the short way or the API's decoder.
    static func cardImportLine(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let fast = CardImport.LineDecoder.decode(bytes) else { return }
        try sameAsDecoder(fast, bytes)
    }

    private static func fastPath<T: Decodable & Equatable>(
        _ bytes: [UInt8], _ type: T.Type, _ fast: (JSONValue) -> T?
    ) throws(FuzzFailure) {
        guard let tree = bytes.withUnsafeBufferPointer({ JSONValue.parse(bytes: $0) }), let value = fast(tree) else {
            return
        }
        try sameAsDecoder(value, bytes)
    }

    private static func sameAsDecoder<T: Decodable & Equatable>(_ fast: T, _ bytes: [UInt8]) throws(FuzzFailure) {
        let reference: T
        do {
            reference = try JSONCoding.decoder.decode(T.self, from: Data(bytes))
        } catch {
            throw FuzzFailure("the fast path accepts a \(T.self) that JSONDecoder refuses: \(error)")
        }
        guard fast == reference else {
            throw FuzzFailure("the fast path reads\n\(fields(fast))JSONDecoder\n\(fields(reference))")
        }
    }

    /// Every field, the card number too (`description` masks it; these are fuzz inputs).
    private static func fields(_ value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }
}
