"""In process: a cache file is trusted only with the harness's seal (cachedirs), so that nothing a
candidate of any earlier run wrote decides a later verdict."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from humanevalfix import cachedirs
from humanevalfix.cachedirs import KEY_NAME, SEAL_SUFFIX, fetch, forget_keys, keep, seal_key


def test_a_kept_file_is_fetched_whole_and_only_with_its_seal(tmp_path: Path) -> None:
    keep(tmp_path, "a.json", b'{"cases": 3}')
    assert fetch(tmp_path, "a.json") == b'{"cases": 3}'
    assert (tmp_path / KEY_NAME).stat().st_mode & 0o777 == 0o600


def test_a_file_written_by_anyone_else_is_not_trusted(tmp_path: Path) -> None:
    keep(tmp_path, "a.json", b'{"cases": 3}')
    seal = (tmp_path / ("a.json" + SEAL_SUFFIX)).read_bytes()
    # Another entry's bytes and seal under another name: the name is sealed too.
    (tmp_path / "b.json").write_bytes(b'{"cases": 3}')
    (tmp_path / ("b.json" + SEAL_SUFFIX)).write_bytes(seal)
    assert fetch(tmp_path, "b.json") is None
    (tmp_path / "a.json").write_bytes(b'{"cases": 0}')  # new bytes, the old seal
    assert fetch(tmp_path, "a.json") is None
    (tmp_path / ("a.json" + SEAL_SUFFIX)).write_bytes(b"\0" * 32)  # a seal of its own
    assert fetch(tmp_path, "a.json") is None
    (tmp_path / ("a.json" + SEAL_SUFFIX)).unlink()  # none at all
    assert fetch(tmp_path, "a.json") is None


def test_after_the_keys_are_forgotten_nothing_sealed_before_is_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a `process` run's executors do when they close: its candidates could read the keys."""
    plus, tests = tmp_path / "plus", tmp_path / "tests"
    monkeypatch.setenv(cachedirs.PLUS_STORE[0], str(plus))
    monkeypatch.setenv(cachedirs.TEST_STORE[0], str(tests))
    keep(plus, "a.json", b"1")
    keep(tests, "b.marshal", b"2")
    stolen = (plus / KEY_NAME).read_bytes()
    forget_keys()
    assert not (plus / KEY_NAME).exists() and not (tests / KEY_NAME).exists()
    assert fetch(plus, "a.json") is None and fetch(tests, "b.marshal") is None
    keep(plus, "a.json", b"1")
    assert (plus / KEY_NAME).read_bytes() != stolen and fetch(plus, "a.json") == b"1"


def test_a_key_that_is_not_private_or_not_a_file_is_not_used(tmp_path: Path) -> None:
    key = seal_key(tmp_path)
    assert key is not None and len(key) == 32
    os.chmod(tmp_path / KEY_NAME, 0o644)  # another user could read it
    assert seal_key(tmp_path) is None and fetch(tmp_path, "x") is None
    (tmp_path / KEY_NAME).unlink()
    (tmp_path / KEY_NAME).symlink_to(tmp_path / "elsewhere")
    assert seal_key(tmp_path) is None
    keep(tmp_path, "x", b"1")  # nothing can be sealed: nothing is written
    assert not (tmp_path / "x").exists()


def test_no_key_is_made_by_reading(tmp_path: Path) -> None:
    assert fetch(tmp_path / "none", "x") is None and not (tmp_path / "none").exists()
