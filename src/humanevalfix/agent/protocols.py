"""The benchmark's protocols: what the model is shown and what `run_code` tests against.

A pass count means nothing without its protocol. HumanEvalFix is published in two settings
(OctoPack, arXiv 2308.07124): HumanEvalFixTests (buggy code and the tests, no docstring) and
HumanEvalFixDocs (buggy code and the docstring, no tests). A repair loop that feeds back the
grading tests sees more than either, so it gets its own name (`agent`), and `hidden` is the
realistic middle: a developer's few examples shown and used, judged on the full tests.

With `--max-iters 0` every protocol is one attempt with exactly its information, which is what
sits beside published pass@1. The verdict is always the full tests, run apart from the agent.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Protocol:
    name: str
    docstring: bool  # the task's docstring in the prompt
    feedback: str  # what run_code tests against: "tests", "example" or "none" (see agent._request)
    summary: str  # one line, shown in --help, the run's summary and reports
    published: str | None  # the published setting it matches with --max-iters 0, if any


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "tests", False, "tests", "buggy code + tests, no docstring; feedback from the tests", "HumanEvalFixTests"
        ),
        Protocol(
            "docs",
            True,
            "none",
            "buggy code + docstring, no tests; run_code only says whether the code runs",
            "HumanEvalFixDocs",
        ),
        Protocol(
            "hidden",
            True,
            "example",
            "buggy code + docstring + the task's example test as feedback; full tests hidden until scoring",
            None,
        ),
        Protocol(
            "agent", True, "tests", "buggy code + docstring + full tests, feedback from them (sees the most)", None
        ),
    )
}
# HumanEvalFixTests is the setting of OctoPack's main table, so the default number is comparable.
DEFAULT_PROTOCOL = "tests"


def describe(name: str) -> str:
    """`tests (HumanEvalFixTests): buggy code + tests, ...` for summaries and reports."""
    p = PROTOCOLS.get(name)
    if p is None:
        return name
    return f"{p.name}{f' ({p.published})' if p.published else ''}: {p.summary}"
