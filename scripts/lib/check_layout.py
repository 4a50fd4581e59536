"""The package's layout against docs/architecture.md's table of allowed dependencies.

Reads the package graph (`swift package describe --type json`) and every `import` under
`Sources/` and `Tests/`, and fails on:
  - a target that the table does not name (a new module must be placed in the picture first);
  - a declared dependency (Package.swift) or an import that the table does not allow;
  - an import of a package module that the importing target does not declare (it would only
    build by accident, through another target's dependency);
  - a C module imported by anything but its one wrapper (or that wrapper's tests).

Tests may import what their target declares; a C module only in the tests of its wrapper.
Toolchain modules (Foundation, Dispatch, Synchronization, Glibc, XCTest, Testing, ...) are
allowed everywhere.

    python3 scripts/lib/check_layout.py [--root DIR] [--describe FILE.json]
    python3 scripts/lib/check_layout.py --self-test

Prints one line per check, "✔ layout: ..." or "✘ layout: ...", and exits 1 on any failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOOLCHAIN = {
    "Foundation", "FoundationNetworking", "FoundationEssentials", "Dispatch", "Synchronization", "Glibc", "Musl",
    "Darwin", "XCTest", "Testing", "PassKit", "UIKit", "Security", "os", "PackagePlugin",
}
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_exported\s+|@_implementationOnly\s+|@preconcurrency\s+)*import\s+"
                    r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)
HEADING = "## Modules"


# Libraries that exist for the tests themselves, so they need no tests of their own.
TEST_SUPPORT = {"IssuerdTestSupport"}


def allowed_table(architecture):
    """{module: set of modules it may depend on}, from the table under HEADING (its first
    column names the module, its last what it may depend on)."""
    text = open(architecture, encoding="utf-8").read()
    if HEADING not in text:
        raise SystemExit(f"{architecture}: no '{HEADING}' section")
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not line.lstrip().startswith("|") or set(cells[0]) <= set("-: "):
            continue
        if cells[0].lower() in ("module", "target"):
            continue
        deps = {d.strip().strip("`") for d in cells[-1].split(",")} - {"", "—", "-", "nothing"}
        for name in cells[0].split(","):
            table[name.strip().strip("`")] = deps
    return table


def describe(root, path=None):
    if path:
        return json.load(open(path, encoding="utf-8"))
    out = subprocess.run(["swift", "package", "describe", "--type", "json"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])


def imports(directory):
    """{module imported: [file, ...]} for every Swift file under directory."""
    found = {}
    for base, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".swift"):
                path = os.path.join(base, name)
                for module in IMPORT.findall(open(path, encoding="utf-8").read()):
                    found.setdefault(module, []).append(path)
    return found


def closure(targets, names):
    """names and every target they depend on, transitively (what a test target can see)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in targets:
            continue
        seen.add(name)
        todo.extend(targets[name].get("target_dependencies", []))
    return seen | set(names)


def check(root, architecture, package):
    """The list of problems, each one sentence; empty when the layout holds."""
    table = allowed_table(architecture)
    targets = {t["name"]: t for t in package["targets"]}
    c_modules = {n for n, t in targets.items() if t["type"] == "system-target"}
    problems = []
    for name, target in sorted(targets.items()):
        is_test = target["type"] == "test"
        declared = set(target.get("target_dependencies", [])) | set(target.get("product_dependencies", []))
        direct = declared
        if is_test:
            declared = closure(targets, declared)
        if is_test:
            # A test target may depend on what it tests and on test support; it is held to the
            # same table through the modules it declares.
            for dep in declared:
                if dep not in targets:
                    problems.append(f"{name} depends on {dep}, which is not a target of this package")
        elif name not in table:
            problems.append(f"{name} is not in docs/architecture.md's '{HEADING}' table")
            continue
        else:
            for dep in sorted(declared - table[name]):
                problems.append(f"{name} depends on {dep} in Package.swift; docs/architecture.md does not allow it")
        for module, files in sorted(imports(os.path.join(root, target["path"])).items()):
            where = os.path.relpath(files[0], root)
            if module in TOOLCHAIN or module == name:
                continue
            if module in c_modules:
                wrappers = {n for n, t in targets.items() if t["type"] != "test" and module in t.get("target_dependencies", [])}
                tested = is_test and direct & wrappers
                if name not in wrappers and not tested:
                    problems.append(f"{where} imports the C module {module}; only its wrapper ({', '.join(sorted(wrappers))}) may")
                elif module not in declared and not tested:
                    problems.append(f"{where} imports {module}, which {name} does not declare")
                continue
            if module not in targets:
                problems.append(f"{where} imports {module}, which is neither a target nor a toolchain module")
            elif module not in declared:
                problems.append(f"{where} imports {module}, which {name} does not declare in Package.swift")
            elif not is_test and module not in table.get(name, set()):
                problems.append(f"{where} imports {module}; docs/architecture.md does not allow {name} → {module}")
    # Tests mirror Sources: every library module has a test target of its own, named after it
    # and declaring it (test support is itself the tests' library).
    for name, target in sorted(targets.items()):
        if target["type"] != "library" or name in TEST_SUPPORT:
            continue
        tests = targets.get(name + "Tests")
        if tests is None or tests["type"] != "test":
            problems.append(f"{name} has no test target {name}Tests (Tests/ mirrors Sources/)")
        elif name not in tests.get("target_dependencies", []):
            problems.append(f"{name}Tests does not declare {name}, the module it is named after")
    for c_module in sorted(c_modules):
        users = [n for n, t in targets.items() if t["type"] != "test" and c_module in t.get("target_dependencies", [])]
        if len(users) != 1:
            problems.append(f"the C module {c_module} is a dependency of {len(users)} targets ({', '.join(users)}); one wrapper each")
    return problems


