"""Reading text and YAML files with errors that name the file, line and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["read_text", "read_yaml"]


def read_text(path: str | Path) -> str:
    """A file's text as UTF-8 (a leading BOM is dropped); InputError when absent or not UTF-8."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", source=str(path))
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"is not valid UTF-8 (byte {exc.start}, line {line})", source=str(path),
                         record=f"line {line}", field="<encoding>") from None


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file; InputError (with the line) when it is not valid YAML."""
    import yaml

    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        record = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"is not valid YAML ({problem})", source=str(path), record=record,
                         field="<yaml>") from None
