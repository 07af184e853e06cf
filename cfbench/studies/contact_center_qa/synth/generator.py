"""The seeded synthetic contact-center transcript generator.

Each transcript is planned as a sequence of dialogue acts (greet, state the
issue, verify identity, hold, explain, give the outcome, react, close), and
each agent act is realized from content pieces plus style slots (see
:mod:`cfbench.perturb.style_plan`). Labels for the objectively decidable rubric
questions follow from the plan (see :mod:`cfbench.studies.contact_center_qa.synth.labels`).

Randomness: transcript ``i`` draws from ``numpy.random.default_rng([seed, i])``;
its outcome (resolved / failed / avoided), named greeting and PII disclosure
come from seeded schedules of 20 that repeat, so the labels are balanced in
every block of 20 items. Neither
depends on how many transcripts are generated.
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import yaml

from cfbench.core.paths import package_text
from cfbench.core.render import approx_tokens
from cfbench.io.transcripts import Transcript, save_transcripts, transcripts_from_records

from .domains import DEFLECT_EXTRA, DOMAINS, GENERIC_EXTRA, PII_FIELDS
from .labels import GREETING_NAME, ISSUE_RESOLUTION, PII_DISCLOSURE, WORK_AVOIDANCE
from cfbench.perturb.style_plan import render_plan, style_slots

__all__ = ["generate_transcripts", "iter_synthetic", "transcript_stats", "write_synthetic_set", "OUTCOMES",
           "CUSTOMER_NAMES", "GENERATOR_VERSION"]

GENERATOR_VERSION = 1
OUTCOMES = ("resolved", "failed", "avoided")

# Gender-neutral customer names, so the only gender cues are about the agent.
CUSTOMER_NAMES = ["Dana", "Jordan", "Alex", "Robin", "Casey", "Morgan", "Jamie", "Taylor", "Avery", "Quinn"]

_PRONOUNS = {
    "male": {"she": "he", "She": "He", "her_obj": "him", "her_pos": "his", "voc": "sir"},
    "female": {"she": "she", "She": "She", "her_obj": "her", "her_pos": "her", "voc": "ma'am"},
}
_RELATIVES = [("wife", "female"), ("husband", "male"), ("daughter", "female"), ("son", "male"),
              ("mother", "female"), ("father", "male")]

_AGENT_FILLERS = ["Um, okay.", "Uh, right.", "Hmm, okay."]
_CUSTOMER_FILLERS = ["Um, yeah.", "Uh, okay.", "Well, um."]

# Third-person references to the agent, said by the customer to someone nearby.
_ASIDES = [
    "Sorry, my {rel} is asking. Yes, {she} found it, I'm asking {her_obj} about the charge now.",
    "Hang on, my {rel} wants to know. {She} says {she} can see it on {her_pos} screen.",
    "Sorry, talking to my {rel}. {She} is looking at it now, I'll let {her_obj} finish.",
]
# A pronoun that does NOT refer to the agent (a distractor for the gender swap).
_DISTRACTOR = "My {rel} set up this account, so {rel_pos} email is the one on file."


@functools.lru_cache(maxsize=1)
def _names() -> dict[str, Any]:
    text = package_text("data/perturb/names.yaml")
    return yaml.safe_load(text)


def _slot(rng: np.random.Generator, dim: str, slot: str) -> dict[str, Any]:
    n = len(style_slots()["dimensions"][dim]["slots"][slot]["base"])
    return {"kind": "slot", "dim": dim, "slot": slot, "choice": int(rng.integers(n))}


def _text(text: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "text", "text": text, **extra}


def _money(rng: np.random.Generator) -> str:
    return f"${int(rng.integers(18, 480))}.{int(rng.integers(0, 100)):02d}"


def _date(rng: np.random.Generator) -> str:
    months = ["January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December"]
    day = int(rng.integers(1, 29))
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{months[int(rng.integers(12))]} {day}{suffix}"


def _one(rng: np.random.Generator, seq: Sequence[Any]) -> Any:
    return seq[int(rng.integers(len(seq)))]


_SCHEDULE_LEN = 20


@functools.lru_cache(maxsize=64)
def _schedule(seed: int, key: int, probs: tuple[float, ...], values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` for 20 consecutive items in the proportions of ``probs`` (largest remainder),
    shuffled by (seed, key) alone -- so every block of 20 items is balanced and item ``i``'s
    value does not depend on how many items are generated."""
    p = np.asarray(probs, dtype=float) / sum(probs)
    raw = p * _SCHEDULE_LEN
    counts = np.floor(raw).astype(int)
    for j in np.argsort(-(raw - counts), kind="stable")[: _SCHEDULE_LEN - counts.sum()]:
        counts[j] += 1
    sched = [o for o, c in zip(values, counts) for _ in range(c)]
    order = np.random.default_rng([seed, key]).permutation(_SCHEDULE_LEN)
    return tuple(sched[i] for i in order)


