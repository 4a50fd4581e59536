import IssuerdClient
import Testing

@Suite("Bearer token checks")
struct BearerTokenTests {
    @Test(arguments: [
        ("", IssuerdClientError.Code.unauthenticated), ("abc\r\nX-Admin: 1", .invalidArgument),
        ("tok en", .invalidArgument),
    ])
    func unusableTokenIsRefusedBeforeAnyRequest(token: String, code: IssuerdClientError.Code) async throws {
        try await withStubServer { _, _ in
            .json(200, #"{"cards":[]}"#)
        } body: { server in
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server, token: token).cards()
            }
            #expect(error?.code == code)
            #expect(server.requests.isEmpty)
        }
    }
}
