"""Where a run writes, checked before the first model call, and how its files are created.

`--out` pointing at a directory or at `/proc/x.json` used to fail with a traceback after every
model call had been paid for. A probe file is written and removed in each output folder first, so
that any reason the real write would fail (a directory, no permission, a read-only or virtual file
system, a full disk) is one line before anything is spent.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from humanevalfix.errors import UserError

FALLBACK_MODE = 0o644


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _probe(folder: Path, option: str, shown: Path) -> None:
    """Write and remove a file where `folder` is, or would be created: in its nearest existing
    ancestor (nothing is created before the run starts)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"{option} {shown}: {existing} is a file, not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".humanevalfix-", suffix=".probe") as fh:
            fh.write(b"probe")
            fh.flush()
    except OSError as exc:
        raise UserError(f"{option} {shown}: cannot write there ({_reason(exc)})") from None


def check_file(path: Path, option: str) -> None:
    """`path` can be written as a file: not a directory, and its folder takes new files."""
    if path.is_dir():
        raise UserError(f"{option} {path}: is a directory; give a file path, e.g. {path / 'run.json'}")
    _probe(path.parent, option, path)


def check_folder(path: Path, option: str) -> None:
    if path.exists() and not path.is_dir():
        raise UserError(f"{option} {path}: is a file; give a folder (it is created when missing)")
    _probe(path, option, path)


def file_mode() -> int:
    """The mode a plain `open(path, "w")` would give: 0666 less the umask (mkstemp gives 0600,
    which made results files unreadable to a group that can read everything else the run wrote)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return FALLBACK_MODE


def chmod_like_open(fd: int) -> None:
    os.fchmod(fd, file_mode())
