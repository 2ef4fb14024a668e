"""Reports: results made by the real pipeline (scripted server over HTTP, real executions), then
the PNG, the self-contained HTML, and the comparison of two runs with its statistics."""

from __future__ import annotations

import base64
import io
import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from humanevalfix.cli import main
from humanevalfix.config import RunConfig
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.presets import resolve
from humanevalfix.reports.comparison import mcnemar_exact, paired_bootstrap
from humanevalfix.reports.runs import cumulative_pass_rate, load_run, rates_by, solved_turn
from humanevalfix.reports.visualize import write_reports
from humanevalfix.testing.oracle import scripted_repairs
from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

from .conftest import KEYS_ENV, TINY_TASK_IDS, clean_env, entry_point_of, results_of, run_cli, task_record

PRICE_IN, PRICE_OUT = 2.5, 10.0
# The scripted model fixes the first task at once, the second on turn 1, never the third.
FIX_AT = {TINY_TASK_IDS[0]: 0, TINY_TASK_IDS[1]: 1, TINY_TASK_IDS[2]: None}
MAX_ITERS = 2


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, dataset_path: Path) -> dict[str, Any]:
    """Run A: the scripted model (priced, --visualize); run B: oracle:canonical; same 3 tasks."""
    from humanevalfix.evaluation.dataset import load_file

    tmp = tmp_path_factory.mktemp("reports")
    rows = {
        json.loads(line)["task_id"]: line
        for line in dataset_path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    tiny = tmp / "tiny.jsonl"
    tiny.write_text("".join(rows[t] + "\n" for t in TINY_TASK_IDS), encoding="utf-8")
    tasks = load_file(tiny).tasks
    a, b = tmp / "a.json", tmp / "b.json"
    with ScriptedServer(scripted_repairs(tasks, lambda t: FIX_AT[t.task_id])) as server:
        models = tmp / "models.yaml"
        models.write_text(
            f"priced:\n  provider: compatible\n  base_url: {server.base_url}\n  model: scripted-model\n"
            f"  temperatures: [0.0]\n  price_per_1m: {{input: {PRICE_IN}, output: {PRICE_OUT}}}\n",
            encoding="utf-8",
        )
        proc = run_cli(
            [
                "--models-file",
                str(models),
                "--model",
                "priced",
                "--dataset-path",
                str(tiny),
                "--max-iters",
                str(MAX_ITERS),
                "--workers",
                "2",
                "--out",
                str(a),
                "--visualize",
            ],
            cwd=tmp,
            env=clean_env(),
        )
    assert proc.returncode == 0, proc.stderr
    # B in-process (the same runner the CLI calls); one scored run per task.
    outcome = run_eval(
        RunConfig(preset=resolve("oracle:canonical", presets={}), dataset_path=tiny, max_iters=0, out=b),
        Console(file=io.StringIO()),
    )
    assert outcome.status == "complete"
    return {"a": a, "b": b, "tiny": tiny, "tasks": {t.task_id: t for t in tasks}, "stderr": proc.stderr, "tmp": tmp}


@pytest.mark.e2e
def test_visualize_flag_writes_png_and_html_next_to_the_results(runs: dict[str, Any]) -> None:
    a: Path = runs["a"]
    png, page = a.with_name("a.report.png"), a.with_name("a.report.html")
    assert png.is_file() and page.is_file()
    assert f"report: {png}" in " ".join(runs["stderr"].split())
    width, height = png_size(png.read_bytes())
    assert width >= 1000 and height >= 1000


@pytest.mark.e2e
def test_statistics_of_the_run_follow_the_scripted_schedule(runs: dict[str, Any]) -> None:
    run = load_run(runs["a"])
    by_id = {r.task_id: r for r in run.records}
    assert [by_id[t].passed for t in TINY_TASK_IDS] == [True, True, False]
    assert solved_turn(by_id[TINY_TASK_IDS[0]]) == 0
    assert solved_turn(by_id[TINY_TASK_IDS[1]]) == 1
    assert solved_turn(by_id[TINY_TASK_IDS[2]]) is None
    assert cumulative_pass_rate(run.records, MAX_ITERS) == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    bug_types = {c.category: c for c in rates_by(run.records, lambda r: r.bug_type)}
    for t in TINY_TASK_IDS:
        assert runs["tasks"][t].bug_type in bug_types
    assert sum(c.n for c in bug_types.values()) == 3
    summary = results_of(runs["a"])["summary"]
    expected_cost = summary["tokens_in"] / 1e6 * PRICE_IN + summary["tokens_out"] / 1e6 * PRICE_OUT
    assert summary["tokens_in"] > 0 and summary["cost_usd"] == pytest.approx(expected_cost, abs=1e-6)


@pytest.mark.e2e
def test_html_is_self_contained_and_shows_every_task(runs: dict[str, Any]) -> None:
    a: Path = runs["a"]
    page = a.with_name("a.report.html").read_text(encoding="utf-8")
    # Opens offline: no script, no stylesheet link, no remote URL; the plot is inline.
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page)
    embedded = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert embedded is not None
    assert base64.b64decode(embedded.group(1)) == a.with_name("a.report.png").read_bytes()
    for t in TINY_TASK_IDS:
        assert f"<td>{t}</td>" in page
    assert page.count('class="pass">PASS') == 2 and page.count('class="fail">FAIL') == 1
    summary = results_of(a)["summary"]
    assert f"${summary['cost_usd']:.4f}" in page  # the run's cost in the summary table


