import Foundation

/// `issuerd health`: asks a running instance whether it is ready (container health checks,
/// scripts). Exit 0 when ready, 1 otherwise.
enum HealthCommand: CommandDefinition {
    static let name = "health"
    static let summary = "check a running instance's /readyz (exit 0 when ready)"
    static let usage = """
        issuerd health [--url URL]

        GETs URL (default http://127.0.0.1:8080/readyz) with a 2 s timeout and prints the answer.
        Exit 0 on 200, 1 otherwise.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["url"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        guard let url = URL(string: arguments.option("url") ?? "http://127.0.0.1:8080/readyz"),
            let base = URL(string: "/", relativeTo: url)
        else { throw UsageError("--url is not a URL") }
        let answer = try DemoHTTP(baseURL: base, timeout: 2).send("GET", url.path.isEmpty ? "/readyz" : url.path)
        print(answer.text)
        return answer.status == 200 ? 0 : 1
    }
}
