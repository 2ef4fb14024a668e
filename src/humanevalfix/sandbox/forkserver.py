"""The warm executor: one fork server per executor (so per worker), a fork per run.

The server (child/runner.py --serve) starts once inside the executor's jail, imports the
prelude (numpy included), forks the candidates' template (the zygote) and waits on a unix
socket. For each run the harness creates two pipes, the run's stdout+stderr and the result pipe,
and passes their write ends to the server with the request (SCM_RIGHTS). Two processes take the
run, forked ahead of it: the judge (from the server: the test, the result pipe) and the candidate
(from the zygote: the model's code, stdout+stderr and a socket to the judge, nothing else); both
enter a fresh work dir, set their rlimits and drop their capabilities. The server waits for the
judge (killing its process group at the time limit), kills whatever the run left behind, wipes
its files and replies; a reply that says `retire` (the candidate killed the zygote, or lowered
the limits or priority of a process that outlives it) ends that server, and the next run starts a
new one.

The isolation is the jail's, as for the fresh-interpreter path; under bwrap and unshare the
server is the init of its PID namespace, so nothing the candidate runs can signal it. The
verdict comes the same way: from the result pipe, tagged with the run's nonce. If the server
dies (killed by a candidate under the rlimits-only jail, or crashed) the run fails and the next
run starts a new server; if it stops answering it is killed at the time limit plus a grace.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field, replace
from typing import IO, Any

from humanevalfix.sandbox.cgroup import Group
from humanevalfix.sandbox.child.procs import kill_descendants, start_time
from humanevalfix.sandbox.child.runner import HEADER
from humanevalfix.sandbox.executor import (
    ExecResult,
    JailedExecutor,
    Limits,
    OutputSink,
    child_env,
    drain,
    exec_result,
    format_output,
    kill_group,
    remove_tree,
    verdict,
    work_dir,
)
from humanevalfix.sandbox.jail import FS, JAIL_WORK
from humanevalfix.sandbox.testcode import CompiledTests, default_directory

START_TIMEOUT_S = 60.0  # a cold start on a busy machine: interpreter, numpy, bwrap
GRACE_S = 3.0  # beyond the time limit, before the harness gives up on the server itself


@dataclass
class Server:
    """One running server; stopped by close(), a restart, or the executor's finalizer."""

    proc: subprocess.Popen[bytes]
    sock: socket.socket
    stderr: IO[bytes]
    base: str | None  # the host work dir (not under bwrap)
    buffer: bytearray = field(default_factory=bytearray)
    dead: bool = False
    child: int | None = None  # the pid of the run in progress (meaningful without a PID namespace)
    child_start: int | None = None  # its start time, from /proc
    candidate: int | None = None  # the run's candidate process, and its start time
    candidate_start: int | None = None
    nonce: str = ""  # of the run in progress: the server's messages carry it
    group: Group | None = None  # the server's cgroup (its process limit), removed after it

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def stop(self) -> None:
        self.dead = True
        try:
            self.sock.close()  # EOF: the server exits on its own...
        except OSError:
            pass
        if self.base is not None:  # no PID namespace of its own: it must kill what its runs left
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        kill_group(self.proc.pid)  # ...and whatever is left of its sandbox goes with it
        self.proc.wait()
        if self.group is not None:
            self.group.remove()  # kills what is still in it (a daemon of the rlimits-only jail)
        self.stderr.close()
        if self.base is not None:
            remove_tree(self.base)

    def stderr_tail(self) -> str:
        try:
            self.stderr.seek(0)
            lines = self.stderr.read().decode("utf-8", errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1] if lines else ""

    def pump(self) -> bool:
        """Read what the socket has into `buffer` (for `drain`); False at EOF."""
        try:
            self.sock.setblocking(False)
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            chunk = b""
        finally:
            try:
                self.sock.setblocking(True)
            except OSError:
                pass
        if not chunk:
            self.dead = True
            return False
        self.buffer.extend(chunk)
        return True

    def take_message(self) -> dict[str, Any] | None:
        """A complete reply from `buffer`, if one has arrived ("started" notes are kept aside)."""
        while len(self.buffer) >= HEADER.size:
            (length,) = HEADER.unpack(self.buffer[: HEADER.size])
            if len(self.buffer) < HEADER.size + length:
                return None
            data = bytes(self.buffer[HEADER.size : HEADER.size + length])
            del self.buffer[: HEADER.size + length]
            message = json.loads(data)
            if "nonce" in message and message["nonce"] != self.nonce:
                continue  # the reply to a run the harness already returned (see _run)
            if "started" in message:
                self.child = int(message["started"])
                self.child_start = message.get("start_time")
                self.candidate = message.get("candidate")
                self.candidate_start = message.get("candidate_start")
                continue
            return message
        return None

    def read_message(self, deadline: float) -> dict[str, Any] | None:
        """Block until a reply, EOF (None) or the deadline (None)."""
        while True:
            message = self.take_message()
            if message is not None:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except (TimeoutError, OSError):
                return None
            if not chunk:
                self.dead = True
                return None
            self.buffer.extend(chunk)


