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


def _unique_key_loader():
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        """SafeLoader that raises on a key given twice in one mapping (PyYAML keeps the last one silently)."""

    def construct_mapping(loader, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise InputError(f"key given twice (lines {seen[key]} and {line}); keep one",
                                 record=f"line {line}", field=str(key))
            seen[key] = line
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return UniqueKeyLoader


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file; InputError (with the line) when it is not valid YAML or repeats a key.

    PyYAML keeps the last value of a repeated key without a word; a config or contract whose
    ``max_tpr_gap`` appears twice must not be read as either value.
    """
    import yaml

    text = read_text(path)
    try:
        return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 (a SafeLoader subclass)
    except InputError as exc:
        raise InputError(exc.problem, source=str(path), record=exc.record, field=exc.field) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        record = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"is not valid YAML ({problem})", source=str(path), record=record,
                         field="<yaml>") from None
