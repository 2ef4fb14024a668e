"""OS isolation around the sandboxed interpreter: bubblewrap, unshare, or nothing (rlimits only).

A `Jail` turns the interpreter's command line into one that runs inside it. The levels, from
strongest to weakest:

- `bwrap`: own network namespace (no network at all), own PID namespace with a fresh /proc, a
  read-only view of /usr and of the interpreter's prefix, a read-only root, a private
  size-capped tmpfs as work dir and /tmp, nothing else of the host (no home, no project tree) but the directories a caller
  asks for (`ro_binds`, read-only at their own paths: `fix` shows the user's project this way),
  uid 65534 without capabilities;
- `unshare`: own network and PID namespaces with a fresh /proc; the file system is the host's;
- `none`: rlimits only; the child shares the file system, network and process table of the harness.

(`docker`, a container per executor, is a level too, for what it guarantees and how it is
described; sandbox/docker.py starts the container, not `wrap`.)

Whatever the level, the child also sets its own rlimits and drops every capability (with
no_new_privs, so no setuid binary such as sudo gives any back) before candidate code runs.

The harness code (`Jail.wrap`) runs on the host; the probes run a tiny command to see what works.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

# The code a jailed interpreter runs: sandbox/child/, standard library only (a test checks).
CHILD_DIR = Path(__file__).resolve().parent / "child"
# The files of it the jail shows: the runner and the helpers it loads by path (runner.load_helper).
# fix_driver.py is not among them: `fix` sends its source as the test program.
RUNNER_FILES = ("runner.py", "procs.py", "execution.py", "honesty.py", "rewriting.py", "assertions.py", "restricted.py")
JAIL_SRC = "/hefix"  # where those files appear inside bwrap
# The private tmpfs that is the candidate's cwd inside bwrap. Not /work: a user's project bound
# read-only at its own path may well live there (a container's WORKDIR).
JAIL_WORK = "/hefix-work"
JAIL_SOCK = "/hefix-sock"  # docker: the bind-mounted folder holding the harness's socket
SANDBOX_UID = 65534  # "nobody" inside the sandbox's user namespace
PROBE_TIMEOUT_S = 20.0

# What each level guarantees; the conformance suite asserts these (and their absence).
NET = "net"  # no network: not even loopback services of the host
PIDS = "pids"  # cannot see, signal or read /proc/<pid>/environ of the harness or other processes
FS = "fs"  # cannot write outside its work dir and /tmp; sees no host files but the system, the interpreter and ro_binds
NPROC = "nproc"  # the number of processes is bounded (a fork bomb stops at a count), even for root
GUARANTEES = {
    "bwrap": frozenset({NET, PIDS, FS}),
    "unshare": frozenset({NET, PIDS}),
    "none": frozenset(),
    "docker": frozenset({NET, PIDS, FS, NPROC}),
}

DESCRIPTIONS = {
    "bwrap": "bwrap (no network, own PID namespace and /proc, read-only system, private tmpfs cwd and /tmp, uid 65534 without capabilities) + rlimits",
    "unshare": "unshare (no network, own PID namespace and /proc; host file system) + rlimits, no capabilities",
    "none": "rlimits only, no capabilities (host file system, network and process table)",
    "docker": "docker container (no network, own PID namespace and /proc, read-only image as root file system, private tmpfs cwd and /tmp, uid 65534 without capabilities, no-new-privileges) + rlimits",
}


@dataclass(frozen=True)
class Jail:
    level: str  # "bwrap" | "unshare" | "none" | "docker" (the container is started by sandbox/docker.py)
    python: str = sys.executable
    work_bytes: int = 64 << 20  # tmpfs size of the work dir and of /tmp under bwrap
    python_roots: tuple[str, ...] = field(default_factory=lambda: python_roots())
    # Host directories shown read-only at their own paths under bwrap (the other levels see the
    # whole host file system anyway). Absolute, symlinks resolved: the paths the child is told.
    ro_binds: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "ro_binds", tuple(Path(p) for p in self.ro_binds))
        for path in self.ro_binds:
            problem = bind_problem(path)
            if problem:
                raise ValueError(f"cannot bind {path} into the sandbox: {problem}")

    @property
    def guarantees(self) -> frozenset[str]:
        return GUARANTEES[self.level]

    @property
    def description(self) -> str:
        if self.level in ("bwrap", "docker") and self.ro_binds:
            shown = ", ".join(str(p) for p in self.ro_binds)
            return DESCRIPTIONS[self.level].replace(") + rlimits", f"; read-only at the same path: {shown}) + rlimits")
        return DESCRIPTIONS[self.level]

    @property
    def runner(self) -> str:
        """The runner's path as the jailed interpreter sees it."""
        if self.level in ("bwrap", "docker"):
            return f"{JAIL_SRC}/runner.py"
        return str(CHILD_DIR / "runner.py")

    def wrap(self, argv: list[str], *, as_pid_1: bool) -> list[str]:
        """`argv` (an interpreter command line) run inside this jail.

        `as_pid_1`: the command is the init of its PID namespace, so nothing inside can signal
        it and every orphan becomes its child (the fork server wants this).
        """
        if self.level == "bwrap":
            return bwrap_argv(self, as_pid_1) + ["--", *argv]
        if self.level == "unshare":
            return unshare_argv() + ["--", *argv]
        if self.level == "docker":
            raise ValueError("a docker jail is a container: sandbox/docker.py starts it")
        return list(argv)


