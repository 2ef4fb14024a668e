"""sandbox/forkserver.py in-process: the harness's side of the fork server's protocol.

The server (child/runner.py --serve, a process) is played by a thread on the other end of a
socket pair: it says hello, takes each request with the run's two pipes (SCM_RIGHTS), writes the
run's output and result line into them and replies. What is real: the framing (a length, then
JSON; "started" notes; replies to an earlier run skipped by their nonce), reading with deadlines,
the run's request, the verdicts made of the pipes and the reply, and what the executor does when
the server errs, retires, dies, hangs or never says it is ready (restart, kill the run's processes,
one line). Only _spawn (which would start the process) and the process-killing calls are replaced.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from humanevalfix.sandbox import forkserver
from humanevalfix.sandbox.child.runner import HEADER
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.forkserver import ForkServerExecutor, Server, kill_tree
from humanevalfix.sandbox.jail import Jail


def frame(message: dict[str, Any]) -> bytes:
    data = json.dumps(message).encode()
    return HEADER.pack(len(data)) + data


class FakeProc:
    """The server's Popen: alive until stopped."""

    pid = 2**22 + 12345  # no such process: nothing real is ever signalled

    def __init__(self) -> None:
        self.returncode: int | None = None
        self.waits: list[float | None] = []

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.waits.append(timeout)
        self.returncode = 0
        return 0


def make_server(sock: socket.socket, base: str | None = None, group: Any = None) -> Server:
    return Server(FakeProc(), sock, tempfile.TemporaryFile(), base, group=group)  # type: ignore[arg-type]


# ---------------------------------------------------------------- Server: framing and reading


def test_take_message_reads_whole_frames_and_keeps_started_notes_aside(pair: tuple[socket.socket, ...]) -> None:
    server = make_server(pair[0])
    server.nonce = "n2"
    started = {"nonce": "n2", "started": 41, "start_time": 7, "candidate": 42, "candidate_start": 8}
    data = frame({"nonce": "n1", "exit_code": 9}) + frame(started) + frame({"nonce": "n2", "exit_code": 0})
    server.buffer.extend(data[:5])
    assert server.take_message() is None  # not even a whole header
    server.buffer.extend(data[5 : len(data) - 3])
    assert server.take_message() is None  # the reply to an earlier run is skipped; the last is cut short
    assert (server.child, server.child_start, server.candidate, server.candidate_start) == (41, 7, 42, 8)
    server.buffer.extend(data[-3:])
    assert server.take_message() == {"nonce": "n2", "exit_code": 0}
    assert server.buffer == bytearray()
    server.buffer.extend(frame({"ready": True}))  # no nonce: the hello
    assert server.take_message() == {"ready": True}
    server.stderr.close()


def test_read_message_waits_for_a_reply_until_the_deadline_or_eof(pair: tuple[socket.socket, ...]) -> None:
    ours, theirs = pair
    server = make_server(ours)
    theirs.sendall(frame({"ready": True, "names": []}))
    assert server.read_message(forkserver.time.monotonic() + 5) == {"ready": True, "names": []}
    assert server.read_message(forkserver.time.monotonic() + 0.05) is None  # nothing came in time
    assert not server.dead
    theirs.sendall(frame({"x": 1})[:4])
    theirs.close()
    assert server.read_message(forkserver.time.monotonic() + 5) is None  # EOF mid-frame
    assert server.dead and not server.alive()
    server.stderr.close()


def test_pump_reads_what_is_there_and_notices_eof(pair: tuple[socket.socket, ...]) -> None:
    ours, theirs = pair
    server = make_server(ours)
    assert server.pump() is True and server.buffer == bytearray()  # nothing yet: still open
    theirs.sendall(b"abc")
    assert server.pump() is True and bytes(server.buffer) == b"abc"
    theirs.close()
    assert server.pump() is False and server.dead
    assert ours.getblocking()  # left blocking for read_message
    server.stderr.close()


def test_stderr_tail_is_the_last_line_the_server_wrote(pair: tuple[socket.socket, ...]) -> None:
    server = make_server(pair[0])
    assert server.stderr_tail() == ""
    server.stderr.write(b"starting\nModuleNotFoundError: No module named 'numpy'\n\n")
    assert server.stderr_tail() == "ModuleNotFoundError: No module named 'numpy'"
    server.stderr.close()
    assert server.stderr_tail() == ""  # closed: nothing to say, no exception


