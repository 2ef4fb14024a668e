"""Runs inside the sandboxed child: prelude, candidate, tests; reports through a private pipe.

Two ways in:
- one-shot (`python -I child/runner.py`, the fresh-interpreter executors): one request on
  stdin, run in this process, which then exits;
- fork server (`python -I child/runner.py --serve FD BASE [--private]`, the warm executors;
  `--serve-at PATH` instead of `--serve FD` connects to the harness's socket at PATH, as in a
  Docker container): the prelude is imported once, then each request received on the socket is run by a
  forked child in a fresh directory under BASE. The server waits for the child (killing it at
  the time limit), kills every process the child left behind, removes its files and replies.

Either way a pass is reported only after the test's `check(...)` has returned, on a pipe the
harness created, tagged with a nonce the harness chose; exit status and stdout mean nothing.

Standard library only (plus RestrictedPython in restricted mode): this file is executed by
`python -I` with an empty environment, and inside bwrap it sees only itself and its helpers
(jail.RUNNER_FILES), loaded from its own directory by `load_helper`: procs.py (process control),
execution.py (one run), and through it honesty.py, rewriting.py, assertions.py, restricted.py.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

RESULT_FD = 3  # where the forked child keeps the result pipe
HEADER = struct.Struct("!Q")  # the fork server's framing: a length, then that much JSON
HARNESS_GONE = 3  # a standby child's exit status when the harness closed the socket


def load_helper(name: str) -> ModuleType:
    """`name`.py from this file's directory (-I keeps it off sys.path), loaded once per process."""
    module_name = f"hefix_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


procs = load_helper("procs")
execution = load_helper("execution")


def prepare(mode: str) -> Any:
    """The prelude and the helpers every run starts from (an execution.Prepared)."""
    return execution.prepare(load_helper, mode)


def report(result_fd: int, nonce: str, outcome: dict[str, Any]) -> None:
    data = (json.dumps({"nonce": nonce, **outcome}) + "\n").encode()
    os.write(result_fd, data)


def flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


# ---------------------------------------------------------------------------------------------
# One-shot: the fresh-interpreter executors


def run_once() -> None:
    payload = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    if os.getpid() != 1:
        procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1)  # orphans stay ours, so they can be killed below
    result_fd = int(payload["result_fd"])
    nonce = str(payload["nonce"])
    try:
        env = prepare(str(payload.get("mode", "python")))
    except BaseException as exc:  # the harness's own imports: an infrastructure failure
        report(result_fd, nonce, {"status": "error", "message": f"prelude failed: {type(exc).__name__}: {exc}"})
        os._exit(0)
    procs.enter(os.getcwd(), payload["limits"])
    code, test = payload["code"], payload["test"]
    del payload
    outcome = execution.timed_execute(env, code, test, None)
    flush_std()
    report(result_fd, nonce, outcome)
    procs.kill_descendants(os.getpid(), reap_children=True)
    # Skip interpreter shutdown: a candidate's atexit handlers or threads cannot change the verdict.
    os._exit(0)


# ---------------------------------------------------------------------------------------------
# Fork server: the warm executors


