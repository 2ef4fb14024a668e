"""The README and docs/ against the tree they describe.

Documentation rots quietly: a module moves and the architecture page still names it, a section
is renamed and a link lands nowhere, the README grows back into a manual, a measured number is
quoted without the run that made it. These tests read the Markdown and check it against the
files, so such drift fails the suite instead.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "humanevalfix"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
README_MAX_BYTES = 15_000

SETUP = (
    "sudo apt-get update && sudo apt-get install -y bubblewrap git patch && python -m pip install -r requirements.txt"
)
RUN = "python eval_humanevalfix.py --limit 10"
TESTS = "python -m pytest -q"
TESTS_ALL = "python -m pytest -q --all"

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# Paths named in code spans: a package-relative module (`agent/prompts.py`) or a repository path.
MODULE_PATH = re.compile(r"^[A-Za-z_][\w/]*\.py$")
REPO_PATH = re.compile(r"^(?:src|tests|bench)/[\w./-]+$")
DOTTED = re.compile(r"^humanevalfix(?:\.[A-Za-z_]\w*)+$")
SLASHED_MODULE = re.compile(r"(?<![\w/.])((?:[A-Za-z_]\w*/)+[A-Za-z_]\w*\.py)\b")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced code blocks: links and headings in examples do not count."""
    return FENCE.sub("", text)


def code_spans(text: str) -> list[str]:
    return [m.group(2).strip() for m in INLINE_CODE.finditer(prose(text))]


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = github_slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def top_level_names(module: Path) -> set[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def dotted_exists(name: str) -> bool:
    """`humanevalfix.a.b` is a module or package, or a top-level name in one."""
    parts = name.split(".")[1:]
    for cut in range(len(parts), -1, -1):
        base = PACKAGE.joinpath(*parts[:cut])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            rest = parts[cut:]
            return not rest or (len(rest) == 1 and rest[0] in top_level_names(module))
    return False


def module_path_exists(path: str) -> bool:
    if "/" not in path:  # a bare file name: somewhere in the package, or a script at the root
        return any(PACKAGE.rglob(path)) or (ROOT / path).is_file()
    return (PACKAGE / path).is_file() or (ROOT / path).is_file()


def test_architecture_names_only_modules_that_exist():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    spans = code_spans(text)
    # Code spans, and any `dir/module.py` anywhere in the page (the flow diagram is a code block).
    paths = sorted({s for s in spans if MODULE_PATH.match(s)} | set(SLASHED_MODULE.findall(text)))
    dotted = [s for s in spans if DOTTED.match(s)]
    assert len(paths) >= 20, f"architecture.md should name the package's modules; found {paths}"
    missing = [p for p in paths if not module_path_exists(p)] + [d for d in dotted if not dotted_exists(d)]
    assert not missing, f"docs/architecture.md names modules that are not under src/humanevalfix: {missing}"


def test_architecture_covers_every_subpackage():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    subpackages = sorted(p.parent.relative_to(PACKAGE).as_posix() for p in PACKAGE.glob("*/__init__.py"))
    absent = [s for s in subpackages if f"`{s}/`" not in text]
    assert not absent, f"docs/architecture.md has no section naming these subpackages as `name/`: {absent}"


def test_architecture_names_every_module():
    """The page describes the whole tree: a module added without a line there fails here."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(SLASHED_MODULE.findall(text)) | {s for s in code_spans(text) if MODULE_PATH.match(s)}
    modules = [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))]
    unnamed = [m for m in modules if not m.endswith("/__init__.py") and m != "__init__.py" and m not in named]
    assert not unnamed, f"docs/architecture.md does not name these modules: {unnamed}"


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_repository_paths_in_docs_exist(doc: Path):
    spans = code_spans(doc.read_text(encoding="utf-8"))
    named = {token for span in spans for token in span.split() if REPO_PATH.match(token)}
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def test_readme_is_short():
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes; keep it under {README_MAX_BYTES} and move detail to docs/"
    )


@pytest.mark.parametrize("command", [SETUP, RUN, TESTS, TESTS_ALL])
def test_readme_gives_the_commands(command: str):
    assert command in README.read_text(encoding="utf-8")


def test_the_first_screen_is_the_set_up_the_main_command_fix_and_the_tests():
    """A newcomer sees what to run before any measured result: the first 40 lines hold the set-up,
    the main command, `fix` and the test command, and the results table comes after them."""
    readme = README.read_text(encoding="utf-8")
    first_screen = "\n".join(readme.splitlines()[:40])
    for command in (SETUP, RUN, "humanevalfix fix ", TESTS):
        assert command in first_screen, command
    assert readme.index(TESTS) < readme.index("## Measured result")


@pytest.mark.parametrize(
    "doc", [*markdown_files(), ROOT / ".env.example"], ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_no_command_points_outside_the_checkout(doc: Path):
    """`../shared/...` exists only beside our CI's clone: a newcomer has the bundled dataset, which a
    run without --dataset-path uses offline."""
    text = doc.read_text(encoding="utf-8")
    assert "../shared" not in text, [line for line in text.splitlines() if "../shared" in line]


def test_ci_runs_what_the_readme_says():
    """CI installs as the README's set-up command does and runs the README's test command."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.split("#", 1)[0] for line in ci.splitlines()]
    assert any(c.strip().startswith(TESTS) for c in commands), f".ci/run does not run `{TESTS}`"
    assert any("apt-get install" in c and "bubblewrap" in c for c in commands), ".ci/run does not install bubblewrap"
    assert any("pip install" in c and "-r requirements.txt" in c for c in commands), (
        ".ci/run does not install requirements.txt"
    )


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc: Path):
    broken = []
    for target in LINK.findall(INLINE_CODE.sub("", prose(doc.read_text(encoding="utf-8")))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # http:, https:, mailto:
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading with that anchor)")
    assert not broken, f"{doc.name}: broken links: {broken}"


