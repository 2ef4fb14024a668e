"""Process control for the sandbox: confinement before candidate code, and clean-up after it.

Pure functions of /proc, the C library and the file system, so that both sides use them: the
child (runner.py loads this file from its own directory) confines itself and, as a fork server,
cleans up after every run; the harness (sandbox/executor.py, sandbox/forkserver.py) imports it
as `humanevalfix.sandbox.child.procs` to kill what a run left behind when the child cannot.

Standard library only: inside bwrap this file sees nothing else.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import resource
import select
import shutil
import signal
import sys
import time
from typing import Any

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
CAP_LAST = 63

LIBC = ctypes.CDLL(None, use_errno=True)  # the C library already loaded into this process


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


# ---------------------------------------------------------------------------------------------
# Confinement: the child, before any candidate code runs


def prctl(option: int, value: int) -> bool:
    return LIBC.prctl(option, value, 0, 0, 0) == 0


def drop_privileges() -> None:
    """No capabilities, now or after an exec, and no way to gain any (setuid binaries, sudo)."""
    LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    header = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    current = (CapData * 2)()
    if LIBC.capget(ctypes.byref(header), current) == 0 and not any(d.effective or d.permitted for d in current):
        return  # nothing to drop (bwrap dropped everything already)
    for cap in range(CAP_LAST + 1):  # the bounding set: what a root exec would get back
        if LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # no CAP_SETPCAP, or past the last capability
    LIBC.capset(ctypes.byref(header), (CapData * 2)())


def apply_limits(limits: dict[str, int]) -> None:
    """rlimits the child sets on itself before any candidate code runs."""
    table = {
        "cpu_seconds": resource.RLIMIT_CPU,
        "address_space": resource.RLIMIT_AS,
        "file_size": resource.RLIMIT_FSIZE,
        "open_files": resource.RLIMIT_NOFILE,
        "processes": resource.RLIMIT_NPROC,
    }
    for name, value in limits.items():
        which = table.get(name)
        if which is None or value <= 0:
            continue
        _soft, hard = resource.getrlimit(which)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (cap, cap))


RLIMITS = tuple(sorted({getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")}))


def _proc_text(pid: int, name: str) -> str | None:
    """/proc/<pid>/<name>, or None where this kernel has no such file (or it cannot be read)."""
    try:
        with open(f"/proc/{pid}/{name}", encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


# ioprio_get(2) by architecture (no wrapper in the standard library); elsewhere it is not watched.
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}


def _ioprio(pid: int) -> int | None:
    number = _IOPRIO_GET.get(os.uname().machine)
    if number is None:
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        value = libc.syscall(number, 1, pid)  # IOPRIO_WHO_PROCESS
    except (OSError, AttributeError):
        return None
    return int(value) if value >= 0 else None


def traits(pid: int) -> tuple[Any, ...] | None:
    """What a process hands down to every process it forks and what another process of the
    same user may change without any privilege: its rlimits (prlimit), nice value, scheduling
    policy, CPU affinity, I/O priority, OOM score adjustment and autogroup nice (the last two
    through /proc, whose files a candidate of the same host uid may write). None when it cannot be
    read (gone).

    A candidate runs as the same user as the server, the zygote and the next run's judge, so it
    can lower their limits or priority, and every later run would inherit them: the server
    compares these after each run (`tampered`) and retires when they changed."""
    try:
        limits = tuple(resource.prlimit(pid, which) for which in RLIMITS)
        return (
            limits,
            os.getpriority(os.PRIO_PROCESS, pid),
            os.sched_getscheduler(pid),
            frozenset(os.sched_getaffinity(pid)),
            _ioprio(pid),
            _proc_text(pid, "oom_score_adj"),
            _proc_text(pid, "autogroup"),
        )
    except OSError:
        return None


def tampered(expected: dict[int, tuple[Any, ...] | None]) -> bool:
    """Whether any of these processes (pid -> traits at their start) has other traits now."""
    return any(traits(pid) != before for pid, before in expected.items())


def flush_std() -> None:
    """Flush stdout and stderr, whatever state the code left them in."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def enter(workdir: str, limits: dict[str, int], hardened: bool = False, oom_first: bool = True) -> None:
    """Last steps before a run's code: its own dir, its limits, no privileges (`hardened`: the
    process called harden() already; `oom_first`: as harden's)."""
    os.chdir(workdir)
    os.environ["TMPDIR"] = workdir  # tempfile & co. write into the work dir
    os.environ["HOME"] = workdir
    apply_limits(limits)
    if not hardened:
        harden(oom_first)


def harden(oom_first: bool = True) -> None:
    """No privileges, and (`oom_first`) first for the OOM killer: what a process does before
    candidate code whatever the run (a candidate's process does it while it waits for its code)."""
    drop_privileges()
    if not oom_first:
        return
    try:
        # The first the OOM killer takes, at the executor's cgroup memory limit or the machine's:
        # the candidate, not its server or the harness (raising the score needs no privilege).
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# Processes: what a run started, found through /proc


