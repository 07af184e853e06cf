"""Issue 23: `cfbench variants --limit N / --sample N --seed S` and a paged page."""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd
import pytest

from cfbench.perturb import make_variants
from cfbench.perturb.review import review_html
from cfbench.cli.variants import main as variants_main, select_transcripts
from star_util import need_star, star


def test_sample_is_seeded_and_keeps_file_order():
    ts = list(range(100))
    a = select_transcripts(ts, sample=10, seed=3)
    assert a == select_transcripts(ts, sample=10, seed=3) and a == sorted(a) and len(set(a)) == 10
    assert a != select_transcripts(ts, sample=10, seed=4)
    assert select_transcripts(ts, limit=7) == list(range(7))
    assert select_transcripts(ts, sample=500, seed=0) == ts


@pytest.mark.parametrize("argv,needle", [(["--limit", "0"], "--limit"), (["--sample", "-2"], "--sample"),
                                         (["--limit", "2", "--sample", "2"], "not both")])
def test_bad_limits_are_one_line_errors(tmp_path, capsys, argv, needle):
    src = need_star()
    d = tmp_path / "star"
    d.mkdir()
    for f in ("10.json", "20.json"):
        shutil.copy(src / f, d / f)
    assert variants_main([str(d), "--out", str(tmp_path / "o"), "--quiet", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_cli_sample_makes_variants_of_that_many_dialogues(tmp_path):
    src = need_star()
    d = tmp_path / "star"
    d.mkdir()
    for f in ("10.json", "20.json", "30.json", "40.json", "50.json", "60.json"):
        shutil.copy(src / f, d / f)
    assert variants_main([str(d), "--out", str(tmp_path / "o"), "--quiet", "--dimensions", "politeness",
                          "--sample", "2", "--seed", "5"]) == 0
    v = pd.read_parquet(tmp_path / "o" / "variants.parquet")
    assert v["item_id"].nunique() == 2
    assert variants_main([str(d), "--out", str(tmp_path / "p"), "--quiet", "--dimensions", "politeness",
                          "--limit", "3"]) == 0
    assert pd.read_parquet(tmp_path / "p" / "variants.parquet")["item_id"].nunique() == 3


def test_the_page_carries_its_page_size_and_all_cards():
    ts = list(star(limit=8))
    v = make_variants(ts, dimensions=["politeness", "religion_cues"], seed=0, progress=False)
    page = review_html(v, ts, title="t", page_size=7)
    data = json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1))
    assert data["page_size"] == 7 and len(data["cards"]) == int((v["dimension"] != "original").sum())
