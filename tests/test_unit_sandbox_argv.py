"""The sandbox's command lines and settings, built and checked in-process (sandbox/jail.py and
sandbox/docker.py); no bwrap, unshare or docker is started: where the code asks a tool (the
interpreter's layout, a probe, the docker CLI), that one call is a stand-in answering as the tool
would, and what is asserted is what the code builds from the answer.

jail.py: the levels' guarantees and descriptions, bind checks, the bwrap mount order, the
interpreter's roots, the link chain, the probe's verdicts. docker.py: `docker run`'s flags, mount
quoting, owner labels, the daemon's error messages, the image checks, leftover clean-up, and the
executor's isolation line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.errors import ConfigError
from humanevalfix.sandbox import cover, docker, jail
from humanevalfix.sandbox.child.procs import start_time
from humanevalfix.sandbox.cover import COVER, closed_ancestors, covered_paths, unshare_argv
from humanevalfix.sandbox.docker import (
    LABEL,
    NO_CLI,
    OWNER_LABEL,
    DockerExecutor,
    DockerSettings,
    container_argv,
    daemon_problem,
    mount,
    owner_alive,
    owner_label,
)
from humanevalfix.sandbox.executor import Limits, child_env
from humanevalfix.sandbox.factory import weaker_warning
from humanevalfix.sandbox.jail import (
    CHILD_DIR,
    DESCRIPTIONS,
    FS,
    JAIL_SOCK,
    JAIL_SRC,
    JAIL_WORK,
    NET,
    PACKAGE_DIR,
    PIDS,
    RUNNER_FILES,
    SANDBOX_UID,
    Jail,
    bind_problem,
    hidden_package_dirs,
    link_chain,
    python_roots,
)

# A root harness's jail, dropped to uid 65534 with no groups, capabilities or way to gain any: the
# command line both levels (unshare after its cover, bwrap after its mounts) run their command under.
DROPPED = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
]

# ---------------------------------------------------------------- jail.py


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """A harness that is not root: the unshare jail maps it to root in a user namespace of its own."""
    monkeypatch.setattr(jail.os, "geteuid", lambda: 1000)


def test_levels_guarantee_and_describe_what_they_isolate(as_user: None) -> None:
    assert Jail("bwrap", python_roots=("/opt/py",)).guarantees == {NET, PIDS, FS}
    assert Jail("unshare").guarantees == {NET, PIDS}
    assert Jail("none").guarantees == frozenset()
    assert Jail("docker", python="python3").guarantees == {NET, PIDS, FS}
    assert Jail("none").description == DESCRIPTIONS["none"] and "rlimits only" in DESCRIPTIONS["none"]
    shown = Jail("bwrap", python_roots=("/opt/py",), ro_binds=(Path("/srv/app"), Path("/data/x"))).description
    assert shown.endswith("; read-only at the same path: /srv/app, /data/x) + rlimits")
    assert Jail("unshare", ro_binds=(Path("/srv/app"),)).description == DESCRIPTIONS["unshare"]  # the host's anyway


def test_the_runner_is_seen_where_the_jail_shows_it() -> None:
    assert Jail("bwrap", python_roots=("/opt/py",)).runner == f"{JAIL_SRC}/runner.py"
    assert Jail("docker", python="python3").runner == "/hefix/runner.py"
    assert Jail("none").runner == str(CHILD_DIR / "runner.py") == Jail("unshare").runner
    assert all((CHILD_DIR / name).is_file() for name in RUNNER_FILES)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("relative/dir", "not an absolute, normalised path"),
        ("/srv/../etc", "not an absolute, normalised path"),
        ("/srv/app/", None),  # Path drops the slash
        ("/", "the whole file system"),
        ("/proc", "the sandbox uses /proc itself"),
        ("/dev/shm", "the sandbox uses /dev itself"),
        ("/hefix", "the sandbox uses /hefix itself"),
        ("/hefix-work/x", "the sandbox uses /hefix-work itself"),
        ("/hefix-sock", "the sandbox uses /hefix-sock itself"),
        ("/hefixer", None),  # a prefix of the name is not the folder
        ("/srv/app", None),
    ],
)
def test_bind_problem(path: str, why: str | None) -> None:
    assert bind_problem(Path(path)) == why


def test_a_jail_refuses_a_bind_it_cannot_make() -> None:
    with pytest.raises(ValueError, match="cannot bind /proc into the sandbox: the sandbox uses /proc itself"):
        Jail("none", ro_binds=(Path("/proc"),))
    assert Jail("none", ro_binds=("/srv/app",)).ro_binds == (Path("/srv/app"),)  # strings become paths


def test_wrap_puts_the_command_inside_the_jail(as_user: None) -> None:
    argv = ["python", "-I", "-c", "print(1)"]
    assert Jail("none").wrap(argv, as_pid_1=True) == argv and Jail("none").wrap(argv, as_pid_1=True) is not argv
    wrapped = Jail("unshare").wrap(argv, as_pid_1=False)
    assert wrapped[: len(unshare_argv()) + 1] == [*unshare_argv(), "--"] and wrapped[-len(argv) - 1 :] == ["--", *argv]
    assert unshare_argv()[:3] == ["unshare", "--user", "--map-root-user"]
    assert {"--net", "--pid", "--mount", "--fork", "--mount-proc", "--kill-child"} <= set(unshare_argv())
    # In its own mount namespace, before the interpreter: this package read-only, its dataset covered.
    cover = wrapped[len(unshare_argv()) + 1 : -len(argv) - 1]
    assert cover[:4] == ["/bin/sh", "-c", COVER, "hefix-cover"]
    assert f"ro:{PACKAGE_DIR.resolve()}" in cover and str((PACKAGE_DIR / "evaluation" / "data").resolve()) in cover
    with pytest.raises(ValueError, match="a docker jail is a container"):
        Jail("docker", python="python3").wrap(argv, as_pid_1=True)


def test_a_root_harness_runs_unshare_candidates_as_uid_65534(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user namespace (in one of its own the candidate would still be host root to every file):
    the cover, then setpriv to 65534 with no groups, capabilities or way to gain any; the
    directories it must pass through that others may not (a root harness's /root) are opened by
    an overlay in the jail's mount namespace only."""
    monkeypatch.setattr(jail.os, "geteuid", lambda: 0)
    home = tmp_path / "home"
    (home / "py" / "bin").mkdir(parents=True)
    home.chmod(0o700)
    python = str(home / "py" / "bin" / "python3")
    j = Jail("unshare", python=python, python_roots=(str(home / "py"),))
    assert j.candidate_uid == SANDBOX_UID and "uid 65534 without capabilities" in j.description
    argv = ["python", "-I", "-c", "print(1)"]
    wrapped = j.wrap(argv, as_pid_1=True)
    assert wrapped[: len(unshare_argv(False)) + 1] == [*unshare_argv(False), "--"] and "--user" not in wrapped
    assert wrapped[-len(argv) - 9 :] == ["--", *DROPPED, *argv][-len(argv) - 9 :]
    steps = wrapped[len(unshare_argv(False)) + 5 :]
    opened = [s for s in steps if s.startswith(("open:", "x:"))]
    assert steps[0] == "shm" and opened[0].startswith("open:") and opened[-1] in (f"open:{home}", f"x:{home}")
    assert steps.index(opened[-1]) < steps.index(f"ro:{PACKAGE_DIR.resolve()}")  # opened, then protected
    # Inside an overlay, a closed folder is made passable in it: no overlay on an overlay.
    assert cover._opening(("/a", "/a/b", "/c")) == ["open:/a", "x:/a/b", "open:/c"]
    monkeypatch.setattr(jail.os, "geteuid", lambda: 1000)
    assert Jail("unshare").candidate_uid is None and Jail("bwrap", python_roots=("/opt/py",)).candidate_uid is None


