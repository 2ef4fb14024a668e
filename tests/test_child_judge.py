"""The judge (sandbox/child/judge.py) in-process: its verdicts, and how it treats every kind of
answer from the candidate's side, over a real socket pair with the candidate in a thread.

The in-process counterparts of the e2e/slow tests that run the judge inside a sandbox child
(tests/test_judge_probes.py, tests/test_executor_basic.py, tests/test_failure_messages.py,
tests/test_sandbox_conformance.py): here `execution.execute` runs the test in this process and
its stubs call either the real candidate loop (candidate.serve, in a thread, with its process
control faked: no fork, no rlimits, no signal handlers, no exit) or a scripted peer that sends
the answers a broken or hostile candidate would (a hang-up, bytes that are not a frame, a short
batch, an exit, a refusal, a value that is not plain data, no answer at all).
"""

from __future__ import annotations

import importlib
import json
import signal
import socket
import threading
import time
import types
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from humanevalfix.sandbox.child import candidate, execution, judge, plaindata

from .test_failure_messages import HAS_CLOSE, HAS_CLOSE_TEST

WORKDIR = "/nonexistent-hefix-workdir"  # the candidate's procs.enter is faked: never entered


def _load(name: str) -> ModuleType:
    """runner.load_helper's stand-in: the package's own copy of each helper."""
    return importlib.import_module(f"humanevalfix.sandbox.child.{name}")


class _Exited(BaseException):
    """The candidate called os._exit (in a thread here: it ends the thread, not the process)."""


class _Procs:
    """The candidate's process control, none of it done (no rlimits, no chdir, no privileges dropped)."""

    def __init__(self) -> None:
        self.entered: list[tuple[str, Any]] = []

    def harden(self) -> None:
        pass

    def enter(self, workdir: str, limits: Any, hardened: bool = False, oom_first: bool = True) -> None:
        self.entered.append((workdir, limits))

    def flush_std(self) -> None:
        pass


class _Signals:
    """The candidate's `signal` module for a batch: handlers and timers recorded, never set."""

    SIGALRM, ITIMER_REAL = signal.SIGALRM, signal.ITIMER_REAL
    SIGPROF, ITIMER_PROF = signal.SIGPROF, signal.ITIMER_PROF
    SIGTERM, SIGHUP, SIGCHLD, SIG_DFL = signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIG_DFL

    def __init__(self) -> None:
        self.timers: list[float] = []

    def signal(self, sig: int, handler: Any) -> Any:
        return signal.SIG_DFL

    def setitimer(self, which: int, seconds: float) -> None:
        self.timers.append(seconds)


def _exit(code: int = 0) -> None:
    raise _Exited(code)


@pytest.fixture
def fake_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """candidate.py's os._exit, dup2 and signals, made harmless for a thread."""
    monkeypatch.setattr(candidate, "os", types.SimpleNamespace(_exit=_exit, dup2=None, close=None))
    monkeypatch.setattr(candidate, "signal", _Signals())


def _serve_candidate(sock: socket.socket) -> None:
    try:
        candidate.serve(sock, execution.prepare(_load, "python"), execution, _Procs(), plaindata)
    except _Exited:
        pass
    finally:
        sock.close()


def _scripted(sock: socket.socket, answers: list[Any]) -> None:
    """A candidate that answers each request with the next of `answers`: a message, raw bytes
    (sent as they are), "silent" (no answer: wait for the judge to hang up) or None (hang up)."""
    try:
        for answer in answers:
            plaindata.receive(sock)
            if answer is None:
                return
            if answer == "silent":
                sock.recv(1)
                return
            if isinstance(answer, bytes):
                sock.sendall(answer)
            else:
                plaindata.send(sock, answer)
        while sock.recv(1 << 16):  # until the judge hangs up
            pass
    except (EOFError, OSError):
        pass
    finally:
        sock.close()


Peer = Callable[[socket.socket], None]