@pytest.mark.e2e
def test_html_diff_shows_the_fix_against_the_buggy_code(runs: dict[str, Any]) -> None:
    import html as html_lib

    page = runs["a"].with_name("a.report.html").read_text(encoding="utf-8")
    fixed = runs["tasks"][TINY_TASK_IDS[0]]
    buggy_lines = {line.strip() for line in fixed.buggy_code.splitlines()}
    added = [
        line for line in (fixed.canonical_code or "").splitlines() if line.strip() and line.strip() not in buggy_lines
    ]
    removed = [
        line
        for line in fixed.buggy_code.splitlines()
        if line.strip() and line.strip() not in {ln.strip() for ln in (fixed.canonical_code or "").splitlines()}
    ]
    assert added and removed
    assert f'<span class="add">+{html_lib.escape(added[0].rstrip())}</span>' in page
    assert f'<span class="del">-{html_lib.escape(removed[0].rstrip())}</span>' in page
    # The task never fixed shows its last test failure.
    unsolved = load_run(runs["a"]).records[2]
    assert not unsolved.passed and unsolved.score_message.strip()
    assert f'<td class="err"><pre>{html_lib.escape(unsolved.score_message)}</pre></td>' in page


@pytest.mark.e2e
def test_report_escapes_model_output_and_reads_buggy_code_from_the_dataset(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    """A results file without buggy_code (older runs) still gets diffs; hostile code stays text."""
    data = results_of(runs["a"])
    for task in data["tasks"]:
        task.pop("buggy_code", None)
    data["tasks"][0]["final_code"] = data["tasks"][0]["final_code"] + "\n# </pre><script>alert('x')</script>\n"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    assert write_reports(old, tmp_path / "out" / "page.html") == [
        tmp_path / "out" / "page.png",
        tmp_path / "out" / "page.html",
    ]
    page = (tmp_path / "out" / "page.html").read_text(encoding="utf-8")
    assert (tmp_path / "out" / "page.png").is_file()
    assert "<script>" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "buggy code unavailable" not in page and 'class="del">-' in page


@pytest.mark.e2e
def test_report_of_an_oracle_run_has_no_tokens_and_no_cost(runs: dict[str, Any], tmp_path: Path) -> None:
    paths = write_reports(runs["b"], tmp_path / "oracle")
    page = paths[1].read_text(encoding="utf-8")
    assert "oracle (no per-token price)" in page and "$0.000000" not in page
    assert page.count('class="pass">PASS') == 3


@pytest.mark.e2e
def test_comparison_of_two_runs(runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cmp.html"
    assert main(["report", str(runs["a"]), str(runs["b"]), "--out", str(out)]) == 0
    text = " ".join(capsys.readouterr().err.split())
    assert "B does better on 1 and worse on 0" in text
    assert "p = 1" in text and "not significant" in text and "Small sample" in text
    page = out.read_text(encoding="utf-8")
    assert (tmp_path / "cmp.png").is_file()
    assert "66.7%" in page and "100.0%" in page  # after repair: A 2/3, B 3/3
    assert f"Tasks B solves and A does not (1)</h2><p>{TINY_TASK_IDS[2]}</p>" in page
    assert "Tasks A solves and B does not (0)" in page


def test_mcnemar_exact_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(7, 0) == pytest.approx(2 / 2**7)
    assert mcnemar_exact(0, 7) == mcnemar_exact(7, 0)
    assert mcnemar_exact(10, 2) == pytest.approx(2 * (1 + 12 + 66) / 2**12)
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(1, 0) == 1.0


def test_paired_bootstrap_interval() -> None:
    a = [0.0] * 50 + [1.0] * 50
    assert paired_bootstrap(a, a) == (0.0, 0.0)
    b = [1.0] * 100
    lo, hi = paired_bootstrap(a, b)
    assert lo <= 0.5 <= hi and lo > 0.35 and hi < 0.65  # mean difference 0.5, n = 100
    assert paired_bootstrap(a, b) == (lo, hi)  # seeded: the report does not change between views


def test_report_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def run(*args: str) -> tuple[int, str]:
        code = main(["report", *args])
        return code, " ".join(capsys.readouterr().err.split())

    code, err = run(str(tmp_path / "missing.json"))
    assert code == 2 and "results file not found" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    code, err = run(str(bad))
    assert code == 2 and "not a results file" in err
    # Anything that is not a JSON document: one line naming the file, never a traceback.
    torn = tmp_path / "torn.json"
    torn.write_text('{"tasks": [', encoding="utf-8")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    for path, why in (
        (torn, "not valid JSON (Expecting value at line 1)"),
        (binary, "not valid JSON (not UTF-8 text)"),
        (tmp_path, "results file cannot be read"),
    ):
        code, err = run(str(path))
        assert code == 2 and f"{path}" in err and why in err, err
        assert "Traceback" not in err
    code, err = run(str(bad), str(bad), str(bad))
    assert code == 2 and "one results file, or two" in err


def test_solved_turn_ignores_repeats_of_the_final_code() -> None:
    record = TaskRecord(
        task_id="t",
        entry_point="f",
        bug_type="",
        failure_symptoms="",
        scores={"verdict": {"passed": True, "passed_first": False}},
        iterations=4,
        executions=2,
        stop_reason="stopped_calling",
        tool_mode="native",
        first_code="a",
        final_code="b",
        score_message="",
        tokens_in=0,
        tokens_out=0,
        model_latency_s=0.0,
        wall_s=0.0,
        attempts=[
            {"turn": 0, "outcome": "failed", "code": "a"},
            {"turn": 1, "outcome": "failed", "code": "b"},
            {"turn": 2, "outcome": "repeat", "code": "b"},
            {"turn": 3, "outcome": "no_code", "code": None},
        ],
    )
    assert solved_turn(record) == 1


@pytest.mark.e2e
def test_shipped_priced_preset_shows_its_cost_in_the_summary_the_results_and_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Any], make_config: Any
) -> None:
    """models.yaml's gpt-4o-mini prices (USD 0.15 in / 0.60 out per 1M tokens), served by the scripted server."""
    from dataclasses import replace

    from humanevalfix.models.presets import load_presets
    from humanevalfix.reports.summary import summary_table

    presets = load_presets()
    assert (presets["gpt-4o-mini"].price_in, presets["gpt-4o-mini"].price_out) == (0.15, 0.60)
    assert (presets["gpt-4o"].price_in, presets["gpt-4o"].price_out) == (2.50, 10.00)
    assert (presets["qwen-coder-32b-together"].price_in, presets["qwen-coder-32b-together"].price_out) == (0.80, 0.80)
    for free in ("local", "local-1.5b"):
        assert (presets[free].price_in, presets[free].price_out) == (0, 0)
    for unpriced in ("qwen-coder-32b-hf", "qwen-coder-7b-vllm"):  # the router's provider, your own server
        assert (presets[unpriced].price_in, presets[unpriced].price_out) == (None, None)

    monkeypatch.setenv(KEYS_ENV, "sk-test-priced-0001")
    with ScriptedServer(lambda rec: tool_call(tiny_tasks[entry_point_of(rec)].canonical_code or "")) as server:
        preset = replace(presets["gpt-4o-mini"], provider="compatible", base_url=server.base_url, key_env=KEYS_ENV)
        outcome = run_eval(make_config(server, tiny_dataset, preset=preset), Console(file=io.StringIO()))
    # Each task passes on its first call; the scripted server reports 100 prompt and 20 completion tokens per call.
    assert (outcome.summary.tokens_in, outcome.summary.tokens_out) == (300, 60)
    expected = 300 / 1e6 * 0.15 + 60 / 1e6 * 0.60  # USD 0.000081
    assert outcome.summary.cost_usd == pytest.approx(expected, abs=1e-9)

    document = results_of(outcome.results_path)
    assert document["summary"]["cost_usd"] == pytest.approx(expected, abs=1e-9)
    assert document["config"]["preset"]["price_per_1m"] == {"input": 0.15, "output": 0.60}

    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(outcome.summary, outcome.spec))
    assert "estimated cost" in console.file.getvalue() and "$0.0001" in console.file.getvalue()

    page = write_reports(outcome.results_path, tmp_path / "priced")[1].read_text(encoding="utf-8")
    assert "estimated cost" in page and "$0.000081" in page


