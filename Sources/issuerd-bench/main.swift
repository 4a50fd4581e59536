import Foundation

// issuerd-bench <suite>: release-built benchmarks that print ratios against same-run references.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "crypto":
    do { exit(try CryptoBenchmark.run()) } catch {
        FileHandle.standardError.write(Data("issuerd-bench crypto: \(error)\n".utf8))
        exit(1)
    }
default:
    print("usage: issuerd-bench crypto")
    exit(arguments.isEmpty ? 2 : 1)
}
