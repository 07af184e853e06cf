"""Which of llama.cpp's CPU kernels the embedded judge runs, chosen for the CPU it runs on.

``make install`` builds llama-cpp-python with ``GGML_BACKEND_DL=ON``: the CPU
backend is not linked into ``libggml.so`` but built as loadable modules in
``llama_cpp/lib``: ``libggml-cpu.so`` (portable: AVX2, FMA, F16C, BMI2) and
one ``libggml-cpu-<name>.so`` per extra instruction-set level (by default
``icelake``: AVX-512 with VBMI and VNNI). Each
module scores itself against the running CPU (``ggml_backend_score``, 0 =
cannot run here). llama-cpp-python does not load such modules itself
(llama-cpp-python issue #2069), so :func:`load_cpu_backend` asks every module
its score and loads the best one (``ggml_backend_load``) through ctypes
before the first model is loaded, once per process; a module with AMX kernels
is never chosen unless forced (a VM listed AMX and died on it).

``CFBENCH_GGML_CPU_VARIANT=<name>`` loads that one module instead (``baseline``
is the portable ``libggml-cpu.so``), for example to run the AVX2 kernels on an
AVX-512 machine; a variant this CPU cannot run is refused by ggml, not run.

A build without dynamic loading (``pip install llama-cpp-python`` with other
flags) has its CPU backend built in; it is reported as such and used as is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import JudgeError

__all__ = ["CpuBackend", "load_cpu_backend", "cpu_backend_summary", "VARIANT_ENV", "available_variants"]

#: environment variable naming the CPU variant to load instead of the best one
VARIANT_ENV = "CFBENCH_GGML_CPU_VARIANT"
BASELINE = "baseline"  # the portable libggml-cpu.so (AVX2)

_lock = threading.Lock()
_loaded: "CpuBackend | None" = None


@dataclass(frozen=True)
class CpuBackend:
    """The CPU backend llama.cpp uses in this process."""

    variant: str  # "icelake", "baseline", another variant's tag, or "built-in"
    library: str  # the module's file name
    features: tuple[str, ...]  # instruction sets the module was compiled for (ggml's names)
    how: str  # "best of N for this CPU", "forced by CFBENCH_GGML_CPU_VARIANT", "built in"
    available: tuple[str, ...]  # variants present beside it ("" for a built-in backend)

    @property
    def isa(self) -> str:
        """The instruction-set level in words, e.g. ``x86-64 AVX-512 VNNI + AMX``."""
        f = set(self.features)
        if "AVX512" in f:
            level = "x86-64 AVX-512" + (" VNNI" if "AVX512_VNNI" in f else "")
            return level + (" + AMX" if "AMX_INT8" in f else "")
        if "AVX2" in f:
            return "x86-64 AVX2" + (" + AVX-VNNI" if "AVX_VNNI" in f else "")
        return "generic (" + (" ".join(sorted(f)) or "no SIMD features reported") + ")"

    def describe(self) -> str:
        """One line for provenance, e.g. ``x86-64 AVX-512 VNNI (icelake, libggml-cpu-icelake.so; best of 2 for this CPU)``."""
        return f"{self.isa} ({self.variant}, {self.library}; {self.how})"

    def as_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "isa": self.isa, "library": self.library, "how": self.how,
                "features": list(self.features), "available": list(self.available)}


class _Feature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _lib_dir(llama_cpp: Any = None) -> Path:
    if llama_cpp is None:
        import llama_cpp  # noqa: F811 - the installed bindings
    return Path(llama_cpp.__file__).resolve().parent / "lib"


def available_variants(lib_dir: Path) -> tuple[str, ...]:
    """The loadable CPU modules in ``lib_dir``: ``baseline`` for libggml-cpu.so, else the file's tag.

    A build with the CPU backend built in has a libggml-cpu.so too, linked to libggml.so rather than
    loadable (it exports no ``ggml_backend_score``): it is not a variant.
    """
    names = []
    for p in sorted(lib_dir.glob("libggml-cpu*.so")):
        stem = p.name[len("libggml-cpu"):-len(".so")]
        if stem == "" and _is_dl_module(str(p)):
            names.append(BASELINE)
        elif stem.startswith("-"):
            names.append(stem[1:])
    return tuple(sorted(names))


def _ggml(lib_dir: Path) -> Any:
    """The libggml instance libllama uses (its backend registry is the one the model loader reads).

    A wheel holds libggml.so, libggml.so.0, ... as separate copies (no symlinks), and dlopen of a copy
    under another name would load a second instance with an empty registry: so the library already in
    the process under its soname comes first, then the file libllama's $ORIGIN run path finds.
    """
    lib = None
    for name in ("libggml.so.0", str(lib_dir / "libggml.so.0"), str(lib_dir / "libggml.so")):
        try:
            lib = ctypes.CDLL(name, mode=getattr(os, "RTLD_NOLOAD", 0) if "/" not in name else ctypes.DEFAULT_MODE)
            break
        except OSError:
            continue
    if lib is None:
        raise JudgeError(f"llama.cpp's libggml is neither loaded nor in {lib_dir}")
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    for name, res, args in (("ggml_backend_reg_by_name", vp, [cp]), ("ggml_backend_load", vp, [cp]),
                            ("ggml_backend_load_all_from_path", None, [cp]),
                            ("ggml_backend_reg_get_proc_address", vp, [vp, cp])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def _module_file(address: int) -> str:
    """The shared object holding ``address`` (dladdr), or '' when it cannot be told."""
    for libname in (None, ctypes.util.find_library("dl")):
        try:
            dladdr = ctypes.CDLL(libname).dladdr
        except (OSError, AttributeError):
            continue
        dladdr.argtypes, dladdr.restype = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)], ctypes.c_int
        info = _DlInfo()
        if dladdr(address, ctypes.byref(info)) and info.dli_fname:
            return os.fsdecode(info.dli_fname)
    return ""


def _features(ggml: Any, reg: int) -> tuple[tuple[str, ...], str]:
    """The CPU module's compiled features (value "1") and its file."""
    addr = ggml.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_get_features")
    if not addr:
        return (), ""
    fn = ctypes.CFUNCTYPE(ctypes.POINTER(_Feature), ctypes.c_void_p)(addr)
    out, arr, i = [], fn(reg), 0
    while arr[i].name:
        if arr[i].value == b"1":
            out.append(arr[i].name.decode())
        i += 1
    return tuple(out), _module_file(addr)