def python_roots() -> tuple[str, ...]:
    """Directories the interpreter and its packages live in (bound read-only under bwrap)."""
    # Not sys.path: it holds the current directory (the project tree) when run from there.
    paths = sysconfig.get_paths()
    roots: list[str] = []
    for p in (sys.base_prefix, sys.prefix, paths.get("stdlib"), paths.get("purelib"), paths.get("platlib")):
        if not p or not os.path.isabs(p) or not os.path.isdir(p):
            continue
        roots += [p, os.path.realpath(p)]
    # Drop roots inside other roots and the system dirs bound anyway.
    out: list[str] = []
    for r in sorted(set(roots), key=len):
        if r.startswith(("/usr/", "/lib", "/bin", "/sbin")) or r in ("/usr",):
            continue
        if r in ("/", "/tmp", "/root", "/home", os.path.expanduser("~")):
            continue  # never bind a whole home or /: only the interpreter's own tree
        if any(r == o or r.startswith(o + "/") for o in out):
            continue
        out.append(r)
    return tuple(out)


# Where the jail puts its own mounts: a bind at, or above, one of these would hide or break them.
RESERVED = ("/proc", "/dev", JAIL_SRC, JAIL_WORK, JAIL_SOCK)


def bind_problem(path: Path) -> str | None:
    """Why `path` cannot be bound read-only at its own path, or None."""
    text = str(path)
    if not path.is_absolute() or os.path.normpath(text) != text:
        return "not an absolute, normalised path"
    if text == "/":
        return "the whole file system"
    for reserved in RESERVED:
        if reserved == text or reserved.startswith(text + "/") or text.startswith(reserved + "/"):
            return f"the sandbox uses {reserved} itself"
    return None


Mount = tuple[str, list[str]]  # (where, bwrap arguments)


def _system_mounts() -> list[Mount]:
    mounts: list[Mount] = [("/usr", ["--ro-bind", "/usr", "/usr"])]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            mounts.append((top, ["--symlink", os.readlink(top), top]))
        elif os.path.isdir(top):
            mounts.append((top, ["--ro-bind", top, top]))
    # The dynamic loader's cache and the time zone; nothing else of /etc (no passwd, no keys).
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(f):
            mounts.append((f, ["--ro-bind", f, f]))
    return mounts


def _depth(where: str) -> int:
    return len(Path(where).parts)


