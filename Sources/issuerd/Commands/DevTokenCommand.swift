import Foundation
import IssuerdAPI
import IssuerdCore

/// `issuerd dev token`: a development issuer-app JWT (HS256 with `ISSUERD_APP_JWT_SECRET`).
enum DevTokenCommand {
    static let usage = """
        issuerd dev token --customer ID [--ttl 1h] [--config FILE]

        Prints an HS256 app token whose sub is ID, valid for --ttl (30s up to
        ISSUERD_APP_JWT_MAX_LIFETIME, which is also the default; 1h unless set), signed with
        ISSUERD_APP_JWT_SECRET, with iat, and with iss and aud when ISSUERD_APP_JWT_ISSUER and
        ISSUERD_APP_JWT_AUDIENCE are set: what the server accepts. For development and demos:
        production tokens come from the issuer's own login service.

        Environment: ISSUERD_APP_JWT_SECRET, ISSUERD_APP_JWT_MAX_LIFETIME, ISSUERD_APP_JWT_ISSUER,
        ISSUERD_APP_JWT_AUDIENCE
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["customer", "ttl", "config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let customer = try arguments.required("customer")
        var lifetime: TimeInterval?
        if let text = arguments.option("ttl") {
            guard let duration = ConfigurationReader.parseDuration(text) else {
                throw UsageError("--ttl must be a duration such as 15m or 1h")
            }
            lifetime = duration.timeInterval
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        let token = try OperatorCommandSupport.failing {
            try OperatorCredentials.developmentAppToken(reader, customerID: customer, lifetime: lifetime, now: Date())
        }
        print(token)
        return 0
    }
}
