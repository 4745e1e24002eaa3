"""``python -m asp_core``: the ``asp`` command line (``asp_core.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
