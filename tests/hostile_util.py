"""Shared by the hostile-input tests: where the corpus lives, and what a good error looks like."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Callable

import pytest

from cfbench.core.errors import InputError

CORPUS = Path(__file__).resolve().parent / "hostile"


def expect_input_error(call: Callable[[], Any], *, field: str | None, record: str | None = None) -> InputError:
    """``call()`` must raise one InputError whose ``field`` is ``field`` and whose
    ``record`` contains ``record``; both must also appear in the message, and no
    library's internals (pandas, yaml, csv, codecs) may be left in the chain."""
    with pytest.raises(InputError) as info:
        call()
    err = info.value
    assert err.field == field, f"field {err.field!r} != {field!r}: {err}"
    if field is not None:
        assert repr(field) in str(err)
    if record is not None:
        assert err.record is not None and record in str(err.record), f"record {err.record!r}: {err}"
        assert record in str(err)
    cause = err.__cause__ or err.__context__
    if cause is not None and not err.__suppress_context__:
        chain = "".join(traceback.format_exception(cause))
        for lib in ("pandas", "yaml", "_csv", "codecs", "numbers_parser"):
            assert f"/{lib}/" not in chain, f"InputError chained onto a {lib} traceback:\n{chain}"
    return err
