"""Keys and the model client against real HTTP errors: 429 cool-down, 5xx retries, 401 drop, masking."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from humanevalfix.config import RunConfig
from humanevalfix.errors import ModelCallError
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.client import ChatRequest, OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool, mask, split_keys
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, text, tool_call

from .conftest import KEYS_ENV, entry_point_of, requests_for, results_of

KEY_A = "sk-test-alpha-7f3e9a01"
KEY_B = "sk-test-bravo-c4d2b802"


def canonical(tasks: dict[str, Task]) -> Callable[[Recorded], Response]:
    return lambda rec: tool_call(tasks[entry_point_of(rec)].canonical_code or "")


def test_mask_shows_only_the_last_four_characters() -> None:
    assert mask(KEY_A) == "…9a01"
    assert KEY_A[:-4] not in mask(KEY_A)
    assert mask("abc") == "…"
    assert split_keys(f" {KEY_A} ,, {KEY_B} ,") == [KEY_A, KEY_B]
    assert split_keys(None) == []
    pool = KeyPool([KEY_A, KEY_B])
    assert pool.redact(f"bad key {KEY_B}; also {KEY_A}.") == f"bad key {mask(KEY_B)}; also {mask(KEY_A)}."


def test_pool_round_robin_cool_down_and_drop() -> None:
    now = [100.0]
    pool = KeyPool([KEY_A, KEY_B], clock=lambda: now[0])
    assert [pool.acquire().index for _ in range(4)] == [0, 1, 0, 1]
    pool.cool_down(0, 30.0)
    assert [pool.acquire().index for _ in range(3)] == [1, 1, 1]
    now[0] += 31.0
    assert {pool.acquire().index for _ in range(2)} == {0, 1}
    pool.drop(1, "HTTP 401")
    assert pool.usable == 1
    assert [pool.acquire().index for _ in range(2)] == [0, 0]
    pool.cool_down(0, 1000.0)
    with pytest.raises(ModelCallError, match="rate-limited"):
        pool.acquire(max_wait_s=5.0)
    pool.drop(0, "HTTP 401")
    with pytest.raises(ModelCallError, match="rejected"):
        pool.acquire()


@pytest.mark.e2e
def test_retry_backoff_follows_the_policy_without_a_tenacity_deprecation_warning() -> None:
    """The first wait is about `initial_s` (tenacity's `multiplier`; its `initial` is deprecated)."""
    import warnings

    times: list[float] = []

    def handler(rec: Recorded) -> Response:
        times.append(time.monotonic())
        return error(503, "overloaded") if len(times) == 1 else text("ok")

    with ScriptedServer(handler) as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = OpenAIChatModel(
            provider="compatible",
            model="scripted-model",
            base_url=server.base_url,
            keys=KeyPool([KEY_A]),
            retry=RetryPolicy(attempts=3, initial_s=0.01, max_s=0.05, timeout_s=10.0),
        )
        reply = model.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=8))
    assert reply.content == "ok" and reply.http_attempts == 2
    # 0.01 s plus up to 0.01 s of jitter; tenacity's default multiplier (1) would wait over a second.
    assert times[1] - times[0] < 0.9
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning) and "'initial'" in str(w.message)]


@pytest.mark.e2e
def test_429_with_retry_after_waits_for_the_key_to_cool_down(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY_A)
    times: list[float] = []
    answer = canonical(tiny_tasks)

    def handler(rec: Recorded) -> Response:
        times.append(time.monotonic())
        if len(times) == 1:
            return error(429, "rate limited", headers={"Retry-After": "1"})
        return answer(rec)

    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",)))
        assert len(server.chat_requests()) == 2
    # The retry policy alone would wait ~0.01 s; the server asked for 1 s.
    assert times[1] - times[0] >= 0.95
    [record] = outcome.records
    assert record.passed and record.error is None
    assert record.attempts[0]["http_attempts"] == 2
    assert record.attempts[0]["key_index"] == 0


@pytest.mark.e2e
def test_429_on_one_key_moves_the_calls_to_the_other_key(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, f"{KEY_A},{KEY_B}")
    answer = canonical(tiny_tasks)
    limited = threading.Event()

    def handler(rec: Recorded) -> Response:
        if rec.api_key == KEY_A and not limited.is_set():
            limited.set()
            return error(429, "rate limited", headers={"Retry-After": "30"})
        return answer(rec)

    start = time.monotonic()
    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
        used = [r.api_key for r in server.chat_requests()]
    # Round-robin alone would go back to key A; its 30 s cool-down keeps every later call on B.
    assert used == [KEY_A, KEY_B, KEY_B, KEY_B]
    assert time.monotonic() - start < 20
    assert all(r.passed and r.error is None for r in outcome.records)
    assert [a["key_index"] for r in outcome.records for a in r.attempts] == [1, 1, 1]
    assert outcome.records[0].attempts[0]["http_attempts"] == 2


