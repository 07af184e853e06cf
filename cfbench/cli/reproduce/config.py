"""Where a study's notebook and configs are, and the parameters a run hands it.

A config is ``configs/<study>/<config>.yaml`` (a shipped one: :data:`CONFIGS`) or any YAML file
(``-f``), plus ``-p name value`` overrides read as YAML. Every parameter is checked before any
notebook starts: declared in the notebook's ``parameters`` cell with its type, accepted by the
study's own ``Params``, never a secret, never one the runner sets itself. :class:`Run` is one
study's run as configured.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ...core.errors import InputError
from ...core.files import load_yaml_text, read_yaml, shorten

__all__ = ["CONFIGS", "Run", "project_root", "study_files", "studies", "load_config", "load_config_file",
           "check_against_study", "notebook_parameters", "parse_override", "absolute_paths", "relative_to",
           "differing"]

#: The configs shipped for every study (any other YAML file runs with ``config_file``).
CONFIGS = ("smoke", "default", "paper")

# Parameter names that must never carry a value: keys come from the environment only.
_SECRET_NAME = re.compile(r"(^|[_-])(api[_-]?key|key|token|secret|password|passwd)$", re.IGNORECASE)
# Parameters the runner sets itself.
_RUNNER_PARAMS = ("output_dir", "config_name")


def project_root() -> Path:
    """Where this cfbench's ``notebooks/`` and ``configs/`` are: inside the installed package
    (a wheel ships them as ``cfbench/notebooks``, ``cfbench/configs``), else the checkout it runs from."""
    here = Path(__file__).resolve().parents[2]  # the cfbench package (this file: cfbench/cli/reproduce/)
    for candidate in (here, here.parent):
        if (candidate / "notebooks").is_dir() and (candidate / "configs").is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the study notebooks and configs beside {here}; reinstall cfbench")


def study_files(study: str, root: Path | None = None) -> tuple[Path, Path]:
    """``(notebook, configs folder)`` of a study.

    cfbench's own studies: ``notebooks/<study>.ipynb`` and ``configs/<study>/``. A study a plugin
    package adds (entry-point group ``cfbench.studies``) ships both beside its module:
    ``<module folder>/<study>.ipynb`` and ``<module folder>/configs/<config>.yaml``.
    """
    root = root or project_root()
    own = root / "notebooks" / f"{study}.ipynb", root / "configs" / study
    if own[0].is_file():
        return own
    from ...studies import _plugin_studies

    module = _plugin_studies().get(study)
    if module:
        import importlib.util

        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            here = Path(spec.origin).parent
            return here / f"{study}.ipynb", here / "configs"
    return own


def studies(root: Path | None = None) -> list[str]:
    """The studies that can run: a study package (cfbench's own or a plugin's) whose notebook exists."""
    from ...studies import available

    root = root or project_root()
    return [s for s in available() if study_files(s, root)[0].is_file()]


def load_config(study: str, config: str, *, root: Path | None = None) -> dict[str, Any]:
    """Parameters of one study under one shipped config, validated."""
    root = root or project_root()
    path = study_files(study, root)[1] / f"{config}.yaml"
    if not path.is_file():
        raise InputError(f"no such config file (configs exist for: {', '.join(CONFIGS)})", source=str(path))
    return load_config_file(path, study, root=root)


def load_config_file(path: str | os.PathLike[str], study: str, *, root: Path | None = None,
                     overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Parameters from any YAML file (plus ``overrides``), checked against the study notebook."""
    root = root or project_root()
    path = Path(path)
    params = read_yaml(path)
    if params is None:
        raise InputError("config is empty; it must set the notebook's parameters (an empty config would "
                         "silently run the notebook's own defaults under this config's name)", source=str(path))
    if not isinstance(params, dict):
        raise InputError(f"must be a mapping of parameter names to values, got {type(params).__name__}",
                         source=str(path))
    params = {**params, **(overrides or {})}
    if "plugins" in params:  # modules to import first (cfbench.plugins); not a notebook parameter
        from ...plugins import use

        value = params.pop("plugins")
        use([value] if isinstance(value, str) else list(value or ()), source=str(path))
    overridden = set(overrides or {})

    def source(name: object) -> str:  # a -p value is reported as coming from -p, not from the file
        return f"-p {name}" if name in overridden else str(path)

    for name in params:
        if not isinstance(name, str):
            raise InputError("parameter names must be strings", source=str(path), field=str(name))
        if _SECRET_NAME.search(name):
            raise InputError("looks like a secret; keys and tokens come from environment variables only, "
                             "never from parameters (papermill writes parameters into the executed notebook)",
                             source=source(name), field=name)
        if name in _RUNNER_PARAMS:
            raise InputError("is set by cfbench reproduce, not by a config", source=source(name), field=name)
    notebook = study_files(study, root)[0]
    if notebook.is_file():
        _check_against_notebook(params, notebook, source=source)
    return params


