"""Where keys come from: the environment, the nearest `.env`, the per-user `.env`.

A `.env` read only from the current directory made `humanevalfix fix` run from a sub-folder
silently ignore the keys and fall back to the embedded model. Now: the current directory, then its
parents (python-dotenv's `find_dotenv(usecwd=True)`), then `~/.config/humanevalfix/.env`
(`$XDG_CONFIG_HOME` when set). A variable already in the environment wins over both files, and
the nearer file over the per-user one. Which file set a key is kept, so that a run can say where
its key came from in its first lines (masked).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from humanevalfix.models.catalog import PROVIDERS

USER_FILE = Path("humanevalfix") / ".env"


@dataclass(frozen=True)
class EnvFiles:
    """The files read, nearest first, and the variable each of them set."""

    files: tuple[Path, ...] = ()
    origin: dict[str, Path] = field(default_factory=dict)


def user_file(environ: MutableMapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / USER_FILE


def candidate_files(environ: MutableMapping[str, str] | None = None) -> list[Path]:
    """The nearest `.env` from the current directory up, then the per-user file (those that exist)."""
    from dotenv import find_dotenv

    found = [Path(p) for p in (find_dotenv(usecwd=True),) if p]
    user = user_file(environ)
    if user.is_file() and all(user.resolve() != f.resolve() for f in found):
        found.append(user)
    return found


def load_env_files(environ: MutableMapping[str, str] | None = None) -> EnvFiles:
    """Set each variable of the files that the environment does not already have."""
    from dotenv import dotenv_values

    env = os.environ if environ is None else environ
    files = candidate_files(env)
    origin: dict[str, Path] = {}
    for path in files:
        for name, value in dotenv_values(path).items():
            if value is None or name in env:
                continue  # the environment, or a nearer file, already set it
            env[name] = value
            origin[name] = path
    return EnvFiles(tuple(files), origin)


def key_line(
    key_env: str | None, provider: str, loaded: EnvFiles, environ: MutableMapping[str, str] | None = None
) -> str | None:
    """`key: OPENAI_API_KEY …abcd from /home/me/project/.env`, or why no key is used; None for
    models that need none (the oracle)."""
    from humanevalfix.models.keys import mask, split_keys

    env = os.environ if environ is None else environ
    spec = PROVIDERS.get(provider)
    if spec is not None and spec.key_env is None:  # a provider that takes no key
        if spec.keyless_note is None:
            return None
        read = ", ".join(str(p) for p in loaded.files) or f"none found here, above, or at {user_file(env)}"
        return f"key: none used, {spec.keyless_note} (.env files read: {read})"
    keys = split_keys(env.get(key_env or "", ""))
    if not keys:
        return f"key: no {key_env} set; the server gets a placeholder" if key_env else "key: none"
    where = f"from {loaded.origin[key_env]}" if key_env in loaded.origin else "from the environment"
    return f"key: {key_env} {', '.join(mask(k) for k in keys)} {where}"