def test_another_base_url_drops_the_presets_prices() -> None:
    """`--model gpt-4o-mini --base-url http://localhost:8000/v1` is someone's own server: OpenAI's
    prices do not apply."""
    from humanevalfix.models.presets import load_presets, resolve

    presets = load_presets()
    own = resolve("gpt-4o-mini", base_url="http://localhost:8000/v1", presets=presets, environ={})
    assert (own.price_in, own.price_out) == (None, None) and own.provider == "compatible"
    same = resolve("gpt-4o-mini", presets=presets, environ={})
    assert (same.price_in, same.price_out) == (0.15, 0.60)


def test_the_error_list_shows_the_first_ten_then_a_count() -> None:
    from humanevalfix.reports.summary import error_lines

    def record(i: int, error: str | None) -> TaskRecord:
        return task_record(
            f"Python/{i}",
            scores={"verdict": {"passed": False, "passed_first": False}},
            stop_reason="error" if error else "budget",
            error=error,
        )

    records = [record(i, f"cause {i}" if i != 3 else None) for i in range(13)]  # 12 errors, one task without
    lines = error_lines(records)
    assert lines[:10] == [f"Python/{i}: cause {i}" for i in (0, 1, 2, 4, 5, 6, 7, 8, 9, 10)]
    assert len(lines) == 11 and lines[10].startswith("… and 2 more")
    assert error_lines(records[:3]) == ["Python/0: cause 0", "Python/1: cause 1", "Python/2: cause 2"]