def test_a_root_harness_runs_bwrap_candidates_as_host_uid_65534(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50: in a user namespace of its own, bwrap's 65534 is host uid 0 under a root harness,
    owner of the root files and of its fork server's /proc files. So bwrap makes no user namespace
    there, keeps only the capabilities `setpriv` needs, and the command is dropped to 65534 with no
    groups, capabilities or way to gain any; the folders bwrap makes on the way to its mounts are
    passable, its tmpfs writable by the dropped jail. `fix` (ro_binds) keeps the user namespace."""
    monkeypatch.setattr(jail.os, "geteuid", lambda: 0)
    root = "/root/.pyenv/versions/3.11"
    j = Jail("bwrap", python_roots=(root,))
    assert j.candidate_uid == SANDBOX_UID
    argv = j.wrap(["python3", "-c", "1"], as_pid_1=True)
    cut = argv.index("--")
    head, command = argv[:cut], argv[cut + 1 :]
    assert "--unshare-all" not in head and "--uid" not in head and "--unshare-user" not in head
    assert {"--unshare-pid", "--unshare-net", "--unshare-ipc"} <= set(head)
    added = [head[i + 1] for i, a in enumerate(head) if a == "--cap-add"]
    assert sorted(added) == ["CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID"] and head[head.index("--cap-drop") + 1] == "ALL"
    assert command == [*DROPPED, "python3", "-c", "1"]
    dirs = [head[i + 3] for i, a in enumerate(head) if head[i : i + 3] == ["--perms", "0755", "--dir"]]
    assert {"/root", "/root/.pyenv", "/root/.pyenv/versions", JAIL_SRC, "/etc"} <= set(dirs)
    assert dirs.index("/root") < dirs.index("/root/.pyenv") < dirs.index("/root/.pyenv/versions")
    assert "/usr" not in dirs and not any(d.startswith("/usr/") for d in dirs)  # inside a mount: the host's
    for tmpfs in ("/tmp", "/dev/shm", JAIL_WORK):
        i = head.index(tmpfs)
        assert head[i - 1] == "--tmpfs" and "1777" in head[i - 5 : i]
    project = Jail("bwrap", python_roots=(root,), ro_binds=(Path("/tmp/hefix-project"),))
    assert project.candidate_uid is None and "--uid" in project.wrap(["python3"], as_pid_1=True)


def test_closed_ancestors_are_the_ones_others_cannot_pass(tmp_path: Path) -> None:
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "f").write_text("x")
    (tmp_path / "a").chmod(0o700)
    (tmp_path / "a" / "b").chmod(0o755)
    (tmp_path / "a" / "b" / "c").chmod(0o750)
    found = closed_ancestors([str(tmp_path / "a" / "b" / "c" / "f"), str(tmp_path / "a" / "b" / "c")])
    assert found[-2:] == (str(tmp_path / "a"), str(tmp_path / "a" / "b" / "c"))
    assert str(tmp_path / "a" / "b") not in found and closed_ancestors(["/usr/bin/env"]) == ()


def mounts_of(argv: list[str]) -> list[tuple[str, ...]]:
    """bwrap's mount operations in order, each as (option, *its arguments)."""
    arity = {"--ro-bind": 2, "--symlink": 2, "--proc": 1, "--dev": 1, "--tmpfs": 1, "--remount-ro": 1, "--size": 1}
    out, i = [], 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] in arity:
            n = arity[argv[i]]
            out.append(tuple(argv[i : i + n + 1]))
            i += n + 1
        else:
            i += 1
    return [m for m in out if m[0] != "--size"]