def _results(name: str) -> dict:
    return json.loads((ROOT / "results" / name).read_text(encoding="utf-8"))


README_RUNS = [
    "local-0.5b_tests_max-iters-0.json",
    "local-0.5b_tests_repair_rewrite-now_fresh.json",
    "local-0.5b_hidden_repair.json",
    "local-0.5b_repair.json",
    "local-0.5b_max-iters-0.json",
    "local-1.5b_tests_repair_rewrite-now.json",
    "local-1.5b_tests_repair_stop-after-code_rewrite-turns-1.json",
]
# Earlier policies' runs, kept for comparison in docs/results.md.
RESULTS_MD_RUNS = [
    "local-0.5b_tests_repair_redraw-turn-0_fix-rewrite.json",
    "local-1.5b_tests_repair.json",
    "local-0.5b_tests_repair_old-policy.json",
    "local-0.5b_tests_repair.json",
    "local-0.5b_tests_repair_capped.json",
    "local-0.5b_tests_repair_redraws-1.json",
    "local-0.5b_tests_repair_redraws-1-turn-0.json",
    "local-0.5b_tests_repair_seeded.json",
    "local-0.5b_tests_repair_rewrite-now_fresh_rewrite-turns-3.json",
    "local-0.5b_limit-10_2026-11-29.json",
    "local-1.5b_limit-10_2026-11-29.json",
]


@pytest.mark.parametrize(
    ("doc", "name"),
    [(README, n) for n in README_RUNS] + [(DOCS / "results.md", n) for n in README_RUNS + RESULTS_MD_RUNS],
)
def test_measured_numbers_come_from_the_results(doc: Path, name: str):
    """The measured numbers are the results files' own, with the command that wrote them."""
    text = doc.read_text(encoding="utf-8")
    summary = _results(name)["summary"]
    tasks = summary["tasks"]
    for key in ("passed_first", "passed") + (("passed_plus",) if summary.get("passed_plus") is not None else ()):
        assert f"{summary[key]}/{tasks}" in text, f"{doc.name} does not quote {key} of results/{name}"
    assert f"--out results/{name}" in text, f"{doc.name} does not give the command that wrote results/{name}"


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("local-0.5b_tests_repair_rewrite-now_fresh.json", "| repair loop (default options) |"),
        ("local-1.5b_tests_repair_rewrite-now.json", "| repair loop, 1.5B "),
        ("local-1.5b_tests_repair_stop-after-code_rewrite-turns-1.json", "| … `--stop-after-code"),
        ("local-0.5b_hidden_repair.json", "| repair loop | `hidden` |"),
        ("local-0.5b_repair.json", "| repair loop, before `--protocol` |"),
    ],
)
def test_readme_share_of_turns_without_new_code_comes_from_the_run(name: str, label: str):
    """The README row's share of turns that brought no new candidate (`repeat`, `no_code`), from the run's turns."""
    outcomes = [a["outcome"] for t in _results(name)["tasks"] for a in t["attempts"]]
    share = 100 * sum(o in ("repeat", "no_code") for o in outcomes) / len(outcomes)
    row = next(
        line
        for line in README.read_text(encoding="utf-8").splitlines()
        if line.startswith(label) and f"**{_results(name)['summary']['passed']}/164" in line
    )
    assert f"| {share:.0f}% |" in row, (row, share)


def test_readme_time_of_the_main_command_comes_from_its_run():
    """How long `--limit 10` takes on the embedded model: the run's own wall time, with its command."""
    readme = README.read_text(encoding="utf-8")
    summary = _results("local-0.5b_limit-10.json")["summary"]
    assert f"{summary['wall_s']:,.0f} s" in readme and f"{summary['passed']}/{summary['tasks']} passed" in readme
    assert "python eval_humanevalfix.py --limit 10 --out results/local-0.5b_limit-10.json" in readme


