"""The bundled dataset's pass@1+ cases shipped in the package (issue 51): the first scoring run on
a new machine reads them instead of computing them, and they cannot drift from the generator.

- unit: the file has an entry for exactly the keys today's code gives the bundled tasks (a change
  to the generator's source without `python -m humanevalfix.evaluation.plusshipped --write` fails
  here), a store reads them without running anything, and a damaged file or entry is computed.
- e2e: every task's cases computed again in the sandbox are the shipped ones, row for row.
"""

from __future__ import annotations

import lzma
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.evaluation import plusshipped
from humanevalfix.evaluation.dataset import load_bundled
from humanevalfix.evaluation.plusstore import CaseStore, load_shipped, shipped_cases, shipped_entry
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, ExecResult, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.tasks.task import Task

REGENERATE = "python -m humanevalfix.evaluation.plusshipped --write"


class NoRuns:
    """An executor that must not be asked: shipped cases need no run."""

    name, isolation, guarantees = "none", "none", frozenset({"fs"})

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        raise AssertionError("a shipped task was computed")

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def bundled() -> list[Task]:
    return list(load_bundled().tasks)


def test_the_package_ships_every_bundled_task_under_todays_key(bundled: list[Task]) -> None:
    shipped = load_shipped()
    keys = {CaseStore(None).key(task, None, 0.0): task.task_id for task in bundled}
    stale = len(set(shipped) - set(keys))
    missing = sorted(keys[k] for k in set(keys) - set(shipped))
    assert not missing and not stale, f"{len(missing)} tasks missing, {stale} stale: run {REGENERATE}"


def test_a_store_reads_shipped_cases_without_a_run(bundled: list[Task], tmp_path: Path) -> None:
    store = CaseStore(tmp_path)  # an empty cache folder: a new machine
    for task in bundled:
        cases = store.get(task, None, 0.0, NoRuns())  # type: ignore[arg-type]
        assert cases.problem is None and cases.count + cases.dropped > 0, task.task_id
    assert not list(tmp_path.iterdir())  # nothing written: the package has them
    # Given inputs (EvalPlus's file) or another budget are not the shipped cases: computed.
    with pytest.raises(AssertionError, match="computed"):
        CaseStore(None).get(bundled[0], [(["a"], "a")], 0.0, NoRuns())  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="computed"):
        CaseStore(None, budget_steps=1).get(bundled[0], None, 0.0, NoRuns())  # type: ignore[arg-type]


def test_an_entry_is_the_cases_it_was_made_from(bundled: list[Task]) -> None:
    shipped = load_shipped()
    store = CaseStore(None)
    for task in bundled[:20]:
        cases = shipped_cases(shipped[store.key(task, None, 0.0)], 0.0)
        assert cases is not None
        again = shipped_cases(shipped_entry(cases), 0.0)
        assert again == cases and again.cases == cases.cases, task.task_id


@pytest.mark.parametrize(
    "damage",
    [b"", b"not xz", lzma.compress(b"{not json"), lzma.compress(b'{"format": 99, "cases": {}}')],
)
def test_a_damaged_file_reads_as_none_and_the_tasks_are_computed(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "plus_cases.json.xz"
    path.write_bytes(damage)
    assert load_shipped(path) == {} and load_shipped(tmp_path / "missing.xz") == {}


@pytest.mark.parametrize(
    "entry",
    [None, [], {"rows": 1}, {"rows": "[]", "calls": "", "count": "1", "dropped": 0, "drops": ""}],
)
def test_a_damaged_entry_is_not_cases(entry: Any) -> None:
    assert shipped_cases(entry, 0.0) is None


@pytest.mark.e2e
def test_the_shipped_cases_are_what_the_sandbox_computes_today(bundled: list[Task]) -> None:
    """The drift check: every bundled task's cases computed again (nothing read from the package or
    a cache), entry for entry: rows, answers, limits, calls and drops."""
    executor = build_executor("bwrap", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    try:
        computed = plusshipped.computed(bundled, executor)
    finally:
        executor.close()
    shipped = load_shipped()
    differ = [k for k in computed if shipped.get(k) != shipped_entry(computed[k])]
    assert not differ and set(shipped) == set(computed), f"{len(differ)} tasks differ: run {REGENERATE}"
    # What a store makes of an entry is what was computed, the answer frame made again included.
    assert all(shipped_cases(shipped[k], 0.0) == computed[k] for k in computed)


def test_the_writer_makes_the_same_bytes_for_the_same_cases(bundled: list[Task], tmp_path: Path) -> None:
    store = CaseStore(None)
    found = {store.key(t, None, 0.0): store.get(t, None, 0.0, NoRuns()) for t in bundled[:5]}  # type: ignore[arg-type]
    one, two = tmp_path / "a.xz", tmp_path / "b.xz"
    plusshipped.write(found, one)
    plusshipped.write(dict(reversed(found.items())), two)
    assert one.read_bytes() == two.read_bytes()
    assert {k: shipped_cases(v, 0.0) for k, v in load_shipped(one).items()} == found
