"""The `egca-serve` console script of a pip-installed egca: runs the egca-serve program
installed next to the extension (docs/serve.md)."""
from __future__ import annotations

import os
import sys


def main() -> None:
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "egca-serve")
    if not os.access(program, os.X_OK):
        sys.exit(f"egca-serve: {program} is missing (a PYTHONPATH=build/python checkout runs "
                 f"build/tools/egca-serve/egca-serve instead)")
    os.execv(program, [program, *sys.argv[1:]])


if __name__ == "__main__":
    main()
