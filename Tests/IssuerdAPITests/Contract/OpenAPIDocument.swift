import Foundation

/// The operations `docs/openapi.yaml` declares, read with a line parser that knows just enough
/// YAML for the document's shape: two-space indented path keys under `paths:`, four-space
/// indented method keys under each path. Test tooling only.
struct OpenAPIDocument {
    /// `METHOD /path` for every operation, e.g. `POST /v1/admin/cards`.
    let operations: Set<String>

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    init(text: String) {
        var operations: Set<String> = []
        var inPaths = false
        var currentPath: String?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("#")
                || line.trimmingCharacters(in: .whitespaces).isEmpty
            {
                continue
            }
            if !line.hasPrefix(" ") {
                inPaths = line.hasPrefix("paths:")
                currentPath = nil
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                currentPath = String(line.dropFirst(2).dropLast()).trimmingCharacters(
                    in: CharacterSet(charactersIn: "'\""))
            } else if let path = currentPath, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let key = line.trimmingCharacters(in: .whitespaces).dropLast()
                if Self.methods.contains(String(key)) { operations.insert("\(key.uppercased()) \(path)") }
            }
        }
        self.operations = operations
    }

    init(contentsOf url: URL) throws {
        self.init(text: try String(contentsOf: url, encoding: .utf8))
    }
}
