"""python -m torch_green_contexts.run [-m module | script.py] [args...]

Runs a program written for ``torch.cuda.green_contexts`` with this package installed in its
place (see ``torch_green_contexts.install()``).
"""

from __future__ import annotations

import os
import runpy
import sys

__all__: list[str] = []


def _main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or (args[0] == "-m" and len(args) < 2):
        print(__doc__.strip())
        return 0 if args and args[0] in ("-h", "--help") else 2
    if args[0] != "-m" and not os.path.isfile(args[0]):
        print(f"python -m torch_green_contexts.run: cannot open {args[0]!r}: no such file", file=sys.stderr)
        return 2
    if args[0] == "-m":
        import importlib.util

        try:
            found = importlib.util.find_spec(args[1])
        except (ImportError, ValueError):
            found = None
        if found is None:
            print(f"python -m torch_green_contexts.run: no module named {args[1]!r}", file=sys.stderr)
            return 2
    import torch_green_contexts

    torch_green_contexts.install()
    if args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))  # as `python script.py` does
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