def test_bwrap_argv_mounts_each_thing_after_what_lies_above_it() -> None:
    root, project = "/tmp/hefix-venv", Path("/tmp/hefix-project")
    j = Jail("bwrap", python_roots=(root,), ro_binds=(project,), work_bytes=1 << 20, shm_bytes=1 << 16)
    argv = j.wrap(["python3", "-c", "1"], as_pid_1=True)
    assert argv[:3] == ["bwrap", "--unshare-all", "--die-with-parent"]
    assert argv[argv.index("--uid") + 1] == "65534" and "--as-pid-1" in argv
    assert argv[-4:] == ["--", "python3", "-c", "1"]
    assert argv[-10:-4] == ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", JAIL_WORK]
    mounts = mounts_of(argv)
    where = [m[-1] for m in mounts]
    assert where.index("/tmp") < where.index(root) and where.index("/tmp") < where.index(str(project))
    assert ("--ro-bind", root, root) in mounts and ("--ro-bind", str(project), str(project)) in mounts
    assert ("--ro-bind", "/usr", "/usr") == mounts[0]
    for name in RUNNER_FILES:
        assert ("--ro-bind", str(CHILD_DIR / name), f"{JAIL_SRC}/{name}") in mounts
    assert mounts[-2:] == [("--remount-ro", "/dev"), ("--remount-ro", "/")]
    sizes = [argv[i + 1] for i, a in enumerate(argv) if a == "--size"]
    assert sizes.count(str(1 << 20)) == 2 and str(1 << 16) in sizes  # work dir and /tmp; /dev/shm
    assert "--as-pid-1" not in j.wrap(["python3"], as_pid_1=False)


