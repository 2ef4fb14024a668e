"""Process control inside the sandbox (sandbox/child/procs.py) in-process: confinement (prctl,
capabilities, rlimits, the work dir), the /proc parsing that finds what a run left behind, the
kill-and-reap loop, the wait at the time limit, and the clean-up of files, IPC objects and keys.

The in-process counterparts of what tests/test_sandbox_conformance.py, tests/test_judge_probes.py
and tests/test_cgroup.py check on real processes (a double-forked daemon is killed, a run out of
time is killed with its group, a read-only bound project survives the wipe, rlimits never exceed
the hard limit). Here nothing is signalled, forked, waited for or limited: procs' `os`, `resource`,
`select`, `time`, `sys`, `LIBC` and `open` are fakes that record what procs asked for, and /proc
files are text the test writes. Only `wipe` acts for real, on files under tmp_path.
"""

from __future__ import annotations

import io
import os
import signal
import types
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.sandbox.child import procs


class FakeOS:
    """procs' `os`: process-level calls are recorded; constants and the rest are the real `os`."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.environ: dict[str, str] = {}
        self.waitpids: list[Any] = []
        self.waitid_raises = False
        self.pidfds: dict[int, int] = {}
        self.kill_errors: dict[int, BaseException] = {}
        self.killpg_error: BaseException | None = None
        self.pid = 4242

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def getpid(self) -> int:
        return self.pid

    def chdir(self, path: str) -> None:
        self.calls.append(("chdir", path))

    def kill(self, pid: int, sig: int) -> None:
        self.calls.append(("kill", pid, sig))
        if pid in self.kill_errors:
            raise self.kill_errors[pid]

    def killpg(self, pid: int, sig: int) -> None:
        self.calls.append(("killpg", pid, sig))
        if self.killpg_error is not None:
            raise self.killpg_error

    def pidfd_open(self, pid: int) -> int:
        self.calls.append(("pidfd_open", pid))
        if pid not in self.pidfds:
            raise OSError("no pidfd")
        return self.pidfds[pid]

    def close(self, fd: int) -> None:
        self.calls.append(("close", fd))

    def waitpid(self, pid: int, options: int) -> Any:
        self.calls.append(("waitpid", pid, options))
        item = self.waitpids.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def waitid(self, idtype: int, ident: int, options: int) -> None:
        self.calls.append(("waitid", idtype, ident, options))
        if self.waitid_raises:
            raise ChildProcessError()


@pytest.fixture
def fake_os(monkeypatch: pytest.MonkeyPatch) -> FakeOS:
    fake = FakeOS()
    monkeypatch.setattr(procs, "os", fake)
    return fake


class FakeLibc:
    """procs.LIBC: every call recorded; prctl's result per option, capget's result and data."""

    def __init__(self, prctl_fail_from: int | None = None, capget: int = 0, caps: int = 0) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.prctl_fail_from = prctl_fail_from
        self.capget_result = capget
        self.caps = caps
        self.syscall_results: list[int] = []

    def prctl(self, option: int, value: int, *_rest: int) -> int:
        self.calls.append(("prctl", option, value))
        if option == procs.PR_CAPBSET_DROP and self.prctl_fail_from is not None and value >= self.prctl_fail_from:
            return -1
        return 0

    def capget(self, _header: Any, data: Any) -> int:
        self.calls.append(("capget",))
        data[0].effective = self.caps
        return self.capget_result

    def capset(self, _header: Any, data: Any) -> int:
        self.calls.append(("capset", [(d.effective, d.permitted, d.inheritable) for d in data]))
        return 0

    def semctl(self, *args: Any) -> int:
        self.calls.append(("semctl", *args))
        return 0

    def shmctl(self, *args: Any) -> int:
        self.calls.append(("shmctl", *args))
        return 0

    def msgctl(self, *args: Any) -> int:
        self.calls.append(("msgctl", *args))
        return 0


def _files(monkeypatch: pytest.MonkeyPatch, files: dict[str, str | bytes]) -> list[tuple[str, str]]:
    """procs' `open` reads these texts (path -> content); a path not here raises OSError.
    Writes are recorded in the list returned."""
    written: list[tuple[str, str]] = []

    class Writer(io.StringIO):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

        def close(self) -> None:
            written.append((self.path, self.getvalue()))
            super().close()

    def fake_open(path: str, mode: str = "r", **_kw: Any) -> Any:
        if "w" in mode:
            if path not in files:
                raise PermissionError(path)
            return Writer(path)
        if path not in files:
            raise FileNotFoundError(path)
        content = files[path]
        if "b" in mode:
            return io.BytesIO(content if isinstance(content, bytes) else content.encode())
        return io.StringIO(content if isinstance(content, str) else content.decode())

    monkeypatch.setattr(procs, "open", fake_open, raising=False)
    return written


def _stat(pid: int, ppid: int, state: str = "S", comm: str = "python", start: int = 1000) -> bytes:
    """/proc/PID/stat: pid (comm) state ppid ... field 22 (the 20th after the comm) the start time."""
    rest = [state, str(ppid)] + [str(i) for i in range(17)] + [str(start), "0", "0"]
    return f"{pid} ({comm}) {' '.join(rest)}\n".encode()


# ---------------------------------------------------------------------------------------------
# Confinement


def test_prctl_reports_whether_the_call_succeeded(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = types.SimpleNamespace(prctl=lambda *args: 0 if args[0] == procs.PR_SET_DUMPABLE else -1)
    monkeypatch.setattr(procs, "LIBC", libc)
    assert procs.prctl(procs.PR_SET_DUMPABLE, 0) is True
    assert procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1) is False


def test_drop_privileges_with_nothing_to_drop_sets_no_new_privs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = FakeLibc(capget=0, caps=0)
    monkeypatch.setattr(procs, "LIBC", libc)
    procs.drop_privileges()
    assert libc.calls == [("prctl", procs.PR_SET_NO_NEW_PRIVS, 1), ("capget",)]


def test_drop_privileges_drops_the_bounding_set_until_refused_then_clears_caps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = FakeLibc(prctl_fail_from=3, capget=0, caps=1)
    monkeypatch.setattr(procs, "LIBC", libc)
    procs.drop_privileges()
    drops = [c[2] for c in libc.calls if c[:2] == ("prctl", procs.PR_CAPBSET_DROP)]
    assert drops == [0, 1, 2, 3]  # stops at the first refusal
    assert libc.calls[-1] == ("capset", [(0, 0, 0), (0, 0, 0)])


def test_drop_privileges_when_capget_fails_drops_every_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = FakeLibc(capget=-1)
    monkeypatch.setattr(procs, "LIBC", libc)
    procs.drop_privileges()
    drops = [c[2] for c in libc.calls if c[:2] == ("prctl", procs.PR_CAPBSET_DROP)]
    assert drops == list(range(procs.CAP_LAST + 1))
    assert libc.calls[-1][0] == "capset"


class FakeResource:
    RLIM_INFINITY = -1
    RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC = 0, 9, 1, 7, 6

    def __init__(self, hard: dict[int, int]) -> None:
        self.hard = hard
        self.set: list[tuple[int, tuple[int, int]]] = []

    def getrlimit(self, which: int) -> tuple[int, int]:
        return (0, self.hard.get(which, self.RLIM_INFINITY))

    def setrlimit(self, which: int, value: tuple[int, int]) -> None:
        self.set.append((which, value))


def test_apply_limits_caps_at_the_hard_limit_and_skips_unknown_or_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    res = FakeResource({FakeResource.RLIMIT_NOFILE: 64, FakeResource.RLIMIT_AS: 1 << 40})
    monkeypatch.setattr(procs, "resource", res)
    procs.apply_limits(
        {"cpu_seconds": 5, "address_space": 1 << 30, "open_files": 1024, "file_size": 0, "bogus": 3, "processes": -1}
    )
    assert res.set == [
        (res.RLIMIT_CPU, (5, 5)),  # no hard limit: the value
        (res.RLIMIT_AS, (1 << 30, 1 << 30)),  # under the hard limit: the value
        (res.RLIMIT_NOFILE, (64, 64)),  # over the hard limit: the hard limit, never more
    ]


def test_traits_reads_limits_priority_policy_affinity_ioprio_oom_and_autogroup(
    monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS
) -> None:
    seen: list[tuple[int, int]] = []

    def prlimit(pid: int, which: int) -> tuple[int, int]:
        seen.append((pid, which))
        return (which, which + 1)

    monkeypatch.setattr(procs, "resource", types.SimpleNamespace(prlimit=prlimit))
    monkeypatch.setattr(fake_os, "getpriority", lambda which, pid: 7, raising=False)
    monkeypatch.setattr(fake_os, "sched_getscheduler", lambda pid: 0, raising=False)
    monkeypatch.setattr(fake_os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(procs, "_ioprio", lambda pid: 4)
    monkeypatch.setattr(procs, "_proc_text", lambda pid, name: f"{pid}:{name}")
    got = procs.traits(99)
    rlimits = tuple((w, w + 1) for w in procs.RLIMITS)
    assert got == (rlimits, 7, 0, frozenset({0, 1}), 4, "99:oom_score_adj", "99:autogroup")
    assert seen == [(99, w) for w in procs.RLIMITS]


def test_traits_of_a_gone_process_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def prlimit(pid: int, which: int) -> None:
        raise ProcessLookupError(pid)

    monkeypatch.setattr(procs, "resource", types.SimpleNamespace(prlimit=prlimit))
    assert procs.traits(99) is None


def test_tampered_compares_traits_now_with_those_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    now = {1: ("a",), 2: ("b",), 3: None}
    monkeypatch.setattr(procs, "traits", lambda pid: now[pid])
    assert procs.tampered({1: ("a",), 2: ("b",)}) is False
    assert procs.tampered({1: ("a",), 2: ("changed",)}) is True
    assert procs.tampered({3: ("was alive",)}) is True  # gone since: changed
    assert procs.tampered({}) is False


def test_flush_std_flushes_both_even_when_one_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    flushed: list[str] = []

    class Broken:
        def flush(self) -> None:
            flushed.append("out")
            raise ValueError("I/O operation on closed file")

    class Fine:
        def flush(self) -> None:
            flushed.append("err")

    monkeypatch.setattr(procs, "sys", types.SimpleNamespace(stdout=Broken(), stderr=Fine()))
    procs.flush_std()
    assert flushed == ["out", "err"]


@pytest.mark.parametrize(
    ("hardened", "oom_first", "expected"), [(False, True, [True]), (False, False, [False]), (True, True, [])]
)
def test_enter_moves_into_workdir_sets_env_limits_and_hardens(
    monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS, hardened: bool, oom_first: bool, expected: list[bool]
) -> None:
    limits: list[dict[str, int]] = []
    hardens: list[bool] = []
    monkeypatch.setattr(procs, "apply_limits", limits.append)
    monkeypatch.setattr(procs, "harden", hardens.append)
    procs.enter("/tmp/run", {"cpu_seconds": 3}, hardened=hardened, oom_first=oom_first)
    assert fake_os.calls == [("chdir", "/tmp/run")]
    assert fake_os.environ == {"TMPDIR": "/tmp/run", "HOME": "/tmp/run"}
    assert limits == [{"cpu_seconds": 3}]
    assert hardens == expected


def test_harden_drops_privileges_and_raises_oom_score(monkeypatch: pytest.MonkeyPatch) -> None:
    dropped: list[int] = []
    monkeypatch.setattr(procs, "drop_privileges", lambda: dropped.append(1))
    written = _files(monkeypatch, {"/proc/self/oom_score_adj": "0"})
    procs.harden()
    assert dropped == [1]
    assert written == [("/proc/self/oom_score_adj", "1000")]


def test_harden_without_oom_first_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    dropped: list[int] = []
    monkeypatch.setattr(procs, "drop_privileges", lambda: dropped.append(1))
    written = _files(monkeypatch, {"/proc/self/oom_score_adj": "0"})
    procs.harden(oom_first=False)
    assert dropped == [1] and written == []


def test_harden_tolerates_an_unwritable_oom_score(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "drop_privileges", lambda: None)
    written = _files(monkeypatch, {})  # open for writing raises PermissionError
    procs.harden()
    assert written == []


# ---------------------------------------------------------------------------------------------
# /proc


def _proc(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS, stats: dict[str, bytes]) -> None:
    names = ["self", "meminfo", *stats, "777"]  # 777: listed, but gone before its stat is read
    monkeypatch.setattr(fake_os, "scandir", lambda path: [types.SimpleNamespace(name=n) for n in names], raising=False)
    _files(monkeypatch, {f"/proc/{pid}/stat": data for pid, data in stats.items()})


def test_parent_map_groups_live_children_by_parent(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    _proc(
        monkeypatch,
        fake_os,
        {
            "1": _stat(1, 0),
            "10": _stat(10, 1),
            "11": _stat(11, 1, comm="evil) Z 1 (x"),  # a comm with ") " in it: parsed from the last ")"
            "12": _stat(12, 10),
            "13": _stat(13, 10, state="Z"),  # a zombie: dead already, left out
            "14": b"14 (short)",  # too few fields: left out
        },
    )
    assert procs.parent_map() == {0: [1], 1: [10, 11], 10: [12]}


def test_descendants_walks_the_tree_below_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "parent_map", lambda: {1: [10, 20], 10: [11], 11: [12], 20: [], 99: [100]})
    assert sorted(procs.descendants(1)) == [10, 11, 12, 20]
    assert procs.descendants(10) == [11, 12]
    assert procs.descendants(12) == []


def test_start_time_is_the_22nd_stat_field(monkeypatch: pytest.MonkeyPatch) -> None:
    _files(
        monkeypatch,
        {"/proc/5/stat": _stat(5, 1, comm="a) (b", start=123456), "/proc/6/stat": b"6 (x) S 1\n", "/proc/8/stat": b""},
    )
    assert procs.start_time(5) == 123456
    assert procs.start_time(6) is None  # too short
    assert procs.start_time(7) is None  # gone
    assert procs.start_time(8) is None


def test_reap_collects_until_none_is_left(fake_os: FakeOS) -> None:
    fake_os.waitpids = [(5, 0), (6, 9), (0, 0)]
    procs.reap()
    assert fake_os.calls == [("waitpid", -1, os.WNOHANG)] * 3
    fake_os.calls.clear()
    fake_os.waitpids = [(5, 0), ChildProcessError()]
    procs.reap()
    assert len(fake_os.calls) == 2


def test_has_children(fake_os: FakeOS) -> None:
    assert procs.has_children() is True
    assert fake_os.calls == [("waitid", os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)]
    fake_os.waitid_raises = True
    assert procs.has_children() is False


# ---------------------------------------------------------------------------------------------
# Killing what a run left behind


def test_kill_descendants_with_no_children_scans_nothing(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    fake_os.waitid_raises = True
    monkeypatch.setattr(procs, "descendants", lambda root: pytest.fail("scanned /proc"))
    assert procs.kill_descendants(fake_os.pid, reap_children=True) == 0


def test_kill_descendants_rescans_for_orphans_and_spares_keep(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    # First scan: the zygote (keep), a worker and a daemon's parent; the daemon turns up under root
    # only once its parent is killed (a subreaper gets the orphan), then nothing is left.
    scans = [[50, 60, 70], [50, 71], [50]]
    monkeypatch.setattr(procs, "descendants", lambda root: scans.pop(0))
    awaited: list[tuple[list[int], float]] = []
    monkeypatch.setattr(procs, "_await_exits", lambda fds, s: awaited.append((fds, s)))
    reaped: list[int] = []
    monkeypatch.setattr(procs, "reap", lambda: reaped.append(1))
    fake_os.pidfds = {60: 160, 71: 171}
    fake_os.kill_errors = {70: ProcessLookupError()}  # exited by itself meanwhile: not counted
    killed = procs.kill_descendants(1, reap_children=True, keep=50)
    kills = [c for c in fake_os.calls if c[0] == "kill"]
    assert kills == [("kill", 60, signal.SIGKILL), ("kill", 70, signal.SIGKILL), ("kill", 71, signal.SIGKILL)]
    assert killed == 2
    assert awaited == [([160], 0.001), ([171], 0.001)]
    assert reaped == [1, 1]
    assert scans == []


def test_kill_descendants_of_another_root_does_not_reap(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    scans = [[8], []]
    monkeypatch.setattr(procs, "descendants", lambda root: scans.pop(0))
    awaited: list[float] = []
    monkeypatch.setattr(procs, "_await_exits", lambda fds, s: awaited.append(s))
    monkeypatch.setattr(procs, "reap", lambda: pytest.fail("reaped another process's children"))
    fake_os.kill_errors = {8: PermissionError()}
    assert procs.kill_descendants(3, reap_children=False) == 0
    assert ("kill", 8, signal.SIGKILL) in fake_os.calls
    assert awaited == [0.005]


def test_await_exits_without_pidfds_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(procs, "time", types.SimpleNamespace(sleep=slept.append))
    procs._await_exits([], 0.005)
    assert slept == [0.005]


def test_await_exits_selects_until_all_ready_and_closes(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    readies = [[3], [4]]
    selects: list[list[int]] = []

    def select(rlist: list[int], _w: Any, _x: Any, timeout: float) -> tuple[list[int], list[int], list[int]]:
        selects.append(list(rlist))
        assert 0 < timeout <= 0.01
        return readies.pop(0), [], []

    monkeypatch.setattr(procs, "select", types.SimpleNamespace(select=select))
    procs._await_exits([3, 4], 1.0)
    assert selects == [[3, 4], [4]]
    assert [c for c in fake_os.calls if c[0] == "close"] == [("close", 3), ("close", 4)]


def test_await_exits_gives_up_at_its_deadline(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    clock = iter([0.0, 0.02])
    monkeypatch.setattr(procs, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))
    monkeypatch.setattr(procs, "select", types.SimpleNamespace(select=lambda *a: pytest.fail("selected")))
    procs._await_exits([9], 1.0)
    assert fake_os.calls == [("close", 9)]


def test_wait_or_kill_in_time(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    fake_os.pidfds = {30: 130}
    fake_os.waitpids = [(30, 256)]
    monkeypatch.setattr(procs, "select", types.SimpleNamespace(select=lambda r, w, x, t: (r, [], [])))
    assert procs.wait_or_kill(30, 2.0) == (256, False)
    assert not [c for c in fake_os.calls if c[0] in ("kill", "killpg")]
    assert ("close", 130) in fake_os.calls and fake_os.calls[-1] == ("waitpid", 30, 0)


def test_wait_or_kill_at_the_limit_kills_the_group(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    fake_os.pidfds = {30: 130}
    fake_os.waitpids = [ChildProcessError()]
    fake_os.killpg_error = ProcessLookupError()  # the group is gone already: the process still gets killed
    monkeypatch.setattr(procs, "select", types.SimpleNamespace(select=lambda r, w, x, t: ([], [], [])))
    assert procs.wait_or_kill(30, 0.5) == (0, True)
    kills = [c for c in fake_os.calls if c[0] in ("kill", "killpg")]
    assert kills == [("killpg", 30, signal.SIGKILL), ("kill", 30, signal.SIGKILL)]


def test_wait_or_kill_without_pidfd_polls(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    # Two polls: running; the third reaps it (WNOHANG returns its pid and status), and that status
    # is the one returned: a blocking wait after it would find no child.
    fake_os.waitpids = [(0, 0), (0, 0), (31, 9), ChildProcessError()]
    clock = iter([0.0, 0.1, 0.2, 0.3, 0.4])
    slept: list[float] = []
    monkeypatch.setattr(procs, "time", types.SimpleNamespace(monotonic=lambda: next(clock), sleep=slept.append))
    assert procs.wait_or_kill(31, 5.0) == (9, False)
    assert len(slept) == 2
    assert [c for c in fake_os.calls if c[0] == "waitpid"] == [("waitpid", 31, os.WNOHANG)] * 3
    assert not [c for c in fake_os.calls if c[0] in ("kill", "killpg")]


@pytest.mark.e2e
def test_wait_or_kill_without_pidfd_keeps_a_real_childs_exit_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real child that exits 3 and one killed by a signal, without pidfd_open: the polled path
    returns their statuses, as the pidfd path does (it returned 0, "exited cleanly", for both)."""

    def no_pidfd(pid: int) -> int:
        raise OSError("no pidfd_open here")

    monkeypatch.setattr(procs.os, "pidfd_open", no_pidfd)
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    status, timed_out = procs.wait_or_kill(pid, 10.0)
    assert (os.WIFEXITED(status), os.WEXITSTATUS(status), timed_out) == (True, 3, False)
    pid = os.fork()
    if pid == 0:  # SIGKILL: the test runner's own handlers (xdist's SIGTERM) must not run in the copy
        try:
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(0)
    status, timed_out = procs.wait_or_kill(pid, 10.0)
    assert (os.WIFSIGNALED(status), os.WTERMSIG(status), timed_out) == (True, signal.SIGKILL, False)


