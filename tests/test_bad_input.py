"""Bad input, as a user types it: one `error:` line naming the file, row, field or option, exit 2,
no traceback, and not one model call spent (the scripted server counts them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.config import RunConfig
from humanevalfix.errors import UserError
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.presets import Preset
from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

from .conftest import clean_env, entry_point_of, results_of, run_cli

# Refers to row 2's function but never runs check(): it would pass any code.
NEVER_CALLED = "def check(candidate):\n    assert candidate('(a)') == []\n\nchecked = separate_paren_groups\n"
PRESET = {"provider": "compatible", "model": "scripted-model"}


def models_file(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(json.dumps({"mine": {**PRESET, **fields}}), encoding="utf-8")  # JSON is YAML
    return path


def rows_with(
    tmp_path: Path, dataset_rows: list[dict[str, Any]], broken: dict[str, str], name: str = "bad.jsonl"
) -> Path:
    """Three dataset rows; the second one's fields replaced by `broken`."""
    rows = [dict(r) for r in dataset_rows[:3]]
    rows[1].update(broken)
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


CASES: dict[str, tuple[Callable[[Path, list[dict[str, Any]]], list[str]], tuple[str, ...]]] = {
    "out is a directory": (lambda d, r: ["--out", str(d)], ("--out", "is a directory")),
    "out under /proc": (lambda d, r: ["--out", "/proc/x.json"], ("--out /proc/x.json", "cannot write there")),
    "resume is a directory": (lambda d, r: ["--resume", str(d)], ("--resume", "is a directory")),
    "traces is a file": (lambda d, r: ["--traces", str(d / "tiny.jsonl")], ("--traces", "is a file")),
    "timeout nan": (lambda d, r: ["--timeout", "nan"], ("--timeout", "finite")),
    "timeout inf": (lambda d, r: ["--timeout", "inf"], ("--timeout", "finite")),
    "request timeout nan": (lambda d, r: ["--request-timeout", "nan"], ("--request-timeout", "finite")),
    "empty task list": (lambda d, r: ["--tasks", ""], ("--tasks", "no task ids")),
    "base url without scheme": (lambda d, r: ["--base-url", "localhost:8000/v1"], ("--base-url", "not an http(s) URL")),
    "temperature out of range": (lambda d, r: ["--temperatures", "0,3"], ("--temperatures", "between 0 and 2")),
    "temperature nan": (lambda d, r: ["--temperatures", "0,nan"], ("--temperatures", "between 0 and 2")),
    "temperature inf": (lambda d, r: ["--temperatures", "inf"], ("--temperatures", "between 0 and 2")),
    "seed negative": (lambda d, r: ["--seed", "-1"], ("--seed", "whole number")),
    "exact lookup on a served model": (
        lambda d, r: ["--exact-lookup"],
        ("--exact-lookup", "only for the embedded model"),
    ),
    "stop after code on a served model": (
        lambda d, r: ["--stop-after-code"],
        ("--stop-after-code", "only for the embedded model"),
    ),
    "seed not a number": (lambda d, r: ["--seed", "lucky"], ("--seed", "'lucky'")),
    "max_tokens not a number": (
        lambda d, r: ["--models-file", str(models_file(d, max_tokens="lots")), "--model", "mine"],
        ("models.yaml", "preset 'mine'", "field 'max_tokens'"),
    ),
    "max_tokens negative": (
        lambda d, r: ["--models-file", str(models_file(d, max_tokens=-3)), "--model", "mine"],
        ("preset 'mine'", "field 'max_tokens'", "-3"),
    ),
    "price not a mapping": (
        lambda d, r: ["--models-file", str(models_file(d, price_per_1m=3)), "--model", "mine"],
        ("preset 'mine'", "field 'price_per_1m'"),
    ),
    "preset temperature out of range": (
        lambda d, r: ["--models-file", str(models_file(d, temperatures=[0, 5])), "--model", "mine"],
        ("preset 'mine'", "field 'temperatures'"),
    ),
    "unknown preset field": (
        lambda d, r: ["--models-file", str(models_file(d, max_token=10)), "--model", "mine"],
        ("preset 'mine'", "unknown field 'max_token'"),
    ),
    "models file not UTF-8": (
        lambda d, r: ["--models-file", str(_write(d / "latin1.yaml", b"mine:\n  model: caf\xe9\n")), "--model", "mine"],
        ("--models-file", "not UTF-8"),
    ),
    "models file is a directory": (
        lambda d, r: ["--models-file", str(d), "--model", "mine"],
        ("--models-file", "is a directory"),
    ),
    "dataset not UTF-8": (
        lambda d, r: ["--dataset-path", str(_write(d / "latin1.jsonl", json.dumps(r[0]).encode() + b"\n\xff\xfe\n"))],
        ("latin1.jsonl:2", "not UTF-8"),
    ),
    "dataset parquet corrupt": (
        lambda d, r: ["--dataset-path", str(_write(d / "broken.parquet", b"PAR1 this is not parquet"))],
        ("broken.parquet", "not a readable parquet file"),
    ),
    "dataset is a directory": (lambda d, r: ["--dataset-path", str(d)], ("--dataset-path", "is a directory")),
    "test never calls check": (
        lambda d, r: ["--dataset-path", str(rows_with(d, r, {"test": NEVER_CALLED}))],
        ("bad.jsonl:2", "defines check() but never calls it", "--skip-bad-rows"),
    ),
    "two bad rows, both named": (
        lambda d, r: ["--dataset-path", str(_two_bad_rows(d, r))],
        ("two_bad.jsonl:2", "never calls it", "1 more row(s): ", "two_bad.jsonl:3", "--skip-bad-rows"),
    ),
    "test never refers to the function": (
        lambda d, r: [
            "--dataset-path",
            str(rows_with(d, r, {"test": "def check(candidate):\n    assert True\n\ncheck(len)\n"})),
        ],
        ("bad.jsonl:2", "--skip-bad-rows"),
    ),
    "test does not parse": (
        lambda d, r: [
            "--dataset-path",
            str(rows_with(d, r, {"test": "def check(candidate)\n    assert 1\ncheck(x)\n"})),
        ],
        ("bad.jsonl:2", "test", "--skip-bad-rows"),
    ),
}


