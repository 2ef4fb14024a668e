"""The documented commands that can run offline and quickly are run, as a user runs them: each in a
child process, in a temporary folder that holds copies of the repository files it names, so every
output (`--out`, a report written beside its input) lands there and the checkout is never written.
Each must exit with the status the docs promise (0 unless `EXPECTED` says otherwise), never 2.
test_documented_commands.py only parses them; this catches what parsing cannot (issue 30: the
README's `bench/baseline.py --agent-results ... --baseline-from ...` parsed, then exited 2 because
its two files were recorded under different protocols).

The rule, applied by `plan` to every command of README.md and docs/*.md:

- **Run**: a command that reads only committed files and calls no model: `report`, `export`,
  `score`, `validate-dataset`, `graph`, any `--help`, `eval` with an oracle model
  (`--model oracle:...`; with `--sandbox docker` too, where conftest's `needs("docker")` finds a
  daemon, as in CI), and the bench scripts that `BENCH` marks offline.
- **Not run**, by kind: `eval` with any other model (none named means an API model when a key is
  set, else the embedded model: hours for 164 tasks on a CPU), `fix` (always a model), `serve`
  (starts the model), `sandbox build-image` (replaces the machine's shared Docker image; CI runs it
  in .ci/run), and the bench scripts `BENCH` gives a reason for. **Not run**, one by one: the
  lines of `EXCLUDED`, placeholders that stand for a file no one has here.

What a command runs on may differ from its line in one declared way each: a placeholder of the
docs (`results/RUN.json`) is bound to a committed file (`PLACEHOLDERS`); a command that is a
measurement over the whole dataset runs on its first `LIMIT` tasks (`--limit`: an oracle eval on
the bundled 164 tasks, whose full runs are tests/test_oracle_full.py's, and the bench scripts
`BENCH` marks "limit"; what can exit 2, the options, files and dataset, is checked before the
task loop, so a few tasks show it); an absolute /tmp path goes to the
temporary folder; an environment prefix (`PYTHONPATH=src:bench`) is left out (conftest puts this
checkout's src on PYTHONPATH, and a script's own folder is on its path).

A new kind of command (a new subcommand, a new bench script) fails
`test_every_documented_command_is_classified` until it is put in a table here. A new line of a kind
that runs is run (a placeholder that is not bound then fails: bind it or exclude it); a new line of
a kind that is not run is left out by its kind's rule. That is the line drawn on purpose: listing
every model command verbatim would fail on each edit of a results table for no gain, while the
kinds are few and each rule says why a whole kind cannot run here. Excluded commands are not
collected as skipped tests: CI fails on any skip.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from humanevalfix.cli._main import COMMANDS as CLI_COMMANDS

from .conftest import CLI, REPO_ROOT, clean_env
from .doc_commands import documented

LIMIT = 3  # tasks of a whole-dataset measurement run here: enough to start, load, run and write
TIMEOUT_S = 240.0
TMP_PREFIX = "/tmp/"

# The docs' placeholders that a committed file can stand for.
PLACEHOLDERS = {
    "results/RUN.json": "results/local-0.5b_tests_repair_rewrite-now_fresh.json",  # the README's current run
    "results/A.json": "results/local-0.5b_tests_repair_seeded.json",  # a comparison docs/results.md makes
    "results/B.json": "results/local-0.5b_tests_first40_redraws-2.json",
    "GENERATIONS.json": "results/local-0.5b_limit-10.generations.json",  # 10 tasks: quick to score
}

# Lines of a kind that runs, left out one by one.
EXCLUDED = {
    "humanevalfix validate-dataset mine.jsonl": (
        "not run: the reader's own dataset; the same command runs on the bundled one (datasets.md)"
    ),
    "humanevalfix score RESULTS.json --plus-inputs 'HumanEvalPlus.jsonl[.gz]'": (
        "not run: EvalPlus's released file is a download, not in the repository"
    ),
}

# Exit statuses the docs give other than 0, and a text the output must then hold.
EXPECTED = {
    # docs/datasets.md: "exit ... 1 when some do not. On HumanEvalFix itself it flags one row, Python/119"
    "humanevalfix validate-dataset src/humanevalfix/evaluation/data/humanevalpack_python.jsonl": (1, "Python/119"),
}

# humanevalfix's commands: None runs, a string is why the kind does not. `eval` is decided by its model.
COMMAND_KINDS: dict[str, str | None] = {
    "eval": None,
    "report": None,
    "export": None,
    "score": None,
    "validate-dataset": None,
    "graph": None,
    "view": "serves the page until Ctrl-C (tests/test_view_browser.py runs it); with --out it runs here",
    "fix": "calls a model on the reader's files",
    "serve": "starts the embedded model's server and serves until stopped",
    "sandbox": (
        "build-image replaces the machine's Docker image that other runs use (.ci/run builds it before the tests)"
    ),
}

# The bench scripts: "run", "limit" (run on LIMIT tasks), or why not.
BENCH = {
    "bench/baseline.py": "run",  # only with both --agent-results and --baseline-from: no model (see plan)
    "bench/fix_scope_bench.py": "limit",  # no model: the fault localisation alone
    "bench/executor.py": "limit",  # the executors on canonical and buggy programs
    "bench/run_cost.py": "run",  # trivial runs on the default sandbox: seconds
    "bench/turn_cost.py": "run",  # reads a committed results file: no model, under a second
    "bench/plus_cases.py": "limit",  # pass@1+ inputs under two budgets
    "bench/roundtrip.py": (
        "not run: 164 tasks through two scorers per file, no --limit (28 s for one file on 2 busy "
        "cores, more with --canonical --buggy); tests/test_roundtrip.py runs the same comparison on the first "
        "tasks"
    ),
    "bench/throughput.py": (
        "not run: 164 tasks at 1, 4, 16 and 64 workers with 500 ms a completion, then the harness "
        "at three worker counts: minutes"
    ),
    "bench/fix_bench.py": "not run: calls a model (`fix` on every task)",
    "bench/batch_exactness.py": "not run: loads the embedded model's weights into llama.cpp",
    "bench/local_speed.py": "not run: starts the embedded model once per setting",
    "bench/minimal_fix.py": "not run: calls a model (once per pass a rewrite wrote in the run)",
    "bench/rewrite_draws.py": "not run: calls a model (draws per pass a rewrite wrote in the run)",
    "bench/view_load.py": "not run: starts a browser (tests/test_view_browser.py loads the same page)",
}
BASELINE_NEEDS = ("--agent-results", "--baseline-from")  # both sides from files: no model started


class Unclassified(AssertionError):
    """A documented command of a kind no table here names."""


@dataclass(frozen=True)
class Run:
    program: str
    argv: tuple[str, ...]  # as run: placeholders bound, limit applied
    status: int = 0
    output: str = ""  # a text the output must hold

    @property
    def line(self) -> str:
        return f"{self.program} {shlex.join(self.argv)}"


def line_of(program: str, argv: list[str]) -> str:
    return f"{program} {shlex.join(argv)}"


def option_value(argv: list[str], option: str) -> str | None:
    for i, word in enumerate(argv):
        if word == option and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(option + "="):
            return word.split("=", 1)[1]
    return None


def with_limit(argv: list[str]) -> list[str]:
    """`--limit LIMIT` in place of the line's own --limit, or added."""
    if "--limit" in argv:
        i = argv.index("--limit")
        return [*argv[: i + 1], str(LIMIT), *argv[i + 2 :]]
    return [*argv, "--limit", str(LIMIT)]


