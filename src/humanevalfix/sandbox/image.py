"""The Docker executor's image, built offline from the interpreter running this code.

No registry is needed (or may be reachable): the image is a tarball handed to `docker import`,
holding only what the fork server and the candidates need, at the paths they have here:

- the interpreter binary and its prefix's standard library (no test suite, no Tk/IDLE, no static
  libpython), with a `python3` on PATH pointing at it;
- numpy (the scoring prelude imports it) and pytest with what it requires (`fix` runs the user's
  pytest tests), each as the files its distribution records;
- every shared library those need, as `ldd` resolves it here, with the symlinks on the way
  (`/lib` -> `usr/lib` on a merged-/usr system) and the loader's cache;
- a few tools candidates commonly run (`/bin/sh`, `sleep`, `cat`, ...), and a tiny /etc/passwd.

Nothing else of the host: no home directory, no other packages, no keys. The tarball is streamed
to `docker import` (never written to disk) with fixed owners and times.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections.abc import Container, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

IMAGE_REPOSITORY = "humanevalfix-sandbox"
# Distributions the image carries besides the standard library (pytest only when installed).
DISTRIBUTIONS = ("numpy", "pytest")
TOOLS = ("sh", "dash", "sleep", "cat", "echo", "ls", "env", "true", "false", "rm", "mkdir", "head")
# Parts of the standard library nothing in the sandbox uses: its test suite alone is half of it.
STDLIB_SKIP_DIRS = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "site-packages",
    "dist-packages",
}
STDLIB_SKIP_FILES = re.compile(r"^(_test\w*|_tkinter|xxlimited\w*|_xxtestfuzz|_ctypes_test)\.|\.opt-[12]\.pyc$")
IMPORT_TIMEOUT_S = 600.0
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
# Mount points the executor uses (jail.JAIL_SRC, JAIL_WORK, the socket dir) and the usual ones.
EMPTY_DIRS = ("/tmp", "/hefix", "/hefix-work", "/hefix-sock", "/proc", "/sys", "/dev", "/usr/local/bin")


def default_tag(version: str | None = None) -> str:
    return f"{IMAGE_REPOSITORY}:{version or platform.python_version()}"


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    files: int
    tar_bytes: int  # what was streamed to `docker import`: the image's uncompressed size
    seconds: float


class Tree:
    """The image's file system as tar members: host files at their own paths, plus made-up ones."""

    def __init__(self) -> None:
        self.members: dict[str, tuple[str, str | bytes | None]] = {}  # path -> (kind, source)

    def add_dirs_above(self, path: str) -> None:
        parent = os.path.dirname(path)
        while parent not in ("/", ""):
            self.members.setdefault(parent, ("dir", None))
            parent = os.path.dirname(parent)

    def add_dir(self, path: str) -> None:
        self.add_dirs_above(path)
        self.members.setdefault(path, ("dir", None))

    def add_bytes(self, path: str, data: bytes) -> None:
        self.add_dirs_above(path)
        self.members[path] = ("data", data)

    def add_symlink(self, path: str, target: str) -> None:
        self.add_dirs_above(path)
        self.members[path] = ("symlink", target)

    def add_host(self, path: str) -> None:
        """A host file at its own path, with every symlink on the way (in the folders above it
        and the file itself) kept as a symlink and its target added too."""
        path = os.path.abspath(path)
        if path in self.members and self.members[path][0] != "dir":
            return
        parts = Path(path).parts
        for i in range(2, len(parts) + 1):
            prefix = os.path.join(*parts[:i])
            if os.path.islink(prefix):
                target = os.readlink(prefix)
                self.add_symlink(prefix, target)
                resolved = os.path.normpath(os.path.join(os.path.dirname(prefix), target))
                rest = parts[i:]
                self.add_host(os.path.join(resolved, *rest) if rest else resolved)
                return
        if os.path.isdir(path):
            self.add_dir(path)
        elif os.path.isfile(path):
            self.add_dirs_above(path)
            self.members[path] = ("file", path)

    def add_host_tree(
        self, root: str, skip_dirs: Container[str] = frozenset(), skip_files: re.Pattern[str] | None = None
    ) -> None:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in skip_dirs or folder != root)
            for name in sorted(files):
                if skip_files is None or not skip_files.search(name):
                    self.add_host(os.path.join(folder, name))

    def write(self, out: IO[bytes]) -> tuple[int, int]:
        """The tar stream; (members, bytes written)."""
        counter = _Counter(out)
        with tarfile.open(fileobj=counter, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.members, key=lambda p: (p.count("/"), p)):
                info, data = _member(path, *self.members[path])
                try:
                    tar.addfile(info, data)
                finally:
                    if data is not None:
                        data.close()
        return len(self.members), counter.count


class _Counter(io.RawIOBase):
    def __init__(self, out: IO[bytes]) -> None:
        self.out, self.count = out, 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]  # tarfile writes bytes; RawIOBase takes any buffer
        self.out.write(data)
        self.count += len(data)
        return len(data)


