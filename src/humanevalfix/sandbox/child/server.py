"""The fork server's loop (runner.py --serve): a zygote, then a judge and a candidate per run.

The server imports the prelude once, forks the zygote (the candidates' template) before any
request, and for each run forks a judge from itself and has the zygote fork a candidate, both
ahead of the request and joined by a socket pair. It waits for the judge (killing its group at
the time limit), kills every process the run left behind (the zygote excepted, and woken: a
candidate may have stopped it), wipes the run's files and replies. A run after which the zygote
is gone retires the server (`retire` in the reply): a zygote forked again from here would hold
the tests the server has seen. So does one after which the server's or the zygote's limits or
priority changed (procs.traits): nothing here may raise them back. How the two processes share a
run: runner.py.

Standard library only: loaded by file path by runner.py, which hands itself over as `runner`
(its helpers: prepare, judge_run, become_candidate, report, procs, execution).
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import json
import os
import signal
import socket
import struct
import time
from types import ModuleType
from typing import Any, NoReturn

HEADER = struct.Struct("!Q")  # the harness's framing: a length, then that much JSON
HARNESS_GONE = 3  # a standby judge's exit status when the harness closed the socket
CACHE_LIMIT = 256 << 10  # tests (with their helpers) up to this size are compiled once and kept
SEEN_MAX = 4096  # digests of tests seen once, kept to know a test's second coming
ZYGOTE_PATIENCE_S = 5.0  # a zygote that takes longer to fork a candidate is taken for gone


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


class Zygote:
    """The candidates' template: forked from the server before any request, so before any test.
    It forks one candidate per run on the server's demand, each holding one end of a socket
    pair, and tells the server the new process's pid."""

    def __init__(self, runner: ModuleType, env: Any, harness_fd: int) -> None:
        server_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            server_end.close()
            os.close(harness_fd)
            self._serve(runner, env, zygote_end)
        zygote_end.close()
        self.pid = pid
        self.sock = server_end

    @staticmethod
    def _serve(runner: ModuleType, env: Any, sock: socket.socket) -> NoReturn:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # candidates are reaped by the kernel
        plain = env.plain
        while True:
            try:
                _message, fds = plain.receive(sock, with_fds=1)
            except BaseException:
                os._exit(0)
            if len(fds) != 1:
                os._exit(0)
            pid = fork_when_room(runner.procs)
            if pid == 0:
                sock.close()
                os.setsid()  # its own session and group: the harness can kill it by its group
                runner.become_candidate(env, fds[0])
            os.close(fds[0])
            try:
                plain.send(sock, {"pid": pid})
            except BaseException:
                os._exit(0)

    def ask_fork(self, env: Any, candidate_fd: int) -> bool:
        """Ask for a new candidate process holding `candidate_fd` (the zygote forks it while the
        server forks the next judge); False if the zygote is gone."""
        self.sock.settimeout(ZYGOTE_PATIENCE_S)
        try:
            env.plain.send(self.sock, {"op": "fork"}, [candidate_fd])
        except BaseException:
            return False
        return True

    def forked(self, env: Any) -> int | None:
        """The new candidate's pid, or None if the zygote is gone (or does not answer: a zygote
        that is alive answers in milliseconds)."""
        try:
            answer, _ = env.plain.receive(self.sock)
        except BaseException:
            return None
        pid = answer.get("pid")
        return pid if type(pid) is int and pid > 0 else None

    def wake(self) -> None:
        """SIGCONT: a candidate may have stopped it (none is left to do it again by now)."""
        try:
            os.kill(self.pid, signal.SIGCONT)
        except OSError:
            pass

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False


