// Module IssuerdPostgres: see docs/architecture.md.