@pytest.fixture
def run(fake_process: None) -> Iterator[Callable[..., dict[str, Any]]]:
    """run(code, test, support="", peer=None, timeout_s=10): the verdict `execution.timed_execute`
    gives, with the real candidate (or `peer`) at the other end of the socket."""
    threads: list[threading.Thread] = []

    def run(code: str, test: str, support: str = "", peer: Peer | None = None, timeout_s: float = 10.0) -> Any:
        judge_end, candidate_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        thread = threading.Thread(target=peer or _serve_candidate, args=(candidate_end,), daemon=True)
        thread.start()
        threads.append(thread)
        env = execution.prepare(_load, "python")
        channel = judge.Channel(judge_end, plaindata, time.monotonic() + timeout_s, timeout_s)
        try:
            return execution.timed_execute(env, channel, execution.Run(code, test, support, WORKDIR, {}, None), None)
        finally:
            channel.close()
            thread.join(10)

    yield run
    assert not any(t.is_alive() for t in threads), "a candidate thread did not end when the judge hung up"


def script(*answers: Any) -> Peer:
    return lambda sock: _scripted(sock, list(answers))


LOADED_F = {"ok": True, "defined": {"f": "call"}}
ADD = "def add(a, b):\n    return a + b\n"
ADD_TEST = "def check(add):\n    assert add(1, 2) == 3\n    assert add(-1, 1) == 0\n\ncheck(add)\n"

# From the dataset (Python/0): the same pair as tests/test_failure_messages.py's.


# --- verdicts with the real candidate loop at the other end ---------------------------------------


def test_correct_code_passes(run: Callable[..., dict[str, Any]]) -> None:
    result = run(ADD, ADD_TEST)
    assert result["status"] == "passed" and result["message"] == "all tests passed", result
    assert isinstance(result["exec_s"], float) and "facts" not in result


def test_a_failed_assert_shows_the_call_expected_and_actual(run: Callable[..., dict[str, Any]]) -> None:
    result = run(HAS_CLOSE, HAS_CLOSE_TEST)
    assert result["status"] == "failed"
    assert result["message"] == (
        "Test failed (test line 7):\n"
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n"
        "  call:     has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05)\n"
        "  expected: False\n"
        "  got:      True"
    )


def test_exceptions_cross_as_their_builtin_class_with_message_and_line(run: Callable[..., dict[str, Any]]) -> None:
    code = (
        "class Bad(ValueError):\n    pass\n\ndef f(x):\n    if x < 0:\n        raise Bad('negative')\n"
        "    return {}[x]\n"
    )
    test = (
        "def check(f):\n"
        "    try:\n"
        "        f(-1)\n"
        "    except ValueError as exc:\n"
        "        assert str(exc) == 'negative'\n"
        "    else:\n"
        "        assert False\n"
        "    f(3)\n"
        "check(f)\n"
    )
    result = run(code, test)
    assert result["status"] == "failed"
    assert result["message"].splitlines() == [
        "KeyError: 3",
        "  test line 8: f(3)",
        "  raised at candidate line 7: return {}[x]",
    ]
    result = run(code, "def check(f):\n    assert f(3) == 1\ncheck(f)\n")
    assert result["message"].splitlines() == [
        "KeyError: 3",
        "  while calling f(3) (test line 2)",
        "  raised at candidate line 7: return {}[x]",
    ]


def test_plain_values_cross_with_their_types(run: Callable[..., dict[str, Any]]) -> None:
    code = (
        "import numpy as np\n"
        "LIMIT = 7\n"
        "HELPER = object()\n"
        "def f(x):\n"
        "    return [None, True, 2**80, -0.0, float('inf'), 1+2j, 'é', b'\\x00', (1,), {1: {2}}, "
        "frozenset({3}), range(2), np.int64(7)]\n"
    )
    test = (
        "def check(f):\n"
        "    assert f(0) == [None, True, 2**80, -0.0, float('inf'), 1+2j, 'é', b'\\x00', (1,), {1: {2}}, "
        "frozenset({3}), range(2), 7]\n"
        "    assert type(f(0)[12]) is int and type(f(0)[1]) is bool\n"
        "    assert LIMIT == 7\n"
        "    assert 'HELPER' not in globals()\n"  # not plain data: the test sees it as undefined
        "check(f)\n"
    )
    result = run(code, test)
    assert result["status"] == "passed", result


