"""The fork server (sandbox/child/server.py) in-process: its framing, what a standby judge tells
the server about the request it took, which tests it compiles and keeps, the zygote's side of a
candidate's fork, and the loop's replies to the harness, down to the run that retires it.

The in-process counterparts of the fork-server cases of tests/test_judge_probes.py (a run after
which the zygote is gone retires the server; nothing a run leaves reaches the next),
tests/test_sandbox_conformance.py and tests/test_bench_executor.py, which start a real server.
Here nothing forks, kills, waits, changes a signal handler, a session or an fd of this process:
server.py's `os`, `signal` and `gc`, and the runner and procs it is handed, are fakes that record
what the server asked for (or forward harmless calls, such as pipes and directories under
tmp_path, to the real `os`); the harness's socket is one end of a real socket pair.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import signal
import socket
import types
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from humanevalfix.sandbox.child import execution, plaindata, server


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"humanevalfix.sandbox.child.{name}")


class Exited(BaseException):
    """os._exit, as the server's code called it (it may be caught on the way out: FakeOS.exits
    has the first status, the one the process would have had)."""

    @property
    def code(self) -> int:
        return int(self.args[0])


class FakeOS:
    """server.py's `os`: what would act on this process is recorded; the rest is the real `os`."""

    def __init__(self, forks: list[int] | None = None, go: bytes = b"g") -> None:
        self.calls: list[str] = []
        self.written: list[tuple[int, bytes]] = []
        self.forks = list(forks or [])
        self.go = go
        self.exits: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _exit(self, code: int) -> None:
        self.exits.append(code)
        raise Exited(code)

    def fork(self) -> int:
        self.calls.append("fork")
        pid = self.forks.pop(0)
        if pid < 0:
            raise BlockingIOError("the cgroup's process limit")
        return pid

    def setsid(self) -> None:
        self.calls.append("setsid")

    def open(self, path: str, flags: int) -> int:
        self.calls.append(f"open {path}")
        return 1000

    def dup2(self, fd: int, to: int) -> None:
        self.calls.append(f"dup2 {fd} {to}")

    def close(self, fd: int) -> None:
        self.calls.append(f"close {fd}")

    def closerange(self, low: int, high: int) -> None:
        self.calls.append(f"closerange {low} {high}")

    def write(self, fd: int, data: bytes) -> int:
        self.written.append((fd, data))
        return len(data)

    def read(self, fd: int, n: int) -> bytes:
        return self.go

    def kill(self, pid: int, sig: int) -> None:
        self.calls.append(f"kill {pid} {sig}")

    def waitpid(self, pid: int, options: int) -> tuple[int, int]:
        self.calls.append(f"waitpid {pid}")
        if pid == 404:
            raise ChildProcessError
        return (0, 0) if pid == 200 else (pid, 0)

    def getpid(self) -> int:
        return 4321


class FakeSignals:
    SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGCONT = (
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGCHLD,
        signal.SIGPIPE,
        signal.SIGCONT,
    )
    SIG_DFL, SIG_IGN = signal.SIG_DFL, signal.SIG_IGN

    def __init__(self) -> None:
        self.set: list[tuple[int, Any]] = []

    def signal(self, sig: int, handler: Any) -> None:
        self.set.append((sig, handler))


class FakeProcs:
    PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE = 36, 4

    def __init__(self, statuses: list[int] | None = None, tampered: bool = False) -> None:
        self.calls: list[str] = []
        self.statuses = list(statuses or [])  # each run's exit status, as waitpid gives it
        self.is_tampered = tampered

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)

        return record

    def wait_or_kill(self, pid: int, timeout: float) -> tuple[int, bool]:
        self.calls.append(f"wait_or_kill {pid} {timeout}")
        return (self.statuses.pop(0) if self.statuses else 0), False

    def tampered(self, watched: Any) -> bool:
        return self.is_tampered

    def start_time(self, pid: int) -> int:
        return 99

    def traits(self, pid: int) -> tuple[int]:
        return (pid,)


@pytest.fixture
def fake_os(monkeypatch: pytest.MonkeyPatch) -> FakeOS:
    fake = FakeOS()
    monkeypatch.setattr(server, "os", fake)
    monkeypatch.setattr(server, "signal", FakeSignals())
    monkeypatch.setattr(server, "gc", types.SimpleNamespace(freeze=lambda: None))
    return fake


