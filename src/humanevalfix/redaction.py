"""Keeping API keys out of everything the process writes: console, logs, results, streams, traces.

Providers echo part of a rejected key in their error bodies (`sk-proj-abc…wxyz`, or all of it but
one character), and third-party libraries log request details under `--debug`. So redaction works
on fragments, not whole keys: any run of `FRAGMENT` or more characters of a configured key, and any
masked form (`abc****wxyz`) whose visible ends are a key's ends. Text is redacted *before* it is cut
to a length, so a cut can never leave an unmatched tail of a key.

Keys are registered once, when the key pool is built; every output path asks `redact` here.
"""

from __future__ import annotations

import re
import threading
from typing import Any

FRAGMENT = 8  # shorter runs are too common in prose to be a secret, and would mangle the text
REDACTED = "…(redacted)"  # no brackets: Rich would read "[redacted]" as a tag and drop it
# Characters providers put between a key's visible ends: 'sk-ab****cdef', 'sk-ab…cdef', 'sk-ab...cdef'.
_MASK_RUN = re.compile(r"[*•]+|…|\.{3}")
_KEY_CHARS = re.compile(r"[A-Za-z0-9_\-]*")
_KEY_CHARS_BEFORE = re.compile(r"[A-Za-z0-9_\-]*$")
_ENDS = 3  # a masked form counts when its visible ends show at least this much of a key

_BLOCK = FRAGMENT // 2  # any run of FRAGMENT key characters holds one whole block at a multiple of this

_lock = threading.Lock()
_keys: tuple[str, ...] = ()


def register(keys: list[str] | tuple[str, ...]) -> None:
    """Keys whose fragments must never leave the process (short placeholder keys are no secret)."""
    global _keys
    with _lock:
        _keys = tuple(dict.fromkeys([*_keys, *(k for k in keys if len(k) >= FRAGMENT)]))


def forget_all() -> None:
    """For tests: a fresh process has no keys."""
    global _keys
    with _lock:
        _keys = ()


def redact(text: str) -> str:
    """`text` with every key fragment and masked key form replaced by REDACTED."""
    keys = _keys
    if not keys or not text:
        return text
    text = _masked_forms(text, keys)
    spans = sorted(span for key in keys for span in _fragments(text, key))
    if not spans:
        return text
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces, last = [], 0
    for start, end in merged:
        # A whole key is shown as the pool names it (`…abcd`, models.keys.mask), so a warning can
        # say which key; a fragment shows nothing.
        whole = text[start:end] in keys
        pieces += [text[last:start], "…" + text[end - 4 : end] if whole else REDACTED]
        last = end
    return "".join(pieces) + text[last:]


def _fragments(text: str, key: str) -> list[tuple[int, int]]:
    """Spans of `text` that are runs of FRAGMENT or more characters of `key`.

    Searching for the key's aligned blocks with str.find (C speed) and growing each hit both ways
    keeps a megabyte reply cheap; a window-by-window scan took seconds."""
    found: list[tuple[int, int]] = []
    for offset in range(0, len(key) - _BLOCK + 1, _BLOCK):
        block = key[offset : offset + _BLOCK]
        at = text.find(block)
        while at != -1:
            left, right = at, at + _BLOCK
            k_left, k_right = offset, offset + _BLOCK
            while left > 0 and k_left > 0 and text[left - 1] == key[k_left - 1]:
                left, k_left = left - 1, k_left - 1
            while right < len(text) and k_right < len(key) and text[right] == key[k_right]:
                right, k_right = right + 1, k_right + 1
            if right - left >= FRAGMENT:
                found.append((left, right))
            at = text.find(block, at + 1)
    return found


def _masked_forms(text: str, keys: tuple[str, ...]) -> str:
    """Masked keys (`sk-ab****wxyz`) replaced; found from their mask characters outwards, since a
    pattern that starts with the head backtracks quadratically over a long run of letters."""
    pieces, last = [], 0
    for mark in _MASK_RUN.finditer(text):
        if mark.start() < last:
            continue
        head = _KEY_CHARS_BEFORE.search(text, max(last, mark.start() - 256), mark.start())
        tail = _KEY_CHARS.match(text, mark.end(), mark.end() + 256)
        start, end = head.start() if head else mark.start(), tail.end() if tail else mark.end()
        if _is_masked_key(text[start : mark.start()], text[mark.end() : end], keys):
            pieces += [text[last:start], REDACTED]
            last = end
    return "".join(pieces) + text[last:] if pieces else text


def _is_masked_key(head: str, tail: str, keys: tuple[str, ...]) -> bool:
    # A visible start is required: our own mask (`…abcd`, the last 4 only) names a key without
    # giving it away, and must stay readable in warnings and the summary.
    return any(head and key.startswith(head) and key.endswith(tail) and len(head) + len(tail) >= _ENDS for key in keys)


def redact_data(value: Any) -> Any:
    """A JSON-like value with every string value in it redacted. Dict keys are left alone: they are
    this tool's field names, and a key that happens to contain one ("sk-…-protocol-…") must not
    rename a field of the results."""
    if not _keys:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value
