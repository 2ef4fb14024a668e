"""Repair policies by name (`--policy`), and what a report says of a run's policy."""

from __future__ import annotations

import pytest

from humanevalfix.agent import AgentSettings
from humanevalfix.agent.policies import (
    DEFAULT_POLICY,
    POLICIES,
    RepairPolicy,
    describe_policy,
)
from humanevalfix.cli import build_parser, config_from_args
from humanevalfix.config import RunConfig
from humanevalfix.reports.runs import load_run, summary_lines

from .conftest import REPO_ROOT


def _config(*options: str) -> RunConfig:
    return config_from_args(build_parser().parse_args(["eval", "--model", "oracle:canonical", *options]))


@pytest.mark.parametrize("name", list(POLICIES))
def test_a_named_policy_is_made_by_its_option_and_described_by_its_name(name: str) -> None:
    config = _config("--policy", name)
    assert RepairPolicy.of(config) == POLICIES[name]
    assert describe_policy(config) == name


def test_the_eval_default_is_the_default_policy() -> None:
    assert RepairPolicy.of(_config()) == RepairPolicy.of(RunConfig(preset=_config().preset)) == POLICIES[DEFAULT_POLICY]


@pytest.mark.parametrize(
    ("options", "described"),
    [
        (["--policy", "plain", "--redraws", "2"], "plain with --redraws 2"),
        (["--rewrite-turns", "3"], "rewrite-now with --rewrite-turns 3"),
        (["--no-rewrite-now"], "rewrite-now with --no-rewrite-now"),
        (["--policy", "redraw", "--runtime-values", "trace"], "redraw with --runtime-values trace"),
        (["--max-iters", "0", "--policy", "plain"], "none (one attempt: --max-iters 0)"),
        (["--strategies", "fix,explain,rewrite"], "rewrite-now with --strategies fix,explain,rewrite"),
    ],
)
def test_other_settings_are_described_from_the_nearest_policy(options: list[str], described: str) -> None:
    assert describe_policy(_config(*options)) == described


def test_agent_settings_keep_the_plain_policy_for_fix() -> None:
    """`fix` builds AgentSettings itself: its benchmark was measured with the plain policy."""
    assert describe_policy(AgentSettings()) == "plain"


@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("local-0.5b_tests_repair_rewrite-now_fresh.json", "rewrite-now"),
        ("local-0.5b_tests_repair_seeded.json", "plain"),
        ("local-0.5b_tests_max-iters-0.json", "none (one attempt: --max-iters 0)"),
    ],
)
def test_a_report_names_the_policy_of_a_committed_run(name: str, policy: str) -> None:
    assert f"repair policy: {policy}" in summary_lines(load_run(REPO_ROOT / "results" / name))


def test_a_comparison_shows_each_runs_policy() -> None:
    from io import StringIO

    from rich.console import Console

    from humanevalfix.reports.comparison import compare_runs, comparison_table

    a, b = (
        load_run(REPO_ROOT / "results" / name)
        for name in (
            "local-0.5b_tests_repair_redraw-turn-0_fix-rewrite.json",
            "local-0.5b_tests_repair_rewrite-now_fresh.json",
        )
    )
    console = Console(file=StringIO(), width=200)
    console.print(comparison_table(compare_runs(a, b)))
    row = next(line for line in console.file.getvalue().splitlines() if "repair policy" in line)
    assert "redraw" in row and "rewrite-now" in row


@pytest.mark.e2e
def test_resuming_a_run_of_an_earlier_default_names_every_option_and_its_policy(tmp_path, tiny_dataset) -> None:
    """A run started before the default changed, resumed without options: one error that names
    each differing option and the policy it ran with; with --policy it continues."""
    import io

    from rich.console import Console

    from humanevalfix.errors import UserError
    from humanevalfix.evaluation.runner import run_eval

    out = tmp_path / "run.json"
    first = _config("--policy", "redraw", "--dataset-path", str(tiny_dataset), "--out", str(out), "--limit", "1")
    run_eval(first, Console(file=io.StringIO()))
    stream = out.with_suffix(".jsonl")
    with pytest.raises(
        UserError,
        match=r"option --rewrite-again differs .*\('continue' there, 'fresh' now\), and --rewrite-now too; its "
        r"repair policy was redraw \(see --policy\)",
    ):
        run_eval(_config("--dataset-path", str(tiny_dataset), "--resume", str(stream)), Console(file=io.StringIO()))
    resumed = run_eval(
        _config("--policy", "redraw", "--dataset-path", str(tiny_dataset), "--resume", str(stream)),
        Console(file=io.StringIO()),
    )
    assert resumed.status == "complete"
