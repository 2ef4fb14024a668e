"""The model client: one chat call over the OpenAI-compatible API, with key rotation and retries.

The `openai` SDK serves OpenAI, the Hugging Face router and any compatible server (vLLM, TGI,
llama.cpp, Ollama); the `together` SDK serves Together. SDK-level retries are off: `tenacity`
retries here, so that a 429 can move to another key of the pool.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from humanevalfix.errors import ModelCallError
from humanevalfix.models.catalog import PROVIDERS
from humanevalfix.models.failures import (
    ReplyTimeout,
    describe,
    is_timeout_or_connection,
    kind_of,
    retry_after_s,
    status_of,
)
from humanevalfix.models.keys import KeyPool, Lease
from humanevalfix.models.parameters import (
    ParameterRules,
    adapted,
    extra_body,
    parameters,
    rules_for,
    with_switch,
)
from humanevalfix.models.reasoning import reasoning_field, split_reply
from humanevalfix.safetext import encodable, repaired

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolCall:
    """A native tool call as the API returned it (arguments still a JSON string)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatRequest:
    messages: list[dict[str, Any]]
    temperature: float
    max_tokens: int
    tools: list[dict[str, Any]] | None = None
    task_id: str = ""  # for logs and the oracle; never sent to the API
    seed: int | None = None  # sent as `seed` when set


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0  # the reasoning's tokens included, as the APIs count them
    reasoning_tokens: int = 0  # completion_tokens_details.reasoning_tokens, where the server says


@dataclass(frozen=True)
class ChatReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = Usage()
    key_index: int | None = None  # which key of the pool served the call (never the key)
    latency_s: float = 0.0
    http_attempts: int = 1
    finish_reason: str | None = None
    # The model's own faults in the reply, made harmless here and judged by the agent: the size of
    # a reply or tool-call argument above RetryPolicy.max_reply_chars (then not kept), and whether
    # it held text with no UTF-8 form (lone surrogates, kept as U+FFFD).
    oversize: int = 0
    unencodable: bool = False
    # The model's reasoning (models.reasoning), for the trace only: never code, never sent back.
    # At most max_reply_chars of it is kept. `reasoning_unclosed`: the reply ended inside it (cut
    # at its token limit), so it has no answer at all.
    reasoning: str = ""
    reasoning_unclosed: bool = False


class ChatModel(Protocol):
    def chat(self, request: ChatRequest) -> ChatReply: ...


# The defaults of RetryPolicy, which a run's configuration and the CLI's options (and their help) read.
DEFAULT_RETRY_ATTEMPTS = 6  # attempts per API call on 429/5xx/timeouts (--retries)
DEFAULT_RETRY_INITIAL_S = 1.0  # the base of the waits between attempts (exponential, up to max_s)
DEFAULT_REQUEST_TIMEOUT_S = 120.0  # per HTTP request: the whole reply, not only connecting or each read
# A reasoning model (models.parameters) thinks for minutes before its first answer token: a slow but
# live reply, which the standard timeout (and the stalls that follow it) would give up on.
REASONING_REQUEST_TIMEOUT_S = 900.0
DEFAULT_STALLS_IN_A_ROW = 3  # requests of one server that hit the request timeout in a row before the run stops
DEFAULT_MAX_REPLY_CHARS = 256 * 1024  # a longer reply or tool-call argument is the model's "too_large"


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = DEFAULT_RETRY_ATTEMPTS
    initial_s: float = DEFAULT_RETRY_INITIAL_S
    max_s: float = 30.0
    timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    stalls_in_a_row: int = DEFAULT_STALLS_IN_A_ROW
    max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS


def request_timeout_for(model: str, given: float | None) -> float:
    """--request-timeout if given, else the default for the model: longer for a reasoning one."""
    if given is not None:
        return given
    return REASONING_REQUEST_TIMEOUT_S if rules_for(model).completion_tokens else DEFAULT_REQUEST_TIMEOUT_S