def subcommand(argv: list[str]) -> str:
    """The humanevalfix command a line runs: its first word when that is a command, else eval."""
    first = argv[0] if argv else ""
    if first.startswith("-") or not first:
        return "eval"
    if first not in COMMAND_KINDS:
        raise Unclassified(f"`humanevalfix {first}`: add the command to COMMAND_KINDS (runs offline, or why not)")
    return first


def plan(program: str, argv: list[str]) -> Run | str:
    """What runs for a documented line, or why it does not (see the module's docstring)."""
    line = line_of(program, argv)
    if line in EXCLUDED:
        return EXCLUDED[line]
    status, output = EXPECTED.get(line, (0, ""))
    bound = [PLACEHOLDERS.get(word, word) for word in argv]
    if "--help" in argv:
        return Run(program, tuple(bound))
    if program == "humanevalfix":
        return _plan_cli(bound, status, output)
    kind = BENCH.get(program)
    if kind is None:
        raise Unclassified(f"`{program}`: add the script to BENCH (runs offline, on LIMIT tasks, or why not)")
    if kind.startswith("not run"):
        return kind
    if program == "bench/baseline.py" and not all(option in argv for option in BASELINE_NEEDS):
        return f"not run: without both {' and '.join(BASELINE_NEEDS)} the baseline calls the model"
    return Run(program, tuple(with_limit(bound) if kind == "limit" else bound), status, output)


def _plan_cli(argv: list[str], status: int, output: str) -> Run | str:
    command = subcommand(argv)
    reason = COMMAND_KINDS[command]
    if command == "view" and option_value(argv, "--out") is not None:  # the page as a file: offline, quick
        return Run("humanevalfix", tuple(argv), status, output)
    if reason is not None:
        return f"not run: {reason}"
    if command == "eval":
        model = option_value(argv, "--model") or ""
        if not model.startswith("oracle:"):
            return (
                "not run: calls a model (any --model but oracle:...; none named: an API model with a key, else "
                "the embedded model)"
            )
        if option_value(argv, "--dataset-path") is None:  # the 164 tasks: tests/test_oracle_full.py runs them all
            argv = with_limit(argv)
        return Run("humanevalfix", tuple(argv), status, output)
    return Run("humanevalfix", tuple(argv), status, output)


