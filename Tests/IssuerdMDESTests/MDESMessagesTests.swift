import Foundation
import IssuerdCore
import Testing

@testable import IssuerdMDES

/// The seven operations' bodies as Mastercard writes them (the example values of
/// Mastercard's "MDES Pre-Digitization API"): decoded, bounded, unknown members and enum values tolerated.
@Suite struct MDESMessagesTests {
    static let envelope = """
        {"encryptedData":"00112233445566778899aabbccddeeff","encryptedKey":"00112233445566778899aabbccddeeff",\
        "publicKeyFingerprint":"4c4ead5927f0df8117f178eea9308daa58e27c2b","oaepHashingAlgorithm":"SHA512",\
        "iv":"00112233445566778899AABBCCDDEEFF"}
        """

    static let authorize = """
        {"requestId":"123456","services":["DIGITIZATION"],
         "fundingAccountInfo":{"panUniqueReference":"FWSPMC000000000159f71f703d2141efaf04dd26803f922b",
           "tokenUniqueReference":"DWSPMC000000000fcb2f4136b2f4136a0532d2f4136a0532","encryptedPayload":\(envelope)},
         "correlationId":"D98765432104","tokenType":"CLOUD","tokenRequestorId":"50110030273","walletId":"103",
         "paymentAppInstanceId":"123456789","accountIdHash":"A1B2C3D4E5F6","mobileNumberSuffix":"5678",
         "activeTokenCount":"2",
         "deviceInfo":{"deviceName":"My Phone","serialNumber":"xxxx0001","formFactor":"PHONE","isoDeviceType":"1",
           "osName":"ANDROID","osVersion":"14","imei":"123456789012345","msisdn":"821012345678",
           "paymentTypes":["NFC","DSRP"],"storageTechnology":"TEE","cardCaptureTechnology":"CAMERA"},
         "walletProviderDecisioningInfo":{"recommendedDecision":"REQUIRE_ADDITIONAL_AUTHENTICATION",
           "recommendationStandardVersion":"2","deviceScore":"2","accountScore":"4","phoneNumberScore":"3",
           "accountLifeTime":"5","recommendationReasons":["ACCOUNT_TOO_NEW"]},
         "consumerFacingEntityName":"Hana Card"}
        """

