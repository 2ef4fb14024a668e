"""OS isolation around the sandboxed interpreter: bubblewrap, unshare, or nothing (rlimits only).

A `Jail` turns the interpreter's command line into one that runs inside it. The levels, from
strongest to weakest:

- `bwrap`: own network namespace (no network at all), own PID namespace with a fresh /proc, a
  read-only view of /usr and of the interpreter (its prefix, its virtual environment, the link
  chain of its executable and the site directories of what the jail imports: numpy,
  RestrictedPython, pytest), wherever they live, /tmp included; a read-only root; a private
  size-capped tmpfs as work dir and /tmp, nothing else of the host (no home, no project tree) but
  the directories a caller asks for (`ro_binds`, read-only at their own paths: `fix` shows the
  user's project this way), uid 65534 without capabilities (under a root harness host uid 65534,
  with no user namespace: bwrap mounts as root, then `setpriv` drops every process to it);
- `unshare`: own network and PID namespaces with a fresh /proc; the file system is the host's;
- `none`: rlimits only; the child shares the file system, network and process table of the harness.

(`docker`, a container per executor, is a level too, for what it guarantees and how it is
described; sandbox/docker.py starts the container, not `wrap`.)

Whatever the level, the child also sets its own rlimits and drops every capability (with
no_new_privs, so no setuid binary such as sudo gives any back) before candidate code runs.

The harness code (`Jail.wrap`) runs on the host; the probes run a tiny command to see what works.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

# PACKAGE_DIR: humanevalfix/, hidden in the jail (hidden_package_dirs)
from humanevalfix.sandbox.cover import PACKAGE_DIR, closed_ancestors, covered, dropped, unshare_argv

# The code a jailed interpreter runs: sandbox/child/, standard library only (a test checks).
CHILD_DIR = Path(__file__).resolve().parent / "child"
# The files of it the jail shows: the runner and the helpers it loads by path (runner.load_helper).
# fix_driver.py is not among them: `fix` sends its source as the test program.
RUNNER_FILES = (
    "runner.py",
    "server.py",
    "procs.py",
    "execution.py",
    "judge.py",
    "candidate.py",
    "plaindata.py",
    "rewriting.py",
    "assertions.py",
    "restricted.py",
)
JAIL_SRC = "/hefix"  # where those files appear inside bwrap
JAIL_WORK = "/hefix-work"  # the candidate's cwd, a tmpfs; not /work, where a user's project may live
JAIL_SOCK = "/hefix-sock"  # docker: the bind-mounted folder holding the harness's socket
SANDBOX_UID = 65534  # "nobody": the host uid of a root harness's jail, or the uid inside bwrap's user namespace
PROBE_TIMEOUT_S = 20.0
# What the jailed interpreter imports beyond the standard library: the scoring prelude's numpy,
# the restricted mode's RestrictedPython, and pytest for `fix`. Their site directories are bound
# wherever they are installed; those the interpreter has must import inside the jail (probe).
JAIL_IMPORTS = ("numpy", "RestrictedPython", "pytest")

# What each level guarantees; the conformance suite asserts these (and their absence).
NET = "net"  # no network: not even loopback services of the host
PIDS = "pids"  # cannot see, signal or read /proc/<pid>/environ of the harness or other processes
FS = "fs"  # cannot write outside its work dir and /tmp; sees no host files but the system, the interpreter and ro_binds
GUARANTEES = {
    "bwrap": frozenset({NET, PIDS, FS}),
    "unshare": frozenset({NET, PIDS}),
    "none": frozenset(),
    # The container's own limits bound its process count and memory too: DockerExecutor adds
    # cgroup.PROCS and cgroup.MEMORY (the other levels get them from cgroup.py where writable).
    "docker": frozenset({NET, PIDS, FS}),
}

DESCRIPTIONS = {
    "bwrap": "bwrap (no network, own PID namespace and /proc, read-only system and /dev, private size-capped tmpfs "
    "cwd, /tmp and /dev/shm, uid 65534 without capabilities) + rlimits",
    "unshare": "unshare (no network, own PID namespace and /proc; host file system, this package read-only and its "
    "dataset and the caches hidden: a candidate can write the run's own output files) + rlimits, no capabilities",
    "bwrap-root": "bwrap (no network, own PID namespace and /proc, read-only system and /dev, private size-capped "
    "tmpfs cwd, /tmp and /dev/shm, host uid 65534 without capabilities, no user namespace) + rlimits",
    # Under a root harness (Jail.candidate_uid): what a candidate can write is any user's.
    "unshare-root": "unshare (no network, own PID namespace, /proc and /dev/shm; host file system seen as uid 65534 "
    "without capabilities, which writes only where any user can; this package read-only and its dataset and the "
    "caches hidden) + rlimits",
    "none": "rlimits only, no capabilities (host file system, network and process table: a candidate can write the "
    "run's own output files and signal the harness)",
    "docker": "docker container (no network, own PID namespace and /proc, read-only image as root file system, "
    "private tmpfs cwd and /tmp, uid 65534 without capabilities, no-new-privileges) + rlimits",
}


@dataclass(frozen=True)
class Jail:
    level: str  # "bwrap" | "unshare" | "none" | "docker" (the container is started by sandbox/docker.py)
    python: str = sys.executable
    work_bytes: int = 64 << 20  # tmpfs size of the work dir and of /tmp under bwrap
    shm_bytes: int = 16 << 20  # tmpfs size of /dev/shm under bwrap
    # What bwrap binds read-only of the interpreter (`python`'s own, asked of it when left empty).
    python_roots: tuple[str, ...] = ()
    # Host directories shown read-only at their own paths under bwrap (the other levels see the
    # whole host file system anyway). Absolute, symlinks resolved: the paths the child is told.
    ro_binds: tuple[Path, ...] = ()
    # Of JAIL_IMPORTS, those `python` has (the probe checks they import inside the jail).
    imports: tuple[str, ...] = ()
    # Why this jail is weaker than `auto` wanted (no file-system isolation), or None.
    warning: str | None = None
    hidden: tuple[Path, ...] = ()  # more host paths unshare covers (cover.covered_paths): a --dataset-path

    def __post_init__(self) -> None:
        object.__setattr__(self, "ro_binds", tuple(Path(p) for p in self.ro_binds))
        for path in self.ro_binds:
            problem = bind_problem(path)
            if problem:
                raise ValueError(f"cannot bind {path} into the sandbox: {problem}")
        if self.level == "bwrap" and not self.python_roots:
            layout = interpreter_layout(self.python)
            object.__setattr__(self, "python_roots", python_roots(layout))
            object.__setattr__(self, "imports", tuple(sorted(layout["modules"])))

    @property
    def guarantees(self) -> frozenset[str]:
        return GUARANTEES[self.level]

    @property
    def candidate_uid(self) -> int | None:
        """The host uid the jail's processes run as under a root harness (SANDBOX_UID: owner of
        nothing, not even the fork server's /proc files), dropped to by `setpriv` after unshare's
        cover or bwrap's mounts, in no user namespace (in one, they would be host uid 0). None:
        the harness's own user (bwrap: 65534 in a user namespace of its own). Not with `ro_binds`
        (`fix`): a project's files are often its owner's alone, shown as they are."""
        dropped = self.level in ("unshare", "bwrap") and os.geteuid() == 0 and not self.ro_binds
        # An interpreter in a folder closed to others (a `mktemp -d` venv): bwrap's own user namespace.
        shown = (*self.python_roots, str(CHILD_DIR)) if self.level == "bwrap" else ()
        return SANDBOX_UID if dropped and all(_open_to_others(p) for p in shown) else None

    def needed_paths(self) -> list[str]:
        """What the jailed interpreter must reach on the host: itself, its prefixes and site dirs, the
        runner, `fix`'s project, and where its work dirs are made ($TMPDIR may be the harness's own)."""
        roots = self.python_roots or python_roots(interpreter_layout(self.python))
        shown = [str(p) for p in self.ro_binds]
        return [self.python, *roots, str(CHILD_DIR), *shown, tempfile.gettempdir()]

    @property
    def description(self) -> str:
        if self.level in ("bwrap", "docker") and self.ro_binds:
            shown = ", ".join(str(p) for p in self.ro_binds)
            return DESCRIPTIONS[self.level].replace(") + rlimits", f"; read-only at the same path: {shown}) + rlimits")
        return DESCRIPTIONS[self.level + "-root" if self.candidate_uid is not None else self.level]

    @property
    def runner(self) -> str:
        """The runner's path as the jailed interpreter sees it."""
        if self.level in ("bwrap", "docker"):
            return f"{JAIL_SRC}/runner.py"
        return str(CHILD_DIR / "runner.py")

    def wrap(self, argv: list[str], *, as_pid_1: bool) -> list[str]:
        """`argv` (an interpreter command line) run inside this jail. `as_pid_1`: the command is the
        init of its PID namespace, so nothing inside can signal it and every orphan becomes its child
        (the fork server wants this)."""
        if self.level == "bwrap":
            uid = self.candidate_uid
            return bwrap_argv(self, as_pid_1) + ["--", *(dropped(argv, uid) if uid is not None else argv)]
        if self.level == "unshare":
            uid = self.candidate_uid
            opened = closed_ancestors(self.needed_paths()) if uid is not None else ()
            return unshare_argv(uid is None) + ["--", *covered(argv, opened=opened, uid=uid, hidden=self.hidden)]
        if self.level == "docker":
            raise ValueError("a docker jail is a container: sandbox/docker.py starts it")
        return list(argv)