def _record(task_id: str, passed: bool, plus: bool | None, final: str, attempts: list[dict[str, Any]]) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        entry_point="f",
        bug_type="",
        failure_symptoms="",
        scores={"verdict": {"passed": passed, "passed_first": False}, "plus": {"final": plus}},
        iterations=len(attempts),
        executions=len(attempts),
        stop_reason="passed" if passed else "stuck",
        tool_mode="text",
        first_code=None,
        final_code=final,
        score_message="",
        tokens_in=0,
        tokens_out=0,
        model_latency_s=0.0,
        wall_s=0.0,
        attempts=attempts,
    )


def test_passes_by_strategy_count_the_turn_that_wrote_the_final_code() -> None:
    from humanevalfix.evaluation.results import passes_by_strategy, strategies_text

    records = [
        # rewrite wrote the final code, after a failed fix turn
        _record(
            "a",
            True,
            True,
            "x",
            [
                {"outcome": "failed", "code": "w", "strategy": "fix"},
                {"outcome": "passed", "code": "x", "strategy": "rewrite"},
            ],
        ),
        # written and read back: stored, the turn names the final code instead of repeating it
        TaskRecord.from_dict(
            _record("b", True, False, "y", [{"outcome": "passed", "code": "y", "strategy": "rewrite"}]).to_dict()
        ),
        _record("c", True, None, "z", [{"outcome": "passed", "code": "z", "strategy": "fix"}]),  # pass@1+ not checked
        _record("d", False, None, "q", [{"outcome": "failed", "code": "q", "strategy": "fix"}]),  # not a pass
        _record("e", True, True, "o", []),  # an oracle: no turn wrote it
        _record("f", True, True, "p", [{"outcome": "passed", "code": "p"}]),  # a turn from before strategies were kept
    ]
    by_strategy = passes_by_strategy(records)
    assert by_strategy == {"rewrite": (2, 1), "fix": (1, 0)}
    assert strategies_text(by_strategy) == "rewrite 2 (pass@1+ 1), fix 1 (pass@1+ 0)"
    assert passes_by_strategy(records[3:5]) == {}