def standby(
    runner: ModuleType,
    env: Any,
    sock: socket.socket,
    note_fd: int,
    workdir: str,
    tests: Tests,
    go_fd: int,
    call_fd: int,
) -> NoReturn:
    """The judge of the next run, forked ahead of it: it takes the next request itself.

    Everything that does not depend on the request is done before it arrives, so a run costs
    neither a fork nor this set-up: a session of its own, signals, stdin. It stays non-dumpable
    (as the server is): the candidate cannot ptrace it or open its /proc/<pid>/fd or mem.
    """
    report_fd, nonce = -1, ""
    outcome: dict[str, Any]
    try:
        os.setsid()  # its own process group and session, killed as a whole
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
        key = test_key(request)
        # For the server: the run started (its clock), and the test, to compile it for later runs
        # when this is the second time it comes (a test seen once, as in scoring, is not worth it).
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        fresh = key not in tests.compiled and len(key) <= CACHE_LIMIT and digest in tests.seen
        note = {
            "nonce": nonce,
            "timeout_s": request["timeout_s"],
            "test": request.get("test", "") if fresh else None,
            "support": request.get("support", "") if fresh else "",
            "seen": digest,
        }
        # The harness's library (the same text for every task): compiled by the server the
        # second time it comes, for every judge forked after.
        library = runner.execution.split_support(str(request.get("support", "")))[1]
        if library and library not in tests.libraries and len(library) <= CACHE_LIMIT:
            library_digest = "library:" + hashlib.sha256(library.encode("utf-8", "surrogatepass")).hexdigest()
            note.update({"library_seen": library_digest, "library": library if library_digest in tests.seen else None})
        os.write(note_fd, json.dumps(note).encode() + b"\n")
        if go_fd >= 0 and os.read(go_fd, 1) != b"g":
            os._exit(HARNESS_GONE)  # the server is gone: nobody would clean up after this run
        out_fd, result_fd = fds
        report_fd = result_fd
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.dup2(result_fd, runner.RESULT_FD)
        os.dup2(call_fd, runner.CALL_FD)
        report_fd = runner.RESULT_FD
        os.closerange(runner.CALL_FD + 1, 1 << 16)  # the socket, the note pipe, the received copies
        # Not the OOM killer's first pick: it runs the dataset's test, the candidate its own code
        # (and the write costs a third of a millisecond on every run's path).
        runner.procs.enter(workdir, request["limits"], oom_first=False)
        outcome = runner.judge_run(env, request, runner.CALL_FD, workdir, 1, tests.compiled.get(key), tests.libraries)
        runner.procs.flush_std()
    except BaseException as exc:  # the sandbox's own set-up failed: not the candidate's doing
        outcome = {"status": "error", "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"}
    try:
        if report_fd >= 0:
            runner.report(report_fd, nonce, outcome)
            # EOF for the harness now, not after the kernel has torn down this address space.
            for fd in (report_fd, 1, 2):
                os.close(fd)
    finally:
        os._exit(0)


def test_key(request: dict[str, Any]) -> str:
    return f"{request.get('support', '')}\x00{request.get('test', '')}"


def clean_up(procs: ModuleType, me: int, workdir: str, keep: int) -> None:
    """After a run: nothing it started survives (the zygote `keep` excepted), none of its files are left."""
    procs.kill_descendants(me, reap_children=True, keep=keep)
    procs.reap()
    procs.wipe(workdir)
    try:
        os.rmdir(workdir)
    except OSError:
        pass


class Tests:
    """What the server keeps of the tests it has seen: compiled ones (test_key -> CompiledTest, None
    when it does not compile), and the digests of those seen once, most recent last."""

    def __init__(self) -> None:
        self.compiled: dict[str, Any] = {}
        self.seen: dict[str, None] = {}
        self.libraries: dict[str, Any] = {}  # library text -> execution.Library

    def saw(self, digest: str) -> None:
        self.seen[digest] = None
        if len(self.seen) > SEEN_MAX:
            del self.seen[next(iter(self.seen))]


def remember_test(execution: ModuleType, env: Any, tests: Tests, test: str, support: str) -> None:
    """Compile a test the judge saw for the second time, for the runs that follow (most recent last)."""
    key = test_key({"test": test, "support": support})
    try:
        tests.compiled[key] = execution.compile_test(env, test, support, tests.libraries)
    except Exception:
        tests.compiled[key] = None  # each judge compiles it again and reports why it cannot
    if len(tests.compiled) > 256:
        del tests.compiled[next(iter(tests.compiled))]


def remember_library(execution: ModuleType, tests: Tests, library: str) -> None:
    """Compile the harness's library the second time it comes (a few at most are kept)."""
    try:
        tests.libraries[library] = execution.compile_library(library)
    except Exception:
        return  # each judge compiles it again and reports why it cannot
    if len(tests.libraries) > 4:
        del tests.libraries[next(iter(tests.libraries))]


def fork_when_room(procs: ModuleType, patience_s: float = 5.0) -> int:
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


def fork_standby(
    runner: ModuleType, env: Any, sock: socket.socket, workdir: str, tests: Tests, me: int, call_fd: int
) -> tuple[int, dict[str, Any] | None, int]:
    """Fork the judge of the next run and wait until it has taken a request.

    (its pid, its note: None when it exited first, the write end of its go pipe or -1).
    """
    note_r, note_w = os.pipe()
    # Without a PID namespace a candidate can kill the server, and only the harness can then
    # clean up after it: the judge waits to run the test until its pid is on the way there.
    go_r, go_w = os.pipe() if me != 1 else (-1, -1)
    gc.freeze()  # what the server holds now is shared copy-on-write: keep gc off it
    pid = fork_when_room(runner.procs)
    if pid == 0:
        os.close(note_r)
        if go_w >= 0:
            os.close(go_w)
        standby(runner, env, sock, note_w, workdir, tests, go_r, call_fd)
    os.close(note_w)
    if go_r >= 0:
        os.close(go_r)
    # Wait for the standby to take a request (or to exit: the harness is gone).
    with os.fdopen(note_r, "rb") as notes:
        line = notes.readline()
    return pid, (json.loads(line) if line.strip() else None), go_w