def _is_dl_module(path: str) -> bool:
    """Whether ``path`` is a dynamically loadable ggml backend (it exports ``ggml_backend_score``)."""
    try:
        return bool(path) and hasattr(ctypes.CDLL(path), "ggml_backend_score")
    except OSError:
        return False


#: instruction sets the portable module must not be compiled for (it has to run on any x86-64 with AVX2)
_NOT_PORTABLE = ("AVX512", "AMX", "AVX_VNNI")


def module_features(lib_dir: Path, file: str) -> tuple[str, ...]:
    """The instruction sets the CPU module ``lib_dir/file`` was compiled for, asked of the module itself
    (its ``ggml_backend_init``) without registering it. Only for a module this CPU can run."""
    ggml = _ggml(lib_dir)
    init = ctypes.CDLL(str(lib_dir / file)).ggml_backend_init
    init.restype, init.argtypes = ctypes.c_void_p, []
    return _features(ggml, init())[0]


def _variant_of(path: str) -> str:
    name = Path(path).name
    if name.startswith("libggml-cpu-") and name.endswith(".so"):
        return name[len("libggml-cpu-"):-len(".so")]
    return BASELINE if name == "libggml-cpu.so" else name or "?"


def _file_of(variant: str) -> str:
    return "libggml-cpu.so" if variant == BASELINE else f"libggml-cpu-{variant}.so"


def _pick(lib_dir: Path, present: tuple[str, ...]) -> tuple[str | None, str]:
    """The module to load: the highest ``ggml_backend_score`` (llama.cpp's own rule: 0 = an instruction set
    this CPU lacks), except AMX modules, which are never chosen by themselves (a VM can list AMX in cpuid
    and still kill the process at the first AMX instruction: this project's Xeon did). Returns its file
    name (None when none runs here) and how it was chosen."""
    scored, skipped = [], []
    for variant in present:
        try:
            score_fn = ctypes.CDLL(str(lib_dir / _file_of(variant))).ggml_backend_score
        except (OSError, AttributeError):
            continue
        score_fn.restype, score_fn.argtypes = ctypes.c_int, []
        score = int(score_fn())
        if score <= 0:
            continue
        if any(f.startswith("AMX") for f in module_features(lib_dir, _file_of(variant))):
            skipped.append(variant)
            continue
        scored.append((score, variant))
    if not scored:
        return None, ""
    how = f"best of {len(present)} for this CPU"
    if skipped:
        how += f"; not {', '.join(skipped)}: AMX is chosen only when forced by {VARIANT_ENV}"
    return _file_of(max(scored)[1]), how