@pytest.mark.e2e
def test_the_report_and_the_summary_show_passes_by_strategy(runs: dict[str, Any], tmp_path: Path) -> None:
    from humanevalfix.evaluation.results import Summary
    from humanevalfix.reports.runs import summary_lines
    from humanevalfix.reports.summary import print_summary

    run = load_run(runs["a"])
    expected = {}
    for r in run.records:
        if r.passed:
            name = [a for a in r.attempts if a.get("code") == r.final_code][-1]["strategy"]
            expected[name] = expected.get(name, 0) + 1
    assert sum(expected.values()) == 2  # the scripted schedule: two of three tasks pass
    line = next(x for x in summary_lines(run) if x.startswith("passes by strategy of the final turn: "))
    for name, count in expected.items():
        assert f"{name} {count} (pass@1+ " in line
    page = write_reports(runs["a"], tmp_path / "a")[1].read_text(encoding="utf-8")
    assert "passes by strategy of the final turn" in page
    console = Console(file=io.StringIO(), width=300)
    print_summary(console, Summary.from_dict(results_of(runs["a"])["summary"]), run.spec, run.records)
    assert "passes by strategy" in console.file.getvalue()


def test_the_committed_default_run_passes_by_strategy() -> None:
    """docs/results.md quotes these: rewrite's passes hold beyond the tests less often than fix's."""
    from humanevalfix.reports.runs import summary_lines

    run = load_run(Path(__file__).resolve().parents[1] / "results" / "local-0.5b_tests_repair_rewrite-now_fresh.json")
    assert "passes by strategy of the final turn: fix 25 (pass@1+ 24), rewrite 25 (pass@1+ 23)" in summary_lines(run)


@pytest.mark.e2e
def test_a_strategy_name_is_shown_as_text_not_markup(runs: dict[str, Any]) -> None:
    """A plugin's strategy may be named anything the registry takes, brackets included."""
    from humanevalfix.evaluation.results import Summary
    from humanevalfix.reports.summary import summary_table

    run = load_run(runs["a"])
    records = [_record("t", True, True, "x", [{"outcome": "passed", "code": "x", "strategy": "[red]odd[/red]"}])]
    console = Console(file=io.StringIO(), width=300, record=True)
    console.print(summary_table(Summary.from_dict(results_of(runs["a"])["summary"]), run.spec, records))
    assert "[red]odd[/red] 1 (pass@1+ 1)" in console.export_text()