def _member(path: str, kind: str, source: str | bytes | None) -> tuple[tarfile.TarInfo, IO[bytes] | None]:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    if kind == "dir":
        info.type, info.mode = tarfile.DIRTYPE, 0o1777 if path == "/tmp" else 0o755
        return info, None
    if kind == "symlink":
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, str(source), 0o777
        return info, None
    if kind == "data":
        data = source if isinstance(source, bytes) else b""
        info.size, info.mode = len(data), 0o644
        return info, io.BytesIO(data)
    host = str(source)
    st = os.stat(host)
    info.size = st.st_size
    # Readable by everyone (the sandbox's uid), executable where it was; never setuid.
    info.mode = 0o755 if st.st_mode & 0o111 else 0o644
    return info, open(host, "rb")


def shared_libraries(binaries: Iterable[str]) -> set[str]:
    """The libraries `ldd` resolves for each binary (and the loader itself)."""
    found: set[str] = set()
    for binary in binaries:
        try:
            out = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.splitlines():
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match:
                found.add(match.group(1))
    return found


def distribution_names(roots: Iterable[str]) -> list[str]:
    """`roots` and what they require (for this interpreter and platform), those that are installed."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # without packaging: the roots alone
        return [r for r in roots if _installed(r)]
    seen: list[str] = []
    todo = [r for r in roots if _installed(r)]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.append(name)
        for text in importlib.metadata.distribution(name).requires or []:
            req = Requirement(text)
            if (req.marker is None or req.marker.evaluate({"extra": ""})) and _installed(req.name):
                todo.append(req.name)
    return seen


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def interpreter_tree(python: str | None = None) -> Tree:
    """The image's files for the interpreter running this code (a virtual environment's base
    interpreter, with the environment's packages moved into the base's site-packages)."""
    base: str = getattr(sys, "_base_executable", sys.executable)
    executable = os.path.realpath(python or base)
    stdlib = sysconfig.get_path("stdlib")
    base_site = sysconfig.get_path("purelib", vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    tree = Tree()
    tree.add_host(executable)
    tree.add_symlink("/usr/local/bin/python3", executable)
    tree.add_host_tree(stdlib, STDLIB_SKIP_DIRS, STDLIB_SKIP_FILES)
    binaries = [executable]
    for name in distribution_names(DISTRIBUTIONS):
        dist = importlib.metadata.distribution(name)
        site = str(dist.locate_file(""))
        for file in dist.files or []:
            host = str(dist.locate_file(file))
            if (
                ".." in Path(str(file)).parts
                or not os.path.isfile(host)
                or STDLIB_SKIP_FILES.search(os.path.basename(host))
            ):
                continue  # a script in bin/ or a stale entry: not needed to import the package
            inside = os.path.join(base_site, os.path.relpath(host, site))
            tree.add_dirs_above(inside)
            tree.members[inside] = ("file", host)
            if host.endswith(".so") or ".so." in host:
                binaries.append(host)
    for tool in TOOLS:
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found:
            tree.add_host(f"/bin/{tool}" if os.path.exists(f"/bin/{tool}") else found)
            binaries.append(os.path.realpath(found))
    binaries += [p for p in _files_under(tree, stdlib) if p.endswith(".so")]
    for lib in sorted(shared_libraries(binaries)):
        tree.add_host(lib)
    if os.path.isfile("/etc/ld.so.cache"):
        tree.add_host("/etc/ld.so.cache")
    tree.add_bytes("/etc/passwd", PASSWD.encode())
    tree.add_bytes("/etc/group", GROUP.encode())
    for folder in EMPTY_DIRS:
        tree.add_dir(folder)
    return tree


def _files_under(tree: Tree, root: str) -> list[str]:
    return [str(src) for path, (kind, src) in tree.members.items() if kind == "file" and path.startswith(root + "/")]


def build_image(tag: str | None = None, docker: str = "docker") -> BuiltImage:
    """`docker import` the interpreter's tree as `tag`; raises RuntimeError (one line) on failure."""
    tag = tag or default_tag()
    start = time.monotonic()
    before = _image_id(docker, tag)
    tree = interpreter_tree()
    argv = [
        docker,
        "import",
        "--change",
        "ENV PATH=/usr/local/bin:/usr/bin:/bin",
        "--change",
        "ENV LANG=C.UTF-8",
        "--change",
        "USER 65534:65534",
        "--change",
        'CMD ["python3"]',
        "--message",
        f"humanevalfix sandbox: Python {platform.python_version()} from {sys.executable}",
        "-",
        tag,
    ]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
        assert proc.stdin is not None
        files, size = len(tree.members), 0
        try:
            with proc.stdin:
                files, size = tree.write(proc.stdin)
        except BrokenPipeError:
            pass  # docker import stopped reading: its message says why
        try:
            proc.wait(timeout=IMPORT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"docker import did not finish in {IMPORT_TIMEOUT_S:g} s") from None
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
    if proc.returncode != 0:
        raise RuntimeError(f"docker import failed: {lines[-1] if lines else f'exit status {proc.returncode}'}")
    if before and before != _image_id(docker, tag):
        # The tag moved to the new image: the old one would linger untagged (unless a container uses it).
        subprocess.run([docker, "rmi", before], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    return BuiltImage(tag, files, size, round(time.monotonic() - start, 1))


def _image_id(docker: str, tag: str) -> str | None:
    try:
        proc = subprocess.run(
            [docker, "image", "inspect", "--format", "{{.Id}}", tag],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None