    @Test func authorizeServiceDecodesTheSpecExample() throws {
        let request = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(Self.authorize.utf8))
        try request.validate()
        #expect(request.services == [.digitization])
        #expect(request.tokenType == .cloud)
        #expect(request.correlationId == "D98765432104")
        #expect(request.fundingAccountInfo.encryptedPayload.oaepHashingAlgorithm == "SHA512")
        #expect(request.walletProviderDecisioningInfo?.recommendedDecision == .requireAdditionalAuthentication)
        #expect(request.deviceInfo?.formFactor == "PHONE")
        #expect(request.deviceInfo?.paymentTypes == ["NFC", "DSRP"])
        #expect(MDESWalletProviderDecisioningInfo.score(request.walletProviderDecisioningInfo?.accountScore) == 4)
    }

    @Test func unknownMembersAndEnumValuesAreKept() throws {
        let text = Self.authorize
            .replacingOccurrences(
                of: #""tokenType":"CLOUD""#, with: #""tokenType":"HOLOGRAM","securityServicesInsights":{"score":7}"#
            )
            .replacingOccurrences(of: #"["DIGITIZATION"]"#, with: #"["DIGITIZATION","TELEPORTATION"]"#)
            .replacingOccurrences(
                of: #""recommendedDecision":"REQUIRE_ADDITIONAL_AUTHENTICATION""#,
                with: #""recommendedDecision":"MAYBE","newMember":[1,2]"#)
        let request = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(text.utf8))
        try request.validate()
        #expect(request.tokenType == .unknown("HOLOGRAM"))
        #expect(!request.tokenType.isKnown)
        #expect(request.services == [.digitization, .unknown("TELEPORTATION")])
        #expect(request.walletProviderDecisioningInfo?.recommendedDecision == .unknown("MAYBE"))
        // An unknown value is written back as it came.
        let encoded = String(decoding: MDESMessageDecoder.encode(request.tokenType), as: UTF8.self)
        #expect(encoded == #""HOLOGRAM""#)
        #expect(MDESDecision(text: "APPROVED") == .approved)
    }

    @Test func boundsAndRequiredFieldsNameTheField() throws {
        let tooLong = Self.authorize.replacingOccurrences(of: "D98765432104", with: "D98765432104XYZ")
        let request = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(tooLong.utf8))
        #expect(throws: MDESRequestError.invalidField("correlationId", "must be 1 to 14 characters")) {
            try request.validate()
        }
        // Fourteen characters, each with a combining accent: 28 scalars, over the bound.
        let combining = Self.authorize.replacingOccurrences(
            of: "D98765432104", with: String(repeating: "e\u{301}", count: 14))
        let accented = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(combining.utf8))
        #expect(throws: MDESRequestError.invalidField("correlationId", "must be 1 to 14 characters")) {
            try accented.validate()
        }
        let missing = Self.authorize.replacingOccurrences(of: #""correlationId":"D98765432104","#, with: "")
        #expect(throws: MDESRequestError.invalidField("correlationId", "is required")) {
            _ = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(missing.utf8))
        }
        let wrongType = Self.authorize.replacingOccurrences(
            of: #""activeTokenCount":"2""#, with: #""activeTokenCount":2"#)
        #expect(throws: MDESRequestError.invalidField("activeTokenCount", "has the wrong JSON type")) {
            _ = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(wrongType.utf8))
        }
        let score = Self.authorize.replacingOccurrences(of: #""deviceScore":"2""#, with: #""deviceScore":"9""#)
        let scored = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(score.utf8))
        #expect(throws: MDESRequestError.invalidField("walletProviderDecisioningInfo.deviceScore", "must be 1 to 5")) {
            try scored.validate()
        }
        #expect(throws: MDESRequestError.invalidJSON()) {
            _ = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data("{not json".utf8))
        }
        let requestor = Self.authorize.replacingOccurrences(of: "50110030273", with: "5011003027")
        let short = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(requestor.utf8))
        #expect(throws: MDESRequestError.invalidField("tokenRequestorId", "must be 11 characters")) {
            try short.validate()
        }
    }

    @Test func theOtherOperationsDecode() throws {
        let ram = try MDESMessageDecoder.decode(
            MDESRequestActivationMethodsRequest.self,
            from: Data(
                """
                {"requestId":"r2","services":["DIGITIZATION"],"fundingAccountInfo":{"encryptedPayload":\(Self.envelope)},
                 "correlationId":"D98765432104","tokenType":"EMBEDDED_SE","reasonCodes":["ADD_CARD","SOMETHING_NEW"]}
                """.utf8))
        try ram.validate()
        #expect(ram.tokenType == .embeddedSE)

        let dac = try MDESMessageDecoder.decode(
            MDESDeliverActivationCodeRequest.self,
            from: Data(
                """
                {"requestId":"r3","tokenUniqueReference":"DWSPMC000000000fcb2f4136b2f4136a0532d2f4136a0532",
                 "correlationId":"D98765432104","activationMethod":{"type":"TEXT_TO_CARDHOLDER_NUMBER","value":"(***)***-1234"},
                 "activationCode":"123456","expirationDateTime":"2026-12-04T22:30:00.000Z"}
                """.utf8))
        try dac.validate()
        #expect(dac.activationMethod.type == .textToCardholderNumber)
        var half = dac
        half.expirationDateTime = nil
        #expect(throws: MDESRequestError.self) { try half.validate() }

        let nsa = try MDESMessageDecoder.decode(
            MDESNotifyServiceActivatedRequest.self,
            from: Data(
                """
                {"requestId":"r4","services":["DIGITIZATION"],"fundingAccountInfo":{"tokenUniqueReference":"DWSPMC0001",
                 "encryptedPayload":\(Self.envelope)},"correlationId":"D98765432104","tokenRequestorId":"50110030273",
                 "tokenType":"CLOUD","accountPanSuffix":"2346","serviceRequestDateTime":"2026-12-04T22:00:00Z",
                 "decision":"APPROVED","decisionMadeBy":"RULES","tokenActivatedDateTime":"2026-12-04T22:01:00+09:00",
                 "numberOfActivationAttempts":1,"numberOfActiveTokens":3,"tokenAssuranceLevel":2}
                """.utf8))
        try nsa.validate()
        #expect(nsa.decision == .approved)

        let ntu = try MDESMessageDecoder.decode(
            MDESNotifyTokenUpdatedRequest.self,
            from: Data(
                """
                {"requestId":"r5","reasonCode":"STATUS_UPDATE","tokens":[{"tokenUniqueReference":"DWSPMC0001",
                 "status":"SUSPENDED","suspendedBy":["ISSUER","GALACTIC_EMPIRE"]}]}
                """.utf8))
        try ntu.validate()
        #expect(ntu.tokens[0].suspendedBy == [.issuer, .unknown("GALACTIC_EMPIRE")])
        var noStatus = ntu
        noStatus.tokens[0].status = nil
        #expect(throws: MDESRequestError.invalidField("tokens.status", "is required for STATUS_UPDATE")) {
            try noStatus.validate()
        }

        let vac = try MDESMessageDecoder.decode(
            MDESValidateActivationCodeRequest.self,
            from: Data(
                #"{"requestId":"r6","tokenUniqueReference":"DWSPMC0001","correlationId":"D98765432104","activationCode":"123456"}"#
                    .utf8))
        try vac.validate()

        for events in [
            #"{"eventName":"REPLENISH","walletAtcStatus":{"unusedDiscarded":["1","2"]}}"#,
            #"[{"eventName":"REPLENISH","systemAtcStatus":{"atcNotFound":["7"]}},{"eventName":"OTHER"}]"#,
        ] {
            let nse = try MDESMessageDecoder.decode(
                MDESNotifySuspiciousEventsRequest.self,
                from: Data(
                    #"{"requestId":"r7","tokenUniqueReference":"DWSPMC0001","status":"ACTIVE","events":\#(events)}"#
                        .utf8))
            try nse.validate()
            #expect(nse.events.first?.eventName == "REPLENISH")
        }
    }

    /// Authorize Service's one-pass reading gives what Foundation's decoder gives, or nothing
    /// (then the decoder answers): over the example, its unknown values and members, and every
    /// member of it (nested ones too) removed, `null`, or of each other JSON type.
    @Test func authorizeOnePassReadingMatchesTheDecoder() throws {
        func decoded(_ text: String) -> String? {
            (try? MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(text.utf8)))
                .map { String(decoding: MDESMessageDecoder.encode($0), as: UTF8.self) }
        }
        func read(_ text: String) -> String? {
            MDESAuthorizeServiceRequest(jsonBytes: Array(text.utf8))
                .map { String(decoding: MDESMessageDecoder.encode($0), as: UTF8.self) }
        }
        let example = Self.authorize.replacingOccurrences(of: "\n", with: "")
        let unknowns = example.replacingOccurrences(
            of: #""tokenType":"CLOUD""#, with: #""tokenType":"HOLOGRAM","extra":{"a":[1,{"b":null}]}"#)
        let escaped = example.replacingOccurrences(of: #""walletId":"103""#, with: #""walletId":"1\"0\u00e9\/3""#)
        for text in [example, unknowns, escaped] {
            #expect(read(text) != nil && read(text) == decoded(text), "\(text)")
        }
        // Every member at every depth, changed in turn.
        let tree = try #require(Array(example.utf8).withUnsafeBufferPointer { JSONValue.parse(bytes: $0) })
        let others: [JSONValue] = [
            .null, .int(7), .string("x"), .array([]), .array([.int(1)]), .object([:]), .bool(true),
        ]
        var (same, declined, accepted) = (0, 0, 0)
        for variant in Self.memberVariants(of: tree, others: others) {
            let text = variant.jsonText
            let fast = read(text)
            let slow = decoded(text)
            if let fast {
                #expect(fast == slow, "\(text)")
                same += 1
            } else {
                declined += 1
            }
            if slow != nil { accepted += 1 }
        }
        // The one-pass reading takes every body the decoder takes here, and declines the rest.
        #expect(same == accepted)
        #expect(declined >= 200 && same >= 90, "same \(same), declined \(declined)")
    }

    /// An attempt's facts keep the request's identifiers, device and wallet signals, never card
    /// data, and leave out what the request left out.
    @Test func authorizeFactsKeepSignalsNotCardData() throws {
        let request = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: Data(Self.authorize.utf8))
        let facts = JSONValue.object(request.facts(lastFour: "2346")).jsonText
        #expect(
            facts == """
                {"accountIdHash":"A1B2C3D4E5F6","activeTokenCount":"2","channel":"mdes","consumerFacingEntityName":"Hana Card",\
                "correlationId":"D98765432104","device":{"deviceName":"My Phone","formFactor":"PHONE","osName":"ANDROID",\
                "osVersion":"14","storageTechnology":"TEE"},"lastFour":"2346","paymentAppInstanceId":"123456789",\
                "tokenType":"CLOUD","wallet":{"accountLifeTime":"5","accountScore":"4","deviceScore":"2",\
                "phoneNumberScore":"3","recommendationReasons":["ACCOUNT_TOO_NEW"],\
                "recommendedDecision":"REQUIRE_ADDITIONAL_AUTHENTICATION"},"walletId":"103"}
                """)
        var bare = request
        (bare.walletId, bare.accountIdHash, bare.activeTokenCount) = (nil, nil, nil)
        (bare.paymentAppInstanceId, bare.consumerFacingEntityName) = (nil, nil)
        bare.deviceInfo = MDESDeviceInfo()
        bare.walletProviderDecisioningInfo = nil
        #expect(
            JSONValue.object(bare.facts(lastFour: "2346")).jsonText
                == #"{"channel":"mdes","correlationId":"D98765432104","device":{},"lastFour":"2346","tokenType":"CLOUD"}"#
        )
    }

    @Test func answersCarryResponseIdAndTheWireNames() throws {
        let answer = MDESAuthorizeServiceResponse(
            responseId: MDESResponseID.responseId(for: "123456"), decision: .requireAdditionalAuthentication,
            services: [.digitization],
            activationMethods: [MDESActivationMethod(type: .textToCardholderNumber, value: "010-****-5678")],
            cvcResponse: .notProcessed)
        let text = String(decoding: MDESMessageDecoder.encode(answer), as: UTF8.self)
        #expect(
            text
                == #"{"activationMethods":[{"type":"TEXT_TO_CARDHOLDER_NUMBER","value":"010-****-5678"}],"cvcResponse":"NOT_PROCESSED","decision":"REQUIRE_ADDITIONAL_AUTHENTICATION","responseId":"123456","services":["DIGITIZATION"]}"#
        )
        // The tree Authorize Service builds its body from writes Foundation's encoder's bytes, for
        // every member present or absent, an unknown value, an envelope, and text needing escapes.
        var full = answer
        full.services = [.digitization, .unknown("TELEPORTATION")]
        full.encryptedPayload = try JSONDecoder().decode(EncryptedPayload.self, from: Data(Self.envelope.utf8))
        var escaped = answer
        escaped.responseId = "a\"b\\c/d é\u{7F}"
        escaped.activationMethods = [MDESActivationMethod(type: .unknown("NEW_METHOD"), value: "x/y")]
        escaped.cvcResponse = nil
        for each in [
            answer, full, escaped, MDESAuthorizeServiceResponse(responseId: "1", decision: .declined, services: []),
        ] {
            var bytes: [UInt8] = []
            each.tree.appendJSON(to: &bytes, sortedKeys: true)
            #expect(bytes == Array(MDESMessageDecoder.encode(each)), "\(each)")
        }
        let error = MDESErrorsResponse(responseId: "123456", error: .invalidJSON())
        #expect(
            String(decoding: MDESMessageDecoder.encode(error), as: UTF8.self)
                == #"{"errorCode":"INVALID_JSON","errorDescription":"Invalid JSON","responseId":"123456"}"#)
    }

    @Test func trustedProxiesMatchAddressesNetworksAndMappedIPv4() throws {
        let proxies = TrustedProxies.loopback
        #expect(proxies.contains("127.0.0.1"))
        #expect(proxies.contains("::1"))
        #expect(proxies.contains("::ffff:127.0.0.1"))
        #expect(!proxies.contains("127.0.0.2"))
        #expect(!proxies.contains(nil))
        #expect(!proxies.contains("not an address"))
        let networks = try TrustedProxies("10.0.0.0/8, fd00::/8")
        #expect(networks.contains("10.20.30.40"))
        #expect(!networks.contains("11.0.0.1"))
        #expect(networks.contains("fd12::1"))
        #expect(networks.description == "10.0.0.0/8,fd00::/8")
        #expect(throws: MDESKeyError.self) { try TrustedProxies("10.0.0.0/33") }
        #expect(throws: MDESKeyError.self) { try TrustedProxies("example.com") }
    }
}