def test_stop_closes_everything_the_server_had(
    pair: tuple[socket.socket, ...], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    killed: list[int] = []
    monkeypatch.setattr(forkserver, "kill_group", killed.append)
    removed: list[str] = []

    class Group:
        def remove(self) -> None:
            removed.append("group")

    base = tmp_path / "work"
    (base / "left").mkdir(parents=True)
    server = make_server(pair[0], base=str(base), group=Group())
    assert server.alive()
    server.stop()
    assert server.dead and not server.alive()
    assert killed == [FakeProc.pid] and removed == ["group"]
    assert server.proc.waits == [2, None]  # no PID namespace: a moment to exit, then reaped
    assert server.sock.fileno() == -1 and server.stderr.closed and not base.exists()
    assert pair[1].recv(1) == b""  # the server's end sees EOF


def test_kill_tree_stops_then_kills_only_the_process_that_started_then(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int, Any]] = []
    monkeypatch.setattr(forkserver.os, "kill", lambda pid, sig: calls.append(("kill", pid, sig)))
    monkeypatch.setattr(
        forkserver, "kill_descendants", lambda pid, reap_children: calls.append(("tree", pid, reap_children))
    )
    monkeypatch.setattr(forkserver, "kill_group", lambda pid: calls.append(("group", pid, None)))
    monkeypatch.setattr(forkserver, "start_time", lambda pid: 500 if pid == 77 else None)
    kill_tree(77, None)
    kill_tree(77, 499)  # the pid was reused since
    kill_tree(78, 500)  # gone
    assert calls == []
    kill_tree(77, 500)
    assert calls == [
        ("kill", 77, signal.SIGSTOP),
        ("tree", 77, False),
        ("group", 77, None),
        ("kill", 77, signal.SIGKILL),
    ]


