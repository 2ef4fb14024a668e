"""sandbox/image.py in-process: what goes into the Docker sandbox's image, never a real docker call.

The file tree (host files at their own paths with the symlinks on the way, made-up files, empty
mount points), the tar stream it becomes (owners, times, modes, links), the files chosen from this
interpreter (standard library without its test suite, numpy and pytest with what they require),
the `ldd` output parsed for shared libraries, and `docker import`'s command line, input and errors,
with `ldd` and `docker` replaced by stand-ins that answer as they do.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import pytest

from humanevalfix.sandbox import image
from humanevalfix.sandbox.image import (
    EMPTY_DIRS,
    GROUP,
    IMAGE_REPOSITORY,
    PASSWD,
    STDLIB_SKIP_FILES,
    BuiltImage,
    Tree,
    default_tag,
    distribution_names,
    shared_libraries,
)


def members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        return {m.name: m for m in tar.getmembers()}


def test_default_tag_names_this_python() -> None:
    assert default_tag("3.12.1") == f"{IMAGE_REPOSITORY}:3.12.1" == "humanevalfix-sandbox:3.12.1"
    assert default_tag() == f"humanevalfix-sandbox:{sys.version.split()[0]}"


def test_made_up_members_bring_the_folders_above_them() -> None:
    tree = Tree()
    tree.add_bytes("/etc/passwd", b"root\n")
    tree.add_symlink("/usr/local/bin/python3", "/opt/py/bin/python3.11")
    tree.add_dir("/hefix-work")
    assert tree.members == {
        "/etc": ("dir", None),
        "/etc/passwd": ("data", b"root\n"),
        "/usr": ("dir", None),
        "/usr/local": ("dir", None),
        "/usr/local/bin": ("dir", None),
        "/usr/local/bin/python3": ("symlink", "/opt/py/bin/python3.11"),
        "/hefix-work": ("dir", None),
    }


def test_a_host_file_keeps_every_symlink_on_its_way(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "lib").mkdir(parents=True)
    (real / "lib" / "libx.so.1.2").write_bytes(b"\x7fELF")
    (real / "lib" / "libx.so.1").symlink_to("libx.so.1.2")
    (tmp_path / "lib").symlink_to("real/lib")  # a folder above the file is a link, as /lib -> usr/lib
    tree = Tree()
    tree.add_host(str(tmp_path / "lib" / "libx.so.1"))
    kinds = {path: kind for path, (kind, _) in tree.members.items() if path.startswith(str(tmp_path))}
    assert kinds == {
        str(tmp_path): "dir",
        str(tmp_path / "lib"): "symlink",
        str(real): "dir",
        str(real / "lib"): "dir",
        str(real / "lib" / "libx.so.1"): "symlink",
        str(real / "lib" / "libx.so.1.2"): "file",
    }
    assert tree.members[str(tmp_path / "lib")] == ("symlink", "real/lib")
    assert tree.members[str(real / "lib" / "libx.so.1.2")] == ("file", str(real / "lib" / "libx.so.1.2"))
    before = dict(tree.members)
    tree.add_host(str(real / "lib" / "libx.so.1.2"))  # already there: nothing changes
    tree.add_host(str(tmp_path / "missing"))  # neither file nor folder: nothing added
    assert tree.members == before


def test_a_host_tree_skips_the_folders_named_only_at_its_top(tmp_path: Path) -> None:
    for rel in ("test/a.py", "pkg/test/b.py", "pkg/c.py", "pkg/_testcapi.cpython.so", "pkg/d.opt-1.pyc", "e.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x", encoding="utf-8")
    tree = Tree()
    tree.add_host_tree(str(tmp_path), {"test"}, STDLIB_SKIP_FILES)
    files = sorted(os.path.relpath(p, tmp_path) for p, (kind, _) in tree.members.items() if kind == "file")
    assert files == ["e.py", "pkg/c.py", "pkg/test/b.py"]


def test_skipped_file_names() -> None:
    skipped = ["_testcapi.cpython-311-x86_64-linux-gnu.so", "_tkinter.so", "xxlimited_35.so", "mod.opt-2.pyc"]
    kept = ["test_mod.py", "numpy.py", "mod.cpython-311.pyc", "_ctypes.so", "tkinter.py"]
    assert all(STDLIB_SKIP_FILES.search(n) for n in skipped)
    assert not any(STDLIB_SKIP_FILES.search(n) for n in kept)


def test_the_tar_stream_has_fixed_owners_times_and_safe_modes(tmp_path: Path) -> None:
    script, data = tmp_path / "run.sh", tmp_path / "data.txt"
    script.write_bytes(b"#!/bin/sh\n")
    script.chmod(0o4755)  # setuid on the host: never in the image
    data.write_bytes(b"hello")
    data.chmod(0o600)  # readable by its owner only: the sandbox's uid must read it
    tree = Tree()
    tree.add_host(str(script))
    tree.add_host(str(data))
    tree.add_bytes("/etc/passwd", PASSWD.encode())
    tree.add_symlink("/bin", "usr/bin")
    tree.add_dir("/tmp")
    out = io.BytesIO()
    count, written = tree.write(out)
    assert count == len(tree.members) and written == len(out.getvalue()) > 0
    got = members(out.getvalue())
    assert set(got) == {p.lstrip("/") for p in tree.members}
    assert all((m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "root", "root", 0) for m in got.values())
    assert got[str(script).lstrip("/")].mode == 0o755 and got[str(data).lstrip("/")].mode == 0o644
    assert got["tmp"].isdir() and got["tmp"].mode == 0o1777
    assert got["etc"].isdir() and got["etc"].mode == 0o755
    assert got["bin"].issym() and got["bin"].linkname == "usr/bin"
    with tarfile.open(fileobj=io.BytesIO(out.getvalue()), mode="r:") as tar:
        assert tar.extractfile("etc/passwd").read() == PASSWD.encode()  # type: ignore[union-attr]
        assert tar.extractfile(str(data).lstrip("/")).read() == b"hello"  # type: ignore[union-attr]
        names = tar.getnames()
    depths = [n.count("/") for n in names]
    assert depths == sorted(depths)  # a folder before what is in it


LDD_OUTPUT = """\
\tlinux-vdso.so.1 (0x00007ffd5c3f2000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f0e6c000000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e6be00000)
\tlibmissing.so.3 => not found
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0e6c200000)
"""


def test_shared_libraries_are_read_from_ldd(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        asked.append(argv)
        if argv[1] == "/broken":
            raise OSError("exec format error")
        if argv[1] == "/slow":
            raise subprocess.TimeoutExpired(argv, 30)
        return subprocess.CompletedProcess(argv, 0, LDD_OUTPUT if argv[1] == "/bin/python" else "statically linked\n")

    monkeypatch.setattr(image.subprocess, "run", run)
    found = shared_libraries(["/bin/python", "/broken", "/slow", "/bin/static"])
    assert found == {
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
    }
    assert asked == [["ldd", b] for b in ("/bin/python", "/broken", "/slow", "/bin/static")]


def test_distribution_names_follow_the_requirements_that_are_installed() -> None:
    names = distribution_names(["numpy", "pytest", "surely-not-installed-dist"])
    assert names[:2] == ["numpy", "pytest"] and "surely-not-installed-dist" not in names
    assert "pluggy" in names and "iniconfig" in names  # what pytest requires, wherever it is installed
    assert len(names) == len(set(names))
    assert distribution_names(["surely-not-installed-dist"]) == []


@pytest.fixture(scope="module")
def interpreter_tree() -> Tree:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(image, "shared_libraries", lambda binaries: {"/lib64/ld-linux-x86-64.so.2"})
        return image.interpreter_tree()


def test_the_interpreters_tree_has_what_the_sandbox_needs(interpreter_tree: Tree) -> None:
    m = interpreter_tree.members
    executable = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    assert m[executable] == ("file", executable)
    assert m["/usr/local/bin/python3"] == ("symlink", executable)
    assert m["/etc/passwd"] == ("data", PASSWD.encode()) and m["/etc/group"] == ("data", GROUP.encode())
    assert all(m[d] == ("dir", None) for d in EMPTY_DIRS)
    stdlib = sysconfig.get_path("stdlib")
    assert m[f"{stdlib}/json/__init__.py"][0] == "file"
    assert f"{stdlib}/test/__init__.py" not in m and f"{stdlib}/idlelib/__init__.py" not in m  # skipped
    site = [p.split("site-packages/", 1)[1] for p in m if "site-packages/" in p]
    assert {top.split("/")[0] for top in site if "/" in top} >= {"numpy", "_pytest", "pluggy"}
    assert not any(top.startswith(("rich/", "matplotlib/", "humanevalfix/")) for top in site)  # nothing else
    numpy = [p for p in m if p.endswith("/numpy/__init__.py")]
    assert len(numpy) == 1 and m[numpy[0]][0] == "file"
    assert any(p.endswith("/_pytest/__init__.py") for p in m)
    assert "/lib64/ld-linux-x86-64.so.2" in m or any(kind == "symlink" for kind, _ in m.values())


class FakePopen:
    """docker import: reads the tar from stdin; exits `code` with `stderr`."""

    instances: list[FakePopen] = []
    code, stderr, hang = 0, b"", False

    def __init__(self, argv: list[str], stdin: int, stdout: int, stderr: IO[bytes]) -> None:
        self.argv, self.stdin, self.err = argv, io.BytesIO(), stderr
        self.stdin.close = lambda: None  # type: ignore[method-assign]  # keep what was written readable
        self.killed = False
        FakePopen.instances.append(self)

    def wait(self, timeout: float | None = None) -> int:
        if FakePopen.hang and timeout is not None:
            raise subprocess.TimeoutExpired(self.argv, timeout)
        self.err.write(FakePopen.stderr)
        self.returncode = FakePopen.code
        return self.returncode

    def kill(self) -> None:
        self.killed = True


@pytest.fixture
def docker_cli(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`docker import` and `docker image inspect` / `rmi` replaced; the image is a small tree."""
    state: dict[str, Any] = {"ids": ["sha256:old", "sha256:new"], "runs": []}
    FakePopen.instances, FakePopen.code, FakePopen.stderr, FakePopen.hang = [], 0, b"", False

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        state["runs"].append(argv)
        if argv[1:3] == ["image", "inspect"]:
            ident = state["ids"].pop(0) if state["ids"] else None
            return subprocess.CompletedProcess(argv, 0 if ident else 1, (ident or "") + "\n", "")
        return subprocess.CompletedProcess(argv, 0, "", "")

    small = Tree()
    small.add_bytes("/etc/passwd", PASSWD.encode())
    small.add_dir("/tmp")
    fake = SimpleNamespace(
        Popen=FakePopen,
        run=run,
        PIPE=subprocess.PIPE,
        DEVNULL=subprocess.DEVNULL,
        TimeoutExpired=subprocess.TimeoutExpired,
        SubprocessError=subprocess.SubprocessError,
    )
    monkeypatch.setattr(image, "subprocess", fake)
    monkeypatch.setattr(image, "interpreter_tree", lambda python=None: small)
    state["tree"] = small
    return state


