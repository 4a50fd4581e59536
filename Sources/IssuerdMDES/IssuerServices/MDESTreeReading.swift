import IssuerdCore

/// Reads an object of a parsed body as the synthesized `Decodable` conformances read it, for the
/// fast path of Authorize Service: a member that is absent (or `null`) where it is required, or of
/// another JSON type, throws ``Mismatch``, and the caller decodes the body with Foundation instead,
/// so that every refusal and its message stay ``MDESMessageDecoder``'s. Unknown members are
/// ignored, as the decoder ignores them.
struct MDESTreeReader {
    /// The body does not read as the type: decode it with Foundation to learn why.
    struct Mismatch: Error {}

    let members: [String: JSONValue]

    init(_ value: JSONValue?) throws {
        guard case .object(let members)? = value else { throw Mismatch() }
        self.members = members
    }

    func string(_ key: String) throws -> String { try required(optionalString(key)) }
    func strings(_ key: String) throws -> [String] { try required(optionalStrings(key)) }
    func object(_ key: String) throws -> MDESTreeReader { try required(optionalObject(key)) }

    private func required<Value>(_ value: Value?) throws -> Value {
        guard let value else { throw Mismatch() }
        return value
    }

    /// Absent or `null`: nil, as `decodeIfPresent` gives.
    func optionalString(_ key: String) throws -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw Mismatch()
        }
    }

    func optionalStrings(_ key: String) throws -> [String]? {
        switch members[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            return try items.map {
                guard case .string(let text) = $0 else { throw Mismatch() }
                return text
            }
        default: throw Mismatch()
        }
    }

    func optionalObject(_ key: String) throws -> MDESTreeReader? {
        switch members[key] {
        case nil, .null?: return nil
        case let value?: return try MDESTreeReader(value)
        }
    }
}

extension MDESAuthorizeServiceRequest {
    /// The body read in one pass over its bytes (``JSONValue/parse(bytes:)``) into the request,
    /// member for member as `MDESMessageDecoder.decode` would read it; nil wherever that decoder
    /// would fail or the parser declines, so the caller decodes with Foundation there and its
    /// errors stay the ones answered. (`MDESMessagesTests` compares the two readings.)
    public init?(jsonBytes bytes: [UInt8]) {
        guard let tree = bytes.withUnsafeBufferPointer({ JSONValue.parse(bytes: $0) }),
            let request = try? Self(reading: MDESTreeReader(tree))
        else { return nil }
        self = request
    }

    init(reading body: MDESTreeReader) throws {
        requestId = try body.string("requestId")
        services = try body.strings("services").map(MDESService.init(text:))
        fundingAccountInfo = try MDESFundingAccountInfo(reading: body.object("fundingAccountInfo"))
        correlationId = try body.string("correlationId")
        tokenType = MDESTokenType(text: try body.string("tokenType"))
        tokenRequestorId = try body.optionalString("tokenRequestorId")
        walletId = try body.optionalString("walletId")
        paymentAppInstanceId = try body.optionalString("paymentAppInstanceId")
        accountIdHash = try body.optionalString("accountIdHash")
        mobileNumberSuffix = try body.optionalString("mobileNumberSuffix")
        activeTokenCount = try body.optionalString("activeTokenCount")
        deviceInfo = try body.optionalObject("deviceInfo").map(MDESDeviceInfo.init(reading:))
        walletProviderDecisioningInfo = try body.optionalObject("walletProviderDecisioningInfo")
            .map(MDESWalletProviderDecisioningInfo.init(reading:))
        consumerFacingEntityName = try body.optionalString("consumerFacingEntityName")
        panSequenceNumber = try body.optionalString("panSequenceNumber")
    }
}

extension MDESFundingAccountInfo {
    init(reading info: MDESTreeReader) throws {
        tokenUniqueReference = try info.optionalString("tokenUniqueReference")
        panUniqueReference = try info.optionalString("panUniqueReference")
        let payload = try info.object("encryptedPayload")
        encryptedPayload = EncryptedPayload(
            encryptedData: try payload.string("encryptedData"), encryptedKey: try payload.string("encryptedKey"),
            publicKeyFingerprint: try payload.string("publicKeyFingerprint"),
            oaepHashingAlgorithm: try payload.optionalString("oaepHashingAlgorithm"),
            iv: try payload.optionalString("iv"))
    }
}

extension MDESDeviceInfo {
    init(reading info: MDESTreeReader) throws {
        deviceName = try info.optionalString("deviceName")
        serialNumber = try info.optionalString("serialNumber")
        formFactor = try info.optionalString("formFactor")
        isoDeviceType = try info.optionalString("isoDeviceType")
        osName = try info.optionalString("osName")
        osVersion = try info.optionalString("osVersion")
        imei = try info.optionalString("imei")
        msisdn = try info.optionalString("msisdn")
        paymentTypes = try info.optionalStrings("paymentTypes")
        storageTechnology = try info.optionalString("storageTechnology")
        cardCaptureTechnology = try info.optionalString("cardCaptureTechnology")
    }
}

extension MDESWalletProviderDecisioningInfo {
    init(reading info: MDESTreeReader) throws {
        recommendedDecision = try info.optionalString("recommendedDecision").map(MDESDecision.init(text:))
        recommendationStandardVersion = try info.optionalString("recommendationStandardVersion")
        deviceScore = try info.optionalString("deviceScore")
        accountScore = try info.optionalString("accountScore")
        phoneNumberScore = try info.optionalString("phoneNumberScore")
        accountLifeTime = try info.optionalString("accountLifeTime")
        recommendationReasons = try info.optionalStrings("recommendationReasons")
    }
}

/// A type ``OpenedPayload/readTree(as:)`` can read from a parsed plaintext as its `Decodable`
/// conformance would, throwing ``MDESTreeReader/Mismatch`` wherever that would fail.
protocol MDESTreeReadable {
    init(reading: MDESTreeReader) throws
}

extension MDESFundingAccountData: MDESTreeReadable {
    init(reading data: MDESTreeReader) throws {
        cardAccountData = try data.optionalObject("cardAccountData").map { card in
            CardAccountData(
                accountNumber: try card.string("accountNumber"), expiryMonth: try card.optionalString("expiryMonth"),
                expiryYear: try card.optionalString("expiryYear"), securityCode: try card.optionalString("securityCode")
            )
        }
        source = try data.optionalString("source").map(MDESFundingSource.init(text:))
        dataValidUntilTimestamp = try data.optionalString("dataValidUntilTimestamp")
        tokenData = try data.optionalObject("tokenData").map { token in
            TokenData(
                token: try token.string("token"), expiryMonth: try token.string("expiryMonth"),
                expiryYear: try token.string("expiryYear"), sequenceNumber: try token.optionalString("sequenceNumber"))
        }
        paymentAccountReference = try data.optionalString("paymentAccountReference")
        accountHolderData = try data.optionalObject("accountHolderData").map { holder in
            AccountHolderData(
                accountHolderName: try holder.optionalString("accountHolderName"),
                accountHolderEmailAddress: try holder.optionalString("accountHolderEmailAddress"),
                sourceIp: try holder.optionalString("sourceIp"),
                deviceLocation: try holder.optionalString("deviceLocation"),
                consumerIdentifier: try holder.optionalString("consumerIdentifier"))
        }
    }
}
