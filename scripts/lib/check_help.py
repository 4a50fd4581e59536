#!/usr/bin/env python3
"""Holds every entry script's --help to its header.

An entry script is an executable file directly in scripts/. Its header is the comment block
after the shebang, up to the first line that is not a comment, each line without its "#" and
one space. `scripts/X --help` must exit 0, print exactly that text on stdout and nothing on
stderr. A header must be more than a line and show how to call the script (name it as
scripts/X), so an empty or truncated help cannot pass. Prints one "✔ help: scripts/X" or
"✘ help: scripts/X: …" line per script (scripts/test counts them); exit status 1 on any ✘.

    python3 scripts/lib/check_help.py              # every entry script
    python3 scripts/lib/check_help.py --self-test  # shows that drifted helps are caught

Fast: no script builds or starts anything before it has answered --help.
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Fewer than this many entry scripts means the folder was not read as intended.
MINIMUM_SCRIPTS = 10


def header(path):
    """The script's header comment as its --help must print it."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f):
            if number == 0:
                continue
            if not line.startswith("#"):
                break
            text = line[1:]
            lines.append(text[1:] if text.startswith(" ") else text)
    return "".join(lines)


def entry_scripts(folder):
    return sorted(
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if os.path.isfile(os.path.join(folder, name)) and os.access(os.path.join(folder, name), os.X_OK)
    )


def problem(path, name):
    """Why `path --help` does not print its header, or None when it does."""
    expected = header(path)
    if expected.count("\n") < 2:
        return "the header comment after the shebang has fewer than two lines"
    if name not in expected:
        return f"the header never shows how to call it ({name})"
    try:
        run = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "--help did not answer within 60 s"
    if run.returncode != 0:
        return f"--help exited {run.returncode}: {run.stderr.strip()[:200]}"
    if run.stderr:
        return f"--help wrote to stderr: {run.stderr.strip()[:200]}"
    if run.stdout != expected:
        got, want = run.stdout.splitlines(), expected.splitlines()
        for i in range(max(len(got), len(want))):
            g = got[i] if i < len(got) else "<nothing>"
            w = want[i] if i < len(want) else "<nothing>"
            if g != w:
                return f"line {i + 1} of --help is {g!r}, the header's is {w!r}"
        return "--help differs from the header (line endings)"
    return None


def check(folder, display, minimum):
    scripts = entry_scripts(folder)
    failures = 0
    if len(scripts) < minimum:
        print(f"✘ help: {display}: {len(scripts)} entry scripts, expected at least {minimum}")
        failures += 1
    for path in scripts:
        name = f"{display}/{os.path.basename(path)}"
        why = problem(path, name)
        if why:
            print(f"✘ help: {name}: {why}")
            failures += 1
        else:
            print(f"✔ help: {name}: --help prints its header's {header(path).count(chr(10))} lines")
    return failures


def self_test():
    """Scripts whose help drifted as the hand-counted ranges did are caught; a correct one passes."""
    common = os.path.join(ROOT, "scripts", "lib", "common.sh")
    head = "#!/usr/bin/env bash\n# A script.\n#\n#   scripts/{name} [--x]\n# Its last line.\nset -euo pipefail\n"
    cases = {
        "good": ("-h|--help) usage ;;", True),
        "prints-set": ("-h|--help) sed -n '2,6p' \"$0\" | sed 's/^# \\{0,1\\}//'; exit 0 ;;", False),
        "drops-last": ("-h|--help) sed -n '2,4p' \"$0\" | sed 's/^# \\{0,1\\}//'; exit 0 ;;", False),
        "to-stderr": ("-h|--help) usage >&2 ;;", False),
        "fails": ("-h|--help) exit 3 ;;", False),
    }
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        folder = os.path.join(scratch, "scripts")
        os.mkdir(folder)
        for name, (branch, _) in cases.items():
            path = os.path.join(folder, name)
            with open(path, "w") as f:
                f.write(head.format(name=name))
                f.write(f'source "{common}"\ncase "${{1:-}}" in {branch} esac\n')
            os.chmod(path, 0o755)
        # One without a usage line and a header too short are caught as well.
        for name, text in {"no-usage": "#!/bin/sh\n# A script.\n# More.\n# Yet more.\n", "short": "#!/bin/sh\n# Just this.\n"}.items():
            path = os.path.join(folder, name)
            with open(path, "w") as f:
                f.write(text + 'echo "$0"\n')
            os.chmod(path, 0o755)
            cases[name] = ("", False)
        for name, (_, passes) in sorted(cases.items()):
            why = problem(os.path.join(folder, name), f"scripts/{name}")
            if (why is None) == passes:
                print(f"✔ help: self-test: {name} {'passes' if passes else 'is caught: ' + why}")
            else:
                print(f"✘ help: self-test: {name} {'is refused: ' + str(why) if passes else 'passes unnoticed'}")
                failures += 1
        # An empty folder is not a pass.
        empty = os.path.join(scratch, "empty")
        os.mkdir(empty)
        with open(os.devnull, "w") as devnull:
            stdout, sys.stdout = sys.stdout, devnull
            try:
                caught = check(empty, "empty", MINIMUM_SCRIPTS) > 0
            finally:
                sys.stdout = stdout
        print(f"{'✔' if caught else '✘'} help: self-test: a folder without scripts {'is caught' if caught else 'passes'}")
        failures += 0 if caught else 1
    return failures


def main():
    parser = argparse.ArgumentParser(description="Checks that every scripts/* --help prints its header comment.")
    parser.add_argument("--self-test", action="store_true", help="show that drifted helps are caught")
    args = parser.parse_args()
    failures = self_test() if args.self_test else check(os.path.join(ROOT, "scripts"), "scripts", MINIMUM_SCRIPTS)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
