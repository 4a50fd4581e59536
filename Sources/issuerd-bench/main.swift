import Foundation

// issuerd-bench <benchmark> [options]: release-built benchmarks that print ratios against
// references measured in the same run.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "risk":
    exit(RiskBenchmark.main(Array(arguments.dropFirst())))
default:
    FileHandle.standardError.write(Data("usage: issuerd-bench risk --workload DIR [--peers-python PY --peers-script peer_bench.py]\n".utf8))
    exit(2)
}
