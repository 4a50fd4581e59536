"""The operational drills: scripts/restore-drill (a point-in-time restore under load) and
scripts/upgrade-drill (the previous release upgraded under load behind nginx). Test tooling only
(Python standard library, never part of the product)."""