def test_build_image_streams_the_tree_to_docker_import(docker_cli: dict[str, Any]) -> None:
    built = image.build_image("hefix-test:1")
    assert isinstance(built, BuiltImage) and built.tag == "hefix-test:1" and built.files == 3
    (proc,) = FakePopen.instances
    assert proc.argv[:2] == ["docker", "import"] and proc.argv[-2:] == ["-", "hefix-test:1"]
    changes = [proc.argv[i + 1] for i, a in enumerate(proc.argv) if a == "--change"]
    assert changes == [
        "ENV PATH=/usr/local/bin:/usr/bin:/bin",
        "ENV LANG=C.UTF-8",
        "USER 65534:65534",
        'CMD ["python3"]',
    ]
    streamed = proc.stdin.getvalue()
    assert built.tar_bytes == len(streamed) and set(members(streamed)) == {"etc", "etc/passwd", "tmp"}
    # The tag pointed at another image before: that one is removed, no longer tagged.
    assert docker_cli["runs"][-1] == ["docker", "rmi", "sha256:old"]


def test_build_image_of_a_new_tag_removes_nothing(docker_cli: dict[str, Any]) -> None:
    docker_cli["ids"] = [None]  # no image by that tag before
    image.build_image("hefix-test:2", docker="/usr/local/bin/docker")
    assert FakePopen.instances[0].argv[0] == "/usr/local/bin/docker"
    assert [argv[1] for argv in docker_cli["runs"]] == ["image"]  # only the inspect before the import


def test_build_image_failure_is_docker_imports_last_line(docker_cli: dict[str, Any]) -> None:
    FakePopen.code, FakePopen.stderr = 1, b"Error: pulling\nError response from daemon: no space left on device\n"
    with pytest.raises(
        RuntimeError, match="^docker import failed: Error response from daemon: no space left on device$"
    ):
        image.build_image("hefix-test:3")
    FakePopen.stderr = b""
    with pytest.raises(RuntimeError, match="^docker import failed: exit status 1$"):
        image.build_image("hefix-test:3")
    FakePopen.code, FakePopen.hang = 0, True
    with pytest.raises(RuntimeError, match="docker import did not finish in 600 s"):
        image.build_image("hefix-test:3")
    assert FakePopen.instances[-1].killed