def planned() -> tuple[dict[Run, list[str]], dict[str, str]]:
    """The distinct commands to run (with the docs that give them), and the lines not run with why."""
    runs: dict[Run, list[str]] = {}
    skipped: dict[str, str] = {}
    for doc, program, argv in documented():
        step = plan(program, argv)
        if isinstance(step, Run):
            runs.setdefault(step, [])
            if doc not in runs[step]:
                runs[step].append(doc)
        else:
            skipped[line_of(program, argv)] = step
    return runs, skipped


def _planned_or_empty() -> dict[Run, list[str]]:
    try:
        return planned()[0]
    except Unclassified:  # reported by test_every_documented_command_is_classified, not as a collection error
        return {}


RUNS = _planned_or_empty()


def workspace(run: Run, tmp: Path) -> list[str]:
    """Copies of the repository files the command names, at the same paths under `tmp` (its outputs
    beside its inputs land there too), and the arguments with /tmp paths moved into `tmp`."""
    argv = []
    for word in run.argv:
        if word.startswith(TMP_PREFIX):
            word = str(tmp / "abs" / word.removeprefix(TMP_PREFIX))
        elif word.startswith("/"):
            raise AssertionError(f"`{run.line}` names {word}: only /tmp paths are moved into the test's folder")
        elif not word.startswith("-") and (REPO_ROOT / word).is_file():
            (tmp / word).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPO_ROOT / word, tmp / word)
        argv.append(word)
    return argv


def command_line(run: Run, argv: list[str]) -> list[str]:
    script = CLI if run.program == "humanevalfix" else REPO_ROOT / run.program
    return [sys.executable, str(script), *argv]


def test_every_documented_command_is_classified() -> None:
    """Every documented line runs or says why not, every command of the CLI has its rule here
    (documented or not yet), and no table names what the docs no longer give."""
    runs, skipped = planned()
    assert runs and skipped
    assert set(COMMAND_KINDS) == set(CLI_COMMANDS), "COMMAND_KINDS must name every command of cli/_main.py"
    lines = {line_of(program, argv) for _, program, argv in documented()}
    stale = sorted((set(EXCLUDED) | set(EXPECTED)) - lines)
    assert not stale, f"EXCLUDED/EXPECTED name lines no doc gives any more: {stale}"
    unused = sorted(set(PLACEHOLDERS) - {word for _, _, argv in documented() for word in argv})
    assert not unused, f"PLACEHOLDERS no doc uses any more: {unused}"


def test_the_commands_that_broke_and_every_offline_kind_are_run() -> None:
    """The classifier cannot quietly leave everything out: issue 30's command, and a command of
    each offline kind, are in the run set."""
    lines = {run.line for run in RUNS}
    assert any(line.startswith("bench/baseline.py --agent-results") and "--baseline-from" in line for line in lines)
    for command in ("report", "export", "score", "validate-dataset", "graph"):
        assert any(line.startswith(f"humanevalfix {command} ") for line in lines), command
    assert any("--model oracle:canonical" in line for line in lines)
    assert len(RUNS) >= 20


def test_a_model_command_is_not_run() -> None:
    assert isinstance(plan("humanevalfix", ["--limit", "10"]), str)
    assert isinstance(plan("bench/baseline.py", ["--agent-results", "results/x.json"]), str)
    assert plan("humanevalfix", ["--model", "oracle:buggy", "--out", "/tmp/b.json"]) == Run(
        "humanevalfix", ("--model", "oracle:buggy", "--out", "/tmp/b.json", "--limit", str(LIMIT))
    )
    with pytest.raises(Unclassified):
        plan("bench/new_bench.py", [])
    with pytest.raises(Unclassified):
        plan("humanevalfix", ["new-command", "x"])


def _marks(run: Run) -> list[pytest.MarkDecorator]:
    marks = [pytest.mark.slow]  # 103 s in all on two cores beside a model run; the slowest 25 s
    if run.program == "humanevalfix" and run.argv[:1] == ("graph",):
        marks.append(pytest.mark.needs("langgraph"))
    if option_value(list(run.argv), "--sandbox") == "docker":
        marks.append(pytest.mark.needs("docker"))
    return marks


@pytest.mark.e2e
@pytest.mark.parametrize(
    "run",
    [pytest.param(run, marks=_marks(run), id=f"{','.join(docs)}: {run.line}"[:140]) for run, docs in RUNS.items()],
)
def test_documented_command_runs(run: Run, tmp_path: Path) -> None:
    argv = workspace(run, tmp_path)
    proc = subprocess.run(
        command_line(run, argv), cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT_S
    )
    said = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == run.status, f"`{run.line}` exited {proc.returncode}, the docs say {run.status}:\n{said}"
    assert run.output in proc.stdout + proc.stderr, f"`{run.line}`: no {run.output!r} in its output:\n{said}"
