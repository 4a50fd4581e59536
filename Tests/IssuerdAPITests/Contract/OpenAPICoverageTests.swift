import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("docs/openapi.yaml and the router describe the same operations")
struct OpenAPICoverageTests {
    static let document = TestApplication.repositoryRoot.appendingPathComponent("docs/openapi.yaml")

    /// The router's operations; `HEAD` is served implicitly on every `GET` and is not listed.
    private func routerOperations(_ app: TestApplication) -> Set<String> {
        Set(app.application.routes.filter { $0.method != "HEAD" }.map { "\($0.method) \($0.pattern)" })
    }

    @Test("The YAML line parser reads path and method keys and nothing else")
    func parser() {
        let text = """
            openapi: 3.1.0
            paths:
              /a/{id}:
                parameters:
                  - $ref: '#/x'
                get:
                  responses:
                    '200':
                      description: ok
                post:
                  summary: x
              # a comment
              /b:
                delete:
                  summary: y
            components:
              schemas:
                get:
                  type: object
            """
        #expect(OpenAPIDocument(text: text).operations == ["GET /a/{id}", "POST /a/{id}", "DELETE /b"])
    }

    @Test("Every route the router serves is documented in docs/openapi.yaml")
    func routesAreDocumented() throws {
        // With MDES issuer keys, so the /mdes/ routes exist too.
        let app = try MDESFixture().app
        let documented = try OpenAPIDocument(contentsOf: Self.document).operations
        let undocumented = routerOperations(app).subtracting(documented).sorted()
        #expect(
            undocumented.isEmpty,
            "served but missing from docs/openapi.yaml:\n  \(undocumented.joined(separator: "\n  "))")
    }

    @Test("Every operation in docs/openapi.yaml is served by the router")
    func documentedRoutesExist() throws {
        // With MDES issuer keys, so the /mdes/ routes exist too.
        let app = try MDESFixture().app
        let documented = try OpenAPIDocument(contentsOf: Self.document).operations
        let unserved = documented.subtracting(routerOperations(app)).sorted()
        #expect(
            unserved.isEmpty, "documented in docs/openapi.yaml but not served:\n  \(unserved.joined(separator: "\n  "))"
        )
    }
}
