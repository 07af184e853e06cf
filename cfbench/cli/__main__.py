"""``python -m cfbench.cli``: the same as the ``cfbench`` command."""

import sys

from . import main

sys.exit(main())