def kill_tree(pid: int, started: int | None) -> None:
    """SIGKILL `pid` (if it is still the process that started at `started`), its process group
    and its descendants (found through /proc)."""
    if started is None or start_time(pid) != started:
        return  # gone, or the pid now belongs to someone else
    try:
        os.kill(pid, signal.SIGSTOP)  # no more forks while its descendants are collected
    except (ProcessLookupError, PermissionError):
        return
    kill_descendants(pid, reap_children=False)
    kill_group(pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class ForkServerExecutor(JailedExecutor):
    """Same verdicts and isolation as SubprocessExecutor, without an interpreter start per run."""

    warm = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # JailedExecutor's arguments
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._server: Server | None = None
        self._finalizer: weakref.finalize | None = None
        self.starts = 0  # how many servers were started (a restart after a death counts)
        self._closed = False
        self._ready = False  # the current server said it is ready
        self._testcode: CompiledTests | None = None  # compiles tests for the current server's judges

    # -- server lifecycle
    def _spawn(self) -> Server | str:
        """Start a server process without waiting for it; why not, as a string, if it failed.

        Called from a thread that outlives the server: bwrap's --die-with-parent follows the
        thread that started it, not the process."""
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        base = None if self.jail.level == "bwrap" else work_dir(self.jail, "hefix-fork-")
        argv = [
            self.python,
            "-I",
            "-B",
            self.jail.runner,
            "--serve",
            str(child.fileno()),
            base or JAIL_WORK,
            "--mode",
            self.mode,
        ]
        if self.jail.level == "bwrap":
            argv.append("--private")
        stderr = tempfile.TemporaryFile()
        group: Group | None = None
        try:
            group = self.cgroups.create() if self.cgroups is not None else None
            command = self.jail.wrap(argv, as_pid_1=True)
            proc = subprocess.Popen(
                group.wrap(command) if group is not None else command,
                cwd=base or "/",
                env=child_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                pass_fds=(child.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            parent.close()
            stderr.close()
            if base is not None:
                remove_tree(base)
            if group is not None:
                group.remove()
            return f"could not start the fork server: {exc}"
        finally:
            child.close()
        return self._adopt(Server(proc, parent, stderr, base, group=group))

    def _adopt(self, server: Server) -> Server:
        """`server`, just started, becomes this executor's (stopped with it, or at exit)."""
        self.starts += 1
        self._server = server
        self._finalizer = weakref.finalize(self, server.stop)
        self._ready = False
        self._testcode = None
        return server

    def _await_ready(self, server: Server) -> str | None:
        """None once the server says it is ready, else why not (and the server is stopped)."""
        hello = server.read_message(time.monotonic() + START_TIMEOUT_S)
        if not hello or not hello.get("ready"):
            why = (hello or {}).get("message") or server.stderr_tail() or "it did not answer"
            self._stop_server()
            return f"the fork server did not start ({self.jail.level}): {why}"
        self._ready = True
        # Kept on disk only where candidates cannot write the host's files (testcode.py).
        self._testcode = CompiledTests.from_hello(hello, default_directory() if FS in self.guarantees else None)
        return None

    def _start(self) -> str | None:
        """Start a server; None when it is ready, else why not."""
        server = self._spawn()
        return server if isinstance(server, str) else self._await_ready(server)

    def prestart(self) -> None:
        """Start the server now without waiting for it, so its start-up overlaps whatever comes
        before the first run (a first model call, say); that run waits for it to be ready."""
        with self._lock:
            if self._server is None and not self._closed:
                self._spawn()  # a failure here is met again, and reported, by the first run

    def _stop_server(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # runs server.stop() once
        self._finalizer = None
        self._server = None

    # -- runs
    def run(self, code: str, test: str, support: str = "", timeout_s: float | None = None) -> ExecResult:
        limits = self.limits if timeout_s is None else replace(self.limits, timeout_s=timeout_s)
        with self._lock:
            for _attempt in (0, 1):
                if self._server is not None and not self._ready and self._server.alive():
                    problem = self._await_ready(self._server)  # prestarted
                    if problem is not None:
                        return ExecResult("error", problem)
                if self._server is None or not self._server.alive():
                    self._stop_server()
                    problem = self._start()
                    if problem is not None:
                        return ExecResult("error", problem)
                result = self._run(code, test, support, limits)
                if result is not None:
                    return result
                self._stop_server()  # the request could not be sent: a dead server; once more
            return ExecResult("error", "the fork server died twice before it could take the code")

    def _run(self, code: str, test: str, support: str, limits: Limits) -> ExecResult | None:
        server = self._server
        assert server is not None
        nonce = secrets.token_hex(16)
        fields = {
            "code": code,
            "test": test,
            "support": support,
            "nonce": nonce,
            "limits": limits.rlimits(),
            "timeout_s": limits.timeout_s,
        }
        compiled = self._testcode.for_run(test, support) if self._testcode is not None else None
        request = json.dumps(fields if compiled is None else {**fields, "compiled": compiled}).encode()
        out_r, out_w = os.pipe()
        result_r, result_w = os.pipe()
        server.child = server.child_start = server.candidate = server.candidate_start = None
        server.nonce = nonce
        start = time.monotonic()
        try:
            try:
                socket.send_fds(server.sock, [HEADER.pack(len(request))], [out_w, result_w])
                server.sock.sendall(request)
            except OSError:
                server.dead = True
                return None
            finally:
                os.close(out_w)
                os.close(result_w)
            sink = OutputSink()
            deadline = start + limits.timeout_s + GRACE_S
            reply: dict[str, Any] | None = None

            def done(_open_fds: set[int]) -> bool:
                # The server's reply, not the pipes' EOF, ends a run: it may say `retire`, and it
                # comes once the run's processes are gone (the candidate holds stdout till then).
                nonlocal reply
                reply = reply or server.take_message()
                return reply is not None or server.dead

            # The run's pipes and the server's socket, until the run is over.
            gave_up = drain(
                sink, {out_r: "out", result_r: "result", server.sock.fileno(): server.pump}, deadline, stop=done
            )
            if reply is None and not server.dead and not gave_up:
                reply = server.read_message(deadline)
        finally:
            os.close(out_r)
            os.close(result_r)
        duration = time.monotonic() - start
        if reply is None:
            # No answer: the server died (a candidate killed it under the rlimits-only jail) or
            # hung. Either way it is replaced before the next run; without a PID namespace to take
            # them along, the child and what it started are killed here.
            if self.jail.level == "none":
                for pid, started in ((server.child, server.child_start), (server.candidate, server.candidate_start)):
                    if pid is not None:
                        kill_tree(pid, started)
            self._stop_server()
            status, message = verdict(bytes(sink.result), nonce, None)
            if status != "passed":
                if duration >= limits.timeout_s:
                    status, message = "timeout", f"timed out after {limits.timeout_s:g}s (an infinite loop?)"
                else:
                    message = "the sandbox's server process died while the code ran (did the code kill its parent?)"
            return ExecResult(status, message, format_output(bytes(sink.out), sink.truncated), round(duration, 4), None)
        if "error" in reply:
            self._stop_server()
            return ExecResult("error", str(reply["error"]), "", round(duration, 4), None)
        if reply.get("retire"):
            self._stop_server()  # its zygote is gone: the next run starts a new server
        return exec_result(
            sink, nonce, int(reply["exit_code"]), duration, bool(reply.get("timed_out")), limits.timeout_s
        )

    def close(self) -> None:
        with self._lock:
            self._closed = True  # a prestart still waiting for the lock must not start a server now
            self._stop_server()
        super().close()
