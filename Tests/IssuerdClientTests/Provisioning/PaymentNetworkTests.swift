import IssuerdClient
import Testing

@Suite("Card network names")
struct PaymentNetworkTests {
    @Test(arguments: [
        ("visa", PaymentNetwork.visa), ("VISA", .visa), ("mastercard", .mastercard), ("MasterCard", .mastercard),
        ("master_card", .mastercard), ("amex", .amex), ("American Express", .amex), ("american-express", .amex),
        ("discover", .discover), ("JCB", .jcb), ("unionpay", .unionPay), ("china_union_pay", .unionPay),
        ("maestro", .maestro), ("interac", .interac), ("eftpos", .eftpos),
    ])
    func knownNames(wire: String, network: PaymentNetwork) {
        #expect(PaymentNetwork(wireName: wire) == network)
    }

    @Test(arguments: ["", "bc", "visa electron card", "mir", String(repeating: "visa", count: 20)])
    func unknownNames(wire: String) {
        #expect(PaymentNetwork(wireName: wire) == nil)
    }
}
