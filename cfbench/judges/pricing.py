"""Prompt tokens and money, stated before a Batch job is submitted and after it is collected.

* :class:`TokenCounter` counts a request's prompt tokens the way OpenAI's chat format bills them
  (each message's role and content, 3 tokens of framing per message, 3 for the reply's start) with
  ``tiktoken`` when it is installed and knows the model's encoding; otherwise it estimates
  characters / 4 and says so in its ``method``. Counting can be sampled (one request in ``sample``,
  chosen by the request's key, scaled up by characters) when exact counting is too slow.
* :func:`load_prices` reads the shipped table ``cfbench/data/prices.yaml`` (USD per 1M input and
  output tokens, and the Batch-API discount), with entries from ``--prices FILE`` or
  ``$CFBENCH_PRICES`` replacing the shipped ones model by model.
* :func:`estimate_cost` prices a number of tokens for a model; ``None`` fields when the table has
  no price for it (never a made-up number).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.errors import InputError

__all__ = ["TokenCounter", "load_prices", "price_for", "estimate_cost", "estimate_from_chars", "PRICES_PATH",
           "request_pricers", "unpriced_judge", "refuse_unpriced", "budget_pricers", "over_budget", "resent_usd"]

PRICES_PATH = Path(__file__).resolve().parent.parent / "data" / "prices.yaml"
_PER_MESSAGE = 3  # <|start|>{role}\n … <|end|> framing per message in OpenAI's chat format
_REPLY_PRIMING = 3


def _encoder(model: str) -> tuple[Any, str]:
    """(tiktoken encoding or None, why not)."""
    try:
        import tiktoken
    except ImportError:
        return None, "tiktoken not installed"
    try:
        try:
            return tiktoken.encoding_for_model(model), ""
        except KeyError:  # a model tiktoken does not know: the current OpenAI encoding
            return tiktoken.get_encoding("o200k_base"), ""
    except Exception as exc:  # noqa: BLE001 - an offline machine cannot fetch the BPE file
        return None, f"tiktoken could not load an encoding ({type(exc).__name__})"


class TokenCounter:
    """Adds up prompt characters, prompt tokens and the output-token cap of requests as they stream.

    Parameters
    ----------
    model : str
        The model name (chooses tiktoken's encoding).
    sample : int
        Count tokens exactly on one request in ``sample`` (picked by ``fingerprint % sample == 0``)
        and scale the sampled tokens-per-character to all characters; 1 counts every request.
    """

    def __init__(self, model: str, *, sample: int = 1):
        if not isinstance(sample, int) or sample < 1:
            raise InputError(f"the token sample must be a positive whole number, got {sample!r}",
                             field="token_sample")
        self.model, self.sample = model, sample
        self.encoding, why = _encoder(model)
        self.n_requests = self.chars = self.max_output_tokens = 0
        self.sampled_chars = self.sampled_tokens = self.n_sampled = 0
        if self.encoding is None:
            self.method = f"estimate: characters / 4 ({why})"
        elif sample == 1:
            self.method = f"tiktoken {self.encoding.name}, every request"
        else:
            self.method = f"tiktoken {self.encoding.name} on 1 request in {sample}, scaled by characters"

    def _exact(self, messages: Sequence[Mapping[str, Any]]) -> int:
        enc = self.encoding
        n = _REPLY_PRIMING
        for m in messages:
            n += _PER_MESSAGE + len(enc.encode(m["role"], disallowed_special=())) \
                + len(enc.encode(m["content"], disallowed_special=()))
            if "name" in m:
                n += 1 + len(enc.encode(str(m["name"]), disallowed_special=()))
        return n

    def add(self, messages: Sequence[Mapping[str, Any]], max_tokens: int, fingerprint: int = 0) -> None:
        chars = sum(len(m["role"]) + len(m["content"]) for m in messages)
        self.n_requests += 1
        self.chars += chars
        self.max_output_tokens += int(max_tokens)
        if self.encoding is None:
            self.sampled_tokens += math.ceil(chars / 4) + _PER_MESSAGE * len(messages) + _REPLY_PRIMING
            self.sampled_chars += chars
            self.n_sampled += 1
        elif self.sample == 1 or fingerprint % self.sample == 0:
            self.sampled_tokens += self._exact(messages)
            self.sampled_chars += chars
            self.n_sampled += 1

    @property
    def prompt_tokens(self) -> int:
        if self.n_sampled == self.n_requests:
            return self.sampled_tokens
        if not self.sampled_chars:  # nothing sampled (few requests): fall back to the plain estimate
            return math.ceil(self.chars / 4)
        return round(self.sampled_tokens * self.chars / self.sampled_chars)

    def summary(self) -> dict[str, Any]:
        return {"method": self.method, "n_requests": self.n_requests, "n_counted": self.n_sampled,
                "prompt_chars": self.chars, "prompt_tokens": self.prompt_tokens,
                "max_output_tokens": self.max_output_tokens}


def load_prices(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The price table: the shipped one, then ``$CFBENCH_PRICES``, then ``path``, each replacing
    earlier entries model by model. Returns ``{"as_of", "sources", "models": {name: {...}}}``."""
    import yaml

    table: dict[str, Any] = {"as_of": None, "sources": [], "models": {}}
    for src in (PRICES_PATH, os.environ.get("CFBENCH_PRICES") or None, path):
        if src is None:
            continue
        src = Path(src)
        if not src.is_file():
            raise InputError("no such price table", source=str(src))
        try:
            data = yaml.safe_load(src.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise InputError(f"not YAML ({type(exc).__name__})", source=str(src)) from None
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, dict):
            raise InputError("a price table needs a 'models' mapping", source=str(src), field="models")
        for name, entry in models.items():
            table["models"][str(name)] = _check_entry(entry, src, str(name))
        table["as_of"] = data.get("as_of", table["as_of"])
        table["sources"].append(str(src))
    return table


def _check_entry(entry: Any, src: Path, name: str) -> dict[str, float]:
    if not isinstance(entry, dict) or set(entry) - {"input", "output", "batch_discount"} or \
            not {"input", "output"} <= set(entry):
        raise InputError("each model needs input and output (USD per 1M tokens), optional batch_discount",
                         source=str(src), record=name)
    out = {}
    for field, default in (("input", None), ("output", None), ("batch_discount", 0.0)):
        value = entry.get(field, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 \
                or (field == "batch_discount" and value >= 1):
            raise InputError(f"must be a number >= 0{' and < 1' if field == 'batch_discount' else ''}, "
                             f"got {value!r}", source=str(src), record=name, field=field)
        out[field] = float(value)
    return out


def price_for(model: str, prices: Mapping[str, Any]) -> tuple[str, dict[str, float]] | None:
    """(table entry name, entry) for ``model``: an exact match, else the longest entry the model
    name extends with ``-`` (a dated snapshot); None when the table has no price for it."""
    models = prices.get("models") or {}
    if model in models:
        return model, models[model]
    best = max((name for name in models if model.startswith(name + "-")), key=len, default=None)
    return (best, models[best]) if best else None


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int, prices: Mapping[str, Any], *,
                  batch: bool = True) -> dict[str, Any]:
    """USD for ``prompt_tokens`` in and ``completion_tokens`` out (through the Batch API when ``batch``).

    Returns the prices used and ``input_usd``, ``output_usd``, ``total_usd`` (None when the model
    has no price in the table, with ``note`` saying so)."""
    found = price_for(model, prices)
    if found is None:
        return {"model": model, "priced_as": None, "input_usd": None, "output_usd": None, "total_usd": None,
                "note": f"no price for {model!r} in {', '.join(prices.get('sources') or ['the table'])}; "
                        "add it with --prices FILE"}
    name, entry = found
    factor = (1.0 - entry["batch_discount"]) if batch else 1.0
    input_usd = prompt_tokens * entry["input"] * factor / 1e6
    output_usd = completion_tokens * entry["output"] * factor / 1e6
    return {"model": model, "priced_as": name, "usd_per_1m_input": entry["input"],
            "usd_per_1m_output": entry["output"], "batch_discount": entry["batch_discount"] if batch else 0.0,
            "as_of": prices.get("as_of"), "input_usd": input_usd, "output_usd": output_usd,
            "total_usd": input_usd + output_usd}


def estimate_from_chars(model: str, n_requests: int, prompt_chars: int, max_output_tokens: int,
                        prices: Mapping[str, Any] | None = None, *, batch: bool = True) -> dict[str, Any]:
    """Tokens and cost from a streamed count of prompt characters (what plan-only counts), when the
    requests themselves are not at hand: prompt tokens estimated as characters / 4 plus the chat
    framing of two messages per request, labelled as an estimate; output at most ``max_output_tokens``."""
    prompt_tokens = math.ceil(prompt_chars / 4) + n_requests * (2 * _PER_MESSAGE + _REPLY_PRIMING)
    cost = estimate_cost(model, prompt_tokens, max_output_tokens, prices if prices is not None else load_prices(),
                         batch=batch)
    return {"method": "estimate: characters / 4 + 9 tokens of chat framing per request", "n_requests": n_requests,
            "prompt_chars": prompt_chars, "prompt_tokens": prompt_tokens, "max_output_tokens": max_output_tokens,
            "cost": cost}


def request_pricers(judges: Sequence[str], *, batch: bool) -> dict:
    """Judge spec -> a function pricing a list of :class:`~cfbench.judges.Request` in USD (``local:`` and
    ``scripted:``: 0, no API; ``openai:`` by the price table of :func:`load_prices`, at the Batch-API price when
    ``batch``), or None when no price is known (why under the key ``_why``). Prompt tokens are estimated from
    characters, output at each request's ``max_tokens`` allowance (an upper bound), as in plan-only counts."""
    out: dict = {"_why": {}}
    table = None
    for spec in judges:
        backend, _, rest = spec.partition(":")
        model = rest.partition("@")[0]
        if backend in ("local", "scripted"):
            out[spec] = lambda reqs: 0.0
            continue
        if backend == "openai":
            table = table or load_prices()
            if price_for(model, table) is not None:
                out[spec] = (lambda reqs, _m=model, _t=table: estimate_from_chars(
                    _m, len(reqs), sum(len(m["role"]) + len(m["content"]) for r in reqs for m in r.messages),
                    sum(int(r.config.max_tokens) for r in reqs), _t, batch=batch)["cost"]["total_usd"])
                continue
            out["_why"][spec] = f"{model!r} is not in the price table"
        else:
            out["_why"][spec] = f"no price table for the {backend!r} backend"
        out[spec] = None
    return out


def unpriced_judge(judges: Sequence[str], pricers: Mapping[str, Any]) -> tuple[str, str] | None:
    """(judge, why) for the first of ``judges`` that ``pricers`` (:func:`request_pricers`) cannot price."""
    for j in judges:
        if pricers.get(j) is None:
            return j, pricers.get("_why", {}).get(j, "no price")
    return None


def refuse_unpriced(judges: Sequence[str], pricers: Mapping[str, Any]) -> None:
    """A dollar budget needs every judge priced: the first of ``judges`` that ``pricers`` cannot price is refused
    in one :class:`InputError` naming ``max_cost_usd`` and the judge."""
    missing = unpriced_judge(judges, pricers)
    if missing:
        raise InputError(f"no price for judge {missing[0]!r} ({missing[1]}); a dollar budget needs every judge "
                         "priced (add it with $CFBENCH_PRICES) or max_cost_usd 0", source="parameters",
                         field="max_cost_usd")


def budget_pricers(judges: Sequence[str], *, max_cost_usd: float, batch: bool) -> dict:
    """:func:`request_pricers` for a sequential audit's dollar budget: empty when ``max_cost_usd`` is 0 (no
    limit), else every judge priced (:func:`refuse_unpriced`)."""
    if not max_cost_usd:
        return {}
    pricers = request_pricers(judges, batch=batch)
    refuse_unpriced(judges, pricers)
    return pricers


def over_budget(n: int, usd: float, *, sent: int, spent_usd: float, max_requests: int, max_cost_usd: float) -> str:
    """Why a sequential audit's next wave of ``n`` requests costing ``usd`` may not be sent, after ``sent``
    requests and ``spent_usd`` dollars ("" when it fits; a limit of 0 is no limit): a wave is sent whole or not
    at all. Amounts read "USD 0.1234", never with "$": the reason reaches the findings' Markdown, where two "$"
    in one paragraph are set as a formula in JupyterLab and on GitHub."""
    over = []
    if max_requests and sent + n > max_requests:
        over.append(f"the next wave's {n} requests would pass max_requests {max_requests} ({sent} sent)")
    if max_cost_usd and spent_usd + usd > max_cost_usd:
        over.append(f"the next wave's USD {usd:.4f} would pass max_cost_usd {max_cost_usd:g} (USD {spent_usd:.4f} spent)")
    return "budget: " + "; ".join(over) if over else ""


def resent_usd(resent: Mapping[str, Sequence[Any]], pricers: Mapping[str, Any]) -> float:
    """USD of the requests a Batch wave re-sent (judge -> requests, once per re-send:
    :func:`cfbench.judges.batch_waves.send_wave`), priced as the wave's own requests were (``pricers``:
    :func:`budget_pricers`; empty, no dollar budget: 0). Added to the dollars spent after the wave, so the next
    wave's :func:`over_budget` check sees them; a re-send itself is never refused (the wave it completes was
    admitted whole)."""
    return float(sum(pricers[j](reqs) for j, reqs in resent.items() if reqs and pricers.get(j) is not None))
