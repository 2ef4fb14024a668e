"""The scorer registry (evaluation/scores.py) and the records' `scores` map.

A scorer registered by this test, and by no other file, is recorded per task, summed in the
summary, shown by the summary table, the report, the HTML page and a comparison, and made again
by `score`; and every committed results file's flat score fields migrate into the map and are
written back unchanged.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from humanevalfix.config import RunConfig
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.rescore import rescore
from humanevalfix.evaluation.results import Summary, load_results
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.evaluation.scores import BUILTINS, SCORERS, Candidates, Entry, Scorer, legacy_keys, scorer
from humanevalfix.reports.comparison import compare_runs, comparison_table
from humanevalfix.reports.page import compare_html, run_html
from humanevalfix.reports.runs import load_run, summary_lines
from humanevalfix.reports.summary import summary_table
from humanevalfix.runspec import RunSpec
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

from .conftest import entry_point_of
from .test_runspec import eval_results


class Lines(Scorer):
    """The final candidate's length in lines: a score no other file knows of."""

    column = "lines"
    compare_label = "short fixes (≤ 3 lines)"

    def entry(self, c: Candidates) -> Entry:
        return {"lines": len((c.final_code or "").splitlines())}

    def summarize(self, records: Sequence[Any]) -> Entry:
        return {"total": sum((r.scores.get(self.name) or {}).get("lines", 0) for r in records)}

    def table_rows(self, entry: Entry | None, tasks: int, spec: RunSpec) -> list[tuple[str, str]]:
        return [("final code lines", str((entry or {}).get("total")))]

    def report_lines(self, entry: Entry | None, spec: RunSpec) -> list[str]:
        return [f"final code lines: {(entry or {}).get('total')}"]

    def cell(self, record: Any, entry: Entry | None) -> str:
        return f"{(entry or {}).get('lines')} line(s)"

    def shares(self, records: Sequence[Any]) -> dict[str, float]:
        return {r.task_id: float((r.scores.get(self.name) or {}).get("lines", 99) <= 3) for r in records}


@pytest.fixture
def lines_scorer() -> Iterator[None]:
    scorer("test-lines")(Lines)  # after the built-in ones, whoever read the registry before
    try:
        yield
    finally:
        SCORERS._entries.pop("test-lines")  # the registry lives for the process: leave it as found


def test_a_scorer_registered_elsewhere_comes_after_the_built_in_ones(lines_scorer: None) -> None:
    *before, last = SCORERS
    assert last == "test-lines" and before and all(type(SCORERS[name]).__module__ == BUILTINS for name in before)


@pytest.mark.e2e
def test_a_scorer_registered_elsewhere_is_recorded_summed_shown_compared_and_rescored(
    lines_scorer: None,
    tmp_path: Path,
    tiny_dataset: Path,
    make_config: Callable[..., RunConfig],
    tiny_tasks: dict[str, Any],
) -> None:
    answer = lambda rec: tool_call(tiny_tasks[entry_point_of(rec)].canonical_code)  # noqa: E731
    with ScriptedServer(answer) as server:
        outcome = run_eval(make_config(server, tiny_dataset), Console(file=io.StringIO()))
    lengths = {r.task_id: len((r.final_code or "").splitlines()) for r in outcome.records}
    assert {r.task_id: r.scores["test-lines"] for r in outcome.records} == {t: {"lines": n} for t, n in lengths.items()}
    assert outcome.summary.scores["test-lines"] == {"total": sum(lengths.values())}

    stored = load_results(outcome.results_path)
    assert stored["summary"]["scores"]["test-lines"] == {"total": sum(lengths.values())}
    assert all(t["scores"]["test-lines"]["lines"] == lengths[t["task_id"]] for t in stored["tasks"])
    # The built-in scores are in the map too, and in the flat fields older readers know.
    assert all(
        t["scores"]["verdict"] == {"passed_first": True, "passed": True} and t["passed"] is True
        for t in stored["tasks"]
    )
    assert stored["summary"]["passed_plus"] == stored["summary"]["scores"]["plus"]["passed"] == 3
    assert stored["config"]["schema_version"] == 3

    console = Console(record=True, width=200, file=io.StringIO())
    console.print(summary_table(Summary.from_dict(stored["summary"]), outcome.spec))
    assert re.search(rf"final code lines +│ {sum(lengths.values())} ", console.export_text())
    run = load_run(outcome.results_path)
    assert f"final code lines: {sum(lengths.values())}" in summary_lines(run)
    page = run_html(run, b"")
    assert "<th>lines</th>" in page and f"<td>{lengths[run.records[0].task_id]} line(s)</td>" in page
    table = Console(record=True, width=200, file=io.StringIO())
    table.print(comparison_table(compare_runs(run, run)))
    assert "short fixes (≤ 3 lines)" in table.export_text()
    assert "<td>short fixes (≤ 3 lines)</td>" in compare_html(compare_runs(run, run), b"")

    executor = build_executor("auto", Limits(timeout_s=20))
    try:
        again = rescore(outcome.results_path, executor, str(tiny_dataset))
    finally:
        executor.close()
    assert [t["scores"]["test-lines"] for t in again.document["tasks"]] == [
        {"lines": lengths[t["task_id"]]} for t in again.document["tasks"]
    ]