def test_this_package_is_hidden_where_the_interpreters_binds_would_show_it() -> None:
    shown = Jail("bwrap", python_roots=(str(PACKAGE_DIR.parent),))
    hidden = hidden_package_dirs(shown)
    assert str(PACKAGE_DIR) in hidden or str(PACKAGE_DIR.resolve()) in hidden
    mounts = mounts_of(shown.wrap(["python3"], as_pid_1=True))
    d = hidden[0]
    assert mounts.index(("--tmpfs", d)) + 1 == mounts.index(("--remount-ro", d))
    assert mounts.index(("--ro-bind", str(PACKAGE_DIR.parent), str(PACKAGE_DIR.parent))) < mounts.index(("--tmpfs", d))
    elsewhere = hidden_package_dirs(Jail("bwrap", python_roots=("/opt/elsewhere",)))
    system = str(PACKAGE_DIR.resolve()).startswith(("/usr/", "/lib"))  # an install the system binds show
    assert elsewhere == [] or (system and elsewhere == [str(PACKAGE_DIR.resolve())])


def test_link_chain_follows_each_symlink(tmp_path: Path) -> None:
    (tmp_path / "python3.11").write_text("", encoding="utf-8")
    (tmp_path / "python3").symlink_to("python3.11")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to("../python3")
    assert link_chain(str(tmp_path / "bin" / "python")) == [
        str(tmp_path / "bin" / "python"),
        str(tmp_path / "python3"),
        str(tmp_path / "python3.11"),
    ]
    assert link_chain(str(tmp_path / "python3.11")) == [str(tmp_path / "python3.11")]


def test_python_roots_binds_the_interpreters_trees_once(tmp_path: Path) -> None:
    venv, base = tmp_path / "venv", tmp_path / "base"
    site = venv / "lib" / "site-packages"
    (site / "numpy").mkdir(parents=True)
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "python3.11").write_text("", encoding="utf-8")
    elsewhere = tmp_path / "other" / "pytest"
    elsewhere.mkdir(parents=True)
    layout = {
        "dirs": [str(venv), str(site), str(base), "/usr", "/usr/lib/python3.11", str(tmp_path / "missing")],
        "modules": {"numpy": [str(site / "numpy")], "pytest": [str(elsewhere)]},
        "chain": [str(base / "bin" / "python3.11")],
        "executable": str(base / "bin" / "python3.11"),
    }
    roots = python_roots(layout)
    # Shortest first, what lies inside a kept root left out, the system and missing folders never.
    assert sorted(roots) == sorted([str(venv), str(base), str(tmp_path / "other")])
    assert not any(r.startswith("/usr") for r in roots)
    assert python_roots({"dirs": ["/", "/tmp", "/home", "/etc"], "modules": {}, "chain": []}) == ()


@pytest.fixture
def fake_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """bwrap/unshare on PATH and the runs they make answered here: the interpreter's layout
    (LAYOUT_SCRIPT) and the probe script. The layout cache is emptied before and after."""
    state: dict[str, Any] = {"argv": [], "probe": ("ok\n", "", 0), "installed": {"bwrap", "unshare"}}

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        state["argv"].append(argv)
        if argv[-1].lstrip().startswith("import importlib.util, json"):  # LAYOUT_SCRIPT
            layout = {"dirs": ["/opt/fakepy"], "modules": {"numpy": ["/opt/fakepy/site/numpy"]}, "executable": argv[0]}
            return subprocess.CompletedProcess(argv, 0, json.dumps(layout), "")
        out, err, code = state["probe"]
        return subprocess.CompletedProcess(argv, code, out, err)

    monkeypatch.setattr(jail.subprocess, "run", run)
    monkeypatch.setattr(
        jail.shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}" if name in state["installed"] else None
    )
    jail._layout.cache_clear()
    yield state
    jail._layout.cache_clear()


FAKE_PY = "/opt/fakepy/bin/python3-for-tests"


