"""Seeds: sampled turns that repeat between runs.

A turn above temperature 0 draws from the server's random state. Without a seed that state depends
on what the server answered before (llama-cpp-python chains its seed from request to request), so
one changed turn anywhere in a run changes the draws of every later task. Each request therefore
carries a seed fixed by (preset seed, task, sample, turn); these tests check the seed is fixed,
reaches the server over HTTP, is recorded, guards --resume, and is refused when malformed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from humanevalfix.agent import AgentSettings
from humanevalfix.config import RunConfig, run_spec
from humanevalfix.errors import ConfigError, UserError
from humanevalfix.evaluation import resume
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.presets import MAX_SEED, load_presets, parse_seed, resolve
from humanevalfix.runspec import RunSpec, from_dict
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, tool_call

from .conftest import KEYS_ENV, entry_point_of, results_of, turn_of


def test_a_request_seed_is_fixed_by_task_turn_and_sample_and_absent_without_a_base() -> None:
    settings = AgentSettings(seed=0)
    seeds = {(task, turn): settings.request_seed(task, turn) for task in ("Python/0", "Python/1") for turn in range(4)}
    assert len(set(seeds.values())) == len(seeds)  # every task and turn draws from its own seed
    assert all(s is not None and 0 <= s <= MAX_SEED for s in seeds.values())
    assert AgentSettings(seed=0).request_seed("Python/0", 2) == seeds[("Python/0", 2)]  # the same in every run
    assert AgentSettings(seed=1).request_seed("Python/0", 2) != seeds[("Python/0", 2)]
    # --samples: sample 0 keeps the base, the others draw elsewhere (else pass@k would repeat one draw k times).
    assert settings.for_sample(0) is settings
    others = [settings.for_sample(k).request_seed("Python/0", 1) for k in range(1, 4)]
    assert len({seeds[("Python/0", 1)], *others}) == 4
    assert AgentSettings().request_seed("Python/0", 1) is None
    assert AgentSettings().for_sample(3).seed is None


def test_presets_seed_the_embedded_model_only_and_options_override(tmp_path: Path) -> None:
    presets = load_presets()
    assert presets["local"].seed == 0 and presets["local-1.5b"].seed == 0
    assert presets["gpt-4o-mini"].seed is None  # not every OpenAI-compatible server takes the field
    assert resolve("local", presets=presets).public()["seed"] == 0
    assert resolve("gpt-4o-mini", seed=9, presets=presets).seed == 9
    assert resolve("local", seed=None, presets=presets).seed is None  # --seed none
    # Another server behind a preset: its prices and its seed support are not the preset's.
    assert resolve("local", base_url="http://127.0.0.1:9/v1", presets=presets).seed is None
    assert resolve("local", base_url="http://127.0.0.1:9/v1", seed=4, presets=presets).seed == 4
    assert parse_seed("none") is None and parse_seed("12") == 12 and parse_seed(str(MAX_SEED)) == MAX_SEED
    for bad in ("-1", "x", "1.5", str(MAX_SEED + 1), ""):
        with pytest.raises(ConfigError, match="--seed"):
            parse_seed(bad)
    models = tmp_path / "models.yaml"
    for bad in ('"7"', "-3", "true", "1.0"):
        models.write_text(f"mine:\n  provider: compatible\n  model: m\n  seed: {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=r"preset 'mine': field 'seed' must be a whole number"):
            load_presets(models)


def _fail_then_fix(tasks: dict[str, Task]) -> Callable[[Recorded], Response]:
    """The buggy code first, the canonical fix on the next turn: two requests per task."""

    def handler(rec: Recorded) -> Response:
        task = next(t for t in tasks.values() if t.entry_point == entry_point_of(rec))
        return tool_call((task.canonical_code if turn_of(rec) else task.buggy_code) or "")

    return handler


@pytest.mark.e2e
def test_each_request_carries_its_seed_over_http_and_the_results_record_it(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, "sk-test-seed")
    with ScriptedServer(_fail_then_fix(tiny_tasks)) as server:
        config = make_config(server, tiny_dataset)
        seeded = run_eval(replace(config, preset=replace(config.preset, seed=7)))
        sent = [(entry_point_of(r), turn_of(r), r.body.get("seed")) for r in server.chat_requests()]
    by_entry = {t.entry_point: t.task_id for t in tiny_tasks.values()}
    assert len(sent) == 2 * len(tiny_tasks) and all(r.passed for r in seeded.records)
    assert all(seed == AgentSettings(seed=7).request_seed(by_entry[entry], turn) for entry, turn, seed in sent), sent
    assert results_of(seeded.results_path)["config"]["sampling"]["seed"] == 7

    with ScriptedServer(_fail_then_fix(tiny_tasks)) as server:
        unseeded = run_eval(replace(make_config(server, tiny_dataset), out=config.out.with_name("unseeded.json")))
        bodies = [r.body for r in server.chat_requests()]
    assert bodies and all("seed" not in body for body in bodies)  # none: the field is left out, not sent as null
    assert results_of(unseeded.results_path)["config"]["sampling"]["seed"] is None


def test_resume_refuses_another_seed_and_a_run_from_before_seeds_counts_as_unseeded(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    presets = load_presets()

    def public(seed: int | None) -> RunSpec:
        config = RunConfig(preset=resolve("local", seed=seed, presets=presets), dataset_path=tiny_dataset)
        return run_spec(
            config,
            dataset_source="s",
            dataset_sha256="abc",
            task_ids=["Python/0"],
            executor_name="process",
            isolation="none",
        )

    stream = tmp_path / "r.jsonl"
    resume.check(public(0), public(0), stream)
    with pytest.raises(UserError, match=r"option --seed differs from the interrupted run \(0 there, 5 now\)"):
        resume.check(public(0), public(5), stream)
    stored = public(None).to_dict()
    del stored["sampling"]["seed"]  # a stream written before seeds were sent
    older = from_dict(stored)
    resume.check(older, public(None), stream)  # `--seed none` continues it as it ran
    with pytest.raises(UserError, match=r"option --seed differs from the interrupted run \(None there, 0 now\)"):
        resume.check(older, public(0), stream)
