"""Caches that fight back: a corrupt file, one damaged mid-run, and one that cannot be written
(an archived run to replay, a read-only mount). Each ends in one line naming the file, or works
read-only (issue 36)."""

from __future__ import annotations

import os
import sqlite3

import pytest

from cfbench.cli import main
from cfbench.core.errors import InputError
from cfbench.judges import Request, ResponseCache, run_requests
from cfbench.judges.base import Response

REQS = [Request(f"r{i}", ({"role": "user", "content": f"question {i}"},)) for i in range(4)]


def _one_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in text
    return lines[0]


def _garbage(path):
    path.write_bytes(b"this is not a database, just bytes " * 200)
    return path


def test_corrupt_cache_is_one_line_naming_the_file(tmp_path):
    path = _garbage(tmp_path / "responses.sqlite")
    with pytest.raises(InputError) as info:
        ResponseCache(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_cache_stats_on_a_corrupt_cache(tmp_path, capsys):
    path = _garbage(tmp_path / "responses.sqlite")
    assert main(["cache", "stats", "--path", str(path)]) == 2
    assert str(path) in _one_line(capsys.readouterr().err)


def test_reproduce_with_a_corrupt_cache_fails_first_and_leaves_no_staging(tmp_path, monkeypatch, capsys):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    path = _garbage(cache_dir / "responses.sqlite")
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(cache_dir))
    results = tmp_path / "R"
    rc = main(["reproduce", "--study", "shopflow", "--config", "smoke", "--results", str(results)])
    assert rc == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if "error" in ln]
    assert "Traceback" not in err and len(errors) == 1 and str(path) in errors[0], err
    assert not list(results.rglob(".smoke.staging-*")) and not list(results.rglob("*.failed"))


def test_cache_damaged_mid_run_names_the_file_not_a_lock(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    for i in range(300):
        cache.put(f"k{i}", "j", Response(text="x" * 300))
    cache.close()
    cache = ResponseCache(path)
    assert len(cache) == 300
    os.truncate(path, 4096)  # another program cut the file short while this run holds it open
    for op in (lambda: cache.put("new", "j", Response(text="y")), lambda: cache.get_rows(["k5", "k250"]),
               lambda: len(cache), cache.stats):
        with pytest.raises(InputError) as info:
            op()
        assert str(path) in str(info.value) and "locked" not in str(info.value)


# --- read-only caches ------------------------------------------------------------------------------
# Tests run as root here, where file modes do not stop a write; a read-only mount is simulated at the
# one place SQLite touches the file: any connection that is not read-only fails to open it.

@pytest.fixture
def read_only_mount(tmp_path, monkeypatch):
    """A filled cache file, then mounted read-only; yields its path."""
    path = _filled(tmp_path)
    real = sqlite3.connect

    def connect(database, *args, **kwargs):
        if not (kwargs.get("uri") and ("mode=ro" in str(database) or "immutable=1" in str(database))):
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, *args, **kwargs)

    monkeypatch.setattr("cfbench.judges.cache.sqlite3.connect", connect)
    return path


def _filled(tmp_path):
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    run_requests("scripted:yes", REQS, cache=cache, progress=False)
    cache.close()
    return path


def test_replay_reads_a_read_only_cache(read_only_mount):
    path = read_only_mount
    before = path.read_bytes()
    res = run_requests("scripted:yes", REQS, cache=str(path), mode="replay", progress=False)
    assert res.judgments.ok.all() and res.judgments.cache_hit.all() and len(res.judgments) == 4
    assert path.read_bytes() == before


def test_cache_stats_of_a_read_only_cache(read_only_mount, capsys):
    path = read_only_mount
    assert main(["cache", "stats", "--path", str(path)]) == 0
    assert '"responses": 4' in capsys.readouterr().out


def test_fully_cached_live_run_on_a_read_only_cache_says_so_once(read_only_mount, capsys):
    path = read_only_mount
    capsys.readouterr()
    cache = ResponseCache(path)  # asked read-write; the mount refuses: read-only, one warning
    assert cache.read_only
    res = run_requests("scripted:yes", REQS, cache=cache, mode="live", progress=False)
    assert res.judgments.cache_hit.all()
    more = [Request("new", ({"role": "user", "content": "a new question"},))]
    res2 = run_requests("scripted:yes", more, cache=cache, mode="live", progress=False)
    assert res2.judgments.ok.all() and not res2.judgments.cache_hit.any()  # answered, just not stored
    warning = _one_line(capsys.readouterr().err)
    assert str(path) in warning and "read" in warning


def test_read_only_falls_back_to_immutable_when_no_shm_can_be_made(tmp_path, monkeypatch):
    path = _filled(tmp_path)
    real = sqlite3.connect

    def connect(database, *args, **kwargs):  # a read-only folder: not even the -shm file can be made
        if "immutable=1" not in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, *args, **kwargs)

    monkeypatch.setattr("cfbench.judges.cache.sqlite3.connect", connect)
    assert len(ResponseCache(path, read_only=True)) == 4


def test_explicit_read_only_never_writes(tmp_path):
    path = _filled(tmp_path)
    before = path.read_bytes()
    cache = ResponseCache(path, read_only=True)
    assert cache.put_many([("k", "j", Response(text="z").to_json(), None)]) == 0
    assert len(cache) == 4 and path.read_bytes() == before
    with pytest.raises(InputError, match="read-only"):
        cache.vacuum()
