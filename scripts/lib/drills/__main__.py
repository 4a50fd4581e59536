"""python3 scripts/lib/drills restore|upgrade|cards N DIR: the drills' drivers (their scripts set the
environment) and the cards file both import."""

import os
import sys

if not __package__:
    # Run as a folder (python3 scripts/lib/drills): its parent on the path, so that the package
    # and its modules import by name.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from drills import load  # noqa: E402

if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "cards":
        load.write_cards(int(sys.argv[2]), sys.argv[3])
    elif command == "restore":
        from drills import restore
        sys.exit(restore.main())
    elif command == "upgrade":
        from drills import upgrade
        sys.exit(upgrade.main())
    else:
        sys.exit("usage: python3 scripts/lib/drills restore|upgrade|cards N DIR")
