// The fuzz targets' executable (docs/fuzzing.md).
//
// Built by scripts/fuzz-parsers with `-sanitize=fuzzer,address -D FUZZING` into .build-fuzz, it is
// a libFuzzer binary: main takes the target's name off its command line and hands the rest to
// libFuzzer's driver (LLVMFuzzerRunDriver), which calls LLVMFuzzerTestOneInput with each input.
// main is ours, not libFuzzer's, because SwiftPM links an executable's main under its own name.
//
//   issuerd-fuzz list                          # name, -max_len and entry point of each target
//   issuerd-fuzz TARGET [libFuzzer flags and corpus folders]
//
// Built normally (swift build), it replays files through the same targets without libFuzzer:
//
//   issuerd-fuzz list
//   issuerd-fuzz replay TARGET PATH...         # each file, or every file under each folder
import CLibFuzzer
import Foundation
import IssuerdFuzz

#if FUZZING
/// The target this process fuzzes, chosen before libFuzzer starts.
nonisolated(unsafe) private var selected: FuzzTarget?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let target = selected else { fatalError("no fuzz target selected") }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try target.run(bytes)
    } catch {
        // A broken check is a crash to libFuzzer: it saves the input as crash-<sha1>.
        fatalError("fuzz target \(target.name): \(error)")
    }
    return 0
}
#endif

@main
enum FuzzMain {
    static func main() {
        #if FUZZING
        let arguments = CommandLine.arguments
        if arguments.count == 2, arguments[1] == "list" {
            list()
            exit(0)
        }
        guard arguments.count >= 2, let target = FuzzTarget.named(arguments[1]) else {
            usage("the first argument names the target (issuerd-fuzz list)")
        }
        selected = target
        // libFuzzer's command line: the program's name and everything after the target's. The
        // strings stay allocated for the life of the process, as argv's would.
        let forwarded = [arguments[0]] + arguments.dropFirst(2)
        var cStrings: [UnsafeMutablePointer<CChar>?] = forwarded.map { strdup($0) } + [nil]
        var argc = Int32(forwarded.count)
        exit(
            cStrings.withUnsafeMutableBufferPointer { buffer in
                var argv = buffer.baseAddress
                return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) }
            })
        #else
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "list":
            list()
        case "replay" where arguments.count >= 3:
            guard let target = FuzzTarget.named(arguments[1]) else { usage("unknown target \(arguments[1])") }
            exit(replay(target, arguments.dropFirst(2)) ? 0 : 1)
        default:
            usage(nil)
        }
        #endif
    }

    static func list() {
        for target in FuzzTarget.all { print("\(target.name) \(target.maximumLength) \(target.entryPoint)") }
    }

    /// Runs every file under `paths` through `target`; false when one broke a check.
    static func replay(_ target: FuzzTarget, _ paths: ArraySlice<String>) -> Bool {
        var inputs = 0
        var failures = 0
        for path in paths {
            for file in FuzzCorpus.files(at: URL(fileURLWithPath: path)) {
                inputs += 1
                guard let bytes = FileManager.default.contents(atPath: file.path) else {
                    print("✘ \(file.path): unreadable")
                    failures += 1
                    continue
                }
                do {
                    try target.run(Array(bytes))
                } catch {
                    print("✘ \(file.path): \(error)")
                    failures += 1
                }
            }
        }
        print("\(target.name): \(inputs) inputs replayed, \(failures) failed")
        return failures == 0
    }

    static func usage(_ problem: String?) -> Never {
        if let problem { FileHandle.standardError.write(Data("issuerd-fuzz: \(problem)\n".utf8)) }
        #if FUZZING
        let forms = "issuerd-fuzz list | issuerd-fuzz TARGET [libFuzzer flags] [CORPUS...]"
        #else
        let forms = "issuerd-fuzz list | issuerd-fuzz replay TARGET PATH..."
        #endif
        FileHandle.standardError.write(Data("usage: \(forms)\n".utf8))
        exit(2)
    }
}
