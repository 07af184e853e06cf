"""``python -m cfbench.judges.llama_serve ARGS``: llama-cpp-python's own server (``python -m llama_cpp.server
ARGS``) with llama.cpp's CPU module for this machine loaded first.

A ``make install`` build of llama-cpp-python has no CPU backend until one is loaded
(:mod:`cfbench.judges.llama_cpu`), and ``llama_cpp.server`` loads none, so started on its own it
cannot load a model ("no backends are loaded"). This wrapper loads the module the embedded judge would
(``CFBENCH_GGML_CPU_VARIANT`` forces one), names it on stderr, then runs the server unchanged.
"""

from __future__ import annotations

import runpy
import sys

from .llama_cpu import load_cpu_backend


def main() -> None:
    backend = load_cpu_backend()
    print(f"llama.cpp CPU backend: {backend.describe()}", file=sys.stderr, flush=True)
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
