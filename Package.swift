// swift-tools-version:6.0
// issuerd: Apple Pay in-app provisioning, add-card risk scoring and step-up verification.
//
// Layers, one direction of dependency (see docs/architecture.md):
//   C system libraries → one Swift wrapper per C library → pure domain core → HTTP API → executable.
import PackageDescription

let package = Package(
    name: "issuerd",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .executable(name: "issuerd", targets: ["issuerd"]),
        // For issuer apps (iOS) and other Swift callers: depends only on Foundation and IssuerdWire.
        .library(name: "IssuerdClient", targets: ["IssuerdClient"]),
    ],
    targets: [
        // C libraries from Debian packages. Each is imported by exactly one Swift module.
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPostgres", path: "Sources/CPostgres", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
        // Header only (PKCS#11 2.40 from p11-kit); the vendor's module is dlopen'ed at run time.
        .systemLibrary(name: "CPKCS11", path: "Sources/CPKCS11", providers: [.apt(["libp11-kit-dev"])]),
        // RNP (OpenPGP), for Google's opaque payment card.
        .systemLibrary(name: "CRNP", path: "Sources/CRNP", providers: [.apt(["librnp-dev"])]),
        // libcurl, for SMTP submission of step-up e-mail (STARTTLS, AUTH).
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libsmpp34, SMPP 3.4 PDUs for step-up SMS.
        .systemLibrary(name: "CSMPP34", path: "Sources/CSMPP34", providers: [.apt(["libsmpp34-dev"])]),

        // Shared vocabulary with no I/O beyond writing log lines: logging, redaction, metrics.
        .target(name: "IssuerdCore"),

        // The wire contract (docs/openapi.yaml) as Codable types, shared by server and client so
        // the two cannot drift. Foundation only.
        .target(name: "IssuerdWire"),

        // The issuer app's client: cards, provisioning, In-App Verification, PassKit glue.
        .target(name: "IssuerdClient", dependencies: ["IssuerdWire"]),

        // The only importers of their C libraries.
        .target(name: "IssuerdCrypto", dependencies: ["COpenSSL", "IssuerdCore"]),
        .target(name: "IssuerdPostgres", dependencies: ["CPostgres", "IssuerdCore"]),
        .target(name: "IssuerdHTTP", dependencies: ["CMicroHTTPD", "IssuerdCore"]),
        .target(name: "IssuerdPKCS11", dependencies: ["CPKCS11", "IssuerdCore"]),
        // E-mail submission through libcurl: the MIME message and the SMTP session.
        .target(name: "IssuerdSMTP", dependencies: ["CCurl", "IssuerdCore"]),
        // SMS by SMPP 3.4: one bound transceiver session, its window, receipts; PDUs by libsmpp34.
        .target(name: "IssuerdSMPP", dependencies: ["CSMPP34", "IssuerdCore"]),

        // Pure domain: the rule language and risk engine (no I/O).
        .target(name: "IssuerdRisk", dependencies: ["IssuerdCore"]),

        // The PostgreSQL-backed records: cards, customers, attempts, tokens, idempotency claims,
        // and the hash-chained audit log.
        .target(
            name: "IssuerdStorage",
            dependencies: [
                "IssuerdCore", "IssuerdCrypto", "IssuerdPostgres", "IssuerdRisk",
                "IssuerdWire",
            ]
        ),

        // Stored history read back: backtests over it, its export, the hourly roll-up, the
        // read-ahead and the cache of parsed hours.
        .target(
            name: "IssuerdHistory",
            dependencies: ["IssuerdCore", "IssuerdPostgres", "IssuerdRisk"]
        ),

        // The analysts' web console at /console: pages, sessions, queries; its HTML, CSS and
        // JavaScript are files embedded at build time.
        .target(
            name: "IssuerdConsole",
            dependencies: [
                "IssuerdCore", "IssuerdAuth", "IssuerdStorage", "IssuerdHistory", "IssuerdCrypto", "IssuerdPostgres",
                "IssuerdHTTP", "IssuerdRisk",
            ],
            resources: [
                .embedInCode("Resources/console.html"), .embedInCode("Resources/console.css"),
                .embedInCode("Resources/console.js"),
            ]
        ),

        // The outbox: step-up messages, TSP notifications and Mastercard Customer Service API calls
        // written with the change they announce, sealed, claimed with SKIP LOCKED, delivered with
        // retries and dead letters.
        .target(
            name: "IssuerdOutbox",
            dependencies: [
                "IssuerdCore", "IssuerdCrypto", "IssuerdPostgres", "IssuerdAuth", "IssuerdStorage",
                "IssuerdMDES", "IssuerdSMTP", "IssuerdSMPP",
            ]
        ),

        // Mastercard MDES, issuer side: field-level encryption of `encryptedPayload`s (opened with
        // the issuer's keys, made to Mastercard's certificate) and the OAuth 1.0a RSA-SHA256 signer
        // of the Customer Service API; the opaque payment card of a push to a wallet.
        .target(name: "IssuerdMDES", dependencies: ["IssuerdCore", "IssuerdCrypto"]),

        // OpenPGP through RNP: sign with the issuer's key and encrypt to the recipient's in one
        // message; Google's opaque payment card (`GoogleOpaquePaymentCard`).
        .target(name: "IssuerdOpenPGP", dependencies: ["CRNP", "IssuerdCore"]),

        // Bulk card import (`issuerd cards import`): COPY in one transaction, encoded on every core.
        .target(
            name: "IssuerdImport",
            dependencies: [
                "IssuerdCore", "IssuerdStorage", "IssuerdCrypto", "IssuerdPostgres",
                "IssuerdWire",
            ]
        ),

        // Authentication without the database: the issuer app's JWT (HS256/ES256 and its claims)
        // and its settings, API key principals and roles, the TSP signature header.
        .target(name: "IssuerdAuth", dependencies: ["IssuerdCore", "IssuerdCrypto"]),

        // Issuer keys: the HSM (PKCS#11 token, its wrapping key, RSA signers), the PAN data keys it
        // wraps, the master key settings, and the vault built from them.
        .target(
            name: "IssuerdKeys",
            dependencies: [
                "IssuerdCore", "IssuerdCrypto", "IssuerdPostgres", "IssuerdPKCS11", "IssuerdStorage",
            ]
        ),

        // The HTTP API: routes, authentication, the provisioning and step-up flows, the outbox,
        // keys and configuration, wired together by IssuerdApplication.
        .target(
            name: "IssuerdAPI",
            dependencies: [
                "IssuerdCore", "IssuerdWire", "IssuerdCrypto", "IssuerdPostgres", "IssuerdHTTP", "IssuerdRisk",
                "IssuerdPKCS11",
                "IssuerdStorage", "IssuerdHistory", "IssuerdConsole", "IssuerdImport",
                "IssuerdOutbox", "IssuerdAuth", "IssuerdMDES", "IssuerdOpenPGP", "IssuerdKeys",
            ]
        ),

        .executableTarget(
            name: "issuerd",
            dependencies: [
                "IssuerdCore", "IssuerdWire", "IssuerdCrypto", "IssuerdPostgres", "IssuerdHTTP", "IssuerdRisk",
                "IssuerdAPI", "IssuerdPKCS11",
                "IssuerdHistory", "IssuerdImport", "IssuerdKeys", "IssuerdStorage",
            ],
            // The version and commit it is built from (issuerd --version, /metrics, User-Agent).
            plugins: ["BuildInfoPlugin"]
        ),
        .plugin(name: "BuildInfoPlugin", capability: .buildTool()),
        .executableTarget(
            name: "issuerd-bench",
            dependencies: ["IssuerdCore", "IssuerdCrypto", "IssuerdRisk", "IssuerdPKCS11"]
        ),

        // The parsers exposed to input as fuzz targets (docs/fuzzing.md): each feeds one input to
        // its parser and checks the answer. `issuerd-fuzz` is a libFuzzer binary when
        // scripts/fuzz-parsers builds it with -sanitize=fuzzer,address -D FUZZING, and otherwise
        // replays files; IssuerdFuzzTests replays Fuzz/Corpus and Fuzz/Regressions in every test run.
        .target(
            name: "IssuerdFuzz",
            dependencies: [
                "IssuerdCore", "IssuerdWire", "IssuerdCrypto", "IssuerdHTTP", "IssuerdRisk", "IssuerdImport",
                "IssuerdAPI", "IssuerdAuth",
            ]
        ),
        // libFuzzer's driver (the toolchain's compiler-rt), header only: only a fuzzing build links it.
        .systemLibrary(name: "CLibFuzzer", path: "Sources/CLibFuzzer"),
        .executableTarget(name: "issuerd-fuzz", dependencies: ["IssuerdFuzz", "CLibFuzzer"]),

        // Throwaway databases, generated PKI and HTTP helpers for the test targets.
        .target(
            name: "IssuerdTestSupport",
            dependencies: ["IssuerdCore", "IssuerdCrypto", "IssuerdPostgres"],
            // The peers the tests talk to, run with the test venv's Python.
            exclude: ["Mail/smtp_server.py", "SMPP/smsc_simulator.py"]
        ),

        .testTarget(name: "IssuerdCoreTests", dependencies: ["IssuerdCore"]),
        .testTarget(
            name: "IssuerdCryptoTests", dependencies: ["IssuerdCrypto", "IssuerdTestSupport"], exclude: ["Oracle"],
            resources: [.copy("Fixtures")]),
        .testTarget(name: "IssuerdPostgresTests", dependencies: ["IssuerdPostgres", "IssuerdTestSupport"]),
        .testTarget(
            name: "IssuerdPKCS11Tests", dependencies: ["IssuerdPKCS11", "IssuerdCrypto", "IssuerdTestSupport"]),
        .testTarget(name: "IssuerdHTTPTests", dependencies: ["IssuerdHTTP", "IssuerdTestSupport"]),
        .testTarget(name: "IssuerdWireTests", dependencies: ["IssuerdWire"]),
        .testTarget(
            name: "IssuerdAuthTests",
            dependencies: ["IssuerdAuth", "IssuerdCore", "IssuerdCrypto", "IssuerdTestSupport"]),
        .testTarget(
            name: "IssuerdStorageTests",
            dependencies: ["IssuerdStorage", "IssuerdCore", "IssuerdPostgres", "IssuerdTestSupport"]),
        .testTarget(
            name: "IssuerdHistoryTests",
            dependencies: ["IssuerdCore", "IssuerdHistory", "IssuerdPostgres", "IssuerdTestSupport"]),
        .testTarget(
            name: "IssuerdConsoleTests",
            dependencies: [
                "IssuerdConsole", "IssuerdHistory", "IssuerdRisk", "IssuerdCrypto", "IssuerdPostgres",
                "IssuerdTestSupport",
            ]),
        .testTarget(
            name: "IssuerdImportTests",
            dependencies: ["IssuerdImport", "IssuerdCore", "IssuerdWire", "IssuerdTestSupport"]),
        .testTarget(name: "IssuerdOutboxTests", dependencies: ["IssuerdOutbox"]),
        .testTarget(
            name: "IssuerdSMTPTests", dependencies: ["IssuerdSMTP", "IssuerdCore", "IssuerdTestSupport"]),
        .testTarget(
            name: "IssuerdSMPPTests", dependencies: ["IssuerdSMPP", "IssuerdCore", "IssuerdTestSupport"]),
        .testTarget(name: "IssuerdKeysTests", dependencies: ["IssuerdKeys", "IssuerdCore"]),
        .testTarget(name: "IssuerdRiskTests", dependencies: ["IssuerdRisk", "IssuerdTestSupport"]),
        .testTarget(
            name: "IssuerdAPITests",
            dependencies: [
                "IssuerdAPI", "IssuerdStorage", "IssuerdHistory", "IssuerdConsole", "IssuerdImport",
                "IssuerdOutbox", "IssuerdAuth", "IssuerdMDES", "IssuerdRisk", "IssuerdCrypto",
                "IssuerdTestSupport", "IssuerdClient", "IssuerdPKCS11", "IssuerdKeys",
            ],
            exclude: ["MDES/FakeCustomerService", "MDES/fake_mdes.py", "GooglePay/Oracle"]
        ),
        .testTarget(name: "IssuerdClientTests", dependencies: ["IssuerdClient"]),
        .testTarget(
            name: "IssuerdMDESTests", dependencies: ["IssuerdMDES", "IssuerdCrypto", "IssuerdTestSupport"],
            exclude: ["Oracle"]),
        .testTarget(name: "IssuerdFuzzTests", dependencies: ["IssuerdFuzz"]),
        .testTarget(
            name: "IssuerdOpenPGPTests", dependencies: ["IssuerdOpenPGP", "IssuerdTestSupport"], exclude: ["Oracle"]),
    ],
    swiftLanguageModes: [.v6]
)