def parent_map() -> dict[int, list[int]]:
    """ppid -> live child pids, from /proc (zombies left out: they are dead already)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) < 2 or fields[0] == b"Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def descendants(root: int) -> list[int]:
    tree = parent_map()
    found: list[int] = []
    stack = list(tree.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, ()))
    return found


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot), to tell it from a later process with its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return int(data[data.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def reap() -> None:
    """Collect every exited child (only for a process whose children are all ours to reap)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def has_children() -> bool:
    """Whether this process has any child, alive or not yet reaped.

    For a subreaper (or a PID namespace's init) "no children" means no descendants at all: a
    live descendant whose parent died would have been handed to us.
    """
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def kill_descendants(root: int, *, reap_children: bool, keep: int | None = None) -> int:
    """SIGKILL every process below `root` (but `keep`, whose descendants go too), until none is
    left; returns how many were killed.

    Orphans of killed processes come back under `root` when it is a subreaper or a PID
    namespace's init, so repeating the scan also catches double-forked, setsid'ed daemons.
    """
    killed = 0
    if keep is None and reap_children and root == os.getpid() and not has_children():
        return 0  # the common case, and no /proc scan: nothing outlived the run
    for _ in range(100):
        found = [pid for pid in descendants(root) if pid != keep]
        if not found:
            break
        pidfds = []
        for pid in found:
            try:
                pidfds.append(os.pidfd_open(pid))
            except (AttributeError, OSError):
                pass
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        _await_exits(pidfds, 0.001 if reap_children else 0.005)
        if reap_children:
            reap()
    return killed


def _await_exits(pidfds: list[int], fallback_s: float) -> None:
    """Until the killed processes have exited (each pidfd turns readable), a moment at most: the
    scan that follows then finds the orphans they left, with no fixed sleep per run. Without
    pidfds (Linux before 5.3), the sleep."""
    if not pidfds:
        time.sleep(fallback_s)
        return
    deadline = time.monotonic() + 0.01  # then the scan again, which kills whatever is left
    try:
        waiting = list(pidfds)
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(waiting, [], [], left)
            waiting = [fd for fd in waiting if fd not in ready]
    finally:
        for fd in pidfds:
            os.close(fd)


def _poll_exit(pid: int, timeout: float) -> int | None:
    """Without a pidfd (kernels before 5.3): the wait status the poll that reaps `pid` got; None at the limit."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 0  # reaped elsewhere: as the blocking wait below reads it
        if done or time.monotonic() >= deadline:
            return status if done else None
        time.sleep(0.002)


def wait_or_kill(pid: int, timeout: float) -> tuple[int, bool]:
    """Wait for `pid` up to `timeout`; kill its group at the limit. (wait status, timed out)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    if pidfd >= 0:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        os.close(pidfd)
        timed_out = not ready
    else:
        status = _poll_exit(pid, timeout)
        if status is not None:
            return status, False
        timed_out = True
    if timed_out:
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = 0
    return status, timed_out


# ---------------------------------------------------------------------------------------------
# Files and IPC objects a run left behind


def mount_points() -> frozenset[str]:
    """Where something is mounted in this process's view (/proc/self/mountinfo, field 5)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            rows = [row.split() for row in fh.read().splitlines()]
    except OSError:
        return frozenset()
    return frozenset(_unescape(row[4]) for row in rows if len(row) > 4)


def _unescape(text: str) -> str:
    """mountinfo writes spaces, tabs, newlines and backslashes in a path as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _read_only(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def wipe(path: str, keep: frozenset[str] = frozenset()) -> None:
    """Remove everything under `path`, whatever modes the candidate left on it.

    Mount points in `keep` (a user's project bound read-only under /tmp) and the directories
    leading to them stay: removing would fail on every file of a read-only tree, one by one,
    after every run. A read-only `path` is left alone for the same reason.
    """

    def fix(func: Any, p: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        try:
            func(p)
        except OSError:
            pass

    if _read_only(path):
        return
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        if entry.path in keep:
            continue
        if entry.is_dir(follow_symlinks=False):
            if any(k.startswith(entry.path + "/") for k in keep):
                wipe(entry.path, keep)
            else:
                shutil.rmtree(entry.path, onerror=fix)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def remove_ipc() -> None:
    """System V IPC objects a candidate created in the sandbox's own IPC namespace."""
    for kind, ctl in (("shm", "shmctl"), ("sem", "semctl"), ("msg", "msgctl")):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1:
                if kind == "sem":
                    LIBC.semctl(int(fields[1]), 0, 0)  # IPC_RMID
                else:
                    getattr(LIBC, ctl)(int(fields[1]), 0, None)


# The kernel's keyrings outlive processes: a key a candidate adds to its user's keyring is there
# for the next candidate (the same uid in the same user namespace). keyctl has no libc wrapper.
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
KEYCTL_GET_KEYRING_ID, KEYCTL_GET_PERSISTENT, KEYCTL_READ = 0, 22, 11
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -2, -4, -5


def keys_left() -> bool:
    """Whether the user's keyrings every later process shares (user, user-session, persistent)
    hold a key, or cannot be read (a candidate may take the permissions away). Only for a sandbox
    with its own user namespace: elsewhere these are the host user's own keyrings. The links
    the kernel makes between them (user-session -> user) are not keys."""
    if SYS_KEYCTL is None:
        return False
    user = _keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 1)
    if user < 0:
        return ctypes.get_errno() not in (1, 38, 95)  # no keyrings here: EPERM (docker's seccomp), ENOSYS, EOPNOTSUPP
    session = _keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_SESSION_KEYRING, 1)
    persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING)  # < 0: not in this kernel
    own = {ring for ring in (user, session, persistent) if ring > 0}
    buf = (ctypes.c_int32 * 64)()
    for ring in own:
        size = _keyctl(KEYCTL_READ, ring, buf, ctypes.sizeof(buf))
        if size < 0 or size > ctypes.sizeof(buf) or any(buf[i] not in own for i in range(size // 4)):
            return True
    return False


def _keyctl(op: int, *args: Any) -> int:
    return int(LIBC.syscall(SYS_KEYCTL, op, *args))