def test_a_value_that_is_not_plain_data_fails_the_run(run: Callable[..., dict[str, Any]]) -> None:
    code = "class R(int):\n    pass\n\ndef f(x):\n    return R(x)\n"
    result = run(code, "def check(f):\n    assert f(1) == 1\ncheck(f)\n")
    assert result["status"] == "failed"
    assert result["message"].startswith("`f` returned ") and "only plain data reaches the judge" in result["message"]


def test_a_test_that_passes_a_function_fails_as_the_tests_problem(run: Callable[..., dict[str, Any]]) -> None:
    result = run(ADD, "def check(add):\n    assert add(lambda: 1, 2) == 3\ncheck(add)\n")
    assert result["status"] == "failed"
    assert "TypeError: the test passed" in result["message"]
    assert "only plain data reaches the code under test" in result["message"]


def test_the_candidates_syntax_error_and_exit_at_load_fail_the_run(run: Callable[..., dict[str, Any]]) -> None:
    result = run("def add(a, b)\n    return a + b\n", ADD_TEST)
    assert result["status"] == "failed" and result["message"].startswith("SyntaxError in candidate line 1"), result
    result = run("import sys\nsys.exit(0)\n", ADD_TEST)
    assert result == {**result, "status": "failed", "message": "the code called exit(0) before the tests finished"}
    result = run("x = [][0]\n", ADD_TEST)
    assert result["status"] == "failed"
    assert result["message"].splitlines() == [
        "IndexError: list index out of range",
        "  raised at candidate line 1: x = [][0]",
    ]


def test_a_function_the_candidate_lacks_is_a_name_error_in_the_test(run: Callable[..., dict[str, Any]]) -> None:
    result = run("def sub(a, b):\n    return a - b\n", ADD_TEST)
    assert result["status"] == "failed" and "NameError" in result["message"] and "add" in result["message"]


def test_the_tasks_own_helpers_are_the_judges_not_the_candidates(run: Callable[..., dict[str, Any]]) -> None:
    support = "import math\ndef poly(xs, x):\n    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n"
    test = "def check(find_zero):\n    assert abs(poly([1, 2], find_zero([1, 2]))) < 1e-6\ncheck(find_zero)\n"
    rigged = "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n"
    honest = "def find_zero(xs):\n    return -xs[0] / xs[1]\n"
    assert run(rigged, test, support)["status"] == "failed"
    assert run(rigged, test)["status"] == "passed"  # without the task's helpers the rigged one wins
    assert run(honest, test, support)["status"] == "passed"


def test_helpers_and_tests_that_do_not_compile_are_errors_not_failures(run: Callable[..., dict[str, Any]]) -> None:
    result = run(ADD, ADD_TEST, "def helper(:\n")
    assert result["status"] == "error" and result["message"] == "SyntaxError in helper code line 1: invalid syntax"
    result = run(ADD, "def check(add)\n")
    assert result["status"] == "error" and result["message"].startswith("SyntaxError in test line 1")
    result = run(ADD, ADD_TEST, "raise RuntimeError('broken helper')\n")
    assert result == {
        **result,
        "status": "error",
        "message": "the task's helper code failed: RuntimeError: broken helper",
    }


def test_a_test_that_calls_exit_fails(run: Callable[..., dict[str, Any]]) -> None:
    result = run(ADD, "raise SystemExit(0)\n")
    assert result["status"] == "failed" and result["message"] == "the test called exit(0) before it finished"


def test_a_batch_of_calls_gives_values_and_exceptions_for_a_stub_and_a_local_function(
    run: Callable[..., dict[str, Any]],
) -> None:
    code = "def f(x):\n    if x == 7:\n        raise ValueError('seven')\n    return [x, {x: str(x)}]\n"
    test = (
        "def check(f):\n"
        "    batch = globals()['@hefix.batch']\n"
        "    out = batch(f, [(i,) for i in range(9)], [0.3] * 9, 5.0)\n"
        "    assert out[3] == ('value', [3, {3: '3'}])\n"
        "    assert out[7] == ('raised', 'ValueError: seven')\n"
        "    assert len(out) == 9 and out[8] == ('value', [8, {8: '8'}])\n"
        "    own = batch(lambda x: 1 / x, [(1,), (0,)], [0.3, 0.3], 5.0)\n"
        "    assert own == [('value', 1.0), ('raised', 'ZeroDivisionError: division by zero')]\n"
        "    assert batch(lambda x: x, [(1,), (2,)], [0.3, 0.3], -1.0) == [('skipped', None)] * 2\n"
        "    encoded = globals()['@hefix.batch_json'](f, b'[[[\"t\",2],0.3]]', 1, 5.0, None)\n"
        "    assert encoded == [('value', [2, {2: '2'}])], encoded\n"
        "    local = globals()['@hefix.batch_json'](abs, b'[[[\"t\",-2],0.3]]', 1, 5.0, None)\n"
        "    assert local == [('value', 2)], local\n"
        "check(f)\n"
    )
    result = run(code, test)
    assert result["status"] == "passed", result


