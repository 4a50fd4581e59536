/// The console's HTML document, style sheet and script: `Resources/console.html`, `console.css`
/// and `console.js`, embedded into the binary at build time (`resources: [.embedInCode(...)]` in
/// Package.swift). Nothing is read from disk at run time and nothing is fetched from another host.
package enum ConsoleAssets {
    /// `/console/assets/console.css`.
    package static let stylesheet = String(decoding: PackageResources.console_css, as: UTF8.self)

    /// `/console/assets/console.js`: renders every page from the analyst JSON routes. Text is
    /// only ever set through `textContent` and attributes, never parsed as HTML.
    package static let script = String(decoding: PackageResources.console_js, as: UTF8.self)

    /// `console.html` with its two placeholders, `{{title}}` and `{{name}}`.
    private static let template = String(decoding: PackageResources.console_html, as: UTF8.self)

    /// The HTML document of one page. `name` and `title` come from ``ConsoleRoutes/pages``,
    /// never from a request, so they are inserted as they are.
    package static func page(name: String, title: String) -> String {
        template.replacing("{{title}}", with: title).replacing("{{name}}", with: name)
    }
}
