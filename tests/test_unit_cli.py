"""The command line in-process: `python -m humanevalfix` (runpy), and the commands `score`, `graph`,
`sandbox` and `serve` called through cli.main([...]) with what fails validation (exit 2, one line on
stderr, nothing started) or with what needs no model and no sandbox. Where a command would start a
process (an executor, docker, the llama.cpp server) that one call is replaced by a stand-in that
records what it was asked and answers; everything the command does around it is the real code.

tests/test_cli.py runs the same entry points as child processes (the e2e tier).
"""

from __future__ import annotations

import contextlib
import json
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from humanevalfix import __version__
from humanevalfix.cli import COMMANDS, main
from humanevalfix.errors import ConfigError
from humanevalfix.evaluation import generations as gen
from humanevalfix.sandbox.executor import ExecResult, Limits

RESULTS = Path(__file__).resolve().parent.parent / "results"
LIMIT10 = RESULTS / "local-0.5b_limit-10.json"  # 10 tasks, Python/0 ... Python/9; 6 passed (0, 4, 5, 7, 8, 9)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No .env of the checkout is read; relative outputs land in tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HUMANEVALFIX_SANDBOX", raising=False)


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- python -m humanevalfix


def test_python_m_humanevalfix_help_lists_every_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["humanevalfix", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("humanevalfix", run_name="__main__")
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m humanevalfix [COMMAND] [options]")
    assert "With no COMMAND, runs the benchmark (`eval`)" in out
    listing = out.split("commands:\n", 1)[1]
    assert [line.split()[0] for line in listing.splitlines()[: len(COMMANDS)]] == list(COMMANDS)
    assert "--limit" in out and "Example: python -m humanevalfix --limit 10" in out


def test_python_m_humanevalfix_version_and_a_bad_option(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["humanevalfix", "--version"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("humanevalfix", run_name="__main__")
    assert exit_info.value.code == 0 and capsys.readouterr().out == f"python -m humanevalfix {__version__}\n"
    monkeypatch.setattr(sys, "argv", ["humanevalfix", "score"])  # its argument missing
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("humanevalfix", run_name="__main__")
    assert exit_info.value.code == 2
    assert "python -m humanevalfix score: error: the following arguments are required" in capsys.readouterr().err


# ---------------------------------------------------------------- score


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("generations", "why"),
    [
        ({"no": "tasks"}, "not a results file of this tool"),  # a dict is read as a results file
        ([["x = 1"], "x = 2"], "entry 1 must be a non-empty list of code strings"),
        ([[]], "entry 0 must be a non-empty list of code strings"),
        ([["x = 1", 3]], "entry 0, candidate 1: expected a string, got int"),
    ],
)
def test_score_a_malformed_generations_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], generations: Any, why: str
) -> None:
    path = write_json(tmp_path / "gen.json", generations)
    assert main(["score", str(path), "--sandbox", "process"]) == 2
    line = one_line(capsys.readouterr().err)
    assert why in line


