"""Every input is size-bounded: an oversized reply is the model's "too_large" and is not kept, a
models-file alias bomb is one line and exit 2 at once, an oversized dataset field is refused at load
naming its line, and the options raise the limits."""

from __future__ import annotations

import json
import time
from pathlib import Path

from humanevalfix.evaluation.dataset import Task
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, text, tool_call

from .conftest import entry_point_of, results_of, run_cli, turn_of

BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


def cli_args(url: str, dataset: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--model",
        "scripted-model",
        "--base-url",
        url,
        "--dataset-path",
        str(dataset),
        "--max-iters",
        "1",
        "--sandbox",
        "process",
        "--retries",
        "2",
        "--out",
        str(out),
        *extra,
    ]


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in stderr, stderr
    return lines[0]


def test_a_models_file_alias_bomb_is_one_line_and_exit_2_at_once(tmp_path: Path) -> None:
    bomb = tmp_path / "models.yaml"
    bomb.write_text(BOMB + "\n")
    assert len(bomb.read_bytes()) < 600
    started = time.monotonic()
    proc = run_cli(["--models-file", str(bomb), "--list-models"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and time.monotonic() - started < 20  # a subprocess start; the parse itself is instant
    assert "aliases" in one_error_line(proc.stderr)
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * 120_000)
    proc = run_cli(["--models-file", str(big), "--list-models"], cwd=tmp_path)
    assert proc.returncode == 2 and "larger than 1 MiB" in one_error_line(proc.stderr)


def test_a_dataset_field_above_the_cap_is_refused_naming_its_line_and_the_option_raises_it(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    rows = [json.loads(line) for line in tiny_dataset.read_text().splitlines()]
    rows[1]["test"] = rows[1]["test"] + "\n# " + "x" * 2000 + "\n"
    dataset = tmp_path / "big.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run_cli(
        cli_args("http://127.0.0.1:9/v1", dataset, tmp_path / "r.json", "--max-field-size", "1k"), cwd=tmp_path
    )
    line = one_error_line(proc.stderr)
    assert proc.returncode == 2 and f"{dataset}:2" in line and "field 'test'" in line and "--max-field-size" in line
    proc = run_cli(["validate-dataset", str(dataset), "--sandbox", "process", "--max-field-size", "1k"], cwd=tmp_path)
    assert proc.returncode != 0 and "field 'test'" in proc.stdout + proc.stderr
    good = {t.entry_point: t for t in tiny_tasks.values()}
    with ScriptedServer(lambda rec: tool_call(good[entry_point_of(rec)].canonical_code or "")) as server:
        proc = run_cli(cli_args(server.base_url, dataset, tmp_path / "ok.json", "--max-field-size", "1m"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_an_oversized_reply_or_code_argument_is_too_large_and_never_stored_whole(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    huge = "x = 1\n" + "# " + "y" * 300_000 + "\n"
    by_entry = {t.entry_point: t for t in tiny_tasks.values()}

    def oversized(rec: Recorded) -> Response:
        task = by_entry[entry_point_of(rec)]
        if turn_of(rec) == 0:
            if task.entry_point == "truncate_number":
                return text("```python\n" + huge + "```")
            return tool_call(
                task.canonical_code + huge if task.entry_point == "has_close_elements" else task.canonical_code or ""
            )
        return tool_call(task.canonical_code or "")

    out = tmp_path / "r.json"
    with ScriptedServer(oversized) as server:
        proc = run_cli(cli_args(server.base_url, tiny_dataset, out, "--traces", str(tmp_path / "traces")), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    tasks = {t["task_id"]: t for t in results_of(out)["tasks"]}
    assert tasks["Python/0"]["attempts"][0]["outcome"] == "too_large" and tasks["Python/0"]["passed"]
    assert tasks["Python/2"]["attempts"][0]["outcome"] == "too_large"
    for path in [out, out.with_suffix(".jsonl"), *(tmp_path / "traces").iterdir()]:
        assert path.stat().st_size < 200_000, path
    with ScriptedServer(oversized) as server:
        proc = run_cli(
            cli_args(
                server.base_url, tiny_dataset, tmp_path / "raised.json", "--max-reply-size", "1m", "--tasks", "Python/0"
            ),
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    assert results_of(tmp_path / "raised.json")["tasks"][0]["attempts"][0]["outcome"] != "too_large"


def test_each_candidate_is_stored_once_per_record_and_reads_back_whole(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config
) -> None:
    from humanevalfix.evaluation.records import read_stream
    from humanevalfix.evaluation.runner import run_eval
    from humanevalfix.reports.runs import load_run

    padding = "\n# " + "z" * 100_000 + "\n"
    by_entry = {t.entry_point: t for t in tiny_tasks.values()}
    with ScriptedServer(
        lambda rec: tool_call((by_entry[entry_point_of(rec)].canonical_code or "") + padding)
    ) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/0",)))
    for path in (outcome.results_path, outcome.stream_path):
        assert 100_000 < path.stat().st_size < 150_000, path  # once, not three times
    _, [streamed] = read_stream(outcome.stream_path)
    [loaded] = load_run(outcome.results_path).records
    for record in (streamed, loaded):
        assert record.first_code == record.final_code and record.final_code.endswith(padding)
        assert record.attempts[0]["code"] == record.final_code and "code_is" not in record.attempts[0]
