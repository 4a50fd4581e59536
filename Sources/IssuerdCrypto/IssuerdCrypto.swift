// Module IssuerdCrypto: see docs/architecture.md.
