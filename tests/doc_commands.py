"""The commands README.md and docs/*.md give, as (doc, program, arguments): read from the shell
blocks and inline code of every page, for the tests that parse them (test_documented_commands.py)
and run them (test_documented_commands_run.py)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from .conftest import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
FENCE_RE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INLINE_RE = re.compile(r"`((?:python3? |humanevalfix )[^`\n]+)`")
SHELL_LANGS = ("", "bash", "sh", "shell", "console")
OPTIONAL_RE = re.compile(r"\s\[[^\]]*\]")


def shell_lines(text: str) -> Iterator[tuple[str, bool]]:
    """The command lines of shell blocks (continuations joined) and of inline code (True)."""
    for lang, body in FENCE_RE.findall(text):
        if lang in SHELL_LANGS:
            for line in body.replace("\\\n", " ").splitlines():
                yield line, False
    for span in INLINE_RE.findall(text):
        yield span, True


def commands(line: str) -> Iterator[tuple[str, list[str]]]:
    """(program, arguments) of each of this project's commands on a shell line."""
    line = OPTIONAL_RE.sub("", line.strip().removeprefix("$ "))  # a synopsis: its required part
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return  # not shell (prose in a block)
    part: list[str] = []
    for word in [*words, "&&"]:
        if word in ("&&", "||", ";", "|"):
            yield from _ours(part)
            part = []
        else:
            part.append(word)


def _ours(words: list[str]) -> Iterator[tuple[str, list[str]]]:
    while words and (re.match(r"^[A-Z_]+=", words[0]) or words[0] in ("sudo", "time", "exec")):
        words = words[1:]
    if len(words) >= 2 and re.match(r"python3?$", words[0]):
        if words[1] == "eval_humanevalfix.py":
            yield "humanevalfix", words[2:]
        elif words[1:3] == ["-m", "humanevalfix"]:
            yield "humanevalfix", words[3:]
        elif re.match(r"bench/\w+\.py$", words[1]):
            yield words[1], words[2:]
    elif words and words[0] == "humanevalfix":
        yield "humanevalfix", words[1:]


def documented() -> list[tuple[str, str, list[str]]]:
    found = []
    for doc in DOCS:
        for line, inline in shell_lines(doc.read_text(encoding="utf-8")):
            for program, argv in commands(line):
                if inline and len(argv) == 1 and not argv[0].startswith("-"):
                    continue  # `humanevalfix score` in a sentence: a command's name, not a command line
                found.append((doc.name, program, argv))
    return found
