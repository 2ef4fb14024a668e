"""What a run concludes from a refused request (models/client.py `kind_of`, evaluation/health.py):
a wrong model, parameter or route on the first calls stops the run; later, it stays one task's error.
The CLI's side, against a loopback server, is in tests/test_run_faults.py."""

from __future__ import annotations

import pytest

from humanevalfix.evaluation.health import EndpointHealth
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.models.failures import kind_of

from .conftest import task_record


class HTTPError(Exception):
    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(text)
        self.status_code = status_code


@pytest.mark.parametrize(
    ("status", "text", "kind"),
    [
        (404, "Not Found", "request"),
        (400, "Error code: 400 - {'code': 'model_not_found'}", "request"),
        (400, "Unsupported parameter: 'max_tokens' is not supported with this model.", "request"),
        (400, "Unsupported value: 'temperature' does not support 0.0 with this model.", "request"),
        (400, "This model's maximum context length is 8192 tokens", "context_exceeded"),
        (400, "messages[1]: malformed", "other"),
        (401, "Incorrect API key provided", "auth"),
        (500, "upstream crashed", "other"),
    ],
)
def test_the_kind_of_a_refusal(status: int, text: str, kind: str) -> None:
    assert kind_of(HTTPError(status, text)) == kind


def record(task_id: str, error_kind: str | None, iterations: int) -> TaskRecord:
    return task_record(
        task_id,
        iterations=iterations,
        stop_reason="error" if error_kind else "passed",
        error="HTTP 404: The model `nosuch` does not exist." if error_kind else None,
        error_kind=error_kind,
    )


def test_a_refused_request_stops_the_run_only_before_any_reply() -> None:
    first = EndpointHealth()
    reason = first.observe(record("Python/0", "request", 0))
    assert reason == "the server refused the request (Python/0: HTTP 404: The model `nosuch` does not exist.)"
    later = EndpointHealth()
    assert later.observe(record("Python/0", None, 2)) is None
    assert later.observe(record("Python/1", "request", 0)) is None  # that task's error; the run goes on
    assert later.observe(record("Python/2", "request", 0)) is None