def serve(sock_fd: int, base: str, private: bool, runner: ModuleType) -> None:
    """The fork server's loop. `private`: the sandbox is ours alone (bwrap), so its /tmp,
    /dev/shm and IPC objects can be wiped after every run."""
    sock = socket.socket(fileno=sock_fd)
    procs = runner.procs
    try:
        env = runner.prepare(runner.mode_arg())
    except BaseException as exc:
        send(sock, {"ready": False, "message": f"prelude failed: {type(exc).__name__}: {exc}"})
        return
    if os.getpid() != 1:
        procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1)  # orphans come back to us, to be killed after the run
    procs.prctl(procs.PR_SET_DUMPABLE, 0)  # a candidate cannot ptrace the server, the zygote or a judge
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    zygote = Zygote(runner, env, sock_fd)  # before any request: no test is ever in its memory
    # Read-only binds (fix: the user's project, possibly under /tmp) are not wiped; mounts do not
    # change after start (the candidate has no capabilities to mount).
    mounts = procs.mount_points() if private else frozenset()
    # What the harness needs to compile tests for the judges (sandbox/testcode.py): the bytecode's
    # version and the names a test never takes from the candidate.
    send(
        sock,
        {
            "ready": True,
            "pid": os.getpid(),
            "magic": importlib.util.MAGIC_NUMBER.hex(),
            "names": sorted(env.prelude_names),
        },
    )
    me = os.getpid()
    # What a candidate could change in the processes that outlive its run (procs.traits).
    watched = {pid: procs.traits(pid) for pid in (me, zygote.pid)}
    count = 0
    tests = Tests()
    while True:
        count += 1
        workdir = os.path.join(base, f"run-{count}")
        if os.stat(base).st_uid == os.getuid():  # else a root harness's bwrap made it (1777): no candidate's to change
            os.chmod(base, 0o700)
        os.mkdir(workdir, 0o700)
        judge_end, candidate_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        asked = zygote.ask_fork(env, candidate_end.fileno())
        candidate_end.close()  # in flight to the zygote now: the judge must not inherit it
        pid, note, go_w = fork_standby(runner, env, sock, workdir, tests, me, judge_end.fileno())
        judge_end.close()
        candidate_pid = zygote.forked(env) if asked else None
        status, timed_out, started = 0, False, time.monotonic()
        try:
            if note is not None:
                # The processes' pids, for a harness that must clean up after a server that died
                # (one a candidate killed: under the rlimits-only jail the server is killable).
                send(
                    sock,
                    {
                        "started": pid,
                        "nonce": note["nonce"],
                        "start_time": None if me == 1 else procs.start_time(pid),
                        "candidate": candidate_pid,
                        "candidate_start": None
                        if me == 1 or candidate_pid is None
                        else procs.start_time(candidate_pid),
                    },
                )
                if go_w >= 0:
                    os.write(go_w, b"g")
            # No note: the judge closed the pipe by exiting before any request came.
            status, timed_out = procs.wait_or_kill(pid, float(note["timeout_s"]) if note is not None else 60.0)
        finally:
            if go_w >= 0:
                os.close(go_w)
            clean_up(procs, me, workdir, zygote.pid)
            zygote.wake()
        if private:
            for shared in ("/tmp", "/dev/shm", "/dev/mqueue", base):  # POSIX queues: docker mounts one
                procs.wipe(shared, mounts)
            procs.remove_ipc()
        # A run whose candidate killed the zygote (or that had none) ends this server after its
        # reply: a zygote forked again from here would hold the tests seen so far. So does one
        # that lowered the limits or the priority of the server or the zygote: no process here
        # may raise them again, and every later run would inherit them.
        retire = candidate_pid is None or not zygote.alive() or procs.tampered(watched)
        # Keys in the user's keyrings would be seen by every later candidate; only a new
        # sandbox (a new user namespace) is sure to have none.
        retire = retire or (private and procs.keys_left())
        if note is None:
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == HARNESS_GONE:
                if not private:
                    try:
                        os.rmdir(base)  # the harness's temp dir, empty by now (it may be gone already)
                    except OSError:
                        pass
                return
            if retire:
                return
            continue  # the standby died before any request: fork another
        exit_code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        send(
            sock,
            {
                "exit_code": exit_code,
                "timed_out": timed_out,
                "run_s": round(time.monotonic() - started, 4),
                "nonce": note["nonce"],
                "retire": retire,
            },
        )
        if retire:
            return
        if note.get("library") is not None:
            remember_library(runner.execution, tests, str(note["library"]))
        elif note.get("library_seen") is not None:
            tests.saw(str(note["library_seen"]))
        if note.get("test") is not None:
            remember_test(runner.execution, env, tests, str(note["test"]), str(note.get("support", "")))
        else:
            tests.saw(str(note.get("seen")))


def connect(path: str) -> int:
    """The harness's socket at `path` (a container cannot be handed an fd): connected, as an fd."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock.detach()
