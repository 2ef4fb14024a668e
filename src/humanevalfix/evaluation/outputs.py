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
    """`path` can be written as a file: not a directory, not a device, and its folder takes new
    files (missing folders are created when the run writes)."""
    if not path.name or path.name in (".", ".."):  # `/`, `.`, `..`: Path.with_suffix would raise
        raise UserError(f"{option} {path}: names a folder, not a file; give a file path, e.g. {path / 'run.json'}")
    if path.is_dir():
        raise UserError(f"{option} {path}: is a directory; give a file path, e.g. {path / 'run.json'}")
    if path.exists() and not path.is_file():
        # Results are written beside and renamed over: /dev/null itself would be replaced by a file.
        raise UserError(
            f"{option} {path}: is not a regular file (a device, pipe or socket); give a file path, e.g. run.json"
        )
    _probe(path.parent, option, path)


def check_folder(path: Path, option: str) -> None:
    if path.exists() and not path.is_dir():
        kind = "file" if path.is_file() else "device, pipe or socket"
        raise UserError(f"{option} {path}: is a {kind}; give a folder (it is created when missing)")
    _probe(path, option, path)


def check_results_out(out: Path, stream: Path, option: str = "--out") -> None:
    """The results file and the stream beside it (`run.json` and `run.jsonl`) can both be written,
    and are two files: `--out run.jsonl` would be its own stream, overwritten at the end."""
    check_file(out, option)
    if stream == out:
        raise UserError(
            f"{option} {out}: the per-task stream is written beside the results as .jsonl; give a .json path, e.g. "
            f"{out.with_suffix('.json')}"
        )
    check_file(stream, f"{option} (its stream beside it)")


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


def check_resume(path: Path) -> None:
    """`--resume` names a run's stream or results file: a folder or a device is one line here
    (a missing file is one line where the stream is read)."""
    if path.is_dir():
        raise UserError(f"--resume {path}: is a directory; give the run's .jsonl stream (or its .json results file)")
    if path.exists() and not path.is_file():
        raise UserError(
            f"--resume {path}: is not a regular file (a device, pipe or socket); give the run's .jsonl stream"
        )