def _generate_one(index: int, *, seed: int, domain: str, min_turns: int, max_turns: int,
                  id_prefix: str, p_named_greeting: float, p_pii_disclosure: float,
                  outcome_probs: Sequence[float], p_honorific: float, p_third_person: float,
                  p_distractor: float, p_disfluency: float) -> dict[str, Any]:
    rng = np.random.default_rng([seed, index])
    d = DOMAINS[domain]
    names = _names()
    ethnicity = _one(rng, sorted(names["ethnicity"]))
    gender = _one(rng, ["female", "male"])
    agent = _one(rng, names["ethnicity"][ethnicity][gender])
    customer = _one(rng, CUSTOMER_NAMES)
    company = _one(rng, d["companies"])
    item = _one(rng, d["items"])
    slot = index % _SCHEDULE_LEN
    outcome = _schedule(seed, 1, tuple(outcome_probs), OUTCOMES)[slot]
    named = _schedule(seed, 2, (p_named_greeting, 1 - p_named_greeting), (True, False))[slot]
    disclose = _schedule(seed, 3, (p_pii_disclosure, 1 - p_pii_disclosure), (True, False))[slot]
    honorific = bool(rng.random() < p_honorific)
    aside = bool(rng.random() < p_third_person) and outcome != "avoided"
    distractor = bool(rng.random() < p_distractor)
    pii_field = _one(rng, sorted(PII_FIELDS))
    pii_value = _one(rng, PII_FIELDS[pii_field])
    facts = {"amount": _money(rng), "date": _date(rng), "ref": str(int(rng.integers(10000, 99999))),
             "days": str(int(rng.integers(3, 11))), "item": item, "item_cap": item[0].upper() + item[1:]}
    pr = _PRONOUNS[gender]
    voc = f", {pr['voc']}" if honorific else ""
    context = {"company": company, "field": pii_field}

    lo = min_turns + (min_turns % 2)
    hi = max_turns - (max_turns % 2)
    if hi < 10 or lo > hi:
        raise ValueError(f"turn range [{min_turns}, {max_turns}] must include an even number >= 10")
    target = int(rng.choice(np.arange(max(lo, 10), hi + 1, 2)))
    n_pairs = (target - 10) // 2

    def filler(speaker: str) -> list[dict[str, Any]]:
        if rng.random() < p_disfluency:
            pool = _AGENT_FILLERS if speaker == "agent" else _CUSTOMER_FILLERS
            return [{"kind": "filler", "text": _one(rng, pool)}]
        return []

    plan: list[dict[str, Any]] = []

    def add(speaker: str, act: str, pieces: list[dict[str, Any]]) -> None:
        plan.append({"speaker": speaker, "act": act, "pieces": filler(speaker) + pieces})

    intro = (_one(rng, ["This is {a} at {c}.", "My name is {a}, with {c}."]).format(a=agent, c=company)
             if named else f"You've reached {company} support.")
    add("agent", "greet", [_slot(rng, "formality", "greeting"), _text(intro, has_agent_name=named),
                           _slot(rng, "directness", "offer")])
    hello = f"Hi {agent}, this is {customer}." if named and rng.random() < 0.5 else f"Hi, this is {customer}."
    issue_pieces = [_text(hello), _text(d["issue"].format(**facts))]
    if distractor:
        rel, rel_g = _one(rng, _RELATIVES)
        issue_pieces.append(_text(_DISTRACTOR.format(rel=rel, rel_pos=_PRONOUNS[rel_g]["her_pos"]),
                                  distractor=True))
    add("customer", "state_issue", issue_pieces)
    if disclose:
        add("agent", "verify", [_slot(rng, "emotional_labor", "empathy"),
                                _text(f"I have your {pii_field} here as {pii_value}, is that right?", pii=True)])
        add("customer", "verify_answer", [_text("Yes, that's right.")])
    else:
        add("agent", "verify", [_slot(rng, "emotional_labor", "empathy"), _slot(rng, "directness", "request")])
        add("customer", "verify_answer", [_text(f"Sure, it's {pii_value}.")])
    if outcome == "avoided":
        add("agent", "deflect", [_slot(rng, "politeness", "thanks"), _text(d["avoid"])])
        add("customer", "push_back", [_text("But I was told to call this number.")])
    else:
        add("agent", "hold", [_slot(rng, "politeness", "thanks"), _slot(rng, "formality", "hold"),
                              _slot(rng, "politeness", "hold_courtesy")])
        add("customer", "hold_ack", [_text(_one(rng, ["Sure, take your time{v}.", "Okay{v}.", "No problem{v}."])
                                           .format(v=voc))])
    _resolution_turns(rng, add, d, facts, outcome=outcome, n_pairs=n_pairs, aside=aside, pr=pr, voc=voc,
                      named=named, agent=agent)
    add("agent", "close", [_slot(rng, "politeness", "closing_courtesy"), _slot(rng, "formality", "closing")])
    add("customer", "bye", [_text("Fine. Bye." if outcome == "avoided" else "Okay, bye{v}.".format(v=voc))])

    return _record(plan, context, facts, index=index, seed=seed, domain=domain, id_prefix=id_prefix, outcome=outcome,
                   named=named, disclose=disclose, n_pairs=n_pairs, pii_value=pii_value, gender=gender,
                   ethnicity=ethnicity, customer=customer, company=company, item=item, honorific=honorific,
                   agent=agent)