extension MDESMessagesTests {
    /// `value` with each member, at every depth, in turn removed or replaced by each of `others`.
    static func memberVariants(of value: JSONValue, others: [JSONValue]) -> [JSONValue] {
        guard case .object(let members) = value else { return [] }
        var out: [JSONValue] = []
        for (key, member) in members {
            var removed = members
            removed[key] = nil
            out.append(.object(removed))
            for other in others {
                var changed = members
                changed[key] = other
                out.append(.object(changed))
            }
            for inner in memberVariants(of: member, others: others) {
                var changed = members
                changed[key] = inner
                out.append(.object(changed))
            }
        }
        return out
    }

    static let fundingAccountData = """
        {"cardAccountData":{"accountNumber":"5123456789012345","expiryMonth":"09","expiryYear":"31","securityCode":"123"},\
        "source":"ACCOUNT_ON_FILE","dataValidUntilTimestamp":"2030-01-01T00:00:00.000Z",\
        "tokenData":{"token":"5345678901234521","expiryMonth":"09","expiryYear":"35","sequenceNumber":"01"},\
        "paymentAccountReference":"500181d9f8e0629211e3949a08002",\
        "accountHolderData":{"accountHolderName":"Jo Doe","accountHolderEmailAddress":"a@b.c","sourceIp":"127.0.0.1",\
        "deviceLocation":"38.63,-90.25","consumerIdentifier":"c1"}}
        """

