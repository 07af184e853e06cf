"""Reading text and YAML files with errors that name the file, line and field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["read_text", "read_yaml", "load_yaml_text", "shorten", "jsonl_lines"]


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


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split at ``\\n`` only (a CR before it dropped), so a record holding
    U+2028, U+0085 or another character :meth:`str.splitlines` breaks at - JSON allows them unescaped, and
    cfbench writes them so - stays one record. No final empty line after a closing newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


#: PyYAML's YAML 1.1 int and float patterns without their base-60 forms
_YAML_INT = re.compile(r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+)$""", re.X)
_YAML_FLOAT = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X)


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

    def compose_node(loader, parent, index):
        # an alias (``*name``) may repeat a node that itself repeats nodes: 300 bytes can expand to
        # millions of values (a "billion laughs" file), so a config may not use them at all
        if loader.check_event(yaml.events.AliasEvent):
            event = loader.peek_event()
            line = event.start_mark.line + 1
            raise InputError(f"uses the YAML alias *{str(event.anchor)[:40]}; aliases are not accepted "
                             "(write the value out)", record=f"line {line}", field="<yaml>")
        return yaml.SafeLoader.compose_node(loader, parent, index)

    def construct_int(loader, node):
        # YAML 1.1 reads 012 as octal 10 (YAML 1.2 and every reader of the file: 12); say so, do not guess
        text = str(loader.construct_scalar(node))
        body = text.replace("_", "").lstrip("+-")
        if len(body) > 1 and body[0] == "0" and body[1] not in "xXbBoO":
            line = node.start_mark.line + 1
            octal = yaml.SafeLoader.construct_yaml_int(loader, node)
            raise InputError(f"{shorten(text)} would be read as the octal number {octal} (YAML 1.1); write it "
                             "without the leading 0, or quote it for text",
                             record=f"line {line}", field="<yaml>")
        return yaml.SafeLoader.construct_yaml_int(loader, node)

    # YAML 1.1's base-60 numbers (1:30 is 90, 1:30.0 is 90.0) are not resolved: such a value stays text
    # and the parameter's type check names it, instead of a time read as a count
    int_tag, float_tag = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
    own = {int_tag: _YAML_INT, float_tag: _YAML_FLOAT}
    resolvers = {first: [(tag, own.get(tag, regexp)) for tag, regexp in pairs]
                 for first, pairs in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    UniqueKeyLoader.yaml_implicit_resolvers = resolvers
    UniqueKeyLoader.add_constructor(int_tag, construct_int)
    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    UniqueKeyLoader.compose_node = compose_node
    return UniqueKeyLoader


def load_yaml_text(text: str) -> Any:
    """Parse YAML text with the rules of :func:`read_yaml` (no aliases, no repeated keys); the
    InputError names no file (the caller adds where the text came from)."""
    import yaml

    return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 (a SafeLoader subclass)


def shorten(value: Any, limit: int = 80) -> str:
    """A repr of ``value`` of at most about ``limit`` characters (an error line quotes a prefix, never
    a megabyte); built with :mod:`reprlib`, so a huge list or string is never rendered whole."""
    import reprlib

    r = reprlib.Repr()
    r.maxstring = r.maxother = r.maxlong = limit
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = 6
    r.maxlevel = 3
    text = r.repr(value)
    if len(text) > limit:
        text = text[:limit] + "..."
    return text


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file; InputError (with the line) when it is not valid YAML, repeats a key or
    uses an alias.

    PyYAML keeps the last value of a repeated key without a word; a config or contract whose
    ``max_tpr_gap`` appears twice must not be read as either value. Aliases are refused: nested
    ones let a file of a few hundred bytes expand to millions of values.
    """
    import yaml

    text = read_text(path)
    try:
        return load_yaml_text(text)
    except InputError as exc:
        raise InputError(exc.problem, source=str(path), record=exc.record, field=exc.field) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        record = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"is not valid YAML ({problem[:200]})", source=str(path), record=record,
                         field="<yaml>") from None