@pytest.mark.e2e
def test_5xx_until_retries_run_out_records_an_error_and_the_run_continues(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY_A)
    answer = canonical(tiny_tasks)

    def handler(rec: Recorded) -> Response:
        if entry_point_of(rec) == "truncate_number":
            return error(503, "overloaded")
        return answer(rec)

    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset, retry_attempts=3))
        assert len(requests_for(server, "truncate_number")) == 3  # --retries 3: three attempts, then give up
        assert len(server.chat_requests()) == 5
    records = {r.task_id: r for r in outcome.records}
    failed = records["Python/2"]
    assert failed.error is not None and "503" in failed.error
    assert not failed.passed and failed.stop_reason == "error"
    assert records["Python/0"].passed and records["Python/3"].passed  # the run went on
    assert records["Python/0"].error is None and records["Python/3"].error is None
    summary = results_of(outcome.results_path)["summary"]
    assert (summary["tasks"], summary["passed"], summary["errors"]) == (3, 2, 1)


@pytest.mark.e2e
def test_401_on_one_key_drops_it_once_and_no_key_reaches_any_output(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, f"{KEY_A},{KEY_B}")
    answer = canonical(tiny_tasks)

    def handler(rec: Recorded) -> Response:
        # Some servers echo the rejected key in the error body: it must still not be shown.
        return error(401, f"Incorrect API key provided: {rec.api_key}") if rec.api_key == KEY_A else answer(rec)

    traces = tmp_path / "traces"
    caplog.set_level(logging.INFO)
    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset, workers=2, traces=traces))
        used = [r.api_key for r in server.chat_requests()]
    # Dropped after its first 401; with two workers a second call may already be on its way.
    assert 1 <= used.count(KEY_A) <= 2
    assert used[0] == KEY_A or used[1] == KEY_A
    assert used.count(KEY_B) == 3
    assert all(r.passed and r.error is None for r in outcome.records)
    assert [a["key_index"] for r in outcome.records for a in r.attempts] == [1, 1, 1]

    drops = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(drops) == 1 and drops[0].levelno == logging.WARNING
    assert mask(KEY_A) in drops[0].getMessage() and "#0" in drops[0].getMessage()

    outputs = [outcome.results_path, outcome.stream_path, *sorted(traces.glob("*.json"))]
    assert len(outputs) == 5
    for path in outputs:
        content = path.read_text(encoding="utf-8")
        for key in (KEY_A, KEY_B):
            assert key not in content, f"{path} holds an API key"
    assert results_of(outcome.results_path)["config"]["preset"]["key_env"] == KEYS_ENV  # the name, not the value
    [drop] = results_of(outcome.results_path)["summary"]["dropped_keys"]  # the summary says so too
    assert drop["index"] == 0 and drop["key"] == mask(KEY_A) and "HTTP 401" in drop["reason"]
    for key in (KEY_A, KEY_B):
        assert key not in caplog.text


@pytest.mark.e2e
def test_every_key_rejected_stops_the_run_at_once_naming_the_cause(
    monkeypatch: pytest.MonkeyPatch, tiny_dataset: Path, make_config: Callable[..., RunConfig]
) -> None:
    """No task can succeed once every key is gone: the run stops (it used to retry each task and end 'complete')."""
    monkeypatch.setenv(KEYS_ENV, KEY_A)
    with ScriptedServer(lambda rec: error(401, f"Incorrect API key provided: {rec.api_key}")) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
        assert len(server.chat_requests()) == 1  # no call is made with a dropped key
    assert outcome.status == "aborted" and outcome.problem and "every API key was rejected" in outcome.problem
    [record] = outcome.records  # the other tasks were never started: they run on --resume
    assert record.error and "rejected" in record.error and record.error_kind == "auth" and not record.passed
    assert mask(KEY_A) in record.error
    assert results_of(outcome.results_path)["status"] == "aborted"
    for path in (outcome.results_path, outcome.stream_path):
        assert KEY_A not in path.read_text(encoding="utf-8")
    assert KEY_A not in outcome.problem


@pytest.mark.e2e
def test_request_timeout_is_retried_then_recorded_as_an_error(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY_A)
    slow = canonical(tiny_tasks)

    def handler(rec: Recorded) -> Response:
        response = slow(rec)
        response.delay_s = 0.8  # longer than the request timeout below
        return response

    with ScriptedServer(handler) as server:
        outcome = run_eval(
            make_config(server, tiny_dataset, task_ids=("Python/2",), retry_attempts=2, request_timeout_s=0.3)
        )
        assert len(server.chat_requests()) == 2
        time.sleep(0.9)  # let the abandoned replies finish inside the test (their broken pipes are noise)
    [record] = outcome.records
    assert record.error is not None and "Timeout" in record.error and "2 attempt" in record.error
    assert not record.passed and record.stop_reason == "error"
