"""The first reply before the rest: a run with several workers sends one request at a time until
the endpoint has answered once.

A wrong model name, a refused parameter or a rejected key is answered the same way to every request.
Eight workers starting at once spent eight calls (and eight errors) to learn it; behind the gate the
run learns it from one, stops (evaluation.health), and the adaptation to a refused parameter
(models.parameters) is made once, before the other workers send anything. Once a reply has come,
the gate stays open for the rest of the run.
"""

from __future__ import annotations

import threading

from humanevalfix.errors import ModelCallError
from humanevalfix.models.client import ChatModel, ChatReply, ChatRequest

# The failures before any reply on which a run stops (evaluation.health): the calls waiting behind
# such a failure wait for that stop instead of spending a call each on the same answer.
STOPPING_KINDS = ("auth", "connection", "request", "stalled")
SETTLE_S = 10.0  # how long a waiting call gives the run to stop before it tries alone after all


class FirstReplyGate:
    """A ChatModel that lets one call through at a time until one has returned a reply."""

    def __init__(self, model: ChatModel, stop: threading.Event | None = None, settle_s: float = SETTLE_S) -> None:
        self.model = model
        self._stop = stop
        self._settle_s = settle_s
        self._open = threading.Event()
        self._one = threading.Lock()
        self._failed = False  # the last call through the shut gate failed in a way that stops a run

    def chat(self, request: ChatRequest) -> ChatReply:
        if self._open.is_set():
            return self.model.chat(request)
        with self._one:
            if self._open.is_set():  # opened while this call waited
                return self.model.chat(request)
            if self._failed and self._stop is not None and self._stop.wait(self._settle_s):
                raise ModelCallError(
                    "not sent: the run stopped on an earlier request's failure", kind=ModelCallError.NOT_SENT
                )
            try:
                reply = self.model.chat(request)
            except ModelCallError as exc:
                self._failed = exc.kind in STOPPING_KINDS  # still shut: the next caller tries alone
                raise
            self._open.set()
            return reply

    def __getattr__(self, name: str) -> object:
        """The wrapped model's other attributes (its parameter rules, its keys) as they are."""
        if name == "model":  # not set yet (a copy being made): never a loop through this method
            raise AttributeError(name)
        return getattr(self.model, name)