    /// An opened payload's one-pass reading gives what Foundation's decoder gives, or nothing
    /// (then the decoder answers): over the full card data, an unknown source and members, and
    /// every member at every depth removed, `null`, or of each other JSON type.
    @Test func payloadOnePassReadingMatchesTheDecoder() throws {
        func described(_ value: MDESFundingAccountData) -> String {
            var out = ""
            dump(value, to: &out)
            return out
        }
        func decoded(_ text: String) -> String? {
            (try? JSONDecoder().decode(MDESFundingAccountData.self, from: Data(text.utf8))).map(described)
        }
        func read(_ text: String) -> String? {
            Array(text.utf8).withUnsafeBufferPointer { OpenedPayload.readTree($0, as: MDESFundingAccountData.self) }
                .map(described)
        }
        let example = Self.fundingAccountData
        let unknowns = example.replacingOccurrences(
            of: #""source":"ACCOUNT_ON_FILE""#, with: #""source":"TELEPATHY","extra":{"a":[1,{"b":null}]}"#)
        for text in [example, unknowns, "{}"] {
            #expect(read(text) != nil && read(text) == decoded(text), "\(text)")
        }
        #expect(read("[]") == nil && read(#"{"a":1,"a":2}"#) == nil)
        let tree = try #require(Array(example.utf8).withUnsafeBufferPointer { JSONValue.parse(bytes: $0) })
        let others: [JSONValue] = [.null, .int(7), .string("x"), .array([]), .object([:]), .bool(true)]
        var (same, declined, accepted) = (0, 0, 0)
        for variant in Self.memberVariants(of: tree, others: others) {
            let text = variant.jsonText
            let fast = read(text)
            let slow = decoded(text)
            if let fast {
                #expect(fast == slow, "\(text)")
                same += 1
            } else {
                declined += 1
            }
            if slow != nil { accepted += 1 }
        }
        #expect(same == accepted)
        #expect(declined >= 50 && same >= 40, "same \(same), declined \(declined)")
    }
}
