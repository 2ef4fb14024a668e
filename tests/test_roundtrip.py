"""Round trip with the reference scorer.

Our runs export a bigcode-evaluation-harness generations file; `score` scores such a file with
our executor. Both are checked, task by task and candidate by candidate, against a small
independent reference built the way the harness scores `humanevalfixtests-python` generations
(humanevalfix.testing.reference: the harness's import helper + the candidate, stripped, then the
test, run by plain `exec` in a fresh `python -c`; it passes when exec returns).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.cli import main
from humanevalfix.evaluation.dataset import Task, load_file
from humanevalfix.testing.reference import reference_passes

from .conftest import clean_env, run_cli

# Ours times candidate code alone (its interpreter is warm), so it can be shorter than the
# reference's limit, which includes a cold start.
OUR_TIMEOUT_S = 3.0


def handmade(task: Task) -> list[str]:
    """Candidates that probe where two scorers could disagree."""
    canonical, buggy = task.canonical_code or "", task.buggy_code
    bare = "\n".join(line for line in canonical.splitlines() if not line.startswith(("from typing", "import ")))
    return [
        canonical,
        buggy,
        canonical.replace("def ", "def (", 1),  # a syntax error
        canonical.replace(f"def {task.entry_point}(", f"def {task.entry_point}_fixed(", 1),  # wrong name
        "raise SystemExit(0)\n" + canonical,  # exits "successfully" before the tests run
        "import os\nos._exit(0)\n" + canonical,  # leaves without a word
        bare,  # relies on the prelude's `from typing import *`
        "print('noise to stdout')\n" + canonical,
        canonical + "\nif __name__ == '__main__':\n    raise ValueError('not run by either scorer')\n",
        "",  # no candidate at all
    ]


def _write_tiny(rows_path: Path, out: Path, count: int) -> list[Task]:
    lines = [line for line in rows_path.read_text(encoding="utf-8").splitlines() if line.strip()][:count]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_file(out).tasks


def _score(
    tmp_path: Path, generations: Path, dataset: Path, extra: list[str] | None = None, in_process: bool = True
) -> list[dict[str, Any]]:
    """`score` through the command line: in this process (fast), or as a child process."""
    verdicts = tmp_path / (generations.stem + ".verdicts.json")
    args = [
        "score",
        str(generations),
        "--dataset-path",
        str(dataset),
        "--workers",
        "2",
        "--timeout",
        str(OUR_TIMEOUT_S),
        "--out",
        str(verdicts),
        *(extra or []),
    ]
    if in_process:
        assert main(args) == 0
    else:
        proc = run_cli(args, cwd=tmp_path, env=clean_env())
        assert proc.returncode == 0, proc.stderr
    return json.loads(verdicts.read_text(encoding="utf-8"))["tasks"]


def reference_all(pairs: list[tuple[str, str]]) -> list[bool]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda p: reference_passes(*p), pairs))


@pytest.mark.e2e
def test_handmade_candidates_agree_with_the_reference(tmp_path: Path, dataset_path: Path) -> None:
    tiny = tmp_path / "first1.jsonl"
    tasks = _write_tiny(dataset_path, tiny, 1)
    generations = [handmade(t) for t in tasks]
    generations[0].append(generations[0][0] + "\nwhile True:\n    pass\n")  # a timeout, once
    path = tmp_path / "handmade.generations.json"
    path.write_text(json.dumps(generations), encoding="utf-8")
    ours = _score(tmp_path, path, tiny, in_process=False)
    assert [t["task_id"] for t in ours] == [t.task_id for t in tasks]
    for task, entry, candidates in zip(tasks, ours, generations, strict=True):
        reference = reference_all([(code, task.test) for code in candidates])
        assert entry["passed"] == reference, (task.task_id, entry["verdicts"])
        # Not a vacuous agreement: canonical, prelude-reliant and noisy candidates pass; the rest fail.
        assert reference == [True, False, False, False, False, False, True, True, True, False] + (
            [False] if len(candidates) > 10 else []
        )


@pytest.mark.e2e
def test_exported_run_scores_the_same_in_both_scorers(tmp_path: Path, dataset_path: Path) -> None:
    tiny = tmp_path / "first3.jsonl"
    tasks = _write_tiny(dataset_path, tiny, 3)
    for model in ("oracle:canonical", "oracle:buggy"):
        out = tmp_path / f"{model.split(':')[1]}.json"
        assert main(["--model", model, "--dataset-path", str(tiny), "--max-iters", "0", "--out", str(out)]) == 0
        results = json.loads(out.read_text(encoding="utf-8"))
        exported = out.with_name(out.stem + ".generations.json")  # written by the run itself
        generations = json.loads(exported.read_text(encoding="utf-8"))
        assert generations == [[r["final_code"]] for r in results["tasks"]]
        ours = _score(tmp_path, exported, tiny)
        run_verdicts = [[r["passed"]] for r in results["tasks"]]
        reference = [[p] for p in reference_all([(g[0], t.test) for g, t in zip(generations, tasks, strict=True)])]
        assert [t["passed"] for t in ours] == run_verdicts == reference
        assert reference == [[model == "oracle:canonical"]] * 3


@pytest.mark.e2e
def test_export_subcommand_and_subset_rules(
    tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = tmp_path / "first5.jsonl"
    tasks = _write_tiny(dataset_path, tiny, 5)
    ids = [t.task_id for t in tasks]
    out = tmp_path / "mid.json"
    # A contiguous range that does not start at row 0: the harness needs --limit_start 1.
    assert (
        main(
            [
                "--model",
                "oracle:canonical",
                "--dataset-path",
                str(tiny),
                "--tasks",
                ",".join(ids[1:3]),
                "--max-iters",
                "0",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert main(["export", str(out), "--out", str(tmp_path / "mid.gen.json")]) == 0
    hint = " ".join(capsys.readouterr().err.split())
    assert "--limit_start 1" in hint and "--limit 2" in hint
    ours = _score(tmp_path, tmp_path / "mid.gen.json", tiny, ["--limit-start", "1"])
    assert [t["task_id"] for t in ours] == ids[1:3] and all(t["passed"] == [True] for t in ours)
    # Not contiguous: the harness could not map it, so the export refuses with the reason.
    gap = tmp_path / "gap.json"
    assert (
        main(
            [
                "--model",
                "oracle:canonical",
                "--dataset-path",
                str(tiny),
                "--tasks",
                f"{ids[0]},{ids[2]}",
                "--max-iters",
                "0",
                "--out",
                str(gap),
            ]
        )
        == 0
    )
    assert not gap.with_name("gap.generations.json").exists()
    assert main(["export", str(gap)]) == 2
    assert "not a contiguous range" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(
    "content,message",
    [
        ("{", "not valid JSON"),
        ('{"a": 1}', "expected a JSON list"),
        ("[[1]]", "expected a string"),
        ("[[]]", "non-empty list"),
    ],
)
def test_score_rejects_malformed_generation_files(tmp_path: Path, content: str, message: str) -> None:
    from humanevalfix.errors import UserError
    from humanevalfix.evaluation.generations import read_generations

    path = tmp_path / "g.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        read_generations(path)