def test_facts_and_marks_are_reported_beside_the_verdict(run: Callable[..., dict[str, Any]]) -> None:
    test = (
        "def check(add):\n    assert add(1, 2) == 3\n"
        "    left = globals()['@hefix.mark']('task')\n"
        "    assert 0 < left <= 10\n"
        "    globals()['@hefix.fact']('plus', {'compared': 3, 'disagreements': (1, 2)})\n"
        "check(add)\n"
    )
    result = run(ADD, test)
    assert result["status"] == "passed", result
    assert result["facts"]["task"] is True
    assert plaindata.from_tree(result["facts"]["plus"]) == {"compared": 3, "disagreements": (1, 2)}


# --- a candidate that breaks the protocol, dies or hangs --------------------------------------------


SWALLOWS = "def check(f):\n    try:\n        f(1)\n    except:\n        pass\n    assert f(2) == 3\ncheck(f)\n"


def test_a_test_that_swallows_exceptions_still_fails_a_candidate_that_died(run: Callable[..., dict[str, Any]]) -> None:
    result = run("", SWALLOWS, peer=script(LOADED_F, None))
    assert result["status"] == "failed" and result["message"] == judge.ENDED, result


def test_bytes_that_are_not_a_message_fail_the_run(run: Callable[..., dict[str, Any]]) -> None:
    garbage = plaindata.HEADER.pack(5) + b"{{{{{"
    result = run("", SWALLOWS, peer=script(LOADED_F, garbage))
    assert result["status"] == "failed"
    assert result["message"] == "the code's process sent a message that is not JSON: JSONDecodeError"
    too_big = plaindata.HEADER.pack(plaindata.MAX_FRAME + 1)
    result = run("", SWALLOWS, peer=script(LOADED_F, too_big))
    assert result["status"] == "failed" and result["message"].startswith("the code's process sent a message of ")


def test_a_candidate_that_never_answers_times_out(run: Callable[..., dict[str, Any]]) -> None:
    start = time.monotonic()
    result = run("", SWALLOWS, peer=script(LOADED_F, "silent"), timeout_s=0.3)
    assert result["status"] == "timeout" and result["message"] == "timed out after 0.3s (an infinite loop?)"
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (
            {"type": "SystemExit", "base": "SystemExit", "text": "bye"},
            "the code called exit('bye') before the tests finished",
        ),
        (
            {"type": "KeyboardInterrupt", "base": "KeyboardInterrupt", "text": "^C"},
            "the code raised KeyboardInterrupt: ^C",
        ),
        ({"type": "NameError", "refused": "not allowed: the builtin `open`"}, "not allowed: the builtin `open`"),
        (
            {"type": "NotAllowed", "not_allowed": True, "text": "not allowed: import of module 'os'"},
            "not allowed: import of module 'os'",
        ),
    ],
)
def test_exits_refusals_and_base_exceptions_fail_whatever_the_test_catches(
    run: Callable[..., dict[str, Any]], raised: dict[str, Any], message: str
) -> None:
    result = run("", SWALLOWS, peer=script(LOADED_F, {"raised": raised}))
    assert result["status"] == "failed" and result["message"] == message, result