def test_score_refuses_what_does_not_fit_before_scoring(
    tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_json(tmp_path / "gen.json", [["def f(): pass"]])
    assert main(["score", str(path), "--plus-inputs", str(tmp_path / "plus.jsonl")]) == 2
    assert "--plus-inputs: only when re-scoring a results file" in one_line(capsys.readouterr().err)
    base = ["score", str(path), "--dataset-path", str(dataset_path)]
    assert main([*base, "--sandbox", "process", "--docker-cpus", "2"]) == 2
    assert "--docker-cpus: only with --sandbox docker (the sandbox here is process)" in one_line(
        capsys.readouterr().err
    )
    assert main([*base, "--sandbox", "process", "--limit-start", "164"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "the generations file has 1 entries from row 164, but the dataset has 164 tasks" in line
    for bad, why in (
        (["--workers", "0"], "must be at least 1, got 0"),
        (["--limit-start", "-1"], "must be 0 or more, got -1"),
        (["--timeout", "nan"], "must be a finite number"),
        (["--out", str(tmp_path)], "is a directory"),
        (["--sandbox", "vm"], "invalid choice: 'vm'"),
    ):
        assert main([*base, *bad]) == 2, bad
        assert why in capsys.readouterr().err, bad
    assert not (tmp_path / "plus.jsonl").exists()


def test_score_prints_pass_at_k_and_writes_the_verdicts(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The executor pool is the one thing replaced: it answers the verdicts below."""
    asked: list[tuple[Any, ...]] = []
    answers = {
        0: [gen.CandidateVerdict("passed", "all tests passed"), gen.CandidateVerdict("failed", "AssertionError\nmore")],
        1: [gen.CandidateVerdict("timeout", "timed out after 3s"), gen.CandidateVerdict("failed", "boom")],
    }

    def score(
        generations: list[list[str]],
        tasks: list[Any],
        limit_start: int,
        kind: str,
        limits: Limits,
        workers: int,
        docker: Any = None,
        hidden: tuple[Path, ...] = (),
    ) -> list[gen.TaskVerdicts]:
        asked.append((generations, limit_start, kind, limits.timeout_s, workers))
        assert hidden == (dataset_path,)  # the dataset's file, kept from the candidates
        return [gen.TaskVerdicts(tasks[limit_start + i].task_id, limit_start + i, answers[i]) for i in range(2)]

    monkeypatch.setattr(gen, "score_generations", score)
    path = write_json(tmp_path / "gen.json", [["a = 1", "a = 2"], [None, "b = 1"]])
    out = tmp_path / "verdicts" / "v.json"
    args = ["score", str(path), "--dataset-path", str(dataset_path), "--sandbox", "process", "--limit-start", "3"]
    assert main([*args, "--timeout", "3", "--workers", "2", "--out", str(out), "-v"]) == 0
    assert asked == [([["a = 1", "a = 2"], ["", "b = 1"]], 3, "process", 3.0, 2)]  # None read as no code
    err = capsys.readouterr().err
    assert "Python/3: PASS FAIL AssertionError" in err and "more" not in err  # the first failure's first line
    assert "Python/4: FAIL FAIL timed out after 3s" in err
    assert "2 task(s); solved by some candidate: 1" in err
    assert "pass@1: 25.0%" in err and "pass@2: 50.0%" in err
    assert f"verdicts: {out}" in " ".join(err.split())  # rich may wrap a long path onto its own line
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["pass_at_k"] == {"1": 0.25, "2": 0.5}
    assert [(t["task_id"], t["index"], t["passed"]) for t in document["tasks"]] == [
        ("Python/3", 3, [True, False]),
        ("Python/4", 4, [False, False]),
    ]
    assert document["generations"] == str(path)


class FailingExecutor:
    """Answers every run `failed`, recording the code it was given."""

    name = "stand-in"
    isolation = "none (a test's stand-in)"

    def __init__(self) -> None:
        self.codes: list[str] = []
        self.closed = False

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        self.codes.append(code)
        return ExecResult("failed", "AssertionError: stand-in")

    def close(self) -> None:
        self.closed = True


def test_score_of_a_results_file_rescores_it_and_lists_the_changed_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from humanevalfix.sandbox import factory

    executor = FailingExecutor()
    built: list[tuple[str, float]] = []

    def build(kind: str, limits: Limits, **kwargs: Any) -> FailingExecutor:
        built.append((kind, limits.timeout_s))
        return executor

    monkeypatch.setattr(factory, "build_executor", build)
    out = tmp_path / "rescored.json"
    assert main(["score", str(LIMIT10), "--sandbox", "process", "--timeout", "4", "--out", str(out)]) == 0
    assert built == [("process", 4.0)] and executor.closed
    err = " ".join(capsys.readouterr().err.split())
    assert "HumanEvalFix results" in err and "0/10 (0.0%)" in err
    assert (
        "6 verdict(s) differ from the recorded ones: Python/0, Python/4, Python/5, Python/7, Python/8, Python/9" in err
    )
    assert f"results: {out}" in err
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["summary"]["passed"] == 0 and len(document["tasks"]) == 10
    assert document["config"]["rescored"]["verdicts_changed"] == [
        "Python/0",
        "Python/4",
        "Python/5",
        "Python/7",
        "Python/8",
        "Python/9",
    ]
    assert document["config"]["rescored"]["executor"] == "stand-in"
    original = json.loads(LIMIT10.read_text(encoding="utf-8"))
    assert executor.codes and set(executor.codes) <= {t["final_code"] for t in original["tasks"]} | {
        t.get("first_code") for t in original["tasks"]
    }


def test_score_with_plus_inputs_that_are_missing_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from humanevalfix.sandbox import factory

    monkeypatch.setattr(factory, "build_executor", lambda *a, **k: pytest.fail("no executor before the inputs load"))
    missing = tmp_path / "HumanEvalPlus.jsonl"
    assert main(["score", str(LIMIT10), "--plus-inputs", str(missing)]) == 2
    assert str(missing) in one_line(capsys.readouterr().err)


# ---------------------------------------------------------------- graph


def test_graph_writes_the_png_and_the_mermaid_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("langgraph")
    from humanevalfix.agent import STEP_DOCS

    out = tmp_path / "pics" / "repair.png"
    assert main(["graph", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    mermaid = out.with_suffix(".mmd").read_text(encoding="utf-8")
    assert captured.out == mermaid and mermaid.startswith(("---", "graph", "%%", "flowchart"))
    assert "ask" in mermaid and "retry" in mermaid
    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    err_lines = captured.err.splitlines()
    assert [line.split()[0] for line in err_lines[: len(STEP_DOCS)]] == list(STEP_DOCS)
    assert err_lines[-1] == f"graph: {out} (PNG), {out.with_suffix('.mmd')} (Mermaid)"


def test_graph_without_langgraph_or_with_an_unwritable_out_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "taken.mmd"
    folder.mkdir()  # --out taken.png's Mermaid file would be this directory
    assert main(["graph", "--out", str(tmp_path / "taken.png")]) == 2
    assert "--out (its .mmd beside it)" in one_line(capsys.readouterr().err)
    monkeypatch.setitem(sys.modules, "langgraph.graph", None)  # as where langgraph is not installed
    assert main(["graph", "--out", str(tmp_path / "g.png")]) == 2
    assert "pip install -r requirements-langgraph.txt" in one_line(capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.mmd"]


# ---------------------------------------------------------------- sandbox build-image


def test_sandbox_needs_an_action_and_explains_build_image(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox"]) == 2
    assert "the following arguments are required: ACTION" in capsys.readouterr().err
    assert main(["sandbox", "build-image", "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: humanevalfix sandbox build-image [-h] [--tag TAG]" in out
    assert "Build the image `--sandbox docker` uses, offline" in out


def test_sandbox_build_image_without_docker_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from humanevalfix.sandbox import docker

    monkeypatch.setattr(docker.shutil, "which", lambda name, *a, **k: None)
    assert main(["sandbox", "build-image"]) == 2
    assert "the docker CLI is not installed" in one_line(capsys.readouterr().err)


@pytest.fixture
def fake_docker(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The docker daemon and `docker import` replaced: what build-image asked, and what they answer."""
    from humanevalfix.sandbox import docker, image

    seen: dict[str, Any] = {"built": [], "calls": [], "size": "123000000\n", "fail": None}

    def build(tag: str | None = None, docker: str = "docker") -> image.BuiltImage:
        seen["built"].append(tag)
        if seen["fail"]:
            raise seen["fail"]
        return image.BuiltImage(tag or "?", 4321, 98_000_000, 12.5)

    def call(args: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        seen["calls"].append(args)
        return subprocess.CompletedProcess(["docker", *args], 0, seen["size"], "")

    monkeypatch.setattr(docker, "check_daemon", lambda: None)
    monkeypatch.setattr(docker, "docker", call)
    monkeypatch.setattr(image, "build_image", build)
    return seen


def test_sandbox_build_image_reports_what_it_built(
    fake_docker: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from humanevalfix.sandbox.image import default_tag

    assert main(["sandbox", "build-image"]) == 0
    out = capsys.readouterr().out
    assert fake_docker["built"] == [default_tag()]
    assert out.splitlines() == [
        f"building {default_tag()} from this Python ...",
        f"built {default_tag()}: 4321 files, 123 MB, in 12.5 s",
    ]
    assert fake_docker["calls"] == [["image", "inspect", "--format", "{{.Size}}", default_tag()]]
    fake_docker["size"] = ""  # docker could not tell the size: the streamed bytes instead
    assert main(["sandbox", "build-image", "--tag", "mine:1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "built mine:1: 4321 files, 98 MB streamed, in 12.5 s"


def test_sandbox_build_image_failure_is_one_line(
    fake_docker: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_docker["fail"] = RuntimeError("docker import failed: no space left on device")
    assert main(["sandbox", "build-image", "--tag", "x:1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "building x:1 from this Python ...\n"
    assert one_line(captured.err).endswith("sandbox build-image: docker import failed: no space left on device")
    assert fake_docker["calls"] == []  # nothing inspected after a failed build


# ---------------------------------------------------------------- serve


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--model", "gpt-4o-mini"], "--model gpt-4o-mini: not a local preset (local presets: local, local-1.5b"),
        (["--model", "nothing-like-it"], "--model nothing-like-it: not a local preset"),
        (["--port", "0"], "--port: must be between 1 and 65535, got 0"),
        (["--port", "65536"], "--port: must be between 1 and 65535, got 65536"),
        (["--threads", "0"], "--threads and --batch-threads must be at least 1, --n-ctx at least 256"),
        (["--batch-threads", "0"], "--threads and --batch-threads must be at least 1"),
        (["--n-ctx", "255"], "--n-ctx at least 256"),
        (["--prompt-lookup", "65"], "--prompt-lookup: must be between 0 (off) and 64, got 65"),
        (["--prompt-lookup", "-1"], "--prompt-lookup: must be between 0 (off) and 64, got -1"),
        (["--exact-lookup", "--prompt-lookup", "7"], "--exact-lookup: at most 6 draft tokens are checked exactly"),
    ],
)
def test_serve_refuses_bad_settings_before_starting_anything(
    args: list[str], why: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from humanevalfix.models import embedded

    monkeypatch.setattr(embedded, "run_server", lambda *a, **k: pytest.fail("the server must not start"))
    assert main(["serve", *args]) == 2
    assert why in one_line(capsys.readouterr().err)


def test_serve_without_llama_cpp_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.setitem(sys.modules, "llama_cpp.server", None)
    assert main(["serve"]) == 2
    assert "pip install 'llama-cpp-python[server]'" in one_line(capsys.readouterr().err)


class FakeServer:
    """run_server's stand-in: records its arguments; its process exits with `status` (or Ctrl-C)."""

    def __init__(self, tmp_path: Path, status: int | type[BaseException]) -> None:
        self.calls: list[tuple[Path, str, Any]] = []
        self.log = tmp_path / "server.log"
        self.log.write_text("loading...\nGGML_ASSERT failed\n", encoding="utf-8")
        self.status = status

    def wait(self) -> int:
        if isinstance(self.status, int):
            return self.status
        raise self.status()

    @contextlib.contextmanager
    def __call__(self, weights: Path, model_id: str, options: Any) -> Iterator[tuple[str, Any, Path]]:
        self.calls.append((weights, model_id, options))
        yield "http://127.0.0.1:5999/v1", self, self.log


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from humanevalfix.models import embedded, weights

    located: list[tuple[str, Path | None]] = []

    def locate(key: str, explicit: Path | None = None, *a: Any, **k: Any) -> Path:
        located.append((key, explicit))
        return explicit or tmp_path / f"{key}.gguf"

    monkeypatch.setattr(embedded, "check_installed", lambda: None)
    monkeypatch.setattr(weights, "locate", locate)

    def start(status: int | type[BaseException]) -> FakeServer:
        server = FakeServer(tmp_path, status)
        server.located = located  # type: ignore[attr-defined]
        monkeypatch.setattr(embedded, "run_server", server)
        return server

    yield start


def test_serve_prints_the_url_and_reports_a_server_that_exits(
    served: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from humanevalfix.models.embedded import DEFAULT_CTX, DEFAULT_PROMPT_LOOKUP, EXACT_MAX_DRAFT

    server = served(3)
    assert main(["serve", "--model", "local-1.5b", "--port", "5999", "--threads", "3"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "http://127.0.0.1:5999/v1\n"  # stdout: the URL alone, for a script to read
    weights, model_id, options = server.calls[0]
    assert server.located == [("qwen2.5-coder-1.5b", None)]
    assert (weights, model_id) == (tmp_path / "qwen2.5-coder-1.5b.gguf", "qwen2.5-coder-1.5b-instruct")
    assert (options.threads, options.port, options.n_ctx) == (3, 5999, DEFAULT_CTX)
    assert (options.prompt_lookup, options.exact, options.repack) == (DEFAULT_PROMPT_LOOKUP, False, True)
    assert f"serving qwen2.5-coder-1.5b-instruct ({weights}) at http://127.0.0.1:5999/v1" in captured.err
    assert "e.g. python eval_humanevalfix.py --base-url http://127.0.0.1:5999/v1" in captured.err
    assert f"server log: {server.log}; Ctrl-C to stop" in captured.err
    assert "the server exited (status 3); its log ends with:\nloading...\nGGML_ASSERT failed" in captured.err

    gguf = tmp_path / "mine.gguf"
    assert main(["serve", "--gguf", str(gguf), "--exact-lookup", "--n-ctx", "4096"]) == 1
    weights, model_id, options = server.calls[1]
    assert server.located[1] == ("qwen2.5-coder-0.5b", gguf) and weights == gguf
    assert (options.prompt_lookup, options.exact, options.repack, options.n_ctx) == (EXACT_MAX_DRAFT, True, False, 4096)
    capsys.readouterr()
    assert main(["serve", "--prompt-lookup", "0"]) == 1
    assert server.calls[2][2].prompt_lookup == 0


def test_serve_stops_on_ctrl_c_and_reads_another_models_file(
    served: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = served(KeyboardInterrupt)
    models = tmp_path / "models.yaml"
    models.write_text(
        "tiny:\n  provider: local\n  model: tiny-coder\n  gguf: tiny-weights\n  temperatures: [0.0]\n",
        encoding="utf-8",
    )
    assert main(["serve", "--models-file", str(models), "--model", "tiny"]) == 130
    assert server.calls[0][1] == "tiny-coder" and server.located == [("tiny-weights", None)]
    assert capsys.readouterr().err.splitlines()[-1] == "stopped"
    assert main(["serve", "--models-file", str(models)]) == 2  # `local` is not in that file
    assert "--model local: not a local preset (local presets: tiny)" in one_line(capsys.readouterr().err)


def test_serve_config_error_is_the_one_the_command_raises() -> None:
    """The checks above are ConfigError (a UserError: exit 2), not argparse's."""
    from humanevalfix.cli import _serve

    args = _serve_args(port=70000)
    with pytest.raises(ConfigError, match="--port: must be between 1 and 65535, got 70000"):
        _serve.run(args)


def _serve_args(**overrides: Any) -> Any:
    import argparse

    from humanevalfix.cli import _serve

    parser = argparse.ArgumentParser()
    _serve.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args