def self_test(root):
    """Copies the package's layout into a scratch folder, adds one forbidden edge at a time, and
    checks that each is caught (and that the untouched copy passes)."""
    package = describe(root)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "pkg")
        shutil.copytree(os.path.join(root, "Sources"), os.path.join(copy, "Sources"),
                        ignore=shutil.ignore_patterns("Resources"))
        shutil.copytree(os.path.join(root, "Tests"), os.path.join(copy, "Tests"),
                        ignore=shutil.ignore_patterns("Fixtures", "Oracle", "*.py"))
        os.makedirs(os.path.join(copy, "docs"))
        architecture = os.path.join(copy, "docs", "architecture.md")
        shutil.copy(os.path.join(root, "docs", "architecture.md"), architecture)

        def expect(label, want_failure, needle=""):
            problems = check(copy, architecture, package)
            caught = any(needle in p for p in problems) if want_failure else not problems
            results.append((label, caught, problems))

        expect("the package as it is passes", False)

        probe = os.path.join(copy, "Sources", "IssuerdRisk", "LayoutProbe.swift")
        open(probe, "w").write("import IssuerdPostgres\n")
        expect("IssuerdRisk importing an I/O module (IssuerdPostgres) fails", True, "IssuerdRisk")
        os.remove(probe)

        probe = os.path.join(copy, "Sources", "IssuerdAPI", "LayoutProbe.swift")
        open(probe, "w").write("import COpenSSL\n")
        expect("a C module imported outside its wrapper fails", True, "C module COpenSSL")
        os.remove(probe)

        probe = os.path.join(copy, "Tests", "IssuerdAPITests", "LayoutProbe.swift")
        open(probe, "w").write("import CPostgres\n")
        expect("a C module imported by another module's tests fails", True, "C module CPostgres")
        os.remove(probe)

        # No HTTP below the API: a record layer that imports IssuerdHTTP fails, even when
        # Package.swift declares the dependency too.
        for record_layer in ("IssuerdStorage", "IssuerdHistory", "IssuerdAuth", "IssuerdImport"):
            probe = os.path.join(copy, "Sources", record_layer, "LayoutProbe.swift")
            open(probe, "w").write("import IssuerdHTTP\n")
            edited = json.loads(json.dumps(package))
            for target in edited["targets"]:
                if target["name"] == record_layer:
                    target["target_dependencies"].append("IssuerdHTTP")
            problems = check(copy, architecture, edited)
            results.append((f"{record_layer} importing IssuerdHTTP fails (no HTTP below the API)",
                            any(f"{record_layer} depends on IssuerdHTTP" in p for p in problems)
                            and any(f"{record_layer} → IssuerdHTTP" in p for p in problems), problems))
            os.remove(probe)

        probe = os.path.join(copy, "Sources", "IssuerdStorage", "LayoutProbe.swift")
        open(probe, "w").write("@testable import IssuerdAPI\n")
        expect("a lower module importing IssuerdAPI fails", True, "IssuerdStorage")
        os.remove(probe)

        edited = json.loads(json.dumps(package))
        for target in edited["targets"]:
            if target["name"] == "IssuerdRisk":
                target["target_dependencies"].append("IssuerdHTTP")
        problems = check(copy, architecture, edited)
        results.append(("a Package.swift edge the table does not allow fails",
                        any("IssuerdRisk depends on IssuerdHTTP" in p for p in problems), problems))

        edited = json.loads(json.dumps(package))
        edited["targets"] = [t for t in edited["targets"] if t["name"] != "IssuerdHistoryTests"]
        problems = check(copy, architecture, edited)
        results.append(("a library module without its own test target fails",
                        any("IssuerdHistory has no test target" in p for p in problems), problems))

        edited = json.loads(json.dumps(package))
        edited["targets"].append({"name": "IssuerdNew", "type": "library", "path": "Sources/IssuerdNew",
                                  "target_dependencies": ["IssuerdCore"]})
        os.makedirs(os.path.join(copy, "Sources", "IssuerdNew"))
        problems = check(copy, architecture, edited)
        results.append(("a module missing from the picture fails", any("IssuerdNew is not in" in p for p in problems),
                        problems))
    failed = 0
    for label, ok, problems in results:
        print(f"{'✔' if ok else '✘'} layout: self-test: {label}")
        if not ok:
            failed += 1
            for p in problems[:10]:
                print(f"    {p}")
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
    parser.add_argument("--describe", help="a saved `swift package describe --type json` instead of running it")
    parser.add_argument("--self-test", action="store_true", help="show that added edges are caught")
    args = parser.parse_args()
    if args.self_test:
        sys.exit(1 if self_test(args.root) else 0)
    problems = check(args.root, os.path.join(args.root, "docs", "architecture.md"), describe(args.root, args.describe))
    if problems:
        print(f"✘ layout: {len(problems)} edge(s) docs/architecture.md does not allow")
        for p in problems:
            print(f"    {p}")
        sys.exit(1)
    print("✔ layout: every dependency and import is one docs/architecture.md allows")


if __name__ == "__main__":
    main()
