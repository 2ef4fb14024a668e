"""A third-party plugin (tests/plugin_demo/) through the entry-point group `humanevalfix.plugins`.

The plugin is installed offline, as pip installs a package (its module and a dist-info holding
the entry points of its pyproject.toml) into a folder of its own; runs in child processes with
that folder on their path then see its `demo` provider and `demo` sandbox: an oracle eval goes
through both (and records and shows its `demo-lines` score), and the sandbox conformance suite
passes for what the `demo` executor claims. This proves the provider, executor and scorer recipes
of docs/architecture.md (one file each, in the plugin).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .conftest import REPO_ROOT, clean_env

PLUGIN = REPO_ROOT / "tests" / "plugin_demo"
GROUP = "humanevalfix.plugins"


def install(site: Path) -> Path:
    """The plugin in `site` as an installed distribution: its package and its dist-info (METADATA,
    entry_points.txt, RECORD), with no build backend and no network."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for package in (PLUGIN / "src").iterdir():
        shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n", encoding="utf-8"
    )
    points = project["entry-points"][GROUP]
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()), encoding="utf-8"
    )
    (info / "RECORD").write_text("", encoding="utf-8")
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("site"))


def env_with(site: Path, **extra: str) -> dict[str, str]:
    env = clean_env(**extra)
    env.pop("DEMO_PLUGIN_KEY", None)
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO_ROOT / "src")])
    return env


def humanevalfix(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "humanevalfix", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_the_plugin_is_found_through_its_entry_point(site: Path, tmp_path: Path) -> None:
    code = (
        "from humanevalfix.models.catalog import PROVIDERS, selectable_providers\n"
        "from humanevalfix.sandbox.factory import SANDBOXES\n"
        "print(list(PROVIDERS)[-1], PROVIDERS['demo'].key_env, 'demo' in selectable_providers(), list(SANDBOXES)[-1])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env_with(site), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["demo", "DEMO_PLUGIN_KEY", "True", "demo"]
    # Without the plugin on the path: neither name exists, and --sandbox demo is one line naming the choices.
    bare = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env_with(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert bare.returncode != 0 and "KeyError: 'demo'" in bare.stderr


@pytest.mark.parametrize("kind, passed", [("canonical", 4), ("buggy", 0)])
def test_an_oracle_eval_through_the_plugins_provider_and_executor(
    site: Path, tmp_path: Path, dataset_path: Path, kind: str, passed: int
) -> None:
    out = tmp_path / "run.json"
    args = [
        "eval",
        "--provider",
        "demo",
        "--model",
        kind,
        "--sandbox",
        "demo",
        "--dataset-path",
        str(dataset_path),
        "--limit",
        "4",
        "--workers",
        "2",
        "--out",
        str(out),
    ]
    proc = humanevalfix(args, tmp_path, env_with(site, DEMO_PLUGIN_KEY="demo-key-0123456789"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    config, records = results["config"], results["tasks"]
    assert (config["provider"], config["model"], config["executor"]) == ("demo", kind, "demo")
    assert config["isolation"].startswith("demo plugin: ")
    assert len(records) == 4 and sum(r["passed"] for r in records) == passed
    assert all(r["iterations"] >= 1 and r["error"] is None for r in records)
    assert "demo-key-0123456789" not in out.read_text(encoding="utf-8") + proc.stdout + proc.stderr
    # The plugin's scorer: recorded per task, summed, shown in the summary table after the built-in ones.
    lines = [len((r["final_code"] or "").splitlines()) for r in records]
    assert [r["scores"]["demo-lines"] for r in records] == [{"lines": n} for n in lines]
    summed = results["summary"]["scores"]  # (pass@1+ is absent where nothing passed: nothing checked)
    assert (
        list(summed)[0] == "verdict"
        and list(summed)[-1] == "demo-lines"
        and summed["demo-lines"] == {"total": sum(lines)}
    )
    shown = proc.stdout + proc.stderr
    assert shown.index("pass@1, after repair") < shown.index(f"{sum(lines)} final code lines")


def test_the_plugins_keyed_provider_without_its_key_is_one_line_and_exit_2(
    site: Path, tmp_path: Path, dataset_path: Path
) -> None:
    args = [
        "eval",
        "--provider",
        "demo",
        "--model",
        "canonical",
        "--sandbox",
        "demo",
        "--dataset-path",
        str(dataset_path),
        "--limit",
        "1",
        "--out",
        str(tmp_path / "run.json"),
    ]
    proc = humanevalfix(args, tmp_path, env_with(site))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "no API key for provider 'demo': set DEMO_PLUGIN_KEY" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "run.json").exists()


@pytest.mark.slow
def test_the_plugins_executor_passes_the_conformance_suite_for_what_it_claims(site: Path) -> None:
    """tests/test_sandbox_conformance.py with the `demo` sandbox as its one variant (every check
    parametrised by variant: the dataset's verdicts, the hostile candidates, what its guarantees
    say it blocks and what they say it does not)."""
    env = env_with(site, HUMANEVALFIX_CONFORMANCE_SANDBOX="demo")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--tier",
            "slow",
            "tests/test_sandbox_conformance.py",
            "-k",
            "demo-fork",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary
    ran = int(summary.split(" passed")[0].split()[-1])
    assert ran >= 25, summary  # the variant's whole share of the suite, not a handful of tests


def test_a_plugin_that_fails_to_load_is_one_line_naming_it_and_exit_2(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "broken_plugin").mkdir(parents=True)
    (site / "broken_plugin" / "__init__.py").write_text(
        "raise RuntimeError('no such backend here')\n", encoding="utf-8"
    )
    info = site / "broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nbroken = broken_plugin\n", encoding="utf-8")
    proc = humanevalfix(["eval", "--help"], tmp_path, env_with(site), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "plugin broken (broken_plugin) failed to load: RuntimeError: no such backend here" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