def test_wait_or_kill_without_pidfd_times_out(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    fake_os.waitpids = [(0, 0), (0, 0), (31, 9)]
    clock = iter([0.0, 0.5, 1.5, 1.6])
    monkeypatch.setattr(procs, "time", types.SimpleNamespace(monotonic=lambda: next(clock), sleep=lambda s: None))
    assert procs.wait_or_kill(31, 1.0) == (9, True)
    assert ("killpg", 31, signal.SIGKILL) in fake_os.calls and ("kill", 31, signal.SIGKILL) in fake_os.calls


# ---------------------------------------------------------------------------------------------
# Files, IPC, keys


def test_mount_points_reads_field_five_and_unescapes(monkeypatch: pytest.MonkeyPatch) -> None:
    mountinfo = (
        "22 1 0:21 / / rw,relatime - ext4 /dev/sda1 rw\n"
        "30 22 0:25 / /tmp/my\\040project ro - ext4 /dev/sda2 ro\n"
        "31 22 0:26 / /tmp/back\\134slash\\011tab rw - tmpfs tmpfs rw\n"
        "short line\n"
    )
    _files(monkeypatch, {"/proc/self/mountinfo": mountinfo})
    assert procs.mount_points() == frozenset({"/", "/tmp/my project", "/tmp/back\\slash\ttab"})
    _files(monkeypatch, {})
    assert procs.mount_points() == frozenset()


def test_unescape_leaves_other_backslashes() -> None:
    assert procs._unescape("a\\040b\\xyz\\12") == "a b\\xyz\\12"


def test_read_only(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS) -> None:
    flags = {"/ro": os.ST_RDONLY, "/rw": 0}

    def statvfs(path: str) -> Any:
        if path not in flags:
            raise FileNotFoundError(path)
        return types.SimpleNamespace(f_flag=flags[path])

    monkeypatch.setattr(fake_os, "statvfs", statvfs, raising=False)
    assert procs._read_only("/ro") is True
    assert procs._read_only("/rw") is False
    assert procs._read_only("/gone") is False


def test_wipe_removes_everything_but_kept_mounts(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "dir" / "sub" / "f").write_text("y")
    locked = tmp_path / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "g").write_text("z")
    (locked / "inner").chmod(0o500)  # the candidate took write permission away
    locked.chmod(0o500)
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    project = tmp_path / "mnt" / "project"  # a read-only bound project, and the dirs leading to it
    project.mkdir(parents=True)
    (project / "src.py").write_text("keep")
    (tmp_path / "mnt" / "stray").write_text("go")
    procs.wipe(str(tmp_path), keep=frozenset({str(project)}))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "mnt",
        "mnt/project",
        "mnt/project/src.py",
    ]