# Run by the jail's interpreter on the host, as the child runs (`-I`): where it and the modules
# the jail imports live. find_spec does not import them. Not sys.path as a whole: an editable
# install puts the project tree on it, and the jail must not show that.
LAYOUT_SCRIPT = """
import importlib.util, json, sys, sysconfig
paths = sysconfig.get_paths()
dirs = [sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix]
dirs += [paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
modules = {}
for name in NAMES:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        modules[name] = list(spec.submodule_search_locations or []) or [spec.origin]
print(json.dumps({"dirs": [d for d in dirs if d], "modules": modules, "executable": sys.executable}))
"""


def interpreter_layout(python: str) -> dict[str, Any]:
    """Where `python` (its prefixes, its venv) and its copies of JAIL_IMPORTS live; ValueError
    naming the cause when it does not run. Asked once per interpreter and process (the probe's
    jail and the run's both need it)."""
    return copy.deepcopy(_layout(python))


@lru_cache(maxsize=8)
def _layout(python: str) -> dict[str, Any]:
    script = LAYOUT_SCRIPT.replace("NAMES", repr(JAIL_IMPORTS))
    try:
        proc = subprocess.run(
            [python, "-I", "-c", script],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env=probe_env(),
            cwd="/",
        )
        layout = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        raise ValueError(f"the interpreter {python} does not run: {exc}") from None
    if not isinstance(layout, dict):
        lines = proc.stderr.strip().splitlines()
        raise ValueError(
            f"the interpreter {python} does not run: {lines[-1] if lines else f'exit status {proc.returncode}'}"
        )
    layout["chain"] = link_chain(shutil.which(python) or python)
    return layout


