import Foundation
import PackagePlugin

/// Stamps the `issuerd` executable with the version and git commit it is built from, as a Swift
/// file generated before every build (`GeneratedBuildInfo`).
///
/// `git describe --tags --always` gives the version and `git rev-parse HEAD` the commit; a tree
/// without git (a container build context without `.git`) takes `ISSUERD_BUILD_VERSION` and
/// `ISSUERD_BUILD_COMMIT` from the build's environment, else `unknown`. The file is rewritten
/// only when its text changes, so an unchanged commit recompiles nothing.
@main
struct BuildInfoPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let environment = ProcessInfo.processInfo.environment
        let script = #"""
            root="$1"; out="$2"; mkdir -p "$out"
            commit=$(git -C "$root" rev-parse HEAD 2>/dev/null) || commit=""
            version=$(git -C "$root" describe --tags --always 2>/dev/null) || version=""
            [ -n "$commit" ] || commit="${ISSUERD_BUILD_COMMIT:-unknown}"
            [ -n "$version" ] || version="${ISSUERD_BUILD_VERSION:-unknown}"
            clean() { printf '%s' "$1" | tr -cd 'A-Za-z0-9._+-'; }
            text=$(printf '/// Generated before each build by Plugins/BuildInfoPlugin; not in git.\nenum GeneratedBuildInfo {\n    static let version = "%s"\n    static let commit = "%s"\n}\n' "$(clean "$version")" "$(clean "$commit")")
            if [ "$(cat "$out/GeneratedBuildInfo.swift" 2>/dev/null)" != "$text" ]; then
                printf '%s\n' "$text" > "$out/GeneratedBuildInfo.swift"
            fi
            """#
        return [
            .prebuildCommand(
                displayName: "issuerd build info (version and commit)",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "sh", context.package.directoryURL.path, output.path],
                environment: [
                    "PATH": environment["PATH"] ?? "/usr/bin:/bin",
                    "ISSUERD_BUILD_VERSION": environment["ISSUERD_BUILD_VERSION"] ?? "",
                    "ISSUERD_BUILD_COMMIT": environment["ISSUERD_BUILD_COMMIT"] ?? "",
                ],
                outputFilesDirectory: output)
        ]
    }
}
