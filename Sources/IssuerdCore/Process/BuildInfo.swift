/// Which build of issuerd is running: its version and the git commit it was built from.
///
/// The executable stamps both at build time (`issuerd --version`); `/metrics` shows them as
/// `issuerd_build_info{version,commit} 1`, and outbound calls carry the version in their
/// `User-Agent`.
public struct BuildInfo: Sendable, Equatable {
    /// `git describe --tags --always` of the source tree, or what the build was given.
    public var version: String
    /// The full commit hash, or `unknown` for a build from a tree without git.
    public var commit: String

    /// Creates the value from every stored property.
    public init(version: String, commit: String) {
        self.version = version
        self.commit = commit
    }

    /// What a library or a test knows when nobody stamped a build.
    public static let unknown = BuildInfo(version: "unknown", commit: "unknown")

    /// `issuerd/<version>`, the `User-Agent` of every outbound call.
    public var userAgent: String { "issuerd/\(version)" }
}
