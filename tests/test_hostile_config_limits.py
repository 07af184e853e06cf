"""Configs that try to blow up: YAML aliases ("billion laughs"), huge values quoted in errors,
and study parameters that used to fail deep inside a notebook naming the wrong field (issue 36)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hostile_util import expect_input_error

from cfbench.core.errors import InputError
from cfbench.core.files import read_yaml
from cfbench.cli.reproduce import load_config_file, parse_override, project_root


def _bomb(tmp_path: Path, levels: int = 8) -> Path:
    """About 330 bytes that expand to 5 * 9**7 (24 million) strings when aliases are followed."""
    lines = ['a: &a ["xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx"]']
    prev = "a"
    for name in "bcdefghijk"[: levels - 1]:
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
        prev = name
    lines.append(f"n_boot: *{prev}")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_nested_aliases_are_refused_in_one_short_line(tmp_path):
    path = _bomb(tmp_path)
    start = time.perf_counter()
    err = expect_input_error(lambda: read_yaml(path), field="<yaml>", record="line 2")
    assert time.perf_counter() - start < 2.0
    assert str(path) in str(err) and "alias" in str(err)
    assert len(str(err)) < 300 and "\n" not in str(err)


def test_a_single_alias_is_refused_too(tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text("base: &b 3\nn_boot: *b\n")
    expect_input_error(lambda: read_yaml(path), field="<yaml>", record="line 2")


def test_bomb_through_the_study_config_loader(tmp_path):
    path = _bomb(tmp_path)
    err = expect_input_error(lambda: load_config_file(path, "shopflow", root=project_root()), field="<yaml>",
                             record="line 2")
    assert len(str(err)) < 300


def test_alias_in_a_p_value_is_refused():
    err = expect_input_error(lambda: parse_override("judges", "[&a x, *a, *a]"), field="judges")
    assert "-p judges" in str(err)
    assert parse_override("n_items", "8") == ("n_items", 8)
    assert parse_override("judges", "[a, b]") == ("judges", ["a", "b"])


@pytest.mark.parametrize("value", ["x" * 200_000, list(range(20_000))])
def test_a_huge_wrong_value_is_quoted_as_a_bounded_prefix(tmp_path, value):
    import yaml

    path = tmp_path / "huge.yaml"
    path.write_text(yaml.safe_dump({"n_boot": value}))
    err = expect_input_error(lambda: load_config_file(path, "shopflow", root=project_root()), field="n_boot")
    assert len(str(err)) < 400 and "\n" not in str(err)


def test_params_from_mapping_quotes_a_bounded_prefix():
    from cfbench.studies.shopflow import Params

    err = expect_input_error(lambda: Params.from_config({"max_pairs": "y" * 1_000_000}), field="max_pairs")
    assert len(str(err)) < 400


def test_shorten_keeps_short_values_whole_and_cuts_long_ones():
    from cfbench.core.files import shorten

    assert shorten("abc") == "'abc'"
    assert shorten([1, 2]) == "[1, 2]"
    long = shorten("z" * 10_000, 80)
    assert long.startswith("'zzz") and len(long) <= 90
    assert len(shorten([[["q" * 1000] * 1000] * 1000])) <= 90


# --- contact-center Params: each field checked where it is defined, naming the field -------------------

@pytest.mark.parametrize("override, field", [
    ({"judges": []}, "judges"),
    ({"judges": ["scripted:cc-qa", "scripted:cc-qa"]}, "judges"),
    ({"judges": [""]}, "judges"),
    ({"questions": []}, "questions"),
    ({"qa_mode": "yaml"}, "qa_mode"),
    ({"temperature": -1.0}, "temperature"),
    ({"robustness_temperatures": [0.0, 9.0]}, "robustness_temperatures"),
    ({"robustness_temperatures": []}, "robustness_temperatures"),
    ({"repeats": -2}, "repeats"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"n_boot": -1}, "n_boot"),
    ({"gate_max_net_cfr": 1.5}, "gate_max_net_cfr"),
    ({"dimensions": ["gender", "gender"]}, "dimensions"),
])
def test_cc_params_name_the_field(override, field):
    from cfbench.studies.contact_center_qa import Params

    expect_input_error(lambda: Params.from_config(override), field=field)


def test_cc_shipped_configs_still_load():
    from cfbench.cli.reproduce import load_config
    from cfbench.studies.contact_center_qa import Params

    for config in ("smoke", "default", "paper"):
        Params.from_config(load_config("contact_center_qa", config))


def test_cc_empty_judges_fails_before_any_notebook_runs(tmp_path, capsys):
    from cfbench.cli import main

    rc = main(["reproduce", "--study", "contact_center_qa", "--config", "smoke", "--results", str(tmp_path),
               "--plan-only", "-p", "judges", "[]"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0
    assert len(err) == 1 and "-p judges" in err[0] and "'judges'" in err[0], err
    assert not any(tmp_path.rglob("*.ipynb"))  # refused before a kernel started


def test_cc_too_many_items_blames_n_items():
    from cfbench.studies.contact_center_qa import Params
    from cfbench.studies.contact_center_qa.items import iter_items
    from cfbench.io.transcripts import transcripts_from_records

    ts = transcripts_from_records([{"id": f"t{i}", "agent_name": "Ana", "turns": [
        {"speaker": "agent", "text": "Hi, I am Ana."}, {"speaker": "customer", "text": "Hello."}],
        "labels": {"issue_resolution": "Yes"}} for i in range(2)])
    with pytest.raises(InputError) as info:
        list(iter_items(Params(n_items=1_000_000_000), ts))
    assert info.value.field == "n_items" and "1000000000 requested" in str(info.value)


def test_a_parameter_given_twice_on_the_command_line_is_refused(tmp_path, capsys):
    """``-p seed 1 -p seed 2`` once ran with 2, silently; a key repeated in a config file is refused, so is this."""
    from cfbench.cli import main

    rc = main(["reproduce", "--study", "contact_center_qa", "--config", "smoke", "--results", str(tmp_path),
               "--plan-only", "-p", "seed", "1", "-p", "n_boot", "50", "-p", "seed", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "given more than once: seed" in err[0], err
    assert not any(tmp_path.rglob("*.ipynb"))


@pytest.mark.parametrize("text,octal", [("seed: 012\n", "10"), ("n_items: -07\n", "-7"), ("n_boot: 00\n", "0")])
def test_a_leading_zero_number_is_refused_not_read_as_octal(tmp_path, text, octal):
    """YAML 1.1 (PyYAML) reads 012 as 10; YAML 1.2 and a reader of the file see 12. One line, no guess."""
    path = tmp_path / "c.yaml"
    path.write_text("judges: [a]\n" + text)
    err = expect_input_error(lambda: read_yaml(path), field="<yaml>", record="line 2")
    assert f"octal number {octal}" in str(err) and str(path) in str(err)
    with pytest.raises(InputError, match="octal"):
        parse_override("seed", "012")


def test_base_60_numbers_stay_text_and_plain_numbers_read_as_before(tmp_path):
    """YAML 1.1 reads 1:30 as 90 and 1:30.0 as 90.0; here they stay text, which a number field refuses."""
    path = tmp_path / "c.yaml"
    path.write_text("a: 1:30\nb: 1:30.0\nc: 12\nd: 0\ne: 0.25\nf: 1_000\ng: 0x10\nh: -3\ni: .inf\nj: '012'\n")
    assert read_yaml(path) == {"a": "1:30", "b": "1:30.0", "c": 12, "d": 0, "e": 0.25, "f": 1000, "g": 16,
                               "h": -3, "i": float("inf"), "j": "012"}