def send(sock: socket.socket, obj: dict[str, Any]) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(HEADER.pack(len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf.extend(chunk)
    return bytes(buf)


def recv_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head, fds, _flags, _addr = socket.recv_fds(sock, HEADER.size, 2)
    if not head:
        raise EOFError
    head += recv_exact(sock, HEADER.size - len(head))
    (length,) = HEADER.unpack(head)
    return json.loads(recv_exact(sock, length)), list(fds)


def standby(env: Any, sock: socket.socket, note_fd: int, workdir: str, tests: dict[str, Any], go_fd: int = -1) -> None:
    """A child forked ahead of its run: it takes the next request itself. Never returns.

    Everything that does not depend on the request is done before it arrives, so a run costs
    neither a fork nor this set-up: a session of its own, signals, stdin.
    """
    report_fd, nonce = -1, ""
    outcome: dict[str, Any]
    try:
        os.setsid()  # its own process group and session, killed as a whole
        procs.prctl(procs.PR_SET_DUMPABLE, 1)  # the server is not dumpable (so not traceable); the child may be
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        try:
            request, fds = recv_request(sock)
        except (EOFError, ConnectionError, OSError):
            os._exit(HARNESS_GONE)
        nonce = str(request["nonce"])
        test = str(request.get("test", ""))
        # For the server: the run started (its clock), and the test, to compile it for later runs.
        note = json.dumps({"nonce": nonce, "timeout_s": request["timeout_s"], "test": None if test in tests else test})
        os.write(note_fd, note.encode() + b"\n")
        if go_fd >= 0 and os.read(go_fd, 1) != b"g":
            os._exit(HARNESS_GONE)  # the server is gone: nobody would clean up after this run
        out_fd, result_fd = fds
        report_fd = result_fd
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.dup2(result_fd, RESULT_FD)
        report_fd = RESULT_FD
        os.closerange(RESULT_FD + 1, 1 << 16)  # the socket, the note pipe, the received copies
        procs.enter(workdir, request["limits"])
        outcome = execution.timed_execute(env, request["code"], test, tests.get(test))
        flush_std()
    except BaseException as exc:  # the sandbox's own set-up failed: not the candidate's doing
        outcome = {"status": "error", "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"}
    try:
        if report_fd >= 0:
            report(report_fd, nonce, outcome)
            # EOF for the harness now, not after the kernel has torn down this address space.
            for fd in (report_fd, 1, 2):
                os.close(fd)
    finally:
        os._exit(0)


def clean_up(me: int, workdir: str) -> None:
    """After a run: nothing it started survives, none of its files are left."""
    procs.kill_descendants(me, reap_children=True)
    procs.reap()
    procs.wipe(workdir)
    try:
        os.rmdir(workdir)
    except OSError:
        pass


def remember_test(env: Any, tests: dict[str, Any], test: str) -> None:
    """Compile a test the child saw for the first time, for the runs that follow (most recent last)."""
    try:
        tests[test] = execution.compile_test(env, test)
    except Exception:
        tests[test] = None  # each child compiles it again and reports why it cannot
    if len(tests) > 256:
        del tests[next(iter(tests))]


def fork_when_room(patience_s: float = 5.0) -> int:
    """os.fork(), waiting while the cgroup's process limit is full: what the last run left (a
    fork bomb) is killed, but each process frees its slot only once it has exited and been reaped."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return os.fork()
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            procs.reap()
            time.sleep(0.01)


def fork_standby(env: Any, sock: socket.socket, workdir: str, tests: dict[str, Any], me: int) -> tuple[int, dict[str, Any] | None, int]:
    """Fork the child of the next run and wait until it has taken a request.

    (its pid, its note: None when it exited first, the write end of its go pipe or -1).
    """
    note_r, note_w = os.pipe()
    # Without a PID namespace a candidate can kill the server, and only the harness can then
    # clean up after it: the child waits to run the code until its pid is on the way there.
    go_r, go_w = os.pipe() if me != 1 else (-1, -1)
    gc.freeze()  # what the server holds now is shared copy-on-write: keep gc off it
    pid = fork_when_room()
    if pid == 0:
        os.close(note_r)
        if go_w >= 0:
            os.close(go_w)
        standby(env, sock, note_w, workdir, tests, go_r)
    os.close(note_w)
    if go_r >= 0:
        os.close(go_r)
    # Wait for the standby to take a request (or to exit: the harness is gone).
    with os.fdopen(note_r, "rb") as notes:
        line = notes.readline()
    return pid, (json.loads(line) if line.strip() else None), go_w


def serve(sock_fd: int, base: str, private: bool) -> None:
    """The fork server's loop. `private`: the sandbox is ours alone (bwrap), so its /tmp,
    /dev/shm and IPC objects can be wiped after every run."""
    sock = socket.socket(fileno=sock_fd)
    mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "python"
    try:
        env = prepare(mode)
    except BaseException as exc:
        send(sock, {"ready": False, "message": f"prelude failed: {type(exc).__name__}: {exc}"})
        return
    if os.getpid() != 1:
        procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1)  # orphans come back to us, to be killed after the run
    procs.prctl(procs.PR_SET_DUMPABLE, 0)  # a candidate cannot ptrace the server to tamper with later runs
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    # Read-only binds (fix: the user's project, possibly under /tmp) are not wiped; mounts do not
    # change after start (the candidate has no capabilities to mount).
    mounts = procs.mount_points() if private else frozenset()
    send(sock, {"ready": True, "pid": os.getpid()})
    me = os.getpid()
    count = 0
    tests: dict[str, Any] = {}  # test -> execution.CompiledTest (None: it does not compile)
    while True:
        count += 1
        workdir = os.path.join(base, f"run-{count}")
        os.chmod(base, 0o700)
        os.mkdir(workdir, 0o700)
        pid, note, go_w = fork_standby(env, sock, workdir, tests, me)
        status, timed_out, started = 0, False, time.monotonic()
        try:
            if note is not None:
                # The child's pid, for a harness that must clean up after a server that died (one
                # a candidate killed: under the rlimits-only jail the server is killable).
                send(sock, {"started": pid, "nonce": note["nonce"], "start_time": None if me == 1 else procs.start_time(pid)})
                if go_w >= 0:
                    os.write(go_w, b"g")
            # No note: the child closed the pipe by exiting before any request came.
            status, timed_out = procs.wait_or_kill(pid, float(note["timeout_s"]) if note is not None else 60.0)
        finally:
            if go_w >= 0:
                os.close(go_w)
            clean_up(me, workdir)
        if private:
            for shared in ("/tmp", "/dev/shm", "/dev/mqueue", base):  # POSIX queues: docker mounts one
                procs.wipe(shared, mounts)
            procs.remove_ipc()
        if note is None:
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == HARNESS_GONE:
                if not private:
                    try:
                        os.rmdir(base)  # the harness's temp dir, empty by now (it may be gone already)
                    except OSError:
                        pass
                return
            continue  # the standby died before any request: fork another
        exit_code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        send(sock, {"exit_code": exit_code, "timed_out": timed_out, "run_s": round(time.monotonic() - started, 4), "nonce": note["nonce"]})
        if note.get("test") is not None and note["test"] not in tests:
            remember_test(env, tests, note["test"])


def connect(path: str) -> int:
    """The harness's socket at `path` (a container cannot be handed an fd): connected, as an fd."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock.detach()


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] in ("--serve", "--serve-at"):
        fd = int(sys.argv[2]) if sys.argv[1] == "--serve" else connect(sys.argv[2])
        serve(fd, sys.argv[3], "--private" in sys.argv)
        os._exit(0)
    run_once()


if __name__ == "__main__":
    main()
