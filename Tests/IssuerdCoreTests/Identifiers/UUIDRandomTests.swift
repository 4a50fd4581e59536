import Foundation
import IssuerdCore
import Testing

@Suite struct UUIDRandomTests {
    @Test func versionFourVariantOneAndNoRepeats() {
        var seen = Set<UUID>()
        for _ in 0..<10_000 {
            let id = UUID.random()
            let text = id.uuidString
            // xxxxxxxx-xxxx-4xxx-[89AB]xxx-xxxxxxxxxxxx
            let characters = Array(text)
            #expect(characters[14] == "4", "\(text)")
            #expect("89AB".contains(characters[19]), "\(text)")
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }

    @Test func parsesBackFromItsText() {
        let id = UUID.random()
        #expect(UUID(uuidString: id.uuidString) == id)
    }
}
