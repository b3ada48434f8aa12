"""python -m npzfs, and the npzfs command: the bundled npzfs program, with
the same arguments, output and exit code."""

import os
import sys

from . import Error, binary


def main() -> None:
    try:
        prog = binary()
    except Error as e:
        print(e, file=sys.stderr)
        sys.exit(e.exit_code)
    os.execv(prog, ["npzfs", *sys.argv[1:]])


if __name__ == "__main__":
    main()