def link_chain(path: str) -> list[str]:
    """`path` and every symlink it goes through to the real file (each must resolve in the jail)."""
    chain = [os.path.abspath(path)]
    for _ in range(40):
        if not os.path.islink(chain[-1]):
            break
        chain.append(os.path.normpath(os.path.join(os.path.dirname(chain[-1]), os.readlink(chain[-1]))))
    return chain


# Never bound whole, even if an interpreter lives right there: only its own tree is shown.
NEVER_BOUND = ("/", "/tmp", "/root", "/home", "/etc", "/var", "/opt", "/srv", "/mnt", "/media", "/run", "/sys")


def python_roots(layout: dict[str, Any]) -> tuple[str, ...]:
    """What bwrap binds read-only of an interpreter: its prefixes (a venv's and the base's), the
    site directories of JAIL_IMPORTS (a package's parent, and its real path's parent: numpy finds
    numpy.libs beside its real directory), and each file on the executable's link chain; each
    also by its real path. Wherever they live: under /tmp they are bound into the jail's tmpfs."""
    dirs: list[str] = [d for d in layout["dirs"] if os.path.isdir(d)]
    for locations in layout["modules"].values():
        for loc in locations:
            dirs += [os.path.dirname(loc), os.path.dirname(os.path.realpath(loc))]
    files = [f for f in [*layout["chain"], layout.get("executable") or ""] if os.path.isfile(f)]
    roots = [p for d in dirs for p in (os.path.normpath(d), os.path.realpath(d))]
    roots += [p for f in files for p in (f, os.path.realpath(f))]
    out: list[str] = []
    for r in sorted(set(roots), key=len):  # shortest first: what lies inside a kept root is dropped
        if not os.path.isabs(r) or r == "/usr" or r.startswith(("/usr/", "/lib", "/bin", "/sbin")):
            continue  # the system, bound anyway
        if r in NEVER_BOUND or r == os.path.expanduser("~") or bind_problem(Path(r)):
            continue
        if any(r.startswith(o + "/") or r == o for o in out):
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
    # A root harness's jail drops to SANDBOX_UID after bwrap (as root) made these: every user's to
    # write, as /tmp is (only the jail's own processes see them).
    shared = ["--perms", "1777"] if jail.candidate_uid is not None else []
    mounts = _system_mounts() + [
        ("/proc", ["--proc", "/proc"]),
        # Read-only: to a root harness's candidate (host uid 0) some sysctls are writable machine-wide.
        ("/proc/sys", ["--ro-bind", "/proc/sys", "/proc/sys"]),
        ("/dev", ["--dev", "/dev"]),
        # /dev itself is made read-only below (only the device nodes); its one writable place,
        # POSIX shared memory, is a size-capped tmpfs of its own, wiped after every run.
        ("/dev/shm", [*shared, "--size", str(jail.shm_bytes), "--tmpfs", "/dev/shm"]),
        (JAIL_WORK, [*shared, "--size", size, "--tmpfs", JAIL_WORK]),
        ("/tmp", [*shared, "--size", size, "--tmpfs", "/tmp"]),
    ]
    mounts += [(root, ["--ro-bind", root, root]) for root in jail.python_roots]
    mounts += [(str(path), ["--ro-bind", str(path), str(path)]) for path in jail.ro_binds]
    mounts += [
        (f"{JAIL_SRC}/{name}", ["--ro-bind", str(CHILD_DIR / name), f"{JAIL_SRC}/{name}"]) for name in RUNNER_FILES
    ]
    mounts += [(d, ["--tmpfs", d, "--remount-ro", d]) for d in hidden_package_dirs(jail)]
    binds = [where for where, args in mounts if args[0] in ("--ro-bind", "--symlink")]
    mounts += [(d, ["--perms", "0755", "--dir", d]) for d in _passable_parents([w for w, _ in mounts], binds)]
    return [arg for _where, args in sorted(mounts, key=lambda m: _depth(m[0])) for arg in args]