def mount_args(jail: Jail) -> list[str]:
    """The jail's file system, each mount after every mount above it.

    bwrap mounts in the order given, and a mount hides what an earlier one put below it: the
    tmpfs for /tmp must come before an interpreter or a project that lives under /tmp, and a
    project before a virtual environment inside it. Ordered by depth (a stable sort, so at equal
    paths the later entry wins: a bind over /tmp itself shows the host's, read-only).
    """
    size = str(jail.work_bytes)
    mounts = _system_mounts() + [
        ("/proc", ["--proc", "/proc"]),
        ("/dev", ["--dev", "/dev"]),
        (JAIL_WORK, ["--size", size, "--tmpfs", JAIL_WORK]),
        ("/tmp", ["--size", size, "--tmpfs", "/tmp"]),
    ]
    mounts += [(root, ["--ro-bind", root, root]) for root in jail.python_roots]
    mounts += [(str(path), ["--ro-bind", str(path), str(path)]) for path in jail.ro_binds]
    mounts += [(f"{JAIL_SRC}/{name}", ["--ro-bind", str(CHILD_DIR / name), f"{JAIL_SRC}/{name}"]) for name in RUNNER_FILES]
    return [arg for _where, args in sorted(mounts, key=lambda m: _depth(m[0])) for arg in args]


def bwrap_argv(jail: Jail, as_pid_1: bool) -> list[str]:
    args = [
        "bwrap",
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup namespaces
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        "--uid", str(SANDBOX_UID),
        "--gid", str(SANDBOX_UID),
        "--hostname", "sandbox",
    ]
    if as_pid_1:
        args.append("--as-pid-1")
    # --remount-ro /: the jail's own root is a tmpfs bwrap made (for the mount points /hefix, /usr,
    # ...); writable, it would keep a candidate's files for the next run, outside every size cap.
    return args + mount_args(jail) + ["--remount-ro", "/", "--chdir", JAIL_WORK]


def unshare_argv() -> list[str]:
    # --map-root-user: namespaces without privileges where user namespaces are allowed.
    return ["unshare", "--user", "--map-root-user", "--net", "--pid", "--ipc", "--uts", "--fork", "--mount-proc", "--kill-child"]


def probe(level: str, python: str = sys.executable, ro_binds: tuple[Path, ...] = ()) -> str | None:
    """None when `level` works here (with `ro_binds` readable at their paths), else why not (one line)."""
    if level == "none":
        return None
    tool = "bwrap" if level == "bwrap" else "unshare"
    if shutil.which(tool) is None:
        return f"{tool} is not installed"
    try:
        jail = Jail(level, python=python, ro_binds=ro_binds)
    except ValueError as exc:
        return str(exc)
    # The real thing: the jailed interpreter must start, see its runner and have no network.
    script = (
        "import os, socket, sys\n"
        f"assert os.path.exists({jail.runner!r}), 'runner not visible'\n"
        f"for p in {[str(p) for p in ro_binds]!r}:\n"
        "    assert os.access(p, os.R_OK), f'{p} not readable in the sandbox'\n"
        "names = [n for n in socket.if_nameindex() if n[1] != 'lo']\n"
        "assert not names, f'network interfaces visible: {names}'\n"
        "print('ok')\n"
    )
    argv = jail.wrap([python, "-I", "-S", "-c", script], as_pid_1=True)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=probe_env(), cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{tool} failed to run: {exc}"
    if proc.returncode != 0 or proc.stdout.strip() != "ok":
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return f"{tool} does not work here: {lines[-1] if lines else f'exit status {proc.returncode}'}"
    return None


def probe_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def best_level(python: str = sys.executable) -> tuple[str, dict[str, str]]:
    """The strongest level that works here, and why each stronger one did not."""
    why_not: dict[str, str] = {}
    for level in ("bwrap", "unshare"):
        problem = probe(level, python)
        if problem is None:
            return level, why_not
        why_not[level] = problem
    return "none", why_not
