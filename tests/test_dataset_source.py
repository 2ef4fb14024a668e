"""The default dataset source: the Hub through `datasets` when a quick probe answers, else the
bundled copy, with one line on stderr that says which and why. The probe runs against loopback
servers here (the session sets HF_HUB_OFFLINE, so nothing else probes at all)."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.cli import main
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.dataset import (
    BUNDLED_SHA256,
    BUNDLED_SOURCE,
    DATASET_ENV,
    HUB_SOURCE,
    OFFLINE_ENVS,
    DatasetError,
)
from humanevalfix.reports.visualize import load_run

from .conftest import clean_env, results_of, run_cli

BUNDLED_LINE = (
    f"dataset: bundled copy of bigcode/humanevalpack (python/test), 164 tasks, sha256 {BUNDLED_SHA256[:12]}…; "
)


# ---- the default source: the Hub when a quick probe answers, else the bundled copy --------


def _never(*args: Any) -> Any:
    raise AssertionError("must not be called")


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """No offline flag (the session sets them); each test gives its own probe or a loopback endpoint."""
    for name in OFFLINE_ENVS:
        monkeypatch.delenv(name, raising=False)


def _hub_copy() -> ds.Dataset:
    return ds.Dataset(tasks=ds.load_bundled().tasks[:2], source=HUB_SOURCE, sha256="ab" * 32)


@pytest.mark.parametrize("flag", OFFLINE_ENVS)
def test_an_offline_flag_means_the_bundled_copy_without_a_probe(
    online: None, monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    monkeypatch.setenv(flag, "1")
    lines: list[str] = []
    data = ds.load_default(probe=_never, hub=_never, announce=lines.append)
    assert data.source == BUNDLED_SOURCE and len(data.tasks) == 164
    assert lines == [BUNDLED_LINE + f"{flag} is set"]


def test_offline_flag_values() -> None:
    assert ds.offline_flag({}) is None
    assert ds.offline_flag({"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": ""}) is None
    assert ds.offline_flag({"HF_HUB_OFFLINE": "true"}) == "HF_HUB_OFFLINE"
    assert ds.offline_flag({"HF_DATASETS_OFFLINE": "YES"}) == "HF_DATASETS_OFFLINE"


def test_a_hub_that_does_not_answer_means_the_bundled_copy_and_says_why(online: None) -> None:
    lines: list[str] = []
    data = ds.load_default(probe=lambda: "the Hub did not answer within 2 s", hub=_never, announce=lines.append)
    assert data == ds.load_bundled()
    assert lines == [BUNDLED_LINE + "the Hub did not answer within 2 s"]


def test_a_hub_that_answers_serves_the_dataset(online: None) -> None:
    hub_copy = _hub_copy()
    lines: list[str] = []
    assert ds.load_default(probe=lambda: None, hub=lambda: hub_copy, announce=lines.append) is hub_copy
    assert len(lines) == 1
    assert lines[0].startswith(
        "dataset: bigcode/humanevalpack (python/test) from the Hugging Face Hub, 2 tasks, sha256 abababababab…"
    )


def test_a_hub_that_answers_but_fails_to_load_falls_back_to_the_bundled_copy(online: None) -> None:
    def failing() -> ds.Dataset:
        raise DatasetError(
            "could not load bigcode/humanevalpack (python/test) from the Hugging Face Hub (HfHubHTTPError: 429)"
        )

    lines: list[str] = []
    assert ds.load_default(probe=lambda: None, hub=failing, announce=lines.append).source == BUNDLED_SOURCE
    assert lines == [
        BUNDLED_LINE
        + "the Hub answered, but could not load bigcode/humanevalpack (python/test) from the Hugging Face Hub "
        "(HfHubHTTPError: 429)"
    ]


def test_load_hub_turns_the_hub_rows_into_tasks_and_keeps_its_warnings_to_one_handler(
    monkeypatch: pytest.MonkeyPatch, dataset_rows: list[dict[str, Any]]
) -> None:
    import datasets

    for name in ("datasets", "huggingface_hub"):
        monkeypatch.setattr(logging.getLogger(name), "propagate", True)
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: dataset_rows[:3])
    data = ds.load_hub()
    assert [t.task_id for t in data.tasks] == ["Python/0", "Python/1", "Python/2"]
    assert data.source == HUB_SOURCE and len(data.sha256) == 64
    # Both libraries print through their own handler: passing records on to the root logger too
    # (the CLI's handler) printed every Hub warning twice.
    assert not logging.getLogger("datasets").propagate and not logging.getLogger("huggingface_hub").propagate

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("no route to huggingface.co")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(
        DatasetError,
        match=r"could not load bigcode/humanevalpack \(python/test\) from the Hugging Face Hub "
        r"\(ConnectionError: no route",
    ):
        ds.load_hub()


# ---- the probe, against loopback servers ------------------------------------------------


@contextmanager
def silent_server() -> Iterator[str]:
    """Accepts connections (the kernel does, from the backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def answering_server(status: int) -> Iterator[tuple[str, list[str]]]:
    """Answers every GET with `status`; yields its endpoint and the paths asked for."""
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            paths.append(self.path)
            body = b'{"id": "bigcode/humanevalpack"}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", paths
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.e2e
def test_the_probe_gives_up_on_a_silent_hub_within_its_timeout() -> None:
    with silent_server() as endpoint:
        start = time.monotonic()
        why = ds.hub_problem(f"{endpoint}/api/datasets/bigcode/humanevalpack", timeout_s=0.5)
        elapsed = time.monotonic() - start
    assert why == "the Hub did not answer within 0.5 s"
    assert 0.4 < elapsed < 1.5


@pytest.mark.e2e
def test_the_probe_reads_an_answer_an_error_status_and_a_closed_port() -> None:
    with answering_server(200) as (endpoint, paths):
        assert ds.hub_problem(f"{endpoint}/api/datasets/bigcode/humanevalpack", timeout_s=2.0) is None
    assert paths == ["/api/datasets/bigcode/humanevalpack"]
    with answering_server(503) as (endpoint, _):
        assert (
            ds.hub_problem(f"{endpoint}/api/datasets/bigcode/humanevalpack", timeout_s=2.0)
            == "the Hub answered HTTP 503"
        )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    why = ds.hub_problem(f"http://127.0.0.1:{closed}/api/datasets/bigcode/humanevalpack", timeout_s=2.0)
    assert why is not None and why.startswith("the Hub could not be reached (") and "refused" in why.lower()


@pytest.mark.e2e
def test_the_default_probe_asks_the_endpoint_huggingface_hub_is_configured_for(
    online: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    hub_copy = _hub_copy()
    lines: list[str] = []
    with answering_server(200) as (endpoint, paths):
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        assert ds.hub_probe_url() == f"{endpoint}/api/datasets/bigcode/humanevalpack"
        assert ds.load_default(hub=lambda: hub_copy, announce=lines.append) is hub_copy
    assert paths == ["/api/datasets/bigcode/humanevalpack"]
    with silent_server() as endpoint:
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        assert ds.load_default(hub=_never, announce=lines.append).source == BUNDLED_SOURCE
    assert lines[1] == BUNDLED_LINE + f"the Hub did not answer within {ds.PROBE_TIMEOUT_S:g} s"


# ---- through the command line ---------------------------------------------------------------


def _env_without_a_dataset(**extra: str) -> dict[str, str]:
    env = clean_env(**extra)
    env.pop(DATASET_ENV, None)
    return env


def _dataset_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("dataset:")]


@pytest.mark.e2e
def test_eval_export_and_report_work_offline_on_the_bundled_copy(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        ["--model", "oracle:canonical", "--limit", "2", "--out", str(out)], cwd=tmp_path, env=_env_without_a_dataset()
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _dataset_lines(proc.stderr) == [BUNDLED_LINE + "HF_HUB_OFFLINE is set"]
    document = results_of(out)
    assert (document["config"]["dataset_source"], document["config"]["dataset_sha256"]) == (
        BUNDLED_SOURCE,
        BUNDLED_SHA256,
    )
    # export reloads the run's dataset from the source it recorded
    generations = tmp_path / "exported.json"
    assert main(["export", str(out), "--out", str(generations)]) == 0
    assert json.loads(generations.read_text(encoding="utf-8")) == [[t["final_code"]] for t in document["tasks"]]
    # the reports take the buggy code that older results lack from it too
    for task in document["tasks"]:
        task["buggy_code"] = ""
    out.write_text(json.dumps(document), encoding="utf-8")
    bundled = {t.task_id: t.buggy_code for t in ds.load_bundled().tasks}
    assert load_run(out).buggy == {"Python/0": bundled["Python/0"], "Python/1": bundled["Python/1"]}


@pytest.mark.e2e
def test_with_no_offline_flag_a_silent_hub_costs_one_short_probe(tmp_path: Path) -> None:
    """The offline machine: one probe, the bundled copy, one line; no half minute of Hub retries."""
    out = tmp_path / "run.json"
    with silent_server() as endpoint:
        env = _env_without_a_dataset(HF_ENDPOINT=endpoint)
        for name in OFFLINE_ENVS:
            env.pop(name, None)
        start = time.monotonic()
        proc = run_cli(["--model", "oracle:canonical", "--limit", "1", "--out", str(out)], cwd=tmp_path, env=env)
        elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _dataset_lines(proc.stderr) == [BUNDLED_LINE + f"the Hub did not answer within {ds.PROBE_TIMEOUT_S:g} s"]
    assert "Retry" not in proc.stderr and "huggingface" not in proc.stderr.lower()
    assert results_of(out)["config"]["dataset_source"] == BUNDLED_SOURCE
    assert elapsed < 20  # start-up and a one-task run on a busy machine, plus the 2 s probe
