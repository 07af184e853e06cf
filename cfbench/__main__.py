"""``python -m cfbench``: the same as the ``cfbench`` command."""

import sys

from .cli import main

sys.exit(main())
