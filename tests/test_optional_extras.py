"""Optional extras (LangGraph, a Docker daemon): after the README's set-up alone their tests are
skipped with a reason naming the install command; under CI=true (.ci/run) they run, and fail where
the extra is missing, so that CI's rule "no skips" still holds them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXTRAS, REPO_ROOT, extra_missing

# One cheap test per extra: it needs the extra, and fails without it.
CASES = {
    "langgraph": "tests/test_langgraph_engine.py::test_a_custom_graph_needs_a_step_for_every_node",
    "docker": "tests/test_sandbox_conformance.py::test_close_leaves_no_process_and_no_temp_dir[docker]",
}


def pytest_in_child(node: str, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--all", node],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.e2e
@pytest.mark.parametrize("extra", sorted(CASES))
def test_a_missing_extra_is_skipped_locally_naming_the_install_and_never_under_ci(extra: str) -> None:
    local = pytest_in_child(CASES[extra], ci=False)
    if not extra_missing(extra):  # installed here: it simply runs, with or without CI
        assert local.returncode == 0 and "1 passed" in local.stdout, local.stdout[-2000:]
        return
    assert local.returncode == 0 and "1 skipped" in local.stdout, local.stdout[-2000:]
    assert EXTRAS[extra] in local.stdout
    ci = pytest_in_child(CASES[extra], ci=True)
    assert ci.returncode != 0 and "skipped" not in ci.stdout, ci.stdout[-2000:]


def test_the_skip_reasons_name_a_file_or_command_that_exists() -> None:
    assert (REPO_ROOT / "requirements-langgraph.txt").is_file()
    assert "pip install -r requirements-langgraph.txt" in EXTRAS["langgraph"]
    assert "#docker" in EXTRAS["docker"] and "## Docker" in Path(REPO_ROOT / "docs" / "sandbox.md").read_text(
        encoding="utf-8"
    )
