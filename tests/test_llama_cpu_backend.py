"""llama.cpp's CPU kernels: the variant loaded is the best this CPU runs, it is reported, and it can be forced.

The loading happens once per process, so each case runs in a child Python. Cases that need a
``GGML_BACKEND_DL`` build (the one ``make install`` makes) skip on a build with the CPU backend built in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cfbench.judges.llama_cpu import CpuBackend, available_variants

pytest.importorskip("llama_cpp")
REPO = Path(__file__).resolve().parents[1]

# the instruction sets each variant is compiled for (build-aux/llama_build.cmake, llama.cpp's lists),
# as /proc/cpuinfo flags: an independent statement of what "runs on this CPU" means
CPUINFO_FLAGS = {
    "baseline": {"avx", "avx2", "fma", "f16c", "bmi2", "sse4_2"},
    "icelake": {"avx", "avx2", "fma", "f16c", "bmi2", "sse4_2", "avx512f", "avx512cd", "avx512vl", "avx512dq",
                "avx512bw", "avx512vbmi", "avx512_vnni"},
    "sapphirerapids": {"avx", "avx2", "fma", "f16c", "bmi2", "sse4_2", "avx512f", "avx512cd", "avx512vl",
                       "avx512dq", "avx512bw", "avx512vbmi", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8"},
}

CHILD = """
import json, sys
from cfbench.judges.llama_cpu import load_cpu_backend
from cfbench.judges.base import JudgeError
try:
    b = load_cpu_backend()
except JudgeError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    import llama_cpp  # what libllama itself sees: its backend registry must hold the module loaded
    print(json.dumps(b.as_dict() | {"describe": b.describe(),
                                    "llama_sees": llama_cpp.llama_print_system_info().decode()}))
