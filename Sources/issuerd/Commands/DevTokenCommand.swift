import Foundation
import IssuerdAPI
import IssuerdService

/// `issuerd dev token`: a development issuer-app JWT (HS256 with `ISSUERD_APP_JWT_SECRET`).
enum DevTokenCommand {
    static let usage = """
        issuerd dev token --customer ID [--ttl 1h] [--config FILE]

        Prints an HS256 app token whose sub is ID, valid for --ttl (30s to 30d; default 1h),
        signed with ISSUERD_APP_JWT_SECRET. For development and demos: production tokens come
        from the issuer's own login service.

        Environment: ISSUERD_APP_JWT_SECRET
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["customer", "ttl", "config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let customer = try arguments.required("customer")
        var lifetime: TimeInterval = 3600
        if let text = arguments.option("ttl") {
            guard let duration = ConfigurationReader.parseDuration(text), duration >= .seconds(30),
                duration <= .seconds(30 * 86400)
            else {
                throw UsageError("--ttl must be a duration from 30s to 30d, e.g. 15m or 1h")
            }
            lifetime = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        let secret = try OperatorCommandSupport.setting { try OperatorSettings.appJWTSecret(reader) }
        let token = try OperatorCommandSupport.failing {
            try OperatorCredentials.developmentAppToken(
                secret: secret.unsafeValue, customerID: customer, lifetime: lifetime, now: Date())
        }
        print(token)
        return 0
    }
}
