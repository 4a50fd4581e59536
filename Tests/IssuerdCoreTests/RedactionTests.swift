import IssuerdCore
import Testing

@Suite("Redaction by type")
struct RedactionTests {
    @Test("A PAN prints masked in every textual form")
    func panMasked() throws {
        let pan = try #require(PrimaryAccountNumber("4111111111111111"))
        #expect(pan.description == "411111******1111")
        #expect("\(pan)" == "411111******1111")
        #expect(String(reflecting: pan) == "PrimaryAccountNumber(411111******1111)")
        var dumped = ""
        dump(pan, to: &dumped)
        #expect(!dumped.contains("4111111111111111"))
        #expect(pan.logValue == .string("411111******1111"))
        #expect(pan.lastFour == "1111")
    }

    @Test(
        "Invalid PANs are refused",
        arguments: ["4111111111111112", "41111", "4111 1111 1111 1111", "", "41111111111111111111", "４111111111111111"])
    func panInvalid(input: String) {
        #expect(PrimaryAccountNumber(input) == nil)
    }

    @Test("Redacted never shows its value")
    func redacted() {
        let secret = Redacted("hunter2")
        #expect("\(secret)" == "****")
        #expect(String(reflecting: secret) == "****")
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("hunter2"))
        #expect(LogValue(secret) == .string("****"))
        #expect(secret.unsafeValue == "hunter2")
    }
}
