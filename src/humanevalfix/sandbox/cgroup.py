"""Per-executor cgroups: a process-count limit that holds for root too, and a memory limit.

RLIMIT_NPROC does not bind root, nor a user namespace whose ids map to root, so as root a fork
bomb used to be bounded only by the time limit. A cgroup's `pids.max` binds everyone. Each
executor's processes (a fork server and everything it forks, or one fresh interpreter) run in a
cgroup of their own, made for them and removed after them:

- v2 (a cgroup2 hierarchy where our cgroup's children get the `pids` controller) or v1 (the
  `pids` hierarchy, and the `memory` one where writable), whichever is mounted and writable, below
  the harness's own cgroup in each hierarchy;
- the processes join it before the jail starts: `/bin/sh` writes its own pid to `cgroup.procs`
  and execs the jail's command line, so no thread of the harness is ever moved, and nothing the
  jail starts can leave (inside it /sys is not mounted, and there are no capabilities);
- removed when its processes are gone (whatever is left is killed, then `rmdir`). A group is named
  `hefix-<pid>-<start time>-<token>` after the harness process that made it; one whose owner is
  dead (a harness killed with SIGKILL) is removed by the next `detect()`.

Where no cgroup is writable `detect()` says why; the executor records it in its isolation line.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from humanevalfix.sandbox.child.procs import start_time

PREFIX = "hefix-"
# What an executor guarantees through its cgroup (executor.guarantees; the conformance suite checks them).
PROCS = "procs"  # its processes are capped, root included: a fork bomb stops by count
MEMORY = "memory"  # the memory of all its processes together is capped
OWNED = re.compile(rf"^{PREFIX}(\d+)-(\d+)-[0-9a-f]+$")
# The group's members join it before they exec the jail (argv: the procs files, "--", the command).
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
REMOVE_TIMEOUT_S = 5.0
LEFTOVER_SCAN_DEPTH = 4  # below a hierarchy's mount point: where earlier runs' own cgroups were


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    parent: Path  # the harness's own cgroup in it: our groups are made here
    controllers: tuple[str, ...]  # what we limit through it: "pids", "memory"
    mount: Path  # the hierarchy's mount point (leftovers are looked for below it)


@dataclass(frozen=True)
class Group:
    """One executor's cgroup, a directory in each hierarchy."""

    dirs: tuple[Path, ...]

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started inside this group (and everything it starts)."""
        return ["/bin/sh", "-c", JOIN, "hefix-cgroup", *(str(d / "cgroup.procs") for d in self.dirs), "--", *argv]

    def remove(self) -> bool:
        """Kill what is left in the group and remove it; False if it is still there."""
        return all(remove_group(d) for d in self.dirs)


@dataclass(frozen=True)
class Cgroups:
    """Where this machine lets us make groups, and the limits each one gets."""

    hierarchies: tuple[Hierarchy, ...]
    pids_max: int
    memory_max: int | None

    @property
    def controllers(self) -> frozenset[str]:
        return frozenset(c for h in self.hierarchies for c in h.controllers)

    @property
    def guarantees(self) -> frozenset[str]:
        return frozenset({PROCS} | ({MEMORY} if "memory" in self.controllers and self.memory_max else set()))

    @property
    def description(self) -> str:
        version = "/".join(sorted({f"v{h.version}" for h in self.hierarchies}))
        memory = (
            f", memory {self.memory_max / (1 << 30):g} GiB" if "memory" in self.controllers and self.memory_max else ""
        )
        return f"cgroup {version}: pids.max {self.pids_max}{memory} per executor"

    def create(self) -> Group:
        """A new group with the limits set (OSError if the file system refuses)."""
        name = group_name()
        made: list[Path] = []
        try:
            for h in self.hierarchies:
                path = h.parent / name
                path.mkdir()
                made.append(path)
                set_limits(path, h, self.pids_max, self.memory_max)
        except OSError:
            for path in made:
                remove_group(path)
            raise
        return Group(tuple(made))


def group_name() -> str:
    """A new group's name: this harness process (pid and start time, see owner_alive), and a token."""
    owner = os.getpid()
    return f"{PREFIX}{owner}-{start_time(owner) or 0}-{secrets.token_hex(4)}"


def set_limits(path: Path, h: Hierarchy, pids_max: int, memory_max: int | None) -> None:
    if "pids" in h.controllers:
        (path / "pids.max").write_text(str(pids_max))
    if "memory" not in h.controllers or not memory_max:
        return
    if h.version == 2:
        (path / "memory.max").write_text(str(memory_max))
        _write(path / "memory.swap.max", "0")  # no swap: the limit is the limit (where swap is accounted)
    else:
        (path / "memory.limit_in_bytes").write_text(str(memory_max))
        _write(path / "memory.memsw.limit_in_bytes", str(memory_max))  # memory + swap, where accounted