def test_a_bwrap_jail_asks_the_interpreter_where_it_lives(fake_tools: dict[str, Any]) -> None:
    j = Jail("bwrap", python=FAKE_PY)
    assert j.imports == ("numpy",)
    layout_call = fake_tools["argv"][0]
    assert layout_call[:3] == [FAKE_PY, "-I", "-c"] and "('numpy', 'RestrictedPython', 'pytest')" in layout_call[3]
    assert jail.interpreter_layout(FAKE_PY)["chain"] == [FAKE_PY]  # no such file: the path alone
    assert len(fake_tools["argv"]) == 1  # asked once per interpreter
    copy = jail.interpreter_layout(FAKE_PY)
    copy["dirs"].append("/changed")
    assert "/changed" not in jail.interpreter_layout(FAKE_PY)["dirs"]  # callers get copies


def test_an_interpreter_that_does_not_run_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[Any] = [
        subprocess.CompletedProcess([], 1, "", "Traceback\nImportError: bad magic number\n"),
        subprocess.CompletedProcess([], 0, "not json", ""),
        OSError("No such file or directory"),
    ]

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(jail.subprocess, "run", run)
    jail._layout.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"^the interpreter /x/py1 does not run: ImportError: bad magic number$"):
            jail.interpreter_layout("/x/py1")
        with pytest.raises(ValueError, match=r"^the interpreter /x/py2 does not run: Expecting value"):
            jail.interpreter_layout("/x/py2")
        with pytest.raises(ValueError, match=r"^the interpreter /x/py3 does not run: No such file or directory$"):
            jail.interpreter_layout("/x/py3")
    finally:
        jail._layout.cache_clear()


