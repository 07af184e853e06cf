"""Judge tasks: prompt builders and output parsers, one module per task.

Each task module turns study rows into :class:`~cfbench.judges.Request`
objects and parses replies into tidy columns. A reply that cannot be parsed
is a parse failure (``parse_ok=False`` with the raw text kept), never a "No".
Importing this package registers each task's scripted test double.
"""

from __future__ import annotations

import importlib
import pkgutil

# Import every task module so their scripted judges are registered.
for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")
