// Module IssuerdHTTP: see docs/architecture.md.