class _KeyRejected(Exception):
    """401/403 on one key: dropped, and the call is tried again with another."""


class _Adapted(Exception):
    """A 400 refusing a parameter by name: the rules were adapted (models.parameters), try again."""


class _MalformedReply(Exception):
    """A 200 whose body is no chat completion (no choices, a choice without a message, an error
    object, HTML): a server fault like a 503, so retried, never an exception out of the run."""


# What the SDKs raise for a body they cannot read (truncated JSON, a schema they reject).
_UNREADABLE = {"JSONDecodeError", "APIResponseValidationError"}


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (_KeyRejected, _MalformedReply, _Adapted)):
        return True
    if {cls.__name__ for cls in type(exc).__mro__} & _UNREADABLE:
        return True
    status = status_of(exc)
    if status is not None:
        return status == 429 or status >= 500
    return is_timeout_or_connection(exc)


DEAD_SERVER_COOL_DOWN_S = 30.0  # one of several servers refusing connections: the others serve meanwhile


class OpenAIChatModel:
    """Any OpenAI-compatible endpoint; Together through its own SDK."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        base_url: str | None,
        keys: KeyPool,
        retry: RetryPolicy = RetryPolicy(),
        reasoning_effort: str | None = None,
        thinking: str | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.base_url = base_url
        self.keys = keys
        self.retry = retry
        # Sent only when set (models.parameters): --reasoning-effort, and --thinking's switch.
        self.reasoning_effort = reasoning_effort
        self.thinking = thinking
        self._clients: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._stalls: dict[str | None, int] = {}  # per server: requests in a row that ran out of time
        self.rules = rules_for(model)  # the parameters it takes; adapted once to a refusal by name

    def _client(self, lease: Lease) -> Any:
        with self._lock:
            client = self._clients.get(lease.index)
            if client is None:
                if _sdk(self.provider) == "together":
                    import together

                    client = together.Together(
                        api_key=lease.key,
                        base_url=lease.base_url or self.base_url,
                        max_retries=0,
                        timeout=self.retry.timeout_s,
                    )
                else:
                    import openai

                    client = openai.OpenAI(
                        api_key=lease.key,
                        base_url=lease.base_url or self.base_url,
                        max_retries=0,
                        timeout=self.retry.timeout_s,
                    )
                self._clients[lease.index] = client
            return client

    def _once(self, request: ChatRequest, served: list[int]) -> Any:
        lease = self.keys.acquire()
        served.append(lease.index)
        rules = self.rules
        kwargs: dict[str, Any] = {
            "model": self.model,
            # --thinking's switch is added here, to the request only: the conversation stays as it is.
            "messages": with_switch(request.messages, self.thinking),
            **parameters(rules, request.temperature, request.max_tokens),
        }
        if request.tools:
            kwargs["tools"] = request.tools
        if request.seed is not None:
            kwargs["seed"] = request.seed
        extras = extra_body(rules, self.reasoning_effort, self.thinking)
        try:
            create = self._client(lease).chat.completions.create
            if extras:
                _add_extras(create, kwargs, extras)
            response = _checked(self._with_deadline(create, kwargs))
        except Exception as exc:
            if kind_of(exc) == "timeout":
                self._stalled(lease)
            status = status_of(exc)
            if status in (400, 422) and self._adapt(rules, _refusal(exc)):
                raise _Adapted(describe(exc)) from exc
            if status == 429:
                self.keys.cool_down(lease.index, retry_after_s(exc) or self.retry.initial_s)
            elif status in (401, 403):
                reason = self.keys.redact(describe(exc))  # servers may echo the rejected key
                self.keys.drop(lease.index, reason)
                if self.keys.usable:
                    raise _KeyRejected(reason) from exc
                raise ModelCallError(f"every API key was rejected ({reason})", kind="auth") from exc
            elif kind_of(exc) == "connection" and len(self.keys) > 1:
                self.keys.cool_down(lease.index, DEAD_SERVER_COOL_DOWN_S)
            raise
        with self._lock:
            self._stalls[lease.base_url] = 0
        return response

    def _adapt(self, sent: ParameterRules, refusal: str) -> bool:
        """True when the refusal names a parameter that `sent` can do without: the rules change once
        for the whole run (or already did, in a call that ran beside this one), said in one line."""
        with self._lock:
            if self.rules != sent:
                return True
            rules = adapted(sent, refusal)
            if rules is None:
                return False
            self.rules = rules
        log.warning("%s refused a parameter: sending %s from now on", self.model, rules.describe())
        return True

    def _with_deadline(self, create: Any, kwargs: dict[str, Any]) -> Any:
        """`create(**kwargs)`, or ReplyTimeout once timeout_s has passed without the whole reply.

        The SDK's timeout is per read, so a server trickling bytes (or sending headers and then
        nothing) holds a call forever; the call runs in a daemon thread that is left behind at the
        deadline (the SDK's own read timeout ends it soon after)."""
        box: dict[str, Any] = {}
        done = threading.Event()

        def call() -> None:
            try:
                box["reply"] = create(**kwargs)
            except BaseException as exc:  # handed over to the caller below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=call, name="chat-call", daemon=True).start()
        if not done.wait(self.retry.timeout_s):
            raise ReplyTimeout(f"no complete reply within {self.retry.timeout_s:g} s")
        if "error" in box:
            raise box["error"]
        return box["reply"]

    def _stalled(self, lease: Lease) -> None:
        """A request ran out of time: that server cools down when others can serve; once every
        server has stalled `stalls_in_a_row` times in a row, the run stops like an unreachable one."""
        servers = self.keys.servers()
        with self._lock:
            self._stalls[lease.base_url] = self._stalls.get(lease.base_url, 0) + 1
            dead = all(self._stalls.get(url, 0) >= self.retry.stalls_in_a_row for url in servers)
            count = self._stalls[lease.base_url]
        if len(servers) > 1:
            self.keys.cool_down_server(lease.base_url, DEAD_SERVER_COOL_DOWN_S)
        if dead:
            where = lease.base_url or self.base_url or "the provider default endpoint"
            raise ModelCallError(
                f"the server stalled: no complete reply within {self.retry.timeout_s:g} s, {count} times in a row "
                f"({where})",
                kind="stalled",
            )

    def chat(self, request: ChatRequest) -> ChatReply:
        served: list[int] = []
        start = time.monotonic()

        def log_retry(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.info(
                "%s: retrying after %s (attempt %d)",
                request.task_id,
                self.keys.redact(describe(exc)) if exc else "?",
                state.attempt_number,
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.retry.attempts),
            wait=wait_exponential_jitter(
                multiplier=self.retry.initial_s, max=self.retry.max_s, jitter=self.retry.initial_s
            ),
            retry=retry_if_exception(is_transient),
            before_sleep=log_retry,
            reraise=True,
        )
        try:
            response = retrying(self._once, request, served)
        except ModelCallError:
            raise
        except Exception as exc:
            kind = kind_of(exc)
            # A connection failure names the server: the usual cause is a wrong or dead --base-url.
            server = self.keys.server(served[-1], always=kind == "connection") if served else None
            where = (
                f" ({server or self.base_url or 'the provider default endpoint'})"
                if server or kind == "connection"
                else ""
            )
            raise ModelCallError(
                f"{self.keys.redact(describe(exc))}{where} after {len(served)} attempt(s)", kind=kind
            ) from exc
        choice = response.choices[0]
        message = choice.message  # both there: _checked said so
        calls = [
            ToolCall(id=tc.id or f"call_{i}", name=tc.function.name or "", arguments=tc.function.arguments or "")
            for i, tc in enumerate(message.tool_calls or [])
            if getattr(tc, "function", None) is not None
        ]
        # Code is taken only from the answer after the reasoning (models.reasoning); the reasoning is
        # kept for the trace, never sent back.
        split = split_reply(message.content or "", reasoning_field(message))
        content, calls, oversize, unencodable = bounded(split.answer, calls, self.retry.max_reply_chars)
        usage = getattr(response, "usage", None)
        return ChatReply(
            content=content,
            tool_calls=calls,
            oversize=oversize,
            unencodable=unencodable,
            usage=usage_of(usage),
            key_index=served[-1] if served else None,
            latency_s=round(time.monotonic() - start, 3),
            http_attempts=len(served),
            finish_reason=getattr(choice, "finish_reason", None),
            reasoning=repaired(split.reasoning[: self.retry.max_reply_chars]),
            reasoning_unclosed=split.unclosed,
        )


def usage_of(usage: Any) -> Usage:
    """The reply's token counts; a count that is not a non-negative integer reads as 0."""

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    details = getattr(usage, "completion_tokens_details", None)
    return Usage(
        count(getattr(usage, "prompt_tokens", 0)),
        count(getattr(usage, "completion_tokens", 0)),
        count(getattr(details, "reasoning_tokens", 0)),
    )


def bounded(content: str, calls: list[ToolCall], cap: int) -> tuple[str, list[ToolCall], int, bool]:
    """The reply as the agent may keep it: a text or argument above `cap` characters is dropped
    (its size returned: the model's "too_large"), and text with no UTF-8 form repaired (flagged),
    so that neither the next request nor any output file can fail on it."""
    oversize = max([len(content), *(len(c.arguments) for c in calls)])
    if oversize > cap:
        content = "" if len(content) > cap else content
        calls = [ToolCall(c.id, c.name, "" if len(c.arguments) > cap else c.arguments) for c in calls]
    else:
        oversize = 0
    # The ids too: each is sent back with the tool's answer.
    unencodable = not encodable(content) or not all(encodable(c.arguments + c.id + c.name) for c in calls)
    if unencodable:
        content = repaired(content)
        calls = [ToolCall(repaired(c.id), repaired(c.name), repaired(c.arguments)) for c in calls]
    return content, calls, oversize, unencodable


def _checked(response: Any) -> Any:
    """The response, once it holds a first choice with a message; else _MalformedReply."""
    if isinstance(response, (str, bytes)):
        raise _MalformedReply(f"the server answered with text, not a chat completion: {str(response)[:120]!r}")
    choices = getattr(response, "choices", None)
    if not choices:
        error = getattr(response, "error", None) or (getattr(response, "model_extra", None) or {}).get("error")
        raise _MalformedReply(f"a reply without choices{f' (error: {str(error)[:200]})' if error else ''}")
    if getattr(choices[0], "message", None) is None:
        raise _MalformedReply("a reply whose first choice has no message")
    return response


def _refusal(exc: BaseException) -> str:
    """The error's text and its body: the SDK's text holds only `error.message`, and a server that
    validates with pydantic names the field in `detail` instead (HTTP 422)."""
    body = getattr(exc, "body", None)
    return f"{exc} {body}" if body is not None else str(exc)


def _add_extras(create: Any, kwargs: dict[str, Any], extras: dict[str, Any]) -> None:
    """Fields the SDK has no parameter for, in the body: through `extra_body` where `create` takes
    it (openai's SDK, Stainless-made ones), else as keyword arguments (the together SDK before 2.0
    puts any unknown one in the body)."""
    try:
        takes_extra_body = "extra_body" in inspect.signature(create).parameters
    except (TypeError, ValueError):  # no signature to read: the openai SDK's way
        takes_extra_body = True
    if takes_extra_body:
        kwargs["extra_body"] = {**(kwargs.get("extra_body") or {}), **extras}
    else:
        kwargs.update(extras)


def _sdk(provider: str) -> str | None:
    """The SDK the provider is called through (models/catalog.py); a name not registered: openai's."""
    spec = PROVIDERS.get(provider)
    return spec.sdk if spec is not None else "openai"