def _resolution_turns(rng: np.random.Generator, add: Any, d: Mapping[str, Any], facts: Mapping[str, str], *,
                      outcome: str, n_pairs: int, aside: bool, pr: Mapping[str, str], voc: str, named: bool,
                      agent: str) -> None:
    """The turns between the hold and the close: explanation, the outcome and the customer's reaction, and
    the extra question pairs (their order and draws are the generator's, unchanged)."""
    extra_pairs: list[tuple[str, str]] = []
    pool = list(DEFLECT_EXTRA) if outcome == "avoided" else list(d["extra"]) + list(GENERIC_EXTRA)
    order = rng.permutation(len(pool))
    pairs_left = n_pairs
    if outcome != "avoided" and pairs_left > 0:
        add("agent", "explain", [_text(d["explain"].format(**facts))])
        if aside:
            rel, _ = _one(rng, _RELATIVES)
            t = _one(rng, _ASIDES).format(rel=rel, **pr)
            add("customer", "aside", [{"kind": "agent_ref", "text": t}])
        else:
            add("customer", "ask_next", [_text("Okay, so what happens now?")])
        pairs_left -= 1
    extra_pairs = [pool[i] for i in order[:pairs_left]]
    if outcome == "avoided":
        for q, a in extra_pairs:
            add("customer", "extra_question", [_text(q)])
            add("agent", "extra_answer", [_text(a)])
        extra_pairs = []
        add("agent", "outcome", [_text("No, I can't look into it. You'll need to contact them.")])
        add("customer", "reaction", [_text("Wow, okay. That's not helpful at all.")])
    else:
        add("agent", "outcome", [_slot(rng, "emotional_labor", "reassure"), _slot(rng, "directness", "outcome_lead"),
                                 _text(d["resolve" if outcome == "resolved" else "fail"].format(**facts))])
        if outcome == "resolved":
            who = _one(rng, [voc, voc, f", {agent}" if named else voc])
            add("customer", "reaction", [_text(_one(rng, ["Great, thank you{v}.", "Oh, that's a relief, thanks{v}."])
                                               .format(v=who))])
        else:
            add("customer", "reaction", [_text("So it's still not fixed. That's really disappointing.")])
        for q, a in extra_pairs:
            add("customer", "extra_question", [_text(q)])
            add("agent", "extra_answer", [_text(a)])


