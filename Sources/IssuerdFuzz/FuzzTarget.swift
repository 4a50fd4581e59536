import IssuerdCore

/// One parser under fuzzing: the name of its corpus folder (`Fuzz/Corpus/<name>`), the entry point
/// it feeds, and a function that feeds it one input and checks what it gives back.
///
/// A target's checks are the parser's own contract (a fast path accepts nothing `JSONDecoder`
/// refuses and reads it the same way; a parsed header prints back to itself), so that libFuzzer
/// finds wrong answers as well as crashes. A broken check throws ``FuzzFailure``; the fuzzing
/// entry point turns that into a crash, the corpus replay into a failed test.
package struct FuzzTarget: Sendable {
    /// The name: `scripts/fuzz-parsers --target NAME`, the corpus folder, the check line.
    package let name: String
    /// The function fed, for humans.
    package let entryPoint: String
    /// libFuzzer's `-max_len`: room for the largest seed and then some, no more (longer inputs
    /// only make each run slower; every parser bounds its input long before this).
    package let maximumLength: Int
    /// Feeds one input; throws when a check fails.
    package let run: @Sendable ([UInt8]) throws(FuzzFailure) -> Void

    package init(
        name: String, entryPoint: String, maximumLength: Int,
        run: @escaping @Sendable ([UInt8]) throws(FuzzFailure) -> Void
    ) {
        self.name = name
        self.entryPoint = entryPoint
        self.maximumLength = maximumLength
        self.run = run
    }

    /// Every target, in the order `scripts/fuzz-parsers` runs them.
    package static let all: [FuzzTarget] = [
        FuzzTarget(
            name: "rules", entryPoint: "RulesetCompiler.compile, Ruleset.evaluate, ExampleSuite.run",
            maximumLength: 16_384, run: RulesFuzzing.run),
        FuzzTarget(
            name: "json", entryPoint: "JSONTreeParser.parse (IssuerdCore)", maximumLength: 4096,
            run: JSONFuzzing.run),
        FuzzTarget(
            name: "provisioning-request", entryPoint: "ProvisioningRequest(json:) after JSONValue.parse(bytes:)",
            maximumLength: 8192, run: RequestFuzzing.provisioning),
        FuzzTarget(
            name: "tokenization-request",
            entryPoint: "TokenizationAuthorizeRequest(json:) after JSONValue.parse(bytes:)", maximumLength: 4096,
            run: RequestFuzzing.tokenization),
        FuzzTarget(
            name: "tsp-signature", entryPoint: "TSPSignature(header:)", maximumLength: 2048,
            run: HeaderFuzzing.tspSignature),
        FuzzTarget(
            name: "app-jwt", entryPoint: "JWT(compact:), then the HS256 and ES256 checks", maximumLength: 9000,
            run: HeaderFuzzing.appJWT),
        FuzzTarget(
            name: "card-import-line", entryPoint: "CardImport.LineDecoder.decode", maximumLength: 4096,
            run: RequestFuzzing.cardImportLine),
    ]

    /// The target called `name`.
    package static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// A check of a fuzz target that does not hold: what was expected and what came instead.
package struct FuzzFailure: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description }
}
