// Module IssuerdAPI: see docs/architecture.md.