def test_malformed_answers_fail_the_run(run: Callable[..., dict[str, Any]]) -> None:
    result = run("", SWALLOWS, peer=script({"ok": True, "defined": ["f"]}))
    assert result["status"] == "failed" and result["message"] == "the code's process sent a malformed answer"
    result = run("", SWALLOWS, peer=script(LOADED_F, {"what": 1}))
    assert result["status"] == "failed" and result["message"].startswith("`f` sent a malformed answer")
    result = run("", SWALLOWS, peer=script(LOADED_F, {"value": ["no such tag", 1]}))
    assert result["status"] == "failed" and result["message"].startswith("the code's process sent ")


def test_a_load_that_failed_over_there_is_the_candidates_failure(run: Callable[..., dict[str, Any]]) -> None:
    result = run("", SWALLOWS, peer=script({"ok": False, "message": "SyntaxError in candidate line 3: oops"}))
    assert result["status"] == "failed" and result["message"] == "SyntaxError in candidate line 3: oops"
    result = run("", SWALLOWS, peer=script({"ok": False}))
    assert result["message"] == "the code could not be loaded"


def test_a_candidate_cannot_leave_out_the_batch_calls_it_would_get_wrong(run: Callable[..., dict[str, Any]]) -> None:
    test = "def check(f):\n    globals()['@hefix.batch'](f, [(i,) for i in range(10)], [0.3] * 10, 5.0)\ncheck(f)\n"
    short = {"results": [["v", i + 1] for i in range(5)]}
    result = run("", test, peer=script(LOADED_F, short))
    assert result["status"] == "failed"
    assert result["message"] == "`f` answered 5 of 10 calls before their time ran out"


def test_batch_answers_that_are_timeouts_or_not_plain(run: Callable[..., dict[str, Any]]) -> None:
    test = (
        "def check(f):\n"
        "    out = globals()['@hefix.batch'](f, [(1,), (2,)], [0.3, 0.3], 5.0)\n"
        "    assert out == [('timeout', None), ('raised', 'ValueError: no')], out\n"
        "check(f)\n"
    )
    assert run("", test, peer=script(LOADED_F, {"results": [["t"], ["r", "ValueError: no"]]}))["status"] == "passed"
    result = run("", test, peer=script(LOADED_F, {"results": [["n", "returned a generator"]]}))
    assert result["status"] == "failed"
    assert result["message"] == "`f` returned a generator: only plain data reaches the judge"
    result = run("", test, peer=script(LOADED_F, {"results": "all good"}))
    assert result["message"] == "the code's process sent a malformed answer"


# --- the Channel's parts, one at a time -------------------------------------------------------------


@pytest.fixture
def channel() -> Iterator[tuple[judge.Channel, socket.socket]]:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ch = judge.Channel(mine, plaindata, time.monotonic() + 10, 10.0)
    yield ch, theirs
    ch.close()
    theirs.close()


def test_an_answer_equal_to_the_expected_bytes_is_not_decoded(channel: tuple[judge.Channel, socket.socket]) -> None:
    ch, theirs = channel
    stub = ch.stub("f")
    assert stub.__name__ == "f" and stub.__dict__[judge.STUB_NAME] == "f"
    expected = plaindata.dumps({"results": [["v", 1]]}).encode("ascii")
    theirs.sendall(plaindata.HEADER.pack(len(expected)) + expected)
    assert ch.batch_json(stub, b'[[["t",0],0.3]]', 1, 5.0, expected) is None
    request, _ = plaindata.receive(theirs)
    assert request == {"op": "batch", "name": "f", "budget_s": 5.0, "calls": [[["t", 0], 0.3]]}


def test_a_call_left_unanswered_is_a_timeout_on_the_next_send(channel: tuple[judge.Channel, socket.socket]) -> None:
    ch, _ = channel
    ch._send({"op": "call", "name": "f", "args": [], "kwargs": {}})
    with pytest.raises(judge.CandidateFault, match="did not answer a call within 10s"):
        ch._send({"op": "call", "name": "f", "args": [], "kwargs": {}})
    assert ch.timed_out and ch.fault == "the code did not answer a call within 10s"
    with pytest.raises(judge.CandidateFault):  # remembered: every later send fails the same way
        ch.ask({"op": "call"})


