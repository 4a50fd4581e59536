/// The console's HTML document; its style sheet and script are in `ConsoleAssets+Style.swift`
/// and `ConsoleAssets+Script.swift`. Everything is compiled into the binary: no file to ship,
/// no build step, nothing fetched from another host.
enum ConsoleAssets {
    /// The HTML document of one page. `name` and `title` come from ``ConsoleRoutes/pages``,
    /// never from a request, so they are inserted as they are.
    static func page(name: String, title: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(title) · issuerd console</title>
        <link rel="stylesheet" href="/console/assets/console.css">
        <script src="/console/assets/console.js" defer></script>
        </head>
        <body data-page="\(name)">
        <header class="top">
          <a class="brand" href="/console/rules"><span class="logo">◆</span> issuerd <span class="muted">console</span></a>
          <nav id="nav"></nav>
          <div id="who"></div>
        </header>
        <main id="app"><noscript>The console needs JavaScript.</noscript></main>
        </body>
        </html>
        """
    }
}
