import Foundation
import IssuerdClient
import Testing

@Suite("Wallet In-App Verification deep link")
struct WalletDeepLinkTests {
    static let good: [(url: String, passType: String, serial: String)] = [
        (
            "issuerapp://wallet/verify?passTypeIdentifier=paymentpass.com.apple&serialNumber=ABC123",
            "paymentpass.com.apple", "ABC123"
        ),
        // Extra parameters, other order, a fragment: tolerated.
        (
            "issuerapp://verify?action=activate&serialNumber=ABC123&lang=ko&passTypeIdentifier=paymentpass.com.apple#top",
            "paymentpass.com.apple", "ABC123"
        ),
        // Universal link.
        (
            "https://bank.example/wallet/verify?passTypeIdentifier=paymentpass.com.apple&serialNumber=0d8f-11",
            "paymentpass.com.apple", "0d8f-11"
        ),
        // Percent-encoding is decoded; `+` is a literal plus in RFC 3986 queries, not a space.
        (
            "issuerapp://v?passTypeIdentifier=paymentpass%2Ecom%2Eapple&serialNumber=AB%2DC%2B1+2",
            "paymentpass.com.apple", "AB-C+1+2"
        ),
        // A repeat with the same value is harmless.
        ("issuerapp://v?serialNumber=S1&passTypeIdentifier=p.t&serialNumber=S%31", "p.t", "S1"),
        // Value-less extra parameters do not matter.
        ("issuerapp://v?debug&passTypeIdentifier=p.t&serialNumber=S1&&", "p.t", "S1"),
        (
            "issuerapp://v?passTypeIdentifier=p.t&serialNumber=" + String(repeating: "9", count: 256), "p.t",
            String(repeating: "9", count: 256)
        ),
    ]

    @Test(arguments: good)
    func acceptsGoodLinks(url: String, passType: String, serial: String) throws {
        let link = try WalletDeepLink(url: try #require(URL(string: url)))
        #expect(link.passTypeIdentifier == passType)
        #expect(link.serialNumber == serial)
    }

    static let bad: [(url: String, code: WalletDeepLinkError.Code, parameter: String?)] = [
        ("issuerapp://wallet/verify", .missingParameter, "passTypeIdentifier"),
        ("issuerapp://v?passTypeIdentifier=paymentpass.com.apple", .missingParameter, "serialNumber"),
        ("issuerapp://v?serialNumber=S1", .missingParameter, "passTypeIdentifier"),
        // Names are case-sensitive: Wallet sends exactly these.
        ("issuerapp://v?passtypeidentifier=p.t&serialnumber=S1", .missingParameter, "passTypeIdentifier"),
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=", .emptyParameter, "serialNumber"),
        ("issuerapp://v?passTypeIdentifier=&serialNumber=S1", .emptyParameter, "passTypeIdentifier"),
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber", .malformedParameter, "serialNumber"),
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=S1&serialNumber=S2", .conflictingParameter, "serialNumber"),
        (
            "issuerapp://v?passTypeIdentifier=a.b&passTypeIdentifier=c.d&serialNumber=S1", .conflictingParameter,
            "passTypeIdentifier"
        ),
        // Malformed percent-encoding (Foundation escapes the bare `%`, which must not survive).
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=S%ZZ", .malformedParameter, "serialNumber"),
        // Truncated UTF-8.
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=S%C3", .malformedParameter, "serialNumber"),
        // Double encoding.
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=S%252F", .malformedParameter, "serialNumber"),
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=S%00", .malformedParameter, "serialNumber"),
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=S%0A1", .malformedParameter, "serialNumber"),
        ("issuerapp://v?passTypeIdentifier=p%20t&serialNumber=S1", .malformedParameter, "passTypeIdentifier"),
        ("issuerapp://v?passTypeIdentifier=p.t&serialNumber=caf%C3%A9", .malformedParameter, "serialNumber"),
        (
            "issuerapp://v?passTypeIdentifier=p.t&serialNumber=" + String(repeating: "9", count: 257),
            .parameterTooLong, "serialNumber"
        ),
        (
            "issuerapp://v?pad=" + String(repeating: "x", count: 4100) + "&passTypeIdentifier=p.t&serialNumber=S1",
            .urlTooLong, nil
        ),
    ]

    @Test(arguments: bad)
    func rejectsBadLinks(url: String, code: WalletDeepLinkError.Code, parameter: String?) throws {
        let error = #expect(throws: WalletDeepLinkError.self) {
            try WalletDeepLink(url: try #require(URL(string: url)))
        }
        #expect(error?.code == code)
        #expect(error?.parameter == parameter)
    }

    @Test func valuesFromAPassAreCheckedLikeURLValues() throws {
        #expect(
            try WalletDeepLink(passTypeIdentifier: "paymentpass.com.apple", serialNumber: "S1").serialNumber == "S1")
        let error = #expect(throws: WalletDeepLinkError.self) {
            try WalletDeepLink(passTypeIdentifier: "p.t", serialNumber: "")
        }
        #expect(error == WalletDeepLinkError.Code.emptyParameter.error(parameter: "serialNumber"))
    }

    @Test func errorDescriptionNamesTheParameterNotTheValue() throws {
        let url = try #require(
            URL(string: "issuerapp://v?passTypeIdentifier=p.t&serialNumber=SECRETISH1&serialNumber=SECRETISH2"))
        let error = #expect(throws: WalletDeepLinkError.self) { try WalletDeepLink(url: url) }
        let text = String(describing: try #require(error))
        #expect(text.contains("serialNumber"))
        #expect(!text.contains("SECRETISH"))
    }
}

extension WalletDeepLinkError.Code {
    /// Lets a test state the whole expected error.
    fileprivate func error(parameter: String?) -> (WalletDeepLinkError.Code, String?) { (self, parameter) }
}

private func == (lhs: WalletDeepLinkError?, rhs: (WalletDeepLinkError.Code, String?)) -> Bool {
    lhs?.code == rhs.0 && lhs?.parameter == rhs.1
}
