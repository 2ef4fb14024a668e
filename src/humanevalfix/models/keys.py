"""A pool of API keys (and servers) shared by concurrent workers: round-robin, 429 cool-down, 401/403 drop.

Several `--base-url`s (one run spread over several vLLM/TGI/llama.cpp servers) are pooled the same
way: each slot is one (server, key) pair, so a server that refuses connections cools down and an
endpoint that rejects its key is dropped, exactly like a key.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from humanevalfix import redaction
from humanevalfix.errors import ModelCallError

log = logging.getLogger(__name__)


def mask(key: str) -> str:
    """The only way a key is ever shown: its last 4 characters."""
    return "…" + key[-4:] if len(key) > 4 else "…"


def split_keys(value: str | None) -> list[str]:
    return [k.strip() for k in (value or "").split(",") if k.strip()]


def header_problem(key: str) -> str | None:
    """Why `key` cannot go in an HTTP Authorization header, or None. httpx would refuse it at the
    first request with an error that may quote the header, or a library log line may print it."""
    for char in key:
        if char in "\r\n":
            return "a line break"
        if char.isspace():
            return "a space"
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return "a control character"
        if ord(char) > 0x7E:
            return "a non-ASCII character"
    return None


def shown_mask(key: str) -> str:
    """mask(), with whatever it shows made printable (the last 4 characters may be the bad ones)."""
    tail = key[-4:] if len(key) > 4 else ""
    return "…" + "".join(c if 0x20 < ord(c) < 0x7F else "?" for c in tail)


def split_urls(value: str | None) -> list[str | None]:
    """`--base-url a,b`: the servers of one run ([None]: the SDK's default endpoint)."""
    urls = [u.strip() for u in (value or "").split(",") if u.strip()]
    return list(urls) if urls else [None]


@dataclass(frozen=True)
class Lease:
    index: int  # the slot (key position, times the server's when there are several); recorded instead of the key
    key: str
    base_url: str | None = None


class KeyPool:
    def __init__(
        self,
        keys: list[str],
        clock: Callable[[], float] = time.monotonic,
        urls: list[str | None] | None = None,
        secret: bool = True,  # False for the placeholder a keyless server gets: no secret to redact
    ) -> None:
        servers = urls or [None]
        # Servers vary fastest, so consecutive calls go to different servers first.
        slots = [(k, u) for k in keys for u in servers]
        self._keys = [k for k, _ in slots]
        if secret:
            redaction.register(keys)  # from now on no output path can show a fragment of them
        self._urls = [u for _, u in slots]
        self._clock = clock
        self._cool_until = [0.0] * len(slots)
        self._dropped = [False] * len(slots)
        self._why: dict[int, str] = {}  # dropped slots: the reason, redacted
        self._next = 0
        self._cond = threading.Condition()

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def usable(self) -> int:
        with self._cond:
            return self._dropped.count(False)

    def acquire(self, max_wait_s: float = 600.0) -> Lease:
        """The next key round-robin; waits while every live key is cooling down."""
        give_up = self._clock() + max_wait_s
        with self._cond:
            while True:
                live = [i for i in range(len(self._keys)) if not self._dropped[i]]
                if not live:
                    raise ModelCallError("every API key was rejected (401/403)")
                now = self._clock()
                for step in range(len(self._keys)):
                    i = (self._next + step) % len(self._keys)
                    if not self._dropped[i] and self._cool_until[i] <= now:
                        self._next = (i + 1) % len(self._keys)
                        return Lease(i, self._keys[i], self._urls[i])
                wake = min(self._cool_until[i] for i in live)
                if wake > give_up:
                    raise ModelCallError("every API key is rate-limited for longer than the wait allows")
                self._cond.wait(timeout=max(0.01, wake - now))

    def redact(self, text: str) -> str:
        """`text` with every key fragment masked: an error body may echo (part of) the key it rejected."""
        return redaction.redact(text)

    def cool_down(self, index: int, seconds: float) -> None:
        with self._cond:
            self._cool_until[index] = max(self._cool_until[index], self._clock() + seconds)
            self._cond.notify_all()

    def servers(self) -> list[str | None]:
        """The pool's distinct servers (one None: the SDK's default endpoint)."""
        return list(dict.fromkeys(self._urls))

    def cool_down_server(self, url: str | None, seconds: float) -> None:
        """Every slot of one server: it stalls whatever key is used."""
        for index, slot_url in enumerate(self._urls):
            if slot_url == url:
                self.cool_down(index, seconds)

    def drop(self, index: int, reason: str) -> None:
        with self._cond:
            if self._dropped[index]:
                return
            self._dropped[index] = True
            self._why[index] = self.redact(reason)
            self._cond.notify_all()
        log.warning("%s dropped for this run: %s", self.name(index), self.redact(reason))

    def dropped(self) -> list[dict[str, str | int | None]]:
        """The slots dropped so far, for the summary: the key masked, never the key."""
        with self._cond:
            return [
                {"index": i, "key": mask(self._keys[i]), "server": self.server(i), "reason": why}
                for i, why in sorted(self._why.items())
            ]

    def server(self, index: int, always: bool = False) -> str | None:
        """The slot's server, when the pool spreads over several (then an error names it) or `always`."""
        return self._urls[index] if always or len(set(self._urls)) > 1 else None

    def name(self, index: int) -> str:
        """How a slot is shown: the key masked, and the server when the pool has several."""
        where = f" at {self._urls[index]}" if len(set(self._urls)) > 1 else ""
        return f"API key #{index} ({mask(self._keys[index])}){where}"