@pytest.fixture
def made_sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[socket.socket]]:
    """server.serve's own socket (the harness's fd), closed after the test: a server never closes
    it, its process exits."""
    made: list[socket.socket] = []

    def make(*args: Any, **kwargs: Any) -> socket.socket:
        made.append(socket.socket(*args, **kwargs))
        return made[-1]

    fake = types.SimpleNamespace(
        socket=make, socketpair=socket.socketpair, AF_UNIX=socket.AF_UNIX, SOCK_STREAM=socket.SOCK_STREAM
    )
    monkeypatch.setattr(server, "socket", fake)
    yield made
    for sock in made:
        sock.close()


def harness_send(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """The harness's request: the framing server.recv_request reads, with its two fds on the head."""
    data = json.dumps(request).encode()
    socket.send_fds(sock, [server.HEADER.pack(len(data))], fds)
    sock.sendall(data)


def harness_read(sock: socket.socket) -> dict[str, Any]:
    (length,) = server.HEADER.unpack(server.recv_exact(sock, server.HEADER.size))
    return json.loads(server.recv_exact(sock, length))


# --- framing -----------------------------------------------------------------------------------------


def test_messages_are_a_length_then_json_and_a_request_brings_its_fds(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    server.send(a, {"ready": True, "names": ["x"]})
    assert harness_read(b) == {"ready": True, "names": ["x"]}
    r, w = os.pipe()
    try:
        harness_send(b, {"nonce": "n", "test": "t" * 100_000}, [r, w])
        request, fds = server.recv_request(a)
        assert request == {"nonce": "n", "test": "t" * 100_000} and len(fds) == 2
        for fd in fds:
            os.close(fd)
    finally:
        os.close(r)
        os.close(w)
    b.sendall(b"\x00\x00")
    b.close()
    with pytest.raises(EOFError):
        server.recv_exact(a, 8)  # cut short
    with pytest.raises(EOFError):
        server.recv_request(a)  # nothing more


def test_a_tests_key_is_its_support_and_its_test() -> None:
    assert server.test_key({"support": "s", "test": "t"}) == "s\x00t"
    assert server.test_key({}) == "\x00"


# --- what the server keeps of the tests it has seen -------------------------------------------------


def test_seen_digests_are_bounded_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "SEEN_MAX", 3)
    tests = server.Tests()
    for digest in "abcd":
        tests.saw(digest)
    assert list(tests.seen) == ["b", "c", "d"]


def test_a_test_seen_twice_is_compiled_once_for_the_runs_that_follow() -> None:
    env = execution.prepare(_load, "python")
    tests = server.Tests()
    server.remember_test(execution, env, tests, "def check(f):\n    assert f(1) == 2\ncheck(f)\n", "X = 1\n")
    compiled = tests.compiled[
        server.test_key({"support": "X = 1\n", "test": "def check(f):\n    assert f(1) == 2\ncheck(f)\n"})
    ]
    assert compiled.wanted == ("f",) and compiled.support is not None
    server.remember_test(execution, env, tests, "def check(f)\n", "")
    assert tests.compiled["\x00def check(f)\n"] is None  # each judge compiles it again and says why
    for i in range(257):
        server.remember_test(execution, env, tests, f"assert {i}\n", "")
    assert len(tests.compiled) == 256 and "\x00assert 256\n" in tests.compiled


def test_the_harness_library_is_compiled_once_and_few_are_kept() -> None:
    tests = server.Tests()
    server.remember_library(execution, tests, "def helper():\n    return 1\n")
    assert tests.libraries["def helper():\n    return 1\n"].bound == frozenset({"helper"})
    server.remember_library(execution, tests, "def broken(:\n")
    assert "def broken(:\n" not in tests.libraries
    for i in range(5):
        server.remember_library(execution, tests, f"L{i} = {i}\n")
    assert list(tests.libraries) == [f"L{i} = {i}\n" for i in range(1, 5)]


# --- forks ---------------------------------------------------------------------------------------------


def test_a_fork_waits_while_the_process_limit_is_full(fake_os: FakeOS) -> None:
    procs = FakeProcs()
    fake_os.forks = [-1, -1, 77]
    assert server.fork_when_room(procs) == 77
    assert fake_os.calls == ["fork"] * 3 and procs.calls == ["reap", "reap"]
    fake_os.forks = [-1]
    with pytest.raises(BlockingIOError):
        server.fork_when_room(procs, patience_s=-1.0)


def test_the_server_asks_the_zygote_for_a_candidate_and_reads_its_pid(
    fake_os: FakeOS, pair: tuple[socket.socket, socket.socket]
) -> None:
    server_end, zygote_end = pair
    zygote = object.__new__(server.Zygote)  # no fork: its two attributes, set by hand
    zygote.pid, zygote.sock = 200, server_end
    env = types.SimpleNamespace(plain=plaindata)
    r, w = os.pipe()
    try:
        assert zygote.ask_fork(env, r)
        message, fds = plaindata.receive(zygote_end, with_fds=1)
        assert message == {"op": "fork"} and len(fds) == 1
        os.close(fds[0])
    finally:
        os.close(r)
        os.close(w)
    plaindata.send(zygote_end, {"pid": 1234})
    assert zygote.forked(env) == 1234
    plaindata.send(zygote_end, {"pid": -5})
    assert zygote.forked(env) is None  # not a pid
    zygote.wake()
    assert zygote.alive()
    assert fake_os.calls == [f"kill 200 {signal.SIGCONT}", "waitpid 200"]
    zygote.pid = 404
    assert not zygote.alive()  # reaped already: gone
    zygote_end.close()
    assert zygote.forked(env) is None  # the zygote is gone
    assert not zygote.ask_fork(env, 0)


def test_the_zygote_forks_a_candidate_per_request_and_exits_with_the_server(
    fake_os: FakeOS, pair: tuple[socket.socket, socket.socket]
) -> None:
    server_end, zygote_end = pair
    runner = types.SimpleNamespace(procs=FakeProcs())
    env = types.SimpleNamespace(plain=plaindata)
    fake_os.forks = [555]
    plaindata.send(server_end, {"op": "fork"}, [0])
    server_end.shutdown(socket.SHUT_WR)  # the server's last request
    with pytest.raises(Exited) as exited:
        server.Zygote._serve(runner, env, zygote_end)
    assert exited.value.code == 0
    assert plaindata.receive(server_end)[0] == {"pid": 555}
    assert server.signal.set == [(signal.SIGCHLD, signal.SIG_IGN)]  # type: ignore[attr-defined]
    received = [c for c in fake_os.calls if c.startswith("close ")]
    assert len(received) == 1  # the candidate's fd, handed on and closed here
    os.close(int(received[0].split()[1]))


def test_a_forked_candidate_gets_its_own_session_and_becomes_the_candidate(
    fake_os: FakeOS, pair: tuple[socket.socket, socket.socket]
) -> None:
    server_end, zygote_end = pair
    became: list[int] = []

    def become_candidate(env: Any, fd: int) -> None:
        became.append(fd)
        raise Exited(0)

    runner = types.SimpleNamespace(procs=FakeProcs(), become_candidate=become_candidate)
    fake_os.forks = [0]  # the child's side of the fork
    plaindata.send(server_end, {"op": "fork"}, [0])
    with pytest.raises(Exited):
        server.Zygote._serve(runner, types.SimpleNamespace(plain=plaindata), zygote_end)
    assert "setsid" in fake_os.calls and len(became) == 1
    os.close(became[0])


def test_a_standby_forked_ahead_passes_on_its_note(fake_os: FakeOS, tmp_path: Path) -> None:
    """fork_standby's parent side: the pid, the standby's note read from its pipe, the go pipe."""
    note = {"nonce": "n1", "timeout_s": 3.0}
    pipes: list[tuple[int, int]] = []
    real_pipe = os.pipe

    def pipe() -> tuple[int, int]:
        pipes.append(real_pipe())
        return pipes[-1]

    def fork() -> int:  # the standby, as if it had taken a request and written its note
        os.write(pipes[0][1], json.dumps(note).encode() + b"\n")
        return 31

    fake_os.pipe = pipe  # type: ignore[attr-defined]
    fake_os.fork = fork  # type: ignore[method-assign]
    fake_os.close = os.close  # type: ignore[method-assign]
    runner: Any = types.SimpleNamespace(procs=FakeProcs())
    pid, got, go_w = server.fork_standby(runner, None, None, "", server.Tests(), 7, 5)  # type: ignore[arg-type]
    try:
        assert (pid, got) == (31, note) and go_w == pipes[1][1]
    finally:
        os.close(go_w)


# --- the standby judge --------------------------------------------------------------------------------


class Runner:
    """runner.py as server.standby uses it."""

    RESULT_FD, CALL_FD = 3, 4

    def __init__(self, fail: bool = False) -> None:
        self.execution = execution
        self.procs = FakeProcs()
        self.fail = fail
        self.judged: list[tuple[Any, ...]] = []
        self.reports: list[tuple[int, str, dict[str, Any]]] = []

    def judge_run(
        self, env: Any, request: Any, call_fd: int, workdir: str, out: int, compiled: Any, libraries: Any
    ) -> Any:
        self.judged.append((request["nonce"], call_fd, workdir, compiled))
        if self.fail:
            raise PermissionError("cannot enter the work dir")
        return {"status": "passed", "message": "all tests passed"}

    def report(self, fd: int, nonce: str, outcome: dict[str, Any]) -> None:
        self.reports.append((fd, nonce, outcome))


def standby(
    fake_os: FakeOS, tests: server.Tests, request: dict[str, Any], runner: Runner | None = None, go_fd: int = 9
) -> tuple[Runner, dict[str, Any] | None, int]:
    """server.standby on a request sent as the harness sends it: (runner, its note, its exit status)."""
    runner = runner or Runner()
    fake_os.calls.clear()
    fake_os.written.clear()
    fake_os.exits.clear()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    r, w = os.pipe()
    received: list[int] = []  # the copies of the request's two fds, closed here (by the kernel there)
    recv_request = server.recv_request

    def recv(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
        request, fds = recv_request(sock)
        received.extend(fds)
        return request, fds

    server.recv_request = recv  # type: ignore[assignment]
    try:
        if request:
            harness_send(ours, request, [r, w])
        ours.close()
        with pytest.raises(Exited):
            server.standby(runner, None, theirs, 8, "/work/run-1", tests, go_fd, 6)  # type: ignore[arg-type]
    finally:
        server.recv_request = recv_request  # type: ignore[assignment]
        theirs.close()
        for fd in [r, w, *received]:
            os.close(fd)
    notes = [json.loads(data) for fd, data in fake_os.written if fd == 8]
    return runner, (notes[0] if notes else None), fake_os.exits[0]


REQUEST = {"nonce": "abc", "timeout_s": 5.0, "test": "check(f)\n", "support": "X = 1\n", "limits": {"cpu_seconds": 5}}
DIGEST = hashlib.sha256(server.test_key(REQUEST).encode()).hexdigest()


def test_a_standby_judge_reports_the_run_and_notes_the_test_it_saw(fake_os: FakeOS) -> None:
    tests = server.Tests()
    runner, note, status = standby(fake_os, tests, REQUEST)
    assert status == 0
    assert note == {"nonce": "abc", "timeout_s": 5.0, "test": None, "support": "", "seen": DIGEST}
    assert runner.judged == [("abc", Runner.CALL_FD, "/work/run-1", None)]
    assert runner.reports == [(Runner.RESULT_FD, "abc", {"status": "passed", "message": "all tests passed"})]
    assert fake_os.calls[:2] == ["setsid", f"open {os.devnull}"]
    assert f"closerange {Runner.CALL_FD + 1} {1 << 16}" in fake_os.calls
    signals: Any = server.signal
    assert signals.set == [(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD)]


def test_a_test_seen_before_goes_to_the_server_to_compile_and_a_compiled_one_is_used(fake_os: FakeOS) -> None:
    tests = server.Tests()
    tests.saw(DIGEST)
    _, note, _ = standby(fake_os, tests, REQUEST)
    assert note is not None and (note["test"], note["support"]) == ("check(f)\n", "X = 1\n")
    tests.compiled[server.test_key(REQUEST)] = "compiled"
    runner, note, _ = standby(fake_os, tests, REQUEST, go_fd=-1)
    assert note is not None and note["test"] is None and runner.judged[0][3] == "compiled"


def test_the_harness_library_is_noted_and_sent_the_second_time(fake_os: FakeOS) -> None:
    library = "def lib():\n    return 1\n"
    request = {**REQUEST, "support": "X = 1\n" + execution.LIBRARY_MARK + library}
    tests = server.Tests()
    _, note, _ = standby(fake_os, tests, request)
    assert note is not None and note["library"] is None
    assert note["library_seen"] == "library:" + hashlib.sha256(library.encode()).hexdigest()
    tests.saw(note["library_seen"])
    _, note, _ = standby(fake_os, tests, request)
    assert note is not None and note["library"] == library


def test_a_standby_exits_without_running_when_the_harness_or_server_is_gone(fake_os: FakeOS) -> None:
    runner, note, status = standby(fake_os, server.Tests(), {})  # the harness closed its socket
    assert status == server.HARNESS_GONE and note is None and runner.judged == []
    fake_os.go = b""  # the server died before saying go
    runner, note, status = standby(fake_os, server.Tests(), REQUEST)
    assert status == server.HARNESS_GONE and note is not None and runner.judged == [] and runner.reports == []


def test_a_sandbox_set_up_that_fails_is_reported_as_an_error(fake_os: FakeOS) -> None:
    runner, _, status = standby(fake_os, server.Tests(), REQUEST, Runner(fail=True))
    assert status == 0
    assert runner.reports == [
        (
            Runner.RESULT_FD,
            "abc",
            {"status": "error", "message": "sandbox setup failed: PermissionError: cannot enter the work dir"},
        )
    ]


# --- the loop -------------------------------------------------------------------------------------------


class FakeZygote:
    def __init__(self, runner: Any, env: Any, harness_fd: int, alive: bool = True) -> None:
        self.pid = 200
        self.is_alive = alive
        self.woken = 0

    def ask_fork(self, env: Any, fd: int) -> bool:
        return True

    def forked(self, env: Any) -> int:
        return 300

    def wake(self) -> None:
        self.woken += 1

    def alive(self) -> bool:
        return self.is_alive


def serve(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, notes: list[Any], procs: FakeProcs, zygote_alive: bool = True
) -> list[dict[str, Any]]:
    """server.serve over a socket pair with a standby per note; what it sent the harness."""
    harness, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = types.SimpleNamespace(plain=plaindata, prelude_names=frozenset({"math"}))
    runner = types.SimpleNamespace(
        procs=procs, prepare=lambda mode: env, mode_arg=lambda: "python", execution=execution
    )
    monkeypatch.setattr(server, "Zygote", lambda *a: FakeZygote(*a, alive=zygote_alive))
    monkeypatch.setattr(server, "fork_standby", lambda *a: (100 + len(notes), notes.pop(0), -1))
    try:
        server.serve(ours.detach(), str(tmp_path), False, runner)  # type: ignore[arg-type]
        harness.setblocking(False)  # all it sent is here by now
        out = []
        while True:
            try:
                out.append(harness_read(harness))
            except (EOFError, BlockingIOError):
                return out
    finally:
        harness.close()


def test_the_loop_replies_for_each_run_and_ends_when_the_harness_is_gone(
    fake_os: FakeOS, made_sockets: list[socket.socket], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base = tmp_path / "base"
    base.mkdir()
    note = {"nonce": "n1", "timeout_s": 2.5, "test": None, "support": "", "seen": "d1"}
    procs = FakeProcs(statuses=[0, server.HARNESS_GONE << 8])  # the second standby: no request came
    sent = serve(monkeypatch, base, [note, None], procs)
    ready, started, done = sent
    assert ready == {"ready": True, "pid": 4321, "magic": ready["magic"], "names": ["math"]}
    assert started == {"started": 102, "nonce": "n1", "start_time": 99, "candidate": 300, "candidate_start": 99}
    assert done == {"exit_code": 0, "timed_out": False, "run_s": done["run_s"], "nonce": "n1", "retire": False}
    assert "wait_or_kill 102 2.5" in procs.calls and "wait_or_kill 101 60.0" in procs.calls
    assert procs.calls.count("kill_descendants") == 2 and procs.calls.count("wipe") == 2
    assert not base.exists()  # the harness's temp dir, removed once the harness is gone


def test_a_run_that_leaves_the_zygote_gone_retires_the_server(
    fake_os: FakeOS, made_sockets: list[socket.socket], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    note = {"nonce": "n1", "timeout_s": 2.5, "test": None, "support": "", "seen": "d1"}
    sent = serve(monkeypatch, tmp_path, [note], FakeProcs(), zygote_alive=False)
    assert [m.get("retire") for m in sent] == [None, None, True]
    sent = serve(monkeypatch, tmp_path, [dict(note)], FakeProcs(tampered=True))  # its limits were lowered
    assert sent[-1]["retire"] is True


def test_a_prelude_that_fails_is_the_servers_only_reply(
    pair: tuple[socket.socket, socket.socket], made_sockets: list[socket.socket]
) -> None:
    harness, ours = pair

    def prepare(mode: str) -> None:
        raise ImportError("numpy is missing")

    runner = types.SimpleNamespace(prepare=prepare, mode_arg=lambda: "python", procs=FakeProcs())
    server.serve(ours.detach(), "/nonexistent", False, runner)  # type: ignore[arg-type]
    assert harness_read(harness) == {"ready": False, "message": "prelude failed: ImportError: numpy is missing"}