def test_wipe_leaves_read_only_or_missing_paths(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    monkeypatch.setattr(procs, "_read_only", lambda path: True)
    procs.wipe(str(tmp_path))
    assert (tmp_path / "f").exists()
    monkeypatch.setattr(procs, "_read_only", lambda path: False)
    procs.wipe(str(tmp_path / "missing"))  # no error
    assert (tmp_path / "f").exists()


def test_remove_ipc_removes_every_object_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = FakeLibc()
    monkeypatch.setattr(procs, "LIBC", libc)
    header = "       key      id perms\n"
    _files(
        monkeypatch,
        {
            "/proc/sysvipc/shm": header + "  1234   65536  600\n  1235   65537  600\n",
            "/proc/sysvipc/sem": header + "  99   7  600\n\n",
            # msg: unreadable, skipped
        },
    )
    procs.remove_ipc()
    assert libc.calls == [("shmctl", 65536, 0, None), ("shmctl", 65537, 0, None), ("semctl", 7, 0, 0)]


def _keys(monkeypatch: pytest.MonkeyPatch, ids: dict[int, int], rings: dict[int, list[int]], errno: int = 0) -> None:
    def keyctl(op: int, *args: Any) -> int:
        if op == procs.KEYCTL_GET_KEYRING_ID:
            return ids[args[0]]
        if op == procs.KEYCTL_GET_PERSISTENT:
            return ids[0]
        assert op == procs.KEYCTL_READ
        ring, buf, _size = args
        content = rings[ring]
        for i, key in enumerate(content):
            buf[i] = key
        return 4 * len(content) if content != [-1] else -1

    monkeypatch.setattr(procs, "SYS_KEYCTL", 250)
    monkeypatch.setattr(procs, "_keyctl", keyctl)
    monkeypatch.setattr(procs.ctypes, "get_errno", lambda: errno)


def test_keys_left(monkeypatch: pytest.MonkeyPatch) -> None:
    user, session, persistent = procs.KEY_SPEC_USER_KEYRING, procs.KEY_SPEC_USER_SESSION_KEYRING, 0
    # Empty rings, the session ring linking to the user ring: no key.
    _keys(monkeypatch, {user: 100, session: 101, persistent: -1}, {100: [], 101: [100]})
    assert procs.keys_left() is False
    # A key the candidate added to the user ring.
    _keys(monkeypatch, {user: 100, session: 101, persistent: 102}, {100: [555], 101: [100], 102: []})
    assert procs.keys_left() is True
    # A ring that cannot be read any more.
    _keys(monkeypatch, {user: 100, session: 101, persistent: -1}, {100: [-1], 101: []})
    assert procs.keys_left() is True


@pytest.mark.parametrize(("errno", "expected"), [(1, False), (38, False), (95, False), (13, True)])
def test_keys_left_without_keyrings(monkeypatch: pytest.MonkeyPatch, errno: int, expected: bool) -> None:
    _keys(monkeypatch, {procs.KEY_SPEC_USER_KEYRING: -1}, {}, errno=errno)
    assert procs.keys_left() is expected


def test_keys_left_on_an_unknown_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "SYS_KEYCTL", None)
    monkeypatch.setattr(procs, "_keyctl", lambda *a: pytest.fail("called keyctl"))
    assert procs.keys_left() is False


def test_proc_text_and_ioprio_read_this_process_and_say_none_for_a_gone_one() -> None:
    assert procs._proc_text(os.getpid(), "oom_score_adj") is not None
    assert procs._proc_text(2**22 + 7, "oom_score_adj") is None
    mine = procs._ioprio(os.getpid())
    assert mine is None or mine >= 0
    assert procs._ioprio(2**22 + 7) is None
