import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// Turns a ``RiskRequest`` into the engine's ``RiskInput`` and back into the attribute object
/// stored as an attempt's `inputs`.
///
/// The stored object uses the rule language's names, durations in seconds and `null` for
/// unknowns: exactly what `AttemptLog` reads, so `rules backtest` replays a stored attempt
/// with the values the live decision saw.
enum RiskInputBuilder {
    /// The engine input for `request`.
    static func input(for request: RiskRequest) -> RiskInput {
        var input = RiskInput()
        let now = request.time
        input.channel = request.channel
        input.source = request.tokenizationSource
        input.tokenRequestorID = request.tokenRequestorID
        input.time = now

        if let wallet = request.wallet {
            input.walletDeviceScore = wallet.deviceScore.map(Double.init)
            input.walletAccountScore = wallet.accountScore.map(Double.init)
            input.walletPhoneScore = wallet.phoneNumberScore.map(Double.init)
            input.walletRecommendation = wallet.recommendedDecision.flatMap(recommendation)
            // MDES sends the names themselves (an open list): kept as sent.
            input.walletReasonCodes =
                request.channel == .mdes ? wallet.reasonCodes : wallet.reasonCodes.map(reasonNames)
            input.networkTokenRiskScore = wallet.tokenRiskScore.map(Double.init)
        }

        if let device = request.device {
            input.deviceID = device.id
            input.deviceType = device.type.map { DeviceType(name: $0) ?? .other }
            input.deviceLocale = device.locale
            input.deviceLocaleCountry = device.locale.flatMap(localeCountry)
        }
        input.deviceActiveTokens = request.deviceActiveTokens.map(Double.init)
        if let mdes = request.mdes {
            input.tokenType = mdes.tokenType
            input.walletID = mdes.walletID
            input.walletAccountIDHash = mdes.accountIDHash
            input.walletAccountLifetime = mdes.accountLifetime.map(Double.init)
            input.deviceFormFactor = mdes.formFactor
            input.deviceOSName = mdes.osName
            input.deviceStorageTechnology = mdes.storageTechnology
        }

        let card = request.card
        input.cardStatus = CardStatus(name: card.status.rawValue)
        input.cardNetwork = CardNetwork(name: card.paymentNetwork) ?? .other
        input.cardAge = max(0, now.timeIntervalSince(card.createdAt))
        input.cardCountry = card.country
        input.cardActiveTokens = request.cardActiveTokens.map(Double.init)

        if let customer = request.customer {
            let age = max(0, now.timeIntervalSince(customer.createdAt))
            input.customerAge = age
            // docs/rules.md: "customer age if never" changed.
            input.sincePhoneChange = customer.phoneChangedAt.map { max(0, now.timeIntervalSince($0)) } ?? age
            input.sinceEmailChange = customer.emailChangedAt.map { max(0, now.timeIntervalSince($0)) } ?? age
            input.sinceAddressChange = customer.addressChangedAt.map { max(0, now.timeIntervalSince($0)) } ?? age
        }
        return input
    }

    /// Every assignable attribute of `input` by rule-language name (derived ones such as
    /// `request.hour_utc` are left out: the backtest derives them from the attempt time).
    static func attributes(of input: RiskInput) -> [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        object.reserveCapacity(AttributeCatalog.all.count)
        forEachRecorded(in: input) { index, value in object[AttributeCatalog.all[index].name] = DecisionJSON.json(value)
        }
        return object
    }

    /// Calls `body` with the catalog index and value of every assignable attribute of `input`,
    /// in catalog order. Assigning into a scratch input tells derived attributes apart; one
    /// scratch serves every attribute (whether a write succeeds does not depend on what it
    /// overwrites).
    private static func forEachRecorded(in input: RiskInput, _ body: (Int, RiskValue) -> Void) {
        var scratch = RiskInput()
        for (index, attribute) in AttributeCatalog.all.enumerated() {
            let value = attribute.value(in: input)
            guard attribute.assign(value, to: &scratch) else { continue }
            body(index, value)
        }
    }

    /// ``attributes(of:)`` as the attempt stores it, written straight into the object's text:
    /// the same members, without a dictionary of them (building and hashing one per decision,
    /// then walking it to write it, was about 2 % of a provisioning request's CPU in `perf`).
    /// An attribute whose text holds a NUL escape takes the dictionary, which
    /// ``AttemptStore/document(_:)`` cleans.
    static func attributesDocument(of input: RiskInput) -> AttemptDocument {
        var out: [UInt8] = []
        out.reserveCapacity(2048)
        out.append(UInt8(ascii: "{"))
        forEachRecorded(in: input) { index, value in
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: memberKeys[index])
            DecisionJSON.json(value).appendJSON(to: &out, sortedKeys: false)
        }
        out.append(UInt8(ascii: "}"))
        let text = String(decoding: out, as: UTF8.self)
        guard !text.containsUTF8(AttemptStore.nulEscape) else { return .members(attributes(of: input)) }
        return .written(text)
    }

    /// Each catalog attribute's `"name":`, escaped once.
    private static let memberKeys: [[UInt8]] = AttributeCatalog.all.map { attribute in
        var key: [UInt8] = []
        JSONText.appendString(attribute.name, to: &key)
        key.append(UInt8(ascii: ":"))
        return key
    }

    /// `APPROVED` / `REQUIRE_ADDITIONAL_AUTHENTICATION` / `DECLINED` as the rule language names them.
    static func recommendation(_ text: String) -> WalletRecommendation? {
        switch text {
        case "APPROVED": .approve
        case "REQUIRE_ADDITIONAL_AUTHENTICATION": .requireAdditionalAuthentication
        case "DECLINED": .decline
        default: nil
        }
    }

    /// Apple's two-character codes (`0A`) mapped to the rule names; names pass through, unknown
    /// codes are dropped (the raw list is kept in the attempt's facts).
    static func reasonNames(_ codes: [String]) -> [String] {
        var names: [String] = []
        for code in codes {
            if WalletReasonCodes.names.contains(code) {
                names.append(code)
            } else if let entry = WalletReasonCodes.table.first(where: {
                $0.code.split(separator: "/").contains(Substring(code.uppercased()))
            }) {
                names.append(entry.name)
            }
        }
        return names
    }

    /// `ko_KR` / `en-US` → `KR` / `US`; nil when the locale carries no region.
    static func localeCountry(_ locale: String) -> String? {
        let parts = locale.split(whereSeparator: { $0 == "_" || $0 == "-" })
        guard parts.count >= 2 else { return nil }
        let region = parts[1]
        guard region.count == 2, region.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        return region.uppercased()
    }
}
