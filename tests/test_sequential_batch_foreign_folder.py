"""Every study's Batch-API sequential audit refuses a run folder cfbench did not make, in one line naming the
file, and leaves everything in it as it was (issue 35): a user's folder holding their own ``notes.txt`` and a
``sequential_batch.json`` that is not JSON, not an object, or another tool's JSON, or holding files but no
manifest at all. Nothing is sent: the judge's address is a closed port and the refusal comes first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cfbench.core.errors import InputError
from cfbench.judges.batch_waves import MANIFEST

JUDGE = "openai:fake-judge@http://127.0.0.1:9/v1"


def _contact_center(out: Path, cache: Path):
    from cfbench.studies.contact_center_qa import batch_waves as B
    from cfbench.studies.contact_center_qa.params import Params

    return B.run_batch(Params(judges=(JUDGE,), transcripts_path="synthetic", n_items=4, sequential=True), out,
                       cache=cache, poll_s=0)


def _judge_bias(out: Path, cache: Path):
    from cfbench.studies.judge_bias import batch_waves as B
    from cfbench.studies.judge_bias.study import Params

    return B.run_batch(Params(judges=(JUDGE,), star_path="none", n_draft=0, n_control=4, sequential=True), out,
                       cache=cache, poll_s=0)


def _shopflow(out: Path, cache: Path):
    from cfbench.studies.shopflow import batch_waves as B
    from cfbench.studies.shopflow.study import Params

    return B.run_batch(Params(judge=JUDGE, sequential=True), out, cache=cache, poll_s=0)


FOREIGN = {"not JSON": b"{ my own notes, not json", "a JSON list": b"[1, 2, 3]",
           "another tool's JSON": b'{"waves": [], "owner": "my pipeline", "complete": true}\n', "no manifest": None}


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("kind", list(FOREIGN))
@pytest.mark.parametrize("run_batch", [_contact_center, _judge_bias, _shopflow],
                         ids=["contact_center_qa", "judge_bias", "shopflow"])
def test_a_folder_cfbench_did_not_make_is_refused_and_left_as_it_was(tmp_path, run_batch, kind):
    folder = tmp_path / "mine"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("my notes: do not touch\n", encoding="utf-8")
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    if FOREIGN[kind] is not None:
        (folder / MANIFEST).write_bytes(FOREIGN[kind])
    before = _snapshot(folder)
    with pytest.raises(InputError) as err:
        run_batch(folder, tmp_path / "cache.sqlite")
    text = str(err.value)
    assert MANIFEST in text and str(folder) in text and "\n" not in text  # one line naming the file
    assert _snapshot(folder) == before  # nothing written, changed or deleted
    assert sorted(os.listdir(folder)) == sorted(["notes.txt", "sub"] + ([MANIFEST] if FOREIGN[kind] else []))
