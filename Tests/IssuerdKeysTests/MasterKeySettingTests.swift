import Foundation
import IssuerdCore
import IssuerdKeys
import Testing

/// The master key settings: the current key, its version, and the earlier keys kept to read rows
/// not yet rotated, each refused with the setting it came from.
@Suite("Master key settings from the environment")
struct MasterKeySettingTests {
    static let key = Data(repeating: 0x42, count: 32).base64EncodedString()
    static let older = Data(repeating: 0x17, count: 32).base64EncodedString()

    private func read(_ settings: [String: String], optional: Bool = false) throws -> [MasterKeySetting] {
        try MasterKeySetting.read(ConfigurationReader(settings), optional: optional)
    }

    @Test("The current key with its version, then the earlier ones in the order given")
    func currentAndPrevious() throws {
        let keys = try read([
            "ISSUERD_MASTER_KEY": Self.key, "ISSUERD_MASTER_KEY_VERSION": "3",
            "ISSUERD_MASTER_KEY_PREVIOUS": "1:\(Self.older),2:\(Self.older)",
        ])
        #expect(keys.map(\.version) == [3, 1, 2])
        #expect(keys[0].key.unsafeValue == Array(repeating: 0x42, count: 32))
        #expect(keys[1].key.unsafeValue == Array(repeating: 0x17, count: 32))
        #expect(!"\(keys[0].key)".contains("Qk"), "a key never prints")
    }

    @Test(
        "Each bad setting is refused naming it",
        arguments: [
            ([:], "ISSUERD_MASTER_KEY"),
            (["ISSUERD_MASTER_KEY": "c2hvcnQ="], "ISSUERD_MASTER_KEY"),
            (["ISSUERD_MASTER_KEY": key, "ISSUERD_MASTER_KEY_VERSION": "0"], "ISSUERD_MASTER_KEY_VERSION"),
            (["ISSUERD_MASTER_KEY": key, "ISSUERD_MASTER_KEY_PREVIOUS": "1:\(older)"], "ISSUERD_MASTER_KEY_PREVIOUS"),
            (
                [
                    "ISSUERD_MASTER_KEY": key, "ISSUERD_MASTER_KEY_VERSION": "3",
                    "ISSUERD_MASTER_KEY_PREVIOUS": "2:\(older),2:\(older)",
                ],
                "ISSUERD_MASTER_KEY_PREVIOUS"
            ),
            (
                ["ISSUERD_MASTER_KEY": key, "ISSUERD_MASTER_KEY_VERSION": "2", "ISSUERD_MASTER_KEY_PREVIOUS": "1"],
                "ISSUERD_MASTER_KEY_PREVIOUS"
            ),
        ] as [([String: String], String)])
    func refused(settings: [String: String], key: String) {
        do {
            _ = try read(settings)
            Issue.record("accepted \(settings.keys.sorted())")
        } catch let error as ConfigurationError {
            #expect(error.key == key)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("With an HSM the environment key is optional, but not its companions alone")
    func optionalWithHSM() throws {
        #expect(try read([:], optional: true).isEmpty)
        #expect(throws: ConfigurationError.self) {
            try read(["ISSUERD_MASTER_KEY_VERSION": "2"], optional: true)
        }
    }
}