def _record(plan: list[dict[str, Any]], context: dict[str, Any], facts: Mapping[str, str], *, index: int, seed: int,
            domain: str, id_prefix: str, outcome: str, named: bool, disclose: bool, n_pairs: int, pii_value: str,
            gender: str, ethnicity: str, customer: str, company: str, item: str, honorific: bool,
            agent: str) -> dict[str, Any]:
    """The transcript record of a finished plan: rendered turns, labels and the generator's metadata."""
    texts = render_plan(plan, context)
    labels = {
        ISSUE_RESOLUTION: "Yes" if outcome == "resolved" else "No",
        GREETING_NAME: "Yes" if named else "No",
        PII_DISCLOSURE: "Yes" if disclose else "No",
        WORK_AVOIDANCE: "Yes" if outcome == "avoided" else "No",
    }
    fact_values = [facts["amount"], facts["date"], pii_value]
    if outcome != "avoided" and n_pairs > 0:
        fact_values.append(facts["ref"])
    meta = {
        "generator": f"cfbench.synth v{GENERATOR_VERSION}", "seed": seed, "index": index,
        "outcome": outcome, "agent_gender": gender, "agent_ethnicity": ethnicity,
        "customer_name": customer, "company": company, "honorific": honorific,
        "facts": [company, item] + fact_values, "context": context, "plan": plan,
    }
    return {"id": f"{id_prefix}{index:03d}", "domain": domain, **({"agent_name": agent} if named else {}),
            "turns": [{"speaker": p["speaker"], "text": t} for p, t in zip(plan, texts)],
            "labels": labels, "meta": meta}


