import IssuerdCrypto
import IssuerdHTTP
import IssuerdRisk
import IssuerdWire

/// A provisioning body that passed every bound: what PassKit handed the app, decoded.
///
/// Bounds (docs/openapi.yaml): 1 to 3 certificates of at most 8192 characters each; nonce and
/// signature at most 4096 characters and, once decoded, within ``PassPayload``'s byte ranges;
/// device strings short enough to store and log.
struct ProvisioningInput: Sendable {
    static let maximumCertificates = 3
    static let maximumCertificateLength = 8192
    static let maximumNonceLength = 4096

    var certificates: [String]
    var nonce: [UInt8]
    var nonceSignature: [UInt8]
    var scheme: EncryptionScheme
    var channel: RequestChannel
    var device: DeviceInfo?

    /// Validates a decoded body.
    ///
    /// - Parameter rsaEnabled: Whether `RSA_V2` may be asked for.
    /// - Throws: 400 `invalid_request` naming the field; 422 `encryption_scheme_unsupported`.
    init(_ body: ProvisioningRequest, rsaEnabled: Bool) throws {
        guard (1...Self.maximumCertificates).contains(body.certificates.count) else {
            throw APIErrors.invalidRequest(
                "certificates must hold 1 to \(Self.maximumCertificates) items", field: "certificates")
        }
        for (index, certificate) in body.certificates.enumerated()
        where certificate.isEmpty || certificate.utf8.count > Self.maximumCertificateLength {
            throw APIErrors.invalidRequest(
                "each certificate must be 1 to \(Self.maximumCertificateLength) characters",
                field: "certificates[\(index)]")
        }
        certificates = body.certificates
        nonce = try Self.binary(body.nonce, field: "nonce", bytes: PassPayload.nonceByteRange)
        nonceSignature = try Self.binary(
            body.nonceSignature, field: "nonceSignature", bytes: PassPayload.nonceSignatureByteRange)
        switch body.encryptionScheme ?? "ECC_V2" {
        case "ECC_V2": scheme = .eccV2
        case "RSA_V2":
            guard rsaEnabled else { throw DecisionErrors.schemeUnsupported("RSA_V2") }
            scheme = .rsaV2
        default:
            throw APIErrors.invalidRequest("encryptionScheme must be ECC_V2 or RSA_V2", field: "encryptionScheme")
        }
        switch body.channel ?? "in_app" {
        case "in_app": channel = .inApp
        case "wallet_extension": channel = .walletExtension
        default: throw APIErrors.invalidRequest("channel must be in_app or wallet_extension", field: "channel")
        }
        if let device = body.device { try Self.check(device) }
        device = body.device
    }

    /// Bounds every device string (shared with the TSP authorization).
    static func check(_ device: DeviceInfo) throws {
        let fields: [(String, String?, Int)] = [
            ("device.id", device.id, 128), ("device.type", device.type, 16), ("device.name", device.name, 128),
            ("device.model", device.model, 64), ("device.osVersion", device.osVersion, 32),
            ("device.locale", device.locale, 35),
            ("device.ipAddress", device.ipAddress, 45),
        ]
        for (name, value, limit) in fields {
            guard let value else { continue }
            guard (1...limit).contains(value.utf8.count),
                !value.containsControlCharacter
            else {
                throw APIErrors.invalidRequest("\(name) must be 1 to \(limit) printable characters", field: name)
            }
        }
        if let type = device.type, DeviceType(name: type) == nil {
            throw APIErrors.invalidRequest("device.type must be phone, watch, tablet or other", field: "device.type")
        }
    }

    private static func binary(_ text: String, field: String, bytes range: ClosedRange<Int>) throws -> [UInt8] {
        guard (1...maximumNonceLength).contains(text.utf8.count) else {
            throw APIErrors.invalidRequest("\(field) must be 1 to \(maximumNonceLength) characters", field: field)
        }
        guard let decoded = try? BinaryEncoding.decodeDetectingEncoding(text).bytes else {
            throw APIErrors.invalidRequest("\(field) must be hex, base64 or base64url", field: field)
        }
        guard range.contains(decoded.count) else {
            throw APIErrors.invalidRequest(
                "\(field) must decode to \(range.lowerBound) to \(range.upperBound) bytes", field: field)
        }
        return decoded
    }
}
