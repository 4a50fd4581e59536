import Foundation
import IssuerdAPI

/// `issuerd apikey create`: a new API key for an analyst, operator or IVR system.
enum APIKeyCommand: CommandDefinition {
    static let name = "apikey"
    static let summary = "create API keys for analysts, operators and IVR (apikey create --role R --name N)"
    static let usage = """
        issuerd apikey create --role admin|analyst|ivr --name NAME [--config FILE]

        Creates an API key and prints it as the LAST line of output; it is shown only this once
        (issuerd stores its SHA-256). The creation is written to the audit log with the role and
        name, never the key. admin changes customers, cards and rules; analyst reads and
        backtests; ivr only verifies one-time codes entered on a voice call.

        Environment: ISSUERD_DATABASE_URL
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["create": create])
    }

    private static func create(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["role", "name", "config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let role = try arguments.required("role")
        let name = try arguments.required("name")
        guard OperatorCredentials.roles.contains(role) else {
            throw UsageError("--role must be one of \(OperatorCredentials.roles.joined(separator: ", "))")
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        let pool = try OperatorCommandSupport.pool(reader)
        defer { pool.close() }
        let issued = try OperatorCommandSupport.failing {
            try OperatorCredentials.createAPIKey(
                role: role, name: name, actor: OperatorCommandSupport.actor, now: Date(), database: pool)
        }
        print("created API key \(issued.keyID) (role \(issued.role)); store it now, it is not shown again:")
        print(issued.key)
        return 0
    }
}