def _two_bad_rows(tmp_path: Path, dataset_rows: list[dict[str, Any]]) -> Path:
    rows = [dict(r) for r in dataset_rows[:3]]
    for row in rows[1:]:
        row["test"] = NEVER_CALLED
    path = tmp_path / "two_bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_and_no_model_call(
    case: str, tmp_path: Path, tiny_dataset: Path, dataset_rows: list[dict[str, Any]]
) -> None:
    make_args, expected = CASES[case]
    with ScriptedServer([tool_call("def f():\n    return 1\n")]) as server:
        args = [
            "--model",
            "scripted-model",
            "--base-url",
            server.base_url,
            "--dataset-path",
            str(tiny_dataset),
            "--sandbox",
            "process",
            "--out",
            str(tmp_path / "run" / "r.json"),
        ]
        proc = run_cli([*args, *make_args(tmp_path, dataset_rows)], cwd=tmp_path)
        calls = len(server.chat_requests())
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    for part in expected:
        assert part in line, line
    assert calls == 0
    assert not (tmp_path / "run").exists()  # nothing started


@pytest.mark.e2e
def test_skip_bad_rows_lists_them_and_scores_only_the_others(
    tmp_path: Path, dataset_rows: list[dict[str, Any]], all_tasks: dict[str, Task]
) -> None:
    dataset = rows_with(tmp_path, dataset_rows, {"test": NEVER_CALLED})
    tasks = {t.entry_point: t for t in all_tasks.values()}
    out = tmp_path / "r.json"
    with ScriptedServer(lambda rec: tool_call(tasks[entry_point_of(rec)].canonical_code or "")) as server:
        proc = run_cli(
            [
                "--model",
                "scripted-model",
                "--base-url",
                server.base_url,
                "--dataset-path",
                str(dataset),
                "--sandbox",
                "process",
                "--out",
                str(out),
                "--skip-bad-rows",
            ],
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    assert "skipped (--skip-bad-rows): " in proc.stderr and "bad.jsonl:2: Python/1" in proc.stderr
    data = results_of(out)
    assert [t["task_id"] for t in data["tasks"]] == ["Python/0", "Python/2"]
    assert data["config"]["skipped_rows"] == [
        f"{dataset}:2: Python/1: test defines check() but never calls it: it would pass any code"
    ]


# --- --resume with other settings than the interrupted run's: refused, naming the option -------


def _first_run(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> Path:
    with ScriptedServer(lambda rec: tool_call(tiny_tasks[entry_point_of(rec)].canonical_code or "")) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/0",)))
    return outcome.stream_path


CHANGES: dict[str, tuple[Callable[[RunConfig, Path], dict[str, Any]], str]] = {
    "temperatures": (lambda c, d: {"preset": _preset(c, temperatures=(0.5,))}, "option --temperatures"),
    "max tokens": (lambda c, d: {"preset": _preset(c, max_tokens=99)}, "option --max-tokens"),
    "text tools": (lambda c, d: {"preset": _preset(c, native_tools=False)}, "option --text-tools"),
    "timeout": (lambda c, d: {"timeout_s": 3.0}, "option --timeout"),
    "sandbox": (lambda c, d: {"sandbox": "restricted"}, "option --sandbox"),
    "protocol": (lambda c, d: {"protocol": "docs"}, "option --protocol"),
    "dataset": (lambda c, d: {"dataset_path": d}, "the dataset differs"),
}


def _preset(config: RunConfig, **changes: Any) -> Preset:
    from dataclasses import replace

    return replace(config.preset, **changes)


@pytest.mark.e2e
@pytest.mark.parametrize("change", list(CHANGES))
def test_resume_refuses_any_result_affecting_change(
    change: str,
    tmp_path: Path,
    tiny_dataset: Path,
    dataset_path: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    stream = _first_run(tmp_path, tiny_dataset, tiny_tasks, make_config)
    with ScriptedServer([]) as server:
        config = make_config(server, tiny_dataset, resume=stream)
        how, expected = CHANGES[change]
        from dataclasses import replace

        with pytest.raises(UserError) as info:
            run_eval(replace(config, **how(config, dataset_path)))
        assert server.chat_requests() == []
    assert expected in str(info.value) and "--resume" in str(info.value)
    if change != "dataset":
        assert "there" in str(info.value) and "now" in str(info.value)


def test_resume_refuses_other_docker_limits_naming_the_option(tmp_path: Path, tiny_dataset: Path) -> None:
    """The container's image and limits can change verdicts: compared like the executor (the
    isolation text that shows them is only informational)."""
    from dataclasses import replace

    from humanevalfix.config import run_spec
    from humanevalfix.evaluation import resume
    from humanevalfix.models.presets import resolve
    from humanevalfix.runspec import RunSpec
    from humanevalfix.sandbox.docker import DockerSettings

    base = RunConfig(
        preset=resolve("oracle:canonical"),
        dataset_path=tiny_dataset,
        sandbox="docker",
        docker=DockerSettings(image="img:1"),
    )

    def public(config: RunConfig) -> RunSpec:
        return run_spec(
            config,
            dataset_source="s",
            dataset_sha256="abc",
            task_ids=["Python/0"],
            executor_name="docker",
            isolation="docker container",
        )

    resume.check(public(base), public(base), tmp_path / "r.jsonl")  # the same settings: accepted
    for changed, option in [
        (DockerSettings(image="img:1", memory=256 << 20), "--docker-memory"),
        (DockerSettings(image="img:2"), "--docker-image"),
        (DockerSettings(image="img:1", pids=16), "--docker-pids"),
    ]:
        with pytest.raises(UserError) as info:
            resume.check(public(base), public(replace(base, docker=changed)), tmp_path / "r.jsonl")
        assert option in str(info.value)
    not_docker = run_spec(
        base, dataset_source="s", dataset_sha256="abc", task_ids=[], executor_name="bwrap", isolation="bwrap"
    )
    assert (
        not_docker.sandbox.docker is None and not_docker.to_dict()["docker"] is None
    )  # nothing recorded that did not apply


@pytest.mark.e2e
def test_docker_variables_do_not_concern_other_sandboxes(tmp_path: Path, tiny_dataset: Path) -> None:
    """SANDBOX_DOCKER_* written for another harness (512Mi) must not stop a run in another sandbox."""
    env = clean_env(SANDBOX_DOCKER_MEMORY="512Mi", SANDBOX_DOCKER_PIDS="lots")
    proc = run_cli(
        [
            "--model",
            "oracle:canonical",
            "--dataset-path",
            str(tiny_dataset),
            "--sandbox",
            "process",
            "--out",
            str(tmp_path / "r.json"),
        ],
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(
        [
            "--model",
            "oracle:canonical",
            "--dataset-path",
            str(tiny_dataset),
            "--sandbox",
            "docker",
            "--out",
            str(tmp_path / "d.json"),
        ],
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 2 and "SANDBOX_DOCKER_" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.e2e
def test_exact_lookup_with_more_drafts_than_it_checks_exactly_is_refused_before_the_model_starts(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    proc = run_cli(
        [
            "--model",
            "local",
            "--exact-lookup",
            "--prompt-lookup",
            "10",
            "--dataset-path",
            str(tiny_dataset),
            "--out",
            str(tmp_path / "run" / "r.json"),
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "error: --exact-lookup: at most 6 draft tokens are checked exactly, got --prompt-lookup 10" in proc.stderr
    assert not (tmp_path / "run").exists()
