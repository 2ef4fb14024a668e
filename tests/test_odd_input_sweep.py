"""Sweeps of what a user mistypes: odd paths given to --out/--traces/--resume (and every command's
--out), and misspelled options. Each is one `error:` line naming the option, exit 2, no traceback,
nothing run; an odd path is left as it was (a device is never replaced by a results file).

The devices are made under tmp_path (a character device like /dev/null when root, a FIFO always),
so that a regression replaces a copy, never the machine's /dev/null.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from humanevalfix.cli import main

from .conftest import run_cli

ORACLE = ["--model", "oracle:canonical", "--sandbox", "process", "--tasks", "Python/0"]


@pytest.fixture
def odd(tmp_path: Path) -> dict[str, Path]:
    """A file, a folder, a FIFO, a character device (root only) and a path below a file."""
    paths = {"file": tmp_path / "plain.txt", "folder": tmp_path / "folder", "fifo": tmp_path / "fifo"}
    paths["file"].write_text("x\n", encoding="utf-8")
    paths["folder"].mkdir()
    os.mkfifo(paths["fifo"])
    if os.geteuid() == 0:
        paths["device"] = tmp_path / "null"
        os.mknod(paths["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))
    paths["below_a_file"] = paths["file"] / "run.json"
    paths["missing_parent"] = tmp_path / "no" / "such" / "run.jsonl"
    return paths


def kinds(paths: dict[str, Path]) -> dict[str, int]:
    return {name: stat.S_IFMT(p.lstat().st_mode) for name, p in paths.items() if p.exists() or p.is_symlink()}


def one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)  # argparse's errors too: an exit status, not SystemExit
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err[-2000:])
    return lines[0]


# (option, which odd path, what the line says); the path is a key of `odd`, or a literal.
EVAL_CASES: list[tuple[str, str, str]] = [
    ("--out", "/", "names a folder"),
    ("--out", "", "empty path"),
    ("--out", ".", "names a folder"),
    ("--out", "results/", "names a folder"),
    ("--out", "folder", "is a directory"),
    ("--out", "fifo", "not a regular file"),
    ("--out", "device", "not a regular file"),
    ("--out", "below_a_file", "is a file, not a folder"),
    ("--out", "/proc/x.json", "cannot write there"),
    ("--out", "run.jsonl", "the per-task stream is written beside the results"),
    ("--traces", "file", "is a file"),
    ("--traces", "fifo", "device, pipe or socket"),
    ("--traces", "device", "device, pipe or socket"),
    ("--traces", "below_a_file", "is a file, not a folder"),
    ("--resume", "/", "is a directory"),
    ("--resume", "folder", "is a directory"),
    ("--resume", "fifo", "not a regular file"),
    ("--resume", "device", "not a regular file"),
    ("--resume", "missing_parent", "file not found"),
    ("--resume", "below_a_file", "file not found"),
]


def resolve(name: str, odd: dict[str, Path], tmp_path: Path) -> str:
    if name == "device" and "device" not in odd:
        pytest.skip("making a character device needs root (the FIFO case covers the rest)")
    if name in odd:
        return str(odd[name])
    return str(tmp_path / name) if name.endswith(".jsonl") else name


@pytest.mark.parametrize(("option", "name", "says"), EVAL_CASES, ids=[f"{o} {n or 'empty'}" for o, n, _ in EVAL_CASES])
def test_an_odd_path_is_one_line_naming_the_option(
    option: str,
    name: str,
    says: str,
    odd: dict[str, Path],
    tmp_path: Path,
    tiny_dataset: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # a default results/ folder, if any, lands here
    before = kinds(odd)
    value = resolve(name, odd, tmp_path)
    argv = ["--model", "oracle:canonical", "--sandbox", "process", "--dataset-path", str(tiny_dataset), option, value]
    if option != "--resume":
        argv += ["--tasks", "Python/0"] + ([] if option == "--out" else ["--out", str(tmp_path / "r" / "run.json")])
    line = one_error_line(argv, capsys)
    assert option in line and says in line, line
    assert kinds(odd) == before  # nothing replaced, nothing written through
    assert not (tmp_path / "results").exists() and not (tmp_path / "r").exists()


COMMAND_OUT: dict[str, Callable[[Path], list[str]]] = {
    "export": lambda results: ["export", str(results)],
    "report": lambda results: ["report", str(results)],
    "score": lambda results: ["score", str(results)],
    "graph": lambda results: ["graph"],
    "view": lambda results: ["view", str(results)],
}


@pytest.mark.parametrize("name", ["/", "folder", "fifo", "device"])
@pytest.mark.parametrize("command", sorted(COMMAND_OUT))
def test_every_commands_out_refuses_a_folder_or_a_device(
    command: str, name: str, odd: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = kinds(odd)
    line = one_error_line([*COMMAND_OUT[command](odd["file"]), "--out", resolve(name, odd, tmp_path)], capsys)
    assert "--out" in line and ("names a folder" in line or "is a directory" in line or "not a regular file" in line), (
        line
    )
    assert kinds(odd) == before


# (argv, the option named, the suggestion, the usage line's program)
MISSPELT: list[tuple[list[str], str, str, str]] = [
    (["--limt", "10"], "--limt", "did you mean --limit?", "humanevalfix [COMMAND]"),
    (["--modle", "gpt-4o"], "--modle", "did you mean --model?", "humanevalfix [COMMAND]"),
    (["--limit", "2", "--wrokers", "2"], "--wrokers", "did you mean --workers?", "humanevalfix [COMMAND]"),
    (["--limt"], "--limt", "did you mean --limit?", "humanevalfix [COMMAND]"),
    (["--limt=3"], "--limt", "did you mean --limit?", "humanevalfix [COMMAND]"),
    (["-v", "--sandbx", "process"], "--sandbx", "did you mean --sandbox?", "humanevalfix [COMMAND]"),
    (["eval", "--dataset-pth", "x"], "--dataset-pth", "did you mean --dataset-path?", "humanevalfix eval [options]"),
    (["fix", "a.py", "--wrte"], "--wrte", "did you mean --write?", "humanevalfix fix [options] FILE"),
    (
        ["fix", "--tests", "t.py", "a.py", "--fucntion", "f"],
        "--fucntion",
        "did you mean --function?",
        "humanevalfix fix [options] FILE",
    ),
    (["report", "r.json", "--outt", "x"], "--outt", "did you mean --out?", "humanevalfix report [options]"),
    (["score", "g.json", "--timout", "3"], "--timout", "did you mean --timeout?", "humanevalfix score [options]"),
    (["serve", "--prot", "8000"], "--prot", "did you mean --port?", "humanevalfix serve [options]"),
    (
        ["sandbox", "build-image", "--tg", "x"],
        "--tg",
        "did you mean --tag?",
        "humanevalfix sandbox build-image [options]",
    ),
    (["--xyzzy"], "--xyzzy", "see humanevalfix --help", "humanevalfix [COMMAND]"),
]


@pytest.mark.parametrize(("argv", "option", "hint", "usage"), MISSPELT, ids=[" ".join(a) for a, *_ in MISSPELT])
def test_a_misspelt_option_is_named_with_the_closest_one_and_its_commands_usage(
    argv: list[str], option: str, hint: str, usage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert (
        f"unrecognized option {option}: {hint}" in lines[0] or f"unrecognized option {option} ({hint})" in lines[0]
    ), lines[0]
    assert "invalid choice" not in err
    # The usage is the command's own, in one line: `fix`'s for `fix ... --wrte`, not the top level's.
    assert err.splitlines()[0].startswith(f"usage: {usage}") and len(err.splitlines()) == 2, err


def test_a_misspelt_command_gets_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_error_line(["fxi", "a.py"], capsys)
    assert "unknown command 'fxi': did you mean fix?" in line


@pytest.mark.parametrize(
    "argv",
    [["--seed", "-1", "--limt", "1"], ["--temperatures=0,0.5", "--limt", "1"], ["--tasks", "Python/0", "--", "--limt"]],
)
def test_values_and_negative_numbers_are_not_taken_for_options(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    main(argv)
    err = capsys.readouterr().err
    if "--" in argv:  # after `--` nothing is an option: argparse's own complaint, not ours
        assert "unrecognized option" not in err
    else:
        assert "unrecognized option --limt: did you mean --limit?" in err, err


@pytest.mark.e2e
def test_the_real_command_line_names_the_misspelt_option(tmp_path: Path) -> None:
    proc = run_cli(["--limt", "10"], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "error: unrecognized option --limt: did you mean --limit?" in proc.stderr, proc.stderr
