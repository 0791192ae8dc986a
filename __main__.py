"""``python -m graphexec``: the ``graphexec`` command line."""
from .tools.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
