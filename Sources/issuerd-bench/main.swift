import Foundation

// issuerd-bench <benchmark> [options]: release-built benchmarks that print ratios against
// references measured in the same run.
let arguments = Array(CommandLine.arguments.dropFirst())
let usage = """
    usage: issuerd-bench crypto
           issuerd-bench risk --workload DIR [--peers-python PY --peers-script peer_bench.py]
           issuerd-bench hsm [--seconds N]
           issuerd-bench replay --current DIR --candidate DIR [--attempts N]

    """
switch arguments.first {
case "crypto":
    do { exit(try CryptoBenchmark.run()) } catch {
        FileHandle.standardError.write(Data("issuerd-bench crypto: \(error)\n".utf8))
        exit(1)
    }
case "hsm":
    do { exit(try HSMBenchmark.run(Array(arguments.dropFirst()))) } catch {
        FileHandle.standardError.write(Data("issuerd-bench hsm: \(error)\n".utf8))
        exit(1)
    }
case "replay":
    do { exit(try ReplayBenchmark.run(Array(arguments.dropFirst()))) } catch {
        FileHandle.standardError.write(Data("issuerd-bench replay: \(error)\n".utf8))
        exit(1)
    }
case "risk":
    exit(RiskBenchmark.main(Array(arguments.dropFirst())))
case "--help", "-h":
    print(usage, terminator: "")
    exit(0)
default:
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