def test_kill_tree_of_a_process_that_just_exited_does_nothing_more(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def kill(pid: int, sig: int) -> None:
        raise ProcessLookupError

    monkeypatch.setattr(forkserver.os, "kill", kill)
    monkeypatch.setattr(forkserver, "kill_descendants", lambda *a, **k: calls.append("tree"))
    monkeypatch.setattr(forkserver, "start_time", lambda pid: 5)
    kill_tree(1234, 5)
    assert calls == []


# ---------------------------------------------------------------- the executor against a scripted server


@dataclass
class Script:
    """How the played server answers: `hello` first, then per request one of `runs` (a callable
    given the request and its two fds), in order; the default passes."""

    hello: dict[str, Any] = field(default_factory=lambda: {"ready": True})
    runs: list[Callable[[dict[str, Any], int, int, socket.socket], None]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


def passes(request: dict[str, Any], out: int, result: int, sock: socket.socket) -> None:
    os.write(out, b"hello from the candidate\n")
    os.write(
        result,
        json.dumps(
            {"nonce": request["nonce"], "status": "passed", "message": "all tests passed", "exec_s": 0.01}
        ).encode()
        + b"\n",
    )
    os.close(out)
    os.close(result)
    sock.sendall(frame({"nonce": request["nonce"], "started": 4242, "start_time": 1}))
    sock.sendall(frame({"nonce": request["nonce"], "exit_code": 0, "timed_out": False}))


def fails(request: dict[str, Any], out: int, result: int, sock: socket.socket) -> None:
    os.write(result, json.dumps({"nonce": "someone-else", "status": "passed"}).encode() + b"\n")  # not ours
    os.write(result, json.dumps({"nonce": request["nonce"], "status": "failed", "message": "assert 1 == 2"}).encode())
    os.close(out)
    os.close(result)
    sock.sendall(frame({"nonce": request["nonce"], "exit_code": 1, "timed_out": False}))


def errs(request: dict[str, Any], out: int, result: int, sock: socket.socket) -> None:
    os.close(out)
    os.close(result)
    sock.sendall(frame({"nonce": request["nonce"], "error": "could not fork the judge"}))


def retiring(request: dict[str, Any], out: int, result: int, sock: socket.socket) -> None:
    os.write(result, json.dumps({"nonce": request["nonce"], "status": "passed", "message": "ok"}).encode())
    os.close(out)
    os.close(result)
    sock.sendall(frame({"nonce": request["nonce"], "exit_code": 0, "retire": True}))


def dies(request: dict[str, Any], out: int, result: int, sock: socket.socket) -> None:
    sock.sendall(
        frame({"nonce": request["nonce"], "started": 31337, "start_time": 9, "candidate": 31338, "candidate_start": 10})
    )
    os.write(out, b"partial output")
    os.close(out)
    os.close(result)
    sock.shutdown(socket.SHUT_RDWR)


def hangs(request: dict[str, Any], out: int, result: int, sock: socket.socket) -> None:
    threading.Event().wait(1.0)  # longer than the time limit and the grace; the fds stay open meanwhile
    os.close(out)
    os.close(result)


def play(sock: socket.socket, script: Script) -> None:
    try:
        sock.sendall(frame(script.hello))
        while script.runs:
            header, fds, _, _ = socket.recv_fds(sock, HEADER.size, 2)
            if not header:
                return
            (length,) = HEADER.unpack(header)
            body = b""
            while len(body) < length:
                body += sock.recv(length - len(body))
            request = json.loads(body)
            script.requests.append(request)
            script.runs.pop(0)(request, fds[0], fds[1], sock)
    except OSError:
        pass
    finally:
        sock.close()


class Played(ForkServerExecutor):
    """The executor, its server a thread playing `scripts` (one per start)."""

    def __init__(self, scripts: list[Script], limits: Limits | None = None) -> None:
        super().__init__(limits or Limits(timeout_s=5), jail=Jail("none"), cgroups=False)
        self.scripts = scripts
        self.threads: list[threading.Thread] = []

    def _spawn(self) -> Server | str:
        if not self.scripts:
            return "could not start the fork server: no script left"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        thread = threading.Thread(target=play, args=(theirs, self.scripts.pop(0)), daemon=True)
        thread.start()
        self.threads.append(thread)
        return self._adopt(make_server(ours))


@pytest.fixture(autouse=True)
def _no_signals(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int | None]]:
    killed: list[tuple[int, int | None]] = []
    monkeypatch.setattr(forkserver, "kill_group", lambda pid: None)
    monkeypatch.setattr(forkserver, "kill_tree", lambda pid, started: killed.append((pid, started)))
    return killed


def test_runs_go_to_one_warm_server(tmp_path: Any) -> None:
    script = Script(runs=[passes, fails])
    ex = Played([script])
    assert ex.warm and "warm fork server" in ex.isolation and ex.cgroups is None
    ok = ex.run("x = 1", "assert x == 1", "def helper(): pass")
    assert (ok.status, ok.message, ok.output, ok.exit_code, ok.exec_s) == (
        "passed",
        "all tests passed",
        "hello from the candidate\n",
        0,
        0.01,
    )
    bad = ex.run("x = 2", "assert x == 1")
    assert (bad.status, bad.message, bad.exit_code) == ("failed", "assert 1 == 2", 1)
    assert ex.starts == 1
    first, second = script.requests
    assert (first["code"], first["test"], first["support"]) == ("x = 1", "assert x == 1", "def helper(): pass")
    assert first["limits"] == Limits(timeout_s=5).rlimits() and first["timeout_s"] == 5
    assert first["nonce"] != second["nonce"] and len(first["nonce"]) == 32
    assert "compiled" not in first  # the hello named no bytecode: the judge compiles
    ex.close()
    ex.threads[0].join(5)
    assert not ex.threads[0].is_alive()  # the server's socket closed: it ended


def test_an_error_reply_or_a_retiring_server_is_replaced_by_a_new_one() -> None:
    ex = Played([Script(runs=[errs]), Script(runs=[retiring]), Script(runs=[passes])])
    result = ex.run("x = 1", "pass")
    assert (result.status, result.message) == ("error", "could not fork the judge")
    result = ex.run("x = 1", "pass")
    assert result.status == "passed" and ex.starts == 2
    assert ex.run("x = 1", "pass").status == "passed" and ex.starts == 3  # it retired after its run
    ex.close()


def test_a_server_that_dies_mid_run_fails_the_run_and_its_processes_are_killed(
    _no_signals: list[tuple[int, int | None]],
) -> None:
    ex = Played([Script(runs=[dies]), Script(runs=[passes])])
    result = ex.run("import os; os.kill(os.getppid(), 9)", "pass")
    assert result.status == "failed"
    assert result.message == "the sandbox's server process died while the code ran (did the code kill its parent?)"
    assert result.output == "partial output"
    assert _no_signals == [(31337, 9), (31338, 10)]  # rlimits-only jail: the run's judge and candidate
    assert ex.run("x = 1", "pass").status == "passed" and ex.starts == 2  # the next run, a new server
    ex.close()


def test_a_server_that_hangs_is_given_up_on_as_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forkserver, "GRACE_S", 0.1)
    ex = Played([Script(runs=[hangs])], Limits(timeout_s=0.2))
    result = ex.run("while True: pass", "pass")
    assert (result.status, result.message) == ("timeout", "timed out after 0.2s (an infinite loop?)")
    assert ex._server is None  # stopped: the next run starts a new one
    ex.close()


def test_a_server_that_is_not_ready_is_one_line_and_a_failed_start_too() -> None:
    ex = Played([Script(hello={"ready": False, "message": "numpy cannot be imported"}), Script(hello={})])
    first = ex.run("x = 1", "pass")
    assert (first.status, first.message) == ("error", "the fork server did not start (none): numpy cannot be imported")
    second = ex.run("x = 1", "pass")
    assert second.message == "the fork server did not start (none): it did not answer"
    third = ex.run("x = 1", "pass")
    assert (third.status, third.message) == ("error", "could not start the fork server: no script left")
    ex.close()


def test_prestart_overlaps_the_start_and_close_stops_any_more() -> None:
    script = Script(runs=[passes])
    ex = Played([script, Script(runs=[passes])])
    ex.prestart()
    assert ex.starts == 1 and ex._server is not None and not ex._ready
    ex.prestart()  # already started: not again
    assert ex.starts == 1
    assert ex.run("x = 1", "pass").status == "passed" and ex._ready and ex.starts == 1
    ex.close()
    ex.prestart()  # closed: no new server
    assert ex.starts == 1 and ex._server is None