def check_against_study(params: dict[str, Any], study: str, *, source: Any) -> None:
    """Values the study's own ``Params.from_config`` rejects, and counts below their floor (``n_items 0``;
    :func:`cfbench.core.params.check_floors`), fail here before any notebook runs, naming the field and
    where its value came from."""
    try:
        from ...studies import load

        module = load(study)
    except Exception:  # a study that cannot be imported fails in its notebook, with its own message
        return
    from_config = getattr(getattr(module, "Params", None), "from_config", None)
    if from_config is None:
        return
    known = {k: v for k, v in params.items() if k not in _RUNNER_PARAMS}
    try:
        from_config(known)
    except InputError as exc:
        if exc.field is None:
            raise
        raise InputError(exc.problem, source=source(exc.field), record=exc.record, field=exc.field) from None
    if dataclasses.is_dataclass(module.Params):
        from ...core.params import check_floors

        check_floors(module.Params, known, source=source)


_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict}


def notebook_parameters(notebook: Path) -> dict[str, type | None]:
    """Names declared in a notebook's ``parameters`` cell and their types (from the
    annotation, else from the literal default; None when neither tells)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not cells:
        raise InputError("has no cell tagged 'parameters'", source=str(notebook))
    declared: dict[str, type | None] = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            ann = node.annotation.id if isinstance(node.annotation, ast.Name) else None
            declared[node.target.id] = _TYPES.get(ann or "")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    try:
                        value = ast.literal_eval(node.value)
                    except ValueError:
                        value = None
                    declared[target.id] = None if value is None else type(value)
    return declared


def _check_against_notebook(params: dict[str, Any], notebook: Path, *, source: Any) -> None:
    """Every config parameter must be declared in the notebook's ``parameters`` cell, with the
    declared type (an int is accepted where a float is declared)."""
    if isinstance(source, str):
        source = (lambda text: lambda name: text)(source)
    declared = notebook_parameters(notebook)
    for name, value in params.items():
        if name not in declared:
            raise InputError(f"{notebook.name} declares no parameter {name!r} (declared: "
                             f"{', '.join(sorted(declared))})", source=source(name), field=name)
        expected = declared[name]
        if expected is None or value is None:
            continue
        ok = isinstance(value, expected) and not (expected is not bool and isinstance(value, bool))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise InputError(f"expected {expected.__name__} (as declared in {notebook.name}), got "
                             f"{type(value).__name__} {shorten(value)}", source=source(name), field=name)


def parse_override(name: str, raw: str) -> tuple[str, Any]:
    """A ``-p name value`` pair: the value is read as YAML (``8`` is an int, ``[a, b]`` a list, ``x`` a string)."""
    import yaml

    try:
        value = load_yaml_text(raw)
    except InputError as exc:  # an alias or a repeated key
        raise InputError(exc.problem, source=f"-p {name}", field=name) from None
    except yaml.YAMLError:
        value = raw
    return name, value


@dataclass(frozen=True)
class Run:
    """One study's run as configured: which study, the results folder's name, the parameters."""

    study: str
    config: str  # the results folder's name (the config, the file's stem, or either with a hash)
    params: dict[str, Any]
    label: str = ""  # the config or file as given (for the provenance cell)
    overrides: tuple = ()  # (name, value) pairs from -p


def absolute_paths(params: dict[str, Any]) -> dict[str, Any]:
    """``*_path`` parameters given relative to where the user stands (the notebook runs elsewhere).

    A ``name:...`` source that is not a file (``synthetic:seed=1``; a scheme of two or more
    letters, so a Windows drive letter is still a path) is left as it is, and so is a bare word
    (letters, digits, ``_``; no dot or separator) naming no file here (``synthetic``): the study
    reads it as a source name, or says in one line that no such file exists.
    """
    return {k: (str(Path(v).resolve()) if k.endswith("_path") and isinstance(v, str) and v
                and not _SOURCE_SCHEME.match(v) and not (_BARE_WORD.match(v) and not Path(v).exists())
                else v)
            for k, v in params.items()}


_SOURCE_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9_]+:(?![/\\])")
_BARE_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def relative_to(folder: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The absolute ``*_path`` parameters rewritten relative to the folder the notebook runs in.

    The staging folder and the final results folder are siblings, so the path stays right after the
    swap, and no path of this machine enters the executed notebook or its ``summary.json``. A path on
    another drive (no relative form) stays absolute.
    """
    def rel(v: str) -> str:
        try:
            return os.path.relpath(v, folder)
        except ValueError:
            return v
    return {k: (rel(v) if k.endswith("_path") and isinstance(v, str) and os.path.isabs(v) else v)
            for k, v in params.items()}


def differing(overrides: Mapping[str, Any] | None, base: Mapping[str, Any]) -> tuple:
    """The ``-p`` overrides whose value differs from the config's own (the rest change nothing)."""
    missing = object()
    return tuple((k, v) for k, v in (overrides or {}).items() if base.get(k, missing) != v)