def remove_group(path: Path, timeout_s: float = REMOVE_TIMEOUT_S) -> bool:
    """rmdir `path` once its processes are gone, killing what is left; False if it stays."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
        kill_members(path)
        time.sleep(0.01)


def kill_members(path: Path) -> None:
    """SIGKILL every process in the group (ours: the group was made for them)."""
    if _write(path / "cgroup.kill", "1"):  # v2, Linux 5.14+: the kernel kills them all at once
        return
    try:
        pids = (path / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, ValueError):
            pass


def _write(path: Path, value: str) -> bool:
    """Write a control file the kernel may not offer (cgroup.kill before 5.14, swap accounting off)."""
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# Finding a writable hierarchy


@dataclass(frozen=True)
class CgroupMount:
    point: Path
    root: str  # the part of the hierarchy mounted there
    version: int
    controllers: frozenset[str]  # v1: the mount's controllers (v2: read from the cgroup itself)


def cgroup_mounts(mountinfo: str) -> list[CgroupMount]:
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        options = frozenset(tail[2].split(","))
        version = 2 if tail[0] == "cgroup2" else 1
        found.append(
            CgroupMount(
                Path(fields[4].replace("\\040", " ")), fields[3], version, options if version == 1 else frozenset()
            )
        )
    return found


def own_cgroups(proc_cgroup: str) -> dict[str, str]:
    """controller -> our cgroup's path ("" for v2), from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2]
    return paths


def dir_below(mount: CgroupMount, path: str) -> Path:
    """Our cgroup's directory under the mount (the mount may show only part of the hierarchy)."""
    inside = mount.root != "/" and (path == mount.root or path.startswith(mount.root + "/"))
    rel = path[len(mount.root) :] if inside else path
    return mount.point / rel.lstrip("/")


def _v2_controllers(parent: Path) -> tuple[str, ...]:
    """The controllers our groups below `parent` get, enabling them for its children if we can
    (which the kernel refuses for a non-root cgroup that has processes of its own)."""
    try:
        available = (parent / "cgroup.controllers").read_text().split()
    except OSError:
        return ()
    wanted = [c for c in ("pids", "memory") if c in available]
    for c in wanted:
        _write(parent / "cgroup.subtree_control", f"+{c}")
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return ()
    return tuple(c for c in wanted if c in enabled)


def _candidates() -> list[Hierarchy] | str:
    """The hierarchies to use (v2 where it has the pids controller for us, else v1), or why none."""
    try:
        mounts = cgroup_mounts(Path("/proc/self/mountinfo").read_text())
        own = own_cgroups(Path("/proc/self/cgroup").read_text())
    except OSError as exc:
        return f"cannot read /proc: {exc}"
    for m in (m for m in mounts if m.version == 2):
        parent = dir_below(m, own.get("", "/"))
        controllers = _v2_controllers(parent)
        if "pids" in controllers:
            return [Hierarchy(2, parent, controllers, m.point)]
    chosen = []
    for controller in ("pids", "memory"):
        mount = next((m for m in mounts if m.version == 1 and controller in m.controllers), None)
        if mount is not None and controller in own:
            chosen.append(Hierarchy(1, dir_below(mount, own[controller]), (controller,), mount.point))
    if not chosen or chosen[0].controllers != ("pids",):
        return "no cgroup hierarchy with the pids controller is mounted"
    return chosen


def _writable(h: Hierarchy) -> str | None:
    """None if a group can be made and limited in `h`, else why not."""
    path = h.parent / group_name()
    try:
        path.mkdir()
    except OSError as exc:
        return f"cannot create a cgroup in {h.parent}: {exc.strerror}"
    try:
        set_limits(path, h, 1 << 20, 1 << 40)
        return None
    except OSError as exc:
        return f"cannot set limits in {path}: {exc.strerror}"
    finally:
        remove_group(path, 1.0)


def detect(pids_max: int, memory_max: int | None) -> tuple[Cgroups | None, str]:
    """Where groups can be made here, with these limits; or None and why not. Removes the groups
    that earlier harness processes, now dead, left behind."""
    found = _candidates()
    if isinstance(found, str):
        return None, found
    usable: list[Hierarchy] = []
    why = ""
    for h in found:
        problem = _writable(h)
        if problem is None:
            usable.append(h)
            remove_leftovers(h.mount)
        elif "pids" in h.controllers:
            why = problem
    if not any("pids" in h.controllers for h in usable):
        return None, why or "no writable cgroup with the pids controller"
    return Cgroups(tuple(usable), pids_max, memory_max), ""


def process_limit(cgroups: Cgroups | None, why_not: str) -> str:
    """What bounds the number of a run's processes, for the executor's isolation line."""
    if cgroups is not None:
        return f"process limit: {cgroups.description}"
    if os.geteuid() == 0:
        return (
            f"no process-count limit as root (no writable cgroup: {why_not}): forks are bounded only by the time limit"
        )
    return f"process limit: RLIMIT_NPROC only (no writable cgroup: {why_not})"


def owner_alive(name: str) -> bool:
    match = OWNED.match(name)
    if match is None:
        return True  # not one of ours: never touched
    pid, started = int(match.group(1)), int(match.group(2))
    return start_time(pid) == started


def remove_leftovers(mount: Path) -> list[Path]:
    """Remove our groups whose harness process is gone, anywhere near the top of the hierarchy."""
    removed = []
    for path in _our_groups(mount, LEFTOVER_SCAN_DEPTH):
        if not owner_alive(path.name) and remove_group(path, 1.0):
            removed.append(path)
    return removed


def _our_groups(top: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        entries = [e for e in os.scandir(top) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith(PREFIX):
            found.append(Path(entry.path))
        elif depth > 1:
            found += _our_groups(Path(entry.path), depth - 1)
    return found