def test_readme_baseline_number_comes_from_the_results():
    readme = README.read_text(encoding="utf-8")
    summary = _results("baseline_vs_agent_local-0.5b.json")["summary"]
    assert f"{summary['baseline_passed']}/{summary['tasks']}" in readme
    assert "--out results/baseline_vs_agent_local-0.5b.json" in readme


@pytest.mark.parametrize(
    "name",
    [
        "local_speed_first40_a.json",
        "local_speed_first40_b.json",
        "local_speed_first40_c.json",
        "local_speed_first40_no-llamafile.json",
    ],
)
def test_speed_bench_numbers_in_the_local_model_doc_come_from_the_files(name: str):
    text = (DOCS / "local-model.md").read_text(encoding="utf-8")
    assert f"--out results/{name}" in text
    for row in _results(name)["results"]:
        assert f"{row['loop_s']:.1f} s" in text, (
            f"local-model.md does not quote {row['setting']}'s loop time of results/{name}"
        )
        if row["identical_replies"] is not None:
            assert f"{row['identical_replies']}/{row['replies_compared']}" in text


@pytest.mark.parametrize("name", ["batch_exactness_stock.json", "batch_exactness_no-llamafile.json"])
def test_batch_exactness_numbers_in_the_local_model_doc_come_from_the_files(name: str):
    text = (DOCS / "local-model.md").read_text(encoding="utf-8")
    assert f"--out results/{name}" in text
    build = "installed build" if "stock" in name else "without llamafile"
    for repack in (True, False):
        cells = [f"{r['identical']}/{r['positions']}" for r in _results(name)["rows"] if r["repack"] == repack]
        row = f"| {build}, repack {'on' if repack else 'off'}"
        line = next(ln for ln in text.splitlines() if ln.startswith(row))
        assert line.split("|")[2:-1] == [f" {c} " for c in cells], line


# What the model was asked, and how: the settings a documented command must make again.
_POLICY_FIELDS = (
    "max_iters",
    "redraws",
    "redraw_turns",
    "strategies",
    "rewrite_turns",
    "rewrite_again",
    "rewrite_now",
    "runtime_values",
)


def _commands_of_committed_runs() -> list[tuple[str, list[str], str]]:
    """(doc, eval argv, results file) for each documented eval command that wrote a committed file."""
    from humanevalfix.cli._main import COMMANDS

    from .doc_commands import documented

    found = []
    for doc, program, argv in documented():
        if program != "humanevalfix" or "--out" not in argv or (argv[0] in COMMANDS and argv[0] != "eval"):
            continue
        out = argv[argv.index("--out") + 1]
        if out.startswith("results/") and (ROOT / out).is_file():
            found.append((doc, argv if argv[0] == "eval" else ["eval", *argv], out))
    return found


@pytest.mark.parametrize(
    ("doc", "argv", "out"), _commands_of_committed_runs(), ids=lambda v: v if isinstance(v, str) else None
)
def test_the_documented_command_of_a_committed_run_makes_its_settings(doc: str, argv: list[str], out: str):
    """Run today, the command beside a committed run asks the model as that run did: a changed
    default must not leave an older run's command silently making another run (--policy names
    the earlier defaults)."""
    from humanevalfix.cli._eval import config_from_args
    from humanevalfix.cli._main import build_parser
    from humanevalfix.runspec import from_dict

    config = config_from_args(build_parser().parse_args(argv))
    spec = from_dict(json.loads((ROOT / out).read_text(encoding="utf-8"))["config"])
    made = {name: getattr(config, name) for name in _POLICY_FIELDS} | {"protocol": config.protocol}
    stored = {name: getattr(spec.agent, name) for name in _POLICY_FIELDS} | {"protocol": spec.protocol.name}
    assert made == stored, f"{doc}: {' '.join(argv)}"


def test_some_documented_commands_are_checked_against_their_runs():
    outs = {out for _, _, out in _commands_of_committed_runs()}
    assert {
        "results/local-0.5b_tests_repair_rewrite-now_fresh.json",
        "results/local-0.5b_repair.json",
        "results/local-1.5b_tests_repair.json",
    } <= outs


def test_the_tiers_documented_are_the_tiers_declared():
    """docs/testing.md's table is what tests/conftest.py declares, and CI runs every tier: the unit
    tier with the README's command, the others by name."""
    from .conftest import DEFAULT_TIERS, TIERS

    table = "\n".join(
        ["| tier | what its tests may do |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in TIERS.items()]
    )
    assert table in (DOCS / "testing.md").read_text(encoding="utf-8"), f"docs/testing.md should hold:\n{table}"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    others = [name for name in TIERS if name not in DEFAULT_TIERS]
    assert any(
        line.strip().startswith(TESTS) and all(f"--tier {name}" in line for name in others) for line in ci.splitlines()
    ), f".ci/run does not run the tiers {others}"
