"""The judge/candidate codec's fast path for flat sequences gives exactly what the item-by-item
path gives: the same trees, the same values back (exact types), the same limits."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from humanevalfix.sandbox.child import plaindata

VALUES: list[Any] = [
    [],
    (),
    [1, 2, 3],
    list(range(-5, 5000)),
    [1 << 60, 2, -(1 << 70)],  # past SMALL_INT: these travel as hex
    [True, 1, False, 0],  # bool beside int: bool must come back as bool
    [None, "a", True, ""],
    [1.5, float("nan"), float("inf"), -0.0],
    ("x", "y", 3),
    [[1, 2], [3, [4, 5]], (6,)],
    {1: [2, 3], "k": ("v", None)},
    {frozenset({1, 2}), 3},
    [b"\x00", 1j, range(3)],
    iter([1, 2, 3]),
]


def _slow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plaindata, "_flat", lambda v, budget: False)
    monkeypatch.setattr(plaindata, "_SEQUENCES", frozenset())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _fresh(value: Any) -> Any:
    return iter([1, 2, 3]) if type(value).__name__ == "list_iterator" else value


@pytest.mark.parametrize("index", range(len(VALUES)))
def test_the_fast_path_makes_the_trees_and_values_of_the_item_by_item_path(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_tree = plaindata.to_tree(_fresh(VALUES[index]))
    fast_back = plaindata.from_tree(fast_tree)
    with monkeypatch.context() as m:
        _slow(m)
        slow_tree = plaindata.to_tree(_fresh(VALUES[index]))
        slow_back = plaindata.from_tree(slow_tree)
    assert repr(fast_tree) == repr(slow_tree)
    if type(fast_back).__name__ == "list_iterator":
        fast_back, slow_back = list(fast_back), list(slow_back)
    assert _same(fast_back, slow_back)


def test_bools_and_ints_keep_their_types_through_a_round_trip() -> None:
    back = plaindata.from_tree(plaindata.to_tree([True, 1, 0, False]))
    assert [type(x) for x in back] == [bool, int, int, bool]


@pytest.mark.parametrize("depth", [plaindata.MAX_DEPTH - 1, plaindata.MAX_DEPTH, plaindata.MAX_DEPTH + 1])
def test_the_depth_limit_is_the_same_on_both_paths(depth: int, monkeypatch: pytest.MonkeyPatch) -> None:
    def nested() -> Any:
        value: Any = [1, 2]
        for _ in range(depth):
            value = [value]
        return value

    def outcome() -> str:
        try:
            tree = plaindata.to_tree(nested())
        except plaindata.NotPlain as exc:
            return f"NotPlain: {exc}"
        return repr(plaindata.from_tree(tree))

    fast = outcome()
    with monkeypatch.context() as m:
        _slow(m)
        assert outcome() == fast


def test_a_flat_list_past_the_item_budget_is_refused_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    big = [0] * plaindata.MAX_ITEMS
    with pytest.raises(plaindata.NotPlain, match="more than"):
        plaindata.to_tree(big)
    with pytest.raises(plaindata.ProtocolError):
        plaindata.from_tree(["l", *big])
    with monkeypatch.context() as m:
        _slow(m)
        with pytest.raises(plaindata.NotPlain, match="more than"):
            plaindata.to_tree(big)


# --- polling for a frame before sleeping on it (SPIN_S) -------------------------------------------


def _pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def test_a_frame_there_when_the_receiver_polls_is_read_and_the_socket_keeps_its_timeout() -> None:
    a, b = _pair()
    with a, b:
        b.settimeout(5.0)
        plaindata.send(a, {"value": [1, 2]})
        assert plaindata.receive(b, spin_s=0.05) == ({"value": [1, 2]}, [])
        assert b.gettimeout() == 5.0


def test_a_frame_that_comes_after_the_poll_is_still_read_in_the_blocking_mode_it_had() -> None:
    a, b = _pair()
    with a, b:
        sender = threading.Timer(0.05, plaindata.send, (a, {"late": True}))
        sender.start()
        started = time.perf_counter()
        assert plaindata.receive(b, spin_s=0.001) == ({"late": True}, [])
        assert time.perf_counter() - started >= 0.04  # it slept on the socket after the poll
        assert b.gettimeout() is None
        sender.join()


def test_a_peer_gone_while_the_receiver_polls_is_eof_and_a_timeout_still_times_out() -> None:
    a, b = _pair()
    with b:
        a.close()
        with pytest.raises(EOFError):
            plaindata.receive(b, spin_s=0.05)
    c, d = _pair()
    with c, d:
        d.settimeout(0.05)
        with pytest.raises(TimeoutError):
            plaindata.receive(d, spin_s=0.001)


@pytest.mark.e2e
def test_polling_is_off_in_a_process_that_may_use_one_cpu_only() -> None:
    """Decided at import from the process's CPUs: with one, a poll would only keep the other side
    of the call off the CPU."""

    def spin_s(cpus: set[int] | None) -> float:
        done = subprocess.run(
            [sys.executable, "-c", "from humanevalfix.sandbox.child import plaindata; print(plaindata.SPIN_S)"],
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=None if cpus is None else (lambda: os.sched_setaffinity(0, cpus)),
        )
        return float(done.stdout)

    mine = os.sched_getaffinity(0)
    assert spin_s({min(mine)}) == 0.0
    if len(mine) > 1:
        assert spin_s(None) > 0.0