def test_probe_says_why_a_level_does_not_work(fake_tools: dict[str, Any]) -> None:
    assert jail.probe("none") is None
    assert jail.probe("bwrap", FAKE_PY) is None
    probe_argv = fake_tools["argv"][-1]
    assert probe_argv[0] == "bwrap" and probe_argv[-4:-1] == [FAKE_PY, "-I", "-c"]
    assert "network interfaces visible" in probe_argv[-1] and "'numpy'" in probe_argv[-1]
    fake_tools["probe"] = ("", "bwrap: No permissions to create new namespace\n", 1)
    assert jail.probe("bwrap", FAKE_PY) == "bwrap failed: bwrap: No permissions to create new namespace"
    fake_tools["probe"] = ("", "", 1)
    assert jail.probe("unshare", FAKE_PY) == "unshare failed: exit status 1"
    refused = jail.probe("bwrap", FAKE_PY, (Path("/proc"),))
    assert refused is not None and refused.startswith("bwrap failed: cannot bind /proc")
    fake_tools["installed"] = set()
    assert jail.probe("unshare", FAKE_PY) == "unshare is not installed"
    assert jail.probe_env() == {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def test_best_level_and_the_warning_when_it_is_weaker(monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = {"bwrap": "bwrap failed: no user namespaces", "unshare": None}
    monkeypatch.setattr(jail, "probe", lambda level, python=sys.executable, ro_binds=(): verdicts[level])
    assert jail.best_level() == ("unshare", {"bwrap": "bwrap failed: no user namespaces"})
    verdicts["unshare"] = "unshare is not installed"
    level, why = jail.best_level()
    assert level == "none" and why == {
        "bwrap": "bwrap failed: no user namespaces",
        "unshare": "unshare is not installed",
    }
    assert weaker_warning("bwrap", {}) is None
    assert weaker_warning("none", why) == (
        "no file-system isolation (bwrap failed: no user namespaces): candidates run under process and can write "
        "wherever this user can"
    )
    assert weaker_warning("unshare", {}).startswith(
        "no file-system isolation (bwrap was not tried): candidates run under unshare"
    )  # type: ignore[union-attr]


# ---------------------------------------------------------------- docker.py


def test_docker_settings_default_to_this_pythons_image() -> None:
    from humanevalfix.sandbox.image import default_tag

    assert DockerSettings().tag == default_tag() and DockerSettings(image="me/py:3").tag == "me/py:3"
    assert (DockerSettings().cpus, DockerSettings().memory, DockerSettings().pids) == (1.0, 1 << 30, 64)


def test_mount_values_quote_what_would_split_them() -> None:
    assert mount("/src", "/dst") == "type=bind,source=/src,target=/dst,readonly"
    assert mount("/a,b", "/c", readonly=False) == 'type=bind,"source=/a,b",target=/c'
    assert mount('/q"x', "/d") == 'type=bind,"source=/q""x",target=/d,readonly'


def test_owner_labels_name_a_live_process() -> None:
    label = owner_label()
    host, pid, started = label.rsplit(":", 2)
    assert (host, int(pid), int(started)) == (socket.gethostname(), os.getpid(), start_time(os.getpid()))
    assert owner_alive(label)
    assert not owner_alive(f"{host}:{pid}:{int(started) + 1}")  # the pid is someone else's now
    assert owner_alive("another-host.example:1:2")  # not ours to judge
    assert not owner_alive("garbage") and not owner_alive(f"{host}:x:1")


def test_container_argv_locks_the_container_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker.os, "getuid", lambda: 0)  # a root harness: the container runs as nobody
    settings = DockerSettings(image="me/py:3", cpus=0.5, memory=512 << 20, pids=32)
    j = Jail("docker", python="python3", ro_binds=(tmp_path,), work_bytes=8 << 20)
    argv = container_argv(settings, j, "hefix-1", "/tmp/sockdir")
    assert argv[:4] == ["docker", "run", "--rm", "--name"] and argv[4] == "hefix-1" and argv[-1] == "me/py:3"

    def value(flag: str) -> list[str]:
        return [argv[i + 1] for i, a in enumerate(argv) if a == flag]

    assert value("--label") == [f"{LABEL}=1", f"{OWNER_LABEL}={owner_label()}"]
    assert value("--network") == ["none"] and "--read-only" in argv and value("--cap-drop") == ["ALL"]
    assert value("--security-opt") == ["no-new-privileges"] and value("--user") == ["65534:65534"]
    assert value("--pids-limit") == ["32"] and value("--cpus") == ["0.5"]
    assert value("--memory") == value("--memory-swap") == [str(512 << 20)]  # no swap beyond the memory
    size = 8 << 20
    assert value("--tmpfs") == [
        f"{JAIL_WORK}:rw,nosuid,nodev,noexec,size={size},uid=65534,gid=65534,mode=0700",
        f"/tmp:rw,nosuid,nodev,noexec,size={size},mode=1777",
    ]
    assert value("--workdir") == [JAIL_WORK] and value("--shm-size") == [str(size)]
    mounts = value("--mount")
    assert mounts[0] == f"type=bind,source=/tmp/sockdir,target={JAIL_SOCK}"  # writable: the socket goes there
    assert mounts[1 : 1 + len(RUNNER_FILES)] == [mount(str(CHILD_DIR / f), f"{JAIL_SRC}/{f}") for f in RUNNER_FILES]
    assert mounts[-1] == mount(str(tmp_path), str(tmp_path))
    assert value("--env") == [f"{k}={v}" for k, v in child_env().items()]
    monkeypatch.setattr(docker.os, "getuid", lambda: 1000)
    monkeypatch.setattr(docker.os, "getgid", lambda: 100)
    assert "1000:100" in container_argv(settings, j, "n", "/f")  # a user in the docker group: its own ids


def test_daemon_problem_says_what_to_do() -> None:
    assert "add your user to the docker group" in daemon_problem(
        "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock"
    )
    assert "the Docker daemon is not running" in daemon_problem(
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
    )
    assert (
        daemon_problem("warning\nError: something odd\n")
        == "--sandbox docker: docker does not answer: Error: something odd"
    )
    assert daemon_problem("  ") == "--sandbox docker: docker does not answer: no message"


@pytest.fixture
def docker_answers(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """docker.docker (the one CLI call) answered from `answers` by the first argument; calls kept."""
    state: dict[str, Any] = {"calls": [], "answers": {}}

    def call(args: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        state["calls"].append(args)
        code, out, err = state["answers"].get(args[0], (0, "", ""))
        return subprocess.CompletedProcess(["docker", *args], code, out, err)

    monkeypatch.setattr(docker, "docker", call)
    monkeypatch.setattr(docker.shutil, "which", lambda name, *a, **k: "/usr/bin/docker")
    return state


def test_the_docker_cli_call_turns_failures_into_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(argv: list[str], **kwargs: Any) -> Any:
        raise FileNotFoundError("docker")

    def stuck(argv: list[str], **kwargs: Any) -> Any:
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    monkeypatch.setattr(docker.subprocess, "run", missing)
    with pytest.raises(ConfigError) as info:
        docker.docker(["version"])
    assert str(info.value) == NO_CLI
    monkeypatch.setattr(docker.subprocess, "run", stuck)
    with pytest.raises(ConfigError, match=r"`docker ps` did not answer in 7 s \(is dockerd stuck\? see its log\)"):
        docker.docker(["ps", "-a"], timeout=7)


def test_check_daemon(docker_answers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    docker_answers["answers"]["version"] = (0, "27.1.0\n", "")
    docker.check_daemon()
    assert docker_answers["calls"] == [["version", "--format", "{{.Server.Version}}"]]
    docker_answers["answers"]["version"] = (1, "", "Cannot connect to the Docker daemon at unix:///x.sock.")
    with pytest.raises(ConfigError, match="the Docker daemon is not running"):
        docker.check_daemon()
    docker_answers["answers"]["version"] = (0, "\n", "")  # a client without a server
    with pytest.raises(ConfigError, match="docker does not answer: no message"):
        docker.check_daemon()
    monkeypatch.setattr(docker.shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(ConfigError, match="the docker CLI is not installed"):
        docker.check_daemon()


def test_ensure_image_builds_only_the_default_image(
    docker_answers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    notes: list[str] = []

    def build(tag: str) -> None:
        built.append(tag)
        if tag == "broken:1":
            raise RuntimeError("docker import failed: no space left on device")

    monkeypatch.setattr(docker, "build_image", build)
    docker.ensure_image(DockerSettings(image="present:1"), notes.append)  # inspect answers 0: it is there
    assert docker_answers["calls"] == [["image", "inspect", "--format", "{{.Id}}", "present:1"]] and built == []
    docker_answers["answers"]["image"] = (1, "", "No such image")
    with pytest.raises(ConfigError, match=r"--docker-image mine:2: no such image here \(docker pull mine:2"):
        docker.ensure_image(DockerSettings(image="mine:2"), notes.append)
    monkeypatch.setattr(DockerSettings, "tag", property(lambda self: self.image or "default:1"))
    docker.ensure_image(DockerSettings(), notes.append)
    assert built == ["default:1"] and notes[0].startswith("docker: building the sandbox image default:1")
    monkeypatch.setattr(DockerSettings, "tag", property(lambda self: "broken:1"))
    with pytest.raises(ConfigError, match="could not build broken:1: docker import failed: no space left on device"):
        docker.ensure_image(DockerSettings(), notes.append)


def test_probe_image_runs_the_probe_under_the_executors_own_flags(docker_answers: dict[str, Any]) -> None:
    j = Jail("docker", python="python3")
    docker_answers["answers"]["run"] = (0, "ok\n", "")
    docker.probe_image(DockerSettings(image="img:1"), j)
    (args,) = docker_answers["calls"]
    assert args[0] == "run" and args[-5:] == ["img:1", "python3", "-I", "-c", docker.PROBE]
    assert "--read-only" in args and args[args.index("--network") + 1] == "none"
    folder = args[args.index("--mount") + 1].split("source=")[1].split(",")[0]
    assert not os.path.exists(folder)  # the probe's socket folder is removed
    docker_answers["answers"]["run"] = (1, "", 'exec: "python3": executable file not found in $PATH\n')
    with pytest.raises(ConfigError, match=r"the image img:1 cannot run the sandbox \(exec: \"python3\": executable"):
        docker.probe_image(DockerSettings(image="img:1"), j)
    docker_answers["answers"]["run"] = (0, "", "")
    with pytest.raises(ConfigError, match=r"cannot run the sandbox \(exit status 0\); it needs python3 >= 3.10"):
        docker.probe_image(DockerSettings(image="img:1"), j)


def test_remove_leftovers_removes_the_containers_of_dead_owners(docker_answers: dict[str, Any]) -> None:
    host = socket.gethostname()
    mine, dead, foreign = owner_label(), f"{host}:{os.getpid()}:1", "elsewhere:5:6"
    docker_answers["answers"]["ps"] = (0, f"aaa\t{mine}\nbbb\t{dead}\nccc\t{foreign}\nddd\t\n\n", "")
    assert docker.remove_leftovers() == ["bbb", "ddd"]  # no owner label: nobody's, so gone
    ps, rm = docker_answers["calls"]
    assert ps[:4] == ["ps", "-a", "--filter", f"label={LABEL}"] and OWNER_LABEL in ps[-1]
    assert rm == ["rm", "-f", "bbb", "ddd"]
    docker_answers["calls"].clear()
    docker_answers["answers"]["ps"] = (0, f"aaa\t{mine}\n", "")
    assert docker.remove_leftovers() == [] and len(docker_answers["calls"]) == 1  # nothing to remove: no rm


def test_socket_folder_is_private_and_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = docker.socket_folder()
    try:
        assert os.path.isdir(folder) and len(os.path.join(folder, docker.SOCKET_NAME)) <= docker.MAX_SOCKET_PATH
        assert os.stat(folder).st_mode & 0o077 == 0
    finally:
        os.rmdir(folder)
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    monkeypatch.setattr(docker.tempfile, "tempdir", str(deep))  # too long for a socket path: /tmp instead
    folder = docker.socket_folder()
    try:
        assert folder.startswith("/tmp/hefix-docker-") and not any(deep.iterdir())
    finally:
        os.rmdir(folder)


def test_the_docker_executor_says_what_bounds_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(docker.os, "getuid", lambda: 0)
    settings = DockerSettings(image="img:1", cpus=2, memory=256 << 20, pids=16)
    ex = DockerExecutor(Limits(timeout_s=3), jail=Jail("docker", python="python3"), settings=settings)
    assert ex.name == "docker" and ex.warm and ex.cgroups is None and ex.settings is settings
    assert "at most 16 processes, 256 MiB memory without swap, 2 CPUs; image img:1) + rlimits" in ex.isolation
    assert {"procs", "memory"} <= set(ex.guarantees) and FS in ex.guarantees
    bound = DockerExecutor(Limits(), jail=Jail("docker", python="python3", ro_binds=(tmp_path,)), settings=settings)
    assert f"image img:1; read-only at the same path: {tmp_path}) + rlimits" in bound.isolation
    monkeypatch.setattr(docker.os, "getuid", lambda: 1000)
    mine = DockerExecutor(Limits(), jail=Jail("docker", python="python3"), settings=settings)
    assert "uid 1000 without capabilities" in mine.isolation and "uid 65534" not in mine.isolation


def test_docker_factory_checks_once_then_makes_executors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    steps: list[str] = []
    monkeypatch.setattr(docker, "check_daemon", lambda: steps.append("daemon"))
    monkeypatch.setattr(docker, "ensure_image", lambda settings, notify: steps.append(f"image {settings.tag}"))
    monkeypatch.setattr(docker, "remove_leftovers", lambda: steps.append("leftovers") or [])
    monkeypatch.setattr(docker, "probe_image", lambda settings, j: steps.append(f"probe {j.level} {j.ro_binds}"))
    make: Callable[[], Any] = docker.docker_factory(Limits(timeout_s=2), DockerSettings(image="i:1"), (tmp_path,))
    assert steps == ["daemon", "image i:1", "leftovers", f"probe docker {(tmp_path,)}"]
    first, second = make(), make()
    assert isinstance(first, DockerExecutor) and first is not second and first.jail is second.jail
    assert first.limits.timeout_s == 2 and first.jail.python == "python3" and len(steps) == 4


def test_the_cover_hides_the_runs_dataset_file_and_the_hub_cache(tmp_path: Path, as_user: None) -> None:
    """A `--dataset-path` file reads as empty (/dev/null bound over it), the Hugging Face cache is
    covered like the harness's own; a file inside a covered folder needs no mount of its own (one
    would find nothing to mount on, and fail the jail)."""
    data = tmp_path / "mine.jsonl"
    data.write_text("{}\n")
    hub = tmp_path / "hub"
    hub.mkdir()
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HOME": str(hub), "HUMANEVALFIX_PLUS_CACHE": "off"}
    env["HUMANEVALFIX_TEST_CACHE"] = "off"
    bundled = PACKAGE_DIR / "evaluation" / "data" / "humanevalpack_python.jsonl"
    paths = covered_paths(env, hidden=(data, bundled, tmp_path / "gone.jsonl"))
    assert f"null:{data.resolve()}" in paths and str(hub.resolve()) in paths
    assert not any(str(bundled.resolve()) in p for p in paths)  # inside the covered data folder
    assert not any("gone.jsonl" in p for p in paths)
    assert Jail("unshare", hidden=(data,)).wrap(["python"], as_pid_1=False).count(f"null:{data.resolve()}") == 1
    # A hub folder that holds the harness (HF_HOME=~, say) would hide the jail's own interpreter or package.
    holding = covered_paths(env | {"HF_HOME": str(PACKAGE_DIR.parent)})
    assert str(PACKAGE_DIR.parent.resolve()) not in holding
