"""What a failed API call says: its HTTP status, its kind for a run to act on (a wrong request, a
rejected key, a context overflow, a dead server), and a one-line description with keys redacted."""

from __future__ import annotations

from humanevalfix.models.parameters import REFUSED
from humanevalfix.redaction import redact


def status_of(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def retry_after_s(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def is_timeout_or_connection(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"APITimeoutError", "APIConnectionError", "TimeoutException", "ConnectError", "ReplyTimeout"})


class ReplyTimeout(Exception):
    """No complete reply within the request's deadline: a server that sent headers and then
    nothing, or trickles bytes, is never waiting on a per-read timeout that each byte resets."""


# How a server says a prompt is longer than its context (OpenAI's code, vLLM, llama.cpp, TGI).
_CONTEXT_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "exceeds the context",
    "context window",
    "n_ctx",
)
# How a server says the request itself is wrong, whatever the prompt: the model, a parameter or the
# route (OpenAI's error codes, vLLM's and Ollama's words). A 404 always is.
_REQUEST_WORDS = ("model_not_found", "does not exist", "not found", "unknown model", "invalid model", *REFUSED)


def kind_of(exc: BaseException) -> str:
    """For ModelCallError.kind: what a run can conclude from the last failure."""
    status = status_of(exc)
    text = str(exc).lower()
    if status in (400, 413, 422) and any(word in text for word in _CONTEXT_WORDS):
        return "context_exceeded"
    if status in (401, 403):
        return "auth"
    if status == 404 or (status == 400 and any(word in text for word in _REQUEST_WORDS)):
        return "request"
    if status is None and is_timeout_or_connection(exc):
        return "timeout" if "timeout" in type(exc).__name__.lower() else "connection"
    return "other"


def describe(exc: BaseException) -> str:
    status = status_of(exc)
    # Redacted before it is cut: a cut through an echoed key would leave a tail no pattern matches.
    text = redact(str(exc)).replace("\n", " ")[:300]
    return f"HTTP {status}: {text}" if status else f"{type(exc).__name__}: {text}"


def is_tools_rejected(exc: BaseException) -> bool:
    """A 400 from a server that does not take `tools` (or `tool_choice`)."""
    cause = exc.__cause__ or exc
    return status_of(cause) in (400, 422) and "tool" in str(cause).lower()
