// Module IssuerdRisk: see docs/architecture.md.
