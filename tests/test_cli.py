"""The command line as a user runs it: a child process, exit codes, one clear line per bad input."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from humanevalfix.cli import main
from humanevalfix.models.presets import load_presets

from .conftest import clean_env, results_of, run_cli


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if "error:" in line]


def assert_one_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = error_lines(proc)
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    return lines[0]


def run_main(
    args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    """`src.cli.main` in this process (quicker than a child for option errors), as a CompletedProcess."""
    monkeypatch.chdir(cwd)
    for var in ("OPENAI_API_KEY", "TOGETHER_API_KEY", "HF_TOKEN", "LOCAL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    try:
        code = main(args)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


@pytest.mark.e2e
def test_help_lists_the_options(tmp_path: Path) -> None:
    proc = run_cli(["--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "HumanEvalFix" in proc.stdout and "eval" in proc.stdout
    proc = run_cli(["eval", "--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for option in (
        "--model",
        "--max-iters",
        "--protocol",
        "--workers",
        "--resume",
        "--dataset-path",
        "--tasks",
        "--limit",
    ):
        assert option in proc.stdout


@pytest.mark.e2e
def test_list_models_lists_every_preset(tmp_path: Path) -> None:
    proc = run_cli(["--list-models"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert listed == set(load_presets())
    assert "gpt-4o-mini" in listed


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        pytest.param(["--limit", "0"], ["--limit", "must be at least 1, got 0"], id="limit 0"),
        pytest.param(["--workers", "two"], ["--workers", "expected a whole number"], id="workers not a number"),
        pytest.param(["--max-iters", "-1"], ["--max-iters", "must be 0 or more"], id="negative max-iters"),
        pytest.param(["--protocol", "all"], ["--protocol", "invalid choice"], id="unknown protocol"),
        # An oracle is chosen by --model oracle:..., so --provider offers every provider but it.
        pytest.param(
            ["--provider", "oracle"], ["--provider", "invalid choice", "'compatible', 'local')"], id="provider oracle"
        ),
        pytest.param(["--timeout", "0"], ["--timeout", "must be above 0"], id="timeout 0"),
    ],
)
def test_bad_option_values_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    fragments: list[str],
) -> None:
    assert_one_error(run_main(args, tmp_path, monkeypatch, capsys), *fragments)


@pytest.mark.e2e
def test_bad_temperatures_exit_2(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = run_cli(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--temperatures", "a,b"], cwd=tmp_path
    )
    assert_one_error(proc, "--temperatures", "'a,b'")
    proc = run_main(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--temperatures", "0,5"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert_one_error(proc, "--temperatures", "between 0 and 2")


@pytest.mark.e2e
def test_redraw_turns_without_redraws_is_one_error(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = run_main(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--redraws", "0", "--redraw-turns", "1"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert_one_error(proc, "--redraw-turns", "--redraws N")
    proc = run_cli(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--redraws", "1", "--redraw-turns", "0"],
        cwd=tmp_path,
    )
    assert_one_error(proc, "--redraw-turns", "at least 1, got 0")


def test_strategies_are_checked_before_the_run(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = run_main(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--strategies", "fix,guess"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert_one_error(proc, "--strategies", "unknown strategy 'guess'")
    proc = run_main(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--strategies", "rewrite"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert_one_error(proc, "--strategies", "needs one of fix, explain")
    proc = run_main(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--rewrite-turns", "0"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert_one_error(proc, "--rewrite-turns", "must be at least 1, got 0")
    assert not list(tmp_path.rglob("*.jsonl"))  # refused before any run started


def test_missing_dataset_file_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "tasks.jsonl"
    proc = run_main(["--model", "oracle:canonical", "--dataset-path", str(missing)], tmp_path, monkeypatch, capsys)
    assert_one_error(proc, "dataset file not found", str(missing))


@pytest.mark.e2e
def test_bad_row_in_dataset_exits_2_naming_the_row(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"task_id": "X/0", "entry_point": "f", "buggy_code": "def f():\\n    return 1\\n"}\n', encoding="utf-8"
    )
    proc = run_cli(["--model", "oracle:buggy", "--dataset-path", str(bad)], cwd=tmp_path)
    assert_one_error(proc, f"{bad}:1", "'X/0'", "field 'test'")


def test_unknown_task_id_exits_2(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = run_main(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--tasks", "Python/0,Python/999"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert_one_error(proc, "--tasks", "Python/999")
    assert "Python/0" not in error_lines(proc)[0]


def test_unknown_oracle_exits_2(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = run_main(["--model", "oracle:perfect", "--dataset-path", str(dataset_path)], tmp_path, monkeypatch, capsys)
    assert_one_error(proc, "oracle:canonical", "oracle:buggy")


@pytest.mark.e2e
def test_no_key_for_openai_tells_to_set_it_in_dotenv(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = run_cli(
        ["--model", "gpt-4o-mini", "--dataset-path", str(dataset_path), "--limit", "1"], cwd=tmp_path, env=clean_env()
    )
    assert_one_error(proc, "no API key for provider 'openai'", "set OPENAI_API_KEY in .env")
    # A raw model id goes to OpenAI too, and needs the same key.
    proc = run_main(
        ["--model", "gpt-4.1-nano", "--dataset-path", str(dataset_path), "--limit", "1"], tmp_path, monkeypatch, capsys
    )
    assert_one_error(proc, "no API key for provider 'openai'", "set OPENAI_API_KEY in .env")
    assert not (tmp_path / "results").exists()  # nothing was started


@pytest.mark.e2e
def test_key_from_dotenv_in_the_working_directory_is_used(tmp_path: Path, dataset_path: Path) -> None:
    """With OPENAI_API_KEY in ./.env the key check passes; the run then fails on the (unreachable) endpoint."""
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-test-dotenv-1234abcd\n", encoding="utf-8")
    out = tmp_path / "r.json"
    proc = run_cli(
        [
            "--model",
            "gpt-4o-mini",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--provider",
            "openai",
            "--dataset-path",
            str(dataset_path),
            "--limit",
            "1",
            "--retries",
            "1",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 4, proc.stderr  # stopped: the server could not be reached (its one task an error)
    [task] = results_of(out)["tasks"]
    assert task["error"] and "Connection" in task["error"] and task["error_kind"] == "connection"
    assert "sk-test-dotenv-1234abcd" not in out.read_text(encoding="utf-8") + proc.stderr + proc.stdout


@pytest.mark.e2e
def test_small_oracle_run_prints_the_results_path(tmp_path: Path, dataset_path: Path) -> None:
    out = tmp_path / "small.json"
    proc = run_cli(
        [
            "--model",
            "oracle:canonical",
            "--dataset-path",
            str(dataset_path),
            "--tasks",
            "Python/0,Python/2",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(out)
    data = results_of(out)
    assert data["status"] == "complete"
    assert [t["task_id"] for t in data["tasks"]] == ["Python/0", "Python/2"]
    assert data["summary"]["passed"] == 2
    assert out.with_suffix(".jsonl").is_file()


@pytest.mark.e2e
def test_top_level_help_shows_the_eval_options_and_lists_every_command(tmp_path: Path) -> None:
    """`--help` with no command is what people read first: --limit and --model must be there."""
    from humanevalfix.cli import COMMANDS

    proc = run_cli(["--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for option in ("--limit", "--model", "--max-iters", "--resume", "--sandbox"):
        assert option in proc.stdout, option
    for command in COMMANDS:
        assert f"\n  {command} " in proc.stdout, command
    assert set(COMMANDS) == {
        "eval",
        "fix",
        "report",
        "export",
        "score",
        "validate-dataset",
        "serve",
        "sandbox",
        "graph",
        "view",
    }


@pytest.mark.e2e
@pytest.mark.parametrize("entry", [["-m", "humanevalfix"], ["eval_humanevalfix.py"], ["humanevalfix"]])
def test_every_entry_point_runs_from_another_directory(tmp_path: Path, dataset_path: Path, entry: list[str]) -> None:
    """The installed command, `python -m humanevalfix` and the repository's script, run from a
    directory that is not the checkout."""
    import shutil
    import sys

    from .conftest import CLI

    if entry == ["humanevalfix"]:
        script = shutil.which("humanevalfix", path=str(Path(sys.executable).parent))
        assert script, (
            "the humanevalfix console script is not installed beside this interpreter (pip install -r requirements.txt)"
        )
        argv = [script]
    else:
        argv = [sys.executable, *(entry if entry[0] == "-m" else [str(CLI)])]
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [*argv, "--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--limit", "1", "--out", str(out)],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert results_of(out)["summary"]["passed"] == 1


@pytest.mark.e2e
def test_verbose_prints_a_line_per_task_not_per_http_request(tmp_path: Path, dataset_path: Path) -> None:
    from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

    with ScriptedServer(
        lambda rec: tool_call("def truncate_number(number: float) -> float:\n    return number % 1.0\n")
    ) as server:
        proc = run_cli(
            [
                "--model",
                "scripted",
                "--base-url",
                server.base_url,
                "--dataset-path",
                str(dataset_path),
                "--tasks",
                "Python/2",
                "--out",
                str(tmp_path / "v.json"),
                "-v",
            ],
            cwd=tmp_path,
            env=clean_env(LOCAL_API_KEY="sk-test-verbose"),
        )
    assert proc.returncode == 0, proc.stderr
    assert "PASS Python/2" in proc.stderr
    assert "HTTP Request" not in proc.stderr + proc.stdout