def test_an_entry_of_a_scorer_not_installed_here_is_kept() -> None:
    raw = _record(scores={"verdict": {"passed_first": False, "passed": True}, "elsewhere": {"x": 1}})
    record = TaskRecord.from_dict(raw)
    assert record.passed and record.scores["elsewhere"] == {"x": 1}
    assert TaskRecord.from_dict(record.to_dict()) == record
    # Shown nowhere (nothing here knows how), written back as it was.
    assert record.to_dict()["scores"]["elsewhere"] == {"x": 1}


def test_a_record_from_before_the_map_is_migrated_by_each_scorer() -> None:
    old = _record(
        passed=True,
        passed_first=False,
        plus=False,
        plus_first=None,
        plus_inputs=40,
        plus_disagreements=2,
        plus_example="(3,): expected 6, got 5",
        suspect_hardcoding=["line 2: if n == 3: return 6"],
    )
    record = TaskRecord.from_dict(old)
    assert record.scores == {
        "verdict": {"passed_first": False, "passed": True},
        "plus": {"final": False, "first": None, "inputs": 40, "disagreements": 2, "example": "(3,): expected 6, got 5"},
        "hardcoding": {"lines": ["line 2: if n == 3: return 6"]},
    }
    written = record.to_dict()
    assert {k: written[k] for k in old if k != "scores"} == {k: v for k, v in old.items() if k != "scores"}
    # Before pass@1+: the record's defaults of then.
    bare = TaskRecord.from_dict(_record(passed=False, passed_first=False))
    assert bare.scores["plus"] == {"final": None, "first": None, "inputs": 0, "disagreements": 0, "example": None}
    with pytest.raises(TypeError, match="passed"):
        TaskRecord.from_dict(_record(passed_first=False))  # as when `passed` was a field of the record


@pytest.mark.parametrize("path", eval_results(), ids=lambda p: p.name)
def test_every_committed_results_file_migrates_and_writes_its_flat_fields_back_unchanged(path: Path) -> None:
    document = load_results(path)
    for raw in document["tasks"]:
        written = TaskRecord.from_dict(raw).to_dict()  # (its candidates now stored once: records.py)
        kept = [k for k in legacy_keys() if k in raw]
        assert {k: written[k] for k in kept} == {k: raw[k] for k in kept}, raw["task_id"]
        assert len(kept) >= 2  # passed and passed_first at least
    summary = Summary.from_dict(document["summary"])
    assert {k: summary.to_dict().get(k, "missing") for k in document["summary"]} == document["summary"]


def _record(scores: Mapping[str, Any] | None = None, **flat: Any) -> dict[str, Any]:
    base = {
        "task_id": "Python/0",
        "entry_point": "f",
        "bug_type": "",
        "failure_symptoms": "",
        "iterations": 1,
        "executions": 1,
        "stop_reason": "passed",
        "tool_mode": "native",
        "first_code": "a",
        "final_code": "b",
        "score_message": "",
        "tokens_in": 0,
        "tokens_out": 0,
        "model_latency_s": 0.0,
        "wall_s": 0.0,
    }
    return {**base, **flat, **({"scores": dict(scores)} if scores is not None else {})}