def load_cpu_backend(llama_cpp: Any = None) -> CpuBackend:
    """Load llama.cpp's best CPU backend for this CPU (or the forced one), once per process; say which."""
    global _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        lib_dir = _lib_dir(llama_cpp)
        ggml = _ggml(lib_dir)
        present = available_variants(lib_dir)
        forced = os.environ.get(VARIANT_ENV, "").strip()
        reg = ggml.ggml_backend_reg_by_name(b"CPU")
        if reg:  # linked in at build time (no GGML_BACKEND_DL), or loaded by someone else before us
            if _is_dl_module(_features(ggml, reg)[1]):
                how = "loaded before cfbench in this process"
            elif forced:
                raise JudgeError(f"{VARIANT_ENV}={forced}: this llama-cpp-python has its CPU backend built in, "
                                 "so no variant can be chosen (reinstall with `make install`)")
            else:
                how, present = "built in at compile time (no run-time choice)", ()
        elif forced:
            file = _file_of(forced)
            if forced not in present:
                raise JudgeError(f"{VARIANT_ENV}={forced}: no {file} in {lib_dir} "
                                 f"(present: {', '.join(present) or 'none'})")
            reg = ggml.ggml_backend_load(os.fsencode(lib_dir / file))
            if not reg:
                raise JudgeError(f"{VARIANT_ENV}={forced}: llama.cpp refused {file}: this CPU lacks an "
                                 "instruction set it was built for")
            how = f"forced by {VARIANT_ENV}"
        else:
            file, how = _pick(lib_dir, present)
            reg = ggml.ggml_backend_load(os.fsencode(lib_dir / file)) if file else None
            if not reg:
                raise JudgeError(f"none of llama.cpp's CPU backends in {lib_dir} runs on this CPU "
                                 f"(present: {', '.join(present) or 'none'}; the portable one needs AVX2)")
        features, path = _features(ggml, reg)
        variant = "built-in" if not present else _variant_of(path)
        _loaded = CpuBackend(variant, Path(path).name or "?", features, how, present)
        return _loaded


def cpu_backend_summary() -> str | None:
    """:meth:`CpuBackend.describe` for provenance; None without llama-cpp-python, the error when loading fails."""
    try:
        import llama_cpp
    except ImportError:
        return None
    try:
        return load_cpu_backend(llama_cpp).describe()
    except Exception as exc:  # noqa: BLE001 - provenance never stops a run; it says what went wrong
        return f"unknown ({type(exc).__name__}: {exc})"


def main(argv: list[str] | None = None) -> int:
    """``python -m cfbench.judges.llama_cpu [--expect a,b,c] [--quiet]``: the CPU backend this machine gets.

    With ``--expect``, exit 1 unless exactly those variants are installed (``make install`` rebuilds a
    llama-cpp-python wheel that pip's cache gave back without them).
    """
    import argparse

    ap = argparse.ArgumentParser(prog="python -m cfbench.judges.llama_cpu", description=main.__doc__)
    ap.add_argument("--expect", default=None, help="comma-separated variants that must be installed")
    ap.add_argument("--quiet", action="store_true", help="print nothing; only the exit status")
    args = ap.parse_args(argv)
    import llama_cpp

    present = available_variants(_lib_dir(llama_cpp))
    if args.expect is not None:
        want = sorted(filter(None, args.expect.split(",")))
        if sorted(present) != want:
            if not args.quiet:
                print(f"llama-cpp-python {llama_cpp.__version__} has CPU backends [{', '.join(present) or 'built in'}], "
                      f"expected [{', '.join(want)}]: rebuild it with `make install` (a wheel from pip's cache)",
                      file=sys.stderr)
            return 1
        if BASELINE in want:  # a cached wheel built with, e.g., -march=native in CFLAGS is not portable
            feats = module_features(_lib_dir(llama_cpp), "libggml-cpu.so")
            wide = [f for f in feats if f.startswith(_NOT_PORTABLE)]
            if wide:
                print(f"llama-cpp-python's portable CPU module libggml-cpu.so is built for {', '.join(wide)}: "
                      "it would not run on every x86-64 with AVX2; rebuild it with `make install`", file=sys.stderr)
                return 1
    try:
        backend = load_cpu_backend(llama_cpp)
    except JudgeError as exc:
        print(f"llama.cpp CPU backend: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"llama.cpp CPU backend: {backend.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