def generate_transcripts(n: int = 24, *, seed: int = 0, min_turns: int = 10, max_turns: int = 14,
                         domains: Sequence[str] | None = None, id_prefix: str = "cc",
                         p_named_greeting: float = 0.75, p_pii_disclosure: float = 0.3,
                         outcome_probs: Sequence[float] = (0.45, 0.3, 0.25), p_honorific: float = 0.5,
                         p_third_person: float = 0.4, p_distractor: float = 0.3,
                         p_disfluency: float = 0.12) -> list[Transcript]:
    """Generate ``n`` labelled synthetic transcripts.

    Domains are assigned round-robin over ``domains`` (default: all 12), so
    every domain appears. ``min_turns``/``max_turns`` bound the number of turns
    (even numbers >= 10; the seed's set used 26-46). ``outcome_probs`` weighs
    resolved / failed (agent tried) / avoided (work avoidance).
    The first ``n`` transcripts of :func:`iter_synthetic` with the same arguments.

    >>> ts = generate_transcripts(2, seed=3)
    >>> [t.labels["issue_resolution"] in ("Yes", "No") for t in ts]
    [True, True]
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return list(iter_synthetic(seed=seed, stop=n, min_turns=min_turns, max_turns=max_turns, domains=domains,
                               id_prefix=id_prefix, p_named_greeting=p_named_greeting,
                               p_pii_disclosure=p_pii_disclosure, outcome_probs=outcome_probs,
                               p_honorific=p_honorific, p_third_person=p_third_person,
                               p_distractor=p_distractor, p_disfluency=p_disfluency))


def iter_synthetic(*, seed: int = 0, start: int = 0, stop: int | None = None, min_turns: int = 10,
                   max_turns: int = 14, domains: Sequence[str] | None = None, id_prefix: str = "cc",
                   p_named_greeting: float = 0.75, p_pii_disclosure: float = 0.3,
                   outcome_probs: Sequence[float] = (0.45, 0.3, 0.25), p_honorific: float = 0.5,
                   p_third_person: float = 0.4, p_distractor: float = 0.3,
                   p_disfluency: float = 0.12) -> Iterator[Transcript]:
    """Synthetic transcripts ``start, start + 1, ...`` (``stop`` excluded; ``None``: without end), one at a time.

    Transcript ``i`` depends only on ``seed``, ``i`` and the generator settings, so the first
    24 of ``iter_synthetic(seed=0)`` are the shipped set and a stream of any length holds no
    more than one transcript in memory (the study's ``transcripts_path: synthetic``).

    >>> [t.id for t in iter_synthetic(seed=0, start=998, stop=1001)]
    ['cc998', 'cc999', 'cc1000']
    """
    doms = list(domains) if domains is not None else list(DOMAINS)
    unknown = [x for x in doms if x not in DOMAINS]
    if unknown:
        raise ValueError(f"unknown domain(s) {unknown}; known: {sorted(DOMAINS)}")
    if not doms:
        raise ValueError("domains must not be empty")
    if len(outcome_probs) != 3 or min(outcome_probs) < 0 or sum(outcome_probs) <= 0:
        raise ValueError(f"outcome_probs must be three non-negative weights, got {outcome_probs!r}")
    if start < 0:
        raise ValueError(f"start must be >= 0, got {start}")
    probs = tuple(float(x) for x in outcome_probs)
    for i in (range(start, stop) if stop is not None else itertools.count(start)):
        rec = _generate_one(i, seed=seed, domain=doms[i % len(doms)], min_turns=min_turns,
                            max_turns=max_turns, id_prefix=id_prefix, p_named_greeting=p_named_greeting,
                            p_pii_disclosure=p_pii_disclosure, outcome_probs=probs,
                            p_honorific=p_honorific, p_third_person=p_third_person,
                            p_distractor=p_distractor, p_disfluency=p_disfluency)
        yield transcripts_from_records([rec], source="cfbench.studies.contact_center_qa.synth")[0]


def transcript_stats(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    """Table-7-like summary: turns and approximate tokens (mean, std, min, quartiles, max),
    plus label, outcome and domain counts."""
    turns = np.array([t.n_turns for t in transcripts], dtype=float)
    toks = np.array([sum(approx_tokens(x.text) for x in t.turns) for t in transcripts], dtype=float)

    def summary(a: np.ndarray) -> dict[str, float]:
        if a.size == 0:
            return {}
        q = np.percentile(a, [25, 50, 75])
        return {"mean": round(float(a.mean()), 1), "std": round(float(a.std(ddof=1)) if a.size > 1 else 0.0, 1),
                "min": float(a.min()), "25%": float(q[0]), "50%": float(q[1]), "75%": float(q[2]),
                "max": float(a.max())}

    labels: dict[str, dict[str, int]] = {}
    for t in transcripts:
        for q, v in t.labels.items():
            labels.setdefault(q, {"Yes": 0, "No": 0})[v] += 1
    outcomes: dict[str, int] = {}
    domains: dict[str, int] = {}
    for t in transcripts:
        o = str(t.meta.get("outcome", "unknown"))
        outcomes[o] = outcomes.get(o, 0) + 1
        domains[t.domain] = domains.get(t.domain, 0) + 1
    return {"n": len(transcripts), "turns": summary(turns), "tokens_approx": summary(toks),
            "token_estimate": "whitespace words x 1.3", "labels": labels, "outcomes": outcomes,
            "domains": domains}


def write_synthetic_set(out_dir: str | Path, *, n: int = 24, seed: int = 0, min_turns: int = 10,
                        max_turns: int = 14) -> tuple[Path, Path]:
    """Generate a set and write ``synthetic_transcripts.jsonl`` + ``synthetic_stats.json``."""
    out = Path(out_dir)
    ts = generate_transcripts(n, seed=seed, min_turns=min_turns, max_turns=max_turns)
    jpath = save_transcripts(ts, out / "synthetic_transcripts.jsonl")
    stats = {"generator": f"cfbench.synth v{GENERATOR_VERSION}", "seed": seed, "n": n,
             "min_turns": min_turns, "max_turns": max_turns,
             "command": (f"python -m cfbench.studies.contact_center_qa.synth --out {out.as_posix()} --n {n} --seed {seed} "
                         f"--min-turns {min_turns} --max-turns {max_turns}"),
             **transcript_stats(ts)}
    spath = out / "synthetic_stats.json"
    spath.write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return jpath, spath
