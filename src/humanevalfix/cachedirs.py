"""The user's cache: where the files the tool keeps between runs live, and how they are written.

Two stores keep work there (the pass@1+ canonical answers, evaluation/pluscases.py; the tests the
harness compiles for the sandbox's judges, sandbox/testcode.py) and the embedded model's weights
live beside them. Each has its own folder and variable (a folder, or "off"), under one base:
`$XDG_CACHE_HOME`, else `~/.cache`. A store's file is written whole or not at all (a run killed
mid-write leaves none behind to be misread), and a folder that cannot be written only costs time.

A stored file decides later verdicts (a judge runs a compiled test as the test; the pass@1+ cases
say what a candidate must answer), so it is trusted only with its seal: an HMAC-SHA256 of its name
and bytes under a key that only the harness reads (`.seal-key` in the store's folder, mode 0600).
A file written by anything else (a candidate of an earlier run at a level that shares the host's
files, say) has no valid seal and is computed again. The key is out of every candidate's reach:
bwrap and docker show none of the user's cache, unshare covers the stores' folders (sandbox/jail.py),
and a run at the `process` level, whose candidates could read it, throws the keys away when it ends
(`forget_keys`), so that whatever they learnt seals nothing (a run beside it then computes its
files again: time, never a verdict).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path


def user_cache(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"))


# The stores: the variable that names each one's folder (or "off"), and its folder's name in the cache.
PLUS_STORE = ("HUMANEVALFIX_PLUS_CACHE", "plus-cases")  # evaluation/pluscases.py
TEST_STORE = ("HUMANEVALFIX_TEST_CACHE", "compiled-tests")  # sandbox/testcode.py
STORES = (PLUS_STORE, TEST_STORE)


def store_folders(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Every store's folder, as this environment names them (those not "off")."""
    return [f for f in (store_folder(variable, name, environ) for variable, name in STORES) if f is not None]


def store_folder(variable: str, name: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """A store's folder: `$variable` (None when it says "off"), else humanevalfix/`name` in the
    user's cache."""
    env = os.environ if environ is None else environ
    chosen = env.get(variable)
    if chosen:
        return None if chosen.lower() == "off" else Path(chosen)
    return user_cache(env) / "humanevalfix" / name


KEY_NAME = ".seal-key"
SEAL_SUFFIX = ".seal"
_KEY_BYTES = 32


def seal_key(folder: Path, create: bool = True) -> bytes | None:
    """The store's sealing key, made on first use when `create`; None where none can be kept
    (nothing is then stored nor trusted). A key file that is not this user's own, private and
    whole is not used."""
    path = folder / KEY_NAME
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(secrets.token_bytes(_KEY_BYTES))
        info = path.lstat()
        if not path.is_file() or path.is_symlink() or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) == _KEY_BYTES else None


def forget_keys(environ: Mapping[str, str] | None = None) -> None:
    """Throw every store's key away (after candidates that could read them ran): every file sealed
    so far is computed again, and the next keys are ones they never saw."""
    for folder in store_folders(environ):
        try:
            (folder / KEY_NAME).unlink()
        except OSError:
            pass


def _seal(key: bytes, name: str, data: bytes) -> bytes:
    return hmac.new(key, name.encode("utf-8", "surrogatepass") + b"\x00" + data, hashlib.sha256).digest()


def keep(folder: Path, name: str, data: bytes) -> None:
    """Write `data` as folder/name, whole (a temporary file renamed over it), and its seal beside it
    (name + SEAL_SUFFIX); errors are ignored, and without a key nothing is written."""
    key = seal_key(folder)
    if key is None:
        return
    try:
        _write_whole(folder, name, data)
        _write_whole(folder, name + SEAL_SUFFIX, _seal(key, name, data))
    except OSError:
        pass  # a cache that cannot be written only costs time


def fetch(folder: Path, name: str) -> bytes | None:
    """folder/name's bytes if its seal is this harness's; None when missing, damaged or forged."""
    key = seal_key(folder, create=False)
    if key is None:
        return None
    try:
        data = (folder / name).read_bytes()
        seal = (folder / (name + SEAL_SUFFIX)).read_bytes()
    except OSError:
        return None
    return data if hmac.compare_digest(seal, _seal(key, name, data)) else None


def _write_whole(folder: Path, name: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, folder / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