"""


def _child(env_variant: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CFBENCH_GGML_CPU_VARIANT"}
    if env_variant is not None:
        env["CFBENCH_GGML_CPU_VARIANT"] = env_variant
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)]))
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _dl_build() -> bool:
    import llama_cpp

    return "baseline" in available_variants(Path(llama_cpp.__file__).resolve().parent / "lib")


needs_dl = pytest.mark.skipif(not _dl_build(), reason="llama-cpp-python has its CPU backend built in "
                                                      "(not a `make install` GGML_BACKEND_DL build)")


def test_variant_names_from_files(tmp_path):
    # libggml-cpu.so counts only when it is a loadable module (checked on the real build below)
    for name in ("libggml-cpu.so", "libggml-cpu-icelake.so", "libggml-cpu-sapphirerapids.so", "libggml-base.so",
                 "libggml-cpu-zen4.so.0", "libggml.so"):
        (tmp_path / name).write_bytes(b"")
    assert available_variants(tmp_path) == ("icelake", "sapphirerapids")


@pytest.mark.parametrize("features, isa", [
    (("SSE3", "AVX", "AVX2", "FMA", "F16C", "BMI2"), "x86-64 AVX2"),
    (("AVX2", "AVX512", "AVX512_VBMI", "AVX512_VNNI"), "x86-64 AVX-512 VNNI"),
    (("AVX2", "AVX512", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8"), "x86-64 AVX-512 VNNI + AMX"),
    (("AVX2", "AVX512"), "x86-64 AVX-512"),
])
def test_isa_words(features, isa):
    assert CpuBackend("v", "libggml-cpu-v.so", features, "how", ("v",)).isa == isa


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="needs /proc/cpuinfo")
def test_loaded_variant_is_reported_and_is_the_best_this_cpu_runs():
    got = _child(None)
    assert "error" not in got, got["error"]
    assert got["describe"].startswith(got["isa"] + " (" + got["variant"] + ", ")
    assert "CPU : " in got["llama_sees"] and "AVX2 = 1" in got["llama_sees"]
    flags = _cpu_flags()
    if got["variant"] == "built-in":
        assert got["available"] == [] and "AVX2" in got["features"]
        return
    assert got["how"].startswith(f"best of {len(got['available'])} for this CPU")
    # AMX modules are never chosen unless forced (a VM that lists AMX died on it)
    runnable = [v for v in got["available"] if v in CPUINFO_FLAGS and CPUINFO_FLAGS[v] <= flags
                and "amx_int8" not in CPUINFO_FLAGS[v]]
    assert "AMX_INT8" not in got["features"]
    assert got["variant"] in runnable
    # no runnable variant has strictly more instruction sets than the one chosen
    assert not any(CPUINFO_FLAGS[v] > CPUINFO_FLAGS[got["variant"]] for v in runnable)
    assert got["library"] == f"libggml-cpu-{got['variant']}.so" or got["variant"] == "baseline"


@needs_dl
def test_forcing_the_avx2_variant():
    got = _child("baseline")
    assert "error" not in got, got["error"]
    assert (got["variant"], got["library"], got["how"]) == ("baseline", "libggml-cpu.so",
                                                            "forced by CFBENCH_GGML_CPU_VARIANT")
    assert "AVX2" in got["features"] and not any(f.startswith("AVX512") or f.startswith("AMX")
                                                 for f in got["features"])
    assert got["isa"] == "x86-64 AVX2"
    assert "CPU : " in got["llama_sees"] and "AVX2 = 1" in got["llama_sees"] and "AVX512 = 1" not in got["llama_sees"]


@needs_dl
def test_forcing_an_absent_variant_is_one_clear_error():
    got = _child("zen9")
    assert "CFBENCH_GGML_CPU_VARIANT=zen9: no libggml-cpu-zen9.so in" in got["error"]
    assert "present: baseline" in got["error"]


@pytest.mark.skipif(_dl_build(), reason="only a build with the CPU backend built in refuses every variant")
def test_forcing_on_a_built_in_backend_is_refused():
    got = _child("baseline")
    assert "has its CPU backend built in" in got["error"]


def test_provenance_names_the_cpu_backend():
    from cfbench.cli.reproduce.provenance import _uses_embedded_judge, provenance_markdown

    line = "x86-64 AVX-512 VNNI (icelake, libggml-cpu-icelake.so; best of 2 for this CPU)"
    text = provenance_markdown({"mode": "live", "cpu_backend": line})
    assert "- CPU backend of the embedded judge (llama.cpp): x86-64 AVX-512 VNNI (icelake," in text
    assert "CPU backend" not in provenance_markdown({"mode": "live"})  # an API-only run: no such line
    # a reply read from the cache came from whichever module answered then, not from this one
    cached = provenance_markdown({"mode": "live", "cpu_backend": line, "cache": {"replies_added": 0}})
    assert "no reply of this run came from it" in cached
    fresh = provenance_markdown({"mode": "live", "cpu_backend": line, "cache": {"replies_added": 16}})
    assert "it gave the 16 replies this run added" in fresh
    assert _uses_embedded_judge({"judges": ["openai:x", "local:qwen2.5-coder-1.5b"]})
    assert _uses_embedded_judge({"fresh_models": "local:qwen2.5-coder-0.5b"})
    assert not _uses_embedded_judge({"judges": ["openai:gpt"], "n_items": 3, "name": "local"})


@pytest.mark.parametrize("mode, params, recorded", [
    ("live", {"judges": ["local:qwen2.5-coder-1.5b"]}, True),
    ("live", {"judges": ["scripted:always_yes"]}, False),  # no embedded judge: nothing to name
    ("replay", {"judges": ["local:qwen2.5-coder-1.5b"]}, False),  # no model answered this run
])
def test_run_info_names_the_cpu_backend_of_a_live_run_with_the_embedded_judge(monkeypatch, tmp_path, mode,
                                                                                params, recorded):
    from cfbench.cli.reproduce import provenance
    from cfbench.cli.reproduce.config import Run
    from cfbench.judges import llama_cpu

    monkeypatch.setattr(llama_cpu, "cpu_backend_summary", lambda: "x86-64 AVX2 (baseline, libggml-cpu.so; forced)")
    info = provenance.run_info(Run("shopflow", "default", params), root=tmp_path, mode=mode, params=params,
                               wall=1.0, started="2026-11-27T00:00:00Z", cache={}, command=None)
    assert ("cpu_backend" in info) is recorded
    if recorded:
        assert info["cpu_backend"] == "x86-64 AVX2 (baseline, libggml-cpu.so; forced)"
        assert "CPU backend of the embedded judge (llama.cpp): x86-64 AVX2 (baseline" in \
            provenance.provenance_markdown(info)
