"""``python -m sklstruct``: the command line of :mod:`sklstruct.cli`."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