def _passable_parents(places: list[str], binds: list[str]) -> list[str]:
    """The folders bwrap makes on the way to its mount points (`/root` for an interpreter under it),
    made passable by any user: bwrap as root makes them 0700, which a dropped jail could not pass.
    Not a folder inside a bind (`binds`): that one is the host's, read-only."""
    inside = [p.rstrip("/") + "/" for p in binds]
    out: dict[str, None] = {}
    for place in places:
        for parent in Path(place).parents:
            d = str(parent)
            if d != "/" and d not in places and not any(d.startswith(root) for root in inside):
                out[d] = None
    return list(out)


def _open_to_others(path: str) -> bool:
    """Whether a user who owns nothing can list and pass the folder, or read the file, `path`."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True  # bwrap says what is missing itself
    return mode & (need := 0o005 if stat.S_ISDIR(mode) else 0o004) == need


def hidden_package_dirs(jail: Jail) -> list[str]:
    """This package's own directory wherever the interpreter's binds or the system's would show it
    (a non-editable install lives in the site-packages the jail binds): its bundled dataset holds
    every task's canonical solution and test. An empty read-only tmpfs covers it. The runner's
    files are bound from the host at JAIL_SRC, so the child needs nothing in it. A project bound
    for `fix` (`ro_binds`) is the user's to show, even when it is this package's checkout."""
    shown = (*jail.python_roots, "/usr", "/lib", "/lib64")
    out: list[str] = []
    for d in dict.fromkeys((os.path.normpath(str(PACKAGE_DIR)), str(PACKAGE_DIR.resolve()))):
        if any(d.startswith(root.rstrip("/") + "/") for root in shown) and not bind_problem(Path(d)):
            out.append(d)
    return out


def bwrap_argv(jail: Jail, as_pid_1: bool) -> list[str]:
    if jail.candidate_uid is None:
        # In a user namespace of its own, as 65534 there: the harness's own user on the host.
        args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    else:
        # A root harness: no user namespace (in one, 65534 would be host uid 0, owner of the root
        # files and of its fork server's /proc files). bwrap mounts as root and keeps only what
        # `setpriv` needs to drop the command to SANDBOX_UID with nothing (Jail.wrap).
        args = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += [arg for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP") for arg in ("--cap-add", cap)]
    args += ["--hostname", "sandbox"]
    if as_pid_1:
        args.append("--as-pid-1")
    # --remount-ro /: the jail's own root is a tmpfs bwrap made (for the mount points /hefix, /usr,
    # ...); writable, it would keep a candidate's files for the next run, outside every size cap.
    # --remount-ro /dev: bwrap's /dev is a writable tmpfs with no size cap, kept from run to run.
    return args + mount_args(jail) + ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", JAIL_WORK]


def probe(level: str, python: str = sys.executable, ro_binds: tuple[Path, ...] = ()) -> str | None:
    """None when `level` works here (with `ro_binds` readable at their paths), else why not: one
    line that starts with the tool's name and gives the real cause (its own error message)."""
    if level == "none":
        return None
    tool = "bwrap" if level == "bwrap" else "unshare"
    if shutil.which(tool) is None:
        return f"{tool} is not installed"
    try:
        jail = Jail(level, python=python, ro_binds=ro_binds)
    except ValueError as exc:
        return f"{tool} failed: {exc}"
    # The real thing: the jailed interpreter must start, see its runner and what it imports
    # (found, not imported: that would cost numpy's import), and have no network.
    script = (
        "import importlib.util, os, socket, sys\n"
        f"assert os.path.exists({jail.runner!r}), 'the runner is not visible in the sandbox'\n"
        f"for p in {[str(p) for p in ro_binds]!r}:\n"
        "    assert os.access(p, os.R_OK), f'{p} not readable in the sandbox'\n"
        f"for m in {list(jail.imports)!r}:\n"
        "    assert importlib.util.find_spec(m), f'{m} (installed for {sys.executable}) cannot be imported in the "
        "sandbox'\n"
        "names = [n for n in socket.if_nameindex() if n[1] != 'lo']\n"
        "assert not names, f'network interfaces visible: {names}'\n"
        "print('ok')\n"
    )
    argv = jail.wrap([python, "-I", "-c", script], as_pid_1=True)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=probe_env(), cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{tool} failed: {exc}"
    if proc.returncode != 0 or proc.stdout.strip() != "ok":
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return f"{tool} failed: {lines[-1] if lines else f'exit status {proc.returncode}'}"
    return None


def probe_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def best_level(python: str = sys.executable, ro_binds: tuple[Path, ...] = ()) -> tuple[str, dict[str, str]]:
    """The strongest level that works here, and why each stronger one did not."""
    why_not: dict[str, str] = {}
    for level in ("bwrap", "unshare"):
        problem = probe(level, python, ro_binds if level == "bwrap" else ())
        if problem is None:
            return level, why_not
        why_not[level] = problem
    return "none", why_not