def test_a_deadline_already_past_times_out_at_once(channel: tuple[judge.Channel, socket.socket]) -> None:
    ch, _ = channel
    with pytest.raises(judge.CandidateFault, match="within its time budget"):
        ch._answer(deadline=time.monotonic() - 1)
    assert ch.timed_out


def test_arguments_that_cannot_be_sent_are_the_tests_problem(
    channel: tuple[judge.Channel, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    ch, _ = channel
    with pytest.raises(TypeError, match="only plain data reaches the code under test"):
        ch.batch(ch.stub("f"), [(object(),)], [0.3], 1.0)
    with pytest.raises(TypeError, match="only plain data reaches the code under test"):
        ch.call("f", (object(),), {})
    monkeypatch.setattr(plaindata, "MAX_FRAME", 16)  # larger than a frame may be
    with pytest.raises(judge.CandidateFault, match="the test's arguments cannot be sent"):
        ch._send({"op": "call", "args": "x" * 32})
    assert ch.fault is not None and not ch.timed_out


def test_a_candidates_exception_is_rebuilt_as_its_builtin_class(channel: tuple[judge.Channel, socket.socket]) -> None:
    ch, _ = channel
    exc = ch._exception({"type": "Bad", "base": "ValueError", "text": "negative", "line": 6, "args": ["t", "negative"]})
    assert type(exc) is ValueError and exc.args == ("negative",)
    assert judge.origin_of(exc) == judge.Origin("Bad", "negative", 6)
    # args that the class refuses: the message alone
    exc = ch._exception({"type": "UnicodeDecodeError", "base": "UnicodeDecodeError", "text": "bad byte", "args": None})
    assert isinstance(exc, Exception) and "bad byte" in str(exc)
    exc = ch._exception({"type": 3, "base": "NoSuchBuiltin", "text": "x" * 600, "line": "7"})
    assert isinstance(exc, judge.CandidateFault) and str(exc).startswith("the code raised Exception: xxx")
    assert judge.origin_of(ValueError("plain")) is None
    assert ch.fault is not None and len(ch.fault) < 600  # the text was capped


def test_text_and_build_helpers() -> None:
    assert judge._text("short", "d", 10) == "short"
    assert judge._text(None, "default", 10) == "default"
    assert judge._text("x" * 20, "d", 10) == "xxxxxxx..."
    assert type(judge._build(KeyError, ("k",), "k")) is KeyError
    assert str(judge._build(UnicodeDecodeError, ("bad",), "text")) != ""  # fell back to (text,) or Exception(text)


def test_a_local_batch_reports_values_exceptions_and_skips_past_its_budget() -> None:
    assert judge._local_batch(lambda x: 10 // x, [(2,), (0,)], 5.0) == [
        ("value", 5),
        ("raised", "ZeroDivisionError: integer division or modulo by zero"),
    ]
    assert judge._local_batch(lambda x: x, [(1,)], -1.0) == [("skipped", None)]


def test_facts_are_plain_bounded_and_keyed_by_str() -> None:
    facts: dict[str, Any] = {}
    fact = judge.fact_recorder(facts, plaindata)
    fact("a", (1, 2))
    assert facts == {"a": ["t", 1, 2]}
    with pytest.raises(TypeError):
        fact(1, 2)  # type: ignore[arg-type]
    with pytest.raises(plaindata.NotPlain):
        fact("b", object())
    for i in range(judge.FACTS_MAX - 1):
        fact(f"k{i}", i)
    fact("a", 3)  # replacing a fact is not one more
    with pytest.raises(ValueError, match="facts are at most"):
        fact("one-too-many", 0)
    with pytest.raises(ValueError, match="facts are at most"):
        judge.fact_recorder({}, plaindata)("big", "x" * (judge.FACTS_BYTES + 1))


def test_a_mark_says_whether_the_run_would_have_passed_there(channel: tuple[judge.Channel, socket.socket]) -> None:
    ch, _ = channel
    facts: dict[str, Any] = {}
    mark = judge.mark_recorder(facts, ch)
    assert 9 < mark("before") <= 10
    with pytest.raises(ValueError, match="new fact's key"):
        mark("before")
    ch._fail("the code's process sent rubbish")
    mark("after")
    assert facts == {"before": True, "after": False}
    assert json.dumps(facts)  # plain JSON for the report
