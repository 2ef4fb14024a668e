"""The user's cache: where the files the tool keeps between runs live, and how they are written.

Two stores keep work there (the pass@1+ canonical answers, evaluation/pluscases.py; the tests the
harness compiles for the sandbox's judges, sandbox/testcode.py) and the embedded model's weights
live beside them. Each has its own folder and variable (a folder, or "off"), under one base:
`$XDG_CACHE_HOME`, else `~/.cache`. A store's file is written whole or not at all (a run killed
mid-write leaves none behind to be misread), and a folder that cannot be written only costs time.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path


def user_cache(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"))


def store_folder(variable: str, name: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """A store's folder: `$variable` (None when it says "off"), else humanevalfix/`name` in the
    user's cache."""
    env = os.environ if environ is None else environ
    chosen = env.get(variable)
    if chosen:
        return None if chosen.lower() == "off" else Path(chosen)
    return user_cache(env) / "humanevalfix" / name


def keep(folder: Path, name: str, data: bytes) -> None:
    """Write `data` as folder/name, whole (a temporary file renamed over it); errors are ignored."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a cache that cannot be written only costs time
