"""A scripted OpenAI-compatible chat server on loopback, for tests and benchmarks.

Real HTTP: the real `openai` client talks to it. Each POST /v1/chat/completions is answered
by a handler (or the next entry of a list of responses), and every request is recorded,
Authorization header included, so tests can check which key served each call.

    from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

    with ScriptedServer([tool_call("def f(x):\n    return x\n")]) as server:
        ...  # point an OpenAI-compatible client (or --base-url) at server.base_url

Stdlib only, so that a test of your own agent needs nothing beyond this package.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast


@dataclass
class Response:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None  # sent as it is instead of `body` (HTML, truncated JSON: a broken server)
    content_type: str = "application/json"
    stall_s: float = 0.0  # send the status and headers, then nothing for this long (a stalled server)
    trickle_s: float = 0.0  # send the body one byte at a time, this long apart (no read ever times out)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def api_key(self) -> str:
        return self.headers.get("authorization", "").removeprefix("Bearer ").strip()


_ids = itertools.count(1)


def completion(
    message: dict[str, Any], finish_reason: str = "stop", prompt_tokens: int = 100, completion_tokens: int = 20
) -> Response:
    return Response(
        200,
        {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def tool_call(code: str, call_id: str | None = None, arguments: str | None = None, name: str = "run_code") -> Response:
    """A native tool call; `arguments` overrides the JSON (for malformed-argument tests)."""
    args = arguments if arguments is not None else json.dumps({"code": code})
    return completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id or f"call_{next(_ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            ],
        },
        finish_reason="tool_calls",
    )


def text(content: str) -> Response:
    return completion({"role": "assistant", "content": content})


def fenced(code: str, prose: str = "Here is the fix:") -> Response:
    return text(f"{prose}\n```python\n{code.rstrip()}\n```\n")


def error(status: int, message: str = "scripted error", headers: dict[str, str] | None = None) -> Response:
    return Response(status, {"error": {"message": message, "type": "scripted", "code": status}}, headers or {})


Handler = Callable[[Recorded], Response]


class _QuietServer(ThreadingHTTPServer):
    """A client that gives up on a slow reply (a timeout test, a stopped run) closes the socket;
    the write then fails in the server's thread. That is the client's choice, not a server fault:
    printing its traceback to stderr made tests that check stderr fail under load."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class ScriptedServer:
    """Start with `with ScriptedServer(handler_or_responses) as server:`; use `server.base_url`."""

    def __init__(
        self,
        script: Handler | Iterable[Response],
        latency_s: float = 0.0,
        model: str = "scripted-model",
        also_lists: tuple[str, ...] = (),  # more models its /models lists after `model` (LoRA adapters)
    ) -> None:
        self.requests: list[Recorded] = []
        self.latency_s = latency_s
        self.model = model
        self.also_lists = also_lists
        self._lock = threading.Lock()
        if callable(script):
            self._handler: Handler = script
        else:
            queue = list(script)

            def from_list(_: Recorded) -> Response:
                with self._lock:
                    if not queue:
                        return error(500, "scripted server: no more responses")
                    return queue.pop(0)

            self._handler = from_list
        self._httpd = _QuietServer(("127.0.0.1", 0), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        # getsockname() of the AF_INET socket bound above: the host is a str, never bytes
        host, port = cast(tuple[str, int], self._httpd.server_address[:2])
        return f"http://{host}:{port}/v1"

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, response: Response) -> None:
                data = response.raw if response.raw is not None else json.dumps(response.body).encode()
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in response.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if response.stall_s:
                    self.wfile.flush()
                    time.sleep(response.stall_s)
                    return  # the body never comes; the connection closes short of Content-Length
                if response.trickle_s:
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        time.sleep(response.trickle_s)
                    return
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        Response(
                            200,
                            {
                                "object": "list",
                                "data": [
                                    {"id": name, "object": "model", "owned_by": "scripted"}
                                    for name in (server.model, *server.also_lists)
                                ],
                            },
                        )
                    )
                else:
                    self._send(error(404, "not found"))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(error(400, "bad json"))
                    return
                rec = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(rec)
                response = server._handler(rec)
                delay = server.latency_s + response.delay_s
                if delay:
                    time.sleep(delay)
                self._send(response)

        return H
