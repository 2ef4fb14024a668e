"""Finding where a cgroup can be made: /proc/self/mountinfo and /proc/self/cgroup as v1, v2 and
hybrid machines and containers write them (this machine shows only one of these layouts; the
conformance suite runs the real groups)."""

from __future__ import annotations

from pathlib import Path

from humanevalfix.sandbox.cgroup import (
    Cgroups,
    Hierarchy,
    cgroup_mounts,
    dir_below,
    own_cgroups,
    owner_alive,
    process_limit,
)

HYBRID = """\
30 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,memory
40 30 0:36 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:20 - cgroup cgroup rw,pids
41 30 0:37 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:21 - cgroup cgroup rw,cpu,cpuacct
"""
HYBRID_SELF = "12:pids:/\n4:memory:/jobs/j1\n3:cpu,cpuacct:/\n0::/\n"

# A container whose cgroup namespace shows only its own part of the host's v2 hierarchy.
CONTAINER_V2 = "600 580 0:40 /docker/abc /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n"


def test_v1_mounts_and_controllers_are_read_from_mountinfo() -> None:
    mounts = cgroup_mounts(HYBRID)
    assert [(str(m.point), m.version) for m in mounts] == [
        ("/sys/fs/cgroup/unified", 2),
        ("/sys/fs/cgroup/memory", 1),
        ("/sys/fs/cgroup/pids", 1),
        ("/sys/fs/cgroup/cpu,cpuacct", 1),
    ]
    assert "pids" in mounts[2].controllers and "cpuacct" in mounts[3].controllers
    own = own_cgroups(HYBRID_SELF)
    assert own == {"pids": "/", "memory": "/jobs/j1", "cpu": "/", "cpuacct": "/", "": "/"}
    assert dir_below(mounts[1], own["memory"]) == Path("/sys/fs/cgroup/memory/jobs/j1")
    assert dir_below(mounts[2], own["pids"]) == Path("/sys/fs/cgroup/pids")


def test_a_namespaced_v2_mount_maps_our_path_below_its_own_root() -> None:
    (mount,) = cgroup_mounts(CONTAINER_V2)
    assert mount.version == 2 and mount.root == "/docker/abc"
    assert dir_below(mount, "/docker/abc/worker") == Path("/sys/fs/cgroup/worker")
    assert dir_below(mount, "/") == Path("/sys/fs/cgroup")


def test_only_our_groups_of_dead_harnesses_count_as_leftovers() -> None:
    assert owner_alive("system.slice")  # not ours: never touched
    assert owner_alive("hefix-notanumber")
    assert not owner_alive("hefix-999999999-1-abcd")  # no such process


def test_the_isolation_line_says_what_bounds_the_processes() -> None:
    v1 = Cgroups(
        (
            Hierarchy(1, Path("/x/pids"), ("pids",), Path("/x/pids")),
            Hierarchy(1, Path("/x/memory"), ("memory",), Path("/x/memory")),
        ),
        512,
        5 << 30,
    )
    assert process_limit(v1, "") == "process limit: cgroup v1: pids.max 512, memory 5 GiB per executor"
    assert v1.guarantees == {"procs", "memory"}
    pids_only = Cgroups((Hierarchy(2, Path("/x"), ("pids",), Path("/x")),), 64, 1 << 30)
    assert process_limit(pids_only, "") == "process limit: cgroup v2: pids.max 64 per executor"
    assert pids_only.guarantees == {"procs"}
    line = process_limit(None, "cannot create a cgroup in /sys/fs/cgroup/pids: Read-only file system")
    assert "Read-only file system" in line and ("bounded only by the time limit" in line or "RLIMIT_NPROC only" in line)
