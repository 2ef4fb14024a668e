"""One run per output: a lock beside the results file and the stream, and the clean-up of what a
killed write left behind.

Two runs on the same `--out` used to truncate each other's stream and mix their records under one
config line, and both exited 0. A run now holds an exclusive `fcntl` lock on `<file>.lock` for each
of its two files, with its PID, host and start time written inside, so a second run is refused at
once with that information. The kernel drops the lock when its process dies, so a lock file whose
lock can be taken is stale (a `kill -9`): taken over, with a warning naming the run that left it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from humanevalfix.errors import UserError

log = logging.getLogger(__name__)


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _holder(text: str) -> str:
    """How the lock file's holder is shown: PID, host and start time, or what is known of them."""
    try:
        info = json.loads(text)
        return f"PID {int(info['pid'])} on {str(info['host'])[:80]}, started {str(info['started'])[:40]}"
    except (ValueError, KeyError, TypeError):
        return "a run that left no details"


def _take(path: Path) -> IO[str]:
    target = lock_path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fh = target.open("a+", encoding="utf-8")
    except OSError as exc:
        raise UserError(f"--out {path}: cannot write there ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = _holder(fh.read(4096))
        fh.close()
        raise UserError(
            f"{path}: another run is writing it ({holder}); wait for it to end, or give another --out"
        ) from None
    fh.seek(0)
    left = fh.read(4096)
    if left.strip():
        log.warning("%s: taking over the lock of a run that did not end cleanly (%s)", path, _holder(left))
    fh.seek(0)
    fh.truncate()
    fh.write(
        json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    )
    fh.flush()
    return fh


def remove_leftovers(path: Path) -> list[Path]:
    """The temporary files a killed atomic write of `path` left (`<name>.<random>.tmp`,
    evaluation.results.write_atomic); only called while holding `path`'s lock."""
    removed = []
    for tmp in path.parent.glob(f"{glob_escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    return removed


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


@contextlib.contextmanager
def run_lock(*paths: Path) -> Iterator[None]:
    """Hold the lock of each of `paths` (results file, stream) for the whole run; refuse at once if
    another live run holds one. Leftover temporary files are removed once the locks are held."""
    held: list[tuple[Path, IO[str]]] = []
    # Folders made for the lock files are removed again if the run leaves nothing in them: a run
    # refused for bad input (a missing key, a bad row) must not leave an empty results folder.
    created = sorted({d for p in paths for d in _missing_folders(p.parent)}, key=lambda d: len(d.parts), reverse=True)
    try:
        for path in dict.fromkeys(paths):
            held.append((path, _take(path)))
        for path, _ in held:
            for tmp in remove_leftovers(path):
                log.warning("removed %s, left by an interrupted write", tmp)
        yield
    finally:
        for path, fh in reversed(held):
            with contextlib.suppress(OSError):
                lock_path(path).unlink()  # before unlocking: a waiting run then makes a fresh file
            fh.close()
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty


def _missing_folders(folder: Path) -> list[Path]:
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing
