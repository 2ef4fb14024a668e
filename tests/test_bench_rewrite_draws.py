"""bench/rewrite_draws.py against the scripted server: what it asks (rewrite's own opening, sampled,
a seed per draw), how it scores the draws (tests, then pass@1+, in the default sandbox), how it
groups the passing ones by their answers, and what the totals count."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from humanevalfix.evaluation.dataset import Task
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, fenced, text

from .conftest import scripted_preset

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import minimal_fix  # noqa: E402  (where the preset is resolved)
import rewrite_draws  # noqa: E402

RUN = ROOT / "results" / "local-0.5b_tests_repair_rewrite-now_fresh.json"


def run_of(tmp_path: Path, task_ids: tuple[str, ...]) -> Path:
    """The committed run with only these tasks (Python/83's rewrite fails pass@1+, 12's holds)."""
    document = json.loads(RUN.read_text(encoding="utf-8"))
    small = tmp_path / RUN.name
    small.write_text(json.dumps({**document, "tasks": [t for t in document["tasks"] if t["task_id"] in task_ids]}))
    return small


@pytest.mark.e2e
def test_draws_are_scored_and_grouped_by_their_answers(
    tmp_path: Path,
    dataset_path: Path,
    all_tasks: dict[str, Task],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Python/83 (its run's rewrite fails pass@1+): drawn as the canonical, the buggy code and
    prose; Python/12 (its rewrite holds): drawn as the canonical three times."""
    requests: list[Recorded] = []
    by_task = {t: all_tasks[t] for t in ("Python/12", "Python/83")}

    def handle(request: Recorded) -> Response:
        requests.append(request)
        prompt = str(request.body["messages"][-1]["content"])
        task = next(t for t in by_task.values() if f"`{t.entry_point}`" in prompt)
        if task.task_id == "Python/12":
            return fenced(task.canonical_code or "")
        answers = {
            1000: fenced(task.canonical_code or ""),
            1001: fenced(task.buggy_code),
            1002: text("It looks right to me."),
        }
        return answers[int(request.body["seed"])]

    out = tmp_path / "draws.json"
    with ScriptedServer(handle) as server:
        monkeypatch.setattr(minimal_fix, "load_presets", lambda: {"scripted": scripted_preset(server.base_url)})
        code = rewrite_draws.main(
            [str(run_of(tmp_path, ("Python/12", "Python/83"))), "--model", "scripted"]
            + ["--dataset-path", str(dataset_path), "--limit", "2", "--out", str(out)]
        )
    assert code == 0
    # Rewrite's opening (the system prompt from the tests, no buggy body), sampled, one seed per draw.
    assert len(requests) == 6
    assert all(
        r.body["messages"][0]["content"].startswith("You write Python functions from their tests.") for r in requests
    )
    assert all("Start from this header:" in r.body["messages"][-1]["content"] for r in requests)
    assert [r.body["seed"] for r in requests] == [1000, 1001, 1002] * 2
    assert {r.body["temperature"] for r in requests} == {0.8}
    assert all(
        "docstring" not in str(r.body["messages"]) and "What it should do" not in str(r.body["messages"])
        for r in requests
    )  # --protocol tests: none shown
    data = json.loads(out.read_text())
    rows = {r["task_id"]: r for r in data["rows"]}
    run83, canonical83, buggy83, prose83 = rows["Python/83"]["draws"]
    assert (run83["name"], run83["passed"], run83["plus"]) == ("run", True, False)
    assert (canonical83["passed"], canonical83["plus"]) == (True, True)
    assert (buggy83["passed"], buggy83["plus"], buggy83["group"]) == (False, None, None)
    assert (prose83["code"], prose83["passed"]) == (None, False)
    assert run83["group"] != canonical83["group"]  # they answer differently on pass@1+'s inputs
    assert rows["Python/83"]["inputs"] > 0
    # Python/12: the run's holding rewrite and three canonical draws answer alike: one group.
    assert {d["group"] for d in rows["Python/12"]["draws"]} == {0}
    assert all(d["plus"] is True for d in rows["Python/12"]["draws"])
    # Python/83: two groups of one, the tie goes to the run's own (which fails): a pick by agreement
    # would not hold there, a perfect pick would.
    assert data["totals"] == {
        "tasks": 2,
        "run_plus": 1,
        "some_draw_holds": 2,
        "largest_group_holds": 1,
        "all_passing_agree": 1,
        "draws_passed": 4,
        "draws_plus": 4,
    }
    assert "where the largest group holds 1" in capsys.readouterr().out


def test_the_pick_by_agreement_follows_the_largest_group() -> None:
    """Two passing draws that agree outvote the run's own candidate."""
    draws = (
        rewrite_draws.Draw("run", "a", True, False, group=0),
        rewrite_draws.Draw("d0", "b", True, True, group=1),
        rewrite_draws.Draw("d1", "c", True, True, group=1),
        rewrite_draws.Draw("d2", None, False, None),
    )
    row = rewrite_draws.Row("Python/0", 10, draws)
    assert row.largest_group_holds() and row.some_holds() and row.groups() == 2
    outvoted = rewrite_draws.Row(
        "Python/0", 10, (draws[0], rewrite_draws.Draw("d0", "a", True, False, group=0), draws[1])
    )
    assert not outvoted.largest_group_holds() and outvoted.some_holds()
    nothing = rewrite_draws.Row("Python/0", 10, (rewrite_draws.Draw("run", "a", False, None), draws[3]))
    assert not nothing.largest_group_holds() and not nothing.some_holds() and nothing.groups() == 0


def test_bad_options_and_other_protocols_are_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rewrite_draws.main([str(RUN), "--draws", "0"]) == 2
    assert "--draws 0" in capsys.readouterr().err
    assert rewrite_draws.main([str(ROOT / "results" / "local-0.5b_hidden_repair.json")]) == 2
    assert "--protocol hidden" in capsys.readouterr().err
    missing = tmp_path / "nope.json"
    assert rewrite_draws.main([str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
