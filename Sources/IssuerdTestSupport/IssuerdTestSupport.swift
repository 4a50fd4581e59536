// Module IssuerdTestSupport: see docs/architecture.md.
